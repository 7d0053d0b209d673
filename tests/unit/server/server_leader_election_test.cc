// Leader election (server/leader_election): client-go's state machine against a fake Lease store
// (resourceVersion preconditions like the API server's) and an injected clock.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "server/leader_election.h"

namespace kiln::server {
namespace {

constexpr TimeNs kSecond = 1'000'000'000;

class FakeLeaseStore : public kube::LeaseStore {
 public:
  kube::LeaseReply Get() override {
    ++gets;
    if (fail) return {kube::LeaseReply::Code::kError, {}, "injected failure"};
    if (!exists) return {kube::LeaseReply::Code::kNotFound, {}, "not found"};
    return {kube::LeaseReply::Code::kOk, record, ""};
  }
  kube::LeaseReply Create(const kube::LeaseRecord& r) override {
    if (fail) return {kube::LeaseReply::Code::kError, {}, "injected failure"};
    if (exists) return {kube::LeaseReply::Code::kConflict, {}, "exists"};
    exists = true;
    Store(r);
    return {kube::LeaseReply::Code::kOk, record, ""};
  }
  kube::LeaseReply Update(const kube::LeaseRecord& r) override {
    if (before_update) {
      auto hook = std::move(before_update);  // runs once; it may call Update itself
      before_update = nullptr;
      hook();
    }
    if (fail) return {kube::LeaseReply::Code::kError, {}, "injected failure"};
    if (!exists) return {kube::LeaseReply::Code::kNotFound, {}, "not found"};
    if (r.resource_version != record.resource_version)
      return {kube::LeaseReply::Code::kConflict, {}, "stale resourceVersion"};
    Store(r);
    return {kube::LeaseReply::Code::kOk, record, ""};
  }
  std::string Describe() const override { return "kube-system/kiln-scheduler"; }

  void Store(const kube::LeaseRecord& r) {
    record = r;
    record.resource_version = std::to_string(++version);
    ++writes;
    writers.push_back(r.holder_identity);
  }

