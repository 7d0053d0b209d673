#pragma once
// The clock of the handler budgets (runtime/session_dispatch.h's CallScope): every handler call
// reads it when it starts and when it returns, so at 10k nodes × 100k pods it is read ~100M
// times a session. Reading CLOCK_MONOTONIC_COARSE through the vDSO costs ~10 ns, 7% of such a
// session (perf, docs/performance.md). While a session runs, a ticker thread stores that clock in
// one word every millisecond, and a read is a load.
//
// The answer has the coarse clock's resolution (the kernel tick, 1–4 ms) plus at most the tick
// period, or more while the ticker waits for a CPU: it measures calls against budgets of seconds
// and sums the ticks calls cross, nothing finer. While a thread holds a ticker the time it reads
// never goes back; as the first holder arrives or the last leaves, a read may step back by less
// than a tick (a call that measures 0 or less costs nothing).

#include <atomic>
#include <cstdint>

namespace kiln {

namespace detail {
// The ticker's last reading; 0 while no session holds a CoarseClockTicker.
inline constinit std::atomic<int64_t> g_coarse_now_ns{0};
int64_t ReadCoarseClock();
}  // namespace detail

// Monotonic nanoseconds at the resolution of the kernel tick.
inline int64_t CoarseNowNs() {
  int64_t now = detail::g_coarse_now_ns.load(std::memory_order_relaxed);
  return now != 0 ? now : detail::ReadCoarseClock();
}

// While one is alive (RunSession holds one), the ticker keeps CoarseNowNs() current. Sessions
// may overlap (kiln serve's shadow and what-if sessions): the ticker runs while any holds one,
// and sleeps without a timeout when none does.
class CoarseClockTicker {
 public:
  CoarseClockTicker();
  ~CoarseClockTicker();
  CoarseClockTicker(const CoarseClockTicker&) = delete;
  CoarseClockTicker& operator=(const CoarseClockTicker&) = delete;
};

}  // namespace kiln
