#include "runtime/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <cstring>

#include "runtime/abi.h"
#include "runtime/actions/helpers.h"
#include "tests/oracles/gang_oracle.h"
#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

using testing::ClusterBuilder;
using testing::Res;

TEST(TaskStatus, HelpersMatchVolcano) {
  EXPECT_TRUE(AllocatedStatus(TaskStatus::Bound));
  EXPECT_TRUE(AllocatedStatus(TaskStatus::Binding));
  EXPECT_TRUE(AllocatedStatus(TaskStatus::Running));
  EXPECT_TRUE(AllocatedStatus(TaskStatus::Allocated));
  EXPECT_FALSE(AllocatedStatus(TaskStatus::Pipelined));
  EXPECT_FALSE(AllocatedStatus(TaskStatus::Releasing));
  EXPECT_TRUE(PreemptableStatus(TaskStatus::Running));
  EXPECT_TRUE(PreemptableStatus(TaskStatus::Bound));
  EXPECT_FALSE(PreemptableStatus(TaskStatus::Binding));
  EXPECT_TRUE(CompletedStatus(TaskStatus::Failed));
  EXPECT_FALSE(CompletedStatus(TaskStatus::Releasing));
  EXPECT_TRUE(ScheduledStatus(TaskStatus::Succeeded));
  EXPECT_FALSE(ScheduledStatus(TaskStatus::Binding));
  EXPECT_FALSE(ScheduledStatus(TaskStatus::Allocated));
  EXPECT_EQ(static_cast<uint32_t>(TaskStatus::Unknown), 512u);
  EXPECT_EQ(StatusSlot(TaskStatus::Releasing), 6);
  EXPECT_EQ(ToString(TaskStatus::Pipelined), "Pipelined");
  EXPECT_EQ(*ParseTaskStatus("Bound"), TaskStatus::Bound);
  EXPECT_FALSE(ParseTaskStatus("Sleeping").has_value());
  EXPECT_EQ(*ParsePodGroupPhase(""), PodGroupPhase::Pending);
  EXPECT_FALSE(ParsePodGroupPhase("Done").has_value());
  EXPECT_EQ(*ParseQueueState("Closing"), QueueState::Closing);
}

TEST(Task, RequestsCarryHiddenPod) {
  Task t;
  t.SetRequests(Res(500, 1024));
  EXPECT_EQ(t.resreq().Get(kPods), 1);
  EXPECT_EQ(t.init_resreq().Get(kPods), 1);
  EXPECT_FALSE(t.best_effort);
  EXPECT_EQ(t.priority, 1) << "Volcano's default task priority";
  EXPECT_TRUE(t.preemptable);
  Task be;
  be.SetRequests(Res(0, 0));
  EXPECT_TRUE(be.best_effort) << "the hidden pods request does not make a task non-best-effort";
}

struct Fixture {
  ClusterBuilder b;
  Fixture() {
    b.AddQueue("default");
    b.AddNode("n1", Res(4000, 8192, {{"pods", 110}}));
    b.AddNode("n2", Res(2000, 4096, {{"pods", 2}}));
  }
};

TEST(Cluster, LinkAccountsNodesPerStatus) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 2);
  f.b.AddTask(j, "run", Res(1000, 1024), TaskStatus::Running, "n1");
  f.b.AddTask(j, "rel", Res(500, 512), TaskStatus::Releasing, "n1");
  f.b.AddTask(j, "pipe", Res(250, 256), TaskStatus::Pipelined, "n1");
  f.b.AddTask(j, "done", Res(700, 700), TaskStatus::Succeeded, "n1");
  f.b.AddTask(j, "wait", Res(100, 100));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Node* n1 = f.b.cluster.FindNode("n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->used.cpu(), 1500);
  EXPECT_EQ(n1->idle.cpu(), 2500);
  EXPECT_EQ(n1->idle.Get(kPods), 108);
  EXPECT_EQ(n1->releasing.cpu(), 500);
  EXPECT_EQ(n1->pipelined.cpu(), 250);
  EXPECT_EQ(n1->FutureIdle().cpu(), 2500 + 500 - 250);
  EXPECT_EQ(n1->tasks.size(), 3u) << "the Succeeded pod holds no node resources";
  EXPECT_EQ(f.b.cluster.total_resource().cpu(), 6000);
  EXPECT_EQ(f.b.cluster.total_resource().Get(kPods), 112);
  Task* run = f.b.cluster.FindTask("ns-run");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->node, n1);
  EXPECT_EQ(run->job, f.b.cluster.FindJob("ns/pg"));
}

