#include "compiler/timings.h"

#include <fmt/format.h>

#include "runtime/env_flag.h"

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
  static const bool requested = EnvFlagOn("KILN_TIMINGS");
  return requested;
}

}  // namespace kiln
