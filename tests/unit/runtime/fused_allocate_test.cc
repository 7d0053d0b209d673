// allocate's fused search (runtime/actions/helpers.h, SearchForAllocate + BestNodeOfSearch): node
// scores computed in the predicate pass must decide exactly as the plain path (PredicateNodes,
// then BestIdleThenFutureIdleNode scoring afterwards) — same binds and pipelines in the same
// order, same unschedulable reasons, same faults and disabled plugins, same handler coverage —
// on hand-made corner cases (faulting and failing scorers, a single feasible node, only
// future-idle fits, sampling over more than 100 nodes) and on random clusters with the built-in
// policies.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/actions/helpers.h"
#include "runtime/thread_pool.h"
#include "simulator/random_cluster.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/runtime/actions_test_util.h"
#include "tests/unit/runtime/random_cluster_compare.h"

namespace kiln {
namespace {

using actions_testing::ActionsTest;
using actions_testing::GangLike;
using actions_testing::NodeRes;
using actions_testing::Res;
using EP = ExtensionPoint;

// Makes the session's pool wake its workers for every loop, however short, so that the workers
// (not only the calling thread) run the search and the scoring after it; restored afterwards.
struct AlwaysParallel {
  AlwaysParallel() { ThreadPool::Default().set_wake_threshold(std::chrono::nanoseconds(0)); }
  ~AlwaysParallel() { ThreadPool::Default().set_wake_threshold(std::chrono::microseconds(50)); }
};

// Restores the process-wide switch whatever a test does.
struct FusedSwitch {
  explicit FusedSwitch(bool on) { actions::SetFusedAllocateSearch(on); }
  ~FusedSwitch() { actions::SetFusedAllocateSearch(true); }
};

// Everything observable a session decided.
struct Outcome {
  std::vector<std::string> binds;
  std::vector<std::string> pipelined;
  std::vector<std::string> unschedulable;
  std::vector<std::string> faults;
  std::vector<std::string> disabled;
  std::vector<std::string> coverage;
  uint64_t fault_count = 0;
  bool operator==(const Outcome&) const = default;
};

std::string Show(const Outcome& o) {
  return fmt::format("binds [{}]\npipelined [{}]\nunschedulable [{}]\nfaults [{}]\ndisabled [{}]\n"
                     "coverage [{}]\nfault count {}",
                     fmt::join(o.binds, ", "), fmt::join(o.pipelined, ", "),
                     fmt::join(o.unschedulable, ", "), fmt::join(o.faults, ", "),
                     fmt::join(o.disabled, ", "), fmt::join(o.coverage, ", "), o.fault_count);
}

// One allocate run of a cluster the fixture's builder holds, with the fused search on or off.
class FusedAllocateTest : public ActionsTest {
 public:
  using ActionsTest::b;
  using ActionsTest::Plugin;
  using Build = std::function<void(FusedAllocateTest&)>;

  static Outcome RunOnce(const Build& build, const std::vector<std::vector<std::string>>& tiers,
                         bool fused) {
    FusedAllocateTest fx;
    build(fx);
    FusedSwitch sw(fused);
    fx.Open(tiers);
    fx.Run("allocate");
    Outcome o;
    o.binds = fx.Binds();
    o.pipelined = fx.Pipelined();
    fx.ssn->Close();
    for (const auto& [t, msg] : fx.ssn->decisions().unschedulable)
      o.unschedulable.push_back(t->name + ": " + msg);
    o.faults = fx.ssn->decisions().faults;
    o.disabled = fx.ssn->decisions().disabled_plugins;
    for (const auto& u : fx.ssn->HandlerCoverage())
      o.coverage.push_back(fmt::format("{}.{}={}", u.plugin, static_cast<int>(u.point), u.called));
    o.fault_count = fx.ssn->fault_count();
    return o;
  }

  // Runs both paths and checks they agree; returns the outcome for further assertions.
  static Outcome Same(const Build& build, const std::vector<std::vector<std::string>>& tiers) {
    Outcome plain = RunOnce(build, tiers, false);
    Outcome fused = RunOnce(build, tiers, true);
    EXPECT_EQ(fused, plain) << "fused:\n" << Show(fused) << "\nplain:\n" << Show(plain);
    return fused;
  }

