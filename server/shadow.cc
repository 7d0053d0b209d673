#include "server/shadow.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "kubernetes/encode.h"
#include "runtime/explain.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "runtime/thread_name.h"
#include "runtime/thread_pool.h"
#include "server/config_watcher.h"
#include "server/metrics.h"

namespace kiln::server {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

bool IsPack(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ||
         (path.size() > 6 && path.compare(path.size() - 6, 6, ".kpack") == 0);
}

Json DecisionJson(const ShadowDecision& d) {
  Json j = Json::object();
  j["bind"] = d.bound ? Json(d.bind_node) : Json(nullptr);
  j["pipeline"] = d.pipelined ? Json(d.pipeline_node) : Json(nullptr);
  j["evict"] = d.evicted;
  return j;
}

// One pod's explanation, cut to what a side-by-side reading needs: what the action did, the
// nodes each side chose (whatever their rank), the best-scored few, and how many nodes each
// filter reason removed. A pod on 1000 nodes stays a few hundred bytes.
Json TaskJson(const TaskExplain& t, const std::set<std::string>& always) {
  constexpr size_t kTopNodes = 5;
  Json j;
  if (!t.action.empty()) j["action"] = t.action;
  if (!t.result_kind.empty()) j["result"] = Json{{t.result_kind, t.result_value}};
  if (!t.note.empty()) j["note"] = t.note;
  if (t.pre_predicate)
    j["prePredicate"] = Json{{"plugin", t.pre_predicate->plugin},
                             {"code", std::string(ToString(t.pre_predicate->code))},
                             {"reason", t.pre_predicate->reason}};
  std::vector<const NodeExplain*> scored;
  std::map<std::string, int> filtered;
  for (const NodeExplain& n : t.nodes) {
    if (n.scored)
      scored.push_back(&n);
    else
      ++filtered[n.reason.empty() ? std::string(ToString(n.code)) : n.reason];
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const NodeExplain* a, const NodeExplain* b) { return a->total > b->total; });
  Json nodes = Json::object();
  for (size_t i = 0; i < scored.size(); ++i) {
    const NodeExplain& n = *scored[i];
    if (i >= kTopNodes && always.count(n.node) == 0) continue;
    Json s = Json::object();
    for (const auto& [plugin, v] : n.scores) s[plugin] = v;
    for (const auto& [plugin, v] : n.batch_scores) s[plugin + " (batch)"] = v;
    nodes[n.node] = Json{{"rank", i + 1}, {"total", n.total}, {"fits", n.fits}, {"scores", s}};
  }
  // A chosen node that did not pass the predicates (pipelined on future idle, say) still shows.
  for (const NodeExplain& n : t.nodes)
    if (!n.scored && always.count(n.node))
      nodes[n.node] = Json{{"status", std::string(ToString(n.code))}, {"reason", n.reason},
                           {"fits", n.fits}};
  j["scoredNodes"] = scored.size();
  j["nodes"] = std::move(nodes);
  Json f = Json::object();
  for (const auto& [reason, count] : filtered) f[reason] = count;
  j["filtered"] = std::move(f);
  return j;
}

// The thread runs below the loop's priority: on a busy machine the live session gets the CPU.
// Under SCHED_IDLE the kernel gives it a core only when nothing else wants one, so the live
// session's two threads are not slowed by it; niceness is the fallback where that is refused.
void LowerThreadPriority(int nice) {
  if (nice <= 0) return;
  pid_t tid = static_cast<pid_t>(::syscall(SYS_gettid));
  sched_param idle{};
  if (::sched_setscheduler(tid, SCHED_IDLE, &idle) == 0) return;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) != 0)
    spdlog::debug("shadow: could not lower the shadow thread's priority");
}

}  // namespace

