// preempt (§4.4) and reclaim (§4.5) on small clusters, asserting the exact evictions and
// pipelined placements.

#include <gtest/gtest.h>

#include <map>

#include "tests/unit/runtime/actions_test_util.h"

namespace kiln::actions_testing {
namespace {

class PreemptTest : public DefaultQueueTest {
 protected:
  Job& WaitingJob(std::string name, std::string queue = "default", int64_t min = 1) {
    Job& j = InqueueJob(std::move(name), std::move(queue), min);
    j.creation_time = 100;  // after the running jobs
    return j;
  }
  // Gang-like readiness and starving, plus a Preemptable that offers every candidate.
  void OpenWithPreemptable(std::vector<std::string> more = {}) {
    Plugin("gang", GangLike());
    Plugin("victims", [](Session& s, PluginHandle h) {
      s.On<EP::Preemptable>(h, SelectAll);
      s.On<EP::Reclaimable>(h, SelectAll);
    });
    std::vector<std::string> tier = {"gang", "victims"};
    tier.insert(tier.end(), more.begin(), more.end());
    Open({tier});
  }
  // The same, with tasks in priority order (the priority plugin's TaskOrder).
  void OpenWithPreemptableByPriority() {
    Plugin("priority", [](Session& s, PluginHandle h) { s.On<EP::TaskOrder>(h, ByPriority); });
    OpenWithPreemptable({"priority"});
  }
  // The preemptor: job hi, waiting with one task hi-0 that asks for `cpu` milli-cores.
  Task& Preemptor(double cpu) { return b.AddTask(WaitingJob("hi"), "hi-0", Res(cpu, 0)); }
  // n1 (`node_cpu`) runs the job low's tasks low-0 … low-<count - 1>, 1 cpu each.
  void LowTasksOnN1(double node_cpu, int count) {
    b.AddNode("n1", NodeRes(node_cpu));
    Job& low = RunningJob("low");
    for (int i = 0; i < count; ++i)
      b.AddTask(low, "low-" + std::to_string(i), Res(1000, 0), TaskStatus::Running, "n1");
  }
  // n1 (1 cpu) is full with the running job low's task low-0, which is returned.
  Task& OneFullNode() {
    b.AddNode("n1", NodeRes(1000));
    return b.AddTask(RunningJob("low"), "low-0", Res(1000, 0), TaskStatus::Running, "n1");
  }
  // n1 and n2 (1 cpu each) and the running job low, whose tasks the test places.
  Job& TwoOneCpuNodes() {
    AddNodes(2, 1000);
    return RunningJob("low");
  }
  // Preemption with a choice: n1 (4 cpu) runs low's va (1 cpu, priority 1) and vb (3 cpu,
  // priority 2); hi-0 (priority 10) asks for 3 cpu.
  void BuildTwoVictimsOnOneNode() {
    b.AddNode("n1", NodeRes(4000));
    Job& low = RunningJob("low");
    b.AddTask(low, "va", Res(1000, 0), TaskStatus::Running, "n1").priority = 1;
    b.AddTask(low, "vb", Res(3000, 0), TaskStatus::Running, "n1").priority = 2;
    Preemptor(3000).priority = 10;
  }
  // n1 and n2 (2 cpu each) run low's on-n1 (priority 5) and on-n2 (priority 1); hi-0 (priority
  // 10) asks for 2 cpu.
  void BuildOneVictimPerNode() {
    AddNodes(2, 2000);
    Job& low = RunningJob("low");
    b.AddTask(low, "on-n1", Res(2000, 0), TaskStatus::Running, "n1").priority = 5;
    b.AddTask(low, "on-n2", Res(2000, 0), TaskStatus::Running, "n2").priority = 1;
    Preemptor(2000).priority = 10;
  }
  // Runs `action`: it evicts exactly `evicted`, in eviction order, and pipelines exactly
  // `pipelined` ("task@node").
  void ExpectPreempted(std::string_view action, const std::vector<std::string>& evicted,
                       const std::vector<std::string>& pipelined) {
    Run(action);
    EXPECT_EQ(Evictions(), evicted);
    EXPECT_EQ(Pipelined(), pipelined);
  }
  // A pod-count-like predicate as plugin "podcount": a node running `max` pods or more is
  // Unschedulable (so it passes for preemption), whatever the resources.
  void PodCountPredicate(int max) {
    Plugin("podcount", [max](Session& s, PluginHandle h) {
      s.On<EP::Predicate>(h, [max](const Task*, const Node* n, KStatusOut* out) -> int32_t {
        int running = 0;
        for (const Task* t : n->tasks) running += t->status == TaskStatus::Running;
        if (running < max) return 0;
        return Reject(out, "Too many pods", StatusCode::Unschedulable);
      });
    });
  }
};

TEST_F(PreemptTest, EvictsInReverseTaskOrderUntilThePreemptorFits) {
  LowTasksOnN1(4000, 4);
  Preemptor(2000);
  OpenWithPreemptable();
  // The task that would be scheduled last goes first; two evictions make room.
  ExpectPreempted("preempt", {"low-3", "low-2"}, {"hi-0@n1"});
  EXPECT_TRUE(Binds().empty()) << "preempt never binds";
  EXPECT_TRUE(T("hi-0")->eviction_occurred);
  EXPECT_EQ(T("low-3")->status, TaskStatus::Releasing);
  EXPECT_EQ(T("low-1")->status, TaskStatus::Running);
}

TEST_F(PreemptTest, TaskOrderDecidesWhichVictimGoesFirst) {
  b.AddNode("n1", NodeRes(4000));
  Job& low = RunningJob("low");
  const int priorities[] = {5, 1, 3, 2};
  for (int i = 0; i < 4; ++i) {
    Task& t = b.AddTask(low, "low-" + std::to_string(i), Res(1000, 0), TaskStatus::Running, "n1");
    t.priority = priorities[i];
  }
  Preemptor(2000).priority = 10;
  OpenWithPreemptableByPriority();
  Run("preempt");
  EXPECT_EQ(Evictions(), (std::vector<std::string>{"low-1", "low-3"}));
}

TEST_F(PreemptTest, JobThatOrdersLaterLosesItsTasksFirst) {
  b.AddNode("n1", NodeRes(2000));
  Job& a = RunningJob("lowA");
  b.AddTask(a, "lowA-0", Res(1000, 0), TaskStatus::Running, "n1");
  Job& c = RunningJob("lowB");
  b.AddTask(c, "lowB-0", Res(1000, 0), TaskStatus::Running, "n1");
  Preemptor(1000);
  Plugin("order", [](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [](const Job* l, const Job* r) {
      static const std::map<std::string, int> rank = {{"hi", 0}, {"lowB", 1}, {"lowA", 2}};
      return rank.at(l->name) - rank.at(r->name);
    });
  });
  OpenWithPreemptable({"order"});
  ExpectPreempted("preempt", {"lowA-0"}, {"hi-0@n1"});
}

TEST_F(PreemptTest, NeverTouchesOtherQueuesAndUsesPhaseTwoInsideTheJob) {
  b.AddQueue("other");
  AddNodes(2, 2000);
  Job& foreign = RunningJob("foreign", "other");
  b.AddTask(foreign, "foreign-0", Res(2000, 0), TaskStatus::Running, "n2");
  // A job that needs 3 but runs 2: starving, and only its own tasks are in its queue.
  Job& self = RunningJob("self", "default", 3);
  b.AddTask(self, "self-0", Res(1000, 0), TaskStatus::Running, "n1").priority = 1;
  b.AddTask(self, "self-1", Res(1000, 0), TaskStatus::Running, "n1").priority = 1;
  b.AddTask(self, "self-2", Res(1000, 0)).priority = 10;
  Plugin("lower", [](Session& s, PluginHandle h) { s.On<EP::TaskOrder>(h, ByPriority); });
  Plugin("gang", GangLike());
  Plugin("victims", [](Session& s, PluginHandle h) {
    // Only lower-priority tasks are preemptable (the priority plugin's rule).
    s.On<EP::Preemptable>(h, [](const Task* p, const Task* const* c, size_t n, uint8_t* sel) {
      for (size_t i = 0; i < n; ++i) sel[i] = c[i]->priority < p->priority;
      return 1;
    });
  });
  Open({{"gang", "victims", "lower"}});
  // Phase 1 finds no victim in other jobs of the queue; phase 2 evicts the job's own
  // lower-priority task (the later one in task order); the other queue is never touched.
  ExpectPreempted("preempt", {"self-1"}, {"self-2@n1"});
  EXPECT_EQ(T("foreign-0")->status, TaskStatus::Running);
}

TEST_F(PreemptTest, PredicatesAreRerunAfterEveryEviction) {
  LowTasksOnN1(8000, 3);
  Preemptor(1000);
  // Resources are plentiful; a pod-count-like predicate wants fewer than 2 running pods.
  PodCountPredicate(2);
  OpenWithPreemptable({"podcount"});
  ExpectPreempted("preempt", {"low-2", "low-1"}, {"hi-0@n1"});
}

TEST_F(PreemptTest, UnresolvableNodesAreNotCandidates) {
  OneFullNode();
  Preemptor(1000);
  Plugin("selector", [](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [](const Task* t, const Node*, KStatusOut* out) -> int32_t {
      if (t->name != "hi-0") return 0;
      return Reject(out, "node(s) didn't match Pod's node affinity/selector");
    });
  });
  OpenWithPreemptable({"selector"});
  ExpectPreempted("preempt", {}, {});
}