  void TestBody() override {}
};

void Inqueue(Job& j) { j.phase = PodGroupPhase::Inqueue; }

// Queue "default", nodes n0… of `node_cpu` milli-cores, one admitted job "j" of tasks j-0….
void OneJob(FusedAllocateTest& fx, int nodes, double node_cpu, int tasks, double task_cpu) {
  fx.b.AddQueue("default");
  for (int i = 0; i < nodes; ++i) fx.b.AddNode(fmt::format("n{}", i), NodeRes(node_cpu));
  Job& j = fx.b.AddJob("ns", "j", "default", 1);
  Inqueue(j);
  for (int i = 0; i < tasks; ++i) fx.b.AddTask(j, fmt::format("j-{}", i), Res(task_cpu, 0));
}

// A plugin with one node_order handler.
void Scorer(FusedAllocateTest& fx, const std::string& name,
            int32_t (*fn)(const Task*, const Node*, double*)) {
  fx.Plugin(name, [fn](Session& s, PluginHandle h) { s.On<EP::NodeOrder>(h, fn); });
}

TEST(FusedAllocate, ScoresDecideAsThePlainPath) {
  auto build = [](FusedAllocateTest& fx) {
    OneJob(fx, 6, 4000, 8, 1000);
    fx.Plugin("score", [](Session& s, PluginHandle h) {
      // Prefers the node with the most idle cpu, then the highest name: spreads the tasks.
      s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) {
        *score = n->idle.cpu() / 100 + static_cast<double>(n->index);
        return 0;
      });
      s.On<EP::BatchNodeOrder>(h, [](const Task*, const Node* const* nodes, size_t n, double* out) {
        for (size_t i = 0; i < n; ++i) out[i] = nodes[i]->index % 2 ? 3 : 0;
        return 0;
      });
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"score"}});
  ASSERT_EQ(o.binds.size(), 8u);
  // n5 scores 40 + 5 + 3 first; the spreading is what the scores say, in both paths.
  EXPECT_EQ(o.binds.front(), "j-0@n5");
}

TEST(FusedAllocate, FaultingScorerIsReportedAndDisabledAsThePlainPath) {
  auto build = [](FusedAllocateTest& fx) {
    OneJob(fx, 5, 8000, 6, 1000);
    fx.Plugin("faulty", [](Session& s, PluginHandle h) {
      // Faults on n3; after PluginFaultLimit() faults the plugin is disabled and its score
      // (which otherwise prefers n3) no longer counts.
      s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) {
        if (n->name == "n3") kiln_policy_fault("boom", 4);
        *score = n->name == "n2" ? 50 : 0;
        return 0;
      });
    });
    Scorer(fx, "other", [](const Task*, const Node* n, double* score) -> int32_t {
      *score = n->name == "n4" ? 10 : 0;
      return 0;
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"faulty", "other"}});
  EXPECT_EQ(o.disabled, std::vector<std::string>{"faulty"});
  EXPECT_EQ(o.fault_count, static_cast<uint64_t>(PluginFaultLimit()));
}

TEST(FusedAllocate, FaultingPredicateMidPassFallsBackToThePlainScores) {
  auto build = [](FusedAllocateTest& fx) {
    OneJob(fx, 6, 8000, 4, 1000);
    // One plugin with both a predicate that faults on n1, n2 and n4 (the third fault disables
    // it within one search) and a score: nodes scored before the plugin was disabled counted its
    // score, nodes after did not — the plain path scores after the search, without it.
    fx.Plugin("both", [](Session& s, PluginHandle h) {
      s.On<EP::Predicate>(h, [](const Task*, const Node* n, KStatusOut*) -> int32_t {
        if (n->name == "n1" || n->name == "n2" || n->name == "n4") kiln_policy_fault("p", 1);
        return 0;
      });
      s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) {
        *score = n->name == "n0" ? 100 : 0;
        return 0;
      });
    });
    Scorer(fx, "tail", [](const Task*, const Node* n, double* score) -> int32_t {
      *score = static_cast<double>(n->index);
      return 0;
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"both", "tail"}});
  EXPECT_EQ(o.disabled, std::vector<std::string>{"both"});
  ASSERT_FALSE(o.binds.empty());
  // Without "both" the highest index wins (n1, n2, n4 were rejected by the faults).
  EXPECT_EQ(o.binds.front(), "j-0@n5");
}

