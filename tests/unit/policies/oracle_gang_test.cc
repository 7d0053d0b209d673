// Rules of the gang oracle (tests/oracles/gang_oracle.h), one test per rule of §5 "gang".

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/oracles/gang_oracle.h"
#include "tests/unit/policies/oracle_test_util.h"

namespace kiln::oracles::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A job `ns/j` of minAvailable `min` whose roles ps and worker need one task each.
Job& AddPsWorkerJob(MiniCluster& c, int64_t min) {
  Job& j = c.AddJob("ns/j", min);
  MiniCluster::SetRoleMin(j, "ps", 1);
  MiniCluster::SetRoleMin(j, "worker", 1);
  return j;
}

TEST(OracleGang, ReadyCountsAllocatedStatusesAndSucceededButNotPipelined) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 3);
  int i = 0;
  for (TaskStatus s : {TaskStatus::Bound, TaskStatus::Binding, TaskStatus::Running,
                       TaskStatus::Allocated, TaskStatus::Succeeded, TaskStatus::Pipelined,
                       TaskStatus::Pending, TaskStatus::Failed, TaskStatus::Releasing})
    c.AddTask(j, "t" + std::to_string(i++), s);
  EXPECT_EQ(gang::ReadyTaskNum(j), 5);
  EXPECT_EQ(gang::WaitingTaskNum(j), 1);
  // Valid: allocated statuses, Succeeded, Pipelined, Pending — not Failed nor Releasing.
  EXPECT_EQ(gang::ValidTaskNum(j), 7);
}

// Job ns/j (minAvailable 2) of task a, allocated, and task b, pending: one task short of ready.
class OracleGangOneShort : public ::testing::Test {
 protected:
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 2);
  Task& a = c.AddTask(j, "a", TaskStatus::Allocated);
  Task& b = c.AddTask(j, "b", TaskStatus::Pending);
};

TEST_F(OracleGangOneShort, JobReadyNeedsMinAvailableReadyTasks) {
  EXPECT_FALSE(gang::JobReady(j));
  b.status = TaskStatus::Running;
  EXPECT_TRUE(gang::JobReady(j));
}

TEST_F(OracleGangOneShort, PendingBestEffortTasksCountAsReady) {
  b.best_effort = true;
  EXPECT_TRUE(gang::IsReady(j));
  EXPECT_TRUE(gang::JobReady(j));
}

TEST_F(OracleGangOneShort, PipelinedVotesPermitOnlyWhenWaitingPlusReadyReachesMin) {
  EXPECT_EQ(gang::JobPipelined(j), -1);
  b.status = TaskStatus::Pipelined;
  EXPECT_EQ(gang::JobPipelined(j), 1);
  EXPECT_FALSE(gang::JobReady(j));  // pipelined is not ready
}

TEST(OracleGang, JobValidRejectsTooFewValidTasksWithVolcanosMessage) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 3);
  c.AddTask(j, "a", TaskStatus::Pending);
  c.AddTask(j, "b", TaskStatus::Running);
  c.AddTask(j, "c", TaskStatus::Failed);
  auto v = gang::JobValid(j);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughTasks");
  EXPECT_EQ(v.message, "Not enough valid tasks for gang-scheduling, valid: 2, min: 3");
}

TEST(OracleGang, JobValidChecksRoleMinimaFirst) {
  MiniCluster c;
  Job& j = AddPsWorkerJob(c, 2);
  c.AddTask(j, "w0", TaskStatus::Pending, "worker");
  c.AddTask(j, "w1", TaskStatus::Pending, "worker");
  auto v = gang::JobValid(j);
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.reason, "NotEnoughPodsOfTask");
  EXPECT_EQ(v.message, "Not enough valid pods of each task for gang-scheduling");
  c.AddTask(j, "ps0", TaskStatus::Pending, "ps");
  EXPECT_TRUE(gang::JobValid(j).pass);
}