TEST_F(PreemptTest, NodesAllocateFoundUnresolvableAreSkipped) {
  Job& low = TwoOneCpuNodes();
  b.AddTask(low, "low-1", Res(1000, 0), TaskStatus::Running, "n2");
  Preemptor(1000);
  bool allocating = true;
  // During allocate, n1 is Unresolvable for hi-0; afterwards the predicate would accept it.
  Plugin("selector", [&allocating](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [&allocating](const Task*, const Node* n, KStatusOut* out) -> int32_t {
      if (!allocating || n->name != "n1") return 0;
      return Reject(out, "node(s) didn't match Pod's node affinity/selector");
    });
  });
  OpenWithPreemptable({"selector"});
  Run("allocate");
  ASSERT_TRUE(Binds().empty());
  const auto& recorded = J("hi")->nodes_fit_errors;
  ASSERT_EQ(recorded.count(T("hi-0")->index), 1u);
  EXPECT_EQ(recorded.at(T("hi-0")->index).Message(),
            "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
            "affinity/selector.");
  allocating = false;
  // n1 would take hi-0 without evicting anyone, but allocate ruled it out for this task.
  ExpectPreempted("preempt", {"low-1"}, {"hi-0@n2"});
}

TEST_F(PreemptTest, NominatedPreemptorWaitsForItsNode) {
  Job& low = TwoOneCpuNodes();
  b.AddTask(low, "low-1", Res(1000, 0), TaskStatus::Running, "n1");
  b.AddTask(low, "low-2", Res(1000, 0), TaskStatus::Running, "n2");
  Job& hi = WaitingJob("hi");
  // Nominated onto n1 by an earlier preemption; n1 passes its predicates: it waits there.
  b.AddTask(hi, "hi-0", Res(1000, 0)).nominated_node_name = "n1";
  // Nominated onto a node that is gone: not eligible either.
  b.AddTask(hi, "hi-1", Res(1000, 0)).nominated_node_name = "gone";
  // Nothing nominated: preempts normally.
  b.AddTask(hi, "hi-2", Res(1000, 0));
  OpenWithPreemptable();
  ExpectPreempted("preempt", {"low-1"}, {"hi-2@n1"});
}

