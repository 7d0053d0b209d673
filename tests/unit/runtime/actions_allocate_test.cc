// allocate (volcano-semantics.md §4.2) on small clusters, asserting the exact decisions.

#include <gtest/gtest.h>

#include <atomic>

#include "runtime/actions/helpers.h"
#include "runtime/statement.h"
#include "tests/unit/runtime/actions_test_util.h"

namespace kiln::actions_testing {
namespace {

class AllocateTest : public DefaultQueueTest {
 protected:
  // n1 with `cpu` milli-cores and the Inqueue job j, whose tasks the test adds.
  Job& JobOnOneNode(double cpu) {
    b.AddNode("n1", NodeRes(cpu));
    return InqueueJob("j");
  }
};

TEST_F(AllocateTest, FitsTasksInNodeOrderWhenScoresTie) {
  AddNodes(2, 4000);
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(2000, 0));
  b.AddTask(j, "j-1", Res(2000, 0));
  b.AddTask(j, "j-2", Res(2000, 0));
  Open({});
  // Without plugins JobReady is true after each task: commit, re-queue, next task.
  ExpectBinds("allocate", {"j-0@n1", "j-1@n1", "j-2@n2"});
  EXPECT_EQ(N("n1")->idle.cpu(), 0);
  EXPECT_EQ(N("n2")->idle.cpu(), 2000);
  EXPECT_EQ(T("j-0")->status, TaskStatus::Binding);
}

TEST_F(AllocateTest, InsufficientResourceReasonsInKubernetesStyle) {
  AddNodes(2, 4000);
  b.AddNode("tiny", Res(16000, 16384));  // no pods allocatable: fits no task at all
  Job& j = InqueueJob("j");
  b.AddTask(j, "big-0", Res(8000, 0));
  Open({});
  ExpectNoBind("allocate", "big-0",
               "0/3 nodes are available: 2 Insufficient cpu, 1 Insufficient pods.");
}

TEST_F(AllocateTest, GangHoldsJobUntilMinAvailableFitsAndDiscards) {
  AddNodes(2, 2000);
  Job& gang = InqueueJob("gang", "default", 3);
  for (int i = 0; i < 3; ++i) b.AddTask(gang, "gang-" + std::to_string(i), Res(2000, 0));
  Job& small = InqueueJob("small");
  small.creation_time = 5;  // orders after the gang
  b.AddTask(small, "small-0", Res(2000, 0));
  OpenWithPlugin("gang", GangLike());
  // Two of three gang tasks fit, the job is neither ready nor pipelined: discarded, so the
  // small job gets the node the gang had taken first.
  ExpectBinds("allocate", {"small-0@n1"});
  EXPECT_EQ(T("gang-0")->status, TaskStatus::Pending);
  EXPECT_EQ(T("gang-1")->status, TaskStatus::Pending);
  EXPECT_EQ(N("n2")->idle.cpu(), 2000);
  // The task that found no node carries the reason; gang stopped there (minAvailable == tasks).
  EXPECT_EQ(Unschedulable("gang-2"), "0/2 nodes are available: 2 Insufficient cpu.");
}

TEST_F(AllocateTest, PipelinesOntoReleasingResourcesWithoutCommitting) {
  b.AddNode("n1", NodeRes(4000));
  Job& old = RunningJob("old");
  b.AddTask(old, "old-0", Res(4000, 0), TaskStatus::Releasing, "n1");
  Job& j = InqueueJob("j", "default", 2);
  j.creation_time = 1;
  b.AddTask(j, "j-0", Res(2000, 0));
  b.AddTask(j, "j-1", Res(2000, 0));
  Job& late = InqueueJob("late");
  late.creation_time = 2;
  b.AddTask(late, "late-0", Res(1000, 0));
  OpenWithPlugin("gang", GangLike());
  ASSERT_EQ(N("n1")->idle.cpu(), 0);
  ASSERT_EQ(N("n1")->FutureIdle().cpu(), 4000);
  // Both tasks of j go onto what old-0 releases: pipelined, not ready, so not bound — and the
  // statement is not discarded either, so `late` finds no future idle left.
  ExpectBinds("allocate", {});
  EXPECT_EQ(Pipelined(), (std::vector<std::string>{"j-0@n1", "j-1@n1"}));
  EXPECT_EQ(N("n1")->pipelined.cpu(), 4000);
  EXPECT_EQ(T("late-0")->status, TaskStatus::Pending);
  EXPECT_EQ(Unschedulable("late-0"), "0/1 nodes are available: 1 Insufficient cpu.");
}

TEST_F(AllocateTest, IdleNodesArePreferredOverReleasingOnes) {
  AddNodes(2, 4000);
  Job& old = RunningJob("old");
  b.AddTask(old, "old-0", Res(4000, 0), TaskStatus::Releasing, "n1");
  b.AddTask(old, "old-1", Res(2000, 0), TaskStatus::Running, "n2");
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(2000, 0));
  // A score that prefers n1 does not matter: n1 only fits through its future idle.
  OpenWithPlugin("prefer-n1", [](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) {
      *score = n->name == "n1" ? 100 : 0;
      return 0;
    });
  });
  ExpectBinds("allocate", {"j-0@n2"});
}

