#pragma once
// Private to the session's files (session*.cc): the handler-call scope that attributes faults and
// measures time, and the generic combinators every extension point's dispatcher calls. The
// combinators are templates, so the files that dispatch (session_points.cc, session.cc,
// session_mutation.cc) each instantiate the ones they use, inlined as before the split.

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/reason_codes.h"
#include "runtime/session.h"

// Where a Status/Validation handler writes its reasons.
struct KStatusOut {
  kiln::PluginStatus* status = nullptr;
  kiln::ValidateResult* validate = nullptr;
};

namespace kiln {

namespace detail {
// Defined in session_budgets.cc; constinit, so reading them needs no thread-local init check.
extern constinit thread_local int64_t t_fuel;
extern constinit thread_local int64_t t_host_work;
// Nanoseconds this thread spent compiling lazily registered handlers (Session::ResolveLazy), so
// far: a handler call whose extent holds such a compile is not charged for it.
extern constinit thread_local int64_t t_compile_ns;
// The per-call budgets behind PolicyCallIterationBudget, PolicyCallHostWorkBudget and
// PolicyCallTimeBudget (session_budgets.cc), read here without a call on every handler call.
extern constinit std::atomic<int64_t> g_call_iterations;
extern constinit std::atomic<int64_t> g_call_host_work;
extern constinit std::atomic<int64_t> g_call_time_ns;
}  // namespace detail

// Helpers of the session's files (names kept short: only session*.cc include this header).
inline std::string Millis(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  return fmt::format("{}ms", ns / 1'000'000);
}

template <ExtensionPoint P>
HandlerFn<P> Fn(void (*fn)()) {
  return reinterpret_cast<HandlerFn<P>>(fn);
}

constexpr Combine CombineOf(ExtensionPoint p) { return Info(p).combine; }
constexpr Fallback FallbackOf(ExtensionPoint p) { return Info(p).fallback; }

// The table's answer for a Bool/Vote point that no plugin decided.
template <ExtensionPoint P>
constexpr bool FallbackBool() {
  static_assert(FallbackOf(P) == Fallback::True || FallbackOf(P) == Fallback::False);
  return FallbackOf(P) == Fallback::True;
}

// Marks which plugin's handler runs on this thread so kiln_policy_fault() can attribute a fault.
// Nested handler calls (a handler asking the session something) restore the outer record.
class Session::CallScope {
 public:
  CallScope(const Session* s, int slot, ExtensionPoint point) : CallScope(s) {
    Enter(slot, point);
  }
  // The dispatch form, for the per-(task, node) dispatchers: the caller's record is saved once,
  // then Enter marks each handler call of the dispatch (nothing reads the record between two
  // calls), and the destructor restores the record once.
  explicit CallScope(const Session* s)
      : call_(detail::ThisThreadCall()),
        session_(s),
        saved_session_(call_.session),
        saved_slot_(call_.slot),
        saved_point_(call_.point),
        saved_faulted_(call_.faulted),
        saved_kind_(call_.kind),
        saved_disable_(call_.disable_plugin),
        saved_started_(call_.started_ns),
        saved_fuel_(detail::t_fuel),
        saved_host_work_(detail::t_host_work),
        saved_compile_ns_(detail::t_compile_ns) {}
  // `mark_called` = false for a speculative call (the fused allocate search), whose handler use
  // is recorded only if its answer is used.
  void Enter(int slot, ExtensionPoint point, bool mark_called = true) {
    if (mark_called) session_->MarkCalled(slot, point);
    call_.session = session_;
    call_.slot = slot;
    call_.point = point;
    call_.faulted = false;
    call_.kind = FaultKind::Host;
    call_.disable_plugin = false;
    call_.started_ns = CoarseNowNs();
    // A nested call (a handler asking the session something) gets its own budget and gives the
    // outer call back what it had left: the outer loop still bounds how often it asks.
    detail::t_fuel = detail::g_call_iterations.load(std::memory_order_relaxed);
    detail::t_host_work = detail::g_call_host_work.load(std::memory_order_relaxed);
    reported_ = false;
    timed_ = false;
  }
  ~CallScope() {
    call_.session = saved_session_;
    call_.slot = saved_slot_;
    call_.point = saved_point_;
    call_.faulted = saved_faulted_;
    call_.kind = saved_kind_;
    call_.disable_plugin = saved_disable_;
    // The caller's clock skips what was compiled meanwhile (Session::ResolveLazy).
    call_.started_ns = saved_started_ + (detail::t_compile_ns - saved_compile_ns_);
    detail::t_fuel = saved_fuel_;
    detail::t_host_work = saved_host_work_;
  }
  // Reports (once) and returns whether the handler faulted. Also where the call's wall time is
  // measured: a call over PolicyCallTimeBudget() is a time fault (its answer ignored), and its
  // plugin's session time grows by it.
  bool faulted() {
    CheckTime(/*account=*/true);
    if (!call_.faulted) return false;
    if (!reported_) {
      const_cast<Session*>(session_)->ReportFault(call_.slot, call_.point, call_.message,
                                                   call_.kind, call_.disable_plugin);
      reported_ = true;
    }
    return true;
  }
  // Whether the handler faulted, without reporting it (a speculative call's caller redoes the
  // call the ordinary way if it needs the answer).
  bool faulted_silently() {
    CheckTime(/*account=*/false);
    return call_.faulted;
  }

