#pragma once
// The scheduler's view of the cluster (volcano-semantics.md §3): Task (a pod), Job (a PodGroup and
// its tasks), Node, Queue, PriorityClass, and the Cluster snapshot that owns them.
//
// The Cluster gives every object a stable address and a dense index (0..n-1 per kind), so policies
// and actions keep per-session arrays keyed by object. Objects reference each other by pointer
// (task.job, task.node, job.queue, queue.parent); the names the simulator fills in (job_uid,
// node_name, queue_name, parent_name) are resolved once by Cluster::Link().
//
// Fields read by policies are listed once in runtime/abi.h; the scalar and reference ones are
// direct members so JIT code loads them at fixed offsets. Keep their types in sync with the kinds
// there (static_asserts in abi.h check it).

#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/fit_error.h"
#include "runtime/name_index.h"
#include "runtime/name_table.h"
#include "runtime/resource.h"
#include "runtime/shared_value.h"
#include "runtime/slab.h"
#include "runtime/status.h"

namespace kiln {

struct Task;
struct Job;
struct SubJob;
struct Node;
struct Queue;
struct HyperNode;    // runtime/hyper_node.h
class HyperNodeTree;  // runtime/hyper_node.h

// Nanoseconds since the Unix epoch; 0 = unset.
using TimeNs = int64_t;
// Go's zero time.Time ("0001-01-01T00:00:00Z"), what Volcano holds for a creationTimestamp nobody
// set: before every other time, so it orders first; time arithmetic on it saturates as Go's
// time.Sub does. (INT64_MIN itself is the scenario's "not written", see cluster_spec.h.)
inline constexpr TimeNs kZeroTime = INT64_MIN + 1;
using DurationNs = int64_t;

using StringMap = std::map<std::string, std::string, std::less<>>;

// ---------------------------------------------------------------------------------------------
// Enums

// Volcano's TaskStatus bit flags (§3.1).
enum class TaskStatus : uint32_t {
  Pending = 1,
  Allocated = 2,
  Pipelined = 4,
  Binding = 8,
  Bound = 16,
  Running = 32,
  Releasing = 64,
  Succeeded = 128,
  Failed = 256,
  Unknown = 512,
};
inline constexpr int kTaskStatusCount = 10;
// 0..9: the bit position, used to index per-status counters.
constexpr int StatusSlot(TaskStatus s) { return std::countr_zero(static_cast<uint32_t>(s)); }
constexpr TaskStatus StatusFromSlot(int slot) { return static_cast<TaskStatus>(1u << slot); }
constexpr uint32_t operator|(TaskStatus a, TaskStatus b) {
  return static_cast<uint32_t>(a) | static_cast<uint32_t>(b);
}
constexpr uint32_t operator|(uint32_t a, TaskStatus b) { return a | static_cast<uint32_t>(b); }
constexpr bool InMask(TaskStatus s, uint32_t mask) {
  return (static_cast<uint32_t>(s) & mask) != 0;
}
inline constexpr uint32_t kAllocatedStatusMask =
    TaskStatus::Bound | TaskStatus::Binding | TaskStatus::Running | TaskStatus::Allocated;
inline constexpr uint32_t kPreemptableStatusMask = TaskStatus::Bound | TaskStatus::Running;
inline constexpr uint32_t kCompletedStatusMask = TaskStatus::Succeeded | TaskStatus::Failed;
inline constexpr uint32_t kScheduledStatusMask =
    TaskStatus::Running | TaskStatus::Bound | TaskStatus::Failed | TaskStatus::Succeeded;
constexpr bool AllocatedStatus(TaskStatus s) { return InMask(s, kAllocatedStatusMask); }
constexpr bool PreemptableStatus(TaskStatus s) { return InMask(s, kPreemptableStatusMask); }
constexpr bool CompletedStatus(TaskStatus s) { return InMask(s, kCompletedStatusMask); }
constexpr bool ScheduledStatus(TaskStatus s) { return InMask(s, kScheduledStatusMask); }
std::string_view ToString(TaskStatus s);
std::optional<TaskStatus> ParseTaskStatus(std::string_view s);

enum class PodGroupPhase : uint32_t { Pending, Running, Unknown, Inqueue, Completed };
std::string_view ToString(PodGroupPhase p);
std::optional<PodGroupPhase> ParsePodGroupPhase(std::string_view s);  // "" → Pending

enum class QueueState : uint32_t { Open, Closed, Closing, Unknown };
std::string_view ToString(QueueState s);
std::optional<QueueState> ParseQueueState(std::string_view s);

enum class PreemptionPolicy : uint32_t { PreemptLowerPriority, Never };

// ---------------------------------------------------------------------------------------------
// Kubernetes shapes used by predicates and scoring policies.

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Toleration {
  std::string key;
  std::string op = "Equal";  // Equal | Exists
  std::string value;
  std::string effect;  // "" = all effects
  std::optional<int64_t> toleration_seconds;
};

// LabelSelectorRequirement / NodeSelectorRequirement. op: In, NotIn, Exists, DoesNotExist, Gt, Lt.
struct SelectorRequirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<SelectorRequirement> match_expressions;
};

