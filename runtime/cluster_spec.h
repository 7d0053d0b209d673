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
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/hyper_node.h"
#include "runtime/model.h"
#include "runtime/resource.h"
#include "runtime/sparse_resource.h"
#include "runtime/status.h"

namespace kiln {

// The scheduler name Volcano answers to by default (its --scheduler-name).
inline constexpr std::string_view kDefaultSchedulerName = "volcano";

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
  // Sparse, as a pod's requests (runtime/sparse_resource.h): 10k nodes' specs were 4 MB of
  // zeros in dense Resources.
  SparseResource allocatable;  // with `pods` (110 when the scenario omits it)
  SparseResource capacity;     // = allocatable when omitted
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

// nodeinfo.volcano.sh/v1alpha1 Numatopology: metadata.name (the node's name) and the spec's
// policies, resReserved, numares and cpuDetail. Only the `cpu` entry of numares is read (the
// one resource Volcano's numa-aware plugin has a hint provider for); other entries are kept.
struct NumatopologySpec {
  struct NumaResource {
    std::set<int64_t> allocatable;  // the cpuset text ("0-3,8") parsed
    int64_t capacity = 0;
  };
  struct CpuInfo {
    int64_t numa = 0;
    int64_t socket = 0;
    int64_t core = 0;
  };
  std::string name;
  StringMap policies;  // CPUManagerPolicy, TopologyManagerPolicy
  Resource res_reserved;
  std::map<std::string, NumaResource, std::less<>> numares;
  std::map<int64_t, CpuInfo> cpu_detail;  // by CPU id
  SourceLocation where;
};

struct PodGroupSpec {
  std::string name;
  std::string namespace_ = "default";
  std::string queue = "default";
  int32_t min_member = 1;
  std::map<std::string, int32_t, std::less<>> min_task_member;
  std::optional<SparseResource> min_resources;
  std::string priority_class_name;
  PodGroupPhase phase = PodGroupPhase::Pending;
  StringMap annotations;
  StringMap labels;
  TimeNs creation_time = kUnsetTime;
  bool implicit = false;  // created by the loader for a pod without `group`
  // Status conditions written by earlier sessions (multi-cycle runs; not read from YAML).
  std::vector<PodGroupCondition> conditions;
  std::optional<NetworkTopologySpec> network_topology;  // spec.networkTopology
  std::vector<SubGroupPolicySpec> sub_group_policy;     // spec.subGroupPolicy
  SourceLocation where;

  std::string Uid() const { return namespace_ + "/" + name; }
};

// A pod's Kubernetes placement constraints. Most pods have none, and a PodSpec holding them by
// value carried ~300 bytes of empty containers: a tenth of a 100k-pod scenario's memory
// (docs/performance-history.md, "Smaller tasks and pod specs"). Pods without any share one empty
// PodPlacement.
struct PodPlacement {
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  Affinity affinity;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<HostPort> host_ports;

  bool empty() const;
  static const std::shared_ptr<const PodPlacement>& None();
};

// What a pod's template gives it and the scheduler only reads: its task name, container
// limits, priority class name, annotations, image, scheduler name and scheduling gates. A
// generated or real cluster's pods mostly leave these at their defaults or share them with the
// other pods of their job, so a PodSpec points to them: pods at the defaults share one value
// (a 100k-pod scenario's specs are 24 MB smaller, docs/performance.md, "Memory").
struct PodExtras {
  std::string task;  // volcano.sh/task-spec
  // The container's resources.limits (scenario `limits`; in kiln serve the sum over the pod's
  // containers), where a plugin reads them (QoS class, device sharing). Never added to requests.
  SparseResource limits;
  std::string priority_class_name;
  StringMap annotations;
  std::string image;  // the single container's image ("" = none given)
  // spec.schedulerName. A pod of another scheduler is no task of any job; on a node it still
  // uses the node (volcano-semantics.md §7.4).
  std::string scheduler_name = std::string(kDefaultSchedulerName);
  std::vector<std::string> scheduling_gates;  // spec.schedulingGates names

  static const std::shared_ptr<const PodExtras>& None();
};

struct PodSpec {
  std::string name;
  std::string namespace_ = "default";
  std::string group;  // PodGroup name (the loader fills it for a pod without one)
  // The single container's requests (without the hidden pods: 1). Sparse: a cluster holds one
  // spec per pod (runtime/sparse_resource.h).
  SparseResource requests;
  std::optional<int32_t> priority;
  PodPhase phase = PodPhase::Pending;
  std::string node;
  // status.nominatedNodeName: set by the scheduler for a pipelined pod that caused evictions
  // (Kiln extension key `nominatedNodeName`; multi-cycle runs keep it until the pod is bound).
  std::string nominated_node;
  StringMap labels;
  // Node selector, tolerations, affinity, spread constraints, host ports: never null; shared by
  // copies of the spec, so write only through mutable_placement().
  std::shared_ptr<const PodPlacement> placement = PodPlacement::None();
  // Task name, limits, priority class name, annotations, image, scheduler name, scheduling
  // gates: never null; shared by copies of the spec, so write only through mutable_extras().
  std::shared_ptr<const PodExtras> extras = PodExtras::None();
  // Set by CompleteCluster: scheduler_name() is not one of the scheduler's names.
  bool foreign = false;
  bool deleting = false;
  // QoS class Guaranteed as the pod's source judged it over all its containers (kiln serve: the
  // decoder, DecodedPod::qos_guaranteed); unset: judged from this spec's one container's requests
  // and limits (a scenario pod).
  std::optional<bool> qos_guaranteed;
  std::optional<PreemptionPolicy> preemption_policy;
  TimeNs creation_time = kUnsetTime;
  TimeNs scheduled_at = 0;  // 0 = no PodScheduled condition
  std::optional<DurationNs> duration;  // multi-cycle: runs this long, then Succeeds
  // Multi-cycle bookkeeping: when the simulator started it running (0 = not by the simulator).
  TimeNs started_at = 0;
  SourceLocation where;

