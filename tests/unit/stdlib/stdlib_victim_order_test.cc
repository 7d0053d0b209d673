// stdlib `victim_order(preemptor, tasks)`: the session's eviction order (Volcano's
// BuildVictimsPriorityQueue), reached from a policy handler. It runs other handlers (task, job and
// victim-queue orders) while the calling handler is suspended in the host call, so it is also the
// test of nested handler calls: the inner handlers must not reset the call arena the outer one is
// still using.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "simulator/scenario.h"
#include "runtime/session.h"
#include "simulator/simulator.h"

namespace kiln {
namespace {

// Orders by nothing itself, but allocates in its victim-queue order (so that handler runs with
// its own call arena, nested inside reclaimable), and names as its only victim the candidate the
// session would evict first — looked up in a list built *before* the call, which must still be
// intact afterwards. (The session reports victims in candidate order, so one victim per call is
// how the order shows.)
constexpr char kProbePolicy[] = R"(
policy victim_probe;

on victim_queue_order(l: Queue, r: Queue, preemptor: Queue) -> int {
  let names = [q.name for q in [l, r, preemptor] where q.name != ""];
  return len(names) == 3 ? 0 : 1;
}

on reclaimable(reclaimer: Task, candidates: list<Task>) -> Victims {
  let before = [c for c in candidates where c.name != ""];
  let ordered = victim_order(reclaimer, candidates);
  for c in ordered {
    if c in before { return victims([c]); }
  }
  return victims([]);
}
)";

// qa holds one job with three tasks of priorities 10, 5 and 1; qb one task. The reclaimer is in
// qc. Victims of different queues follow the inverse queue order (the probe answers 0, so the
// default — creation, then name — puts qa first and qb's task is evicted first); within qa's job
// the task that orders last (lowest priority, by the priority plugin) goes first.
constexpr char kScenario[] = R"(name: victim-order
conf: |
  actions: ""
  tiers:
  - plugins:
    - name: priority
    - name: victim_probe
cluster:
  queues:
  - {name: qa}
  - {name: qb}
  - {name: qc}
  nodes:
  - {name: n1, allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
  podGroups:
  - {name: a, namespace: ns, queue: qa, minMember: 1, phase: Running}
  - {name: b, namespace: ns, queue: qb, minMember: 1, phase: Running}
  - {name: c, namespace: ns, queue: qc, minMember: 1, phase: Inqueue}
  pods:
  - {name: a-0, namespace: ns, group: a, requests: {cpu: "1"}, priority: 10, phase: Running, node: n1}
  - {name: a-1, namespace: ns, group: a, requests: {cpu: "1"}, priority: 5, phase: Running, node: n1}
  - {name: a-2, namespace: ns, group: a, requests: {cpu: "1"}, priority: 1, phase: Running, node: n1}
  - {name: b-0, namespace: ns, group: b, requests: {cpu: "1"}, phase: Running, node: n1}
  - {name: c-0, namespace: ns, group: c, requests: {cpu: "1"}}
)";

class VictimOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kiln_victim_order_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "victim_probe.policy") << kProbePolicy;

    auto spec = ParseScenario(kScenario, "victim-order.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().Format();
    auto conf = ResolveScenarioConf(*spec, nullptr, "");
    ASSERT_TRUE(conf.ok()) << conf.error().Format();
    conf_ = std::make_unique<SchedulerConf>(std::move(*conf));
    CompiledPolicyOptions options;
    options.policy_dirs.push_back(dir_.string());
    auto provider = MakeCompiledPolicyProvider(options);
    ASSERT_TRUE(provider.ok()) << provider.error().Format();
    provider_ = std::move(*provider);
    for (const Tier& tier : conf_->tiers)
      for (const PluginOption& option : tier.plugins) {
        auto builder = provider_->Prepare(option);
        ASSERT_TRUE(builder.ok() && *builder) << (builder.ok() ? "no builder" : builder.error().Format());
        ASSERT_TRUE(registry_.Register(option.name, **builder).ok());
      }
    auto cluster = BuildCluster(spec->cluster);
    ASSERT_TRUE(cluster.ok()) << cluster.error().Format();
    session_ = std::make_unique<Session>(std::move(*cluster), *conf_, spec->now);
    Status opened = session_->Open(registry_);
    ASSERT_TRUE(opened.ok()) << opened.error().Format();
  }
  void TearDown() override {
    if (session_) session_->Close();
    session_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::vector<std::string> Reclaim(const std::vector<std::string>& candidates) {
    std::vector<Task*> tasks;
    for (const std::string& uid : candidates) tasks.push_back(session_->cluster().FindTask(uid));
    std::vector<std::string> names;
    for (Task* t : session_->Reclaimable(session_->cluster().FindTask("ns-c-0"), tasks))
      names.push_back(t->name);
    return names;
  }

  std::filesystem::path dir_;
  std::unique_ptr<SchedulerConf> conf_;
  std::unique_ptr<PolicyProvider> provider_;
  PluginRegistry registry_;
  std::unique_ptr<Session> session_;
};

TEST_F(VictimOrderTest, FollowsTheSessionsEvictionOrder) {
  // Different queues: qb's task before qa's (inverse queue order).
  EXPECT_EQ(Reclaim({"ns-a-0", "ns-a-1", "ns-a-2", "ns-b-0"}), (std::vector<std::string>{"b-0"}));
  // One job: the lowest-priority task first, whatever order the candidates come in.
  EXPECT_EQ(Reclaim({"ns-a-0", "ns-a-1", "ns-a-2"}), (std::vector<std::string>{"a-2"}));
  EXPECT_EQ(Reclaim({"ns-a-2", "ns-a-0", "ns-a-1"}), (std::vector<std::string>{"a-2"}));
  EXPECT_EQ(Reclaim({"ns-a-0", "ns-a-1"}), (std::vector<std::string>{"a-1"}));
}

TEST_F(VictimOrderTest, ShortListsComeBackAsTheyAre) {
  EXPECT_EQ(Reclaim({"ns-a-0"}), (std::vector<std::string>{"a-0"}));
  EXPECT_EQ(Reclaim({}), (std::vector<std::string>{}));
}

// Many calls in a row: every nested call resets its own arena, never the outer handler's, and
// hands the outer handler's fault target back (a broken unwinding would show as a crash or as
// the first victim missing from `before`).
TEST_F(VictimOrderTest, NestedCallsKeepTheOuterHandlersTemporaries) {
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(Reclaim({"ns-a-0", "ns-b-0", "ns-a-2", "ns-a-1"}), (std::vector<std::string>{"b-0"}))
        << "call " << i;
}

}  // namespace
}  // namespace kiln