struct NodeSelectorTerm {
  std::vector<SelectorRequirement> match_expressions;
  std::vector<SelectorRequirement> match_fields;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
};

struct NodeAffinity {
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms (ORed); nullopt = not set.
  std::optional<std::vector<NodeSelectorTerm>> required;
  std::vector<PreferredSchedulingTerm> preferred;
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;
};

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAffinity> pod_anti_affinity;
};

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::string when_unsatisfiable = "DoNotSchedule";  // or ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;
  std::vector<std::string> match_label_keys;
  std::string node_affinity_policy;  // Honor | Ignore ("" = Honor)
  std::string node_taints_policy;    // Honor | Ignore ("" = Ignore)
};

struct HostPort {
  int32_t host_port = 0;
  int32_t container_port = 0;
  std::string protocol = "TCP";
  std::string host_ip;
};

struct PodGroupCondition {
  std::string type;    // Unschedulable | Scheduled
  std::string status;  // True | False
  std::string transition_id;
  TimeNs last_transition_time = 0;
  std::string reason;
  std::string message;
};

// PodGroup spec.networkTopology (volcano.sh/apis scheduling/v1beta1 NetworkTopologySpec).
enum class NetworkTopologyMode : uint8_t { Hard, Soft };
std::string_view ToString(NetworkTopologyMode m);

struct NetworkTopologySpec {
  NetworkTopologyMode mode = NetworkTopologyMode::Hard;  // the CRD's default
  std::optional<int64_t> highest_tier_allowed;
  std::string highest_tier_name;  // "" = none
};

// PodGroup spec.subGroupPolicy entry (SubGroupPolicySpec), as written. At session open each job's
// tasks are sorted into sub-jobs by these policies (Job::sub_jobs, runtime/sub_job.h).
struct SubGroupPolicySpec {
  std::string name;
  std::optional<NetworkTopologySpec> network_topology;
  std::optional<int32_t> sub_group_size;  // nil = 1 (the CRD's default)
  std::optional<int32_t> min_sub_groups;  // nil = 0
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> match_label_keys;
};
using SubGroupPolicy = SubGroupPolicySpec;  // the policy language's name (runtime/abi.h)

struct PriorityClass {
  std::string name;
  int32_t value = 0;
  bool global_default = false;
  PreemptionPolicy preemption_policy = PreemptionPolicy::PreemptLowerPriority;
};

struct PodDisruptionBudget {
  std::string name;
  std::string namespace_;
  std::optional<std::string> min_available;    // int or percentage, as written
  std::optional<std::string> max_unavailable;  // int or percentage, as written
  LabelSelector selector;
  int32_t disruptions_allowed = 0;
  std::vector<std::string> disrupted_pods;  // pod names listed in status.disruptedPods
};

struct ResourceQuota {
  std::string name;
  std::string namespace_;
  Resource hard;  // presence bits = the names listed in hard (cpu and memory always present)
  Resource used;
  // The names listed in hard, as written: tells `cpu: "0"` (nothing allowed) from no cpu limit,
  // which `hard` cannot, since a Resource always carries cpu and memory.
  std::vector<std::string> hard_names;
};

// ---------------------------------------------------------------------------------------------
// The pod's placement shape: what Kubernetes predicates and scorers read of a pod and nothing in a
// session changes. A Task holds it behind a shared pointer instead of by value: it is ~400 bytes
// of mostly empty containers per task, and a snapshot builds 100k tasks
// (docs/performance-history.md, "Smaller tasks and pod specs"). Pods with none of it share one
// empty shape.

struct PodShape {
  StringMap labels;
  StringMap annotations;
  StringMap node_selector;
  std::vector<Toleration> tolerations;
  Affinity affinity;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<HostPort> host_ports;
  std::vector<std::string> images;
  // The container limits (PodSpec::limits): what device sharing reads (deviceshare.policy).
  Resource limits;

  bool empty() const;
  // The one shape every pod without labels, annotations, selectors, tolerations, affinity,
  // spread constraints, host ports and images points to.
  static const std::shared_ptr<const PodShape>& Empty();
};

// ---------------------------------------------------------------------------------------------
// Task (TaskInfo, §3.1). Scalar and reference fields first (ABI, direct loads).

// The annotation or label by which a pod or PodGroup says whether it may be preempted (read into
// Task and Job::preemptable; gang eviction also asks whether a PodGroup says it at all).
inline constexpr std::string_view kPreemptableKey = "volcano.sh/preemptable";