TEST(Cluster, AffinityIndexFollowsPlacement) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 1);
  Task& plain = f.b.AddTask(j, "plain", Res(100, 100), TaskStatus::Running, "n1");
  Task& anti = f.b.AddTask(j, "anti", Res(100, 100), TaskStatus::Running, "n1");
  anti.mutable_shape().affinity.pod_anti_affinity = PodAffinity{{PodAffinityTerm{}}, {}};
  Task& pref = f.b.AddTask(j, "pref", Res(100, 100));
  pref.mutable_shape().affinity.pod_affinity = PodAffinity{{}, {WeightedPodAffinityTerm{}}};
  Task& empty = f.b.AddTask(j, "empty", Res(100, 100));
  empty.mutable_shape().affinity.pod_affinity = PodAffinity{};  // present but without terms: not indexed
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Node* n1 = f.b.cluster.FindNode("n1");
  Node* n2 = f.b.cluster.FindNode("n2");
  EXPECT_FALSE(plain.has_pod_affinity_terms);
  EXPECT_TRUE(anti.has_pod_affinity_terms);
  EXPECT_TRUE(pref.has_pod_affinity_terms);
  EXPECT_FALSE(empty.has_pod_affinity_terms);
  EXPECT_EQ(n1->affinity_tasks, std::vector<Task*>{&anti});
  EXPECT_EQ(f.b.cluster.affinity_nodes(), std::vector<Node*>{n1});

  pref.status = TaskStatus::Allocated;
  ASSERT_TRUE(n2->AddTask(&pref).ok());
  ASSERT_TRUE(n2->AddTask(&empty).ok());
  EXPECT_EQ(f.b.cluster.affinity_nodes(), (std::vector<Node*>{n1, n2}));
  n1->RemoveTask(&anti);
  EXPECT_TRUE(n1->affinity_tasks.empty());
  EXPECT_EQ(f.b.cluster.affinity_nodes(), std::vector<Node*>{n2});
  n2->RemoveTask(&empty);
  EXPECT_EQ(n2->affinity_tasks, std::vector<Task*>{&pref});
  n2->RemoveTask(&pref);
  EXPECT_TRUE(f.b.cluster.affinity_nodes().empty());
  ASSERT_TRUE(n1->AddTask(&anti).ok());
  EXPECT_EQ(f.b.cluster.affinity_nodes(), std::vector<Node*>{n1});
}

// node.nonzero_requested is the sum nodeorder's resource scorers used to compute by walking the
// node's pods: every placed pod, whatever its status, with 100m / 200Mi for a missing request.
TEST(Cluster, NonZeroRequestedFollowsPlacement) {
  constexpr double kDefaultMemory = 200.0 * 1024 * 1024;
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 1);
  Task& run = f.b.AddTask(j, "run", Res(1000, 1024), TaskStatus::Running, "n1");
  Task& best_effort = f.b.AddTask(j, "be", Res(0, 0), TaskStatus::Running, "n1");
  Task& releasing = f.b.AddTask(j, "rel", Res(300, 0), TaskStatus::Releasing, "n1");
  Task& pending = f.b.AddTask(j, "pending", Res(0, 512));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Node* n1 = f.b.cluster.FindNode("n1");
  Node* n2 = f.b.cluster.FindNode("n2");
  auto walked = [](const Node* n) {
    double cpu = 0, mem = 0;
    for (const Task* t : n->tasks) {
      cpu += t->resreq().cpu() > 0 ? t->resreq().cpu() : 100;
      mem += t->resreq().memory() > 0 ? t->resreq().memory() : kDefaultMemory;
    }
    return std::pair{cpu, mem};
  };
  EXPECT_EQ(n1->nonzero_requested.cpu(), 1000 + 100 + 300);
  EXPECT_EQ(n1->nonzero_requested.memory(), 1024 + kDefaultMemory + kDefaultMemory);
  EXPECT_EQ(walked(n1), std::pair(n1->nonzero_requested.cpu(), n1->nonzero_requested.memory()));
  EXPECT_EQ(n2->nonzero_requested.cpu(), 0);

  pending.status = TaskStatus::Pipelined;  // pipelined pods count too
  ASSERT_TRUE(n2->AddTask(&pending).ok());
  EXPECT_EQ(n2->nonzero_requested.cpu(), 100);
  EXPECT_EQ(n2->nonzero_requested.memory(), 512);
  n1->RemoveTask(&best_effort);
  n1->RemoveTask(&run);
  EXPECT_EQ(walked(n1), std::pair(n1->nonzero_requested.cpu(), n1->nonzero_requested.memory()));
  EXPECT_EQ(n1->nonzero_requested.cpu(), 300);
  n1->RemoveTask(&releasing);
  EXPECT_EQ(n1->nonzero_requested.cpu(), 0);
  EXPECT_EQ(n1->nonzero_requested.memory(), 0);
}