PolicySources ShadowSources(const std::string& path, const PolicySources& live) {
  PolicySources s;
  s.policy_dirs = live.policy_dirs;
  s.allow_builtin_override = live.allow_builtin_override;
  s.compile_cache_dir = live.compile_cache_dir;
  s.trust_keys = live.trust_keys;
  if (IsPack(path)) {
    s.pack_files = {path};
    s.conf_from_pack = path;
  } else {
    s.packs_dir = live.packs_dir;
    s.pack_files = live.pack_files;
    s.conf_file = path;
  }
  return s;
}

SessionDecisions DecisionsOf(const SessionResult& r) {
  return SessionDecisions{r.binds, r.evictions, r.pipelined};
}

std::vector<ShadowDiff> CompareDecisions(const SessionDecisions& live,
                                         const SessionDecisions& shadow) {
  std::set<std::string> pods;
  for (const auto* side : {&live, &shadow}) {
    for (const auto& [pod, node] : side->binds) pods.insert(pod);
    for (const auto& [pod, node] : side->pipelined) pods.insert(pod);
    pods.insert(side->evictions.begin(), side->evictions.end());
  }
  auto decision = [](const SessionDecisions& s, const std::string& pod) {
    ShadowDecision d;
    if (auto it = s.binds.find(pod); it != s.binds.end()) {
      d.bound = true;
      d.bind_node = it->second;
    }
    if (auto it = s.pipelined.find(pod); it != s.pipelined.end()) {
      d.pipelined = true;
      d.pipeline_node = it->second;
    }
    d.evicted = s.evictions.count(pod) > 0;
    return d;
  };
  std::vector<ShadowDiff> out;
  for (const std::string& pod : pods) {
    ShadowDecision l = decision(live, pod), s = decision(shadow, pod);
    if (l.bound != s.bound || l.bind_node != s.bind_node) out.push_back({pod, "bind", l, s});
    if (l.evicted != s.evicted) out.push_back({pod, "evict", l, s});
    if (l.pipelined != s.pipelined || l.pipeline_node != s.pipeline_node)
      out.push_back({pod, "pipeline", l, s});
  }
  return out;
}

ShadowRunner::ShadowRunner(ShadowOptions options, ProviderFactory factory,
                           const PolicyReloader& live, ServerMetrics* metrics)
    : options_(std::move(options)),
      sources_(ShadowSources(options_.path, options_.live_sources)),
      factory_(std::move(factory)),
      live_(live),
      metrics_(metrics) {
  candidate_ = NewCandidateReloader();
}

std::shared_ptr<PolicyReloader> ShadowRunner::NewCandidateReloader() {
  auto r = std::make_shared<PolicyReloader>(sources_, factory_);
  r->AddObserver([this](const ReloadOutcome& o, const PolicySet* active) {
    if (metrics_) metrics_->ObserveShadowReload(o, active);
    std::lock_guard<std::mutex> lock(mu_);
    if (o.kind == ReloadOutcome::Kind::kRejected && o.error)
      load_error_ = o.error->Format();
    else if (o.kind == ReloadOutcome::Kind::kOk)
      load_error_.clear();
  });
  return r;
}

std::shared_ptr<PolicyReloader> ShadowRunner::CandidateReloader() const {
  std::lock_guard<std::mutex> lock(candidate_mu_);
  return candidate_;
}

ShadowRunner::~ShadowRunner() { Stop(); }

Status ShadowRunner::Start() {
  // The candidate's own files, and its path's directory so that creating or deleting it is seen.
  std::vector<std::string> dirs = CandidateReloader()->WatchDirectories();
  dirs.push_back(ParentDir(options_.path));
  std::vector<std::string> existing;
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (fs::is_directory(d, ec)) existing.push_back(d);
  }
  std::sort(existing.begin(), existing.end());
  existing.erase(std::unique(existing.begin(), existing.end()), existing.end());
  std::string name = fs::path(options_.path).filename().string();
  std::string parent = ParentDir(options_.path);
  watcher_ = std::make_unique<ConfigWatcher>(
      existing, ConfigWatcher::Callback(), options_.reload_quiet,
      [this, name, parent](const std::string& dir, std::string_view n) {
        return (dir == parent && n == name) || CandidateReloader()->IsRelevant(dir, n);
      });
  ConfigWatcher* w = watcher_.get();
  watcher_->SetCallback([this, w](const ConfigWatcher::Superseded& superseded) {
    LoadCandidate([&] {
      return w->stopping() || (superseded() && PolicyReloader::LoadsInFlight() <= 1);
    });
  });
  if (Status s = watcher_->Start(); !s) return s;
  thread_ = std::thread([this] {
    NameThisThread("kiln-shadow");
    ThreadMain();
  });
  return Status::Ok();
}

