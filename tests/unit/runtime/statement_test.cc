// Statement (volcano-semantics.md §2.5): immediate mutation, ordered commit, exact reverse undo.

#include "runtime/statement.h"

#include <gtest/gtest.h>

#include "runtime/session.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/runtime/runtime_fixtures.h"

namespace kiln {
namespace {

using testing::AddPendingAndVictims;
using testing::ClusterBuilder;
using testing::Res;

struct NodeState {
  Resource idle, used, releasing, pipelined;
  size_t tasks;
  bool operator==(const NodeState& o) const {
    return idle.Equal(o.idle, DimensionDefault::Zero) && used.Equal(o.used, DimensionDefault::Zero) &&
           releasing.Equal(o.releasing, DimensionDefault::Zero) &&
           pipelined.Equal(o.pipelined, DimensionDefault::Zero) && tasks == o.tasks &&
           idle.cpu() == o.idle.cpu() && used.cpu() == o.used.cpu();
  }
};
NodeState Snap(const Node* n) { return {n->idle, n->used, n->releasing, n->pipelined, n->tasks.size()}; }

struct JobState {
  std::array<int32_t, kTaskStatusCount> counts;
  double allocated_cpu;
  int64_t pending_best_effort;
  bool operator==(const JobState&) const = default;
};
JobState Snap(const Job* j) {
  JobState s{};
  for (int i = 0; i < kTaskStatusCount; ++i) s.counts[i] = static_cast<int32_t>(j->by_status[i].size());
  s.allocated_cpu = j->allocated.cpu();
  s.pending_best_effort = j->pending_best_effort;
  return s;
}

class StatementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b.AddQueue("default");
    AddPendingAndVictims(b, "default", "default");
    ASSERT_TRUE(b.cluster.Link().ok());
    ssn = std::make_unique<Session>(std::move(b.cluster), conf, 0, "s1");
    ASSERT_TRUE(ssn->Open(reg).ok());
  }
  Task* T(std::string_view uid) { return ssn->cluster().FindTask(uid); }
  Node* N(std::string_view name) { return ssn->cluster().FindNode(name); }
  Job* J(std::string_view uid) { return ssn->cluster().FindJob(uid); }

  ClusterBuilder b;
  SchedulerConf conf;
  PluginRegistry reg;
  std::unique_ptr<Session> ssn;
};

TEST_F(StatementTest, AllocateMutatesImmediately) {
  Statement st(*ssn);
  ASSERT_TRUE(st.Allocate(T("ns-p-0"), N("n1")).ok());
  EXPECT_EQ(T("ns-p-0")->status, TaskStatus::Allocated);
  EXPECT_EQ(T("ns-p-0")->node_name, "n1");
  EXPECT_EQ(N("n1")->idle.cpu(), 3000);
  EXPECT_EQ(N("n1")->used.cpu(), 1000);
  EXPECT_EQ(N("n1")->idle.Get(kPods), 109);
  EXPECT_EQ(J("ns/pending")->allocated.cpu(), 1000);
  EXPECT_TRUE(ssn->decisions().binds.empty()) << "nothing is sent before Commit";
}

TEST_F(StatementTest, DiscardRestoresNodesAndJobsExactly) {
  NodeState n1 = Snap(N("n1")), n2 = Snap(N("n2"));
  JobState jp = Snap(J("ns/pending")), jv = Snap(J("ns/victims"));
  Statement st(*ssn);
  ASSERT_TRUE(st.Evict(T("ns-v-0"), "preempt").ok());
  ASSERT_TRUE(st.Pipeline(T("ns-p-0"), N("n2"), true).ok());
  ASSERT_TRUE(st.Allocate(T("ns-p-1"), N("n1")).ok());
  EXPECT_EQ(N("n2")->releasing.cpu(), 1500);
  EXPECT_EQ(N("n2")->pipelined.cpu(), 1000);
  EXPECT_EQ(N("n2")->FutureIdle().cpu(), 0 + 1500 - 1000);
  EXPECT_EQ(st.operations().size(), 3u);
  st.Discard();
  EXPECT_TRUE(st.empty());
  EXPECT_EQ(Snap(N("n1")), n1);
  EXPECT_EQ(Snap(N("n2")), n2);
  EXPECT_EQ(Snap(J("ns/pending")), jp);
  EXPECT_EQ(Snap(J("ns/victims")), jv);
  EXPECT_EQ(T("ns-p-0")->status, TaskStatus::Pending);
  EXPECT_EQ(T("ns-p-0")->node_name, "");
  EXPECT_EQ(T("ns-p-0")->node, nullptr);
  EXPECT_EQ(T("ns-v-0")->status, TaskStatus::Running);
  EXPECT_TRUE(ssn->decisions().evictions.empty());
}

