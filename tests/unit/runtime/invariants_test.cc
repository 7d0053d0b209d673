// The session's invariant checker (runtime/invariants.h): silent on a sound session, and each
// kind of damage it is there to catch is caught and named.

#include "runtime/invariants.h"

#include <gtest/gtest.h>

#include <optional>

#include "runtime/session.h"
#include "runtime/statement.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/runtime/runtime_fixtures.h"

namespace kiln {
namespace {

using testing::AddPendingAndVictims;
using testing::ClusterBuilder;
using testing::Res;

class InvariantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetInvariantChecking(true);
    b.AddQueue("a");
    b.AddQueue("b");
    AddPendingAndVictims(b, "a", "b");
    ASSERT_TRUE(b.cluster.Link().ok());
    ssn = std::make_unique<Session>(std::move(b.cluster), conf, 0, "s1");
    ASSERT_TRUE(ssn->Open(reg).ok());
    ASSERT_NE(ssn->invariants(), nullptr);
  }
  void TearDown() override { SetInvariantChecking(false); }
  Task* T(std::string_view uid) { return ssn->cluster().FindTask(uid); }
  Node* N(std::string_view name) { return ssn->cluster().FindNode(name); }
  Job* J(std::string_view uid) { return ssn->cluster().FindJob(uid); }
  const std::vector<std::string>& Found() { return ssn->invariants()->violations(); }
  bool FoundWith(std::string_view text) {
    for (const auto& v : Found())
      if (v.find(text) != std::string::npos) return true;
    return false;
  }
  // The start of each eviction check below: action `action` begins and a new statement `st`
  // evicts `victim` for it. Call it inside ASSERT_NO_FATAL_FAILURE: a failed eviction ends the
  // test.
  void BeginEviction(std::string_view action, std::string_view victim) {
    ssn->invariants()->BeginAction(action);
    st.emplace(*ssn);
    ASSERT_TRUE(st->Evict(T(victim), std::string(action)).ok());
  }

  ClusterBuilder b;
  SchedulerConf conf;
  PluginRegistry reg;
  std::unique_ptr<Session> ssn;
  std::optional<Statement> st;  // BeginEviction's
};

TEST_F(InvariantsTest, SoundSessionIsSilent) {
  InvariantChecker& c = *ssn->invariants();
  c.BeginAction("allocate");
  {
    Statement st(*ssn);
    ASSERT_TRUE(st.Allocate(T("ns-p-0"), N("n1")).ok());
    ASSERT_TRUE(st.Allocate(T("ns-p-1"), N("n1")).ok());
    st.Discard();
  }
  {
    Statement st(*ssn);
    ASSERT_TRUE(st.Allocate(T("ns-p-0"), N("n1")).ok());
    ASSERT_TRUE(st.Allocate(T("ns-p-1"), N("n1")).ok());
    st.Commit();
  }
  c.AfterAction();
  EXPECT_TRUE(Found().empty()) << Found().front();
}

TEST_F(InvariantsTest, CatchesNodeAccountingThatDisagreesWithItsTasks) {
  N("n2")->used.values[kCpu] += 250;
  ssn->invariants()->AfterAction();
  EXPECT_TRUE(FoundWith("node n2 used is")) << (Found().empty() ? "" : Found().front());
}

TEST_F(InvariantsTest, CatchesANodeOverItsAllocatable) {
  // n2 holds 2000m of its 2000m; shrinking what it offers after open puts it over.
  N("n2")->allocatable.values[kCpu] = 1500;
  ssn->invariants()->AfterAction();
  EXPECT_TRUE(FoundWith("node n2 over its allocatable: cpu 2000 > 1500"));
}

TEST_F(InvariantsTest, CatchesJobCountersThatDisagreeWithItsTasks) {
  J("ns/pending")->ready_num = 2;
  ssn->invariants()->AfterAction();
  EXPECT_TRUE(FoundWith("job ns/pending: counters ready 2"));
}

TEST_F(InvariantsTest, CatchesADiscardThatDoesNotRestoreTheSession) {
  Statement st(*ssn);
  ASSERT_TRUE(st.Allocate(T("ns-p-0"), N("n1")).ok());
  // Damage the statement's undo cannot know about (no mutation the session counts).
  N("n1")->nonzero_requested.values[kCpu] += 1;
  st.Discard();
  EXPECT_TRUE(FoundWith("a discarded statement did not restore the session: node n1: its non-zero "
                        "requests changed"));
}

TEST_F(InvariantsTest, NamesTheTaskADiscardLeftChanged) {
  Statement st(*ssn);
  ASSERT_TRUE(st.Allocate(T("ns-p-0"), N("n1")).ok());
  T("ns-p-1")->status = TaskStatus::Succeeded;
  st.Discard();
  EXPECT_TRUE(FoundWith("task ns/p-1 was Pending on no node, is Succeeded on no node"));
  T("ns-p-1")->status = TaskStatus::Pending;
}

TEST_F(InvariantsTest, CatchesEvictingANonPreemptablePod) {
  T("ns-v-0")->preemptable = false;
  ASSERT_NO_FATAL_FAILURE(BeginEviction("reclaim", "ns-v-0"));
  EXPECT_TRUE(FoundWith("reclaim: reclaim evicts ns/v-0, which is not preemptable"));
  st->Discard();
}

TEST_F(InvariantsTest, CatchesReclaimTakingABoundPod) {
  ASSERT_NO_FATAL_FAILURE(BeginEviction("reclaim", "ns-v-1"));
  EXPECT_TRUE(FoundWith("reclaim evicts ns/v-1, which is Bound"));
  st->Discard();
}

TEST_F(InvariantsTest, CatchesPreemptTakingFromAnotherQueue) {
  ASSERT_NO_FATAL_FAILURE(BeginEviction("preempt", "ns-v-0"));
  ASSERT_TRUE(st->Pipeline(T("ns-p-0"), N("n2"), true).ok());
  EXPECT_TRUE(FoundWith("preempt took ns/v-0 from queue b for ns/p-0 of queue a"));
  EXPECT_FALSE(FoundWith("not preemptable"));
  st->Discard();
}

TEST_F(InvariantsTest, ReclaimAcrossQueuesIsFine) {
  ASSERT_NO_FATAL_FAILURE(BeginEviction("reclaim", "ns-v-0"));
  ASSERT_TRUE(st->Pipeline(T("ns-p-0"), N("n2"), true).ok());
  st->Commit();
  ssn->invariants()->AfterAction();
  EXPECT_TRUE(Found().empty()) << Found().front();
}

TEST_F(InvariantsTest, CatchesAPreemptorThatMayNotPreempt) {
  T("ns-p-0")->preemption_policy = PreemptionPolicy::Never;
  ASSERT_NO_FATAL_FAILURE(BeginEviction("reclaim", "ns-v-0"));
  ASSERT_TRUE(st->Pipeline(T("ns-p-0"), N("n2"), true).ok());
  EXPECT_TRUE(FoundWith("whose preemptionPolicy is Never"));
  st->Discard();
}

}  // namespace
}  // namespace kiln
