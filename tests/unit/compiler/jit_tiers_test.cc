// The two-tier JIT (compiler/host/jit_tiers.h): a policy no cache holds runs first as tier-0 code
// (O0 + FastISel) and is replaced by its O2 code for sessions that open after the background
// compile lands; a session keeps the code it opened with; the tier-0 code goes once nothing can
// call it; the compile cache only ever receives the O2 object. That both tiers decide the same
// is checked on a larger scale by ctest's jit-tiers/* entries (the golden scenarios and the
// policy unit tests with tier 0 forced, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/near_code.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/host/compiled_policy_provider.h"
#include "runtime/session.h"
#include "tests/unit/compiler/compiled_plugin_fixture.h"
#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// An argument block holding a string (a pointer into the code that built it), state written by
// session_open, and a handler reading both.
constexpr const char* kTiered = R"(policy tiered;
arg zone: string = "zone-a" from "tiered.zone";
arg weight: float = 2.0 from "tiered.weight";
state opened: int;
on session_open() { opened = opened + 1; }
on node_order(task: Task, node: Node) -> float {
  var s = weight * 10.0 + float(opened);
  if zone == "zone-a" { s = s + 100.0; }
  return s;
}
)";

fs::path FreshDir(const std::string& what) {
  static int n = 0;
  fs::path dir = fs::temp_directory_path() /
                 ("kiln_jit_tiers_" + what + "_" + std::to_string(::getpid()) + "_" +
                  std::to_string(n++));
  fs::create_directories(dir);
  return dir;
}

// A path no compile of this process has used, so the compiler's memory never answers.
std::string FreshPath(const std::string& what) {
  static int n = 0;
  return "test/jit_tiers_" + what + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

std::vector<std::string> CacheObjects(const fs::path& dir) {
  std::vector<std::string> objects;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".kobj") {
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      objects.push_back(ss.str());
    }
  return objects;
}

// Restores the process-wide compiler's mode and caches, and lets held compiles go.
class JitTiersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto compiler = PolicyCompiler::Global();
    ASSERT_TRUE(compiler.ok());
    compiler_ = *compiler;
    saved_tiers_ = compiler_->GetJitTiers();
    // No shipped cache (it holds built-ins only, but keep the test independent of the build).
    compiler_->SetShippedCacheDir("");
  }
  void TearDown() override {
    compiler_->HoldWarmUpForTesting(false);
    compiler_->WaitForWarmUp();
    SetLazyHandlers(saved_lazy_);
    compiler_->HoldTierUpForTesting(false);
    compiler_->WaitForTierUp();
    compiler_->SetJitTiers(saved_tiers_);
    compiler_->SetCompileCacheDir("");
    compiler_->SetShippedCacheDir(PolicyCompiler::DefaultShippedCacheDir());
    for (const fs::path& d : dirs_) fs::remove_all(d);
  }
  fs::path Dir(const std::string& what) {
    dirs_.push_back(FreshDir(what));
    return dirs_.back();
  }

  PolicyCompiler* compiler_ = nullptr;
  JitTiers saved_tiers_ = JitTiers::kOptimizedOnly;
  bool saved_lazy_ = LazyHandlersEnabled();
  std::vector<fs::path> dirs_;
};

// One plugin entry of `tiered`, and sessions opened on it one after the other.
struct TieredConf : testing::CompiledPlugin {
  explicit TieredConf(const fs::path& policy_dir)
      : CompiledPlugin(policy_dir.string(), "tiered", "    arguments:\n      tiered.weight: 3.0\n") {
    EXPECT_FALSE(error.has_value()) << error->Format();
  }
};

double Score(Session& ssn) {
  auto score = ssn.NodeOrderFn(ssn.cluster().FindTask("ns-t-0"), ssn.cluster().FindNode("n1"));
  EXPECT_TRUE(score.ok());
  return score.ok() ? *score : -1;
}

