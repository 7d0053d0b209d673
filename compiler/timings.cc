#include "compiler/timings.h"

#include <fmt/format.h>

#include <cstdlib>

namespace kiln {

double PhaseTimings::Total() const {
  double total = 0;
  for (const auto& [phase, ms] : phases) total += ms;
  return total;
}

std::string PhaseTimings::Format() const {
  std::string out;
  for (const auto& [phase, ms] : phases) out += fmt::format("{} {:.2f} ms, ", phase, ms);
  out += fmt::format("total {:.2f} ms", Total());
  return out;
}

bool TimingsRequested() {
  static const bool requested = [] {
    const char* env = std::getenv("KILN_TIMINGS");
    return env && *env && std::string_view(env) != "0";
  }();
  return requested;
}

}  // namespace kiln
