// The shipped policies' formulas, checked number by number through the real pipeline: the
// built-in policy is compiled and JIT-linked by the policy host, opened in a session over a small
// scenario, and its handler is reached through the session's dispatcher. Each expected value is
// worked out by hand from volcano-semantics.md §5 in the comment beside it.

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>

#include "compiler/host/compiled_policy_provider.h"
#include "simulator/scenario.h"
#include "runtime/session.h"
#include "simulator/simulator.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

// A session opened over `yaml` with the built-in policies its conf names.
class PolicySession {
 public:
  explicit PolicySession(const std::string& yaml) {
    auto spec = ParseScenario(yaml, "policies_handlers_test.yaml");
    EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().Format());
    if (!spec.ok()) return;
    auto conf = ResolveScenarioConf(*spec, nullptr, "");
    EXPECT_TRUE(conf.ok()) << (conf.ok() ? "" : conf.error().Format());
    if (!conf.ok()) return;
    conf_ = std::make_unique<SchedulerConf>(std::move(*conf));
    auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
    EXPECT_TRUE(provider.ok()) << (provider.ok() ? "" : provider.error().Format());
    if (!provider.ok()) return;
    provider_ = std::move(*provider);
    for (const Tier& tier : conf_->tiers)
      for (const PluginOption& option : tier.plugins) {
        auto builder = provider_->Prepare(option);
        EXPECT_TRUE(builder.ok() && *builder) << (builder.ok() ? "no builder" : builder.error().Format());
        if (builder.ok() && *builder && !registry_.Find(option.name))
          EXPECT_TRUE(registry_.Register(option.name, **builder).ok());
      }
    auto cluster = BuildCluster(spec->cluster);
    EXPECT_TRUE(cluster.ok()) << (cluster.ok() ? "" : cluster.error().Format());
    if (!cluster.ok()) return;
    session_ = std::make_unique<Session>(std::move(*cluster), *conf_, spec->now);
    Status opened = session_->Open(registry_);
    EXPECT_TRUE(opened.ok()) << (opened.ok() ? "" : opened.error().Format());
    if (!opened.ok()) session_.reset();
  }
  ~PolicySession() {
    if (session_) session_->Close();
  }

  Session* operator->() { return session_.get(); }
  bool ok() const { return session_ != nullptr; }
  Task* task(std::string_view uid) { return session_->cluster().FindTask(uid); }
  Node* node(std::string_view name) { return session_->cluster().FindNode(name); }
  Job* job(std::string_view uid) { return session_->cluster().FindJob(uid); }
  Queue* queue(std::string_view name) { return session_->cluster().FindQueue(name); }
  // node_order's score of task `task` on node `node`; NaN (and a test failure) when it failed.
  double Score(std::string_view task_uid, std::string_view node_name) {
    auto score = session_->NodeOrderFn(task(task_uid), node(node_name));
    EXPECT_TRUE(score.ok()) << (score.ok() ? "" : score.error().Format());
    return score.ok() ? *score : std::numeric_limits<double>::quiet_NaN();
  }

 private:
  std::unique_ptr<SchedulerConf> conf_;
  std::unique_ptr<PolicyProvider> provider_;
  PluginRegistry registry_;
  std::unique_ptr<Session> session_;
};

// The cluster of tests/unit/policies/data/handlers/`name`.yaml (its header comment says what the
// expected values below are worked out from): the `cluster:` section of a scenario.
std::string Cluster(const std::string& name) {
  auto text = ReadTextFile(
      (KilnSourceDir() / "tests/unit/policies/data/handlers" / (name + ".yaml")).string());
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().Format());
  return text.ok() ? *text : "";
}

std::string Scenario(const std::string& plugins, const std::string& cluster) {
  return "name: handlers\n" + cluster +
         "conf: |\n  actions: \"\"\n  tiers:\n  - plugins:\n" + plugins;
}

TEST(PoliciesHandlers, BinpackScoresFullnessAfterPlacement) {
  PolicySession s(Scenario("    - name: binpack\n", Cluster("binpack")));
  ASSERT_TRUE(s.ok());
  // busy: cpu (1 + 2)/4 = 0.75, memory (1 + 1)/8 = 0.25 → (0.75 + 0.25)/2 · 100 = 50.
  EXPECT_DOUBLE_EQ(s.Score("c1-t-0", "busy"), 50.0);
  // full: cpu 1 + 2 > 2 overflows → the whole score is 0.
  EXPECT_DOUBLE_EQ(s.Score("c1-t-0", "full"), 0.0);
  // The GPU is not in binpack.resources, so only cpu and memory count for g-0 too.
  EXPECT_DOUBLE_EQ(s.Score("c1-g-0", "busy"), 50.0);
}

