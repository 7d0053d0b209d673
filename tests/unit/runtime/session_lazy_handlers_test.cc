// Session::RegisterLazy: a handler whose code is compiled the first time the session dispatches
// its point (tier-0 policy code, compiler/host/compiled_policy.h). A C++ source stands in for the
// compiler here: it counts what it is asked to compile and takes a while over each, as a compiler
// does. The compiled policies' side is in tests/unit/compiler/jit_tiers_test.cc.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/session.h"
#include "runtime/thread_pool.h"
#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

using namespace kiln::testing;

int32_t ScoreSeven(void*, const Task*, const Node*, double* out) {
  *out = 7;
  return 0;
}

class SlowSource final : public HandlerSource {
 public:
  void (*Handler(ExtensionPoint point) const)() override {
    ++compiles[static_cast<size_t>(point)];
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (point == ExtensionPoint::NodeOrder) return reinterpret_cast<void (*)()>(&ScoreSeven);
    return nullptr;  // this one "does not compile"
  }
  int Compiles(ExtensionPoint point) const { return compiles[static_cast<size_t>(point)]; }

 private:
  mutable std::array<std::atomic<int>, kExtensionPointCount> compiles{};
};

Cluster SmallCluster() {
  ClusterBuilder b;
  b.AddQueue("default");
  b.AddNode("n1", Res(4000, 8e9));
  Job& j = b.AddJob("ns", "j", "default", 1);
  b.AddTask(j, "t-0", Res(1000, 0));
  Job& k = b.AddJob("ns", "k", "default", 1);
  b.AddTask(k, "t-1", Res(1000, 0));
  EXPECT_TRUE(b.cluster.Link().ok());
  return std::move(b.cluster);
}

TEST(SessionLazyHandlers, CompilesAPointOnItsFirstDispatchOnceForAllThreads) {
  SlowSource source;
  SchedulerConf conf = MakeConf({{"lazy"}});
  PluginRegistry registry;
  AddPlugin(registry, "lazy", [&](Session& ssn, PluginHandle self) {
    EXPECT_TRUE(ssn.RegisterLazy(self, ExtensionPoint::NodeOrder, nullptr, &source));
    EXPECT_TRUE(ssn.RegisterLazy(self, ExtensionPoint::Predicate, nullptr, &source));
  });
  Session ssn(SmallCluster(), conf, 1000);
  ASSERT_TRUE(ssn.Open(registry).ok());
  EXPECT_TRUE(ssn.HasHandlers(ExtensionPoint::NodeOrder));
  EXPECT_EQ(source.Compiles(ExtensionPoint::NodeOrder), 0) << "nothing compiled at open";
  const Task* t = ssn.cluster().FindTask("ns-t-0");
  const Node* n = ssn.cluster().FindNode("n1");

  // Many threads dispatch at once: one compiles, the others wait for it, all get the handler.
  std::atomic<int> sevens{0};
  ThreadPool::Default().ParallelFor(
      64,
      [&](size_t) {
        auto score = ssn.NodeOrderFn(t, n);
        if (score.ok() && *score == 7) ++sevens;
      },
      /*grain=*/1);
  EXPECT_EQ(sevens, 64);
  EXPECT_EQ(source.Compiles(ExtensionPoint::NodeOrder), 1);
  EXPECT_EQ(source.Compiles(ExtensionPoint::Predicate), 0) << "not dispatched, not compiled";

  // A handler that does not compile is left out: the point answers as if nobody served it.
  EXPECT_FALSE(ssn.PredicateFn(t, n).has_value());
  EXPECT_FALSE(ssn.PredicateFn(t, n).has_value());
  EXPECT_EQ(source.Compiles(ExtensionPoint::Predicate), 1) << "asked once, not on every call";
  EXPECT_FALSE(ssn.HasHandlers(ExtensionPoint::Predicate));
  ssn.Close();
}

// A handler that asks the session something whose handler compiles first (a nested dispatch):
// the compile is not the asking call's time, so a tight per-call budget does not fault it.
TEST(SessionLazyHandlers, ACompileInsideAHandlerCallIsNotThatCallsTime) {
  const int64_t saved_budget = PolicyCallTimeBudget();
  SetPolicyCallTimeBudget(10'000'000);  // 10 ms; the source takes 30 ms to compile
  SlowSource source;
  SchedulerConf conf = MakeConf({{"asks"}, {"lazy"}});
  PluginRegistry registry;
  double seen = -1;
  AddPlugin(registry, "asks", [&](Session& ssn, PluginHandle self) {
    ssn.On<ExtensionPoint::JobOrder>(self, [&ssn, &seen](const Job*, const Job*) {
      auto score = ssn.NodeOrderFn(ssn.cluster().FindTask("ns-t-0"), ssn.cluster().FindNode("n1"));
      seen = score.ok() ? *score : -2;
      return 0;
    });
  });
  AddPlugin(registry, "lazy", [&](Session& ssn, PluginHandle self) {
    ssn.RegisterLazy(self, ExtensionPoint::NodeOrder, nullptr, &source);
  });
  Session ssn(SmallCluster(), conf, 1000);
  ASSERT_TRUE(ssn.Open(registry).ok());
  const Job* j = ssn.cluster().FindJob("ns/j");
  const Job* k = ssn.cluster().FindJob("ns/k");
  ASSERT_NE(j, nullptr);
  ASSERT_NE(k, nullptr);
  (void)ssn.JobOrderFn(j, k);
  SetPolicyCallTimeBudget(saved_budget);
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(source.Compiles(ExtensionPoint::NodeOrder), 1);
  EXPECT_EQ(ssn.fault_count(), 0u) << "the 30 ms compile was charged to the asking call";
  ssn.Close();
}

}  // namespace
}  // namespace kiln