// What a discarded statement had done with a task (Volcano's TransactionContext at discard time).
struct TaskTransaction {
  std::string reason;  // the operation's reason ("allocate", "preempt", ...)
  TaskStatus status = TaskStatus::Pending;
  std::string node;
};

struct Task {
  int64_t index = -1;  // dense id in the Cluster
  TaskStatus status = TaskStatus::Pending;
  PreemptionPolicy preemption_policy = PreemptionPolicy::PreemptLowerPriority;
  int64_t priority = 1;  // pod.spec.priority, or 1 when nil; annotation volcano.sh/task-priority
  bool preemptable = true;  // annotation/label volcano.sh/preemptable
  bool best_effort = false;  // init_resreq().IsEmpty()
  bool sch_gated = false;
  bool eviction_occurred = false;
  bool deleting = false;  // has a deletionTimestamp
  // Any pod affinity or anti-affinity term, required or preferred (set from `affinity()` by
  // Cluster::Link; the node-side index keys on it).
  bool has_pod_affinity_terms = false;
  // Kubernetes QoS class Guaranteed: the container limits cpu and memory and requests exactly
  // its limits (v1qos.GetPodQOS; the numa-aware policy places only such pods).
  bool qos_guaranteed = false;
  TimeNs creation_time = 0;
  TimeNs scheduled_at = 0;  // PodScheduled=True lastTransitionTime; 0 = none
  Job* job = nullptr;
  Node* node = nullptr;  // the node it is placed on (session view), nullptr when none
  // Resreq, including the hidden pods: 1, never null. Volcano's InitResreq differs from Resreq only
  // for pods with init containers; a Kiln pod has one container, so the two are always equal and
  // one is stored (init_resreq() below; the policy fields `resreq` and `init_resreq` read it
  // through this pointer, runtime/abi.h access Ref). Tasks of one request shape share one value
  // (BuildCluster makes one per shape): a model of 100k tasks holds a few dozen Resources of 264
  // bytes instead of 100k. Set through SetRequests/SetResreq, edit through mutable_resreq().
  const Resource* resreq_ = SharedEmpty<Resource>().get();
  std::shared_ptr<const Resource> resreq_owner_ = SharedEmpty<Resource>();

  std::string uid;   // "<namespace>-<name>" in scenarios
  std::string name;  // pod name
  std::string namespace_;
  std::string job_uid;    // "<namespace>/<podgroup>"
  std::string role;       // volcano.sh/task-spec ("" when none)
  std::string node_name;  // pod.spec.nodeName (session view)
  std::string nominated_node_name;
  std::string priority_class_name;
  // Never null; shared with other tasks and sessions, so write only through mutable_shape().
  std::shared_ptr<const PodShape> shape = PodShape::Empty();
  // Volcano's LastTransaction: what a discarded statement had done with this task, read by
  // TaskSchedulingReason; null until a statement is discarded (most tasks never are).
  std::shared_ptr<const TaskTransaction> last_transaction;

  // The status and node TaskSchedulingReason reads: the last transaction's, else the current.
  TaskStatus TransactionStatus() const {
    return last_transaction ? last_transaction->status : status;
  }
  const std::string& TransactionNode() const {
    return last_transaction ? last_transaction->node : node_name;
  }
  const Resource& resreq() const { return *resreq_; }
  const Resource& init_resreq() const { return *resreq_; }
  // This task's own resreq to edit (a copy when it is shared): for tests and tools.
  Resource& mutable_resreq();
  const StringMap& labels() const { return shape->labels; }
  const StringMap& annotations() const { return shape->annotations; }
  const StringMap& node_selector() const { return shape->node_selector; }
  const std::vector<Toleration>& tolerations() const { return shape->tolerations; }
  const Affinity& affinity() const { return shape->affinity; }
  const std::vector<TopologySpreadConstraint>& topology_spread_constraints() const {
    return shape->topology_spread_constraints;
  }
  const std::vector<HostPort>& host_ports() const { return shape->host_ports; }
  const std::vector<std::string>& images() const { return shape->images; }
  const Resource& limits() const { return shape->limits; }
  // A shape of this task's own to edit (a copy when it is shared): for tests and tools that
  // build tasks by hand; BuildCluster builds each pod's shape once.
  PodShape& mutable_shape();

  // Volcano's GetPodResourceRequest: the container requests + the hidden pods: 1.
  static Resource ResreqOf(const Resource& container_requests);
  // Sets resreq = ResreqOf(container_requests) and best_effort.
  void SetRequests(const Resource& container_requests);
  // Sets resreq to a value shared with other tasks (pods: 1 included) and best_effort.
  void SetResreq(std::shared_ptr<const Resource> resreq);
  // "<namespace>/<name>" as decisions print it.
  std::string Key() const { return namespace_ + "/" + name; }

