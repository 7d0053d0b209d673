// The session: plugin registration, the per-Combine dispatchers (volcano-semantics.md §2.1–2.3),
// the mutation primitives (§2.4) and session close (§3.6).

#include "runtime/session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <ctime>
#include <cstdlib>

#include "runtime/hyper_node.h"
#include "runtime/invariants.h"

// Where a Status/Validation handler writes its reasons.
struct KStatusOut {
  kiln::PluginStatus* status = nullptr;
  kiln::ValidateResult* validate = nullptr;
};

namespace kiln {

namespace {

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// 100M iterations: a second or so of the simplest loop body, far beyond what a policy needs at
// the largest cluster the cost checker admits, and short enough that a runaway loop does not
// stall a scheduling cycle for long.
std::atomic<int64_t> g_call_iterations{100'000'000};
std::atomic<int> g_plugin_fault_limit{3};
// 256 MiB of bytes walked or built per call: a few tens of milliseconds of memchr/memcpy, and
// thousands of times what the shipped policies' string work needs on a call.
std::atomic<int64_t> g_call_host_work{int64_t{256} << 20};
// 5 s per call: past the longest HTTP timeout the extender is usually given (1 s by default)
// and far past any computing call within the loop budget.
std::atomic<int64_t> g_call_time_ns{5'000'000'000};
// 120 s of handler time per plugin and session (summed over the worker threads: a large
// session's predicates take tens of seconds of CPU in all); 30 s of HTTP requests per plugin
// and session.
std::atomic<int64_t> g_session_time_ns{120'000'000'000};
std::atomic<int64_t> g_session_http_ns{30'000'000'000};
}  // namespace

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

int64_t CoarseNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {
std::string Millis(int64_t ns) {
  if (ns % 1'000'000'000 == 0) return fmt::format("{}s", ns / 1'000'000'000);
  return fmt::format("{}ms", ns / 1'000'000);
}
}  // namespace

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
CurrentCall& ThisThreadCall() {
  thread_local CurrentCall call;
  return call;
}
// Loop iterations left to the handler call running on this thread (kiln_policy_fuel). Apart from
// CurrentCall: a trivially destructible thread_local needs no guard, so the getter compiled
// policies call once per function that loops is two instructions.
thread_local int64_t t_fuel = INT64_MAX;
// Bytes of host work left to the call on this thread (ChargeHostWork).
thread_local int64_t t_host_work = INT64_MAX;
}  // namespace detail

bool ChargeHostWork(int64_t bytes) {
  int64_t& left = detail::t_host_work;
  left -= bytes;
  auto& call = detail::ThisThreadCall();
  if (left >= 0) {
    // Large pieces of work also look at the clock: a call over its wall time stops here.
    if (bytes < (int64_t{1} << 20) || call.session == nullptr) return true;
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

namespace {

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

}  // namespace

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
        saved_host_work_(detail::t_host_work) {}
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
    detail::t_fuel = PolicyCallIterationBudget();
    detail::t_host_work = PolicyCallHostWorkBudget();
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
    call_.started_ns = saved_started_;
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
  bool reported_ = false;
  bool timed_ = false;

  // Once per call. The clock ticks every few milliseconds, so most calls measure 0 and cost no
  // shared write; summed over many calls the ticks crossed still estimate the time spent.
  void CheckTime(bool account) {
    if (timed_) return;
    timed_ = true;
    int64_t took = CoarseNowNs() - call_.started_ns;
    if (took <= 0) return;
    if (took > PolicyCallTimeBudget()) {
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
// Lifecycle

Session::Session(Cluster cluster, const SchedulerConf& conf, TimeNs now, std::string uid)
    : cluster_(std::move(cluster)), conf_(conf), now_(now), uid_(std::move(uid)) {}

Session::~Session() = default;

Status Session::Open(const PluginRegistry& registry) {
  OpenTopology(cluster_);  // HyperNodes and jobs' network topology (runtime/hyper_node.h)
  size_t options = 0;
  for (const Tier& tier : conf_.tiers) options += tier.plugins.size();
  disabled_ = std::make_unique<std::atomic<bool>[]>(options);
  called_ = std::make_unique<std::atomic<uint64_t>[]>(options);
  called_slots_ = options;
  call_ns_ = std::make_unique<std::atomic<int64_t>[]>(options);
  http_ns_ = std::make_unique<std::atomic<int64_t>[]>(options);
  for (size_t i = 0; i < options; ++i) {
    call_ns_[i].store(0, std::memory_order_relaxed);
    http_ns_[i].store(0, std::memory_order_relaxed);
  }
  for (size_t ti = 0; ti < conf_.tiers.size(); ++ti) {
    for (const PluginOption& option : conf_.tiers[ti].plugins) {
      const PluginBuilder* builder = registry.Find(option.name);
      if (builder == nullptr) {
        spdlog::warn("plugin \"{}\" is not registered; skipped", option.name);
        continue;
      }
      auto built = (*builder)(option);
      if (!built.ok()) {
        Error e = built.error();
        e.message = fmt::format("plugin {}: {}", option.name, e.message);
        return e;
      }
      int slot = static_cast<int>(plugins_.size());
      PluginSlot ps;
      ps.name = option.name;
      ps.tier = static_cast<int>(ti);
      ps.option = &option;
      ps.plugin = std::move(built.value());
      plugins_.push_back(std::move(ps));
      auto open_start = std::chrono::steady_clock::now();
      Status s = plugins_[slot].plugin->OnSessionOpen(*this, PluginHandle{slot});
      if (!s.ok()) {
        Error e = s.error();
        e.message = fmt::format("plugin {}: {}", option.name, e.message);
        return e;
      }
      CallSessionHandlers(ExtensionPoint::SessionOpen, slot);
      decisions_.plugin_timings.push_back({option.name, true, MicrosSince(open_start)});
    }
  }
  if (InvariantCheckingEnabled()) {
    invariants_ = std::make_unique<InvariantChecker>(*this);
    invariants_->AfterAction();  // the session as opened: the snapshot itself must be sound
  }
  return Status::Ok();
}

void Session::MarkCalled(int slot, ExtensionPoint point) const {
  if (slot < 0 || static_cast<size_t>(slot) >= called_slots_) return;
  const uint64_t bit = uint64_t{1} << static_cast<int>(point);
  std::atomic<uint64_t>& word = called_[static_cast<size_t>(slot)];
  if ((word.load(std::memory_order_relaxed) & bit) == 0) word.fetch_or(bit, std::memory_order_relaxed);
}

std::vector<Session::HandlerUse> Session::HandlerCoverage() const {
  std::vector<HandlerUse> out;
  for (size_t slot = 0; slot < plugins_.size(); ++slot) {
    for (int p = 0; p < kExtensionPointCount; ++p) {
      const auto& list = handlers_[static_cast<size_t>(p)];
      bool registered = std::any_of(list.begin(), list.end(), [&](const Registration& r) {
        return r.slot == static_cast<int>(slot);
      });
      if (!registered) continue;
      bool called = slot < called_slots_ &&
                    (called_[slot].load(std::memory_order_relaxed) & (uint64_t{1} << p)) != 0;
      out.push_back({plugins_[slot].name, static_cast<ExtensionPoint>(p), called});
    }
  }
  return out;
}

void Session::CallSessionHandlers(ExtensionPoint point, int slot) {
  for (const auto& r : handlers_[static_cast<int>(point)]) {
    if (r.slot != slot || plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, point);
    reinterpret_cast<void (*)(void*)>(r.fn)(r.ctx);
    scope.faulted();
  }
}

namespace {

// §3.6 jobStatus: the phase a PodGroup gets at session close.
PodGroupPhase ClosePhase(const Job& j, std::string_view session_uid) {
  bool unschedulable = false;
  for (const auto& c : j.conditions) {
    if (c.type == "Unschedulable" && c.status == "True" && c.transition_id == session_uid) {
      unschedulable = true;
      break;
    }
  }
  if (j.Count(TaskStatus::Running) > 0 && unschedulable) return PodGroupPhase::Unknown;
  int32_t scheduled = 0;
  int32_t completed = 0;
  for (int i = 0; i < kTaskStatusCount; ++i) {
    TaskStatus s = StatusFromSlot(i);
    int32_t n = static_cast<int32_t>(j.by_status[i].size());
    if (ScheduledStatus(s)) scheduled += n;
    if (CompletedStatus(s)) completed += n;
  }
  // Releasing tasks that still sit on a node count as scheduled.
  for (const Task* t : j.TasksWith(TaskStatus::Releasing))
    if (!t->node_name.empty()) ++scheduled;
  if (scheduled >= j.min_available)
    return scheduled == completed ? PodGroupPhase::Completed : PodGroupPhase::Running;
  if (j.phase != PodGroupPhase::Inqueue) return PodGroupPhase::Pending;
  return PodGroupPhase::Inqueue;
}

}  // namespace

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  // Same order as before timing existed: every plugin's session_close handlers, then every
  // plugin's OnSessionClose; a plugin's close time is the sum of its two parts.
  std::vector<int64_t> close_micros(plugins_.size(), 0);
  for (size_t slot = 0; slot < plugins_.size(); ++slot) {
    auto start = std::chrono::steady_clock::now();
    CallSessionHandlers(ExtensionPoint::SessionClose, static_cast<int>(slot));
    close_micros[slot] += MicrosSince(start);
  }
  for (size_t slot = 0; slot < plugins_.size(); ++slot) {
    auto start = std::chrono::steady_clock::now();
    plugins_[slot].plugin->OnSessionClose(*this);
    close_micros[slot] += MicrosSince(start);
    decisions_.plugin_timings.push_back({plugins_[slot].name, false, close_micros[slot]});
  }

  for (Job* j : cluster_.jobs()) {
    // Unschedulable reasons of tasks that did not get a node (TaskSchedulingReason).
    for (Task* t : j->TasksWith(TaskStatus::Pending)) {
      std::string msg = j->TaskSchedulingReason(t).message;
      // Kiln's addition: why the HyperNode search left the job unplaced.
      if (!j->topology_reason.empty() && msg.find(j->topology_reason) == std::string::npos)
        msg += (msg.empty() ? "" : msg.back() == '.' ? " " : ". ") + j->topology_reason;
      if (!msg.empty()) decisions_.unschedulable.emplace_back(t, std::move(msg));
    }
    for (Task* t : j->TasksWith(TaskStatus::Pipelined))
      decisions_.pipelined.push_back(Decisions::Placement{t, t->node});
    j->phase = ClosePhase(*j, uid_);
    decisions_.phases.emplace_back(j, j->phase);
  }
  // Deterministic output order regardless of the swap-removal order inside status lists.
  std::sort(decisions_.unschedulable.begin(), decisions_.unschedulable.end(),
            [](const auto& a, const auto& b) { return a.first->index < b.first->index; });
  std::sort(decisions_.pipelined.begin(), decisions_.pipelined.end(),
            [](const auto& a, const auto& b) { return a.task->index < b.task->index; });

  // Queue status.allocated, propagated to the ancestors when the cluster has a root queue.
  for (Queue* q : cluster_.queues()) q->allocated = Resource{};
  for (Queue* q : cluster_.queues())
    for (const Job* j : q->jobs) q->allocated.Add(j->allocated);
  if (cluster_.FindQueue("root") != nullptr) {
    std::vector<Resource> own;
    own.reserve(cluster_.queues().size());
    for (Queue* q : cluster_.queues()) own.push_back(q->allocated);
    for (Queue* q : cluster_.queues())
      for (Queue* p = q->parent; p != nullptr; p = p->parent) p->allocated.Add(own[q->index]);
  }
}

// ---------------------------------------------------------------------------------------------
// Registration

bool Session::PointEnabled(PluginHandle plugin, ExtensionPoint point) const {
  if (plugin.slot < 0 || plugin.slot >= static_cast<int>(plugins_.size())) return false;
  auto flag = GatingFlag(point);
  if (!flag) return true;
  const PluginOption* option = plugins_[plugin.slot].option;
  if (option == nullptr) return false;
  if (auto alt = AlternativeGatingFlag(point); alt && option->Enabled(*alt)) return true;
  return option->Enabled(*flag);
}

bool Session::RegisterRaw(PluginHandle plugin, ExtensionPoint point, void* ctx, void (*fn)()) {
  if (fn == nullptr || !PointEnabled(plugin, point)) return false;
  auto& list = handlers_[static_cast<int>(point)];
  Registration r{plugin.slot, plugins_[plugin.slot].tier, ctx, fn};
  // Keep config order even if plugins register out of order: stable by slot.
  auto pos = std::upper_bound(list.begin(), list.end(), r.slot,
                              [](int slot, const Registration& x) { return slot < x.slot; });
  list.insert(pos, r);
  return true;
}

void Session::EnableScoreCache(PluginHandle plugin, std::vector<ScoreKeyField> fields) {
  if (!ScoreCacheEnabled()) return;
  const size_t nodes = cluster_.nodes().size();
  for (Registration& r : handlers_[static_cast<int>(ExtensionPoint::NodeOrder)]) {
    if (r.slot != plugin.slot || r.score_cache != nullptr) continue;
    score_caches_.push_back(std::make_unique<ScoreCache>(
        fields, cluster_.tasks().size(), nodes, ScoreCache::MaxShapesFor(nodes)));
    r.score_cache = score_caches_.back().get();
  }
}

bool Session::AddCallTime(int slot, int64_t ns) const {
  if (slot < 0 || static_cast<size_t>(slot) >= called_slots_) return false;
  int64_t before = call_ns_[static_cast<size_t>(slot)].fetch_add(ns, std::memory_order_relaxed);
  int64_t budget = PolicySessionTimeBudget();
  return before <= budget && before + ns > budget;  // once, when the budget is crossed
}

int64_t Session::HttpTimeLeft(int slot) const {
  if (slot < 0 || static_cast<size_t>(slot) >= called_slots_) return 0;
  return std::max<int64_t>(
      0, PolicySessionHttpBudget() -
             http_ns_[static_cast<size_t>(slot)].load(std::memory_order_relaxed));
}

void Session::AddHttpTime(int slot, int64_t ns) const {
  if (slot < 0 || static_cast<size_t>(slot) >= called_slots_) return;
  http_ns_[static_cast<size_t>(slot)].fetch_add(ns, std::memory_order_relaxed);
}

void Session::ReportFault(int slot, ExtensionPoint point, std::string_view message,
                          FaultKind kind, bool disable) {
  fault_count_.fetch_add(1, std::memory_order_relaxed);
  bool known = slot >= 0 && slot < static_cast<int>(plugins_.size());
  std::string name = known ? plugins_[slot].name : std::string("<unknown>");
  std::string line = fmt::format("plugin {}: {}: {}", name, Info(point).handler, message);
  spdlog::warn("policy fault: {}", line);
  std::lock_guard<std::mutex> lock(fault_mu_);
  decisions_.faults.push_back(std::move(line));
  decisions_.fault_points.push_back({name, std::string(Info(point).handler), FaultKindName(kind)});
  if (!known) return;
  PluginSlot& ps = plugins_[slot];
  ++ps.faults;
  ++ps.faults_by_kind[static_cast<size_t>(kind)];
  // The watchdog: a plugin that keeps faulting is switched off for the rest of the session, so
  // the remaining plugins schedule as if the conf did not name it (sched_ext's fallback to the
  // default scheduler). Concurrent dispatchers may still finish a call or two already started.
  int limit = PluginFaultLimit();
  if ((disable || (limit > 0 && ps.faults >= static_cast<uint64_t>(limit))) &&
      !disabled_[static_cast<size_t>(slot)].exchange(true)) {
    spdlog::warn("plugin {} disabled for the rest of session {} after {} faults (last: {}: {})",
                 name, uid_, ps.faults, Info(point).handler, message);
    decisions_.disabled_plugins.push_back(name);
  }
}

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
      st.reasons = {fmt::format("plugin {} failed", plugins_[r.slot].name)};
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
      int32_t v = Fn<P>(r.fn)(r.ctx, args...);
      if (scope.faulted()) continue;
      if (v < 0) return false;
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

// ---------------------------------------------------------------------------------------------
// Ordering points

namespace {
int CompareTime(TimeNs l, TimeNs r) { return l < r ? -1 : (l > r ? 1 : 0); }
int CompareStr(std::string_view l, std::string_view r) {
  int c = l.compare(r);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// helpers.CompareTask's pod-name index: the number after the last '-' when the name has at
// least three '-'-separated parts.
std::optional<int64_t> PodNameIndex(std::string_view name) {
  size_t dashes = std::count(name.begin(), name.end(), '-');
  if (dashes < 2) return std::nullopt;
  std::string_view suffix = name.substr(name.rfind('-') + 1);
  if (suffix.empty() || suffix.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : suffix) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}
}  // namespace

int Session::JobCompareFn(const Job* l, const Job* r) const {
  return CombineFirstNonZero<ExtensionPoint::JobOrder>(l, r);
}

// The order points' fallbacks are comparisons; each implementation below is the one the table
// names for its point.
static_assert(FallbackOf(ExtensionPoint::JobOrder) == Fallback::CreationThenUid);
static_assert(FallbackOf(ExtensionPoint::QueueOrder) == Fallback::CreationThenName);
static_assert(FallbackOf(ExtensionPoint::VictimQueueOrder) == Fallback::InverseQueueOrder);
static_assert(FallbackOf(ExtensionPoint::TaskOrder) == Fallback::CompareTask);
static_assert(FallbackOf(ExtensionPoint::NodeOrder) == Fallback::Zero &&
              FallbackOf(ExtensionPoint::BatchNodeOrder) == Fallback::Zero);
static_assert(FallbackOf(ExtensionPoint::BestNode) == Fallback::NoNode);
static_assert(FallbackOf(ExtensionPoint::JobValid) == Fallback::Pass);

int Session::JobOrderFn(const Job* l, const Job* r) const {
  if (int v = JobCompareFn(l, r)) return v;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->uid, r->uid);
}

int Session::QueueCompareFn(const Queue* l, const Queue* r) const {
  return CombineFirstNonZero<ExtensionPoint::QueueOrder>(l, r);
}

int Session::VictimQueueCompareFn(const Queue* l, const Queue* r, const Queue* preemptor) const {
  return CombineFirstNonZero<ExtensionPoint::VictimQueueOrder>(l, r, preemptor);
}

int Session::QueueOrderFn(const Queue* l, const Queue* r) const {
  if (int v = QueueCompareFn(l, r)) return v;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->name, r->name);
}

int Session::VictimQueueOrderFn(const Queue* l, const Queue* r, const Queue* preemptor) const {
  if (int v = VictimQueueCompareFn(l, r, preemptor)) return v;
  // Volcano's default is `!QueueOrderFn(l, r)`: l is evicted first unless it orders first.
  return QueueOrderFn(l, r) < 0 ? 1 : -1;
}

int Session::TaskCompareFn(const Task* l, const Task* r) const {
  return CombineFirstNonZero<ExtensionPoint::TaskOrder>(l, r);
}

int Session::TaskOrderFn(const Task* l, const Task* r) const {
  if (int v = TaskCompareFn(l, r)) return v;
  auto li = PodNameIndex(l->name);
  auto ri = PodNameIndex(r->name);
  if (li && ri && *li != *ri) return *li < *ri ? -1 : 1;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->uid, r->uid);
}

// ---------------------------------------------------------------------------------------------
// Predicates and scoring

std::optional<PluginStatus> Session::PrePredicateFn(const Task* t) const {
  return CombineFirstError<ExtensionPoint::PrePredicate>(t);
}

std::optional<FitError> Session::PredicateFn(const Task* t, const Node* n) const {
  auto st = CombineFirstError<ExtensionPoint::Predicate>(t, n);
  if (!st) return std::nullopt;
  FitError e;
  e.task_uid = t->uid;
  e.node_name = n->name;
  e.statuses.push_back(std::move(*st));
  return e;
}

void Session::SimulateRemoveTask(const Task* preemptor, const Task* victim, const Node* n) const {
  CombineCallAll<ExtensionPoint::SimulateRemoveTask>(preemptor, victim, n);
}

void Session::SimulateAddTask(const Task* preemptor, const Task* victim, const Node* n) const {
  CombineCallAll<ExtensionPoint::SimulateAddTask>(preemptor, victim, n);
}

std::optional<FitError> Session::SimulatePredicateFn(const Task* t, const Node* n) const {
  auto st = CombineFirstError<ExtensionPoint::SimulatePredicate>(t, n);
  if (!st) return std::nullopt;
  FitError e;
  e.task_uid = t->uid;
  e.node_name = n->name;
  e.statuses.push_back(std::move(*st));
  return e;
}

std::optional<FitError> Session::PredicateForAllocateAction(const Task* t, const Node* n) const {
  auto e = PredicateFn(t, n);
  if (e && e->FailsAllocate()) return e;
  return std::nullopt;
}

std::optional<FitError> Session::PredicateForPreemptAction(const Task* t, const Node* n) const {
  auto e = PredicateFn(t, n);
  if (e && e->FailsPreempt()) return e;
  return std::nullopt;
}

std::optional<PluginStatus> Session::PredicateStatus(const Task* t, const Node* n) const {
  return CombineFirstError<ExtensionPoint::Predicate>(t, n);
}

// Registration r's cached score for (t, n): a hit sets *score; otherwise `fill` is the entry to
// store the handler's answer in once it answered without a fault or an error (those are never
// cached, so the next call raises them again exactly as without the cache), or null when the
// pair is not cached. Both scoring paths use it, so they answer alike.
Session::ScoreProbe Session::CachedScore(const Registration& r, const Task* t, const Node* n,
                                         double* score) const {
  if (r.score_cache == nullptr) return {};
  const uint32_t epoch = ScoreCacheEpoch();
  if (epoch == 0) return {};
  ScoreCache::Entry* e = r.score_cache->Find(t, n);
  const uint64_t tag = ScoreCache::Tag(epoch, n->version);
  const bool hit = e != nullptr && e->Get(tag, score);
  CountScoreCacheLookup(hit);
  return {hit ? nullptr : e, hit, tag};
}

Session::SpeculativeScore Session::NodeOrderSpeculative(const Task* t, const Node* n,
                                                        double* score,
                                                        uint64_t* called) const {
  static_assert(CombineOf(ExtensionPoint::NodeOrder) == Combine::Sum);
  // Same calls and arithmetic as NodeOrderFn; only the bookkeeping differs (see session.h).
  const auto& hs = Handlers<ExtensionPoint::NodeOrder>();
  if (hs.empty()) {
    *score = 0;
    return SpeculativeScore::Ok;
  }
  double total = 0;
  // Set up on the first handler actually called: when every score is cached, the thread's call
  // record is neither saved nor restored.
  std::optional<CallScope> scope;
  for (size_t k = 0; k < hs.size(); ++k) {
    const Registration& r = hs[k];
    double s = 0;
    if (plugin_disabled(r.slot)) continue;
    if (k >= 64) return SpeculativeScore::Faulted;  // not accountable in *called
    *called |= uint64_t{1} << k;
    ScoreProbe cached = CachedScore(r, t, n, &s);
    if (cached.hit) {
      total += s;
      continue;
    }
    if (!scope) scope.emplace(this);
    scope->Enter(r.slot, ExtensionPoint::NodeOrder, /*mark_called=*/false);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &s);
    if (scope->faulted_silently()) return SpeculativeScore::Faulted;
    if (err != 0) {
      *score = 0;
      return SpeculativeScore::Failed;
    }
    if (cached.fill != nullptr) cached.fill->Put(cached.tag, s);
    total += s;
  }
  *score = total;
  return SpeculativeScore::Ok;
}

void Session::MarkNodeOrderCalled(uint64_t called) const {
  const auto& hs = Handlers<ExtensionPoint::NodeOrder>();
  for (size_t k = 0; k < hs.size() && k < 64; ++k)
    if ((called >> k) & 1u) MarkCalled(hs[k].slot, ExtensionPoint::NodeOrder);
}

Result<double> Session::NodeOrderFn(const Task* t, const Node* n) const {
  static_assert(CombineOf(ExtensionPoint::NodeOrder) == Combine::Sum);
  double total = 0;
  CallScope scope(this);
  for (const auto& r : Handlers<ExtensionPoint::NodeOrder>()) {
    double score = 0;
    if (plugin_disabled(r.slot)) continue;
    ScoreProbe cached = CachedScore(r, t, n, &score);
    if (cached.hit) {
      MarkCalled(r.slot, ExtensionPoint::NodeOrder);
      total += score;
      continue;
    }
    scope.Enter(r.slot, ExtensionPoint::NodeOrder);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &score);
    if (scope.faulted()) continue;
    if (err != 0)
      return Error{fmt::format("plugin {}: node_order failed for task {} on node {}",
                               plugins_[r.slot].name, t->uid, n->name),
                   {}};
    if (cached.fill != nullptr) cached.fill->Put(cached.tag, score);
    total += score;
  }
  return total;
}

Status Session::BatchNodeOrderFn(const Task* t, std::span<Node* const> nodes,
                                 std::vector<double>& scores) const {
  static_assert(CombineOf(ExtensionPoint::BatchNodeOrder) == Combine::SumPerNode);
  scores.resize(nodes.size(), 0.0);
  const auto& hs = Handlers<ExtensionPoint::BatchNodeOrder>();
  if (hs.empty()) return Status::Ok();
  // Reused across calls: one allocation per task adds up over 100k tasks.
  thread_local std::vector<double> part;
  part.resize(nodes.size());
  for (const auto& r : hs) {
    std::fill(part.begin(), part.end(), 0.0);
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::BatchNodeOrder);
    int32_t err = Fn<ExtensionPoint::BatchNodeOrder>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), part.data());
    if (scope.faulted()) continue;
    if (err != 0)
      return Error{fmt::format("plugin {}: batch_node_order failed for task {}",
                               plugins_[r.slot].name, t->uid),
                   {}};
    for (size_t k = 0; k < nodes.size(); ++k) scores[k] += part[k];
  }
  return Status::Ok();
}

