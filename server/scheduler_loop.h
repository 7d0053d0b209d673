#pragma once
// The long-running scheduler: one session per period against a ClusterBinding (Volcano's
// Scheduler.Run: wait.Until(runOnce, schedulePeriod)).
//
// Timing follows Volcano: the next session starts one period after the previous one started, or
// at once when the previous one took longer than the period (no catching up on missed periods).
// Each session takes the active PolicySet once, at open, and runs on it to the end, however many
// reloads land meanwhile. Stop() (from a signal handler thread, or a test) lets the session in
// flight finish and returns from Run() before the next one starts; the binding's write queue and
// the lease are the caller's to flush and release afterwards.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "runtime/cluster.h"
#include "runtime/status.h"
#include "server/policy_set.h"

namespace kiln::server {

class ServerMetrics;

// The wall clock as a session time (the default clock of the loop and of /snapshot).
TimeNs WallClockNs();

struct LoopOptions {
  std::chrono::nanoseconds period = std::chrono::seconds(1);
  // The session time (`now` of Snapshot and the session); default: the wall clock.
  std::function<TimeNs()> clock;
  // Whether this replica may schedule now (leader election); checked before each session. A
  // replica that may not waits a period and asks again. Default: always.
  std::function<bool()> may_schedule;
  // Called on the loop's thread right before each session's snapshot and right after the session
  // ended, whatever its outcome: work off the scheduling path (a shadow candidate) steps aside
  // in between.
  std::function<void()> session_starts;
  std::function<void()> session_ends;
};

class SchedulerLoop {
 public:
  SchedulerLoop(ClusterBinding& binding, PolicyReloader& policies, ServerMetrics* metrics,
                LoopOptions options = {});

  // Runs sessions until Stop(). Returns the number of sessions run.
  int64_t Run();
  // Thread-safe; idempotent. The session in flight finishes; no new one starts.
  void Stop();
  bool stopped() const;

  // One cycle now, on the calling thread: Snapshot, session on the active set, Apply. A session
  // error (a snapshot that failed, a plugin that could not open) is returned and counted; the
  // loop logs it and carries on with the next period.
  Result<SessionResult> RunOnce();

  // Called after each successful session with its result and the set it ran on.
  void SetObserver(std::function<void(const SessionResult&, const PolicySet&)> observer) {
    observer_ = std::move(observer);
  }
  int64_t sessions() const { return sessions_; }

 private:
  ClusterBinding& binding_;
  PolicyReloader& policies_;
  ServerMetrics* metrics_;
  LoopOptions options_;
  std::function<void(const SessionResult&, const PolicySet&)> observer_;
  int64_t sessions_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

// Blocks SIGTERM and SIGINT in the calling thread; threads started afterwards inherit the mask.
// Call it before starting any thread (reflectors, writers), so that the signals reach only the
// SignalWaiter's thread and never kill the process through a thread that does not block them.
void BlockTerminationSignals();

// Blocks SIGTERM and SIGINT in the calling thread (call it first in main, before other threads
// exist, so they inherit the mask) and starts a thread that waits for one of them and calls
// `on_signal(signo)` once. The returned handle joins that thread when destroyed.
class SignalWaiter {
 public:
  explicit SignalWaiter(std::function<void(int)> on_signal);
  ~SignalWaiter();
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::server