void ShadowRunner::Stop() {
  if (watcher_) watcher_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  gate_.Release();  // a shadow session in flight finishes without waiting for the loop
  if (thread_.joinable()) thread_.join();
}

void ShadowRunner::LoadCandidate(const std::function<bool()>& abandon) {
  std::lock_guard<std::mutex> serial(load_mu_);
  std::error_code ec;
  bool present = fs::exists(options_.path, ec);
  bool was = present_.exchange(present);
  if (!present) {
    if (was) {
      spdlog::info("shadow: {} is gone: sessions are no longer mirrored", options_.path);
      std::lock_guard<std::mutex> lock(candidate_mu_);
      candidate_ = NewCandidateReloader();
    }
    std::lock_guard<std::mutex> lock(mu_);
    load_error_ = fmt::format("{} does not exist (create it to start the shadow)", options_.path);
  } else {
    ReloadOutcome o = CandidateReloader()->Reload(abandon);
    if (o.kind == ReloadOutcome::Kind::kRejected)
      spdlog::warn("shadow: candidate {} not loaded (the live scheduler is not affected): {}",
                   options_.path, o.error ? o.error->Format() : "unknown error");
    else if (o.kind == ReloadOutcome::Kind::kOk)
      spdlog::info("shadow: candidate {} (generation {}) mirrors every session", options_.path,
                   o.generation);
  }
  if (metrics_) metrics_->SetShadowActive(Candidate() != nullptr);
}

std::shared_ptr<const PolicySet> ShadowRunner::Candidate() const {
  return present_.load() ? CandidateReloader()->Current() : nullptr;
}

bool ShadowRunner::Wants() {
  if (!Candidate()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return false;
  if (busy_) {
    ++skipped_busy_;
    if (metrics_) metrics_->CountShadowSkipped("busy");
    return false;
  }
  return true;
}

void ShadowRunner::Offer(std::shared_ptr<const ClusterSpec> spec,
                         std::map<std::string, std::string> nominated_hyper_nodes, TimeNs now,
                         std::chrono::nanoseconds cost) {
  std::lock_guard<std::mutex> lock(mu_);
  offered_.emplace();
  offered_->loop_cost = cost;
  offered_->spec = std::move(spec);
  offered_->nominated = std::move(nominated_hyper_nodes);
  offered_->now = now;
}

void ShadowRunner::CountLate() {
  if (metrics_) metrics_->CountShadowSkipped("late");
  std::lock_guard<std::mutex> lock(mu_);
  ++skipped_late_;
}

void ShadowRunner::AddLoopCost(std::chrono::nanoseconds cost) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offered_) offered_->loop_cost += cost;
}

void ShadowRunner::LiveDone(const SessionResult* live) {
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const PolicySet> set = live != nullptr ? live_.Current() : nullptr;
  std::chrono::nanoseconds cost{0};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!offered_) return;
    if (live == nullptr || offered_->now != live->time || busy_) {
      offered_.reset();
      return;
    }
    offered_->index = live->index;
    offered_->live = DecisionsOf(*live);
    if (set) {
      offered_->live_generation = set->generation;
      offered_->live_hash = set->hash;
    }
    job_ = std::move(offered_);
    offered_.reset();
    busy_ = true;
    cost = job_->loop_cost;
  }
  cv_.notify_all();
  if (metrics_)
    metrics_->ObserveShadowLoopCost(
        std::chrono::duration<double>(cost + (std::chrono::steady_clock::now() - start)).count());
}