TEST_F(AllocateTest, ScoresBestNodeAndNodeOrderTies) {
  AddNodes(3, 4000);
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(1000, 0));
  b.AddTask(j, "j-1", Res(1000, 0));
  // NodeOrder + BatchNodeOrder add up: n2 = 10 + 0, n3 = 4 + 6 → tie at 10, node order picks n2.
  OpenWithPlugin("score", [](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* score) {
      *score = n->name == "n2" ? 10 : n->name == "n3" ? 4 : 0;
      return 0;
    });
    s.On<EP::BatchNodeOrder>(h, [](const Task*, const Node* const* nodes, size_t n, double* out) {
      for (size_t i = 0; i < n; ++i) out[i] = nodes[i]->name == "n3" ? 6 : 0;
      return 0;
    });
  });
  ExpectBinds("allocate", {"j-0@n2", "j-1@n2"});
}

TEST_F(AllocateTest, BestNodePluginOverridesScores) {
  AddNodes(3, 4000);
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(1000, 0));
  OpenWithPlugin("best", [](Session& s, PluginHandle h) {
    s.On<EP::BestNode>(
        h, [](const Task*, const Node* const* nodes, size_t n, const double*) -> const Node* {
          for (size_t i = 0; i < n; ++i)
            if (nodes[i]->name == "n3") return nodes[i];
          return nullptr;
        });
  });
  ExpectBinds("allocate", {"j-0@n3"});
}

TEST_F(AllocateTest, ScoresAtOrBelowMinusOneSelectNoNode) {
  // Volcano's SelectBestNode starts its running maximum at -1.
  AddNodes(2, 4000);
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(1000, 0));
  OpenWithPlugin("negative", [](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [](const Task*, const Node*, double* score) {
      *score = -5;
      return 0;
    });
  });
  ExpectBinds("allocate", {});
  EXPECT_EQ(T("j-0")->status, TaskStatus::Pending);
}

TEST_F(AllocateTest, OverusedQueueIsDropped) {
  b.AddQueue("busy");
  b.AddNode("n1", NodeRes(8000));
  Job& a = InqueueJob("a", "busy");
  b.AddTask(a, "a-0", Res(1000, 0));
  Job& c = InqueueJob("c");
  b.AddTask(c, "c-0", Res(1000, 0));
  OpenWithPlugin("overused", [](Session& s, PluginHandle h) {
    s.On<EP::Overused>(h, [](const Queue* q) { return q->name == "busy"; });
  });
  ExpectBinds("allocate", {"c-0@n1"});
  EXPECT_EQ(T("a-0")->status, TaskStatus::Pending);
}

TEST_F(AllocateTest, AllocatableIsAskedPerTask) {
  Job& j = JobOnOneNode(8000);
  b.AddTask(j, "j-0", Res(1000, 0));
  b.AddTask(j, "j-1", Res(3000, 0));
  b.AddTask(j, "j-2", Res(1000, 0));
  OpenWithPlugin("cap", [](Session& s, PluginHandle h) {
    s.On<EP::Allocatable>(h, [](const Queue*, const Task* t) { return t->resreq().cpu() < 2000; });
  });
  ExpectBinds("allocate", {"j-0@n1", "j-2@n1"});
  EXPECT_EQ(T("j-1")->status, TaskStatus::Pending);
}

TEST_F(AllocateTest, BestEffortTasksAreLeftToBackfill) {
  Job& j = JobOnOneNode(4000);
  b.AddTask(j, "be-0", Res(0, 0));
  b.AddTask(j, "j-1", Res(1000, 0));
  Open({});
  ExpectBinds("allocate", {"j-1@n1"});
  EXPECT_EQ(T("be-0")->status, TaskStatus::Pending);
  ExpectBinds("backfill", {"j-1@n1", "be-0@n1"});
}

TEST_F(AllocateTest, PendingPodGroupWaitsForEnqueueWhenEnqueueIsConfigured) {
  b.AddNode("n1", NodeRes(4000));
  Job& j = b.AddJob("ns", "j", "default", 1);  // phase Pending
  b.AddTask(j, "j-0", Res(1000, 0));
  Open({}, {"enqueue", "allocate"});
  ExpectBinds("allocate", {});
  EXPECT_EQ(J("j")->phase, PodGroupPhase::Pending);
}