// node.fit_future, what FitsFutureIdle reads, is Idle + Releasing − Pipelined after every change.
TEST(Cluster, FitFutureFollowsPlacement) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 1);
  Task& run = f.b.AddTask(j, "run", Res(1000, 1024), TaskStatus::Running, "n1");
  Task& releasing = f.b.AddTask(j, "rel", Res(300, 64), TaskStatus::Releasing, "n1");
  Task& pipelined = f.b.AddTask(j, "pipe", Res(500, 128));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Node* n1 = f.b.cluster.FindNode("n1");
  const ResourceId pods = *ResourceRegistry::Find("pods");
  auto expect_cached = [&](const char* when) {
    const Resource future = n1->FutureIdle();
    for (ResourceId id : {ResourceId{kCpu}, ResourceId{kMemory}, pods})
      EXPECT_EQ(n1->fit_future[id], future.Get(id)) << when << ", resource " << int{id};
  };
  expect_cached("after Link");
  EXPECT_EQ(n1->fit_future[kCpu], 4000 - 1000);  // idle 2700 + releasing 300
  pipelined.status = TaskStatus::Pipelined;
  ASSERT_TRUE(n1->AddTask(&pipelined).ok());
  expect_cached("after pipelining");
  EXPECT_EQ(n1->fit_future[kCpu], 4000 - 1000 - 500);
  n1->RemoveTask(&releasing);
  expect_cached("after the releasing pod left");
  n1->RemoveTask(&run);
  n1->RemoveTask(&pipelined);
  expect_cached("empty");
  EXPECT_EQ(n1->fit_future[kCpu], 4000);
  EXPECT_TRUE(actions::FitsFutureIdle(Res(4000, 8192), n1));
  EXPECT_FALSE(actions::FitsFutureIdle(Res(4001, 1), n1));
}

TEST(Cluster, DenseIndicesAndLookups) {
  Fixture f;
  Job& a = f.b.AddJob("ns", "a", "default", 1);
  Job& b = f.b.AddJob("ns", "b", "default", 1);
  f.b.AddTask(a, "a-0", Res(1, 1));
  f.b.AddTask(b, "b-0", Res(1, 1));
  f.b.AddTask(a, "a-1", Res(1, 1));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  const auto& tasks = f.b.cluster.tasks();
  for (size_t i = 0; i < tasks.size(); ++i) EXPECT_EQ(tasks[i]->index, static_cast<int64_t>(i));
  EXPECT_EQ(f.b.cluster.jobs()[1]->uid, "ns/b");
  EXPECT_EQ(f.b.cluster.FindJob("ns/a")->TaskCount(), 2);
  EXPECT_EQ(f.b.cluster.FindQueue("default")->jobs.size(), 2u);
  EXPECT_EQ(f.b.cluster.nodes()[1]->index, 1);
}

TEST(Cluster, DropsJobsWithoutQueue) {
  Fixture f;
  Job& lost = f.b.AddJob("ns", "lost", "nope", 1);
  f.b.AddTask(lost, "x", Res(1000, 0), TaskStatus::Running, "n2");
  ASSERT_TRUE(f.b.cluster.Link().ok());
  EXPECT_TRUE(f.b.cluster.jobs().empty());
  EXPECT_EQ(f.b.cluster.FindJob("ns/lost"), nullptr);
  EXPECT_EQ(f.b.cluster.orphan_tasks().size(), 1u);
  EXPECT_EQ(f.b.cluster.FindNode("n2")->used.cpu(), 1000) << "its pod still occupies the node";
}

TEST(Cluster, LinkErrorsNameTheObject) {
  {
    Fixture f;
    f.b.AddNode("n1", Res(1, 1));
    Status s = f.b.cluster.Link();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message, "duplicate node \"n1\"");
  }
  {
    Fixture f;
    Job& j = f.b.AddJob("ns", "pg", "default", 1);
    f.b.AddTask(j, "p", Res(1, 1), TaskStatus::Running, "ghost");
    Status s = f.b.cluster.Link();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message, "task \"ns-p\" is on node \"ghost\", which does not exist");
  }
  {
    Fixture f;
    Task& t = f.b.cluster.NewTask();
    t.uid = "ns-orphan";
    t.job_uid = "ns/none";
    Status s = f.b.cluster.Link();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message, "task \"ns-orphan\" names job \"ns/none\", which does not exist");
  }
  {
    // Namespace "ns-a" pod "b" and namespace "ns" pod "a-b" share the uid "ns-a-b".
    Fixture f;
    Job& j = f.b.AddJob("ns", "pg", "default", 1);
    f.b.AddTask(j, "a-b", Res(1, 1), TaskStatus::Pending);
    Task& twin = f.b.cluster.NewTask();
    twin.uid = "ns-a-b";
    twin.job_uid = "ns/pg";
    Status s = f.b.cluster.Link();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message, "duplicate task \"ns-a-b\"");
  }
}

// Link looks a task's job up again only when the job uid changes from the previous task's:
// tasks of two jobs interleaved still each join their own.
TEST(Cluster, InterleavedTasksJoinTheirOwnJobs) {
  Fixture f;
  Job& a = f.b.AddJob("ns", "a", "default", 1);
  Job& b = f.b.AddJob("ns", "b", "default", 1);
  f.b.AddTask(a, "a0", Res(1, 1), TaskStatus::Pending);
  f.b.AddTask(a, "a1", Res(1, 1), TaskStatus::Pending);
  f.b.AddTask(b, "b0", Res(1, 1), TaskStatus::Pending);
  f.b.AddTask(a, "a2", Res(1, 1), TaskStatus::Pending);
  f.b.AddTask(b, "b1", Res(1, 1), TaskStatus::Pending);
  ASSERT_TRUE(f.b.cluster.Link().ok());
  for (const char* uid : {"ns-a0", "ns-a1", "ns-a2"})
    EXPECT_EQ(f.b.cluster.FindTask(uid)->job, f.b.cluster.FindJob("ns/a")) << uid;
  for (const char* uid : {"ns-b0", "ns-b1"})
    EXPECT_EQ(f.b.cluster.FindTask(uid)->job, f.b.cluster.FindJob("ns/b")) << uid;
  EXPECT_EQ(f.b.cluster.FindJob("ns/a")->tasks.size(), 3u);
  EXPECT_EQ(f.b.cluster.FindJob("ns/b")->tasks.size(), 2u);
}