Node* Session::BestNodeFn(const Task* t, std::span<Node* const> nodes,
                          std::span<const double> scores) const {
  static_assert(CombineOf(ExtensionPoint::BestNode) == Combine::FirstNonNull);
  for (const auto& r : Handlers<ExtensionPoint::BestNode>()) {
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::BestNode);
    const Node* best = Fn<ExtensionPoint::BestNode>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), scores.data());
    if (scope.faulted()) continue;
    if (best != nullptr) return const_cast<Node*>(best);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Network topology

Status Session::HyperNodeOrderFn(const SubJob* sub, std::span<HyperNode* const> hns,
                                 std::vector<double>& scores) const {
  static_assert(CombineOf(ExtensionPoint::HyperNodeOrder) == Combine::SumPerNode);
  scores.resize(hns.size(), 0.0);
  std::vector<double> part(hns.size());
  for (const auto& r : Handlers<ExtensionPoint::HyperNodeOrder>()) {
    std::fill(part.begin(), part.end(), 0.0);
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::HyperNodeOrder);
    int32_t err = Fn<ExtensionPoint::HyperNodeOrder>(r.fn)(
        r.ctx, sub, const_cast<const HyperNode* const*>(hns.data()), hns.size(), part.data());
    if (scope.faulted()) continue;
    if (err != 0)
      return Error{fmt::format("plugin {}: hyper_node_order failed for sub-job {}",
                               plugins_[r.slot].name, sub->uid),
                   {}};
    for (size_t k = 0; k < hns.size(); ++k) scores[k] += part[k];
  }
  return Status::Ok();
}

