// kiln test's library part (simulator/testing.h): which files are cases, how other test sources
// plug into the search, one case's result, and merged handler coverage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/host/compiled_policy_provider.h"
#include "simulator/testing.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class TestDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kiln-testing-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Write(const std::string& rel, const std::string& text) {
    fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  std::vector<std::string> Names(const std::vector<TestCase>& cases) {
    std::vector<std::string> out;
    for (const auto& c : cases) out.push_back(fs::relative(c.file, root_).string());
    return out;
  }
  fs::path root_;
};

TEST_F(TestDiscoveryTest, DirectoriesYieldScenariosWithExpectAndBrokenYamlInNameOrder) {
  Write("b.yaml", "name: b\nexpect: {binds: {}}\n");
  Write("a.yaml", "name: a\ncluster: {}\n");            // no expect: skipped
  Write("c.yml", "name: c\nexpect: [unclosed\n");        // not YAML: a case that will fail
  Write("sub/d.yaml", "expect: {bindCount: 0}\n");
  Write("notes.txt", "expect: {}\n");                    // not a YAML file
  TestDiscovery discovery;
  auto cases = discovery.Discover({root_.string()});
  ASSERT_TRUE(cases.ok()) << cases.error().Format();
  EXPECT_EQ(Names(*cases), (std::vector<std::string>{"b.yaml", "c.yml", "sub/d.yaml"}));
  for (const auto& c : *cases) EXPECT_EQ(c.suite, root_.string());
}

TEST_F(TestDiscoveryTest, AFileNamedDirectlyIsACaseAndAMissingPathAnError) {
  std::string a = Write("a.yaml", "name: a\n");
  TestDiscovery discovery;
  auto cases = discovery.Discover({a});
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 1u);
  EXPECT_EQ(cases->front().name, a);
  auto missing = discovery.Discover({(root_ / "nope").string()});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no such file or directory"), std::string::npos);
}

TEST_F(TestDiscoveryTest, DiscoverersClaimPathsBeforeTheScenarioSearch) {
  Write("plain/t.yaml", "expect: {binds: {}}\n");
  Write("pack/kiln-pack.yaml", "name: p\n");
  Write("pack/tests/t.yaml", "expect: {binds: {}}\n");
  TestDiscovery discovery;
  discovery.Add([](const std::string& path) -> std::optional<Result<std::vector<TestCase>>> {
    if (!fs::exists(fs::path(path) / "kiln-pack.yaml")) return std::nullopt;
    TestCase tc;
    tc.name = "pack:t";
    tc.file = (fs::path(path) / "tests/t.yaml").string();
    tc.suite = "pack";
    tc.policy_dirs = {(fs::path(path) / "policies").string()};
    return std::vector<TestCase>{tc};
  });
  auto cases = discovery.Discover({root_.string()});
  ASSERT_TRUE(cases.ok());
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].name, "pack:t");
  EXPECT_EQ((*cases)[0].policy_dirs.size(), 1u);
  EXPECT_EQ(Names(*cases)[1], "plain/t.yaml");
  // A discoverer's error stops the search.
  TestDiscovery failing;
  failing.Add([](const std::string&) -> std::optional<Result<std::vector<TestCase>>> {
    return Result<std::vector<TestCase>>(Error{"broken pack", {}});
  });
  EXPECT_FALSE(failing.Discover({root_.string()}).ok());
}

TEST_F(TestDiscoveryTest, RunTestCaseReportsDiffsCallsAndErrors) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok());
  const std::string cluster = R"(conf: |
  actions: "allocate"
  tiers:
  - plugins:
    - name: predicates
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "2"}}
  pods:
  - {name: p1, namespace: c1, requests: {cpu: "1"}}
)";
  TestCase pass{"pass", Write("pass.yaml", cluster + "expect: {binds: {c1/p1: n1}}\n"), ".", {}, {}};
  TestResult r = RunTestCase(pass, **provider);
  EXPECT_EQ(r.status, TestResult::Status::Pass);
  ASSERT_TRUE(r.session.has_value());
  EXPECT_GE(r.millis, 0);

  TestCase fail{"fail",
                Write("fail.yaml", cluster +
                                       "expect:\n  binds: {}\n  calls:\n"
                                       "  - {fn: predicate, task: c1/p1, node: n1, result: {code: Success}}\n"
                                       "  - {fn: job_ready, job: c1/podgroup-c1-p1, result: false}\n"),
                ".", {}, {}};
  r = RunTestCase(fail, **provider);
  EXPECT_EQ(r.status, TestResult::Status::Fail);
  EXPECT_EQ(r.diffs, (std::vector<std::string>{"binds: c1/p1: unexpected n1"}));
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_TRUE(r.calls[0].checked);
  EXPECT_TRUE(r.calls[0].diff.empty());
  EXPECT_EQ(r.calls[1].call, "job_ready(job: c1/podgroup-c1-p1)");
  EXPECT_NE(r.calls[1].diff.find("expected false, got true"), std::string::npos) << r.calls[1].diff;

  TestCase broken{"broken", Write("broken.yaml", "cluster: {nodes: [{name: n1, allocatable: {cpu: x}}]}\nexpect: {binds: {}}\n"), ".", {}, {}};
  r = RunTestCase(broken, **provider);
  EXPECT_EQ(r.status, TestResult::Status::Error);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->where.line, 1);
}

TEST(MergeCoverage, AHandlerRunInAnySessionCounts) {
  SessionResult a, b;
  a.handlers = {{"gang", "job_valid", true}, {"gang", "job_ready", false}};
  b.handlers = {{"gang", "job_valid", false}, {"gang", "job_ready", true}, {"binpack", "node_order", false}};
  std::vector<PluginCoverage> merged = MergeCoverage({&a, &b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].plugin, "binpack");
  EXPECT_EQ(merged[0].called(), 0);
  EXPECT_EQ(merged[1].plugin, "gang");
  EXPECT_EQ(merged[1].called(), 2);
  EXPECT_EQ(merged[1].handlers.size(), 2u);
}

}  // namespace
}  // namespace kiln