TEST(Cluster, JobPriorityFromPriorityClass) {
  Fixture f;
  PriorityClass& high = f.b.cluster.NewPriorityClass();
  high.name = "high";
  high.value = 1000;
  PriorityClass& def = f.b.cluster.NewPriorityClass();
  def.name = "normal";
  def.value = 10;
  def.global_default = true;
  Job& a = f.b.AddJob("ns", "a", "default", 1);
  a.priority_class_name = "high";
  Job& b = f.b.AddJob("ns", "b", "default", 1);
  Job& c = f.b.AddJob("ns", "c", "default", 1);
  c.priority_class_name = "missing";
  ASSERT_TRUE(f.b.cluster.Link().ok());
  EXPECT_EQ(f.b.cluster.FindJob("ns/a")->priority, 1000);
  EXPECT_EQ(f.b.cluster.FindJob("ns/b")->priority, 10);
  EXPECT_EQ(f.b.cluster.FindJob("ns/c")->priority, 10);
  (void)b;
}

TEST(Cluster, QueueHierarchy) {
  ClusterBuilder b;
  b.AddQueue("root");
  b.AddQueue("eng").parent_name = "root";
  b.AddQueue("ml").parent_name = "eng";
  ASSERT_TRUE(b.cluster.Link().ok());
  Queue* ml = b.cluster.FindQueue("ml");
  EXPECT_EQ(ml->parent->name, "eng");
  EXPECT_EQ(ml->parent->parent->name, "root");
  EXPECT_TRUE(ml->IsLeaf());
  EXPECT_FALSE(b.cluster.FindQueue("root")->IsLeaf());
}

TEST(Job, CountersAndReadiness) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 3);
  f.b.AddTask(j, "r", Res(100, 0), TaskStatus::Running, "n1");
  f.b.AddTask(j, "b", Res(100, 0), TaskStatus::Bound, "n1");
  f.b.AddTask(j, "p", Res(100, 0), TaskStatus::Pipelined, "n1");
  f.b.AddTask(j, "be", Res(0, 0));
  f.b.AddTask(j, "pend", Res(100, 0));
  f.b.AddTask(j, "s", Res(100, 0), TaskStatus::Succeeded);
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  EXPECT_EQ(job->ReadyTaskNum(), 3);  // Running, Bound, Succeeded
  EXPECT_EQ(job->WaitingTaskNum(), 1);
  EXPECT_EQ(job->PendingBestEffortTaskNum(), 1);
  EXPECT_EQ(job->ValidTaskNum(), 6);
  EXPECT_TRUE(job->IsReady());
  EXPECT_FALSE(job->IsStarving());
  job->min_available = 5;
  EXPECT_FALSE(job->IsReady()) << "3 ready + 1 pending best-effort = 4 < 5";
  EXPECT_TRUE(job->IsPipelined()) << "+ 1 pipelined = 5";
}

TEST(Job, ReadinessThresholds) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 3);
  f.b.AddTask(j, "r", Res(100, 0), TaskStatus::Running, "n1");
  f.b.AddTask(j, "p", Res(100, 0), TaskStatus::Pipelined, "n1");
  f.b.AddTask(j, "be", Res(0, 0));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  EXPECT_FALSE(job->IsReady());      // 1 + 1 < 3
  EXPECT_TRUE(job->IsPipelined());   // 1 + 1 + 1 >= 3
  EXPECT_TRUE(job->IsStarving());    // 1 + 1 < 3
}

TEST(Job, UpdateTaskStatusKeepsCountersAndAllocated) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 1);
  f.b.AddTask(j, "a", Res(300, 10));
  f.b.AddTask(j, "b", Res(200, 10));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  Task* a = f.b.cluster.FindTask("ns-a");
  EXPECT_EQ(job->Count(TaskStatus::Pending), 2);
  EXPECT_EQ(job->allocated.cpu(), 0);
  EXPECT_EQ(job->total_request.cpu(), 500);
  job->UpdateTaskStatus(a, TaskStatus::Allocated);
  EXPECT_EQ(job->Count(TaskStatus::Pending), 1);
  EXPECT_EQ(job->Count(TaskStatus::Allocated), 1);
  EXPECT_EQ(job->allocated.cpu(), 300);
  EXPECT_EQ(job->allocated.Get(kPods), 1);
  EXPECT_EQ(job->TasksWith(TaskStatus::Allocated).front(), a);
  job->UpdateTaskStatus(a, TaskStatus::Pipelined);
  EXPECT_EQ(job->allocated.cpu(), 0) << "Pipelined is not an allocated status";
  EXPECT_EQ(job->WaitingTaskNum(), 1);
  EXPECT_EQ(job->total_request.cpu(), 500);
}