template <ExtensionPoint P, typename Owner>
std::optional<std::vector<HyperNode*>> Session::CombineFirstDecides(
    const Owner* j, std::span<HyperNode* const> candidates) const {
  static_assert(CombineOf(P) == Combine::FirstDecides && FallbackOf(P) == Fallback::SearchRootOnly);
  for (const auto& r : Handlers<P>()) {
    if (plugin_disabled(r.slot)) continue;
    std::vector<uint8_t> selected(candidates.size(), 0);
    CallScope scope(this, r.slot, P);
    Fn<P>(r.fn)(r.ctx, j, const_cast<const HyperNode* const*>(candidates.data()),
                candidates.size(), selected.data());
    if (scope.faulted()) continue;
    std::vector<HyperNode*> kept;
    for (size_t k = 0; k < candidates.size(); ++k)
      if (selected[k]) kept.push_back(candidates[k]);
    return kept;
  }
  return std::nullopt;
}

std::optional<std::vector<HyperNode*>> Session::HyperNodeGradientForJobFn(
    const Job* j, std::span<HyperNode* const> candidates) const {
  return CombineFirstDecides<ExtensionPoint::HyperNodeGradientForJob>(j, candidates);
}

std::optional<std::vector<HyperNode*>> Session::HyperNodeGradientForSubJobFn(
    const SubJob* s, std::span<HyperNode* const> candidates) const {
  return CombineFirstDecides<ExtensionPoint::HyperNodeGradientForSubJob>(s, candidates);
}

