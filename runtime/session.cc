// The session's lifecycle: open (plugins built and their session handlers run, tier by tier),
// handler registration and use, fault reports, and session close (volcano-semantics.md §3.6).
// The per-point dispatchers are in session_points.cc, the mutation primitives in
// session_mutation.cc, the call budgets and fault host functions in session_budgets.cc.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "runtime/elapsed.h"
#include "runtime/hyper_node.h"
#include "runtime/invariants.h"
#include "runtime/session.h"
#include "runtime/session_dispatch.h"

namespace kiln {

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
  // Every plugin registered: the node_order list is final unless a handler is still to compile
  // (then ResolveLazy builds the sum cache once it is).
  constexpr uint64_t kNodeOrderBit = uint64_t{1} << static_cast<int>(ExtensionPoint::NodeOrder);
  if ((lazy_points_.load(std::memory_order_acquire) & kNodeOrderBit) == 0) BuildScoreSumCache();
  if (InvariantCheckingEnabled()) {
    invariants_ = std::make_unique<InvariantChecker>(*this);
    invariants_->AfterAction();  // the session as opened: the snapshot itself must be sound
  }
  return Status::Ok();
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
  if (lazy_points_.load(std::memory_order_acquire) & (uint64_t{1} << static_cast<int>(point)))
    ResolveLazy(point);
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
  // No scorer runs after the close handlers; the caches (a row of scores per task shape and
  // node, 10 MB at 10k nodes) would otherwise stay until the session is destroyed, past the
  // results its caller builds while the model is still alive: the run's peak memory.
  for (Registration& r : handlers_[static_cast<int>(ExtensionPoint::NodeOrder)])
    r.score_cache = nullptr;
  score_caches_.clear();
  score_sum_run_ = 0;
  score_sum_cache_.reset();

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
  if (!GatingFlag(point)) return true;
  const PluginOption* option = plugins_[plugin.slot].option;
  return option != nullptr && PointEnabledBy(*option, point);
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

bool Session::RegisterLazy(PluginHandle plugin, ExtensionPoint point, void* ctx,
                           const HandlerSource* code) {
  if (code == nullptr || !PointEnabled(plugin, point)) return false;
  auto& list = handlers_[static_cast<int>(point)];
  Registration r{plugin.slot, plugins_[plugin.slot].tier, ctx, nullptr, nullptr, code};
  auto pos = std::upper_bound(list.begin(), list.end(), r.slot,
                              [](int slot, const Registration& x) { return slot < x.slot; });
  list.insert(pos, r);
  lazy_points_.fetch_or(uint64_t{1} << static_cast<int>(point), std::memory_order_release);
  return true;
}

void Session::ResolveLazy(ExtensionPoint point) const {
  const uint64_t bit = uint64_t{1} << static_cast<int>(point);
  std::lock_guard<std::mutex> lock(lazy_mu_);
  if ((lazy_points_.load(std::memory_order_acquire) & bit) == 0) return;  // another thread did
  const auto start = std::chrono::steady_clock::now();
  // The list is not read while its bit is set (Handlers), so it may change here.
  auto& list = const_cast<std::vector<Registration>&>(handlers_[static_cast<int>(point)]);
  for (auto it = list.begin(); it != list.end();) {
    if (it->lazy != nullptr) {
      it->fn = it->lazy->Handler(point);
      it->lazy = nullptr;
    }
    it = it->fn == nullptr ? list.erase(it) : it + 1;
  }
  if (point == ExtensionPoint::NodeOrder) BuildScoreSumCache();
  lazy_points_.fetch_and(~bit, std::memory_order_release);
  // Reached inside a handler's call (it asked the session something): the compile is not that
  // call's time. The record on this thread is the caller's, or the scope of a dispatch that saved
  // it and gives it back with the compile skipped too (CallScope).
  const int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
  detail::t_compile_ns += took;
  if (detail::CurrentCall& call = detail::ThisThreadCall(); call.session != nullptr)
    call.started_ns += took;
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

void Session::BuildScoreSumCache() const {
  // Under lazy_mu_ with the list's bit still set (ResolveLazy), or while Open runs alone: no
  // dispatcher reads the list or the caches meanwhile.
  auto& hs = const_cast<std::vector<Registration>&>(
      handlers_[static_cast<int>(ExtensionPoint::NodeOrder)]);
  size_t run = 0;
  std::vector<ScoreKeyField> fields;
  while (run < hs.size() && run < 64 && hs[run].score_cache != nullptr) {
    const auto& f = hs[run].score_cache->fields();
    fields.insert(fields.end(), f.begin(), f.end());
    ++run;
  }
  if (run < 2 || score_sum_cache_ != nullptr) return;
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  const size_t nodes = cluster_.nodes().size();
  score_sum_cache_ = std::make_unique<ScoreCache>(std::move(fields), cluster_.tasks().size(),
                                                  nodes, ScoreCache::MaxShapesFor(nodes));
  // The run's own caches are no longer read: each is a row per shape and a slot per task.
  std::vector<const ScoreCache*> replaced;
  for (size_t k = 0; k < run; ++k) replaced.push_back(std::exchange(hs[k].score_cache, nullptr));
  std::erase_if(score_caches_, [&](const std::unique_ptr<ScoreCache>& c) {
    return std::find(replaced.begin(), replaced.end(), c.get()) != replaced.end();
  });
  score_sum_run_ = run;
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

}  // namespace kiln