void ShadowRunner::ThreadMain() {
  LowerThreadPriority(options_.nice);
  // The candidate's sessions run every loop on this thread: on the process-wide pools, whose
  // loops run one at a time, the live session would wait for the shadow's.
  ThreadPool nodes(1), io(1, /*min_grain=*/1);
  ThreadPool::ThreadOverride own_pools(nodes, io);
  PauseGate::Bind paused_by_live_sessions(gate_);
  LoadCandidate([this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_;
  });
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || job_.has_value(); });
      if (stop_) return;
      job = std::move(*job_);
      job_.reset();
    }
    RunJob(std::move(job));
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

void ShadowRunner::RunJob(Job job) {
  std::shared_ptr<const PolicySet> set = Candidate();
  if (!set) return;
  PauseGate::Checkpoint();  // the next live session may have started already
  auto start = std::chrono::steady_clock::now();
  auto fail = [&](const Error& e) {
    spdlog::warn("shadow: session {} failed: {}", job.index, e.Format());
    if (metrics_) metrics_->CountShadowSkipped("error");
    std::lock_guard<std::mutex> lock(mu_);
    ++skipped_error_;
    last_error_ = e.Format();
  };
  auto cluster = BuildCluster(*job.spec);
  if (!cluster) return fail(cluster.error());
  cluster->nominated_hyper_nodes() = job.nominated;
  auto result = RunSession(std::move(*cluster), set->conf, set->registry, job.now, job.index);
  if (!result) return fail(result.error());
  std::vector<ShadowDiff> diffs = CompareDecisions(job.live, DecisionsOf(*result));
  ServerMetrics::ShadowDiffer differ;
  for (const ShadowDiff& d : diffs)
    ++(d.kind == "bind" ? differ.bind : d.kind == "evict" ? differ.evict : differ.pipeline);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (metrics_) metrics_->ObserveShadowSession(*result, seconds, differ);
  for (const std::string& f : result->faults) spdlog::debug("shadow: policy fault: {}", f);

  // Both sides of the first few differing pods, explained on the same snapshot.
  std::set<std::string> explain;
  for (const ShadowDiff& d : diffs) {
    if (explain.size() >= options_.explain_per_session) break;
    explain.insert(d.pod);
  }
  std::map<std::string, std::string> live_explained, shadow_explained;
  std::string note;
  if (!explain.empty()) {
    EnsureExplainSet(shadow_explain_, sources_, set->generation, set->hash);
    EnsureExplainSet(live_explain_, options_.live_sources, job.live_generation, job.live_hash);
    for (auto [slot, out, side] : {std::tuple{&live_explain_, &live_explained, "live"},
                                   std::tuple{&shadow_explain_, &shadow_explained, "shadow"}}) {
      if (!slot->set) {
        note += fmt::format("{}{} side not explained: {}", note.empty() ? "" : "; ", side,
                            slot->error);
        continue;
      }
      auto e = Explain(*slot->set, job, explain);
      if (e)
        *out = std::move(*e);
      else
        note += fmt::format("{}{} side not explained: {}", note.empty() ? "" : "; ", side,
                            e.error().Format());
    }
  }

  std::lock_guard<std::mutex> lock(mu_);
  last_error_.clear();
  differ_bind_ += differ.bind;
  differ_evict_ += differ.evict;
  differ_pipeline_ += differ.pipeline;
  for (ShadowDiff& d : diffs) {
    ShadowEntry e;
    e.index = job.index;
    e.time = job.now;
    if (auto it = live_explained.find(d.pod); it != live_explained.end()) e.live_explain = it->second;
    if (auto it = shadow_explained.find(d.pod); it != shadow_explained.end())
      e.shadow_explain = it->second;
    if (explain.count(d.pod) == 0)
      e.explain_note = fmt::format("only the first {} differing pods of a session are explained",
                                   options_.explain_per_session);
    else
      e.explain_note = note;
    e.diff = std::move(d);
    log_.push_back(std::move(e));
    while (log_.size() > options_.log_capacity) log_.pop_front();
  }
  sessions_.fetch_add(1);
}