// ---------------------------------------------------------------------------------------------
// Sub-jobs

bool Session::SubJobReady(const Job* j, const SubJob* s) const {
  if (!j->HasSubGroupPolicy()) return JobReady(j);
  return CombineBool<ExtensionPoint::SubJobReady>(s);
}

bool Session::SubJobPipelined(const Job* j, const SubJob* s) const {
  if (!j->HasSubGroupPolicy()) return JobPipelined(j);
  return CombineVote<ExtensionPoint::SubJobPipelined>(s);
}

int Session::SubJobCompareFn(const SubJob* l, const SubJob* r) const {
  return CombineFirstNonZero<ExtensionPoint::SubJobOrder>(l, r);
}

static_assert(FallbackOf(ExtensionPoint::SubJobOrder) == Fallback::MatchIndexThenUid);
int Session::SubJobOrderFn(const SubJob* l, const SubJob* r) const {
  if (int v = SubJobCompareFn(l, r)) return v;
  if (l->match_index != r->match_index) return l->match_index < r->match_index ? -1 : 1;
  return CompareStr(l->uid, r->uid);
}

// ---------------------------------------------------------------------------------------------
// Victims

std::vector<Task*> Session::Preemptable(const Task* preemptor,
                                        std::span<Task* const> preemptees) const {
  return CombineVictimIntersect<ExtensionPoint::Preemptable>(preemptor, preemptees);
}