TEST(FusedAllocate, FailingScorerScoresZeroAsThePlainPath) {
  auto build = [](FusedAllocateTest& fx) {
    OneJob(fx, 4, 8000, 1, 1000);
    fx.Plugin("err", [](Session& s, PluginHandle h) {
      // An error on n3 makes its whole NodeOrderFn sum 0, the later plugin's 9 included.
      s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) -> int32_t {
        if (n->name == "n3") return 1;
        *score = 1;
        return 0;
      });
    });
    Scorer(fx, "nine", [](const Task*, const Node* n, double* score) -> int32_t {
      *score = n->name == "n3" ? 9 : 0;
      return 0;
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"err", "nine"}});
  EXPECT_EQ(o.binds, std::vector<std::string>{"j-0@n0"});
}

TEST(FusedAllocate, SingleFeasibleNodeCallsNoScorer) {
  auto build = [](FusedAllocateTest& fx) {
    fx.b.AddQueue("default");
    fx.b.AddNode("small", NodeRes(500));
    fx.b.AddNode("big", NodeRes(4000));
    Job& j = fx.b.AddJob("ns", "j", "default", 1);
    Inqueue(j);
    fx.b.AddTask(j, "j-0", Res(1000, 0));
    Scorer(fx, "score", [](const Task*, const Node*, double* score) -> int32_t {
      *score = 1;
      return 0;
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"score"}});
  EXPECT_EQ(o.binds, std::vector<std::string>{"j-0@big"});
  // One feasible node is taken as is: node_order never ran, in either path.
  ASSERT_EQ(o.coverage.size(), 1u);
  EXPECT_EQ(o.coverage[0], fmt::format("score.{}=false", static_cast<int>(EP::NodeOrder)));
}

TEST(FusedAllocate, FutureIdleGroupIsScoredWhenNoNodeFitsIdle) {
  auto build = [](FusedAllocateTest& fx) {
    fx.b.AddQueue("default");
    for (const char* n : {"n0", "n1", "n2"}) fx.b.AddNode(n, NodeRes(4000));
    Job& old = fx.b.AddJob("ns", "old", "default", 1);
    old.phase = PodGroupPhase::Running;
    fx.b.AddTask(old, "old-0", Res(4000, 0), TaskStatus::Releasing, "n0");
    fx.b.AddTask(old, "old-1", Res(4000, 0), TaskStatus::Releasing, "n1");
    fx.b.AddTask(old, "old-2", Res(4000, 0), TaskStatus::Running, "n2");
    Job& j = fx.b.AddJob("ns", "j", "default", 2);
    Inqueue(j);
    fx.b.AddTask(j, "j-0", Res(2000, 0));
    fx.b.AddTask(j, "j-1", Res(2000, 0));
    fx.Plugin("gang", GangLike());
    Scorer(fx, "score", [](const Task*, const Node* n, double* score) -> int32_t {
      *score = n->name == "n1" ? 7 : 0;
      return 0;
    });
  };
  Outcome o = FusedAllocateTest::Same(build, {{"gang", "score"}});
  EXPECT_TRUE(o.binds.empty());
  EXPECT_EQ(o.pipelined, (std::vector<std::string>{"j-0@n1", "j-1@n1"}));
}

TEST(FusedAllocate, SampledSearchOverManyNodesAndBlocks) {
  // 400 nodes: the search wants 188 of them (47%); every third is full, so the search runs past
  // its first block and the nodes of later blocks are scored after the pass.
  auto build = [](FusedAllocateTest& fx) {
    fx.b.AddQueue("default");
    for (int i = 0; i < 400; ++i) fx.b.AddNode(fmt::format("n{:03}", i), NodeRes(i % 3 ? 4000 : 500));
    Job& j = fx.b.AddJob("ns", "j", "default", 1);
    Inqueue(j);
    for (int i = 0; i < 60; ++i) fx.b.AddTask(j, fmt::format("j-{:02}", i), Res(1000 + 10 * (i % 7), 0));
    Scorer(fx, "score", [](const Task* t, const Node* n, double* score) -> int32_t {
      *score = static_cast<double>((n->index * 37 + t->index * 11) % 101) - n->idle.cpu() / 1000;
      return 0;
    });
  };
  AlwaysParallel parallel;
  Outcome o = FusedAllocateTest::Same(build, {{"score"}});
  EXPECT_EQ(o.binds.size(), 60u);
}

