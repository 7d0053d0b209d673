#include "simulator/simulator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "runtime/actions/action.h"
#include "runtime/clock_use.h"
#include "runtime/explain.h"
#include "runtime/pod_group_status.h"
#include "runtime/session.h"
#include "runtime/yaml_util.h"

namespace kiln {

namespace {

void RemapLocation(SourceLocation& where, const ScenarioSpec& spec) {
  Error e{"", where};
  where = MapConfError(spec, std::move(e)).where;
}

void RemapValue(ConfValue& v, const ScenarioSpec& spec) {
  RemapLocation(v.where, spec);
  if (auto* list = std::get_if<ConfValue::List>(&v.value))
    for (auto& item : *list) RemapValue(item, spec);
  if (auto* map = std::get_if<ConfValue::Map>(&v.value))
    for (auto& [k, item] : *map) RemapValue(item, spec);
}

}  // namespace

Result<std::unique_ptr<Simulator>> Simulator::Create(ScenarioSpec spec, SchedulerConf conf,
                                                     PolicyProvider& provider,
                                                     SimulatorOptions options) {
  if (options.cycles < 1) return Error{"--cycles must be at least 1", SourceLocation{}};
  if (options.period <= 0) return Error{"--period must be positive", SourceLocation{}};
  std::unique_ptr<Simulator> sim(new Simulator(std::move(spec), std::move(conf), options));
  auto registry = ResolvePlugins(sim->conf_, provider);
  if (!registry) return registry.error();
  sim->registry_ = std::move(*registry);
  sim->calls_ = sim->state().calls;
  if (!sim->state().detached_pods.empty()) {
    // Pods of one missing group are tasks of one job without a PodGroup, as in Volcano's cache;
    // each keeps the status its phase gives (a Running pod stays Running, on no node).
    ClusterSpec detached;
    std::unordered_set<std::string> groups;
    for (PodSpec pod : sim->state().detached_pods) {
      pod.node.clear();
      if (groups.insert(pod.JobUid()).second) {
        PodGroupSpec g;
        g.name = pod.group;
        g.namespace_ = pod.namespace_;
        g.queue = "";  // no such queue: Link drops the job and keeps the task as one of no job
        detached.pod_groups.push_back(std::move(g));
      }
      detached.pods.push_back(std::move(pod));
    }
    auto built = BuildCluster(detached);
    if (!built) return built.error();
    sim->detached_ = std::move(*built);
  }
  return sim;
}

SimulatedCluster::SimulatedCluster(ScenarioSpec spec, bool trace)
    : spec_(std::move(spec)), trace_(trace) {
  if (!trace_) return;
  ClusterSpec& c = spec_.cluster;
  auto later = [&](TimeNs t) { return t != kUnsetTime && t > spec_.now; };
  std::vector<PodSpec> pods;
  for (PodSpec& p : c.pods) (later(p.creation_time) ? future_pods_ : pods).push_back(std::move(p));
  c.pods = std::move(pods);
  std::vector<PodGroupSpec> groups;
  for (PodGroupSpec& g : c.pod_groups)
    (later(g.creation_time) ? future_groups_ : groups).push_back(std::move(g));
  c.pod_groups = std::move(groups);
  auto by_time = [](const auto& a, const auto& b) { return a.creation_time < b.creation_time; };
  std::stable_sort(future_pods_.begin(), future_pods_.end(), by_time);
  std::stable_sort(future_groups_.begin(), future_groups_.end(), by_time);
  for (const PodSpec& p : future_pods_) ++future_pods_per_job_[p.JobUid()];
  for (const PodGroupSpec& g : c.pod_groups) NoteJob(g);
  // Jobs already running when the trace starts began at their pods' PodScheduled time.
  for (const PodSpec& p : c.pods) {
    if (p.phase != PodPhase::Running || p.node.empty()) continue;
    auto it = jobs_.find(p.JobUid());
    if (it == jobs_.end()) continue;
    TimeNs start = p.scheduled_at != 0 ? p.scheduled_at : spec_.now;
    if (!it->second.first_bind || start < *it->second.first_bind) it->second.first_bind = start;
  }
}

void SimulatedCluster::NoteJob(const PodGroupSpec& g) {
  JobRecord& r = jobs_[g.Uid()];
  r.uid = g.Uid();
  r.queue = g.queue;
  if (g.network_topology)
    r.topology = g.network_topology->mode == NetworkTopologyMode::Soft ? "soft" : "hard";
  // A PodGroup created at Go's zero time has no known arrival: it was there when the trace began.
  r.arrival = g.creation_time == kZeroTime ? spec_.now : g.creation_time;
}

void SimulatedCluster::Arrive(TimeNs now) {
  ClusterSpec& c = spec_.cluster;
  for (; next_group_ < future_groups_.size() && future_groups_[next_group_].creation_time <= now;
       ++next_group_) {
    NoteJob(future_groups_[next_group_]);
    c.pod_groups.push_back(std::move(future_groups_[next_group_]));
  }
  for (; next_pod_ < future_pods_.size() && future_pods_[next_pod_].creation_time <= now;
       ++next_pod_) {
    --future_pods_per_job_[future_pods_[next_pod_].JobUid()];
    c.pods.push_back(std::move(future_pods_[next_pod_]));
  }
}

std::optional<TimeNs> SimulatedCluster::NextEvent() const {
  std::optional<TimeNs> next;
  auto consider = [&](TimeNs t) {
    if (!next || t < *next) next = t;
  };
  if (next_pod_ < future_pods_.size()) consider(future_pods_[next_pod_].creation_time);
  if (next_group_ < future_groups_.size()) consider(future_groups_[next_group_].creation_time);
  for (const PodSpec& pod : spec_.cluster.pods) {
    if (pod.phase != PodPhase::Running || !pod.duration || pod.deleting) continue;
    TimeNs start = pod.started_at != 0 ? pod.started_at
                   : pod.scheduled_at != 0 ? pod.scheduled_at
                                           : spec_.now;
    consider(start + *pod.duration);
  }
  return next;
}

void SimulatedCluster::CompleteFinishedPods(TimeNs now) {
  for (PodSpec& pod : spec_.cluster.pods) {
    if (pod.phase != PodPhase::Running || !pod.duration || pod.deleting) continue;
    TimeNs start = pod.started_at != 0 ? pod.started_at
                   : pod.scheduled_at != 0 ? pod.scheduled_at
                                           : spec_.now;
    TimeNs end = start + *pod.duration;
    if (end > now) continue;
    pod.phase = PodPhase::Succeeded;
    completed_ = true;
    if (trace_) {
      TimeNs& last = last_finish_[pod.JobUid()];
      last = std::max(last, end);
    }
  }
}

void SimulatedCluster::DeleteFinishedJobs() {
  // Only a completion can finish a job.
  if (!completed_) return;
  completed_ = false;
  ClusterSpec& c = spec_.cluster;
  std::unordered_map<std::string, std::pair<int, int>> counts;  // job → (pods, finished)
  for (const PodSpec& pod : c.pods) {
    auto& [total, finished] = counts[pod.JobUid()];
    ++total;
    if (pod.phase == PodPhase::Succeeded || pod.phase == PodPhase::Failed) ++finished;
  }
  std::unordered_set<std::string> done;
  for (const auto& [job, n] : counts) {
    if (n.first == 0 || n.first != n.second) continue;
    if (auto f = future_pods_per_job_.find(job); f != future_pods_per_job_.end() && f->second > 0)
      continue;
    done.insert(job);
    auto r = jobs_.find(job);
    auto last = last_finish_.find(job);
    if (r != jobs_.end() && last != last_finish_.end()) r->second.completion = last->second;
  }
  if (done.empty()) return;
  changed_ = true;
  std::erase_if(c.pods, [&](const PodSpec& p) { return done.count(p.JobUid()) > 0; });
  std::erase_if(c.pod_groups, [&](const PodGroupSpec& g) { return done.count(g.Uid()) > 0; });
}

Result<Cluster> SimulatedCluster::Snapshot(TimeNs now) {
  CompleteFinishedPods(now);
  if (trace_) Arrive(now);
  return BuildCluster(spec_.cluster);
}

Result<SessionResult> Simulator::RunCycle() {
  const int index = next_index_;
  const TimeNs now = state().now + static_cast<TimeNs>(index) * options_.period;
  SessionHooks hooks;
  const bool trace = options_.trace();
  if (index == 0) hooks.after_open = first_hooks_.after_open;
  hooks.before_close = [this, index, trace](Session& ssn) {
    if (index == 0) {
      if (!calls_.empty()) RunCalls(ssn, calls_, detached_.orphan_tasks());
      if (first_hooks_.before_close) first_hooks_.before_close(ssn);
    }
    if (trace) ObserveSession(ssn);
  };
  auto result = kiln::RunCycle(cluster_, conf_, registry_, now, index,
                               index == 0 || trace ? &hooks : nullptr);
  if (!result) return result.error();
  ++next_index_;
  return result;
}

void Simulator::ObserveSession(Session& ssn) {
  // Each queue's deserved share as the first plugin that shows one computes it.
  deserved_.clear();
  for (const Queue* q : ssn.cluster().queues())
    if (std::optional<Resource> d = ShownDeserved(ssn, q)) deserved_[q->name] = *d;
  digests_.clear();
  if (options_.explain_pending <= 0) return;
  std::unordered_set<std::string> jobs_seen;
  for (const Task* t : ssn.cluster().tasks()) {
    if (static_cast<int>(digests_.size()) >= options_.explain_pending) break;
    if (t->status != TaskStatus::Pending || t->job == nullptr) continue;
    if (!jobs_seen.insert(t->job->uid).second) continue;
    digests_.push_back(DigestOf(ExplainTask(ssn, t)));
  }
}

PendingDigest DigestOf(const TaskExplain& te) {
  PendingDigest d;
  d.pod = te.key;
  auto reject = [&](std::string plugin, std::string reason) {
    for (PendingDigest::Rejection& r : d.rejections)
      if (r.plugin == plugin && r.reason == reason) {
        ++r.nodes;
        return;
      }
    d.rejections.push_back({std::move(plugin), std::move(reason), 1});
  };
  if (te.pre_predicate) {
    d.rejections.push_back({te.pre_predicate->plugin, te.pre_predicate->reason,
                            static_cast<int>(te.nodes.size())});
    return d;
  }
  std::vector<const NodeExplain*> passed;
  for (const NodeExplain& n : te.nodes) {
    if (n.code != StatusCode::Success) {
      std::string plugin;
      for (const PluginAnswer& a : n.predicates)
        if (a.code != StatusCode::Success) {
          plugin = a.plugin;
          break;
        }
      reject(std::move(plugin), n.reason);
    } else if (n.fits == "none") {
      std::string dims;
      for (const std::string& r : n.insufficient) dims += (dims.empty() ? "" : ", ") + r;
      reject("allocate", "Insufficient " + dims);
    } else {
      passed.push_back(&n);
    }
  }
  std::stable_sort(passed.begin(), passed.end(),
                   [](const NodeExplain* a, const NodeExplain* b) { return a->total > b->total; });
  for (size_t i = 0; i < passed.size() && i < 3; ++i)
    d.best_nodes.emplace_back(passed[i]->node, passed[i]->total);
  std::stable_sort(d.rejections.begin(), d.rejections.end(),
                   [](const auto& a, const auto& b) { return a.nodes > b.nodes; });
  return d;
}

void SimulatedCluster::Apply(const SessionResult& result) {
  ClusterSpec& c = spec_.cluster;
  changed_ = !result.binds.empty() || !result.evictions.empty();
  // PodGroup status written at close.
  for (PodGroupSpec& g : c.pod_groups) {
    auto it = result.pod_group_phases.find(g.Uid());
    if (it != result.pod_group_phases.end()) {
      PodGroupPhase phase = *ParsePodGroupPhase(it->second);
      if (phase != g.phase) changed_ = true;
      g.phase = phase;
    }
    if (auto c_it = result.conditions.find(g.Uid()); c_it != result.conditions.end()) {
      if (!SameConditions(g.conditions, c_it->second)) changed_ = true;
      g.conditions = c_it->second;
    }
  }
  // Evictions: the pod is deleted; a job controller recreates pods of defined PodGroups. A pod
  // that was already terminating is gone by the next cycle: one period stands for its grace
  // period. A plain pod's own group goes with it.
  // Rebuilding the pod list moves every pod: only done when a pod goes.
  const bool any_deleting =
      std::any_of(c.pods.begin(), c.pods.end(), [](const PodSpec& p) { return p.deleting; });
  if (!result.evictions.empty() || any_deleting) {
    std::unordered_set<std::string> implicit_groups;
    for (const PodGroupSpec& g : c.pod_groups)
      if (g.implicit) implicit_groups.insert(g.Uid());
    std::unordered_set<std::string> removed_groups;
    std::vector<PodSpec> kept;
    kept.reserve(c.pods.size());
    for (PodSpec& pod : c.pods) {
      bool evicted = !result.evictions.empty() && result.evictions.count(pod.Key()) > 0;
      if (pod.deleting) changed_ = true;
      if (!evicted && !pod.deleting) {
        kept.push_back(std::move(pod));
        continue;
      }
      if (!evicted || implicit_groups.count(pod.JobUid())) {
        if (implicit_groups.count(pod.JobUid())) removed_groups.insert(pod.JobUid());
        continue;
      }
      PodSpec fresh = std::move(pod);
      fresh.phase = PodPhase::Pending;
      fresh.node.clear();
      fresh.nominated_node.clear();
      fresh.deleting = false;
      fresh.scheduled_at = 0;
      fresh.started_at = 0;
      fresh.creation_time = result.time;
      kept.push_back(std::move(fresh));
    }
    c.pods = std::move(kept);
    std::erase_if(c.pod_groups,
                  [&](const PodGroupSpec& g) { return removed_groups.count(g.Uid()) > 0; });
  }
  // Binds: kubelet starts the pod on its node. Pipelined pods that evicted others are nominated.
  for (PodSpec& pod : c.pods) {
    if (result.binds.empty() && result.nominated.empty()) break;
    std::string key = pod.Key();
    if (auto n = result.nominated.find(key); n != result.nominated.end()) {
      if (pod.nominated_node != n->second) changed_ = true;
      pod.nominated_node = n->second;
    }
    auto it = result.binds.find(key);
    if (it == result.binds.end()) continue;
    // A pod is bound at most once: only a Pending pod without a node can have been bound.
    assert(pod.phase == PodPhase::Pending && pod.node.empty() && "pod bound twice");
    pod.nominated_node.clear();
    pod.node = it->second;
    pod.phase = PodPhase::Running;
    pod.scheduled_at = result.time;
    pod.started_at = result.time;
    // The binding's annotations land on the pod, as the API server copies them.
    if (auto a = result.pod_annotations.find(key); a != result.pod_annotations.end())
      for (const auto& [k, v] : a->second) pod.mutable_extras().annotations[k] = v;
    if (trace_) {
      auto j = jobs_.find(pod.JobUid());
      if (j != jobs_.end() && !j->second.first_bind) j->second.first_bind = result.time;
    }
  }
  if (trace_) DeleteFinishedJobs();
}

Result<SimulationResult> Simulator::RunTrace() {
  SimulationResult out;
  out.scenario = state().name;
  out.warnings = state().warnings;
  out.trace = true;
  const TimeNs start = state().now;
  TraceSummary& summary = out.summary;
  summary.start = start;
  int64_t tick = 0;
  while (true) {
    const TimeNs t = start + tick * options_.period;
    if (options_.until ? t > *options_.until : tick >= options_.cycles) {
      summary.stopped = options_.until ? "until" : "cycles";
      break;
    }
    next_index_ = static_cast<int>(tick);
    const uint64_t clock_uses = ClockUses();
    auto r = RunCycle();
    if (!r) return r.error();
    ++summary.sessions_run;
    summary.end = t;
    SessionMetrics m = MeasureCluster(state().cluster, t, deserved_);
    m.explained = std::move(digests_);
    digests_.clear();
    std::erase_if(m.explained,
                  [&](PendingDigest& d) {
                    auto it = r->unschedulable.find(d.pod);
                    if (it == r->unschedulable.end()) return true;
                    d.reason = it->second;
                    return false;
                  });
    const bool quiet = ClockUses() == clock_uses && !cluster_.changed();
    out.sessions.push_back(std::move(*r));
    out.metrics.push_back(std::move(m));
    if (!quiet) {
      ++tick;
      continue;
    }
    // Nothing changed and nothing read the clock: every period repeats this session until the
    // next arrival or completion.
    std::optional<TimeNs> next = cluster_.NextEvent();
    if (!next) {
      summary.stopped = "idle";
      break;
    }
    if (options_.every_period) {
      ++tick;
      continue;
    }
    int64_t k = (*next - start + options_.period - 1) / options_.period;
    k = std::max(k, tick + 1);
    // Periods past --until / --cycles are not skipped, they are not run at all.
    int64_t limit = options_.until ? (*options_.until - start) / options_.period + 1
                                   : static_cast<int64_t>(options_.cycles);
    summary.sessions_skipped += static_cast<int>(std::min(k, limit) - tick - 1);
    tick = k;
  }
  next_index_ = static_cast<int>(tick);
  out.calls = calls_;
  for (const auto& [uid, job] : cluster_.jobs()) summary.jobs.push_back(job);
  Summarize(out.metrics, options_.period, summary);
  return out;
}

Result<SimulationResult> Simulator::Run() {
  if (options_.trace()) return RunTrace();
  SimulationResult out;
  out.scenario = state().name;
  out.warnings = state().warnings;
  for (int i = 0; i < options_.cycles; ++i) {
    auto r = RunCycle();
    if (!r) return r.error();
    out.sessions.push_back(std::move(*r));
  }
  out.calls = calls_;
  return out;
}

std::vector<std::string> CheckExpectations(const ExpectSpec& expect, const SessionResult& got) {
  std::vector<std::string> diffs;
  auto compare_map = [&](std::string_view what, const std::map<std::string, std::string>& want,
                         const std::map<std::string, std::string>& have) {
    for (const auto& [k, v] : want) {
      auto it = have.find(k);
      if (it == have.end())
        diffs.push_back(fmt::format("{}: {}: expected {}, got nothing", what, k, v));
      else if (it->second != v)
        diffs.push_back(fmt::format("{}: {}: expected {}, got {}", what, k, v, it->second));
    }
    for (const auto& [k, v] : have)
      if (!want.count(k)) diffs.push_back(fmt::format("{}: {}: unexpected {}", what, k, v));
  };
  if (expect.binds) compare_map("binds", *expect.binds, got.binds);
  if (expect.bind_count && *expect.bind_count != static_cast<int64_t>(got.binds.size()))
    diffs.push_back(fmt::format("bindCount: expected {}, got {}", *expect.bind_count, got.binds.size()));
  if (expect.evictions) {
    for (const auto& k : *expect.evictions)
      if (!got.evictions.count(k)) diffs.push_back(fmt::format("evictions: {}: expected, not evicted", k));
    for (const auto& k : got.evictions)
      if (!expect.evictions->count(k)) diffs.push_back(fmt::format("evictions: {}: unexpected eviction", k));
  }
  if (expect.eviction_count && *expect.eviction_count != static_cast<int64_t>(got.evictions.size()))
    diffs.push_back(fmt::format("evictionCount: expected {}, got {}", *expect.eviction_count,
                                got.evictions.size()));
  if (expect.pipelined) compare_map("pipelined", *expect.pipelined, got.pipelined);
  if (expect.pod_group_phases) {
    // Only the listed PodGroups are checked.
    for (const auto& [k, v] : *expect.pod_group_phases) {
      auto it = got.pod_group_phases.find(k);
      if (it == got.pod_group_phases.end())
        diffs.push_back(fmt::format("podGroupPhases: {}: expected {}, got no phase (job not in the "
                                    "session)",
                                    k, v));
      else if (it->second != v)
        diffs.push_back(fmt::format("podGroupPhases: {}: expected {}, got {}", k, v, it->second));
    }
  }
  if (expect.unschedulable) compare_map("unschedulable", *expect.unschedulable, got.unschedulable);
  if (expect.pod_annotations)
    for (const auto& [pod, want] : *expect.pod_annotations) {
      std::map<std::string, std::string> have;
      if (auto it = got.pod_annotations.find(pod); it != got.pod_annotations.end())
        have.insert(it->second.begin(), it->second.end());
      compare_map(fmt::format("podAnnotations: {}", pod), want, have);
    }
  if (expect.bind_counts_by_leaf_hyper_node &&
      *expect.bind_counts_by_leaf_hyper_node != got.bind_counts_by_leaf_hyper_node)
    diffs.push_back(fmt::format("bindCountsByLeafHyperNode: expected [{}], got [{}]",
                                fmt::join(*expect.bind_counts_by_leaf_hyper_node, ", "),
                                fmt::join(got.bind_counts_by_leaf_hyper_node, ", ")));
  return diffs;
}

std::vector<std::string> CheckWarnings(const ExpectSpec& expect,
                                       const std::vector<ClusterWarning>& got) {
  std::vector<std::string> diffs;
  if (!expect.warnings) return diffs;
  const std::vector<std::string>& want = *expect.warnings;
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    if (i >= got.size())
      diffs.push_back(fmt::format("warnings: expected \"{}\", got nothing", want[i]));
    else if (i >= want.size())
      diffs.push_back(fmt::format("warnings: unexpected \"{}\"", got[i].message));
    else if (want[i] != got[i].message)
      diffs.push_back(fmt::format("warnings: expected \"{}\", got \"{}\"", want[i], got[i].message));
  }
  return diffs;
}

Result<SchedulerConf> ResolveScenarioConf(const ScenarioSpec& spec,
                                          const std::string* conf_override_text,
                                          const std::string& conf_override_file) {
  if (conf_override_text != nullptr)
    return ParseSchedulerConf(*conf_override_text, conf_override_file);
  if (!spec.has_conf) return ParseSchedulerConf(DefaultSchedulerConfText(), "<default scheduler.conf>");
  auto conf = ParseSchedulerConf(spec.conf_text, spec.file);
  if (!conf) return MapConfError(spec, conf.error());
  // Point plugin entries and their arguments at the scenario's lines, so later errors (unknown
  // plugin, a policy rejecting an argument) name the scenario file correctly.
  for (Tier& tier : conf->tiers)
    for (PluginOption& p : tier.plugins) {
      RemapLocation(p.where, spec);
      for (auto& [k, v] : p.arguments) RemapValue(v, spec);
    }
  return conf;
}

}  // namespace kiln