TEST_F(PreemptTest, PreemptionPolicyNeverDoesNotPreempt) {
  OneFullNode();
  Preemptor(1000).preemption_policy = PreemptionPolicy::Never;
  OpenWithPreemptable();
  Run("preempt");
  EXPECT_TRUE(Evictions().empty());
  EXPECT_EQ(T("hi-0")->status, TaskStatus::Pending);
}

TEST_F(PreemptTest, NonPreemptableTasksAreNeverVictims) {
  OneFullNode().preemptable = false;
  Preemptor(1000);
  OpenWithPreemptable();
  Run("preempt");
  EXPECT_TRUE(Evictions().empty());
}

TEST_F(PreemptTest, NothingHappensWithoutAStarvingJob) {
  // JobStarving defaults to false when no plugin answers (§6.3).
  OneFullNode();
  Preemptor(1000);
  OpenWithPlugin("victims",
                 [](Session& s, PluginHandle h) { s.On<EP::Preemptable>(h, SelectAll); });
  Run("preempt");
  Run("reclaim");
  EXPECT_TRUE(Evictions().empty());
}

TEST_F(PreemptTest, DiscardsWhenTheJobCannotBePipelined) {
  Job& low = TwoOneCpuNodes();
  b.AddTask(low, "low-0", Res(1000, 0), TaskStatus::Running, "n1");
  b.AddTask(low, "low-1", Res(1000, 0), TaskStatus::Running, "n2").preemptable = false;
  Job& hi = WaitingJob("hi", "default", 2);
  b.AddTask(hi, "hi-0", Res(1000, 0));
  b.AddTask(hi, "hi-1", Res(1000, 0));
  OpenWithPreemptable();
  // hi-0 could take n1, hi-1 finds nothing: the gang is not pipelined, the eviction is undone.
  ExpectPreempted("preempt", {}, {});
  EXPECT_EQ(T("low-0")->status, TaskStatus::Running);
  EXPECT_EQ(N("n1")->idle.cpu(), 0);
}