// No predicate and no scorer (the plugin-free session): the fused search takes its single pass
// over the columns, and which resource a full node lacks comes from the columns too. Nodes short
// of cpu, of memory or of GPUs; tasks of two roles (their rejections cached from task to task)
// and tasks no node fits, whose reasons count every kind of shortage.
TEST(FusedAllocate, PluginFreeSearchDecidesAsThePlainPath) {
  auto build = [](FusedAllocateTest& fx) {
    fx.b.AddQueue("default");
    for (int i = 0; i < 300; ++i) {
      const double cpu = i % 4 == 0 ? 500 : 4000;
      const double memory = i % 3 == 0 ? 1024 : 16384;
      std::vector<std::pair<std::string, double>> scalars{{"pods", 110}};
      if (i % 5 == 0) scalars.emplace_back("nvidia.com/gpu", 4);
      fx.b.AddNode(fmt::format("n{:03}", i), Res(cpu, memory, scalars));
    }
    Job& j = fx.b.AddJob("ns", "j", "default", 1);
    Inqueue(j);
    for (int i = 0; i < 70; ++i)
      fx.b.AddTask(j, fmt::format("w-{:02}", i), Res(1000, 2048), TaskStatus::Pending, "", "worker");
    for (int i = 0; i < 12; ++i)
      fx.b.AddTask(j, fmt::format("g-{:02}", i), Res(1000, 512, {{"nvidia.com/gpu", 2}}),
                   TaskStatus::Pending, "", "gpu");
    for (int i = 0; i < 2; ++i) {
      fx.b.AddTask(j, fmt::format("cpu-{}", i), Res(8000, 0), TaskStatus::Pending, "", "huge");
      fx.b.AddTask(j, fmt::format("mem-{}", i), Res(100, 65536), TaskStatus::Pending, "", "tall");
      fx.b.AddTask(j, fmt::format("gpu-{}", i), Res(100, 0, {{"nvidia.com/gpu", 8}}));
    }
  };
  AlwaysParallel parallel;
  Outcome o = FusedAllocateTest::Same(build, {});
  EXPECT_GT(o.binds.size(), 70u);
  EXPECT_FALSE(o.unschedulable.empty());
}

// Plugin-free, a node whose Idle fits is chosen before one that fits only once its releasing
// pods are gone, even at a lower index: the single pass picks as BestNodeOfSearch does.
TEST(FusedAllocate, PluginFreeSearchChoosesANodeThatFitsIdleFirst) {
  auto build = [](FusedAllocateTest& fx) {
    fx.b.AddQueue("default");
    for (int i = 0; i < 300; ++i) fx.b.AddNode(fmt::format("n{:03}", i), NodeRes(4000));
    Job& old = fx.b.AddJob("ns", "old", "default", 1);
    old.phase = PodGroupPhase::Running;
    // Two nodes in three are busy with a pod that is going away: only their FutureIdle fits.
    for (int i = 0; i < 300; ++i)
      if (i % 3 != 2)
        fx.b.AddTask(old, fmt::format("old-{:03}", i), Res(3500, 0), TaskStatus::Releasing,
                     fmt::format("n{:03}", i));
    Job& j = fx.b.AddJob("ns", "j", "default", 1);
    Inqueue(j);
    for (int i = 0; i < 40; ++i) fx.b.AddTask(j, fmt::format("j-{:02}", i), Res(1000, 0));
  };
  AlwaysParallel parallel;
  Outcome o = FusedAllocateTest::Same(build, {});
  EXPECT_EQ(o.binds.size(), 40u);
  EXPECT_TRUE(o.pipelined.empty()) << fmt::format("{}", fmt::join(o.pipelined, ", "));
}

// What the plain sessions of ExpectSameOnRandomClusters decided, to show they were not trivial.
struct RandomTally {
  int binds = 0;
  int unschedulable = 0;
};

// The first session of 12 random clusters (seeds seed_step, 2 × seed_step, ...), with the fused
// search on and then off, under the built-in policies: both decide alike.
void ExpectSameOnRandomClusters(const RandomClusterOptions& options, uint64_t seed_step,
                                const std::string& name, RandomTally& tally) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  auto run = [&](const std::string& yaml, bool fused) -> Result<SessionResult> {
    FusedSwitch sw(fused);
    return testing::SimulateFirstSession(yaml, **provider);
  };
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    RandomCluster g = GenerateRandomCluster(seed * seed_step, options);
    std::string yaml = RenderScenario(g, fmt::format("{}-{}", name, seed));
    auto plain = run(yaml, false);
    auto fused = run(yaml, true);
    ASSERT_TRUE(plain.ok()) << plain.error().Format();
    ASSERT_TRUE(fused.ok()) << fused.error().Format();
    SCOPED_TRACE(fmt::format("seed {}", seed));
    ASSERT_NO_FATAL_FAILURE(testing::ExpectSameSession(*fused, *plain));
    tally.binds += static_cast<int>(plain->bind_order.size());
    tally.unschedulable += static_cast<int>(plain->unschedulable.size());
  }
}