 private:
  detail::CurrentCall& call_;
  const Session* session_;
  const Session* saved_session_;
  int saved_slot_;
  ExtensionPoint saved_point_;
  bool saved_faulted_;
  FaultKind saved_kind_;
  bool saved_disable_;
  int64_t saved_started_;
  int64_t saved_fuel_;
  int64_t saved_host_work_;
  int64_t saved_compile_ns_;
  bool reported_ = false;
  bool timed_ = false;

  // Once per call. The clock ticks every few milliseconds, so most calls measure 0 and cost no
  // shared write; summed over many calls the ticks crossed still estimate the time spent. Only
  // this test is inline: it runs on every call.
  void CheckTime(bool account) {
    if (timed_) return;
    timed_ = true;
    int64_t took = CoarseNowNs() - call_.started_ns;
    if (took > 0) [[unlikely]]
      ChargeTime(took, account);
  }
  [[gnu::noinline]] void ChargeTime(int64_t took, bool account) {
    if (took > detail::g_call_time_ns.load(std::memory_order_relaxed)) {
      std::string msg = fmt::format("took {}, over its wall-time budget of {} per call",
                                    Millis(took), Millis(PolicyCallTimeBudget()));
      kiln_policy_fault_kind(static_cast<int32_t>(FaultKind::Time), msg.data(), msg.size());
    }
    if (account && session_->AddCallTime(call_.slot, took)) {
      std::string msg = fmt::format("spent over its wall-time budget of {} per session",
                                    Millis(PolicySessionTimeBudget()));
      FaultAndDisablePlugin(FaultKind::Time, msg);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Generic combinators, one per Combine kind. Each point's public method below is a one-line call
// into the combinator its table row names, plus the default Volcano applies.

template <ExtensionPoint P, typename... A>
int Session::CombineFirstNonZero(A... args) const {
  static_assert(CombineOf(P) == Combine::FirstNonZero);
  for (const auto& r : Handlers<P>()) {
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, P);
    int v = Fn<P>(r.fn)(r.ctx, args...);
    if (scope.faulted()) continue;
    if (v != 0) return v;
  }
  return 0;
}

template <ExtensionPoint P, typename... A>
std::optional<PluginStatus> Session::CombineFirstError(A... args) const {
  static_assert(CombineOf(P) == Combine::FirstError && FallbackOf(P) == Fallback::Pass);
  // One status for the whole dispatch, cleared after a passing handler that left reasons in it:
  // this runs for every (task, node) pair and nearly every answer is a pass.
  const auto& hs = Handlers<P>();
  if (hs.empty()) return std::nullopt;
  PluginStatus st;
  KStatusOut out{&st, nullptr};
  CallScope scope(this);
  for (const auto& r : hs) {
    if (plugin_disabled(r.slot)) continue;
    if (!st.reasons.empty()) st.reasons.clear();
    scope.Enter(r.slot, P);
    int32_t code = Fn<P>(r.fn)(r.ctx, args..., &out);
    if (scope.faulted()) {
      st.code = StatusCode::Error;
      st.reasons = {CodedReason("PluginFailed", fmt::format("plugin {} failed", plugins_[r.slot].name))};
      st.plugin = plugins_[r.slot].name;
      return st;
    }
    if (code == 0) continue;
    st.code = code >= 0 && code <= 5 ? static_cast<StatusCode>(code) : StatusCode::Error;
    st.plugin = plugins_[r.slot].name;
    return st;
  }
  return std::nullopt;
}

template <ExtensionPoint P, typename... A>
bool Session::CombineBool(A... args) const {
  constexpr Combine c = CombineOf(P);
  static_assert(c == Combine::Any || c == Combine::All || c == Combine::FirstTierAll);
  if constexpr (c == Combine::Any) {
    for (const auto& r : Handlers<P>()) {
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      bool v = Fn<P>(r.fn)(r.ctx, args...);
      if (scope.faulted()) continue;
      if (v) return true;
    }
    return FallbackBool<P>();
  } else if constexpr (c == Combine::All) {
    for (const auto& r : Handlers<P>()) {
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      bool v = Fn<P>(r.fn)(r.ctx, args...);
      if (scope.faulted() || !v) return false;
    }
    return FallbackBool<P>();
  } else {
    // The first tier with any handler decides by the AND of that tier's handlers.
    const auto& hs = Handlers<P>();
    if (hs.empty()) return FallbackBool<P>();
    int tier = hs.front().tier;
    for (const auto& r : hs) {
      if (r.tier != tier) break;
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      bool v = Fn<P>(r.fn)(r.ctx, args...);
      if (scope.faulted() || !v) return false;
    }
    return true;
  }
}

template <ExtensionPoint P, typename... A>
bool Session::CombineVote(A... args) const {
  static_assert(CombineOf(P) == Combine::Vote);
  const auto& hs = Handlers<P>();
  size_t i = 0;
  while (i < hs.size()) {
    int tier = hs[i].tier;
    bool permitted = false;
    for (; i < hs.size() && hs[i].tier == tier; ++i) {
      const auto& r = hs[i];
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      // Enqueue reports who refused a PodGroup and what it said (reject_with, reason_codes.h);
      // the other votes are asked far more often and nobody reads their refusals.
      constexpr bool kSaysWhy = P == ExtensionPoint::JobEnqueueable;
      if constexpr (kSaysWhy) ClearStatedVoteReason();
      int32_t v = Fn<P>(r.fn)(r.ctx, args...);
      if (scope.faulted()) continue;
      if (v < 0) {
        if constexpr (kSaysWhy) {
          AdmissionRefusal refusal = TakeStatedVoteReason();
          refusal.plugin = plugins_[r.slot].name;
          SetLastVoteRefusal(std::move(refusal));
        }
        return false;
      }
      if (v > 0) permitted = true;
    }
    if (permitted) return true;
  }
  return FallbackBool<P>();  // everyone abstained
}

template <ExtensionPoint P, typename... A>
void Session::CombineCallAll(A... args) const {
  static_assert(CombineOf(P) == Combine::CallAll);
  for (const auto& r : Handlers<P>()) {
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, P);
    Fn<P>(r.fn)(r.ctx, args...);
    scope.faulted();
  }
}

template <ExtensionPoint P, typename Subject>
std::vector<Task*> Session::CombineVictimIntersect(const Subject* t,
                                                   std::span<Task* const> cands) const {
  static_assert(CombineOf(P) == Combine::VictimIntersect && FallbackOf(P) == Fallback::NoVictims);
  const auto& hs = Handlers<P>();
  const size_t n = cands.size();
  std::vector<uint8_t> mask(n);
  // Victims as candidate indices; empty plays the role of Volcano's nil.
  std::vector<uint32_t> victims;
  size_t i = 0;
  while (i < hs.size()) {
    int tier = hs[i].tier;
    for (; i < hs.size() && hs[i].tier == tier; ++i) {
      const auto& r = hs[i];
      std::fill(mask.begin(), mask.end(), 0);
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      int32_t decided = Fn<P>(r.fn)(r.ctx, t, const_cast<const Task* const*>(cands.data()), n,
                                    mask.data());
      if (scope.faulted() || decided == 0) continue;  // abstain
      bool any = false;
      for (size_t k = 0; k < n && !any; ++k) any = mask[k] != 0;
      if (!any) {
        // An empty answer leaves this tier undecided; the next tier decides.
        victims.clear();
        while (i < hs.size() && hs[i].tier == tier) ++i;
        break;
      }
      if (victims.empty()) {
        for (size_t k = 0; k < n; ++k)
          if (mask[k]) victims.push_back(static_cast<uint32_t>(k));
      } else {
        std::erase_if(victims, [&](uint32_t k) { return mask[k] == 0; });
      }
    }
    if (!victims.empty()) break;
  }
  std::vector<Task*> out;
  out.reserve(victims.size());
  for (uint32_t k : victims) out.push_back(cands[k]);
  return out;
}

template <ExtensionPoint P>
std::vector<Task*> Session::CombineTierUnion(std::span<Task* const> tasks) const {
  static_assert(CombineOf(P) == Combine::TierUnion && FallbackOf(P) == Fallback::NoVictims);
  const auto& hs = Handlers<P>();
  const size_t n = tasks.size();
  std::vector<uint8_t> mask(n), acc(n);
  size_t i = 0;
  bool any = false;
  while (i < hs.size() && !any) {
    int tier = hs[i].tier;
    for (; i < hs.size() && hs[i].tier == tier; ++i) {
      const auto& r = hs[i];
      std::fill(mask.begin(), mask.end(), 0);
      if (plugin_disabled(r.slot)) continue;
      CallScope scope(this, r.slot, P);
      Fn<P>(r.fn)(r.ctx, const_cast<const Task* const*>(tasks.data()), n, mask.data());
      if (scope.faulted()) continue;
      for (size_t k = 0; k < n; ++k) {
        if (mask[k]) {
          acc[k] = 1;
          any = true;
        }
      }
    }
  }
  std::vector<Task*> out;
  for (size_t k = 0; k < n; ++k)
    if (acc[k]) out.push_back(tasks[k]);
  return out;
}

}  // namespace kiln