  bool exists = false;
  bool fail = false;
  kube::LeaseRecord record;
  int version = 0;
  int gets = 0;
  int writes = 0;
  std::vector<std::string> writers;
  std::function<void()> before_update;  // runs at the start of the next Update
};

struct FakeTime {
  TimeNs now = 1'700'000'000 * kSecond;
  ElectionClock clock() {
    return ElectionClock{[this] { return now; }, [this] { return now; }};
  }
  void Advance(double seconds) { now += static_cast<TimeNs>(seconds * kSecond); }
};

LeaderElectionConfig Config(const std::string& id) {
  LeaderElectionConfig c;
  c.identity = id;
  return c;  // client-go defaults: 15 s, 10 s, 2 s
}

// Replicas a and b, their lease in one store, on one fake clock.
struct TwoCandidates {
  FakeLeaseStore store;
  FakeTime t;
  LeaderElector a{store, Config("a"), t.clock()};
  LeaderElector b{store, Config("b"), t.clock()};
};

TEST(LeaderElectionTest, FirstReplicaCreatesTheLeaseAndRenews) {
  FakeLeaseStore store;
  FakeTime t;
  LeaderElector a(store, Config("a"), t.clock());
  EXPECT_FALSE(a.IsLeader());
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_TRUE(a.IsLeader());
  EXPECT_EQ(store.record.holder_identity, "a");
  EXPECT_EQ(store.record.lease_duration_seconds, 15);
  EXPECT_EQ(store.record.acquire_time, t.now);
  EXPECT_EQ(store.record.renew_time, t.now);
  EXPECT_EQ(store.record.lease_transitions, 0);
  TimeNs acquired = t.now;
  t.Advance(2);
  EXPECT_TRUE(a.TryAcquireOrRenew());
  EXPECT_EQ(store.record.acquire_time, acquired);  // kept on renew
  EXPECT_EQ(store.record.renew_time, t.now);
  EXPECT_EQ(store.record.lease_transitions, 0);
}

TEST(LeaderElectionTest, StandbyWaitsOutTheLeaseAsItObservedItThenTakesOver) {
  TwoCandidates c;
  ASSERT_TRUE(c.a.TryAcquireOrRenew());
  EXPECT_FALSE(c.b.TryAcquireOrRenew());  // b first sees a's record now
  // a dies (stops renewing). b retries every 2 s; until 15 s after it first saw the record
  // unchanged it must not take it.
  for (int i = 1; i <= 7; ++i) {
    c.t.Advance(2);
    EXPECT_FALSE(c.b.TryAcquireOrRenew()) << "after " << 2 * i << " s";
    EXPECT_FALSE(c.b.IsLeader());
  }
  c.t.Advance(1.5);  // 15.5 s since b observed the record
  EXPECT_TRUE(c.b.TryAcquireOrRenew());
  EXPECT_TRUE(c.b.IsLeader());
  EXPECT_EQ(c.store.record.holder_identity, "b");
  EXPECT_EQ(c.store.record.lease_transitions, 1);
  EXPECT_EQ(c.store.record.acquire_time, c.t.now);
}

TEST(LeaderElectionTest, ARenewedLeaseIsNeverTakenAndSkewedTimestampsDoNotMatter) {
  TwoCandidates c;
  ASSERT_TRUE(c.a.TryAcquireOrRenew());
  for (int i = 0; i < 20; ++i) {
    c.t.Advance(2);
    ASSERT_TRUE(c.a.TryAcquireOrRenew());
    // Even if a's clock were an hour behind, b judges by when it saw the record change.
    c.store.record.renew_time -= 3600 * kSecond;
    EXPECT_FALSE(c.b.TryAcquireOrRenew());
  }
  for (const std::string& w : c.store.writers) EXPECT_EQ(w, "a");
}

TEST(LeaderElectionTest, LeaderThatCannotRenewStopsAtTheRenewDeadlineBeforeOthersMayAcquire) {
  TwoCandidates c;
  ASSERT_TRUE(c.a.TryAcquireOrRenew());
  EXPECT_FALSE(c.b.TryAcquireOrRenew());
  c.store.fail = true;  // the API server is unreachable for a (and b)
  c.t.Advance(9.9);
  EXPECT_TRUE(c.a.TryAcquireOrRenew());  // the renew failed, but a is within RenewDeadline
  EXPECT_TRUE(c.a.IsLeader());
  c.t.Advance(0.2);             // 10.1 s since the last renewal
  EXPECT_FALSE(c.a.IsLeader());  // stops at once, without another renew attempt
  c.store.fail = false;
  // b may take over only at 15 s; a stopped writing at 10 s: never two writers.
  c.t.Advance(4);  // 14.1 s
  EXPECT_FALSE(c.b.TryAcquireOrRenew());
  c.t.Advance(1);  // 15.1 s
  EXPECT_TRUE(c.b.TryAcquireOrRenew());
  EXPECT_FALSE(c.a.IsLeader());
  // a's next attempt sees b's record and stays a follower.
  EXPECT_FALSE(c.a.TryAcquireOrRenew());
  EXPECT_FALSE(c.a.IsLeader());
}

TEST(LeaderElectionTest, RacingCandidatesResolveByResourceVersion) {
  TwoCandidates c;
  c.store.exists = true;  // a released lease both may take
  c.store.record.lease_duration_seconds = 1;
  c.store.record.resource_version = "7";
  c.store.version = 7;
  // b reads the free lease; before its write lands, a reads and writes itself in.
  bool a_won = false;
  c.store.before_update = [&] { a_won = c.a.TryAcquireOrRenew(); };
  EXPECT_FALSE(c.b.TryAcquireOrRenew());  // its precondition is stale: 409
  EXPECT_TRUE(a_won);
  EXPECT_TRUE(c.a.IsLeader());
  EXPECT_FALSE(c.b.IsLeader());
  EXPECT_EQ(c.store.record.holder_identity, "a");
  EXPECT_EQ(c.store.writers, std::vector<std::string>{"a"});
}

TEST(LeaderElectionTest, ReleaseHandsOverWithinARetryPeriod) {
  TwoCandidates c;
  ASSERT_TRUE(c.a.TryAcquireOrRenew());
  EXPECT_FALSE(c.b.TryAcquireOrRenew());
  c.a.Release();
  EXPECT_FALSE(c.a.IsLeader());
  EXPECT_EQ(c.store.record.holder_identity, "");
  EXPECT_EQ(c.store.record.lease_duration_seconds, 1);
  c.t.Advance(2);  // one retry period
  EXPECT_TRUE(c.b.TryAcquireOrRenew());
  EXPECT_EQ(c.store.record.holder_identity, "b");
  EXPECT_EQ(c.store.record.lease_transitions, 1);
}

TEST(LeaderElectionTest, RestartedReplicaWithItsOwnIdentityKeepsAcquireTime) {
  FakeLeaseStore store;
  FakeTime t;
  auto a = std::make_unique<LeaderElector>(store, Config("a"), t.clock());
  ASSERT_TRUE(a->TryAcquireOrRenew());
  TimeNs acquired = store.record.acquire_time;
  a.reset();
  t.Advance(3);
  LeaderElector again(store, Config("a"), t.clock());
  EXPECT_TRUE(again.TryAcquireOrRenew());
  EXPECT_EQ(store.record.acquire_time, acquired);
  EXPECT_EQ(store.record.lease_transitions, 0);
}

}  // namespace
}  // namespace kiln::server