  const StringMap& node_selector() const { return placement->node_selector; }
  const std::vector<Toleration>& tolerations() const { return placement->tolerations; }
  const Affinity& affinity() const { return placement->affinity; }
  const std::vector<TopologySpreadConstraint>& topology_spread_constraints() const {
    return placement->topology_spread_constraints;
  }
  const std::vector<HostPort>& host_ports() const { return placement->host_ports; }
  // This spec's own placement to edit (a copy when it is shared).
  PodPlacement& mutable_placement();

  const std::string& task() const { return extras->task; }
  const SparseResource& limits() const { return extras->limits; }
  const std::string& priority_class_name() const { return extras->priority_class_name; }
  const StringMap& annotations() const { return extras->annotations; }
  const std::string& image() const { return extras->image; }
  const std::string& scheduler_name() const { return extras->scheduler_name; }
  const std::vector<std::string>& scheduling_gates() const { return extras->scheduling_gates; }
  // This spec's own extras to edit (a copy when they are shared).
  PodExtras& mutable_extras();

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
  std::vector<HyperNodeSpec> hyper_nodes;  // topology.volcano.sh HyperNodes (runtime/hyper_node.h)
  std::vector<NumatopologySpec> numatopologies;  // one per node, named after it (numa-aware)
};

// A reference in the cluster that does not resolve, and what the scheduler does about it
// (volcano-semantics.md §7). A live cluster has these every day, so they are facts to report, not
// reasons to refuse the cluster.
struct ClusterWarning {
  std::string object;   // "pod c1/p1", "podGroup c1/pg", "queue q", "priority class high"
  std::string message;  // the whole sentence, naming the object, the reference and the outcome
  SourceLocation where;  // the object's position in a scenario file (empty for a live cluster)
};

struct CompleteOptions {
  TimeNs now = 0;  // creationTimestamp of objects that have none
  // The names the scheduler answers to; pods naming another scheduler are not its tasks.
  std::vector<std::string> scheduler_names = {std::string(kDefaultSchedulerName)};
  // Volcano's scheduler creates this queue at start-up when it does not exist.
  std::string default_queue = "default";
};

// Defaults and reference resolution shared by every cluster source (the scenario loader, the
// Kubernetes decoder), done the way Volcano's cache does (volcano-semantics.md §1.3, §7):
//   * queue `default_queue` exists (added, `implicit`, when absent);
//   * pods of other schedulers are marked `foreign` (one warning per scheduler name);
//   * a pod of ours without `group` gets its own one-pod PodGroup `podgroup-<pod uid>` in the
//     default queue (minMember 1, minResources = its requests), as Volcano's controller makes;
//   * objects without a creationTimestamp get `now`;
//   * the global default PriorityClass is the LAST one with globalDefault (warning when several);
//   * a pod without `priority` takes its class's value (or the global default's when it names
//     none), as the Priority admission plugin fills spec.priority; likewise preemptionPolicy;
//   * dangling references become warnings and are handled as Volcano's cache does: a class that
//     does not exist (pod: priority stays as written; PodGroup: the global default, else 0), a
//     pod's PodGroup or a PodGroup's queue that does not exist (the job is not scheduled; its pods
//     on nodes still use them), a node that does not exist (the pod uses no node), a parent queue
//     that does not exist or a parent cycle (the queue becomes a root).
//   * HyperNode members that select nothing, HyperNodes claimed twice and cycles (the
//     HyperNodes are then not ready: jobs with a network topology wait; runtime/hyper_node.h).
// Idempotent: running it again on its own output adds nothing and warns the same.
std::vector<ClusterWarning> CompleteCluster(ClusterSpec& cluster, const CompleteOptions& options);

// Volcano's task status for a pod (§3.1).
TaskStatus TaskStatusOf(const PodSpec& pod);

// The session snapshot of `cluster` (§1.3, §3.1): task status from pod phase, node and deletion;
// running pods occupy their nodes; terminated pods occupy nothing. Expects CompleteCluster's
// output: pods of other schedulers and pods whose PodGroup or queue is missing only occupy their
// nodes (they are no task of the session); a pod on a node that does not exist occupies nothing.
Result<Cluster> BuildCluster(const ClusterSpec& cluster);

}  // namespace kiln
