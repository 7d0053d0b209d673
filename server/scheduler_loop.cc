#include "server/scheduler_loop.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "runtime/scheduler.h"
#include "server/metrics.h"

namespace kiln::server {

TimeNs WallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SchedulerLoop::SchedulerLoop(ClusterBinding& binding, PolicyReloader& policies,
                             ServerMetrics* metrics, LoopOptions options)
    : binding_(binding), policies_(policies), metrics_(metrics), options_(std::move(options)) {
  if (!options_.clock) options_.clock = WallClockNs;
}

Result<SessionResult> SchedulerLoop::RunOnce() {
  // The set is taken once: a reload that lands during this session takes effect at the next.
  std::shared_ptr<const PolicySet> set = policies_.Current();
  if (!set) return Error{"no configuration loaded", {}};
  auto start = std::chrono::steady_clock::now();
  struct Around {
    const LoopOptions& o;
    explicit Around(const LoopOptions& options) : o(options) {
      if (o.session_starts) o.session_starts();
    }
    ~Around() {
      if (o.session_ends) o.session_ends();
    }
  };
  auto result = [&] {
    Around around(options_);
    return RunCycle(binding_, set->conf, set->registry, options_.clock(),
                    static_cast<int>(sessions_));
  }();
  double e2e_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                           start)
                      .count();
  if (!result) {
    if (metrics_) metrics_->ObserveSessionError();
    return result.error();
  }
  ++sessions_;
  if (metrics_) metrics_->ObserveSession(*result, e2e_ms);
  spdlog::debug("session {} (generation {}): {} binds, {} evictions, {} pipelined, {:.2f} ms",
                result->index, set->generation, result->binds.size(), result->evictions.size(),
                result->pipelined.size(), e2e_ms);
  // Where the jobs with a network topology are placed (Volcano keeps this in memory and logs it
  // at -v 3; nothing writes it to the PodGroups).
  if (!result->allocated_hyper_nodes.empty() && spdlog::should_log(spdlog::level::debug)) {
    std::string placed;
    for (const auto& [job, hn] : result->allocated_hyper_nodes)
      placed += fmt::format("{}{}={}", placed.empty() ? "" : ", ", job, hn);
    spdlog::debug("session {}: allocated HyperNodes: {}", result->index, placed);
  }
  if (observer_) observer_(*result, *set);
  return result;
}

int64_t SchedulerLoop::Run() {
  int64_t ran = 0;
  for (;;) {
    auto started = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
    }
    if (options_.may_schedule && !options_.may_schedule()) {
      // Not synced yet, or standing by: ask again soon rather than a period later, so the
      // first session starts as soon as the caches are synced or the lease is won.
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::min<std::chrono::nanoseconds>(options_.period,
                                                            std::chrono::milliseconds(100)),
                   [this] { return stop_; });
      if (stop_) break;
      continue;
    }
    auto result = RunOnce();
    if (result)
      ++ran;
    else
      spdlog::error("session failed: {}", result.error().Format());
    // The next session starts a period after this one started; at once if this one overran.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, started + options_.period, [this] { return stop_; });
    if (stop_) break;
  }
  return ran;
}

void SchedulerLoop::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

bool SchedulerLoop::stopped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

struct SignalWaiter::Impl {
  std::atomic<bool> done{false};
  std::thread thread;
};

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWaiter::SignalWaiter(std::function<void(int)> on_signal) : impl_(std::make_unique<Impl>()) {
  BlockTerminationSignals();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  impl_->thread = std::thread([set, impl = impl_.get(), on_signal = std::move(on_signal)] {
    while (!impl->done.load()) {
      timespec tick{0, 100'000'000};  // wake up to notice `done`
      int signo = sigtimedwait(&set, nullptr, &tick);
      if (signo > 0) {
        on_signal(signo);
        return;
      }
    }
  });
}

SignalWaiter::~SignalWaiter() {
  impl_->done.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace kiln::server
