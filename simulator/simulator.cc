#include "simulator/simulator.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <unordered_map>
#include <unordered_set>

#include "runtime/actions/action.h"
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
    ClusterSpec detached;
    for (PodSpec pod : sim->state().detached_pods) {
      pod.node.clear();
      pod.phase = PodPhase::Pending;
      PodGroupSpec g;
      g.name = pod.group;
      g.namespace_ = pod.namespace_;
      g.queue = "";  // no such queue: Link drops the job and keeps the task as one of no job
      detached.pod_groups.push_back(std::move(g));
      detached.pods.push_back(std::move(pod));
    }
    auto built = BuildCluster(detached);
    if (!built) return built.error();
    sim->detached_ = std::move(*built);
  }
  return sim;
}

void SimulatedCluster::CompleteFinishedPods(TimeNs now) {
  for (PodSpec& pod : spec_.cluster.pods) {
    if (pod.phase != PodPhase::Running || !pod.duration || pod.deleting) continue;
    TimeNs start = pod.started_at != 0 ? pod.started_at
                   : pod.scheduled_at != 0 ? pod.scheduled_at
                                           : spec_.now;
    if (start + *pod.duration <= now) pod.phase = PodPhase::Succeeded;
  }
}

Result<Cluster> SimulatedCluster::Snapshot(TimeNs now) {
  CompleteFinishedPods(now);
  return BuildCluster(spec_.cluster);
}

Result<SessionResult> Simulator::RunCycle() {
  const int index = next_index_;
  const TimeNs now = state().now + static_cast<TimeNs>(index) * options_.period;
  SessionHooks hooks;
  if (index == 0) {
    hooks.after_open = first_hooks_.after_open;
    hooks.before_close = [this](Session& ssn) {
      if (!calls_.empty()) RunCalls(ssn, calls_, detached_.orphan_tasks());
      if (first_hooks_.before_close) first_hooks_.before_close(ssn);
    };
  }
  auto result = kiln::RunCycle(cluster_, conf_, registry_, now, index, index == 0 ? &hooks : nullptr);
  if (!result) return result.error();
  ++next_index_;
  return result;
}

void SimulatedCluster::Apply(const SessionResult& result) {
  ClusterSpec& c = spec_.cluster;
  // PodGroup status written at close.
  for (PodGroupSpec& g : c.pod_groups) {
    auto it = result.pod_group_phases.find(g.Uid());
    if (it != result.pod_group_phases.end()) g.phase = *ParsePodGroupPhase(it->second);
    if (auto c_it = result.conditions.find(g.Uid()); c_it != result.conditions.end())
      g.conditions = c_it->second;
  }
  // Evictions: the pod is deleted; a job controller recreates pods of defined PodGroups. A pod
  // that was already terminating is gone by the next cycle: one period stands for its grace
  // period. A plain pod's own group goes with it.
  std::unordered_set<std::string> implicit_groups;
  for (const PodGroupSpec& g : c.pod_groups)
    if (g.implicit) implicit_groups.insert(g.Uid());
  std::unordered_set<std::string> removed_groups;
  std::vector<PodSpec> kept;
  kept.reserve(c.pods.size());
  for (PodSpec& pod : c.pods) {
    bool evicted = !result.evictions.empty() && result.evictions.count(pod.Key()) > 0;
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
  std::erase_if(c.pod_groups, [&](const PodGroupSpec& g) { return removed_groups.count(g.Uid()) > 0; });
  // Binds: kubelet starts the pod on its node. Pipelined pods that evicted others are nominated.
  for (PodSpec& pod : c.pods) {
    if (result.binds.empty() && result.nominated.empty()) break;
    std::string key = pod.Key();
    if (auto n = result.nominated.find(key); n != result.nominated.end()) pod.nominated_node = n->second;
    auto it = result.binds.find(key);
    if (it == result.binds.end()) continue;
    // A pod is bound at most once: only a Pending pod without a node can have been bound.
    assert(pod.phase == PodPhase::Pending && pod.node.empty() && "pod bound twice");
    pod.nominated_node.clear();
    pod.node = it->second;
    pod.phase = PodPhase::Running;
    pod.scheduled_at = result.time;
    pod.started_at = result.time;
  }
}

Result<SimulationResult> Simulator::Run() {
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