  // ---- bookkeeping owned by Job/Node (not for policies) ----
  int32_t role_slot = 0;        // index into job->roles
  int32_t job_status_pos = -1;  // position in job->by_status[StatusSlot(status)]
  int32_t node_pos = -1;        // position in node->tasks
  int32_t affinity_pos = -1;    // position in node->affinity_tasks
  TaskStatus node_status = TaskStatus::Pending;  // status the node accounted the task with

  // Volcano's TaskInfo.JobAllocatedHyperNode: while allocate places a job with a network
  // topology, the HyperNode its sub-job's tasks are under so far (network-topology-aware scores
  // nodes by it); null otherwise.
  HyperNode* job_allocated_hyper_node = nullptr;
  // The sub-job the task belongs to (Volcano's JobInfo.TaskToSubJob), set at session open for
  // jobs that have sub-jobs (runtime/sub_job.h); null otherwise.
  SubJob* sub_job = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Job (JobInfo over a PodGroup, §3.2).

struct Job {
  // Per-role counters (minTaskMember checks). Role "" is the tasks without a role.
  struct Role {
    std::string name;
    int32_t min_available = 0;  // TaskMinAvailable[name], 0 when not listed
    std::array<int32_t, kTaskStatusCount> status_count{};
    int32_t pending_empty_init = 0;  // Pending tasks whose InitResreq is empty
  };

  int64_t index = -1;
  int64_t priority = 0;       // PodGroup priorityClassName's value (or global default, or 0)
  int64_t min_available = 0;  // PodGroup spec.minMember
  PodGroupPhase phase = PodGroupPhase::Pending;
  bool preemptable = false;  // PodGroup annotation/label volcano.sh/preemptable
  bool has_min_resources = false;
  bool has_waiting_time = false;
  TimeNs creation_time = 0;
  TimeNs schedule_start_time = 0;
  DurationNs waiting_time = 0;  // sla: volcano.sh/sla-waiting-time
  Queue* queue = nullptr;
  Resource allocated;      // Σ resreq of AllocatedStatus tasks
  Resource total_request;  // Σ resreq of all tasks
  Resource min_resources;  // PodGroup spec.minResources (empty when nil)

  std::string uid;  // "<namespace>/<name>"
  std::string name;
  std::string namespace_;
  std::string queue_name;
  std::string priority_class_name;
  StringMap annotations;
  StringMap labels;
  std::map<std::string, int32_t, std::less<>> task_min_available;  // minTaskMember
  int64_t task_min_available_total = 0;  // Σ minTaskMember
  std::vector<PodGroupCondition> conditions;
  std::vector<Task*> tasks;  // every task, in cluster order
  // Volcano's TaskStatusIndex: tasks by status slot (unordered within a slot).
  std::array<std::vector<Task*>, kTaskStatusCount> by_status;
  std::vector<Role> roles;

  // ---- counters, kept by AddTask/UpdateTaskStatus (and Cluster::Link); policies load them
  // directly (runtime/abi.h), so they are plain int64 members ----
  int64_t task_num = 0;             // tasks.size()
  int64_t ready_num = 0;            // Bound+Binding+Running+Allocated+Succeeded
  int64_t waiting_num = 0;          // Pipelined
  int64_t valid_num = 0;            // AllocatedStatus ∪ Succeeded ∪ Pipelined ∪ Pending
  int64_t pending_best_effort = 0;  // Pending tasks whose InitResreq is empty
  // Roles short of their minTaskMember, one count per check (CheckTaskValid, CheckTaskReady,
  // CheckTaskPipelined, CheckTaskStarving): a check passes while its count is 0.
  int64_t roles_short_valid = 0;
  int64_t roles_short_ready = 0;
  int64_t roles_short_pipelined = 0;
  int64_t roles_short_starving = 0;
  // Per task index: the nodes that rejected it in this session (allocate fills, close reads).
  std::unordered_map<int64_t, FitErrors> nodes_fit_errors;
  std::string job_fit_error;  // JobFitErrors
  mutable std::string fit_error_cache;  // storage behind kiln_job_fit_error

