#pragma once
// Names the calling thread, so that `top -H`, `ps -L`, /proc/PID/task/TID/comm and perf's `comm`
// column tell kiln serve's threads apart: the session (the process's main thread, "kiln"), the
// search's pool, the writers, the watches, the Event sender and the rest. scripts/bench-serve
// sums CPU per name to show who used the two cores while binds landed.

#include <pthread.h>

#include <algorithm>
#include <string_view>

namespace kiln {

// Linux keeps at most 15 bytes of a thread's name: a longer one is cut there. Best effort: a
// failure leaves the name the thread inherited.
inline void NameThisThread(std::string_view name) {
  char buf[16] = {};
  name.copy(buf, std::min(name.size(), sizeof(buf) - 1));
  (void)pthread_setname_np(pthread_self(), buf);
}

}  // namespace kiln
