#pragma once
// Switches read from the environment: KILN_TIMINGS=1, KILN_CHECK_INVARIANTS=1, ... A flag is on
// when the variable is set to anything but "" or "0".

#include <cstdlib>
#include <string_view>

namespace kiln {

inline bool EnvFlagOn(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

}  // namespace kiln