  // ---- counters (O(1)) ----
  int32_t Count(TaskStatus s) const { return static_cast<int32_t>(by_status[StatusSlot(s)].size()); }
  int64_t TaskCount() const { return task_num; }
  int64_t ReadyTaskNum() const { return ready_num; }
  int64_t WaitingTaskNum() const { return waiting_num; }
  int64_t ValidTaskNum() const { return valid_num; }
  int64_t PendingBestEffortTaskNum() const { return pending_best_effort; }
  // Ready + PendingBestEffort >= MinAvailable
  bool IsReady() const { return ready_num + pending_best_effort >= min_available; }
  // Waiting + Ready + PendingBestEffort >= MinAvailable
  bool IsPipelined() const { return waiting_num + ready_num + pending_best_effort >= min_available; }
  // Waiting + Ready < MinAvailable
  bool IsStarving() const { return waiting_num + ready_num < min_available; }
  bool IsPending() const { return phase == PodGroupPhase::Pending; }
  // The per-role (minTaskMember) checks. Each is skipped (passes; for starving: holds) when
  // minMember is below the sum of the role minima, exactly as Volcano does.
  bool RoleChecksSkipped() const { return min_available < task_min_available_total; }
  bool CheckTaskValid() const { return RoleChecksSkipped() || roles_short_valid == 0; }
  bool CheckTaskReady() const { return RoleChecksSkipped() || roles_short_ready == 0; }
  bool CheckTaskPipelined() const { return RoleChecksSkipped() || roles_short_pipelined == 0; }
  bool CheckTaskStarving() const { return RoleChecksSkipped() || roles_short_starving != 0; }
  const Resource& GetMinResources() const { return min_resources; }
  Resource GetElasticResources() const { return allocated.ExceededPart(min_resources); }
  const std::vector<Task*>& TasksWith(TaskStatus s) const { return by_status[StatusSlot(s)]; }

  // Volcano's TaskSchedulingReason: reason "Schedulable"/"Unschedulable"/<status>, the message a
  // pod condition would carry, and the node to nominate (pipelined after evictions).
  struct SchedulingReason {
    std::string reason;
    std::string message;
    std::string nominated_node;
  };
  SchedulingReason TaskSchedulingReason(const Task* t) const;
  // Volcano's JobInfo.FitError(): "pod group is not ready, 1 Pending, 2 minAvailable; Pending:
  // 1 Unschedulable. Origin reason is p1: 0/3 nodes are available: 3 Insufficient cpu."
  std::string FitError() const;

  // ---- mutation (keeps every counter in sync; used by Cluster::Link and the session) ----
  void AddTask(Task* t);
  void UpdateTaskStatus(Task* t, TaskStatus status);
  // Finds or creates the role slot for `role`.
  int32_t RoleSlot(std::string_view role);

  // Replaces the condition of the same type or appends it (UpdatePodGroupCondition).
  void SetCondition(PodGroupCondition c);
  const PodGroupCondition* FindCondition(std::string_view type) const;

  // ---- network topology (runtime/hyper_node.h) ----
  // As written on the PodGroup.
  std::optional<NetworkTopologySpec> network_topology;
  std::vector<SubGroupPolicySpec> sub_group_policy;
  // Set at session open as Volcano's adjustNetworkTopologySpec leaves the job: highestTierName
  // translated into a tier, soft mode turned into hard mode up to the top HyperNode's tier.
  // hard_topology: the job is placed by allocate's HyperNode search (Volcano's
  // IsHardTopologyMode: hard mode with a tier); highest_tier_allowed is then that tier.
  bool hard_topology = false;
  int64_t highest_tier_allowed = 0;
  // The HyperNode the job's allocated tasks are under (Volcano's JobInfo.AllocatedHyperNode):
  // recovered at open from its placed tasks, widened by allocate; null when none.
  HyperNode* allocated_hyper_node = nullptr;
  // The same for the job's default sub-job (Volcano's SubJobInfo.AllocatedHyperNode): allocate
  // narrows it to the HyperNode the sub-job's tasks went to.
  HyperNode* sub_job_allocated_hyper_node = nullptr;
  // Why allocate's HyperNode search left the job unplaced this session ("" when it placed it or
  // did not search): Kiln's addition to the job's FitError and to its pending pods' unschedulable
  // message (runtime/topology_trail.h).
  std::string topology_reason;
  // Volcano's WithNetworkTopology: the job's own network topology.
  bool HasNetworkTopology() const { return network_topology.has_value(); }