TEST_F(JitTiersTest, TierZeroIsReplacedByO2AtTheNextSessionAndOnlyO2IsCached) {
  fs::path policies = Dir("policies");
  fs::path cache = Dir("cache");
  std::ofstream(policies / "tiered.policy") << kTiered;
  SourceFile source{(policies / "tiered.policy").string(), kTiered};
  compiler_->SetCompileCacheDir(cache.string());
  compiler_->SetJitTiers(JitTiers::kTwoTier);
  compiler_->HoldTierUpForTesting(true);
  const uint64_t installed = compiler_->GetTierUpStats().installed;

  TieredConf conf(policies);
  auto compiled = compiler_->Compile(source);  // the provider's compile, from memory
  ASSERT_TRUE(compiled.ok());
  std::weak_ptr<const PolicyCode> tier0 = (*compiled)->Code();
  ASSERT_EQ(tier0.lock()->tier, 0);
  EXPECT_EQ(compiler_->GetTierUpStats().pending, 1u);

  auto first = conf.Open("s1");
  EXPECT_EQ(Score(*first), 3.0 * 10 + 1 + 100);
  EXPECT_TRUE(CacheObjects(cache).empty()) << "a tier-0 object is never cached";

  compiler_->HoldTierUpForTesting(false);
  compiler_->WaitForTierUp();
  EXPECT_EQ((*compiled)->Code()->tier, 2);
  EXPECT_EQ(compiler_->GetTierUpStats().installed, installed + 1);
  // The open session keeps its tier-0 code, state and arguments until it closes.
  EXPECT_FALSE(tier0.expired());
  EXPECT_EQ(Score(*first), 3.0 * 10 + 1 + 100);
  first->Close();
  first.reset();

  // The next session opens on O2, with arguments rebound by the O2 code: nothing holds the
  // tier-0 code any more, so its unit is gone. Same answers.
  auto second = conf.Open("s2");
  EXPECT_TRUE(tier0.expired());
  EXPECT_EQ(Score(*second), 3.0 * 10 + 1 + 100);
  second->Close();

  // The cache holds the O2 object: the one an O2-only compile of the same source writes.
  std::vector<std::string> tiered_objects = CacheObjects(cache);
  ASSERT_EQ(tiered_objects.size(), 1u);
  fs::path o2_cache = Dir("o2cache");
  compiler_->SetCompileCacheDir(o2_cache.string());
  compiler_->SetJitTiers(JitTiers::kOptimizedOnly);
  auto o2 = compiler_->Compile(SourceFile{source.path + ".o2-only", kTiered});
  ASSERT_TRUE(o2.ok());
  EXPECT_EQ((*o2)->Code()->tier, 2);
  std::vector<std::string> o2_objects = CacheObjects(o2_cache);
  ASSERT_EQ(o2_objects.size(), 1u);
  EXPECT_TRUE(tiered_objects[0] == o2_objects[0]) << "the cached object is not the O2 one";

  // And the next process (a compile under a fresh path) loads it from the cache as tier 2.
  compiler_->SetCompileCacheDir(cache.string());
  compiler_->SetJitTiers(JitTiers::kTwoTier);
  auto hit = compiler_->Compile(SourceFile{source.path + ".next-process", kTiered});
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ((*hit)->Code()->tier, 2);
  EXPECT_EQ(compiler_->CompileCacheStats().hits, 1u);
  EXPECT_EQ(compiler_->GetTierUpStats().pending, 0u) << "a cache hit queues nothing";
}

// A policy replaced (an edit under `kiln serve`) before its O2 compile ran: the compile is
// dropped rather than installed into code nobody runs.
TEST_F(JitTiersTest, ATierUpForAPolicyGoneIsDropped) {
  compiler_->SetJitTiers(JitTiers::kTwoTier);
  compiler_->HoldTierUpForTesting(true);
  const std::string path = FreshPath("dropped") + ".policy";
  uint64_t dropped = compiler_->GetTierUpStats().dropped;
  {
    auto v1 = compiler_->Compile(SourceFile{path, kTiered});
    ASSERT_TRUE(v1.ok());
    EXPECT_EQ((*v1)->Code()->tier, 0);
  }
  // The new version replaces v1 in the compiler's memory; v1's last holder is gone.
  auto v2 = compiler_->Compile(SourceFile{path, std::string(kTiered) + "\n"});
  ASSERT_TRUE(v2.ok());
  compiler_->HoldTierUpForTesting(false);
  compiler_->WaitForTierUp();
  EXPECT_EQ(compiler_->GetTierUpStats().dropped, dropped + 1);
  EXPECT_EQ((*v2)->Code()->tier, 2);
}

