#pragma once
// Microseconds since a steady-clock time point: the unit of every timing a session and a
// scheduling cycle report (SessionResult's *_micros, plugin timings).

#include <chrono>
#include <cstdint>

namespace kiln {

inline int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace kiln
