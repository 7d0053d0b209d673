// enqueue (§4.1), backfill (§4.3), shuffle (§4.6) and the action registry.

#include <gtest/gtest.h>

#include "runtime/actions/action.h"
#include "tests/unit/runtime/actions_test_util.h"

namespace kiln::actions_testing {
namespace {

TEST(ActionRegistry, FindsKilnActionsAndKnowsVolcanoNames) {
  for (std::string_view name :
       {"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle", "gangpreempt",
        "gangreclaim"}) {
    const Action* a = FindAction(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_EQ(a->name(), name);
    EXPECT_TRUE(IsVolcanoActionName(name));
  }
  // Every action Volcano registers is implemented.
  EXPECT_EQ(ActionNames().size(), 8u);
  EXPECT_EQ(ActionNames()[0], "enqueue");
  // Not Volcano's at all.
  EXPECT_FALSE(IsVolcanoActionName("allocte"));
  EXPECT_EQ(FindAction("allocte"), nullptr);
}

class EnqueueTest : public ActionsTest {
 protected:
  void SetUp() override {
    b.AddQueue("q1");
    b.AddQueue("q2");
    b.AddNode("n1", NodeRes(4000));
  }
  Job& PendingJob(std::string name, std::string queue, int64_t created, bool min_resources) {
    Job& j = b.AddJob("ns", name, queue, 1);
    j.creation_time = created;
    j.has_min_resources = min_resources;
    if (min_resources) j.min_resources = Res(1000, 0);
    b.AddTask(j, name + "-0", Res(1000, 0));
    return j;
  }
};

TEST_F(EnqueueTest, JobEnqueueableVotesDecideJobsWithMinResources) {
  PendingJob("permit", "q1", 1, true);
  PendingJob("reject", "q1", 2, true);
  PendingJob("nominres", "q1", 3, false);
  Job& running = RunningJob("running", "q1");
  std::vector<std::string> enqueued;
  OpenWithPlugin("vote", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, [](const Job* j) { return j->name == "permit" ? 1 : -1; });
    s.On<EP::JobEnqueued>(h, [&](const Job* j) { enqueued.push_back(j->name); });
  });
  Run("enqueue");
  EXPECT_EQ(J("permit")->phase, PodGroupPhase::Inqueue);
  EXPECT_EQ(J("reject")->phase, PodGroupPhase::Pending);
  // Without spec.minResources the vote is not asked.
  EXPECT_EQ(J("nominres")->phase, PodGroupPhase::Inqueue);
  EXPECT_EQ(J("running")->phase, PodGroupPhase::Running);
  EXPECT_EQ(enqueued, (std::vector<std::string>{"permit", "nominres"}));
  EXPECT_EQ(J("reject")->schedule_start_time, 1000) << "stamped with the session clock";
}

TEST_F(EnqueueTest, QueuesTakeTurnsOneJobEach) {
  PendingJob("a1", "q1", 1, false);
  PendingJob("a2", "q1", 2, false);
  PendingJob("b1", "q2", 3, false);
  PendingJob("b2", "q2", 4, false);
  std::vector<std::string> enqueued;
  std::vector<std::string> order;  // queue of every job admitted, in admission order
  OpenWithPlugin("rr", [&](Session& s, PluginHandle h) {
    // Queues ordered by how many of their jobs are Inqueue: the one just served goes behind.
    s.On<EP::QueueOrder>(h, [](const Queue* l, const Queue* r) {
      auto admitted = [](const Queue* q) {
        int n = 0;
        for (const Job* j : q->jobs) n += j->phase == PodGroupPhase::Inqueue;
        return n;
      };
      return admitted(l) - admitted(r);
    });
    s.On<EP::JobEnqueued>(h, [&](const Job* j) { enqueued.push_back(j->name); });
  });
  Run("enqueue");
  EXPECT_EQ(enqueued, (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
}

class BackfillTest : public ActionsTest {
 protected:
  void SetUp() override {
    b.AddQueue("default");
    b.AddNode("n1", NodeRes(1000));
    b.AddNode("n2", NodeRes(1000));
  }
};

TEST_F(BackfillTest, PlacesBestEffortTasksByPredicatesOnly) {
  Job& j = InqueueJob("j");
  b.AddTask(j, "full-0", Res(1000, 0), TaskStatus::Running, "n1");
  b.AddTask(j, "full-1", Res(1000, 0), TaskStatus::Running, "n2");
  b.AddTask(j, "be-0", Res(0, 0));
  b.AddTask(j, "be-1", Res(0, 0));
  b.AddTask(j, "cpu-0", Res(500, 0));
  OpenWithPlugin("pred", [](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [](const Task* t, const Node* n, KStatusOut* out) -> int32_t {
      if (t->name == "be-1" && n->name == "n1") {
        return Reject(out, "node(s) had untolerated taint {dedicated: gpu}");
      }
      return 0;
    });
  });
  Run("backfill");
  // No resource check: both full nodes take BestEffort pods; cpu-0 is not backfill's.
  EXPECT_EQ(Binds(), (std::vector<std::string>{"be-0@n1", "be-1@n2"}));
  EXPECT_EQ(T("cpu-0")->status, TaskStatus::Pending);
}

TEST_F(BackfillTest, RecordsWhyNoNodeTookABestEffortTask) {
  Job& j = InqueueJob("j");
  b.AddTask(j, "be-0", Res(0, 0));
  OpenWithPlugin("pred", [](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [](const Task*, const Node*, KStatusOut* out) -> int32_t {
      return Reject(out, "node(s) didn't match Pod's node affinity/selector");
    });
  });
  ExpectNoBind("backfill", "be-0",
               "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.");
}

TEST_F(BackfillTest, SkipsPendingPodGroupsAndInvalidJobs) {
  Job& pending = b.AddJob("ns", "pending", "default", 1);
  b.AddTask(pending, "p-0", Res(0, 0));
  Job& invalid = InqueueJob("invalid");
  b.AddTask(invalid, "i-0", Res(0, 0));
  OpenWithPlugin("valid", [](Session& s, PluginHandle h) {
    s.On<EP::JobValid>(h, [](const Job* j, KStatusOut*) { return j->name != "invalid"; });
  });
  Run("backfill");
  EXPECT_TRUE(Binds().empty());
}

TEST_F(BackfillTest, BindsOnlyOnceTheJobIsReady) {
  Job& j = InqueueJob("j", "default", 2);
  b.AddTask(j, "be-0", Res(0, 0));
  b.AddTask(j, "be-1", Res(0, 0));
  OpenWithPlugin("ready", [](Session& s, PluginHandle h) {
    s.On<EP::JobReady>(h, [](const Job* job) { return job->ReadyTaskNum() >= job->min_available; });
  });
  Run("backfill");
  // be-0 waits Allocated until be-1 makes the job ready; then both are bound.
  EXPECT_EQ(Binds(), (std::vector<std::string>{"be-0@n1", "be-1@n1"}));
}

TEST_F(BackfillTest, TakesPipelinedBestEffortTasksBackOutOfThePipeline) {
  Job& j = InqueueJob("j");
  b.AddTask(j, "be-0", Res(0, 0));
  std::vector<std::string> events;
  OpenWithPlugin("events", [&events](Session& s, PluginHandle h) {
    s.On<EP::OnAllocate>(h, [&events](const Task* t) { events.push_back("+" + t->name); });
    s.On<EP::OnDeallocate>(h, [&events](const Task* t) { events.push_back("-" + t->name); });
    // be-0 may only run on n2.
    s.On<EP::Predicate>(h, [](const Task*, const Node* n, KStatusOut* out) -> int32_t {
      if (n->name == "n2") return 0;
      return Reject(out, "node(s) didn't match Pod's node affinity/selector");
    });
  });
  ASSERT_TRUE(ssn->Pipeline(T("be-0"), N("n1")).ok());
  ASSERT_EQ(N("n1")->pipelined.Get(kPods), 1);
  Run("backfill");
  EXPECT_EQ(N("n1")->pipelined.Get(kPods), 0);
  EXPECT_EQ(Binds(), (std::vector<std::string>{"be-0@n2"}));
  EXPECT_EQ(events, (std::vector<std::string>{"+be-0", "-be-0", "+be-0"}));
}

TEST_F(BackfillTest, ShuffleEvictsTheVictimTasksPluginsName) {
  Job& j = RunningJob("j");
  b.AddTask(j, "r-0", Res(500, 0), TaskStatus::Running, "n1");
  b.AddTask(j, "r-1", Res(500, 0), TaskStatus::Running, "n2");
  OpenWithPlugin("victims", [](Session& s, PluginHandle h) {
    s.On<EP::VictimTasks>(h, [](const Task* const* tasks, size_t n, uint8_t* sel) {
      for (size_t i = 0; i < n; ++i) sel[i] = tasks[i]->name == "r-1";
    });
  });
  Run("shuffle");
  EXPECT_EQ(Evictions(), (std::vector<std::string>{"r-1"}));
  EXPECT_EQ(T("r-1")->status, TaskStatus::Releasing);
  EXPECT_EQ(T("r-0")->status, TaskStatus::Running);
}

}  // namespace
}  // namespace kiln::actions_testing
