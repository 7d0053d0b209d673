#include "runtime/simulator.h"

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

// Volcano reads these annotations/labels (§3.1, §3.2).
constexpr std::string_view kPreemptableKey = "volcano.sh/preemptable";
constexpr std::string_view kTaskSpecKey = "volcano.sh/task-spec";
constexpr std::string_view kTaskPriorityKey = "volcano.sh/task-priority";

// Annotation first, then label (Volcano's GetPodPreemptable and friends).
const std::string* AnnotationOrLabel(const StringMap& annotations, const StringMap& labels,
                                     std::string_view key) {
  if (auto it = annotations.find(key); it != annotations.end()) return &it->second;
  if (auto it = labels.find(key); it != labels.end()) return &it->second;
  return nullptr;
}

// Go's strconv.ParseBool.
std::optional<bool> ParseGoBool(std::string_view t) {
  for (std::string_view s : {"1", "t", "T", "TRUE", "true", "True"})
    if (t == s) return true;
  for (std::string_view s : {"0", "f", "F", "FALSE", "false", "False"})
    if (t == s) return false;
  return std::nullopt;
}

// Plugins Volcano registers (volcano-semantics.md §1.2): a conf naming one Kiln has no policy for
// gets its own message, as an action Kiln lacks does.
bool IsVolcanoPluginName(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "drf",         "gang",       "deviceshare", "predicates", "priority",
      "nodeorder",   "conformance", "binpack",    "resource-strategy-fit", "tdm",
      "overcommit",  "sla",        "task-topology", "numa-aware", "cdp",
      "rescheduling", "usage",     "pdb",         "nodegroup",  "network-topology-aware",
      "proportion",  "capacity",   "extender",    "resourcequota"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

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

TaskStatus TaskStatusOf(const PodSpec& pod) {
  switch (pod.phase) {
    case PodPhase::Running:
      return pod.deleting ? TaskStatus::Releasing : TaskStatus::Running;
    case PodPhase::Pending:
      if (pod.deleting) return TaskStatus::Releasing;
      return pod.node.empty() ? TaskStatus::Pending : TaskStatus::Bound;
    case PodPhase::Succeeded:
      return TaskStatus::Succeeded;
    case PodPhase::Failed:
      return TaskStatus::Failed;
    case PodPhase::Unknown:
      return TaskStatus::Unknown;
  }
  return TaskStatus::Unknown;
}

Result<Cluster> BuildCluster(const ScenarioSpec& spec) {
  const ClusterSpec& c = spec.cluster;
  Cluster cluster;
  for (const auto& pc : c.priority_classes) {
    PriorityClass& p = cluster.NewPriorityClass();
    p.name = pc.name;
    p.value = pc.value;
    p.global_default = pc.global_default;
    p.preemption_policy = pc.preemption_policy;
  }
  for (const auto& qs : c.queues) {
    Queue& q = cluster.NewQueue();
    q.name = qs.name;
    q.weight = qs.weight;
    q.priority = qs.priority;
    q.reclaimable = qs.reclaimable;
    q.state = qs.state;
    q.creation_time = qs.creation_time;
    q.has_capability = qs.capability.has_value();
    if (qs.capability) q.capability = *qs.capability;
    q.has_deserved = qs.deserved.has_value();
    if (qs.deserved) q.deserved = *qs.deserved;
    q.has_guarantee = qs.guarantee.has_value();
    if (qs.guarantee) q.guarantee = *qs.guarantee;
    q.parent_name = qs.parent;
    q.annotations = qs.annotations;
    if (auto it = qs.annotations.find("volcano.sh/hierarchy"); it != qs.annotations.end())
      q.hierarchy = it->second;
    if (auto it = qs.annotations.find("volcano.sh/hierarchy-weights"); it != qs.annotations.end())
      q.hierarchy_weights = it->second;
    q.node_group_affinity = qs.node_group_affinity;
    q.node_group_anti_affinity = qs.node_group_anti_affinity;
  }
  for (const auto& ns : c.nodes) {
    Node& n = cluster.NewNode();
    n.name = ns.name;
    n.allocatable = ns.allocatable;
    n.capacity = ns.capacity;
    n.labels = ns.labels;
    // The kubelet always labels its node with the hostname; topology keys rely on it.
    n.labels.try_emplace("kubernetes.io/hostname", ns.name);
    n.annotations = ns.annotations;
    n.taints = ns.taints;
    n.images = ns.images;
    n.unschedulable = ns.unschedulable;
    if (ns.usage) {
      n.has_usage = true;
      n.cpu_usage = ns.usage->cpu;
      n.memory_usage = ns.usage->memory;
      n.metrics_time = ns.usage->metrics_time;
    }
  }
  for (const auto& gs : c.pod_groups) {
    Job& j = cluster.NewJob();
    j.uid = gs.Uid();
    j.name = gs.name;
    j.namespace_ = gs.namespace_;
    j.queue_name = gs.queue;
    j.priority_class_name = gs.priority_class_name;
    j.min_available = gs.min_member;
    j.phase = gs.phase;
    j.annotations = gs.annotations;
    j.labels = gs.labels;
    j.creation_time = gs.creation_time;
    j.conditions = gs.conditions;
    j.has_min_resources = gs.min_resources.has_value();
    if (gs.min_resources) j.min_resources = *gs.min_resources;
    for (const auto& [role, min] : gs.min_task_member) {
      j.task_min_available[role] = min;
      j.task_min_available_total += min;
    }
    // PodGroup preemptable: annotation then label, default false (§3.2).
    if (const std::string* v = AnnotationOrLabel(gs.annotations, gs.labels, kPreemptableKey))
      j.preemptable = ParseGoBool(*v).value_or(false);
  }
  for (const auto& ps : c.pods) {
    Task& t = cluster.NewTask();
    t.uid = ps.Uid();
    t.name = ps.name;
    t.namespace_ = ps.namespace_;
    t.job_uid = ps.JobUid();
    t.status = TaskStatusOf(ps);
    // Terminated pods hold no node resources: Volcano's cache adds only non-terminated tasks to
    // their node.
    if (!CompletedStatus(t.status)) t.node_name = ps.node;
    t.role = ps.task;
    if (t.role.empty())
      if (const std::string* v = AnnotationOrLabel(ps.annotations, ps.labels, kTaskSpecKey)) t.role = *v;
    // pod.spec.priority, or 1 when nil; the task-priority annotation overrides it.
    t.priority = ps.priority.value_or(1);
    if (auto it = ps.annotations.find(kTaskPriorityKey); it != ps.annotations.end())
      if (auto p = yaml::ParseIntText(it->second)) t.priority = *p;
    t.preemption_policy = ps.preemption_policy.value_or(PreemptionPolicy::PreemptLowerPriority);
    if (const std::string* v = AnnotationOrLabel(ps.annotations, ps.labels, kPreemptableKey))
      t.preemptable = ParseGoBool(*v).value_or(true);
    t.deleting = ps.deleting;
    t.nominated_node_name = ps.nominated_node;
    t.creation_time = ps.creation_time;
    t.scheduled_at = ps.scheduled_at;
    t.priority_class_name = ps.priority_class_name;
    t.labels = ps.labels;
    t.annotations = ps.annotations;
    t.node_selector = ps.node_selector;
    t.tolerations = ps.tolerations;
    t.affinity = ps.affinity;
    t.topology_spread_constraints = ps.topology_spread_constraints;
    t.host_ports = ps.host_ports;
    if (!ps.image.empty()) t.images = {ps.image};
    // A gated pod waits outside scheduling until its gates are removed (Volcano's SchGated).
    t.sch_gated = !ps.scheduling_gates.empty() && ps.phase == PodPhase::Pending;
    t.SetRequests(ps.requests);
  }
  if (Status s = cluster.Link(); !s) return s.error();
  return cluster;
}

Result<std::unique_ptr<Simulator>> Simulator::Create(ScenarioSpec spec, SchedulerConf conf,
                                                     PolicyProvider& provider,
                                                     SimulatorOptions options) {
  if (options.cycles < 1) return Error{"--cycles must be at least 1", SourceLocation{}};
  if (options.period <= 0) return Error{"--period must be positive", SourceLocation{}};
  std::unique_ptr<Simulator> sim(new Simulator(std::move(spec), std::move(conf), options));
  std::vector<std::string> names = provider.Names();
  std::vector<std::string_view> name_views(names.begin(), names.end());
  std::vector<std::string> wanted;
  for (const Tier& tier : sim->conf_.tiers)
    for (const PluginOption& option : tier.plugins) wanted.push_back(option.name);
  provider.Prefetch(wanted);
  for (const Tier& tier : sim->conf_.tiers) {
    for (const PluginOption& option : tier.plugins) {
      auto builder = provider.Prepare(option);
      if (!builder) return builder.error();
      if (*builder == nullptr) {
        if (IsVolcanoPluginName(option.name))
          return Error{fmt::format("plugin `{}` is a Volcano plugin that Kiln does not provide (no "
                                   "policy of that name)",
                                   option.name),
                       option.where};
        return Error{fmt::format("unknown plugin `{}`{}", option.name,
                                 yaml::DidYouMean(option.name, name_views)),
                     option.where};
      }
      if (Status s = sim->registry_.Register(option.name, **builder); !s) return s.error();
    }
  }
  // Actions were validated by the conf loader; a conf built in code may still name anything.
  for (const std::string& action : sim->conf_.actions)
    if (FindAction(action) == nullptr)
      return Error{fmt::format("unknown action `{}`", action), SourceLocation{sim->conf_.source_file}};
  return sim;
}

void Simulator::CompleteFinishedPods(TimeNs now) {
  for (PodSpec& pod : spec_.cluster.pods) {
    if (pod.phase != PodPhase::Running || !pod.duration || pod.deleting) continue;
    TimeNs start = pod.started_at != 0 ? pod.started_at
                   : pod.scheduled_at != 0 ? pod.scheduled_at
                                           : spec_.now;
    if (start + *pod.duration <= now) pod.phase = PodPhase::Succeeded;
  }
}

Result<SessionResult> Simulator::RunCycle() {
  const int index = next_index_;
  const TimeNs now = spec_.now + static_cast<TimeNs>(index) * options_.period;
  CompleteFinishedPods(now);

  auto cluster = BuildCluster(spec_);
  if (!cluster) return cluster.error();

  SessionResult result;
  result.index = index;
  result.time = now;
  auto start = std::chrono::steady_clock::now();
  {
    Session ssn(std::move(*cluster), conf_, now, fmt::format("session-{}", index));
    if (Status s = ssn.Open(registry_); !s) return s.error();
    for (const std::string& name : conf_.actions) {
      const Action* action = FindAction(name);
      assert(action != nullptr);  // checked by Create
      action->Execute(ssn);
    }
    ssn.Close();
    result.duration_micros = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();

    const Decisions& d = ssn.decisions();
    for (const auto& b : d.binds) {
      result.binds[b.task->Key()] = b.node->name;
      result.bind_order.push_back(b.task->Key());
    }
    for (const auto& e : d.evictions) result.evictions.insert(e.task->Key());
    for (const auto& p : d.pipelined) {
      result.pipelined[p.task->Key()] = p.node->name;
      if (p.task->eviction_occurred) result.nominated[p.task->Key()] = p.node->name;
    }
    for (const auto& [task, reason] : d.unschedulable) result.unschedulable[task->Key()] = reason;
    for (const auto& [job, phase] : d.phases) {
      result.pod_group_phases[job->uid] = std::string(ToString(phase));
      if (!job->conditions.empty()) result.conditions[job->uid] = job->conditions;
    }
    result.faults = d.faults;
  }
  Apply(result);
  ++next_index_;
  return result;
}

void Simulator::Apply(const SessionResult& result) {
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
  out.scenario = spec_.name;
  for (int i = 0; i < options_.cycles; ++i) {
    auto r = RunCycle();
    if (!r) return r.error();
    out.sessions.push_back(std::move(*r));
  }
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