  // ---- sub-jobs (runtime/sub_job.h; Volcano's JobInfo.SubJobs) ----
  // Built at session open for a job with a subGroupPolicy or a network topology: one sub-job per
  // policy and distinct values of its matchLabelKeys, plus the default sub-job (uid == job uid)
  // holding every task no policy matched. Empty for other jobs (they are placed as one gang).
  std::vector<std::unique_ptr<SubJob>> sub_jobs;
  // Volcano's ContainsSubJobPolicy.
  bool HasSubGroupPolicy() const { return !sub_group_policy.empty(); }
  // Volcano's ContainsNetworkTopology / ContainsHardTopology: the job's or any sub-job's.
  bool ContainsNetworkTopology() const;
  bool ContainsHardTopology() const;
  // The default sub-job (its uid is the job's), or null when the job has no sub-jobs.
  SubJob* DefaultSubJob() const;
};

// A sub-group gang of a job (Volcano's SubJobInfo): the tasks one subGroupPolicy entry matched
// with one set of matchLabelKeys values, or the job's default sub-job.
struct SubJob {
  std::string uid;    // Volcano's SubJobID: the job uid (default), else "<job uid>/<policy>-<values>"
  std::string group;  // the subGroupPolicy name; "" for the default sub-job
  Job* job = nullptr;
  const SubGroupPolicySpec* policy = nullptr;  // null for the default sub-job
  int64_t min_available = 1;  // subGroupSize (default sub-job: minMember without a policy, else 1)
  int64_t match_index = 0;    // the first matchLabelKeys value as an integer, 0 when it is not one
  int64_t priority = 0;       // the highest priority of its tasks
  std::vector<Task*> tasks;   // in cluster order
  // The network topology (the policy's; the job's for the default sub-job), normalised at open
  // like the job's (runtime/hyper_node.cc): hard_topology and its tier.
  std::optional<NetworkTopologySpec> network_topology;
  bool hard_topology = false;
  int64_t highest_tier_allowed = 0;
  // Volcano's SubJobInfo.AllocatedHyperNode: where its allocated tasks are (recovered at open,
  // narrowed by allocate); NominatedHyperNode: the HyperNode gangpreempt/gangreclaim chose for it
  // (allocate clears it when the sub-job's placement is committed).
  HyperNode* allocated_hyper_node = nullptr;
  HyperNode* nominated_hyper_node = nullptr;

  bool IsDefault() const { return policy == nullptr; }
  bool HasNetworkTopology() const { return network_topology.has_value(); }
  // Volcano's counters over the sub-job's tasks (O(tasks)).
  int64_t ReadyTaskNum() const;
  int64_t WaitingTaskNum() const;
  int64_t PendingBestEffortTaskNum() const;
  int64_t AllocatedTaskNum() const;
  bool IsReady() const { return ReadyTaskNum() + PendingBestEffortTaskNum() >= min_available; }
  bool IsPipelined() const {
    return WaitingTaskNum() + ReadyTaskNum() + PendingBestEffortTaskNum() >= min_available;
  }
  // Σ InitResreq of its Pending tasks (GetMinResources).
  Resource PendingRequest() const;
};

// Adds (sign 1) or removes (sign -1) a pod's request to a Kubernetes NonZeroRequested sum: a pod
// asking for no cpu counts 100m, for no memory 200Mi.
void AddNonZeroRequest(Resource& sum, const Resource& request, double sign);

// ---------------------------------------------------------------------------------------------
// Node (NodeInfo, §3.3).

// One CPU of a node's Numatopology (nodeinfo.volcano.sh/v1alpha1): spec.cpuDetail's NUMA node,
// socket and core of the CPU, and whether spec.numares.cpu.allocatable lists it.
struct NumaCpu {
  int64_t id = 0;
  int64_t numa = 0;
  int64_t socket = 0;
  int64_t core = 0;
  bool allocatable = false;
};

// A node's Numatopology as the numa-aware policy reads it (Volcano's NumatopoInfo): the kubelet's
// policies (CPUManagerPolicy, TopologyManagerPolicy), resReserved, and the CPUs in id order.
struct NumaTopology {
  StringMap policies;
  Resource reserved;
  std::vector<NumaCpu> cpus;
};

struct Node {
  // Members are in the order allocate's search reads them (a Cluster's nodes start on a cache
  // line: runtime/slab.h): the first line holds the index, the flags, and the task and taint
  // lists' headers; then the fit cache, then Idle and the Resources the scorers read. At 10k
  // nodes every node the search visits is cold, so each line it needs is a miss.
  int64_t index = -1;
  bool unschedulable = false;
  bool has_usage = false;
  // Bumped by every change a node_order handler could observe (its tasks, their statuses, its
  // Resources): cached scores (runtime/score_cache.h) remember the version they were computed
  // at. Sits in the padding before `tasks`, so the hot first line is unchanged.
  uint32_t version = 0;
  std::vector<Task*> tasks;  // tasks placed on the node (session view), unordered
  std::vector<Taint> taints;
  // Idle + Releasing − Pipelined per resource id, the way FitsFutureIdle compares it (pipelined
  // scalars count only when idle or releasing has scalars: Volcano's Sub on a nil map). Kept by
  // Link/AddTask/RemoveTask so that the fit check run for every (task, node) pair reads one cache
  // line instead of three Resources 264 bytes apart.
  std::array<double, kMaxResources> fit_future{};
  Resource idle;
  Resource allocatable;
  // Σ over `tasks` of each pod's non-zero cpu and memory request (Kubernetes' NodeInfo
  // NonZeroRequested): a pod asking for no cpu counts 100m, for no memory 200Mi. Kept by
  // AddTask/RemoveTask so that scorers read it instead of walking every pod per (pod, node).
  Resource nonzero_requested;
  Resource used;
  Resource pipelined;  // next to `used`: nodeorder's balanced scorer reads both
  Resource releasing;
  Resource capacity;
  TimeNs metrics_time = 0;
  double cpu_usage = 0;     // percent, average over the metrics period
  double memory_usage = 0;  // percent

