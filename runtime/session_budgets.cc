// The limits on policy handler calls (loop iterations, host work, wall time, faults per plugin),
// the thread-local record of the call running, and the host functions a compiled handler calls to
// report a fault or a status (volcano-semantics.md §2.4's fault handling is Kiln's own).

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>

#include "runtime/session.h"
#include "runtime/session_dispatch.h"

namespace kiln {

namespace {

std::atomic<int> g_plugin_fault_limit{3};
// 120 s of handler time per plugin and session (summed over the worker threads: a large
// session's predicates take tens of seconds of CPU in all); 30 s of HTTP requests per plugin
// and session.
std::atomic<int64_t> g_session_time_ns{120'000'000'000};
std::atomic<int64_t> g_session_http_ns{30'000'000'000};
}  // namespace

namespace detail {
// 100M iterations: a second or so of the simplest loop body, far beyond what a policy needs at
// the largest cluster the cost checker admits, and short enough that a runaway loop does not
// stall a scheduling cycle for long.
constinit std::atomic<int64_t> g_call_iterations{100'000'000};
// 256 MiB of bytes walked or built per call: a few tens of milliseconds of memchr/memcpy, and
// thousands of times what the shipped policies' string work needs on a call.
constinit std::atomic<int64_t> g_call_host_work{int64_t{256} << 20};
// 5 s per call: past the longest HTTP timeout the extender is usually given (1 s by default)
// and far past any computing call within the loop budget.
constinit std::atomic<int64_t> g_call_time_ns{5'000'000'000};
}  // namespace detail
using detail::g_call_host_work;
using detail::g_call_iterations;
using detail::g_call_time_ns;

void SetPolicyCallHostWorkBudget(int64_t bytes) {
  g_call_host_work = bytes;
  InvalidateCachedScores();
}
int64_t PolicyCallHostWorkBudget() { return g_call_host_work.load(std::memory_order_relaxed); }
void SetPolicyCallTimeBudget(int64_t ns) {
  g_call_time_ns = ns;
  InvalidateCachedScores();
}
int64_t PolicyCallTimeBudget() { return g_call_time_ns.load(std::memory_order_relaxed); }
void SetPolicySessionTimeBudget(int64_t ns) { g_session_time_ns = ns; }
int64_t PolicySessionTimeBudget() { return g_session_time_ns.load(std::memory_order_relaxed); }
void SetPolicySessionHttpBudget(int64_t ns) { g_session_http_ns = ns; }
int64_t PolicySessionHttpBudget() { return g_session_http_ns.load(std::memory_order_relaxed); }


void SetPolicyCallIterationBudget(int64_t iterations) {
  g_call_iterations = iterations;
  InvalidateCachedScores();  // a cached score stood for a call under the old budget
}
int64_t PolicyCallIterationBudget() { return g_call_iterations.load(std::memory_order_relaxed); }
void SetPluginFaultLimit(int faults) { g_plugin_fault_limit = faults; }
int PluginFaultLimit() { return g_plugin_fault_limit.load(std::memory_order_relaxed); }

const char* FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::Host: return "host";
    case FaultKind::Memory: return "memory";
    case FaultKind::Budget: return "budget";
    case FaultKind::Time: return "time";
  }
  return "host";
}

namespace detail {
// Loop iterations left to the handler call running on this thread (kiln_policy_fuel). Apart from
// CurrentCall: a trivially destructible thread_local needs no guard, so the getter compiled
// policies call once per function that loops is two instructions.
constinit thread_local int64_t t_fuel = INT64_MAX;
// Bytes of host work left to the call on this thread (ChargeHostWork).
constinit thread_local int64_t t_host_work = INT64_MAX;
constinit thread_local int64_t t_compile_ns = 0;
}  // namespace detail

bool ChargeHostWork(int64_t bytes) {
  int64_t& left = detail::t_host_work;
  left -= bytes;
  // The common case first, without the call record (a thread_local behind a guard, which a map
  // lookup by a string key would otherwise pay on every call): within the budget, and too small
  // a piece of work to look at the clock for.
  if (left >= 0 && bytes < (int64_t{1} << 20)) return true;
  auto& call = detail::ThisThreadCall();
  if (left >= 0) {
    // Large pieces of work also look at the clock: a call over its wall time stops here.
    if (call.session == nullptr) return true;
    int64_t took = CoarseNowNs() - call.started_ns;
    if (took <= PolicyCallTimeBudget()) return true;
    std::string msg = fmt::format("exceeded its wall-time budget of {} per call",
                                  Millis(PolicyCallTimeBudget()));
    kiln_policy_fault_kind(static_cast<int32_t>(FaultKind::Time), msg.data(), msg.size());
    return false;
  }
  if (call.session == nullptr) {
    left = INT64_MAX;  // no budget outside a session call (tests, benchmarks)
    return true;
  }
  left = -1;  // stays spent; no wrap-around however often a spent call asks again
  if (!call.faulted) {
    std::string msg = fmt::format("exceeded its budget of {} bytes of host work",
                                  PolicyCallHostWorkBudget());
    kiln_policy_fault_kind(static_cast<int32_t>(FaultKind::Budget), msg.data(), msg.size());
  }
  return false;
}

void FaultAndDisablePlugin(FaultKind kind, std::string_view message) {
  auto& call = detail::ThisThreadCall();
  bool first = !call.faulted;
  kiln_policy_fault_kind(static_cast<int32_t>(kind), message.data(), message.size());
  if (first && call.faulted) call.disable_plugin = true;
}

}  // namespace kiln

// ---------------------------------------------------------------------------------------------
// Host functions for handlers.

extern "C" {

void kiln_policy_fault(const char* message, size_t len) {
  auto& call = kiln::detail::ThisThreadCall();
  std::string_view msg(message ? message : "", message ? len : 0);
  if (call.session == nullptr) {
    spdlog::warn("policy fault outside a handler: {}", msg);
    return;
  }
  // The first fault of a call is its cause: code after an abandoned loop may fault again.
  if (call.faulted) return;
  call.faulted = true;
  call.kind = kiln::FaultKind::Host;
  call.message = std::string(msg);
}

void kiln_policy_fault_kind(int32_t kind, const char* message, size_t len) {
  auto& call = kiln::detail::ThisThreadCall();
  bool first = !call.faulted;
  kiln_policy_fault(message, len);
  if (first && call.faulted && kind >= 0 && kind < kiln::kFaultKindCount)
    call.kind = static_cast<kiln::FaultKind>(kind);
}

int64_t* kiln_policy_fuel(void) { return &kiln::detail::t_fuel; }

void kiln_policy_out_of_fuel(void) {
  auto& call = kiln::detail::ThisThreadCall();
  if (call.session == nullptr) {
    kiln::detail::t_fuel = INT64_MAX;  // no budget outside a session call (tests, benchmarks)
    return;
  }
  if (call.faulted) return;  // already abandoned: the loops unwind one by one
  std::string msg = fmt::format("exceeded its budget of {} loop iterations",
                                kiln::PolicyCallIterationBudget());
  kiln_policy_fault_kind(static_cast<int32_t>(kiln::FaultKind::Budget), msg.data(), msg.size());
}

}  // extern "C"

namespace kiln {
namespace {
// A reason or message longer than this is cut (with a note of how much): the session keeps every
// node's reasons for every pending task (FitErrors), outside any call's memory budget, so one
// handler returning a 100 MB reason on 1,000 nodes would otherwise keep 100 GB.
constexpr size_t kMaxReasonBytes = 4096;
std::string BoundedReason(const char* data, size_t len) {
  if (data == nullptr) return {};
  if (len <= kMaxReasonBytes) return std::string(data, len);
  std::string s(data, kMaxReasonBytes);
  s += fmt::format("... ({} more bytes cut)", len - kMaxReasonBytes);
  return s;
}
}  // namespace
}  // namespace kiln

extern "C" {

void kiln_status_add_reason(KStatusOut* out, const char* data, size_t len) {
  if (out == nullptr) return;
  std::string s = kiln::BoundedReason(data, len);
  if (out->status) {
    size_t start = 0;
    for (;;) {
      size_t end = s.find(kiln::kFitReasonSeparator, start);
      out->status->reasons.push_back(s.substr(start, end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  } else if (out->validate) {
    out->validate->reason = std::move(s);
  }
}

void kiln_status_set_message(KStatusOut* out, const char* data, size_t len) {
  if (out == nullptr) return;
  std::string s = kiln::BoundedReason(data, len);
  if (out->validate) out->validate->message = std::move(s);
  else if (out->status) out->status->reasons.push_back(std::move(s));
}

}  // extern "C"