void ShadowRunner::EnsureExplainSet(ShadowExplainSet& slot, const PolicySources& sources,
                                    uint64_t generation, const std::string& hash) {
  if (slot.for_hash == hash && (slot.set || !slot.error.empty())) return;
  slot.for_hash = hash;
  slot.set.reset();
  slot.error.clear();
  PolicySources fresh = sources;
  fresh.kept_state = nullptr;  // starts its `state ... across sessions` afresh, as a simulation
  auto loaded = LoadPolicySet(fresh, factory_, generation);
  if (!loaded) {
    slot.error = loaded.error().Format();
  } else if ((*loaded)->hash != hash) {
    // The files changed since that configuration was loaded: explaining with what they hold
    // now would answer for another configuration.
    slot.error = fmt::format(
        "the configuration's files changed since generation {} was loaded (sha256:{} then, "
        "sha256:{} now); explanations resume once that change is loaded",
        generation, hash.substr(0, 12), (*loaded)->hash.substr(0, 12));
    slot.for_hash.clear();  // try again next time
  } else {
    slot.set = *loaded;
  }
}

Result<std::map<std::string, std::string>> ShadowRunner::Explain(
    const PolicySet& set, const Job& job, const std::set<std::string>& pods) {
  auto cluster = BuildCluster(*job.spec);
  if (!cluster) return cluster.error();
  cluster->nominated_hyper_nodes() = job.nominated;
  ExplainRecorder recorder(pods);
  SessionHooks hooks = RecordingHooks(recorder);
  auto result = RunSession(std::move(*cluster), set.conf, set.registry, job.now, job.index, &hooks);
  if (!result) return result.error();
  recorder.ApplyResults(*result);
  std::map<std::string, std::string> out;
  const ExplainedTasks& tasks = recorder.explanation().tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    TaskExplain t = tasks[i];
    std::set<std::string> chosen;
    for (const auto& [pod, node] : job.live.binds)
      if (pod == t.key) chosen.insert(node);
    for (const auto& [pod, node] : job.live.pipelined)
      if (pod == t.key) chosen.insert(node);
    if (auto it = result->binds.find(t.key); it != result->binds.end()) chosen.insert(it->second);
    if (auto it = result->pipelined.find(t.key); it != result->pipelined.end())
      chosen.insert(it->second);
    out[t.key] = TaskJson(t, chosen).dump();
  }
  for (const std::string& pod : pods)
    if (!out.count(pod))
      out[pod] = Json{{"note", "no action considered this pod in this session"}}.dump();
  return out;
}

std::string ShadowRunner::StatusJson() const {
  std::shared_ptr<const PolicySet> set = Candidate();
  std::shared_ptr<const PolicySet> live = live_.Current();
  Json j;
  j["path"] = options_.path;
  j["active"] = set != nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (set) {
    j["generation"] = set->generation;
    j["hash"] = "sha256:" + set->hash;
    j["sources"] = set->source_files;
    j["packs"] = set->packs;
  }
  if (!load_error_.empty()) j["loadError"] = load_error_;
  if (live) j["liveGeneration"] = live->generation;
  j["sessions"] = sessions_.load();
  // Time the shadow waited for live sessions to end (a shadow session's wall time includes it).
  j["pausedSeconds"] = std::chrono::duration<double>(gate_.waited()).count();
  j["skipped"] = Json{{"busy", skipped_busy_}, {"late", skipped_late_}, {"error", skipped_error_}};
  if (!last_error_.empty()) j["lastError"] = last_error_;
  j["differ"] = Json{{"bind", differ_bind_}, {"evict", differ_evict_}, {"pipeline", differ_pipeline_}};
  j["logCapacity"] = options_.log_capacity;
  Json decisions = Json::array();
  for (const ShadowEntry& e : log_) {
    Json d;
    d["session"] = e.index;
    d["time"] = kube::FormatTimestamp(e.time);
    d["pod"] = e.diff.pod;
    d["kind"] = e.diff.kind;
    d["live"] = DecisionJson(e.diff.live);
    d["shadow"] = DecisionJson(e.diff.shadow);
    d["liveExplain"] = e.live_explain.empty() ? Json(nullptr) : Json::parse(e.live_explain);
    d["shadowExplain"] = e.shadow_explain.empty() ? Json(nullptr) : Json::parse(e.shadow_explain);
    if (!e.explain_note.empty()) d["explainNote"] = e.explain_note;
    decisions.push_back(std::move(d));
  }
  j["decisions"] = std::move(decisions);
  return j.dump(2) + "\n";
}

