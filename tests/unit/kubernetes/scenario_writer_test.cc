// kubernetes/scenario_writer: a ClusterSpec as scenario YAML (what `GET /snapshot` answers). Every
// scenario in the repository, written out and read back by the scenario loader, gives the same
// ClusterSpec field by field, so a snapshot replays the cluster it was taken from.
#include <gtest/gtest.h>

#include <filesystem>

#include "kubernetes/scenario_writer.h"
#include "simulator/scenario.h"
#include "tests/unit/kubernetes/cluster_spec_dump.h"
#include "tests/unit/source_dir.h"

namespace kiln::kube {
namespace {

namespace fs = std::filesystem;
using namespace kiln::testing;

ScenarioHeader HeaderOf(const ScenarioSpec& spec) {
  ScenarioHeader h;
  h.name = spec.name;
  h.conf_text = spec.conf_text;
  h.now = spec.now;
  return h;
}

void ExpectSameCluster(const ClusterSpec& got, const ClusterSpec& want) {
  CompareClusterSpecs(got, want, [](const char* field, const auto& g, const auto& w) {
    EXPECT_EQ(g, w) << field;
  });
  ASSERT_EQ(got.resource_quotas.size(), want.resource_quotas.size());
  for (size_t i = 0; i < got.resource_quotas.size(); ++i)
    EXPECT_EQ(got.resource_quotas[i].hard_names, want.resource_quotas[i].hard_names);
}

TEST(ScenarioWriter, EveryScenarioReadsBackToTheSameClusterSpec) {
  int checked = 0, with_conf = 0;
  for (const fs::path& file : AllScenarioFiles()) {
    auto spec = LoadScenarioFile(file.string());
    if (!spec) continue;  // scenarios that test loader errors
    SCOPED_TRACE(file.string());
    std::string text = WriteScenario(spec->cluster, HeaderOf(*spec));
    auto back = ParseScenario(text, "snapshot.yaml");
    ASSERT_TRUE(back.ok()) << back.error().Format() << "\n" << text;
    EXPECT_EQ(back->name, spec->name);
    EXPECT_EQ(back->now, spec->now);
    EXPECT_EQ(back->has_conf, spec->has_conf && !spec->conf_text.empty());
    // A literal block keeps the text up to its final line break.
    auto trimmed = [](std::string s) {
      while (!s.empty() && s.back() == '\n') s.pop_back();
      return s;
    };
    EXPECT_EQ(trimmed(back->conf_text), trimmed(spec->conf_text));
    ExpectSameCluster(back->cluster, spec->cluster);
    std::vector<std::string> warnings, want_warnings;
    for (const auto& w : back->warnings) warnings.push_back(w.message);
    for (const auto& w : spec->warnings) want_warnings.push_back(w.message);
    // Pods only `calls` name are set aside by the loader (detached), and warned about there: a
    // snapshot has no calls, so neither the pods nor their warnings.
    if (spec->detached_pods.empty()) EXPECT_EQ(warnings, want_warnings);
    if (spec->has_conf) ++with_conf;
    ++checked;
    if (HasFailure()) break;  // one file's diff is enough to read
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(with_conf, 50);
}

ScenarioSpec Parse(const std::string& text) {
  auto spec = ParseScenario(text, "t.yaml");
  EXPECT_TRUE(spec.ok()) << spec.error().Format();
  return spec.ok() ? std::move(*spec) : ScenarioSpec{};
}

TEST(ScenarioWriter, LeavesOutAnnotationsThatCopyAWholeObject) {
  ScenarioSpec spec = Parse(R"(
cluster:
  nodes: [{name: n1, allocatable: {cpu: "4"}}]
  pods:
  - name: p1
    requests: {cpu: "1"}
    annotations:
      kubectl.kubernetes.io/last-applied-configuration: '{"spec":{"containers":[{"env":[{"name":"TOKEN","value":"s3cret"}]}]}}'
      team: ml
)");
  std::string text = WriteScenario(spec.cluster, HeaderOf(spec));
  EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  EXPECT_EQ(text.find("last-applied"), std::string::npos) << text;
  ScenarioSpec back = Parse(text);
  ASSERT_EQ(back.cluster.pods.size(), 1u);
  EXPECT_EQ(back.cluster.pods[0].annotations(), (StringMap{{"team", "ml"}}));
}

TEST(ScenarioWriter, PodsOfOtherSchedulersKeepTheirNameAndOursTakeTheSimulators) {
  ScenarioSpec spec = Parse(R"(
cluster:
  nodes: [{name: n1, allocatable: {cpu: "4"}}]
  pods:
  - {name: mine, requests: {cpu: "1"}}
  - {name: theirs, requests: {cpu: "1"}, schedulerName: default-scheduler, node: n1, phase: Running}
)");
  // As `kiln serve --scheduler-name kiln` would have them: its own pods name `kiln`.
  spec.cluster.pods[0].mutable_extras().scheduler_name = "kiln";
  std::string text = WriteScenario(spec.cluster, HeaderOf(spec));
  ScenarioSpec back = Parse(text);
  ASSERT_EQ(back.cluster.pods.size(), 2u);
  EXPECT_FALSE(back.cluster.pods[0].foreign) << text;
  EXPECT_TRUE(back.cluster.pods[1].foreign) << text;
  EXPECT_EQ(back.cluster.pods[1].scheduler_name(), "default-scheduler");
}

TEST(ScenarioWriter, QuantitiesAndNumberLikeStringsStayStrings) {
  ScenarioSpec spec = Parse(R"(
cluster:
  nodes: [{name: "007", allocatable: {cpu: "4", memory: 8Gi}, labels: {rack: "12", on: "yes"}}]
)");
  std::string text = WriteScenario(spec.cluster, HeaderOf(spec));
  EXPECT_EQ(text.find("cpu: 4\n"), std::string::npos) << text;
  ScenarioSpec back = Parse(text);
  ASSERT_EQ(back.cluster.nodes.size(), 1u);
  EXPECT_EQ(back.cluster.nodes[0].name, "007");
  EXPECT_EQ(back.cluster.nodes[0].labels, (StringMap{{"on", "yes"}, {"rack", "12"}}));
}

}  // namespace
}  // namespace kiln::kube