TEST_F(AllocateTest, PendingPodGroupIsAdmittedWithoutEnqueue) {
  b.AddNode("n1", NodeRes(4000));
  Job& j = b.AddJob("ns", "j", "default", 1);  // phase Pending
  b.AddTask(j, "j-0", Res(1000, 0));
  Open({}, {"allocate"});
  ExpectBinds("allocate", {"j-0@n1"});
  EXPECT_EQ(J("j")->phase, PodGroupPhase::Inqueue);
}

TEST_F(AllocateTest, InvalidJobIsSkipped) {
  Job& j = JobOnOneNode(4000);
  b.AddTask(j, "j-0", Res(1000, 0));
  OpenWithPlugin("valid", [](Session& s, PluginHandle h) {
    s.On<EP::JobValid>(h, [](const Job*, KStatusOut*) { return false; });
  });
  ExpectBinds("allocate", {});
}

// A predicate that rejects n1 for every task, counting its calls.
class PredicateCacheTest : public AllocateTest {
 protected:
  void Build() {
    AddNodes(2, 8000);
    Job& j = InqueueJob("j", "default", 3);
    for (int i = 0; i < 3; ++i)
      b.AddTask(j, "w-" + std::to_string(i), Res(1000, 0), TaskStatus::Pending, "", "worker");
    Plugin("gang", GangLike());
    Plugin("pred", [this](Session& s, PluginHandle h) {
      s.On<EP::Predicate>(h, [this](const Task*, const Node* n, KStatusOut* out) -> int32_t {
        calls.fetch_add(1);
        if (n->name != "n1") return 0;
        return Reject(out, "node(s) didn't match Pod's node affinity/selector");
      });
    });
  }
  std::atomic<int> calls{0};
};

TEST_F(PredicateCacheTest, RoleSharesNodeRejections) {
  Build();
  Open({{"gang", "pred"}});
  ExpectBinds("allocate", {"w-0@n2", "w-1@n2", "w-2@n2"});
  // w-0 asks n1 and n2; w-1 and w-2 skip n1 (cached for role worker) and ask n2 only.
  EXPECT_EQ(calls.load(), 4);
}

TEST_F(PredicateCacheTest, CacheCanBeTurnedOff) {
  Build();
  conf.action_arguments["allocate"].predicate_error_cache_enable = false;
  Open({{"gang", "pred"}});
  ExpectBinds("allocate", {"w-0@n2", "w-1@n2", "w-2@n2"});
  EXPECT_EQ(calls.load(), 6);
}

TEST_F(AllocateTest, FailedRoleSkipsItsOtherTasks) {
  Job& j = JobOnOneNode(2000);
  b.AddTask(j, "ps-0", Res(4000, 0), TaskStatus::Pending, "", "ps");
  b.AddTask(j, "ps-1", Res(4000, 0), TaskStatus::Pending, "", "ps");
  b.AddTask(j, "w-0", Res(1000, 0), TaskStatus::Pending, "", "worker");
  Open({});
  // ps-0 fails; minAvailable 1 < 3 tasks and role ps has no minimum, so allocation continues:
  // ps-1 is skipped by the role cache, w-0 is placed.
  ExpectBinds("allocate", {"w-0@n1"});
  EXPECT_EQ(Unschedulable("ps-1"),
            "Task ps-1 with role spec ps has already predicated failed, skip");
  EXPECT_EQ(Unschedulable("ps-0"), "0/1 nodes are available: 1 Insufficient cpu.");
}

TEST_F(AllocateTest, StopsJobWhenAFailedRoleMissesItsMinimum) {
  b.AddNode("n1", NodeRes(2000));
  Job& j = InqueueJob("j", "default", 2);
  j.task_min_available["ps"] = 1;
  j.task_min_available["worker"] = 1;
  j.task_min_available_total = 2;
  b.AddTask(j, "ps-0", Res(4000, 0), TaskStatus::Pending, "", "ps");
  b.AddTask(j, "w-0", Res(1000, 0), TaskStatus::Pending, "", "worker");
  b.AddTask(j, "w-1", Res(1000, 0), TaskStatus::Pending, "", "worker");
  OpenWithPlugin("gang", GangLike());
  // ps-0 (first in task order) fails and role ps needs 1: NeedContinueAllocating is false.
  ExpectBinds("allocate", {});
  EXPECT_TRUE(Pipelined().empty());
  EXPECT_EQ(T("w-0")->status, TaskStatus::Pending);
  EXPECT_EQ(Unschedulable("w-0"), "");
}

