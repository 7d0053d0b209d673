#pragma once
// Leader election over a coordination.k8s.io/v1 Lease, with client-go's semantics
// (k8s.io/client-go/tools/leaderelection) and defaults: LeaseDuration 15s, RenewDeadline 10s,
// RetryPeriod 2s.
//
//  * Every RetryPeriod a replica reads the Lease. A lease held by another identity is left alone
//    until it has gone unchanged for LeaseDuration *as this replica observed it* (its own clock,
//    from when it last saw the record change; never the holder's timestamps, so clock skew
//    between replicas does not matter). Then, or when the lease is free or missing, the replica
//    writes itself in as holder (acquireTime = renewTime = now, leaseTransitions + 1 when the
//    holder changes) under the resourceVersion it read: of two replicas racing, one gets 409.
//  * The leader renews every RetryPeriod. If it has not renewed successfully for RenewDeadline
//    it is no longer leader, at once: IsLeader() compares the clock with the last renewal on
//    every call, so a writer that asks before each write stops even if the renew loop is stuck
//    in a slow request. RenewDeadline < LeaseDuration leaves the margin in which nobody writes.
//  * Release (on clean shutdown) writes an empty holder with a 1 s duration, so a standby takes
//    over within a retry period instead of waiting out the lease.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "kubernetes/lease.h"
#include "runtime/model.h"

namespace kiln::server {

struct LeaderElectionConfig {
  std::string identity;  // holderIdentity: unique per replica (hostname_uuid)
  std::chrono::nanoseconds lease_duration = std::chrono::seconds(15);
  std::chrono::nanoseconds renew_deadline = std::chrono::seconds(10);
  std::chrono::nanoseconds retry_period = std::chrono::seconds(2);
};

// Clocks, injectable for tests: `wall` stamps the record (acquireTime, renewTime), `mono`
// measures local durations (expiry of others' leases, our renew deadline).
struct ElectionClock {
  std::function<TimeNs()> wall;
  std::function<TimeNs()> mono;
  static ElectionClock System();
};

class LeaderElector {
 public:
  LeaderElector(kube::LeaseStore& store, LeaderElectionConfig config,
                ElectionClock clock = ElectionClock::System());

  // One attempt to acquire or renew (client-go tryAcquireOrRenew). Returns whether this replica
  // holds the lease after it.
  bool TryAcquireOrRenew();

  // Thread-safe; true only while the last successful acquire/renew is younger than
  // RenewDeadline.
  bool IsLeader() const;

  // Attempts every RetryPeriod until Stop(); calls `on_change(leading)` when leadership starts
  // or ends (also when it ends by the deadline passing between attempts).
  void Run(const std::function<void(bool leading)>& on_change);
  void Stop();

  // Gives the lease up if this replica holds it (clean shutdown).
  void Release();

  const LeaderElectionConfig& config() const { return config_; }
  // The last record read or written (tests, /readyz).
  kube::LeaseRecord observed() const;

 private:
  // After a create or update of the lease: false (logged) when it failed; else `reply`'s record
  // is the lease this replica holds, renewed at `mono`, and `*was_holding` whether it held it.
  bool Hold(const kube::LeaseReply& reply, const char* verb, TimeNs mono,
            bool* was_holding = nullptr);

  kube::LeaseStore& store_;
  LeaderElectionConfig config_;
  ElectionClock clock_;

  mutable std::mutex mu_;
  kube::LeaseRecord observed_;
  TimeNs observed_mono_ = 0;        // when observed_ last changed, on the mono clock
  TimeNs renewed_mono_ = 0;         // last successful acquire/renew, mono; 0 = never
  bool holding_ = false;            // we wrote ourselves in last

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stop_ = false;
};

}  // namespace kiln::server
