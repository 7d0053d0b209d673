#pragma once
// The cluster as plain objects: what a cluster source (the simulator's scenario, the Kubernetes
// binding's informer cache) knows about each priority class, queue, node, PodGroup, pod, PDB and
// ResourceQuota, in Kubernetes/Volcano terms. BuildCluster turns it into the session's model the
// way Volcano's cache snapshot does (volcano-semantics.md §1.3, §3): both clusters share that one
// path, so `kiln simulate` and `kiln serve` see the same model for the same objects.
//
// UIDs follow the scenario contract: pod `<namespace>-<name>`, job `<namespace>/<podgroup>`.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model.h"
#include "runtime/resource.h"
#include "runtime/status.h"

namespace kiln {

// creationTimestamp not written (the loader then sets the scenario's `now`).
inline constexpr TimeNs kUnsetTime = INT64_MIN;

enum class PodPhase : uint8_t { Pending, Running, Succeeded, Failed, Unknown };
std::string_view ToString(PodPhase p);

struct PriorityClassSpec {
  std::string name;
  int32_t value = 0;
  bool global_default = false;
  PreemptionPolicy preemption_policy = PreemptionPolicy::PreemptLowerPriority;
  SourceLocation where;
};

struct QueueSpec {
  std::string name;
  int64_t weight = 1;
  std::optional<Resource> capability;
  std::optional<Resource> deserved;
  std::optional<Resource> guarantee;
  std::string parent;
  int64_t priority = 0;
  bool reclaimable = true;
  QueueState state = QueueState::Open;
  StringMap annotations;
  StringMap labels;
  bool has_affinity = false;  // `affinity:` given and not null (Volcano's non-nil spec.affinity)
  NodeGroupAffinity node_group_affinity;
  NodeGroupAffinity node_group_anti_affinity;
  TimeNs creation_time = kUnsetTime;
  bool implicit = false;  // the `default` queue the loader added
  SourceLocation where;
};

struct NodeUsageSpec {
  double cpu = 0;     // percent
  double memory = 0;  // percent
  TimeNs metrics_time = 0;
};

struct NodeSpec {
  std::string name;
  Resource allocatable;  // with `pods` (110 when the scenario omits it)
  Resource capacity;     // = allocatable when omitted
  StringMap labels;
  StringMap annotations;
  std::vector<Taint> taints;
  // status.images: every name of an image the node holds → its size in bytes.
  std::map<std::string, int64_t, std::less<>> images;
  bool unschedulable = false;
  std::optional<NodeUsageSpec> usage;
  TimeNs creation_time = kUnsetTime;
  SourceLocation where;
};

struct PodGroupSpec {
  std::string name;
  std::string namespace_ = "default";
  std::string queue = "default";
  int32_t min_member = 1;
  std::map<std::string, int32_t, std::less<>> min_task_member;
  std::optional<Resource> min_resources;
  std::string priority_class_name;
  PodGroupPhase phase = PodGroupPhase::Pending;
  StringMap annotations;
  StringMap labels;
  TimeNs creation_time = kUnsetTime;
  bool implicit = false;  // created by the loader for a pod without `group`
  // Status conditions written by earlier sessions (multi-cycle runs; not read from YAML).
  std::vector<PodGroupCondition> conditions;
  SourceLocation where;

  std::string Uid() const { return namespace_ + "/" + name; }
};

struct PodSpec {
  std::string name;
  std::string namespace_ = "default";
  std::string group;  // PodGroup name (the loader fills it for a pod without one)
  std::string task;   // volcano.sh/task-spec
  Resource requests;  // the single container's requests (without the hidden pods: 1)
  std::string priority_class_name;
  std::optional<int32_t> priority;
  PodPhase phase = PodPhase::Pending;
  std::string node;
  // status.nominatedNodeName: set by the scheduler for a pipelined pod that caused evictions
  // (Kiln extension key `nominatedNodeName`; multi-cycle runs keep it until the pod is bound).
  std::string nominated_node;
  StringMap labels;
  StringMap annotations;
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  Affinity affinity;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<HostPort> host_ports;
  std::string image;  // the single container's image ("" = none given)
  std::vector<std::string> scheduling_gates;  // spec.schedulingGates names
  std::optional<PreemptionPolicy> preemption_policy;
  TimeNs creation_time = kUnsetTime;
  TimeNs scheduled_at = 0;  // 0 = no PodScheduled condition
  bool deleting = false;
  std::optional<DurationNs> duration;  // multi-cycle: runs this long, then Succeeds
  // Multi-cycle bookkeeping: when the simulator started it running (0 = not by the simulator).
  TimeNs started_at = 0;
  SourceLocation where;

  std::string Uid() const { return namespace_ + "-" + name; }
  std::string Key() const { return namespace_ + "/" + name; }
  std::string JobUid() const { return namespace_ + "/" + group; }
};

struct ClusterSpec {
  std::vector<PriorityClassSpec> priority_classes;
  std::vector<QueueSpec> queues;
  std::vector<NodeSpec> nodes;
  std::vector<PodGroupSpec> pod_groups;
  std::vector<PodSpec> pods;
  std::vector<PodDisruptionBudget> pdbs;
  std::vector<ResourceQuota> resource_quotas;
};

// Volcano's task status for a pod (§3.1).
TaskStatus TaskStatusOf(const PodSpec& pod);

// The session snapshot of `cluster` (§1.3, §3.1): task status from pod phase, node and deletion;
// running pods occupy their nodes; terminated pods occupy nothing.
Result<Cluster> BuildCluster(const ClusterSpec& cluster);

}  // namespace kiln
