// Rules of the priority oracle (tests/oracles/priority_oracle.h), §5 "priority".

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/oracles/priority_oracle.h"
#include "tests/unit/policies/oracle_test_util.h"

namespace kiln::oracles {
namespace {

using ::testing::ElementsAre;
using testing::MiniCluster;
using testing::Names;

TEST(OraclePriority, HigherTaskPriorityGoesFirst) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1);
  Task& hi = c.AddTask(j, "hi", TaskStatus::Pending, "", 100);
  Task& lo = c.AddTask(j, "lo", TaskStatus::Pending, "", 1);
  EXPECT_EQ(priority::TaskOrder(hi, lo), -1);
  EXPECT_EQ(priority::TaskOrder(lo, hi), 1);
  EXPECT_EQ(priority::TaskOrder(hi, hi), 0);
}

TEST(OraclePriority, HigherJobPriorityGoesFirst) {
  MiniCluster c;
  Job& hi = c.AddJob("ns/hi", 1, 1000);
  Job& lo = c.AddJob("ns/lo", 1, 10);
  EXPECT_EQ(priority::JobOrder(hi, lo), -1);
  EXPECT_EQ(priority::JobOrder(lo, hi), 1);
  EXPECT_EQ(priority::JobOrder(lo, lo), 0);
}

TEST(OraclePriority, OtherJobsAreVictimsOnlyWithALowerJobPriority) {
  MiniCluster c;
  Job& p = c.AddJob("ns/p", 1, 100);
  Task& preemptor = c.AddTask(p, "p0", TaskStatus::Pending, "", 1);
  Job& lower = c.AddJob("ns/lower", 1, 50);
  Job& equal = c.AddJob("ns/equal", 1, 100);
  Job& higher = c.AddJob("ns/higher", 1, 200);
  // Task priorities of other jobs do not matter, only their job's.
  Task& l0 = c.AddTask(lower, "l0", TaskStatus::Running, "", 1000);
  Task& e0 = c.AddTask(equal, "e0", TaskStatus::Running, "", 0);
  Task& h0 = c.AddTask(higher, "h0", TaskStatus::Running, "", 0);
  std::vector<const Task*> cands = {&h0, &e0, &l0};
  EXPECT_THAT(Names(priority::Victims(preemptor, cands)), ElementsAre("l0"));
}

TEST(OraclePriority, InsideAJobTaskPrioritiesDecide) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1, 100);
  Task& preemptor = c.AddTask(j, "p", TaskStatus::Pending, "", 10);
  Task& low = c.AddTask(j, "low", TaskStatus::Running, "", 5);
  Task& same = c.AddTask(j, "same", TaskStatus::Running, "", 10);
  Task& high = c.AddTask(j, "high", TaskStatus::Running, "", 20);
  std::vector<const Task*> cands = {&low, &same, &high};
  EXPECT_THAT(Names(priority::Victims(preemptor, cands)), ElementsAre("low"));
}

TEST(OraclePriority, StarvingUntilEveryTaskIsPlacedOrPipelined) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1);
  c.AddTask(j, "a", TaskStatus::Running);
  Task& b = c.AddTask(j, "b", TaskStatus::Pending);
  // minMember is 1 and reached, but priority's rule looks at every task.
  EXPECT_TRUE(priority::JobStarving(j));
  b.status = TaskStatus::Pipelined;
  EXPECT_FALSE(priority::JobStarving(j));
  c.AddTask(j, "c", TaskStatus::Failed);
  EXPECT_TRUE(priority::JobStarving(j));  // a failed task is neither ready nor waiting
}

}  // namespace
}  // namespace kiln::oracles
