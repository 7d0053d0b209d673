#pragma once
// Whether a session read the clock. A session whose plugins and actions never read `now`
// decides the same at any time for the same snapshot, which lets the simulator skip periods that
// provably decide nothing (simulator/simulator.h). Readers say so as they start to depend on it:
// a compiled policy whose code calls `now()` when it opens, preempt when it reads the start time
// of a pod that was never scheduled. A process-wide count: the simulator compares it before and
// after a session (a count from elsewhere in the process can only make it skip less).

#include <atomic>
#include <cstdint>

namespace kiln {

inline std::atomic<uint64_t>& ClockUseCounter() {
  static std::atomic<uint64_t> uses{0};
  return uses;
}
inline void NoteClockUse() { ClockUseCounter().fetch_add(1, std::memory_order_relaxed); }
inline uint64_t ClockUses() { return ClockUseCounter().load(std::memory_order_relaxed); }

}  // namespace kiln