TEST_F(StatementTest, UnevictRestoresRunningEvenForBoundVictims) {
  // Volcano's unevict always sets Running.
  Statement st(*ssn);
  ASSERT_TRUE(st.Evict(T("ns-v-1"), "reclaim").ok());
  EXPECT_EQ(T("ns-v-1")->status, TaskStatus::Releasing);
  st.Discard();
  EXPECT_EQ(T("ns-v-1")->status, TaskStatus::Running);
  EXPECT_EQ(N("n2")->used.cpu(), 2000);
  EXPECT_EQ(N("n2")->releasing.cpu(), 0);
}

TEST_F(StatementTest, CommitAppliesInOrder) {
  Statement st(*ssn);
  ASSERT_TRUE(st.Evict(T("ns-v-0"), "preempt").ok());
  ASSERT_TRUE(st.Pipeline(T("ns-p-0"), N("n2"), true).ok());
  ASSERT_TRUE(st.Allocate(T("ns-p-1"), N("n1")).ok());
  st.Commit();
  EXPECT_TRUE(st.empty());
  const Decisions& d = ssn->decisions();
  ASSERT_EQ(d.evictions.size(), 1u);
  EXPECT_EQ(d.evictions[0].task, T("ns-v-0"));
  EXPECT_EQ(d.evictions[0].reason, "preempt");
  ASSERT_EQ(d.binds.size(), 1u);
  EXPECT_EQ(d.binds[0].task, T("ns-p-1"));
  EXPECT_EQ(d.binds[0].node, N("n1"));
  EXPECT_EQ(T("ns-p-1")->status, TaskStatus::Binding);
  EXPECT_EQ(T("ns-p-0")->status, TaskStatus::Pipelined) << "pipeline commits to nothing";
  EXPECT_TRUE(T("ns-p-0")->eviction_occurred);
  EXPECT_EQ(T("ns-v-0")->status, TaskStatus::Releasing);
  EXPECT_EQ(N("n1")->idle.cpu(), 3000) << "Binding keeps the node accounting of Allocated";
}

TEST_F(StatementTest, MergeMovesOperations) {
  Statement job_stmt(*ssn);
  Statement node_stmt(*ssn);
  ASSERT_TRUE(node_stmt.Evict(T("ns-v-0"), "preempt").ok());
  ASSERT_TRUE(node_stmt.Pipeline(T("ns-p-0"), N("n2"), true).ok());
  job_stmt.Merge(node_stmt);
  EXPECT_TRUE(node_stmt.empty());
  ASSERT_EQ(job_stmt.operations().size(), 2u);
  EXPECT_EQ(job_stmt.operations()[0].op, Statement::Op::Evict);
  EXPECT_EQ(job_stmt.operations()[1].op, Statement::Op::Pipeline);
  job_stmt.Discard();
  EXPECT_EQ(T("ns-v-0")->status, TaskStatus::Running);
  EXPECT_EQ(T("ns-p-0")->status, TaskStatus::Pending);
  EXPECT_EQ(N("n2")->pipelined.cpu(), 0);
}

TEST_F(StatementTest, DiscardRecordsLastTransaction) {
  Statement st(*ssn);
  ASSERT_TRUE(st.Evict(T("ns-v-0"), "preempt").ok());
  st.Discard();
  ASSERT_NE(T("ns-v-0")->last_transaction, nullptr);
  EXPECT_EQ(T("ns-v-0")->last_transaction->reason, "preempt");
}

TEST_F(StatementTest, PipelineOntoReleasingResources) {
  // n2 is full (2000 used of 2000); evicting v-0 frees 1500 in FutureIdle for a pipelined task.
  Statement st(*ssn);
  EXPECT_FALSE(T("ns-p-0")->init_resreq().LessEqual(N("n2")->FutureIdle(), DimensionDefault::Zero));
  ASSERT_TRUE(st.Evict(T("ns-v-0"), "preempt").ok());
  EXPECT_TRUE(T("ns-p-0")->init_resreq().LessEqual(N("n2")->FutureIdle(), DimensionDefault::Zero));
  ASSERT_TRUE(st.Pipeline(T("ns-p-0"), N("n2"), true).ok());
  EXPECT_EQ(J("ns/pending")->WaitingTaskNum(), 1);
  EXPECT_FALSE(J("ns/pending")->IsPipelined()) << "1 of 2 members";
}

TEST_F(StatementTest, AllocateUnknownJobFails) {
  Task stray;
  stray.uid = "stray";
  Statement st(*ssn);
  Status s = st.Allocate(&stray, N("n1"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "failed to find job for task stray");
  EXPECT_TRUE(st.empty());
}

#ifndef NDEBUG
// Debug builds check the undo: a node changed behind the statement's back trips the assertion.
TEST_F(StatementTest, DebugDiscardDetectsAnInexactUndo) {
  EXPECT_DEATH(
      {
        Statement st(*ssn);
        (void)st.Allocate(T("ns-p-0"), N("n1"));
        N("n1")->idle.values[kCpu] += 1;  // not a session mutation
        st.Discard();
      },
      "discard did not restore the node exactly");
}
#endif

}  // namespace
}  // namespace kiln