// The built-in policies on random clusters, big enough for the search to sample.
TEST(FusedAllocate, RandomClustersDecideAsThePlainPath) {
  AlwaysParallel parallel;
  RandomTally tally;
  ASSERT_NO_FATAL_FAILURE(
      ExpectSameOnRandomClusters(testing::CompareClusterOptions(220), 7919, "fused", tally));
  // The clusters are not trivially empty or full: most sessions place pods.
  EXPECT_GT(tally.binds, 100);
}

// The same without a plugin that reads the nodes: gang alone, or with the job and queue orders
// (priority, drf, proportion): every search is the single pass.
TEST(FusedAllocate, RandomClustersWithoutNodePluginsDecideAsThePlainPath) {
  RandomClusterOptions options = testing::CompareClusterOptions(220);
  options.max_groups = 80;
  options.max_group_size = 8;
  options.gpus = true;  // a scalar dimension for the columns (and some nodes without any)
  options.confs = {
      "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: gang\n",
      "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n"
      "  - name: gang\n- plugins:\n  - name: drf\n  - name: proportion\n",
      // A plugin that may pick among the nodes (batch_node_order) but reads none in the search:
      // the single pass lists them for it instead of choosing on its own.
      "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: gang\n"
      "  - name: network-topology-aware\n",
  };
  RandomTally tally;
  ASSERT_NO_FATAL_FAILURE(ExpectSameOnRandomClusters(options, 104729, "plugin-free", tally));
  EXPECT_GT(tally.binds, 100);
  EXPECT_GT(tally.unschedulable, 0);  // and some pods fit nowhere: their reasons are compared
}

// The columns' resource check in its three forms (one node at a time, SSE2, AVX2 where the
// processor has it) answers as Resource::LessEqual does for one dimension: at the tolerance's
// edges, on NaN and infinities, for every count up to 64 and unaligned starts.
TEST(FusedAllocate, ColumnMasksAnswerAsLessEqual) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> requests{0, 0.05, 0.1, 1, 250, 1000, 4e9, inf, nan};
  const std::vector<double> offsets{-1000, -0.2,       -0.1000001, -0.1, -0.0999999, -0.05, 0,
                                    0.05,  0.0999999,  0.1,        0.2,  1000};
  const std::vector<double> absolute{0, -0, 0.1, inf, -inf, nan};
  std::mt19937_64 rng(20261201);
  auto fits = [](double l, double r) {
    Resource req, avail;
    req.values[kCpu] = l;
    avail.values[kCpu] = r;
    return req.LessEqual(avail, DimensionDefault::Zero);
  };
  int fitting = 0, failing = 0;
  for (double l : requests) {
    std::vector<double> column(80);
    for (double& r : column) {
      const size_t pick = rng() % (offsets.size() + absolute.size());
      r = pick < offsets.size() ? l + offsets[pick] : absolute[pick - offsets.size()];
    }
    for (size_t first = 0; first < 8; ++first) {
      for (size_t count = 1; count <= 64; ++count) {
        uint64_t want = 0;
        for (size_t i = 0; i < count; ++i)
          want |= static_cast<uint64_t>(fits(l, column[first + i])) << i;
        SCOPED_TRACE(fmt::format("request {}, first {}, count {}", l, first, count));
        const double* at = column.data() + first;
        EXPECT_EQ(actions::detail::ColumnMaskScalar(l, at, count), want);
        EXPECT_EQ(actions::detail::ColumnMaskSse2(l, at, count), want);
        if (actions::detail::WideCompare())
          EXPECT_EQ(actions::detail::ColumnMaskAvx2(l, at, count), want);
        if (count == 64) {
          fitting += std::popcount(want);
          failing += 64 - std::popcount(want);
        }
      }
    }
  }
  EXPECT_GT(fitting, 500);  // both answers were asked for often
  EXPECT_GT(failing, 500);
}

}  // namespace
}  // namespace kiln