// At exit without a writable cache (FinishJitTierUp, which `kiln` calls): O2 code nobody will
// run or keep is not compiled; the policy keeps its tier-0 code. A later compile starts again.
TEST_F(JitTiersTest, FinishingWithoutACacheDropsTheTierUp) {
  compiler_->SetCompileCacheDir("");
  compiler_->SetJitTiers(JitTiers::kTwoTier);
  compiler_->HoldTierUpForTesting(true);
  const std::string path = FreshPath("finish");
  auto first = compiler_->Compile(SourceFile{path + "_a.policy", kTiered});
  ASSERT_TRUE(first.ok());
  const uint64_t dropped = compiler_->GetTierUpStats().dropped;
  compiler_->FinishTierUp();
  EXPECT_EQ(compiler_->GetTierUpStats().dropped, dropped + 1);
  EXPECT_EQ(compiler_->GetTierUpStats().pending, 0u);
  EXPECT_EQ((*first)->Code()->tier, 0);

  compiler_->HoldTierUpForTesting(false);
  auto second = compiler_->Compile(SourceFile{path + "_b.policy", kTiered});
  ASSERT_TRUE(second.ok());
  compiler_->WaitForTierUp();
  EXPECT_EQ((*second)->Code()->tier, 2);
  EXPECT_EQ((*first)->Code()->tier, 0);
}

// Tier 0 only (the measurement mode) queues no O2 compile and caches nothing.
TEST_F(JitTiersTest, TierZeroOnlyNeverCompilesO2) {
  fs::path cache = Dir("cache0");
  compiler_->SetCompileCacheDir(cache.string());
  compiler_->SetJitTiers(JitTiers::kFastOnly);
  auto compiled = compiler_->Compile(
      SourceFile{FreshPath("fast") + ".policy", kTiered});
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ((*compiled)->Code()->tier, 0);
  EXPECT_EQ(compiler_->GetTierUpStats().pending, 0u);
  EXPECT_TRUE(CacheObjects(cache).empty());
}

// Tier-0 code compiles each handler when a session first dispatches its point, or when the
// compiler's warm-up thread gets to it first; a point the conf entry turns off is not warmed up.
constexpr const char* kLazy = R"(policy lazy;
state opened: int;
on session_open() { opened = opened + 1; }
on node_order(task: Task, node: Node) -> float { return 5.0 + float(opened); }
on job_order(l: Job, r: Job) -> int { return 0; }
on predicate(task: Task, node: Node) -> Fit { return fits; }
)";

TEST_F(JitTiersTest, TierZeroCompilesAHandlerWhenItsPointIsFirstDispatched) {
  fs::path policies = Dir("lazy");
  std::ofstream(policies / "lazy.policy") << kLazy;
  compiler_->SetJitTiers(JitTiers::kFastOnly);
  SetLazyHandlers(true);
  compiler_->HoldWarmUpForTesting(true);
  testing::CompiledPlugin conf(policies.string(), "lazy", "    enablePredicate: false\n");
  ASSERT_FALSE(conf.error.has_value()) << conf.error->Format();
  auto compiled = compiler_->Compile(
      SourceFile{(policies / "lazy.policy").string(), kLazy});  // the provider's, from memory
  ASSERT_TRUE(compiled.ok());
  std::shared_ptr<const PolicyCode> code = (*compiled)->Code();
  ASSERT_EQ(code->tier, 0);
  EXPECT_GT((*compiled)->partitions, 1u);
  for (ExtensionPoint p : {ExtensionPoint::SessionOpen, ExtensionPoint::NodeOrder,
                           ExtensionPoint::JobOrder, ExtensionPoint::Predicate})
    EXPECT_FALSE(code->HandlerReady(p)) << Info(p).handler << " compiled with the policy";

  const uint64_t before = JitLazyHandlerStats().compiled;
  auto ssn = conf.Open();
  EXPECT_TRUE(code->HandlerReady(ExtensionPoint::SessionOpen)) << "the open dispatches it";
  EXPECT_FALSE(code->HandlerReady(ExtensionPoint::NodeOrder));
  EXPECT_EQ(Score(*ssn), 6.0);
  EXPECT_TRUE(code->HandlerReady(ExtensionPoint::NodeOrder));
  EXPECT_FALSE(code->HandlerReady(ExtensionPoint::JobOrder)) << "not dispatched yet";
  EXPECT_EQ(JitLazyHandlerStats().compiled, before + 2);

  compiler_->HoldWarmUpForTesting(false);
  compiler_->WaitForWarmUp();
  EXPECT_TRUE(code->HandlerReady(ExtensionPoint::JobOrder)) << "warmed up";
  EXPECT_FALSE(code->HandlerReady(ExtensionPoint::Predicate)) << "off in the conf entry";
  EXPECT_FALSE(ssn->HasHandlers(ExtensionPoint::Predicate));
  ssn->Close();
}

