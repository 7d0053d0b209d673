#include "runtime/cluster_spec.h"

#include <string>

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
}  // namespace

std::string_view ToString(PodPhase p) {
  switch (p) {
    case PodPhase::Pending: return "Pending";
    case PodPhase::Running: return "Running";
    case PodPhase::Succeeded: return "Succeeded";
    case PodPhase::Failed: return "Failed";
    case PodPhase::Unknown: return "Unknown";
  }
  return "Unknown";
}

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

Result<Cluster> BuildCluster(const ClusterSpec& c) {
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
    q.has_affinity = qs.has_affinity;
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
  // PDBs and ResourceQuotas are plain cluster facts the pdb and resourcequota policies read.
  for (const auto& p : c.pdbs) cluster.NewPdb() = p;
  for (const auto& q : c.resource_quotas) cluster.NewResourceQuota() = q;
  if (Status s = cluster.Link(); !s) return s.error();
  return cluster;
}

}  // namespace kiln
