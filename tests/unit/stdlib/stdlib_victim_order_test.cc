// stdlib `victim_order(preemptor, tasks)`: the session's eviction order (Volcano's
// BuildVictimsPriorityQueue), reached from a policy handler. It runs other handlers (task, job and
// victim-queue orders) while the calling handler is suspended in the host call, so it is also the
// test of nested handler calls: the inner handlers must not reset the call arena the outer one is
// still using.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "simulator/scenario.h"
#include "runtime/session.h"
#include "simulator/simulator.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

// The probe policy (victim_probe.policy) and the scenario (victim-order.yaml) of these tests:
// their header comments say what the probe does and in which order the session evicts.
const std::filesystem::path kData = KilnSourceDir() / "tests/unit/stdlib/data/victim-order";

class VictimOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = LoadScenarioFile((kData / "victim-order.yaml").string());
    ASSERT_TRUE(spec.ok()) << spec.error().Format();
    auto conf = ResolveScenarioConf(*spec, nullptr, "");
    ASSERT_TRUE(conf.ok()) << conf.error().Format();
    conf_ = std::make_unique<SchedulerConf>(std::move(*conf));
    CompiledPolicyOptions options;
    options.policy_dirs.push_back(kData.string());
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
  }

  std::vector<std::string> Reclaim(const std::vector<std::string>& candidates) {
    std::vector<Task*> tasks;
    for (const std::string& uid : candidates) tasks.push_back(session_->cluster().FindTask(uid));
    std::vector<std::string> names;
    for (Task* t : session_->Reclaimable(session_->cluster().FindTask("ns-c-0"), tasks))
      names.push_back(t->name);
    return names;
  }

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