std::vector<Task*> Session::Reclaimable(const Task* reclaimer,
                                        std::span<Task* const> reclaimees) const {
  return CombineVictimIntersect<ExtensionPoint::Reclaimable>(reclaimer, reclaimees);
}

std::vector<Task*> Session::UnifiedEvictable(const Job* job,
                                             std::span<Task* const> candidates) const {
  return CombineVictimIntersect<ExtensionPoint::UnifiedEvictable>(job, candidates);
}

std::vector<Task*> Session::VictimTasks(std::span<Task* const> tasks) const {
  return CombineTierUnion<ExtensionPoint::VictimTasks>(tasks);
}

// ---------------------------------------------------------------------------------------------
// Queue and job gates

bool Session::Overused(const Queue* q) const { return CombineBool<ExtensionPoint::Overused>(q); }

bool Session::Allocatable(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::Allocatable>(q, t);
}

bool Session::SimulateAllocatableFn(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::SimulateAllocatable>(q, t);
}

bool Session::Preemptive(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::Preemptive>(q, t);
}

bool Session::JobReady(const Job* j) const { return CombineBool<ExtensionPoint::JobReady>(j); }

bool Session::JobPipelined(const Job* j) const {
  return CombineVote<ExtensionPoint::JobPipelined>(j);
}

