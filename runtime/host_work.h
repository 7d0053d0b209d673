#pragma once
// ChargeHostWork (runtime/session.h) with its common case inline, for the builtins that charge on
// every call: a policy-map lookup by a string key, a string comparison, starts_with. Within the
// budget and under 1 MiB the charge is a compare and a subtraction on a thread-local; anything
// else goes to ChargeHostWork, which records a fault or looks at the clock.

#include <cstdint>

namespace kiln {

bool ChargeHostWork(int64_t bytes);

namespace detail {
// Bytes of host work left to the handler call running on this thread (session_budgets.cc).
extern constinit thread_local int64_t t_host_work;
}  // namespace detail

inline bool ChargeHostWorkInline(int64_t bytes) {
  int64_t& left = detail::t_host_work;
  if (bytes < (int64_t{1} << 20) && left >= bytes) {
    left -= bytes;
    return true;
  }
  return ChargeHostWork(bytes);
}

}  // namespace kiln