// Topology-aware preemption: dry runs, reprieve, candidate choice.
class TopologyAwarePreemptTest : public PreemptTest {
 protected:
  void SetUp() override {
    PreemptTest::SetUp();
    conf.action_arguments["preempt"].enable_topology_aware_preemption = true;
  }
};

TEST_F(PreemptTest, NormalPreemptEvictsEveryVictimItPops) {
  BuildTwoVictimsOnOneNode();
  OpenWithPreemptableByPriority();
  Run("preempt");
  EXPECT_EQ(Evictions(), (std::vector<std::string>{"va", "vb"}));
}

TEST_F(TopologyAwarePreemptTest, ReprievesVictimsThePreemptorFitsWithout) {
  BuildTwoVictimsOnOneNode();
  OpenWithPreemptableByPriority();
  // Dry run removes va then vb; giving va back still leaves room for 3000: only vb goes.
  ExpectPreempted("preempt", {"vb"}, {"hi-0@n1"});
  EXPECT_EQ(T("va")->status, TaskStatus::Running);
}

TEST_F(TopologyAwarePreemptTest, PicksTheNodeWithTheLowestPriorityVictims) {
  // Two nodes give clamp(2·10%, 1, 100) = 1 candidate by default; ask for both.
  conf.action_arguments["preempt"].min_candidate_nodes_absolute = 2;
  BuildOneVictimPerNode();
  OpenWithPreemptable();
  ExpectPreempted("preempt", {"on-n2"}, {"hi-0@n2"});
}

TEST_F(PreemptTest, NormalPreemptTakesTheFirstNodeInScoreOrder) {
  BuildOneVictimPerNode();
  OpenWithPreemptable();
  Run("preempt");
  EXPECT_EQ(Evictions(), (std::vector<std::string>{"on-n1"}));
}

// ---- reclaim ----