  std::string name;
  StringMap labels;
  StringMap annotations;
  std::map<std::string, int64_t, std::less<>> images;  // image name → size bytes
  // The subset of `tasks` with pod (anti-)affinity terms, and the cluster-wide list of nodes
  // where it is non-empty (Kubernetes' HavePodsWithAffinityList). Inter-pod affinity checks walk
  // these instead of every pod of the cluster; both are unordered, so use them for counts.
  std::vector<Task*> affinity_tasks;
  std::vector<Node*>* affinity_nodes = nullptr;  // owned by the Cluster; null for a free node
  int32_t affinity_node_pos = -1;

  // The lowest-tier HyperNode holding the node (runtime/hyper_node.h: LeafOf), or null.
  HyperNode* hyper_node = nullptr;

  // The node's Numatopology (null when the cluster has none for it); shared between sessions.
  std::shared_ptr<const NumaTopology> numa;

  // Idle + Releasing − Pipelined.
  Resource FutureIdle() const;
  // Recomputes fit_future from idle, releasing and pipelined.
  void RefreshFitFuture();

  // Accounting per §3.3 by the task's current status. AddTask fails (Error) only for a Binding
  // task that does not fit Idle; it then changes nothing.
  Status AddTask(Task* t);
  // AddTask without the refresh of fit_future, which the caller owes (Cluster::Link refreshes
  // each node once after placing all of its tasks).
  Status PlaceTask(Task* t);
  void RemoveTask(Task* t);
  // RemoveTask + AddTask with the task's new status (Volcano's UpdateTask).
  Status UpdateTask(Task* t);
};

// ---------------------------------------------------------------------------------------------
// Queue (QueueInfo, §3.5).

struct NodeGroupAffinity {
  std::vector<std::string> required;
  std::vector<std::string> preferred;
};

struct Queue {
  int64_t index = -1;
  int64_t weight = 1;
  int64_t priority = 0;
  bool reclaimable = true;  // spec.reclaimable, nil → true
  bool has_capability = false;
  bool has_deserved = false;
  bool has_guarantee = false;
  QueueState state = QueueState::Open;
  TimeNs creation_time = 0;
  Queue* parent = nullptr;
  Resource capability;
  Resource deserved;
  Resource guarantee;
  Resource allocated;  // status.allocated, recomputed at session close

  std::string name;         // = UID
  std::string parent_name;  // spec.parent ("" = none)
  std::string hierarchy;          // annotation volcano.sh/hierarchy
  std::string hierarchy_weights;  // annotation volcano.sh/hierarchy-weights
  StringMap annotations;
  bool has_affinity = false;  // spec.affinity is set (even when empty): nodegroup inheritance
  NodeGroupAffinity node_group_affinity;
  NodeGroupAffinity node_group_anti_affinity;
  std::vector<Queue*> children;
  std::vector<Job*> jobs;

  bool IsLeaf() const { return children.empty(); }
};

// ---------------------------------------------------------------------------------------------
// Cluster: the session snapshot. Build with the New* methods, then Link().

class Cluster {
 public:
  Cluster() = default;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  Cluster(Cluster&&) = default;
  Cluster& operator=(Cluster&&) = default;

  Task& NewTask();
  Job& NewJob();
  Node& NewNode();
  Queue& NewQueue();
  PriorityClass& NewPriorityClass();
  PodDisruptionBudget& NewPdb();
  ResourceQuota& NewResourceQuota();

  // Resolves names to pointers and builds the indexes, in O(objects):
  //  * drops jobs whose queue does not exist (Volcano's snapshot does) and their tasks;
  //    a task whose job_uid names no job is an Error;
  //  * job.priority from priority_class_name (or the global default class, or 0);
  //  * queue parents/children; node tasks (tasks with a node_name) and node idle/used/... from
  //    allocatable per §3.3; a node_name that names no node is an Error;
  //  * job counters, allocated and total_request;
  //  * dense indices for every kind, hash maps by uid / name.
  // Duplicate uids/names are Errors naming the object, but for two pods whose "<namespace>-<name>"
  // uids agree ("a-b"/"c" and "a"/"b-c"): the later one's uid becomes "<namespace>/<name>".
  Status Link();

