#include "runtime/coarse_clock.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

#include "runtime/thread_name.h"

namespace kiln {

namespace detail {
int64_t ReadCoarseClock() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace detail

namespace {

constexpr std::chrono::milliseconds kTick{1};

// Never destroyed: the ticker thread is detached and may still wait on `wake` while the process
// exits.
struct Ticker {
  std::mutex mu;
  std::condition_variable wake;
  int holders = 0;
  bool started = false;

  // Every store to the word happens under `mu`, so a holder that arrives as the last one leaves
  // cannot have its fresh reading overwritten by the 0 of the departure.
  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      wake.wait(lock, [this] { return holders > 0; });
      while (holders > 0) {
        detail::g_coarse_now_ns.store(detail::ReadCoarseClock(), std::memory_order_relaxed);
        wake.wait_for(lock, kTick);
      }
      detail::g_coarse_now_ns.store(0, std::memory_order_relaxed);
    }
  }
};

Ticker& TheTicker() {
  static Ticker* ticker = new Ticker();
  return *ticker;
}

}  // namespace

CoarseClockTicker::CoarseClockTicker() {
  Ticker& t = TheTicker();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.holders++ == 0) {
    // Current from the first read on, without waiting for the thread to be scheduled.
    detail::g_coarse_now_ns.store(detail::ReadCoarseClock(), std::memory_order_relaxed);
    if (!t.started) {
      std::thread([&t] {
        NameThisThread("kiln-clock");
        t.Run();
      }).detach();
      t.started = true;
    } else {
      t.wake.notify_one();
    }
  }
}

CoarseClockTicker::~CoarseClockTicker() {
  Ticker& t = TheTicker();
  std::lock_guard<std::mutex> lock(t.mu);
  if (--t.holders == 0) {
    // Back to reading the clock at once: the ticker may take a while to notice.
    detail::g_coarse_now_ns.store(0, std::memory_order_relaxed);
    t.wake.notify_one();
  }
}

}  // namespace kiln