TEST_F(AllocateTest, PrePredicateFailureRejectsEveryNode) {
  AddNodes(2, 4000);
  Job& j = InqueueJob("j");
  b.AddTask(j, "j-0", Res(1000, 0));
  OpenWithPlugin("pre", [](Session& s, PluginHandle h) {
    s.On<EP::PrePredicate>(h, [](const Task*, KStatusOut* out) -> int32_t {
      return Reject(out, "pod has unbound immediate PersistentVolumeClaims");
    });
  });
  ExpectNoBind("allocate", "j-0",
               "0/2 nodes are available: 2 pod has unbound immediate PersistentVolumeClaims.");
}

TEST_F(AllocateTest, NominatedNodeIsTriedFirst) {
  AddNodes(2, 4000);
  Job& j = InqueueJob("j");
  Task& t = b.AddTask(j, "j-0", Res(1000, 0));
  t.nominated_node_name = "n2";
  Open({});
  ExpectBinds("allocate", {"j-0@n2"});
}

TEST_F(AllocateTest, QueuesTakeTurns) {
  b.AddQueue("other");
  b.AddNode("n1", NodeRes(3000));
  for (const char* q : {"default", "other"}) {
    for (int i = 0; i < 2; ++i) {
      Job& j = b.AddJob("ns", std::string(q) + std::to_string(i), q, 1);
      j.phase = PodGroupPhase::Inqueue;
      j.creation_time = i;
      b.AddTask(j, std::string(q) + std::to_string(i) + "-0", Res(1000, 0));
    }
  }
  // A queue order by allocated cpu (what proportion's share does): the queue that just got a
  // task goes behind the other one.
  OpenWithPlugin("share", [](Session& s, PluginHandle h) {
    s.On<EP::QueueOrder>(h, [](const Queue* l, const Queue* r) {
      auto cpu = [](const Queue* q) {
        double sum = 0;
        for (const Job* j : q->jobs) sum += j->allocated.cpu();
        return sum;
      };
      double a = cpu(l), c = cpu(r);
      return a < c ? -1 : a > c ? 1 : 0;
    });
  });
  ExpectBinds("allocate", {"default0-0@n1", "other0-0@n1", "default1-0@n1"});
  EXPECT_EQ(Unschedulable("other1-0"), "0/1 nodes are available: 1 Insufficient cpu.");
}

// ---- helpers ----

TEST(ActionHelpers, NumNodesToFindFollowsVolcano) {
  using actions::NumNodesToFind;
  EXPECT_EQ(NumNodesToFind(0), 0);
  EXPECT_EQ(NumNodesToFind(100), 100);
  EXPECT_EQ(NumNodesToFind(101), 100);    // 49% of 101 = 49, raised to the minimum 100
  EXPECT_EQ(NumNodesToFind(1000), 420);   // 50 − 8 = 42%
  EXPECT_EQ(NumNodesToFind(5000), 500);   // 50 − 40 = 10%
  EXPECT_EQ(NumNodesToFind(10000), 500);  // 50 − 80 < 5 → 5%
  EXPECT_EQ(NumNodesToFind(20000), 1000);
  EXPECT_EQ(NumNodesToFind(1000, 30), 300);
  EXPECT_EQ(NumNodesToFind(1000, 100), 1000);
}

TEST(ActionHelpers, PredicateNodesRotatesAndIsIndependentOfThreads) {
  auto run = [](int threads) {
    std::vector<std::unique_ptr<Node>> storage;
    std::vector<Node*> nodes;
    for (int i = 0; i < 300; ++i) {
      storage.push_back(std::make_unique<Node>());
      storage.back()->index = i;
      storage.back()->name = "n" + std::to_string(i);
      nodes.push_back(storage.back().get());
    }
    Task t;
    t.uid = "t";
    ThreadPool pool(threads);
    size_t rotation = 0;
    actions::PredicateHelper helper(&rotation, pool);
    // Every third node is infeasible.
    auto fn = [](const Task* task, const Node* n) -> std::optional<FitError> {
      if (n->index % 3 == 0) return FitError(task->uid, n->name, StatusCode::Unschedulable, "no");
      return std::nullopt;
    };
    std::vector<std::vector<int64_t>> picks;
    std::vector<size_t> rotations;
    for (int round = 0; round < 3; ++round) {
      auto r = helper.PredicateNodes(&t, nodes, fn, true);
      std::vector<int64_t> ids;
      for (Node* n : r.nodes) ids.push_back(n->index);
      picks.push_back(ids);
      rotations.push_back(rotation);
    }
    return std::make_pair(picks, rotations);
  };
  auto [picks, rotations] = run(1);
  // 300 nodes → 48% → 144 feasible wanted; 144 feasible nodes span 216 nodes from index 0.
  ASSERT_EQ(picks[0].size(), 144u);
  EXPECT_EQ(picks[0].front(), 1);
  EXPECT_EQ(picks[0].back(), 215);
  EXPECT_EQ(rotations[0], 216u);
  EXPECT_EQ(picks[1].front(), 217);  // the search resumes where the last one stopped
  EXPECT_EQ(run(4).first, picks);
  EXPECT_EQ(run(4).second, rotations);
}

}  // namespace
}  // namespace kiln::actions_testing

