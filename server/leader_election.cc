#include "server/leader_election.h"

#include <spdlog/spdlog.h>

#include <random>

namespace kiln::server {

namespace {

TimeNs Ns(std::chrono::nanoseconds d) { return d.count(); }

bool SameRecord(const kube::LeaseRecord& a, const kube::LeaseRecord& b) {
  return a.resource_version == b.resource_version && a.holder_identity == b.holder_identity &&
         a.renew_time == b.renew_time && a.acquire_time == b.acquire_time &&
         a.lease_transitions == b.lease_transitions &&
         a.lease_duration_seconds == b.lease_duration_seconds;
}

}  // namespace

ElectionClock ElectionClock::System() {
  return ElectionClock{
      [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      },
      [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
      }};
}

LeaderElector::LeaderElector(kube::LeaseStore& store, LeaderElectionConfig config,
                             ElectionClock clock)
    : store_(store), config_(std::move(config)), clock_(std::move(clock)) {}

bool LeaderElector::Hold(const kube::LeaseReply& reply, const char* verb, TimeNs mono,
                         bool* was_holding) {
  if (!reply.ok()) {
    spdlog::debug("leader election: {} {}: {}", verb, store_.Describe(), reply.message);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (was_holding != nullptr) *was_holding = holding_;
  observed_ = reply.record;
  observed_mono_ = mono;
  renewed_mono_ = mono;
  holding_ = true;
  return true;
}

bool LeaderElector::TryAcquireOrRenew() {
  const TimeNs wall = clock_.wall();
  const TimeNs mono = clock_.mono();
  kube::LeaseRecord mine;
  mine.holder_identity = config_.identity;
  mine.lease_duration_seconds =
      static_cast<int32_t>(std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  mine.acquire_time = wall;
  mine.renew_time = wall;

  kube::LeaseReply got = store_.Get();
  if (got.code == kube::LeaseReply::Code::kNotFound) {
    kube::LeaseReply created = store_.Create(mine);
    if (!Hold(created, "create", mono)) return IsLeader();
    spdlog::info("leader election: {} acquired {} (created)", config_.identity, store_.Describe());
    return true;
  }
  if (!got.ok()) {
    spdlog::warn("leader election: get {}: {}", store_.Describe(), got.message);
    return IsLeader();
  }

  bool was_holder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!SameRecord(observed_, got.record)) {
      observed_ = got.record;
      observed_mono_ = mono;
    }
    // Someone else's lease, still within its duration as we have watched it: leave it.
    const kube::LeaseRecord& old = observed_;
    TimeNs duration = old.lease_duration_seconds > 0
                          ? static_cast<TimeNs>(old.lease_duration_seconds) * 1'000'000'000
                          : Ns(config_.lease_duration);
    bool valid = observed_mono_ + duration > mono;
    was_holder = old.holder_identity == config_.identity;
    if (!old.holder_identity.empty() && valid && !was_holder) {
      holding_ = false;
      return false;
    }
    if (was_holder) {
      mine.acquire_time = old.acquire_time;
      mine.lease_transitions = old.lease_transitions;
    } else {
      mine.lease_transitions = old.lease_transitions + 1;
    }
    mine.resource_version = old.resource_version;
  }
  kube::LeaseReply updated = store_.Update(mine);
  bool was_holding = false;
  if (!Hold(updated, "update", mono, &was_holding)) return IsLeader();
  if (!was_holding || !was_holder)
    spdlog::info("leader election: {} acquired {} (transitions {})", config_.identity,
                 store_.Describe(), updated.record.lease_transitions);
  return true;
}

bool LeaderElector::IsLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holding_ && renewed_mono_ != 0 &&
         clock_.mono() - renewed_mono_ < Ns(config_.renew_deadline);
}

kube::LeaseRecord LeaderElector::observed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_;
}

void LeaderElector::Run(const std::function<void(bool)>& on_change) {
  std::mt19937_64 rng(std::random_device{}());
  bool leading = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(run_mu_);
      if (stop_) break;
    }
    TryAcquireOrRenew();
    bool now_leading = IsLeader();
    if (now_leading != leading) {
      leading = now_leading;
      if (!leading) spdlog::error("leader election: {} lost {}", config_.identity, store_.Describe());
      if (on_change) on_change(leading);
    }
    // A candidate waits RetryPeriod with up to 20% jitter (client-go's JitterFactor 1.2), so
    // replicas started together do not race in lockstep; the leader renews every RetryPeriod.
    auto wait = config_.retry_period;
    if (!leading)
      wait += std::chrono::nanoseconds(static_cast<int64_t>(
          std::uniform_real_distribution<double>(0, 0.2)(rng) * config_.retry_period.count()));
    std::unique_lock<std::mutex> lock(run_mu_);
    run_cv_.wait_for(lock, wait, [this] { return stop_; });
  }
  if (leading && on_change) on_change(false);
}

void LeaderElector::Stop() {
  std::lock_guard<std::mutex> lock(run_mu_);
  stop_ = true;
  run_cv_.notify_all();
}

void LeaderElector::Release() {
  kube::LeaseRecord released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!holding_) return;
    holding_ = false;  // stop writing before the lease is given up
    released.holder_identity = "";
    released.lease_duration_seconds = 1;
    released.acquire_time = clock_.wall();
    released.renew_time = released.acquire_time;
    released.lease_transitions = observed_.lease_transitions;
    released.resource_version = observed_.resource_version;
  }
  kube::LeaseReply r = store_.Update(released);
  if (r.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    observed_ = r.record;
    spdlog::info("leader election: {} released {}", config_.identity, store_.Describe());
  } else {
    spdlog::warn("leader election: release {}: {}", store_.Describe(), r.message);
  }
}

}  // namespace kiln::server