TEST(Job, MinTaskMemberChecks) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 3);
  j.task_min_available = {{"ps", 1}, {"worker", 2}};
  f.b.AddTask(j, "ps-0", Res(100, 0), TaskStatus::Running, "n1", "ps");
  f.b.AddTask(j, "worker-0", Res(100, 0), TaskStatus::Pipelined, "n1", "worker");
  f.b.AddTask(j, "worker-1", Res(100, 0), TaskStatus::Pending, "", "worker");
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  EXPECT_EQ(job->task_min_available_total, 3);
  EXPECT_TRUE(job->CheckTaskValid());       // worker: 1 pipelined + 1 pending = 2
  EXPECT_FALSE(job->CheckTaskReady());      // worker ready 0 < 2
  EXPECT_FALSE(job->CheckTaskPipelined());  // worker occupied 1 < 2
  EXPECT_TRUE(job->CheckTaskStarving());
  job->UpdateTaskStatus(f.b.cluster.FindTask("ns-worker-1"), TaskStatus::Pipelined);
  EXPECT_TRUE(job->CheckTaskPipelined());
  EXPECT_FALSE(job->CheckTaskReady());
  EXPECT_FALSE(job->CheckTaskStarving());
  job->UpdateTaskStatus(f.b.cluster.FindTask("ns-worker-1"), TaskStatus::Failed);
  EXPECT_FALSE(job->CheckTaskValid()) << "a Failed task is not valid";
  // minMember below the sum of minTaskMember: every per-role check passes.
  job->min_available = 2;
  EXPECT_TRUE(job->CheckTaskValid());
  EXPECT_TRUE(job->CheckTaskReady());
  EXPECT_TRUE(job->CheckTaskPipelined());
  EXPECT_TRUE(job->CheckTaskStarving());
}

TEST(Job, BestEffortPendingCountsAsReadyForRole) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 1);
  j.task_min_available = {{"w", 1}};
  f.b.AddTask(j, "w-0", Res(0, 0), TaskStatus::Pending, "", "w");
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  EXPECT_TRUE(job->CheckTaskReady());
  EXPECT_TRUE(job->IsReady());
}

// A Derived formula evaluated over a job the way codegen lowers it (loads of the counters at
// their offsets, one comparison).
bool EvalDerivedJobBool(const DerivedJobBool& d, const Job& job) {
  auto member = [&](size_t offset) {
    int64_t v;
    std::memcpy(&v, reinterpret_cast<const char*>(&job) + offset, sizeof v);
    return v;
  };
  int64_t sum = 0;
  for (size_t t : d.terms)
    if (t != DerivedJobBool::kNoTerm) sum += member(t);
  int64_t min = member(kJobMinAvailableOffset);
  bool skipped = min < member(kJobTaskMinAvailableTotalOffset);
  switch (d.rule) {
    case DerivedJobBool::SumAtLeastMin: return sum >= min;
    case DerivedJobBool::SumBelowMin: return sum < min;
    case DerivedJobBool::NoRoleShort: return skipped || sum == 0;
    case DerivedJobBool::SomeRoleShort: return skipped || sum != 0;
  }
  return false;
}

