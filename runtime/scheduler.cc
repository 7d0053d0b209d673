#include "runtime/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <string_view>
#include <unordered_map>

#include "runtime/actions/action.h"
#include "runtime/coarse_clock.h"
#include "runtime/elapsed.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/invariants.h"
#include "runtime/reason_codes.h"
#include "runtime/session.h"
#include "runtime/yaml_util.h"

namespace kiln {

namespace {

bool IsVolcanoPluginName(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "drf",         "gang",       "deviceshare", "predicates", "priority",
      "nodeorder",   "conformance", "binpack",    "resource-strategy-fit", "tdm",
      "overcommit",  "sla",        "task-topology", "numa-aware", "cdp",
      "rescheduling", "usage",     "pdb",         "nodegroup",  "network-topology-aware",
      "proportion",  "capacity",   "extender",    "resourcequota"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace

Result<PluginRegistry> ResolvePlugins(const SchedulerConf& conf, PolicyProvider& provider) {
  PluginRegistry registry;
  std::vector<std::string> names = provider.Names();
  std::vector<std::string_view> name_views(names.begin(), names.end());
  std::vector<std::string> wanted;
  for (const Tier& tier : conf.tiers)
    for (const PluginOption& option : tier.plugins) wanted.push_back(option.name);
  provider.Prefetch(wanted);
  for (const Tier& tier : conf.tiers) {
    for (const PluginOption& option : tier.plugins) {
      auto builder = provider.Prepare(option);
      if (!builder) return builder.error();
      if (*builder == nullptr) {
        if (IsVolcanoPluginName(option.name))
          return Error{fmt::format("plugin `{}` is a Volcano plugin that Kiln does not provide (no "
                                   "policy of that name)",
                                   option.name),
                       option.where};
        // A pack's plugins are named pack/plugin: the bare name is the usual slip.
        for (const std::string& name : names)
          if (name.size() > option.name.size() + 1 && name.ends_with("/" + option.name))
            return Error{fmt::format("unknown plugin `{}`; did you mean `{}`? (a pack's plugins "
                                     "are named pack/plugin)",
                                     option.name, name),
                         option.where};
        return Error{fmt::format("unknown plugin `{}`{}", option.name,
                                 yaml::DidYouMean(option.name, name_views)),
                     option.where};
      }
      if (Status s = registry.Register(option.name, **builder); !s) return s.error();
    }
  }
  // Actions were validated by the conf loader; a conf built in code may still name anything.
  for (const std::string& action : conf.actions)
    if (FindAction(action) == nullptr)
      return Error{fmt::format("unknown action `{}`", action), SourceLocation{conf.source_file}};
  return registry;
}

Result<SessionResult> RunSession(Cluster cluster, const SchedulerConf& conf,
                                 const PluginRegistry& registry, TimeNs now, int index,
                                 const SessionHooks* hooks) {
  SessionResult result;
  result.index = index;
  result.time = now;
  for (const Task* t : cluster.tasks())
    if (t->status == TaskStatus::Pending) ++result.pending_tasks;
  auto start = std::chrono::steady_clock::now();
  CoarseClockTicker ticker;  // handler calls read the clock twice each
  Session ssn(std::move(cluster), conf, now, fmt::format("session-{}", index));
  if (Status s = ssn.Open(registry); !s) return s.error();
  result.open_micros = MicrosSince(start);
  // Each queue's deserved as the plugins computed it at open, as Volcano's proportion and capacity
  // record volcano_queue_deserved_* in OnSessionOpen (not the Queue spec's `deserved`).
  std::unordered_map<const Queue*, Resource> deserved;
  for (const Queue* q : ssn.cluster().queues())
    if (std::optional<Resource> r = ShownDeserved(ssn, q)) deserved.emplace(q, *r);
  if (hooks != nullptr && hooks->after_open) hooks->after_open(ssn);
  AdmissionSink admissions(&result.admission_refusals);  // enqueue's refusals, this thread
  for (const std::string& name : conf.actions) {
    const Action* action = FindAction(name);
    assert(action != nullptr);  // checked by ResolvePlugins
    auto action_start = std::chrono::steady_clock::now();
    if (InvariantChecker* checker = ssn.invariants()) checker->BeginAction(name);
    action->Execute(ssn);
    if (InvariantChecker* checker = ssn.invariants()) checker->AfterAction();
    result.action_micros.emplace_back(name, MicrosSince(action_start));
  }
  if (InvariantChecker* checker = ssn.invariants()) result.invariant_violations = checker->violations();
  if (hooks != nullptr && hooks->before_close) hooks->before_close(ssn);
  auto close_start = std::chrono::steady_clock::now();
  ssn.Close();
  result.close_micros = MicrosSince(close_start);
  result.duration_micros = MicrosSince(start);
  auto results_start = std::chrono::steady_clock::now();

  const Decisions& d = ssn.decisions();
  result.bind_order.reserve(d.binds.size());
  for (const auto& b : d.binds) {
    result.binds[b.task->Key()] = b.node->name;
    result.bind_order.push_back(b.task->Key());
  }
  for (const auto& e : d.evictions) result.evictions.insert(e.task->Key());
  if (std::map<const Task*, StringMap> annotated = ssn.pod_annotations(); !annotated.empty())
    for (const auto& b : d.binds)
      if (auto it = annotated.find(b.task); it != annotated.end())
        result.pod_annotations[b.task->Key()] = it->second;
  for (const auto& p : d.pipelined) {
    result.pipelined[p.task->Key()] = p.node->name;
    if (p.task->eviction_occurred) result.nominated[p.task->Key()] = p.node->name;
  }
  for (const auto& [task, reason] : d.unschedulable) {
    result.unschedulable[task->Key()] = reason;
    result.unschedulable_codes[task->Key()] = UnschedulableCodes(*task);
  }
  if (const HyperNodeTree* tree = ssn.cluster().hyper_nodes()) {
    for (const Job* job : ssn.cluster().jobs())
      if (job->HasNetworkTopology() && job->allocated_hyper_node != nullptr)
        result.allocated_hyper_nodes[job->uid] = job->allocated_hyper_node->name;
    std::map<const HyperNode*, int64_t> per_leaf;
    for (const auto& b : d.binds) {
      Node* node = b.node;
      ++per_leaf[tree->LowestCovering(std::span<Node* const>(&node, 1))];
    }
    for (const auto& [hn, count] : per_leaf) result.bind_counts_by_leaf_hyper_node.push_back(count);
    std::sort(result.bind_counts_by_leaf_hyper_node.begin(),
              result.bind_counts_by_leaf_hyper_node.end());
  }
  // Nominations of sub-jobs that still exist (a job gone from the cluster takes its own along).
  if (const auto& nominated = ssn.cluster().nominated_hyper_nodes(); !nominated.empty()) {
    for (const Job* job : ssn.cluster().jobs()) {
      if (auto it = nominated.find(job->uid); it != nominated.end())
        result.nominated_hyper_nodes.insert(*it);
      for (const auto& sub : job->sub_jobs)
        if (auto it = nominated.find(sub->uid); it != nominated.end())
          result.nominated_hyper_nodes.insert(*it);
    }
  }
  for (const auto& [job, phase] : d.phases) {
    result.pod_group_phases[job->uid] = std::string(ToString(phase));
    // Moved, not copied: the session's model ends with this function, and a copy of every
    // job's conditions would add to the run's peak memory.
    if (!job->conditions.empty()) result.conditions[job->uid] = std::move(job->conditions);
  }
  result.faults = d.faults;
  for (const Session::HandlerUse& h : ssn.HandlerCoverage())
    result.handlers.push_back({h.plugin, std::string(Info(h.point).handler), h.called});
  result.fault_points = d.fault_points;
  result.preemption_attempts = d.preemption_attempts;
  for (const auto& t : d.plugin_timings)
    result.plugin_timings.push_back(
        {t.plugin, t.open ? "OnSessionOpen" : "OnSessionClose", t.micros});
  result.bound_created.reserve(d.binds.size());
  for (const auto& b : d.binds) result.bound_created.push_back(b.task->creation_time);
  for (const auto& [task, reason] : d.unschedulable)
    if (task->job != nullptr) ++result.unschedulable_tasks_per_job[task->job->uid];
  for (const Queue* q : ssn.cluster().queues()) {
    SessionResult::QueueUsage u;
    u.name = q->name;
    u.weight = q->weight;
    u.allocated_milli_cpu = q->allocated.cpu();
    u.allocated_memory = q->allocated.memory();
    Resource request;
    for (const Job* j : q->jobs) request.Add(j->total_request);
    u.request_milli_cpu = request.cpu();
    u.request_memory = request.memory();
    if (auto it = deserved.find(q); it != deserved.end()) {
      u.has_deserved = true;
      u.deserved_milli_cpu = it->second.cpu();
      u.deserved_memory = it->second.memory();
    }
    if (q->has_capability) {
      u.capability_milli_cpu = q->capability.cpu();
      u.capability_memory = q->capability.memory();
    }
    result.queues.push_back(std::move(u));
  }
  result.results_micros = MicrosSince(results_start);
  return result;
}

Result<SessionResult> RunCycle(ClusterBinding& binding, const SchedulerConf& conf,
                               const PluginRegistry& registry, TimeNs now, int index,
                               const SessionHooks* hooks) {
  auto start = std::chrono::steady_clock::now();
  auto cluster = binding.Snapshot(now);
  if (!cluster) return cluster.error();
  const int64_t snapshot_micros = MicrosSince(start);
  cluster->nominated_hyper_nodes() = binding.nominated_hyper_nodes;
  auto result = RunSession(std::move(*cluster), conf, registry, now, index, hooks);
  if (!result) return result.error();
  result->snapshot_micros = snapshot_micros;
  binding.nominated_hyper_nodes = result->nominated_hyper_nodes;
  binding.Apply(*result);
  return result;
}

}  // namespace kiln