class ReclaimTest : public PreemptTest {
 protected:
  void SetUp() override {
    b.AddQueue("q1");
    q2 = &b.AddQueue("q2");
  }
  Queue* q2 = nullptr;
  // n1 holds: r-0 (q2, Running), r-1 (q2, Bound), m-0 (q1, Running); h-0 (q1) waits for 2000.
  void Build() {
    b.AddNode("n1", NodeRes(6000));
    Job& own = RunningJob("own", "q2");
    b.AddTask(own, "r-0", Res(2000, 0), TaskStatus::Running, "n1");
    b.AddTask(own, "r-1", Res(2000, 0), TaskStatus::Bound, "n1");
    Job& mate = RunningJob("mate", "q1");
    b.AddTask(mate, "m-0", Res(2000, 0), TaskStatus::Running, "n1");
    Job& hungry = WaitingJob("hungry", "q1");
    b.AddTask(hungry, "h-0", Res(2000, 0));
  }
};

TEST_F(ReclaimTest, TakesOnlyRunningTasksOfOtherQueues) {
  Build();
  OpenWithPreemptable();
  ExpectPreempted("reclaim", {"r-0"}, {"h-0@n1"});
  EXPECT_TRUE(T("h-0")->eviction_occurred);
  EXPECT_EQ(T("r-1")->status, TaskStatus::Bound);
  EXPECT_EQ(T("m-0")->status, TaskStatus::Running);
}

TEST_F(ReclaimTest, QueueReclaimableFlagIsHonoured) {
  Build();
  q2->reclaimable = false;
  OpenWithPreemptable();
  Run("reclaim");
  EXPECT_TRUE(Evictions().empty());
  EXPECT_EQ(T("h-0")->status, TaskStatus::Pending);
}

TEST_F(ReclaimTest, OverusedQueueDoesNotReclaim) {
  Build();
  Plugin("overused", [](Session& s, PluginHandle h) {
    s.On<EP::Overused>(h, [](const Queue* q) { return q->name == "q1"; });
  });
  OpenWithPreemptable({"overused"});
  Run("reclaim");
  EXPECT_TRUE(Evictions().empty());
}

TEST_F(ReclaimTest, PreemptiveFalseSkipsTheTask) {
  Build();
  Plugin("preemptive", [](Session& s, PluginHandle h) {
    s.On<EP::Preemptive>(h, [](const Queue*, const Task*) { return false; });
  });
  OpenWithPreemptable({"preemptive"});
  Run("reclaim");
  EXPECT_TRUE(Evictions().empty());
}

TEST_F(ReclaimTest, PreemptDoesNotCrossQueues) {
  Build();
  OpenWithPreemptable();
  Run("preempt");
  // h-0's queue has only m-0 running: with every candidate offered, preempt takes it, never r-0.
  EXPECT_EQ(Evictions(), (std::vector<std::string>{"m-0"}));
}

TEST_F(ReclaimTest, FitsOnReleasingResourcesWithoutEvicting) {
  b.AddNode("n1", NodeRes(4000));
  Job& own = RunningJob("own", "q2");
  b.AddTask(own, "r-0", Res(2000, 0), TaskStatus::Running, "n1");
  b.AddTask(own, "x-0", Res(2000, 0), TaskStatus::Releasing, "n1");
  Job& hungry = WaitingJob("hungry", "q1");
  b.AddTask(hungry, "h-0", Res(2000, 0));
  OpenWithPreemptable();
  // The fit check comes before each eviction: x-0's release already makes room.
  ExpectPreempted("reclaim", {}, {"h-0@n1"});
  EXPECT_FALSE(T("h-0")->eviction_occurred);
}

TEST_F(ReclaimTest, DoesNotRerunPredicatesAfterEvicting) {
  Build();
  // A predicate that fails plain-Unschedulable (passes for preemption) while n1 runs any pod:
  // it still fails after r-0 goes (m-0 runs on), but reclaim trusts the resource arithmetic.
  PodCountPredicate(1);
  OpenWithPreemptable({"podcount"});
  ExpectPreempted("reclaim", {"r-0"}, {"h-0@n1"});
}

}  // namespace
}  // namespace kiln::actions_testing
