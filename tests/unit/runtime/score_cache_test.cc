// Cached node_order scores (runtime/score_cache.h) decide exactly as calling the handlers: random
// clusters under the built-in confs (default + binpack among them) give the same session with the
// cache on and off, on the fused allocate search and on the plain path.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/actions/helpers.h"
#include "runtime/score_cache.h"
#include "runtime/thread_pool.h"
#include "simulator/random_cluster.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/runtime/random_cluster_compare.h"

namespace kiln {
namespace {

// Restores the process-wide switches whatever a test does.
struct Switches {
  Switches(bool cache, bool fused) {
    SetScoreCacheEnabled(cache);
    actions::SetFusedAllocateSearch(fused);
  }
  ~Switches() {
    SetScoreCacheEnabled(true);
    actions::SetFusedAllocateSearch(true);
  }
};

TEST(ScoreCache, RandomClustersDecideAsWithout) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  const RandomClusterOptions options = testing::CompareClusterOptions(200);
  auto run = [&](const std::string& yaml, bool cache, bool fused) -> Result<SimulationResult> {
    Switches sw(cache, fused);
    return testing::SimulateScenarioText(yaml, **provider);
  };
  // Wake the workers for every loop, so that entries are filled and read on several threads.
  ThreadPool::Default().set_wake_threshold(std::chrono::nanoseconds(0));
  const ScoreCacheStats before = GetScoreCacheStats();
  int binds = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RandomCluster g = GenerateRandomCluster(seed * 104729, options);
    std::string yaml = RenderScenario(g, fmt::format("cache-{}", seed));
    for (bool fused : {true, false}) {
      auto off = run(yaml, false, fused);
      auto on = run(yaml, true, fused);
      ASSERT_TRUE(off.ok()) << off.error().Format();
      ASSERT_TRUE(on.ok()) << on.error().Format();
      ASSERT_EQ(on->sessions.size(), off->sessions.size());
      for (size_t i = 0; i < on->sessions.size(); ++i) {
        const SessionResult& a = on->sessions[i];
        const SessionResult& b = off->sessions[i];
        SCOPED_TRACE(fmt::format("seed {} fused {} session {}", seed, fused, i));
        ASSERT_NO_FATAL_FAILURE(testing::ExpectSameSession(a, b));
        binds += static_cast<int>(b.bind_order.size());
      }
    }
  }
  ThreadPool::Default().set_wake_threshold(std::chrono::microseconds(50));
  EXPECT_GT(binds, 100);
  const ScoreCacheStats after = GetScoreCacheStats();
  EXPECT_GT(after.hits, before.hits) << "no score was ever reused";
}

}  // namespace
}  // namespace kiln