namespace kiln {
namespace {

TEST(ActionHelpers, FitsFutureIdleMatchesTheFullComparison) {
  ResourceId gpu = *ResourceRegistry::Intern("nvidia.com/gpu");
  uint64_t seed = 12345;
  auto next = [&seed](int mod) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>((seed >> 33) % mod);
  };
  for (int round = 0; round < 2000; ++round) {
    Node n;
    auto fill = [&](Resource& r, bool scalars) {
      r = Resource{};
      r.Set(kCpu, next(4) * 1000);
      r.Set(kMemory, next(4) * 1024);
      if (scalars && next(2)) r.Set(kPods, next(3));
      if (scalars && next(3) == 0) r.Set(gpu, next(3) * 1000);
    };
    fill(n.idle, next(4) != 0);
    fill(n.releasing, next(2) != 0);
    fill(n.pipelined, true);
    // Set by hand here, so refreshed by hand (Link/AddTask/RemoveTask do it in a session).
    n.RefreshFitFuture();
    Resource req;
    fill(req, true);
    ResourceIdList fast, full;
    bool fast_ok = actions::FitsFutureIdle(req, &n, &fast);
    bool full_ok = req.LessEqualWithResourcesName(n.FutureIdle(), DimensionDefault::Zero, &full);
    ASSERT_EQ(fast_ok, full_ok) << "round " << round;
    ASSERT_EQ(fast_ok, req.LessEqual(n.FutureIdle(), DimensionDefault::Zero));
    ASSERT_EQ(fast.Join(), full.Join()) << "round " << round;
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// BuildFitErrors' compact message must read exactly as FitErrors::Message over per-node errors.
TEST(ActionHelpers, CompactFitErrorsReadLikeTheFullOnes) {
  ResourceId gpu = *ResourceRegistry::Intern("nvidia.com/gpu");
  std::vector<std::unique_ptr<Node>> storage;
  std::vector<Node*> nodes;
  const ResourceId dims[] = {kCpu, gpu, kMemory, kCpu, gpu, kPods, kCpu};
  std::vector<actions::NodeRejection> rejections;
  FitErrors full;
  full.SetTotalNodes(9);
  Task t;
  t.uid = "ns-t";
  for (size_t i = 0; i < std::size(dims); ++i) {
    storage.push_back(std::make_unique<Node>());
    storage.back()->name = "n" + std::to_string(i);
    nodes.push_back(storage.back().get());
    actions::NodeRejection r;
    r.insufficient = dims[i];
    rejections.push_back(r);
    full.Add(FitError(t.uid, nodes.back()->name, StatusCode::Unschedulable,
                      fmt::format("Insufficient {}", ResourceRegistry::Name(dims[i]))));
  }
  FitErrors compact = actions::BuildFitErrors(&t, nodes, rejections, 9);
  EXPECT_TRUE(compact.errors().empty());
  EXPECT_EQ(compact.Message(), full.Message());
  EXPECT_EQ(compact.Message(),
            "0/9 nodes are available: 3 Insufficient cpu, 2 Insufficient nvidia.com/gpu, "
            "1 Insufficient memory, 1 Insufficient pods.");

  // A predicate's own rejection among them: every node keeps its error.
  rejections[2].error = FitError(t.uid, "n2", StatusCode::UnschedulableAndUnresolvable,
                                 "node(s) had untolerated taint {a: b}");
  FitErrors mixed = actions::BuildFitErrors(&t, nodes, rejections, 9);
  ASSERT_EQ(mixed.errors().size(), std::size(dims));
  EXPECT_TRUE(mixed.HasUnresolvable("n2"));
  EXPECT_EQ(mixed.Message(),
            "0/9 nodes are available: 3 Insufficient cpu, 2 Insufficient nvidia.com/gpu, "
            "1 Insufficient pods, 1 node(s) had untolerated taint {a: b}.");
}

}  // namespace
}  // namespace kiln