// The counters Job keeps incrementally (and the Derived ABI formulas codegen lowers inline over
// them) against a recount from job.tasks, through random status changes, minima and role minima.
TEST(Job, IncrementalCountersAndDerivedFormulasMatchARecount) {
  std::mt19937 rng(11);
  const TaskStatus statuses[] = {TaskStatus::Pending,   TaskStatus::Allocated, TaskStatus::Pipelined,
                                 TaskStatus::Binding,   TaskStatus::Bound,     TaskStatus::Running,
                                 TaskStatus::Releasing, TaskStatus::Succeeded, TaskStatus::Failed};
  const char* roles[] = {"", "ps", "worker"};
  for (int round = 0; round < 200; ++round) {
    Job job;
    job.min_available = static_cast<int64_t>(rng() % 6);
    for (int r = 1; r < 3; ++r)
      if (rng() % 2) {
        job.task_min_available[roles[r]] = static_cast<int32_t>(rng() % 3);
        job.task_min_available_total += job.task_min_available[roles[r]];
        job.RoleSlot(roles[r]);  // as Cluster::Link does for every minTaskMember role
      }
    std::vector<std::unique_ptr<Task>> tasks;
    for (int i = 0, n = static_cast<int>(rng() % 8); i < n; ++i) {
      auto t = std::make_unique<Task>();
      t->role = roles[rng() % 3];
      t->status = statuses[rng() % std::size(statuses)];
      t->SetRequests(rng() % 3 == 0 ? Res(0, 0) : Res(100, 0));
      job.AddTask(t.get());
      tasks.push_back(std::move(t));
    }
    for (int step = 0; step < 12; ++step) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " step " << step);
      EXPECT_EQ(job.TaskCount(), static_cast<int64_t>(job.tasks.size()));
      EXPECT_EQ(job.ReadyTaskNum(), oracles::gang::ReadyTaskNum(job));
      EXPECT_EQ(job.WaitingTaskNum(), oracles::gang::WaitingTaskNum(job));
      EXPECT_EQ(job.ValidTaskNum(), oracles::gang::ValidTaskNum(job));
      EXPECT_EQ(job.PendingBestEffortTaskNum(), oracles::gang::PendingBestEffortTaskNum(job));
      EXPECT_EQ(job.IsReady(), oracles::gang::IsReady(job));
      EXPECT_EQ(job.IsPipelined(), oracles::gang::IsPipelined(job));
      EXPECT_EQ(job.CheckTaskValid(), oracles::gang::CheckTaskValid(job));
      EXPECT_EQ(job.CheckTaskReady(), oracles::gang::CheckTaskReady(job));
      EXPECT_EQ(job.CheckTaskPipelined(), oracles::gang::CheckTaskPipelined(job));
      // Every Derived field's formula agrees with Job's accessor of the same meaning.
      const std::pair<const char*, bool> accessors[] = {
          {"is_ready", job.IsReady()},
          {"is_pipelined", job.IsPipelined()},
          {"is_starving", job.IsStarving()},
          {"check_task_valid", job.CheckTaskValid()},
          {"check_task_ready", job.CheckTaskReady()},
          {"check_task_pipelined", job.CheckTaskPipelined()},
          {"check_task_starving", job.CheckTaskStarving()}};
      for (const auto& [name, want] : accessors) {
        const AbiFieldInfo* f = FindAbiField("Job", name);
        ASSERT_NE(f, nullptr) << name;
        ASSERT_EQ(f->access, FieldAccess::Derived) << name;
        EXPECT_EQ(EvalDerivedJobBool(*f->derived, job), want) << name;
      }
      if (!tasks.empty() && rng() % 4 != 0) {
        Task* t = tasks[rng() % tasks.size()].get();
        job.UpdateTaskStatus(t, statuses[rng() % std::size(statuses)]);
      } else {
        job.min_available = static_cast<int64_t>(rng() % 6);  // read live, never cached
      }
    }
  }
}

TEST(Job, ElasticResourcesAndConditions) {
  Job j;
  j.allocated = Res(3000, 100, {{"pods", 3}});
  j.min_resources = Res(2000, 200);
  Resource e = j.GetElasticResources();
  EXPECT_EQ(e.cpu(), 1000);
  EXPECT_EQ(e.memory(), 0);
  EXPECT_EQ(e.Get(kPods), 3);
  j.SetCondition({"Unschedulable", "True", "s1", 0, "NotEnoughResources", "m1"});
  j.SetCondition({"Scheduled", "True", "s1", 0, "", ""});
  j.SetCondition({"Unschedulable", "False", "s2", 0, "", "m2"});
  ASSERT_EQ(j.conditions.size(), 2u);
  EXPECT_EQ(j.FindCondition("Unschedulable")->message, "m2");
  EXPECT_EQ(j.conditions[0].type, "Unschedulable") << "replaced in place";
}

TEST(Node, AddRemoveUpdateTask) {
  Node n;
  n.name = "n";
  n.allocatable = Res(2000, 100, {{"pods", 10}});
  n.idle = n.allocatable;
  Task t;
  t.namespace_ = "ns";
  t.name = "t";
  t.SetRequests(Res(1500, 50));
  t.status = TaskStatus::Running;
  ASSERT_TRUE(n.AddTask(&t).ok());
  EXPECT_EQ(n.idle.cpu(), 500);
  EXPECT_EQ(n.used.cpu(), 1500);
  Status again = n.AddTask(&t);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "task <ns/t> already on node <n>");
  t.status = TaskStatus::Releasing;
  ASSERT_TRUE(n.UpdateTask(&t).ok());
  EXPECT_EQ(n.idle.cpu(), 500);
  EXPECT_EQ(n.releasing.cpu(), 1500);
  EXPECT_EQ(n.FutureIdle().cpu(), 2000);
  Task b;
  b.namespace_ = "ns";
  b.name = "big";
  b.SetRequests(Res(1000, 0));
  b.status = TaskStatus::Binding;
  Status s = n.AddTask(&b);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "node <n> has not enough resources (cpu) for task <ns/big>");
  EXPECT_EQ(n.tasks.size(), 1u);
  n.RemoveTask(&t);
  EXPECT_EQ(n.idle.cpu(), 2000);
  EXPECT_EQ(n.releasing.cpu(), 0);
  EXPECT_EQ(n.used.cpu(), 0);
  EXPECT_TRUE(n.tasks.empty());
  EXPECT_EQ(t.node, nullptr);
}