  const std::vector<Task*>& tasks() const { return task_ptrs_; }
  const std::vector<Job*>& jobs() const { return job_ptrs_; }
  const std::vector<Node*>& nodes() const { return node_ptrs_; }
  const std::vector<Queue*>& queues() const { return queue_ptrs_; }
  const std::vector<std::unique_ptr<PriorityClass>>& priority_classes() const {
    return priority_classes_;
  }
  const std::vector<std::unique_ptr<PodDisruptionBudget>>& pdbs() const { return pdbs_; }
  const std::vector<std::unique_ptr<ResourceQuota>>& resource_quotas() const {
    return resource_quotas_;
  }
  // The same objects as plain pointers, in creation order (what policies iterate).
  const std::vector<PodDisruptionBudget*>& pdb_list() const { return pdb_ptrs_; }
  const std::vector<ResourceQuota*>& resource_quota_list() const { return quota_ptrs_; }
  // Tasks whose job was dropped by Link (queue missing); they still occupy their nodes.
  const std::vector<Task*>& orphan_tasks() const { return orphan_ptrs_; }

  Task* FindTask(std::string_view uid) const;
  Job* FindJob(std::string_view uid) const;
  Node* FindNode(std::string_view name) const;
  Queue* FindQueue(std::string_view name) const;
  const PriorityClass* FindPriorityClass(std::string_view name) const;

  // Σ allocatable of all nodes.
  const Resource& total_resource() const { return total_resource_; }
  // The cluster's HyperNodes resolved against its nodes (runtime/hyper_node.h); null when the
  // cluster has none (then every job is placed as without topology, and a job with a network
  // topology is placed under the virtual top HyperNode, as Volcano's session does).
  HyperNodeTree* hyper_nodes() const { return hyper_nodes_.get(); }
  void set_hyper_nodes(std::shared_ptr<HyperNodeTree> tree) { hyper_nodes_ = std::move(tree); }
  // Nodes holding at least one task with pod (anti-)affinity terms; unordered.
  const std::vector<Node*>& affinity_nodes() const { return *affinity_nodes_; }
  // Volcano's SubJobInfo.NominatedHyperNode, by sub-job uid (a job's default sub-job, and a job
  // without sub-jobs, under the job's uid) → HyperNode name (kClusterTopHyperNode for the whole
  // cluster): where gangpreempt/gangreclaim planned the sub-job's gang, honoured and cleared by
  // allocate (runtime/actions/allocate.cc). Kept by name, not pointer, so it can outlive the
  // session: RunCycle hands it from the binding's memory into the snapshot and back.
  std::map<std::string, std::string>& nominated_hyper_nodes() { return nominated_hyper_nodes_; }
  const std::map<std::string, std::string>& nominated_hyper_nodes() const {
    return nominated_hyper_nodes_;
  }

 private:
  template <typename T>
  using Map = std::unordered_map<std::string_view, T*>;

  // Link's answer to a task whose uid is taken: true when it is a second pod whose
  // namespace-and-name uid collides with another pod's, now indexed under "<namespace>/<name>".
  bool TakeUnambiguousUid(Task& t);

  Slab<Task> tasks_;
  Slab<Job> jobs_;
  Slab<Node> nodes_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::unique_ptr<PriorityClass>> priority_classes_;
  std::vector<std::unique_ptr<PodDisruptionBudget>> pdbs_;
  std::vector<std::unique_ptr<ResourceQuota>> resource_quotas_;

  std::vector<Task*> task_ptrs_;
  std::vector<Job*> job_ptrs_;
  std::vector<Node*> node_ptrs_;
  std::vector<Queue*> queue_ptrs_;
  std::vector<Task*> orphan_ptrs_;
  std::vector<PodDisruptionBudget*> pdb_ptrs_;
  std::vector<ResourceQuota*> quota_ptrs_;
  // Behind a pointer so the address the nodes hold survives moving the Cluster.
  std::unique_ptr<std::vector<Node*>> affinity_nodes_ = std::make_unique<std::vector<Node*>>();
  NameIndex<Task, &Task::uid> task_by_uid_;
  Map<Job> job_by_uid_;
  // The nodes' names at their positions in nodes_ (= node_ptrs_): Link looks up every bound
  // task's node here, without reading the node (its name is on a line nothing else of Link
  // touches).
  NameTable node_names_;
  Map<Queue> queue_by_name_;
  Map<const PriorityClass> pc_by_name_;
  Resource total_resource_;
  std::shared_ptr<HyperNodeTree> hyper_nodes_;
  std::map<std::string, std::string> nominated_hyper_nodes_;
};

// One policy fault of a session (kiln_policy_faults_total{plugin,point,kind}): the plugin, the
// handler that faulted and what went wrong ("host", "memory", "budget").
struct PolicyFaultPoint {
  std::string plugin;
  std::string point;
  std::string kind;
};

}  // namespace kiln