bool Session::JobEnqueueable(const Job* j) const {
  return CombineVote<ExtensionPoint::JobEnqueueable>(j);
}

void Session::JobEnqueued(const Job* j) { CombineCallAll<ExtensionPoint::JobEnqueued>(j); }

bool Session::JobStarving(const Job* j) const {
  return CombineBool<ExtensionPoint::JobStarving>(j);
}

std::optional<ValidateResult> Session::JobValid(const Job* j) const {
  static_assert(CombineOf(ExtensionPoint::JobValid) == Combine::FirstInvalid);
  for (const auto& r : Handlers<ExtensionPoint::JobValid>()) {
    ValidateResult vr;
    KStatusOut out{nullptr, &vr};
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::JobValid);
    bool pass = Fn<ExtensionPoint::JobValid>(r.fn)(r.ctx, j, &out);
    if (scope.faulted() || pass) continue;
    vr.pass = false;
    vr.plugin = plugins_[r.slot].name;
    return vr;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Explain: each plugin's answer on its own (runtime/explain.h). The scheduling path never calls
// these; they run the same handlers with the same fault handling as the combinators above.

std::vector<PluginStatus> Session::PredicateEach(const Task* t, const Node* n) const {
  std::vector<PluginStatus> out;
  for (const auto& r : Handlers<ExtensionPoint::Predicate>()) {
    PluginStatus st;
    KStatusOut sink{&st, nullptr};
    CallScope scope(this, r.slot, ExtensionPoint::Predicate);
    int32_t code = Fn<ExtensionPoint::Predicate>(r.fn)(r.ctx, t, n, &sink);
    st.plugin = plugins_[r.slot].name;
    if (scope.faulted()) {
      st.code = StatusCode::Error;
      st.reasons = {fmt::format("plugin {} failed", st.plugin)};
    } else {
      st.code = code >= 0 && code <= 5 ? static_cast<StatusCode>(code) : StatusCode::Error;
      if (st.code == StatusCode::Success) st.reasons.clear();
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<std::pair<std::string, double>> Session::NodeOrderEach(const Task* t, const Node* n,
                                                                   std::string* error) const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& r : Handlers<ExtensionPoint::NodeOrder>()) {
    double score = 0;
    CallScope scope(this, r.slot, ExtensionPoint::NodeOrder);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &score);
    if (scope.faulted()) continue;
    const std::string& name = plugins_[r.slot].name;
    if (err != 0) {
      if (error) *error = fmt::format("plugin {}: node_order failed", name);
      break;
    }
    if (!out.empty() && out.back().first == name) out.back().second += score;
    else out.emplace_back(name, score);
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<double>>> Session::BatchNodeOrderEach(
    const Task* t, std::span<Node* const> nodes, std::string* error) const {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  std::vector<double> part(nodes.size());
  for (const auto& r : Handlers<ExtensionPoint::BatchNodeOrder>()) {
    std::fill(part.begin(), part.end(), 0.0);
    CallScope scope(this, r.slot, ExtensionPoint::BatchNodeOrder);
    int32_t err = Fn<ExtensionPoint::BatchNodeOrder>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), part.data());
    if (scope.faulted()) continue;
    const std::string& name = plugins_[r.slot].name;
    if (err != 0) {
      if (error) *error = fmt::format("plugin {}: batch_node_order failed", name);
      break;
    }
    if (out.empty() || out.back().first != name) out.emplace_back(name, std::vector<double>(nodes.size()));
    for (size_t k = 0; k < nodes.size(); ++k) out.back().second[k] += part[k];
  }
  return out;
}

void Session::ShowQueueFn(const Queue* q) const { CombineCallAll<ExtensionPoint::ShowQueue>(q); }

// ---------------------------------------------------------------------------------------------
// Mutation

namespace {

// Runs `change` (which moves tasks on or off node `n`) and tells the HyperNodes holding `n` how
// its used and pipelined resources moved, so that their `used` sums stay current
// (runtime/hyper_node.h: HyperNodeTree::NoteNodeUsage).
template <class Change>
Status ChangeNode(HyperNodeTree* tree, Node& n, Change&& change) {
  if (tree == nullptr || !tree->KeepsUsage(n)) return change();
  const Resource old_used = n.used, old_pipelined = n.pipelined;
  Status s = change();
  tree->NoteNodeUsage(n, old_used, old_pipelined);
  return s;
}

}  // namespace

Status Session::UpdateTaskStatus(Task* t, TaskStatus status) {
  if (t->job == nullptr)
    return Error{fmt::format("task {} has no job in this session", t->uid), {}};
  ++mutation_seq_;
  t->job->UpdateTaskStatus(t, status);
  if (Node* n = t->node)
    return ChangeNode(cluster_.hyper_nodes(), *n, [&] { return n->UpdateTask(t); });
  return Status::Ok();
}

Status Session::PlaceTask(Task* t, Node* n) {
  ++mutation_seq_;
  t->node_name = n->name;
  return ChangeNode(cluster_.hyper_nodes(), *n, [&] { return n->AddTask(t); });
}

void Session::UnplaceTask(Task* t) {
  ++mutation_seq_;
  if (Node* n = t->node)
    (void)ChangeNode(cluster_.hyper_nodes(), *n, [&] {
      n->RemoveTask(t);
      return Status::Ok();
    });
  t->node_name.clear();
}

void Session::FireAllocate(Task* t) { CombineCallAll<ExtensionPoint::OnAllocate>(t); }

void Session::FireDeallocate(Task* t) { CombineCallAll<ExtensionPoint::OnDeallocate>(t); }

Status Session::DispatchBind(Task* t) {
  if (t->node == nullptr)
    return Error{fmt::format("task {} cannot be bound: it is not on a node", t->uid), {}};
#ifndef NDEBUG
  for (const auto& b : decisions_.binds) assert(b.task != t && "a pod is never bound twice");
#endif
  decisions_.binds.push_back(Decisions::Placement{t, t->node});
  ++mutation_seq_;
  t->job->UpdateTaskStatus(t, TaskStatus::Binding);
  return Status::Ok();
}

Status Session::DispatchEvict(Task* t, std::string_view reason) {
  decisions_.evictions.push_back(Decisions::Eviction{t, std::string(reason)});
  return Status::Ok();
}

Status Session::Allocate(Task* t, Node* n) {
  if (Status s = UpdateTaskStatus(t, TaskStatus::Allocated); !s.ok()) return s;
  if (Status s = PlaceTask(t, n); !s.ok()) return s;
  FireAllocate(t);
  Job* j = t->job;
  if (JobReady(j)) {
    // Copy: dispatching moves tasks out of the Allocated list.
    std::vector<Task*> allocated = j->TasksWith(TaskStatus::Allocated);
    for (Task* a : allocated)
      if (Status s = DispatchBind(a); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Session::Pipeline(Task* t, Node* n) {
  if (Status s = UpdateTaskStatus(t, TaskStatus::Pipelined); !s.ok()) return s;
  if (Status s = PlaceTask(t, n); !s.ok()) return s;
  FireAllocate(t);
  return Status::Ok();
}

Status Session::Evict(Task* t, std::string_view reason) {
  if (Status s = DispatchEvict(t, reason); !s.ok()) return s;
  if (Status s = UpdateTaskStatus(t, TaskStatus::Releasing); !s.ok()) return s;
  FireDeallocate(t);
  return Status::Ok();
}

void Session::UpdatePodGroupCondition(Job* j, PodGroupCondition c) { j->SetCondition(std::move(c)); }

void Session::SetJobFitError(Job* j, std::string message) { j->job_fit_error = std::move(message); }

void Session::SetPodAnnotation(const Task* t, std::string key, std::string value) {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  pod_annotations_[t][std::move(key)] = std::move(value);
}

void Session::RemovePodAnnotation(const Task* t, const std::string& key) {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  auto it = pod_annotations_.find(t);
  if (it == pod_annotations_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) pod_annotations_.erase(it);
}

std::map<const Task*, StringMap> Session::pod_annotations() const {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  return pod_annotations_;
}

void Session::RecordFitErrors(Task* t, FitErrors errors) {
  if (t->job == nullptr) return;
  t->job->nodes_fit_errors[t->index] = std::move(errors);
}

bool Session::NodeUnresolvableFor(const Task* t, const Node* n) const {
  if (t->job == nullptr) return false;
  auto it = t->job->nodes_fit_errors.find(t->index);
  return it != t->job->nodes_fit_errors.end() && it->second.HasUnresolvable(n->name);
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