TEST(PoliciesHandlers, BinpackWeightsAndListedResources) {
  PolicySession s(Scenario(R"(    - name: binpack
      arguments: {binpack.weight: 2, binpack.cpu: 3, binpack.resources: nvidia.com/gpu}
)", Cluster("binpack")));
  ASSERT_TRUE(s.ok());
  // cpu 0.75 · 3 + memory 0.25 · 1 = 2.5, Σw = 4 → 0.625 · 100 · 2 = 125.
  EXPECT_DOUBLE_EQ(s.Score("c1-t-0", "busy"), 125.0);
  // With the GPU listed (weight 1): + 2/4 · 1, Σw = 5 → (2.25 + 0.25 + 0.5)/5 · 200 = 120.
  EXPECT_DOUBLE_EQ(s.Score("c1-g-0", "busy"), 120.0);
}

TEST(PoliciesHandlers, DrfOrdersJobsByDominantShare) {
  PolicySession s(Scenario("    - name: drf\n", Cluster("drf")));
  ASSERT_TRUE(s.ok());
  // big: max(2/4 cpu, 1/8 mem) = 0.5; small: max(1/4, 4/8) = 0.5; idle: 0.
  EXPECT_EQ(s->JobCompareFn(s.job("c1/idle"), s.job("c1/big")), -1);
  EXPECT_EQ(s->JobCompareFn(s.job("c1/big"), s.job("c1/idle")), 1);
  EXPECT_EQ(s->JobCompareFn(s.job("c1/big"), s.job("c1/small")), 0);
}

TEST(PoliciesHandlers, OvercommitAdmitsUpToTheInflatedIdle) {
  PolicySession s(Scenario("    - name: overcommit\n", Cluster("overcommit")));
  ASSERT_TRUE(s.ok());
  // idle = 4 × 1.2 − 2 = 2.8 cpu.
  EXPECT_TRUE(s->JobEnqueueable(s.job("c1/fits")));
  EXPECT_FALSE(s->JobEnqueueable(s.job("c1/over")));
  EXPECT_TRUE(s->JobEnqueueable(s.job("c1/none")));  // no minResources: always admitted
}

TEST(PoliciesHandlers, ProportionDeservedCapsAllocatableAndOverused) {
  PolicySession s(Scenario("    - name: proportion\n", Cluster("proportion")));
  ASSERT_TRUE(s.ok());
  // Round 1 splits 8 cpu 3:1 → q1 6 (asks 9), q2 2 (asks 4); no cpu is left for round 2.
  // q1 deserves 6 cpu and holds 5: a-2 (1) fits, a-1 (3) would exceed it; q2 deserves 2 and
  // holds 2.
  EXPECT_TRUE(s->Allocatable(s.queue("q1"), s.task("c1-a-2")));
  EXPECT_FALSE(s->Allocatable(s.queue("q1"), s.task("c1-a-1")));
  EXPECT_FALSE(s->Allocatable(s.queue("q2"), s.task("c1-b-1")));
  // Overused needs allocated ≥ deserved in every dimension: q2's memory (1Gi held, 2Gi
  // deserved) is not reached.
  EXPECT_FALSE(s->Overused(s.queue("q2")));
}

TEST(PoliciesHandlers, ResourceStrategyFitScoresPerResourceStrategy) {
  PolicySession s(Scenario(R"(    - name: resource-strategy-fit
      arguments:
        resources:
          nvidia.com/gpu: {type: MostAllocated, weight: 2}
          cpu: {type: LeastAllocated, weight: 1}
)", Cluster("gpu")));
  ASSERT_TRUE(s.ok());
  // busy: gpu (2+1)/4·2 = 1.5, cpu (8−4−1)/8 = 0.375 → 1.875/3 · 100 · 10 = 625.
  EXPECT_DOUBLE_EQ(s.Score("c1-gpu-0", "busy"), 625.0);
  // empty: gpu 1/4·2 = 0.5, cpu 7/8 → 1.375/3 · 1000.
  EXPECT_NEAR(s.Score("c1-gpu-0", "empty"), 1375.0 / 3.0, 1e-9);
}

TEST(PoliciesHandlers, ResourceStrategyFitSraSteersAwayFromScarceNodes) {
  PolicySession s(Scenario(R"(    - name: resource-strategy-fit
      arguments:
        resourceStrategyFitWeight: 0
        sra: {enable: true, resources: nvidia.com/gpu, weight: 10}
)", Cluster("gpu")));
  ASSERT_TRUE(s.ok());
  // A cpu task: a node without the scarce resource scores (1 − 0/1) · 100 · 10, one with it 0.
  EXPECT_DOUBLE_EQ(s.Score("c1-cpu-0", "cpu-only"), 1000.0);
  EXPECT_DOUBLE_EQ(s.Score("c1-cpu-0", "empty"), 0.0);
  // A GPU task scores 0 on a node lacking the GPU it requests.
  EXPECT_DOUBLE_EQ(s.Score("c1-gpu-0", "cpu-only"), 0.0);
}

TEST(PoliciesHandlers, ResourceStrategyFitProportionalKeepsCpuForIdleGpus) {
  PolicySession s(Scenario(R"(    - name: resource-strategy-fit
      arguments:
        proportional:
          enable: true
          resources: nvidia.com/gpu
          resourceProportion: {nvidia.com/gpu.cpu: 4, nvidia.com/gpu.memory: 8}
)", Cluster("gpu")));
  ASSERT_TRUE(s.ok());
  // one-gpu keeps 4 cpu for its idle GPU: a 3-cpu task leaves 5 (fits), a 5-cpu task leaves 3.
  EXPECT_FALSE(s->PredicateFn(s.task("c1-cpu-0"), s.node("one-gpu")).has_value());
  auto refused = s->PredicateFn(s.task("c1-cpu-big"), s.node("one-gpu"));
  ASSERT_TRUE(refused.has_value());
  EXPECT_TRUE(refused->Contains(StatusCode::UnschedulableAndUnresolvable));
  // Nodes without the scarce resource, and tasks that request it, are not restricted.
  EXPECT_FALSE(s->PredicateFn(s.task("c1-cpu-big"), s.node("cpu-only")).has_value());
  EXPECT_FALSE(s->PredicateFn(s.task("c1-gpu-0"), s.node("one-gpu")).has_value());
}

}  // namespace
}  // namespace kiln
