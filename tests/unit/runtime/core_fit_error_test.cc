#include "runtime/fit_error.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(FitErrors, KubernetesStyleAggregate) {
  FitErrors fe;
  fe.SetTotalNodes(3);
  fe.Add(FitError("t", "n1", StatusCode::Unschedulable, "Insufficient cpu"));
  fe.Add(FitError("t", "n2", StatusCode::UnschedulableAndUnresolvable,
                  "node(s) had untolerated taint {k: v}"));
  fe.Add(FitError("t", "n3", StatusCode::Unschedulable, "Insufficient cpu"));
  EXPECT_EQ(fe.Message(),
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}.");
}

TEST(FitErrors, SortsByCountThenText) {
  FitErrors fe;
  FitError multi("t", "n1", StatusCode::Unschedulable, "Insufficient memory");
  multi.statuses[0].reasons.push_back("Insufficient cpu");
  multi.statuses[0].reasons.push_back("Insufficient cpu");  // counted once per node
  fe.Add(multi);
  fe.Add(FitError("t", "n2", StatusCode::Unschedulable, "Insufficient memory"));
  fe.Add(FitError("t", "n3", StatusCode::Unschedulable, "Insufficient cpu"));
  fe.Add(FitError("t", "n4", StatusCode::Unschedulable, "node(s) didn't match Pod's node affinity"));
  EXPECT_EQ(fe.Message(),
            "0/4 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 1 node(s) didn't "
            "match Pod's node affinity.");
  EXPECT_TRUE(fe.HasUnresolvable("n9") == false);
}

TEST(FitErrors, TaskLevelError) {
  FitErrors fe;
  fe.SetError("pod group is not ready, 1 Pending, 2 minAvailable");
  EXPECT_EQ(fe.Message(), "pod group is not ready, 1 Pending, 2 minAvailable");
}

TEST(FitError, ActionFilters) {
  FitError plain("t", "n", StatusCode::Unschedulable, "Insufficient cpu");
  EXPECT_TRUE(plain.FailsAllocate());
  EXPECT_FALSE(plain.FailsPreempt());
  FitError hard("t", "n", StatusCode::UnschedulableAndUnresolvable, "node(s) were unschedulable");
  EXPECT_TRUE(hard.FailsPreempt());
  FitError wait("t", "n", StatusCode::Wait, "waiting");
  EXPECT_TRUE(wait.FailsPreempt());
  FitError ok("t", "n", StatusCode::Success, "");
  EXPECT_FALSE(ok.FailsAllocate()) << "all-Success statuses pass";
  EXPECT_EQ(plain.Message(), "task t on node n fit failed: Insufficient cpu");
  EXPECT_EQ(ToString(StatusCode::Skip), "Skip");
}

}  // namespace
}  // namespace kiln