TEST(Abi, FieldTableOffsetsAndHostFunctions) {
  const AbiFieldInfo* prio = FindAbiField("Task", "priority");
  ASSERT_NE(prio, nullptr);
  EXPECT_EQ(prio->kind, FieldKind::Int);
  EXPECT_EQ(prio->access, FieldAccess::Field);
  Task t;
  t.priority = 77;
  int64_t loaded;
  std::memcpy(&loaded, reinterpret_cast<const char*>(&t) + prio->offset, sizeof loaded);
  EXPECT_EQ(loaded, 77);

  const AbiFieldInfo* idle = FindAbiField("Node", "idle");
  ASSERT_NE(idle, nullptr);
  Node n;
  n.idle = Res(1234, 0);
  const Resource* r = reinterpret_cast<const Resource*>(reinterpret_cast<const char*>(&n) +
                                                        idle->offset);
  EXPECT_EQ(r->cpu(), 1234);

  const AbiFieldInfo* labels = FindAbiField("Task", "labels");
  ASSERT_NE(labels, nullptr);
  EXPECT_EQ(labels->access, FieldAccess::Host);
  EXPECT_EQ(labels->host, "kiln_task_label");
  t.mutable_shape().labels = {{"app", "web"}, {"tier", "front"}};
  KStr out{};
  EXPECT_TRUE(kiln_task_label(&t, "app", 3, &out));
  EXPECT_EQ(std::string_view(out.data, out.size), "web");
  EXPECT_FALSE(kiln_task_label(&t, "nope", 4, &out));
  EXPECT_EQ(kiln_task_label_size(&t), 2u);
  KStr k{}, v{};
  kiln_task_label_at(&t, 1, &k, &v);
  EXPECT_EQ(std::string_view(k.data, k.size), "tier");
  EXPECT_EQ(FindAbiField("Task", "idel"), nullptr);
  EXPECT_EQ(kiln_resource_id("cpu", 3), 0);
  KStr name = kiln_resource_name(1);
  EXPECT_EQ(std::string_view(name.data, name.size), "memory");
}

TEST(Abi, EveryHostFieldHasAFunction) {
  for (const auto& f : kAbiFields) {
    if (f.access == FieldAccess::Host) {
      EXPECT_NE(f.host_fn, nullptr) << f.owner << "." << f.name;
      EXPECT_FALSE(f.host.empty());
    }
    EXPECT_EQ(FindAbiField(f.owner, f.name), &f) << "duplicate field " << f.owner << "." << f.name;
  }
}

TEST(Job, FitErrorSummaryLikeVolcano) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 2);
  f.b.AddTask(j, "r", Res(100, 0), TaskStatus::Running, "n1");
  f.b.AddTask(j, "p", Res(9000, 0));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  Task* p = f.b.cluster.FindTask("ns-p");
  FitErrors fe;
  fe.Add(FitError("ns-p", "n1", StatusCode::Unschedulable, "Insufficient cpu"));
  job->nodes_fit_errors[p->index] = fe;
  EXPECT_EQ(job->FitError(),
            "pod group is not ready, 1 Pending, 1 Running, 2 minAvailable; Pending: 1 "
            "Unschedulable. Origin reason is p: 0/1 nodes are available: 1 Insufficient cpu.");
  job->job_fit_error = "queue q1 is overused";
  EXPECT_EQ(job->FitError(),
            "pod group is not ready, 1 Pending, 1 Running, 2 minAvailable; Pending: 1 "
            "Unschedulable. Origin reason is: queue q1 is overused");
  KStr s = kiln_job_fit_error(job);
  EXPECT_EQ(std::string_view(s.data, s.size), job->FitError());
}

TEST(Job, TaskSchedulingReasonUsesLastTransaction) {
  Fixture f;
  Job& j = f.b.AddJob("ns", "pg", "default", 2);
  f.b.AddTask(j, "p", Res(100, 0));
  ASSERT_TRUE(f.b.cluster.Link().ok());
  Job* job = f.b.cluster.FindJob("ns/pg");
  Task* p = f.b.cluster.FindTask("ns-p");
  EXPECT_EQ(job->TaskSchedulingReason(p).reason, "Unschedulable");
  EXPECT_EQ(job->TaskSchedulingReason(p).message, "");
  p->last_transaction = std::make_shared<const TaskTransaction>(
      TaskTransaction{"allocate", TaskStatus::Allocated, "n2"});
  auto r = job->TaskSchedulingReason(p);
  EXPECT_EQ(r.reason, "Schedulable");
  EXPECT_EQ(r.message, "Pod ns/p can possibly be assigned to n2, once minAvailable is satisfied");
  EXPECT_EQ(job->FitError(),
            "pod group is not ready, 1 Pending, 2 minAvailable; Pending: 1 Schedulable");
}