TEST(OracleGang, RoleChecksAreSkippedWhenMinMemberIsBelowTheirSum) {
  MiniCluster c;
  Job& j = AddPsWorkerJob(c, 1);
  c.AddTask(j, "w0", TaskStatus::Running, "worker");
  // ps has no task at all, but minMember (1) < Σ role minima (2): per-role checks are skipped.
  EXPECT_TRUE(gang::CheckTaskValid(j));
  EXPECT_TRUE(gang::JobValid(j).pass);
  EXPECT_TRUE(gang::JobReady(j));
}

TEST(OracleGang, JobReadyRequiresEveryRoleMinimum) {
  MiniCluster c;
  Job& j = AddPsWorkerJob(c, 2);
  c.AddTask(j, "w0", TaskStatus::Allocated, "worker");
  c.AddTask(j, "w1", TaskStatus::Allocated, "worker");
  Task& ps = c.AddTask(j, "ps0", TaskStatus::Pending, "ps");
  EXPECT_TRUE(gang::IsReady(j));          // 2 ready >= minMember 2
  EXPECT_FALSE(gang::CheckTaskReady(j));  // but no ps ready
  EXPECT_FALSE(gang::JobReady(j));
  ps.status = TaskStatus::Pipelined;
  EXPECT_FALSE(gang::JobReady(j));
  EXPECT_EQ(gang::JobPipelined(j), 1);
}

TEST(OracleGang, VictimsKeepEachJobAboveMinAvailable) {
  MiniCluster c;
  Job& a = c.AddJob("ns/a", 2);
  Job& b = c.AddJob("ns/b", 1);
  Task& a0 = c.AddTask(a, "a0", TaskStatus::Running);
  Task& a1 = c.AddTask(a, "a1", TaskStatus::Running);
  Task& a2 = c.AddTask(a, "a2", TaskStatus::Running);
  Task& b0 = c.AddTask(b, "b0", TaskStatus::Running);
  Job& p = c.AddJob("ns/p", 1);
  Task& pt = c.AddTask(p, "p0", TaskStatus::Pending);
  std::vector<const Task*> cands = {&a0, &b0, &a1, &a2};
  // a has 3 ready, min 2: only its first candidate goes; b has 1 ready, min 1: none.
  EXPECT_THAT(Names(gang::Victims(pt, cands)), ElementsAre("a0"));
}

TEST(OracleGang, NoVictimsFromAJobAtItsMinimum) {
  MiniCluster c;
  Job& a = c.AddJob("ns/a", 2);
  Task& a0 = c.AddTask(a, "a0", TaskStatus::Running);
  Task& a1 = c.AddTask(a, "a1", TaskStatus::Running);
  std::vector<const Task*> cands = {&a0, &a1};
  EXPECT_THAT(gang::Victims(a0, cands), IsEmpty());
}

TEST(OracleGang, JobOrderPutsNotReadyJobsFirst) {
  MiniCluster c;
  Job& ready = c.AddJob("ns/r", 1);
  c.AddTask(ready, "r0", TaskStatus::Running);
  Job& waiting = c.AddJob("ns/w", 1);
  c.AddTask(waiting, "w0", TaskStatus::Pending);
  EXPECT_EQ(gang::JobOrder(waiting, ready), -1);
  EXPECT_EQ(gang::JobOrder(ready, waiting), 1);
  EXPECT_EQ(gang::JobOrder(ready, ready), 0);
  EXPECT_EQ(gang::JobOrder(waiting, waiting), 0);
}

TEST(OracleGang, StarvingIgnoresRoleMinimaAndCountsPipelined) {
  MiniCluster c;
  Job& j = AddPsWorkerJob(c, 2);
  c.AddTask(j, "w0", TaskStatus::Running, "worker");
  Task& w1 = c.AddTask(j, "w1", TaskStatus::Pending, "worker");
  c.AddTask(j, "ps0", TaskStatus::Pending, "ps");
  EXPECT_TRUE(gang::JobStarving(j));
  w1.status = TaskStatus::Pipelined;
  EXPECT_FALSE(gang::JobStarving(j));  // 2 placed >= minMember, ps role not considered
}

}  // namespace
}  // namespace kiln::oracles::testing
