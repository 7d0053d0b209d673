// Rules of the priority oracle (tests/oracles/priority_oracle.h), §5 "priority".

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/oracles/priority_oracle.h"
#include "tests/unit/policies/oracle_test_util.h"

namespace kiln::oracles::testing {
namespace {

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

// A preemptor in a job of priority 100 and running candidates, each in a job of its own or in the
// preemptor's job: the victims priority offers.
struct VictimsCase {
  const char* name;
  int64_t preemptor_priority;  // the preemptor task's
  struct Candidate {
    const char* name;
    std::optional<int64_t> job_priority;  // its own job's; none: in the preemptor's job
    int64_t priority;                     // the task's
  };
  std::vector<Candidate> candidates;
  std::vector<std::string> victims;
};

class OraclePriorityVictims : public ::testing::TestWithParam<VictimsCase> {};

TEST_P(OraclePriorityVictims, AreTheCandidatesOfLowerPriority) {
  const VictimsCase& v = GetParam();
  MiniCluster c;
  Job& p = c.AddJob("ns/p", 1, 100);
  Task& preemptor = c.AddTask(p, "p0", TaskStatus::Pending, "", v.preemptor_priority);
  std::vector<const Task*> cands;
  for (const VictimsCase::Candidate& k : v.candidates) {
    Job& job = k.job_priority ? c.AddJob(std::string("ns/") + k.name, 1, *k.job_priority) : p;
    cands.push_back(&c.AddTask(job, k.name, TaskStatus::Running, "", k.priority));
  }
  EXPECT_EQ(Names(priority::Victims(preemptor, cands)), v.victims);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OraclePriorityVictims,
    ::testing::Values(
        // Task priorities of other jobs do not matter, only their job's.
        VictimsCase{"OtherJobsOnlyWithALowerJobPriority",
                    1,
                    {{"h0", 200, 0}, {"e0", 100, 0}, {"l0", 50, 1000}},
                    {"l0"}},
        VictimsCase{"InsideAJobTaskPrioritiesDecide",
                    10,
                    {{"low", std::nullopt, 5},
                     {"same", std::nullopt, 10},
                     {"high", std::nullopt, 20}},
                    {"low"}}),
    [](const ::testing::TestParamInfo<VictimsCase>& info) { return info.param.name; });

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
}  // namespace kiln::oracles::testing