TEST(Abi, KubernetesShapes) {
  Task t;
  t.mutable_shape().tolerations.push_back(Toleration{"k", "Equal", "v", "NoSchedule", 30});
  NodeAffinity na;
  na.required = std::vector<NodeSelectorTerm>{NodeSelectorTerm{{{"zone", "In", {"a", "b"}}}, {}}};
  na.preferred.push_back(PreferredSchedulingTerm{7, NodeSelectorTerm{}});
  t.mutable_shape().affinity.node_affinity = na;
  PodAffinity anti;
  PodAffinityTerm term;
  term.topology_key = "kubernetes.io/hostname";
  term.label_selector = LabelSelector{{{"app", "web"}}, {}};
  anti.required.push_back(term);
  t.mutable_shape().affinity.pod_anti_affinity = anti;
  t.mutable_shape().images = {"nginx:1.25"};

  ASSERT_EQ(kiln_task_tolerations_size(&t), 1u);
  auto* tol = static_cast<const Toleration*>(kiln_task_tolerations_at(&t, 0));
  KStr effect = kiln_toleration_effect(tol);
  EXPECT_EQ(std::string_view(effect.data, effect.size), "NoSchedule");
  int64_t secs = 0;
  EXPECT_TRUE(kiln_toleration_seconds(tol, &secs));
  EXPECT_EQ(secs, 30);
  EXPECT_EQ(kiln_task_tolerations_at(&t, 5), nullptr);

  EXPECT_TRUE(kiln_task_has_required_node_affinity(&t));
  ASSERT_EQ(kiln_task_required_node_affinity_size(&t), 1u);
  auto* nst = static_cast<const NodeSelectorTerm*>(kiln_task_required_node_affinity_at(&t, 0));
  auto* req = static_cast<const SelectorRequirement*>(
      kiln_node_selector_term_match_expressions_at(nst, 0));
  ASSERT_EQ(kiln_selector_requirement_values_size(req), 2u);
  KStr v1 = kiln_selector_requirement_values_at(req, 1);
  EXPECT_EQ(std::string_view(v1.data, v1.size), "b");
  auto* pref = static_cast<const PreferredSchedulingTerm*>(kiln_task_preferred_node_affinity_at(&t, 0));
  EXPECT_EQ(kiln_preferred_scheduling_term_weight(pref), 7);
  EXPECT_NE(kiln_preferred_scheduling_term_preference(pref), nullptr);

  EXPECT_EQ(kiln_task_required_pod_affinity_size(&t), 0u);
  ASSERT_EQ(kiln_task_required_pod_anti_affinity_size(&t), 1u);
  auto* pat = static_cast<const PodAffinityTerm*>(kiln_task_required_pod_anti_affinity_at(&t, 0));
  auto* sel = static_cast<const LabelSelector*>(kiln_pod_affinity_term_label_selector(pat));
  ASSERT_NE(sel, nullptr);
  KStr app{};
  EXPECT_TRUE(kiln_label_selector_match_labels(sel, "app", 3, &app));
  EXPECT_EQ(std::string_view(app.data, app.size), "web");
  EXPECT_EQ(kiln_pod_affinity_term_namespace_selector(pat), nullptr);
  EXPECT_FALSE(kiln_pod_affinity_term_has_namespace_selector(pat));

  Task plain;
  EXPECT_FALSE(kiln_task_has_required_node_affinity(&plain));
  EXPECT_EQ(kiln_task_required_node_affinity_size(&plain), 0u);
  EXPECT_EQ(kiln_task_preferred_pod_affinity_size(&plain), 0u);

  Node n;
  n.taints.push_back(Taint{"dedicated", "gpu", "NoSchedule"});
  n.images["nginx:1.25"] = 1000;
  ASSERT_EQ(kiln_node_taints_size(&n), 1u);
  KStr key = kiln_taint_key(static_cast<const Taint*>(kiln_node_taints_at(&n, 0)));
  EXPECT_EQ(std::string_view(key.data, key.size), "dedicated");
  int64_t size = 0;
  EXPECT_TRUE(kiln_node_images(&n, "nginx:1.25", 10, &size));
  EXPECT_EQ(size, 1000);
  EXPECT_FALSE(kiln_node_images(&n, "redis", 5, &size));
}

TEST(Abi, ShapeTableDescribesEveryRecord) {
  const AbiFieldInfo* tol = FindAbiShapeField("Task", "tolerations");
  ASSERT_NE(tol, nullptr);
  EXPECT_EQ(tol->kind, FieldKind::RecordList);
  EXPECT_EQ(tol->elem, "Toleration");
  EXPECT_EQ(tol->host, "kiln_task_tolerations");
  EXPECT_EQ(FindAbiShapeField("Taint", "effect")->elem, "");
  // Every record named as an element type is a declared record with at least one field.
  std::vector<std::string_view> records(AbiRecordNames().begin(), AbiRecordNames().end());
  for (const auto& f : AbiShapeFields()) {
    if (f.elem.empty()) continue;
    EXPECT_NE(std::find(records.begin(), records.end(), f.elem), records.end()) << f.elem;
    bool has_fields = false;
    for (const auto& g : AbiShapeFields()) has_fields |= g.owner == f.elem;
    EXPECT_TRUE(has_fields) << f.elem;
  }
  bool found_size = false;
  for (const auto& sym : AbiShapeHostSymbols()) {
    EXPECT_NE(sym.address, nullptr) << sym.name;
    found_size |= sym.name == "kiln_task_tolerations_size";
  }
  EXPECT_TRUE(found_size);
}

}  // namespace
}  // namespace kiln