// Every built-in splits into partitions, and each of its handlers compiles on its own and lands
// within rel32 reach of the binary as whole-module tier-0 code does.
TEST_F(JitTiersTest, EveryBuiltinSplitsAndEachHandlerCompilesAlone) {
  compiler_->SetJitTiers(JitTiers::kFastOnly);
  SetLazyHandlers(true);
  compiler_->HoldWarmUpForTesting(true);  // only this test's lookups compile
  for (const BuiltinPolicy& b : BuiltinPolicies()) {
    auto compiled = compiler_->Compile(
        SourceFile{FreshPath("split") + "/" + std::string(b.path), std::string(b.text)});
    ASSERT_TRUE(compiled.ok()) << b.name << ": " << compiled.error().Format();
    EXPECT_GT((*compiled)->partitions, 1u) << b.name << " compiled whole";
    std::shared_ptr<const PolicyCode> code = (*compiled)->Code();
    ASSERT_FALSE(code->points.empty()) << b.name;
    for (ExtensionPoint p : code->points) {
      EXPECT_FALSE(code->HandlerReady(p)) << b.name << " " << Info(p).handler;
      auto fn = code->Handler(p);
      ASSERT_NE(fn, nullptr) << b.name << " " << Info(p).handler;
      EXPECT_TRUE(IsNearHostCode(reinterpret_cast<const void*>(fn)))
          << b.name << " " << Info(p).handler;
    }
  }
}

// A helper that two handlers call lives in a partition of its own (handler_partitions.h), where
// the handler's partition sees only its declaration. The handler still arms its fault frame
// before calling it, as the helper may allocate. It used to arm only at its own allocation after
// the call, which reset the call arena under the helper's list (b was built over a), and a fault
// inside the helper — here the call's memory budget — found no frame to return to: the helper
// wrote its list through the null the failed allocation answered, and the process crashed.
constexpr const char* kSharedHelper = R"(policy shared;
fn ramp(big: bool) -> list<int> {
  if big { return [i for i in range(1000000)]; }
  return [i for i in range(4)];
}
on predicate(task: Task, node: Node) -> Fit {
  if len(ramp(false)) > 5 { return unresolvable("never"); }
  return fits;
}
on node_order(task: Task, node: Node) -> float {
  let a = ramp(task.priority > 0);
  let b = [9 for i in range(1000)];
  return float(a[0] + a[1] + a[2] + a[3] + len(b));
}
)";

TEST_F(JitTiersTest, AHandlerArmsItsFaultFrameBeforeCallingAnAllocatingHelperOfAnotherPartition) {
  testing::PolicyLimitsGuard limits;
  compiler_->SetJitTiers(JitTiers::kFastOnly);
  SetLazyHandlers(true);
  auto compiled = compiler_->Compile(SourceFile{FreshPath("shared") + "/shared.policy",
                                                kSharedHelper});
  ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
  ASSERT_GT((*compiled)->partitions, 3u) << "ramp is not in a partition of its own";

  testing::OnePolicySession ps("shared", kSharedHelper);
  ASSERT_TRUE(ps.ssn);
  auto score = ps.ssn->NodeOrderFn(ps.task, ps.node);
  ASSERT_TRUE(score.ok()) << score.error().Format();
  EXPECT_EQ(*score, 0 + 1 + 2 + 3 + 1000) << "ramp's list was overwritten";
  EXPECT_EQ(ps.ssn->fault_count(), 0u);

  SetPolicyCallMemoryBudget(1 << 20);
  ps.task->priority = 1;  // ramp asks for 8 MB
  (void)ps.ssn->NodeOrderFn(ps.task, ps.node);
  ASSERT_EQ(ps.ssn->fault_count(), 1u);
  EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Memory)], 1u);
  ps.ssn->Close();
}

TEST(JitTiersParse, Values) {
  EXPECT_EQ(ParseJitTiers("0"), JitTiers::kOptimizedOnly);
  EXPECT_EQ(ParseJitTiers("off"), JitTiers::kOptimizedOnly);
  EXPECT_EQ(ParseJitTiers("1"), JitTiers::kTwoTier);
  EXPECT_EQ(ParseJitTiers("on"), JitTiers::kTwoTier);
  EXPECT_EQ(ParseJitTiers("tier0"), JitTiers::kFastOnly);
  EXPECT_EQ(ParseJitTiers("2"), std::nullopt);
}

}  // namespace
}  // namespace kiln
