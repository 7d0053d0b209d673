// The random cluster generator and its shrinker (simulator/random_cluster.h), which
// `kiln test --compare` uses to turn a difference on a big random cluster into a small scenario.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/host/compiled_policy_provider.h"
#include "simulator/random_cluster.h"
#include "simulator/scenario.h"
#include "simulator/testing.h"

namespace kiln {
namespace {

// A seed whose cluster is big enough that shrinking has work to do.
RandomCluster BigCluster() {
  for (uint64_t seed = 1;; ++seed) {
    RandomCluster c = GenerateRandomCluster(seed);
    bool running = std::any_of(c.pods.begin(), c.pods.end(), [](const RandomPod& p) { return !p.node.empty(); });
    if (c.nodes.size() >= 4 && c.groups.size() >= 4 && c.queues.size() >= 2 && running) return c;
  }
}

TEST(RandomCluster, SameSeedSameClusterAndConsistent) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    RandomCluster a = GenerateRandomCluster(seed), b = GenerateRandomCluster(seed);
    EXPECT_EQ(RenderScenario(a, "x"), RenderScenario(b, "x"));
    EXPECT_TRUE(IsConsistent(a)) << RenderScenario(a, "x");
    auto parsed = ParseScenario(RenderScenario(a, "x"), "random.yaml");
    EXPECT_TRUE(parsed.ok()) << parsed.error().Format();
  }
  EXPECT_NE(RenderScenario(GenerateRandomCluster(1), "x"), RenderScenario(GenerateRandomCluster(2), "x"));
}

TEST(RandomCluster, ConsistencyCatchesBrokenReferencesAndOverfullNodes) {
  RandomCluster c = BigCluster();
  RandomCluster no_queue = c;
  no_queue.queues.clear();
  EXPECT_FALSE(IsConsistent(no_queue));
  RandomCluster overfull = c;
  overfull.pods.front().node = overfull.nodes.front().name;
  overfull.pods.front().cpu_milli = overfull.nodes.front().cpu_milli + 1;
  EXPECT_FALSE(IsConsistent(overfull));
  RandomCluster big_gang = c;
  big_gang.groups.front().min_member = 1000;
  EXPECT_FALSE(IsConsistent(big_gang));
}

// A property that needs one pod of at least 1000m on a node of at least 3000m: the minimum is a
// single queue, node, group and pod, with the node at exactly 3000m and the pod at the simplest
// cpu value that keeps the property (1000m).
TEST(Shrink, ReducesToTheMinimalClusterThatKeepsTheProperty) {
  RandomCluster c = BigCluster();
  // Make sure the property holds to start with.
  c.nodes.front().cpu_milli = 8000;
  c.pods.front().cpu_milli = 1750;
  c.pods.front().node.clear();
  auto property = [](const RandomCluster& x) {
    bool big_pod = std::any_of(x.pods.begin(), x.pods.end(), [](const RandomPod& p) { return p.cpu_milli >= 1000; });
    bool big_node = std::any_of(x.nodes.begin(), x.nodes.end(), [](const RandomNode& n) { return n.cpu_milli >= 3000; });
    return big_pod && big_node;
  };
  ASSERT_TRUE(property(c));
  size_t before = c.size();
  ShrinkStats stats;
  RandomCluster small = ShrinkRandomCluster(c, property, &stats);
  EXPECT_TRUE(property(small));
  EXPECT_TRUE(IsConsistent(small));
  EXPECT_EQ(small.queues.size(), 1u);
  EXPECT_EQ(small.nodes.size(), 1u);
  EXPECT_EQ(small.groups.size(), 1u);
  ASSERT_EQ(small.pods.size(), 1u);
  EXPECT_EQ(small.nodes[0].cpu_milli, 3000);
  EXPECT_EQ(small.nodes[0].memory_mi % 1024, 0);
  EXPECT_EQ(small.pods[0].cpu_milli, 1000);
  EXPECT_EQ(small.pods[0].memory_mi, 0);  // or it runs on the node and needs memory there
  EXPECT_FALSE(small.nodes[0].tainted);
  EXPECT_EQ(small.groups[0].min_member, 1);
  EXPECT_EQ(small.groups[0].priority, 0);
  EXPECT_EQ(small.queues[0].weight, 1);
  EXPECT_LT(small.size(), before);
  EXPECT_GT(stats.accepted, 0);
  EXPECT_LE(stats.accepted, stats.attempts);
  // Deterministic: the same input shrinks to the same output.
  EXPECT_EQ(RenderScenario(ShrinkRandomCluster(c, property), "x"), RenderScenario(small, "x"));
}

TEST(Shrink, KeepsRunningPodsOnNodesThatFitThem) {
  RandomCluster c = BigCluster();
  // Interesting as long as some pod is running: shrinking nodes must not leave it over its node.
  auto property = [](const RandomCluster& x) {
    return std::any_of(x.pods.begin(), x.pods.end(), [](const RandomPod& p) { return !p.node.empty(); });
  };
  ASSERT_TRUE(property(c));
  RandomCluster small = ShrinkRandomCluster(c, property);
  ASSERT_EQ(small.pods.size(), 1u);
  EXPECT_TRUE(IsConsistent(small));
  EXPECT_GE(small.nodes[0].cpu_milli, small.pods[0].cpu_milli);
}

TEST(Shrink, StopsAtTheAttemptBudget) {
  RandomCluster c = BigCluster();
  ShrinkStats stats;
  int calls = 0;
  RandomCluster out = ShrinkRandomCluster(
      c, [&](const RandomCluster&) { return ++calls, false; }, &stats, 7);
  EXPECT_EQ(stats.attempts, 7);
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(stats.accepted, 0);
  EXPECT_EQ(RenderScenario(out, "x"), RenderScenario(c, "x"));
}

TEST(Compare, ConfsCarryTheReferenceAndTheCandidateReplacesIt) {
  for (const std::string& conf : ConfsWithPlugin("binpack")) {
    EXPECT_NE(conf.find("  - name: binpack\n"), std::string::npos) << conf;
    std::string b = ReplacePlugin(conf, "binpack", "binpack2");
    EXPECT_EQ(b.find("  - name: binpack\n"), std::string::npos) << b;
    EXPECT_NE(b.find("  - name: binpack2\n"), std::string::npos) << b;
  }
  // A plugin already in a conf is not added twice.
  for (const std::string& conf : ConfsWithPlugin("gang")) {
    size_t first = conf.find("  - name: gang\n");
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(conf.find("  - name: gang\n", first + 1), std::string::npos);
  }
}

TEST(Compare, IdenticalPoliciesNeverDifferAndDecisionDiffsNameTheField) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  RandomClusterOptions options;
  options.confs = ConfsWithPlugin("binpack");
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RandomCluster c = GenerateRandomCluster(seed, options);
    std::string yaml = RenderScenario(c, "x");
    auto a = RunFirstSession(yaml, c.conf, **provider);
    auto b = RunFirstSession(yaml, c.conf, **provider);
    ASSERT_TRUE(a.ok()) << a.error().Format();
    ASSERT_TRUE(b.ok());
    EXPECT_TRUE(DecisionDiffs(*a, *b).empty());
  }
  SessionResult ref, cand;
  ref.binds = {{"c1/p1", "n1"}};
  cand.binds = {{"c1/p1", "n2"}};
  cand.evictions = {"c1/p9"};
  std::vector<std::string> diffs = DecisionDiffs(ref, cand);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0], "binds: c1/p1: expected n1, got n2");
  EXPECT_EQ(diffs[1], "evictions: c1/p9: unexpected eviction");
}

}  // namespace
}  // namespace kiln