bool ShadowRunner::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return !busy_; });
}

ShadowTapBinding::ShadowTapBinding(ClusterBinding& inner, ShadowRunner& shadow,
                                   std::function<ClusterSpec(TimeNs)> spec_at,
                                   std::function<std::shared_ptr<const ClusterSpec>(TimeNs)> kept)
    : inner_(inner), shadow_(shadow), spec_at_(std::move(spec_at)), kept_(std::move(kept)) {
  copier_ = std::thread([this] {
    NameThisThread("kiln-shadowcopy");
    CopierMain();
  });
}

ShadowTapBinding::~ShadowTapBinding() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  copier_.join();
}

int64_t ShadowTapBinding::late_copies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return late_;
}

Result<Cluster> ShadowTapBinding::Snapshot(TimeNs now) {
  // RunCycle reads and writes the tap's nominations; the inner binding keeps the authoritative
  // copy (it may be read by whoever owns it).
  nominated_hyper_nodes = inner_.nominated_hyper_nodes;
  auto cluster = inner_.Snapshot(now);
  // Taken whether or not the shadow wants it, so that the binding never holds a stale one.
  std::shared_ptr<const ClusterSpec> kept = kept_ ? kept_(now) : nullptr;
  if (cluster && shadow_.Wants()) {
    if (kept) {
      shadow_.Offer(std::move(kept), nominated_hyper_nodes, now, std::chrono::nanoseconds(0));
      return cluster;
    }
    std::unique_lock<std::mutex> lock(mu_);
    // The previous session failed before Apply: let its copy end before asking for this one.
    cv_.wait(lock, [this] { return state_ != CopyState::kCopying; });
    state_ = CopyState::kRequested;
    copy_now_ = now;
    copy_nominated_ = nominated_hyper_nodes;
    cv_.notify_all();
  }
  return cluster;
}

void ShadowTapBinding::Apply(const SessionResult& r) {
  auto start = std::chrono::steady_clock::now();
  bool waited = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ == CopyState::kRequested) {
      // Not started yet: it would see this session's decisions. This session goes unmirrored.
      state_ = CopyState::kIdle;
      ++late_;
      shadow_.CountLate();
    } else if (state_ == CopyState::kCopying) {
      waited = true;
      cv_.wait(lock, [this] { return state_ != CopyState::kCopying; });
    }
  }
  if (waited) shadow_.AddLoopCost(std::chrono::steady_clock::now() - start);
  inner_.nominated_hyper_nodes = nominated_hyper_nodes;
  inner_.Apply(r);
}

void ShadowTapBinding::CopierMain() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || state_ == CopyState::kRequested; });
    if (stop_) return;
    state_ = CopyState::kCopying;
    TimeNs now = copy_now_;
    std::map<std::string, std::string> nominated = copy_nominated_;
    lock.unlock();
    auto spec = std::make_shared<const ClusterSpec>(spec_at_(now));
    shadow_.Offer(std::move(spec), std::move(nominated), now, std::chrono::nanoseconds(0));
    lock.lock();
    state_ = CopyState::kIdle;
    cv_.notify_all();
  }
}

}  // namespace kiln::server
