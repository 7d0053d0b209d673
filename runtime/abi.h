#pragma once
// The policy-visible fields of Task, Job, Node and Queue, described ONCE (KILN_ABI_FIELDS below).
// The type checker reads names and kinds from it, codegen reads offsets and host functions, the
// runtime implements the host functions (runtime/abi.cc). Nothing else lists fields.
//
// Columns of KILN_ABI_FIELDS(X):
//   Owner   Task | Job | Node | Queue (the C++ struct in runtime/model.h)
//   name    the field as the policy language spells it (snake_case)
//   Kind    FieldKind enumerator
//   Access  Field → a direct member: load `Kind`'s C type at offsetof(Owner, member)
//                  (for Resource the member IS the embedded Resource; take its address)
//           Ref   → a member `const Resource*`, never null: load it (a value shared between
//                  owners, Task's resreq_)
//           Host  → call the extern "C" host function named in the last column
//           Derived → a Bool computed inline from Int members of the same Job (no call): the
//                  last column names its DerivedJobBool formula (below); Job's C++ accessor of
//                  the same name is the reference the formula is tested against
//   target  the member name (Field), host function (Host) or formula (Derived)
//
// C types by kind for Field access (checked by static_asserts at the end of this file):
//   Int int64_t · Float double · Bool bool (1 byte) · Time/Duration int64_t nanoseconds
//   TaskStatus/PodGroupPhase/QueueState uint32_t (TaskStatus is Volcano's bit flag value)
//   Task/Job/Node/Queue `T*` (may be null: task.node when not placed, queue.parent at the root)
//   Resource `kiln::Resource` embedded (layout in runtime/resource.h: u32 present @0,
//            double values[32] @8, index = interned resource id; kiln_resource_id interns names)
// Host function signatures by kind:
//   Int       int64_t fn(const Owner*)          Bool  bool fn(const Owner*)
//   Float     double fn(const Owner*)           String KStr fn(const Owner*)
//   TaskStatus uint32_t fn(const Owner*)        (Volcano's bit flag value)
//   Resource  void fn(const Owner*, Resource* out)
//   StringMap bool fn(const Owner*, const char* key, size_t len, KStr* out)   (true = present)
//             plus <fn>_size(const Owner*) → size_t and <fn>_at(const Owner*, size_t i,
//             KStr* key, KStr* value) for iteration in key order
//   TaskList/JobList/QueueList  KList fn(const Owner*)   (items are `const T*`)
// Returned KStr/KList point into the object and stay valid for the whole session.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "runtime/model.h"

namespace kiln {

enum class FieldKind : uint8_t {
  Int, Float, Bool, String, Time, Duration, Resource,
  Task, Job, Node, Queue, StringMap, TaskList, JobList, QueueList,
  TaskStatus, PodGroupPhase, QueueState,
  // Kinds used only by KILN_ABI_SHAPE_FIELDS (Kubernetes placement shapes):
  StringList,      // list<string>
  IntMap,          // map<string, int>
  RecordList,      // list<Elem>
  Record,          // Elem (never absent)
  OptionalRecord,  // Elem? (null when absent)
  OptionalInt,     // int?
};

enum class FieldAccess : uint8_t { Field, Host, Derived, Ref };

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// A Derived Bool field of Job, from the job's O(1) counters (runtime/model.h):
//   SumAtLeastMin  Σ terms >= min_available            SumBelowMin  Σ terms < min_available
//   NoRoleShort    min_available < task_min_available_total  or  terms[0] == 0
//   SomeRoleShort  min_available < task_min_available_total  or  terms[0] != 0
// terms are offsets of int64_t members of Job; unused ones are kNoTerm.
struct DerivedJobBool {
  enum Rule : uint8_t { SumAtLeastMin, SumBelowMin, NoRoleShort, SomeRoleShort };
  static constexpr size_t kNoTerm = SIZE_MAX;
  Rule rule;
  size_t terms[3];
};
// The dense `index` (int64_t, -1 outside a cluster) of each view a policy map may be keyed by:
// view-keyed maps keep a table by it (stdlib/runtime_internal.h, KMap::dense).
inline constexpr size_t kTaskIndexOffset = offsetof(Task, index);
inline constexpr size_t kJobIndexOffset = offsetof(Job, index);
inline constexpr size_t kNodeIndexOffset = offsetof(Node, index);
inline constexpr size_t kQueueIndexOffset = offsetof(Queue, index);
inline constexpr size_t kJobMinAvailableOffset = offsetof(Job, min_available);
inline constexpr size_t kJobTaskMinAvailableTotalOffset = offsetof(Job, task_min_available_total);
inline constexpr DerivedJobBool kJobIsReady{
    DerivedJobBool::SumAtLeastMin,
    {offsetof(Job, ready_num), offsetof(Job, pending_best_effort), DerivedJobBool::kNoTerm}};
inline constexpr DerivedJobBool kJobIsPipelined{
    DerivedJobBool::SumAtLeastMin,
    {offsetof(Job, waiting_num), offsetof(Job, ready_num), offsetof(Job, pending_best_effort)}};
inline constexpr DerivedJobBool kJobIsStarving{
    DerivedJobBool::SumBelowMin,
    {offsetof(Job, waiting_num), offsetof(Job, ready_num), DerivedJobBool::kNoTerm}};
// check_task_*: a role-short formula over one counter of Job (its roles_short_* member).
constexpr DerivedJobBool RoleShortOf(size_t counter,
                                     DerivedJobBool::Rule rule = DerivedJobBool::NoRoleShort) {
  return {rule, {counter, DerivedJobBool::kNoTerm, DerivedJobBool::kNoTerm}};
}
inline constexpr auto kJobCheckTaskValid = RoleShortOf(offsetof(Job, roles_short_valid));
inline constexpr auto kJobCheckTaskReady = RoleShortOf(offsetof(Job, roles_short_ready));
inline constexpr auto kJobCheckTaskPipelined = RoleShortOf(offsetof(Job, roles_short_pipelined));
inline constexpr auto kJobCheckTaskStarving =
    RoleShortOf(offsetof(Job, roles_short_starving), DerivedJobBool::SomeRoleShort);
#pragma GCC diagnostic pop

// clang-format off
#define KILN_ABI_FIELDS(X)                                                                     \
  /* ---- Task ---- */                                                                         \
  X(Task,  "uid",                 String,       Host,  kiln_task_uid)                          \
  X(Task,  "name",                String,       Host,  kiln_task_name)                         \
  X(Task,  "namespace",           String,       Host,  kiln_task_namespace)                    \
  X(Task,  "role",                String,       Host,  kiln_task_role)                         \
  X(Task,  "node_name",           String,       Host,  kiln_task_node_name)                    \
  X(Task,  "priority_class_name", String,       Host,  kiln_task_priority_class_name)          \
  X(Task,  "status",              TaskStatus,   Field, status)                                 \
  X(Task,  "priority",            Int,          Field, priority)                               \
  X(Task,  "preemptable",         Bool,         Field, preemptable)                            \
  X(Task,  "best_effort",         Bool,         Field, best_effort)                            \
  X(Task,  "sch_gated",           Bool,         Field, sch_gated)                              \
  X(Task,  "eviction_occurred",   Bool,         Field, eviction_occurred)                      \
  X(Task,  "deleting",            Bool,         Field, deleting)                               \
  X(Task,  "preempt_never",       Bool,         Host,  kiln_task_preempt_never)                \
  X(Task,  "transaction_status",  TaskStatus,   Host,  kiln_task_transaction_status)           \
  X(Task,  "creation_time",       Time,         Field, creation_time)                          \
  X(Task,  "scheduled_at",        Time,         Field, scheduled_at)                           \
  X(Task,  "job",                 Job,          Field, job)                                    \
  X(Task,  "node",                Node,         Field, node)                                   \
  X(Task,  "resreq",              Resource,     Ref,   resreq_)                                \
  X(Task,  "init_resreq",         Resource,     Ref,   resreq_) /* = resreq (model.h) */       \
  X(Task,  "labels",              StringMap,    Host,  kiln_task_label)                        \
  X(Task,  "annotations",         StringMap,    Host,  kiln_task_annotation)                   \
  X(Task,  "node_selector",       StringMap,    Host,  kiln_task_node_selector)                \
  X(Task,  "has_pod_affinity_terms", Bool,      Field, has_pod_affinity_terms)                 \
  X(Task,  "limits",              Resource,     Host,  kiln_task_limits)                       \
  /* ---- Job ---- */                                                                          \
  X(Job,   "uid",                 String,       Host,  kiln_job_uid)                           \
  X(Job,   "name",                String,       Host,  kiln_job_name)                          \
  X(Job,   "namespace",           String,       Host,  kiln_job_namespace)                     \
  X(Job,   "queue_name",          String,       Host,  kiln_job_queue_name)                    \
  X(Job,   "priority_class_name", String,       Host,  kiln_job_priority_class_name)           \
  X(Job,   "priority",            Int,          Field, priority)                               \
  X(Job,   "min_available",       Int,          Field, min_available)                          \
  X(Job,   "phase",               PodGroupPhase,Field, phase)                                  \
  X(Job,   "preemptable",         Bool,         Field, preemptable)                            \
  X(Job,   "has_min_resources",   Bool,         Field, has_min_resources)                      \
  X(Job,   "has_waiting_time",    Bool,         Field, has_waiting_time)                       \
  X(Job,   "creation_time",       Time,         Field, creation_time)                          \
  X(Job,   "waiting_time",        Duration,     Field, waiting_time)                           \
  X(Job,   "queue",               Queue,        Field, queue)                                  \
  X(Job,   "allocated",           Resource,     Field, allocated)                              \
  X(Job,   "total_request",       Resource,     Field, total_request)                          \
  X(Job,   "min_resources",       Resource,     Field, min_resources)                          \
  X(Job,   "elastic_resources",   Resource,     Host,  kiln_job_elastic_resources)             \
  X(Job,   "task_count",          Int,          Field, task_num)                    \
  X(Job,   "ready_task_num",      Int,          Field, ready_num)                \
  X(Job,   "waiting_task_num",    Int,          Field, waiting_num)              \
  X(Job,   "valid_task_num",      Int,          Field, valid_num)                \
  X(Job,   "pending_best_effort_task_num", Int, Field, pending_best_effort)  \
  X(Job,   "task_min_available_total", Int,     Field, task_min_available_total)      \
  X(Job,   "is_ready",            Bool,         Derived, kJobIsReady)                      \
  X(Job,   "is_pipelined",        Bool,         Derived, kJobIsPipelined)                  \
  X(Job,   "is_starving",         Bool,         Derived, kJobIsStarving)                   \
  X(Job,   "check_task_valid",    Bool,         Derived, kJobCheckTaskValid)              \
  X(Job,   "check_task_ready",    Bool,         Derived, kJobCheckTaskReady)              \
  X(Job,   "check_task_pipelined",Bool,         Derived, kJobCheckTaskPipelined)          \
  X(Job,   "check_task_starving", Bool,         Derived, kJobCheckTaskStarving)           \
  X(Job,   "tasks",               TaskList,     Host,  kiln_job_tasks)                         \
  X(Job,   "annotations",         StringMap,    Host,  kiln_job_annotation)                    \
  X(Job,   "labels",              StringMap,    Host,  kiln_job_label)                         \
  X(Job,   "fit_error",           String,       Host,  kiln_job_fit_error)                     \
  /* network topology (runtime/hyper_node.h), as the session opened it */                      \
  X(Job,   "has_network_topology", Bool,        Host,  kiln_job_has_network_topology)          \
  X(Job,   "hard_topology",       Bool,         Field, hard_topology)                          \
  X(Job,   "highest_tier_allowed", Int,         Field, highest_tier_allowed)                   \
  /* ---- Node ---- */                                                                         \
  X(Node,  "name",                String,       Host,  kiln_node_name)                         \
  X(Node,  "unschedulable",       Bool,         Field, unschedulable)                          \
  X(Node,  "has_usage",           Bool,         Field, has_usage)                              \
  X(Node,  "metrics_time",        Time,         Field, metrics_time)                           \
  X(Node,  "cpu_usage",           Float,        Field, cpu_usage)                              \
  X(Node,  "memory_usage",        Float,        Field, memory_usage)                           \
  X(Node,  "allocatable",         Resource,     Field, allocatable)                            \
  X(Node,  "capacity",            Resource,     Field, capacity)                               \
  X(Node,  "idle",                Resource,     Field, idle)                                   \
  X(Node,  "used",                Resource,     Field, used)                                   \
  X(Node,  "releasing",           Resource,     Field, releasing)                              \
  X(Node,  "pipelined",           Resource,     Field, pipelined)                              \
  X(Node,  "nonzero_requested",   Resource,     Field, nonzero_requested)                      \
  X(Node,  "future_idle",         Resource,     Host,  kiln_node_future_idle)                  \
  X(Node,  "task_count",          Int,          Host,  kiln_node_task_count)                   \
  X(Node,  "tasks",               TaskList,     Host,  kiln_node_tasks)                        \
  X(Node,  "affinity_tasks",      TaskList,     Host,  kiln_node_affinity_tasks)               \
  X(Node,  "labels",              StringMap,    Host,  kiln_node_label)                        \
  X(Node,  "annotations",         StringMap,    Host,  kiln_node_annotation)                   \
  /* ---- Queue ---- */                                                                        \
  X(Queue, "name",                String,       Host,  kiln_queue_name)                        \
  X(Queue, "hierarchy",           String,       Host,  kiln_queue_hierarchy)                   \
  X(Queue, "hierarchy_weights",   String,       Host,  kiln_queue_hierarchy_weights)           \
  X(Queue, "weight",              Int,          Field, weight)                                 \
  X(Queue, "priority",            Int,          Field, priority)                               \
  X(Queue, "reclaimable",         Bool,         Field, reclaimable)                            \
  X(Queue, "has_capability",      Bool,         Field, has_capability)                         \
  X(Queue, "has_deserved",        Bool,         Field, has_deserved)                           \
  X(Queue, "has_guarantee",       Bool,         Field, has_guarantee)                          \
  X(Queue, "state",               QueueState,   Field, state)                                  \
  X(Queue, "creation_time",       Time,         Field, creation_time)                          \
  X(Queue, "parent",              Queue,        Field, parent)                                 \
  X(Queue, "capability",          Resource,     Field, capability)                             \
  X(Queue, "deserved",            Resource,     Field, deserved)                               \
  X(Queue, "guarantee",           Resource,     Field, guarantee)                              \
  X(Queue, "is_leaf",             Bool,         Host,  kiln_queue_is_leaf)                     \
  X(Queue, "children",            QueueList,    Host,  kiln_queue_children)                    \
  X(Queue, "jobs",                JobList,      Host,  kiln_queue_jobs)                        \
  X(Queue, "annotations",         StringMap,    Host,  kiln_queue_annotation)
// clang-format on

// The Kubernetes placement shapes predicates and scorers read (model.h's Taint, Toleration, …),
// as read-only records. Same columns as KILN_ABI_FIELDS plus Elem, the record type of
// RecordList / Record / OptionalRecord fields (`_` for other kinds). Every row is Host access.
// Host function signatures by kind (in addition to those above):
//   StringList      size_t <fn>_size(const Owner*); KStr <fn>_at(const Owner*, size_t i)
//   IntMap          bool <fn>(const Owner*, const char* key, size_t len, int64_t* out);
//                   size_t <fn>_size(const Owner*);
//                   void <fn>_at(const Owner*, size_t i, KStr* key, int64_t* value)
//   RecordList      size_t <fn>_size(const Owner*); const void* <fn>_at(const Owner*, size_t i)
//   Record          const void* <fn>(const Owner*)                (never null)
//   OptionalRecord  const void* <fn>(const Owner*)                (null when absent)
//   OptionalInt     bool <fn>(const Owner*, int64_t* out)         (false when absent)
//   Resource        void <fn>(const Owner*, Resource* out)         (as in KILN_ABI_FIELDS)
// Records (Owner values besides Task/Job/Node/Queue), in KILN_ABI_RECORDS.
// clang-format off
#define KILN_ABI_RECORDS(X)                                                                    \
  X(Taint) X(Toleration) X(SelectorRequirement) X(LabelSelector) X(NodeSelectorTerm)           \
  X(PreferredSchedulingTerm) X(PodAffinityTerm) X(WeightedPodAffinityTerm)                     \
  X(TopologySpreadConstraint) X(HostPort) X(PodDisruptionBudget) X(ResourceQuota)           \
  X(HyperNode) X(SubJob) X(SubGroupPolicy) X(NumaCpu)

#define KILN_ABI_SHAPE_FIELDS(X)                                                                                           \
  X(Task,  "tolerations",                 RecordList,     Host, kiln_task_tolerations,                 Toleration)               \
  X(Task,  "has_required_node_affinity",  Bool,           Host, kiln_task_has_required_node_affinity,  _)                        \
  X(Task,  "required_node_affinity",      RecordList,     Host, kiln_task_required_node_affinity,      NodeSelectorTerm)         \
  X(Task,  "preferred_node_affinity",     RecordList,     Host, kiln_task_preferred_node_affinity,     PreferredSchedulingTerm)  \
  X(Task,  "required_pod_affinity",       RecordList,     Host, kiln_task_required_pod_affinity,       PodAffinityTerm)          \
  X(Task,  "preferred_pod_affinity",      RecordList,     Host, kiln_task_preferred_pod_affinity,      WeightedPodAffinityTerm)  \
  X(Task,  "required_pod_anti_affinity",  RecordList,     Host, kiln_task_required_pod_anti_affinity,  PodAffinityTerm)          \
  X(Task,  "preferred_pod_anti_affinity", RecordList,     Host, kiln_task_preferred_pod_anti_affinity, WeightedPodAffinityTerm)  \
  X(Task,  "topology_spread_constraints", RecordList,     Host, kiln_task_topology_spread_constraints, TopologySpreadConstraint) \
  X(Task,  "host_ports",                  RecordList,     Host, kiln_task_host_ports,                  HostPort)                 \
  X(Task,  "images",                      StringList,     Host, kiln_task_images,                      _)                        \
  X(Node,  "taints",                      RecordList,     Host, kiln_node_taints,                      Taint)                    \
  X(Node,  "images",                      IntMap,         Host, kiln_node_images,                      _)                        \
  X(Taint, "key",                         String,         Host, kiln_taint_key,                        _)                        \
  X(Taint, "value",                       String,         Host, kiln_taint_value,                      _)                        \
  X(Taint, "effect",                      String,         Host, kiln_taint_effect,                     _)                        \
  X(Toleration, "key",                    String,         Host, kiln_toleration_key,                   _)                        \
  X(Toleration, "op",                     String,         Host, kiln_toleration_op,                    _)                        \
  X(Toleration, "value",                  String,         Host, kiln_toleration_value,                 _)                        \
  X(Toleration, "effect",                 String,         Host, kiln_toleration_effect,                _)                        \
  X(Toleration, "toleration_seconds",     OptionalInt,    Host, kiln_toleration_seconds,               _)                        \
  X(SelectorRequirement, "key",           String,         Host, kiln_selector_requirement_key,         _)                        \
  X(SelectorRequirement, "op",            String,         Host, kiln_selector_requirement_op,          _)                        \
  X(SelectorRequirement, "values",        StringList,     Host, kiln_selector_requirement_values,      _)                        \
  X(LabelSelector, "match_labels",        StringMap,      Host, kiln_label_selector_match_labels,      _)                        \
  X(LabelSelector, "match_expressions",   RecordList,     Host, kiln_label_selector_match_expressions, SelectorRequirement)      \
  X(NodeSelectorTerm, "match_expressions", RecordList,    Host, kiln_node_selector_term_match_expressions, SelectorRequirement)  \
  X(NodeSelectorTerm, "match_fields",     RecordList,     Host, kiln_node_selector_term_match_fields,  SelectorRequirement)      \
  X(PreferredSchedulingTerm, "weight",    Int,            Host, kiln_preferred_scheduling_term_weight, _)                        \
  X(PreferredSchedulingTerm, "preference", Record,        Host, kiln_preferred_scheduling_term_preference, NodeSelectorTerm)     \
  X(PodAffinityTerm, "label_selector",    OptionalRecord, Host, kiln_pod_affinity_term_label_selector, LabelSelector)            \
  X(PodAffinityTerm, "namespaces",        StringList,     Host, kiln_pod_affinity_term_namespaces,     _)                        \
  X(PodAffinityTerm, "has_namespace_selector", Bool,      Host, kiln_pod_affinity_term_has_namespace_selector, _)                \
  X(PodAffinityTerm, "namespace_selector", OptionalRecord, Host, kiln_pod_affinity_term_namespace_selector, LabelSelector)       \
  X(PodAffinityTerm, "topology_key",      String,         Host, kiln_pod_affinity_term_topology_key,   _)                        \
  X(WeightedPodAffinityTerm, "weight",    Int,            Host, kiln_weighted_pod_affinity_term_weight, _)                       \
  X(WeightedPodAffinityTerm, "term",      Record,         Host, kiln_weighted_pod_affinity_term_term,  PodAffinityTerm)          \
  X(TopologySpreadConstraint, "max_skew", Int,            Host, kiln_topology_spread_max_skew,         _)                        \
  X(TopologySpreadConstraint, "topology_key", String,     Host, kiln_topology_spread_topology_key,     _)                        \
  X(TopologySpreadConstraint, "when_unsatisfiable", String, Host, kiln_topology_spread_when_unsatisfiable, _)                    \
  X(TopologySpreadConstraint, "label_selector", OptionalRecord, Host, kiln_topology_spread_label_selector, LabelSelector)        \
  X(TopologySpreadConstraint, "min_domains", OptionalInt, Host, kiln_topology_spread_min_domains,      _)                        \
  X(TopologySpreadConstraint, "match_label_keys", StringList, Host, kiln_topology_spread_match_label_keys, _)                    \
  X(TopologySpreadConstraint, "node_affinity_policy", String, Host, kiln_topology_spread_node_affinity_policy, _)                \
  X(TopologySpreadConstraint, "node_taints_policy", String, Host, kiln_topology_spread_node_taints_policy, _)                    \
  X(HostPort, "host_port",                Int,            Host, kiln_host_port_host_port,              _)                        \
  X(HostPort, "container_port",           Int,            Host, kiln_host_port_container_port,         _)                        \
  X(HostPort, "protocol",                 String,         Host, kiln_host_port_protocol,               _)                        \
  X(HostPort, "host_ip",                  String,         Host, kiln_host_port_host_ip,                _)                        \
  /* queue spec.parent as written and spec.affinity (nodegroup) */                                                   \
  X(Queue, "parent_name",                 String,         Host, kiln_queue_parent_name,                _)                        \
  X(Queue, "has_affinity",                Bool,           Host, kiln_queue_has_affinity,               _)                        \
  X(Queue, "node_group_required",         StringList,     Host, kiln_queue_node_group_required,        _)                        \
  X(Queue, "node_group_preferred",        StringList,     Host, kiln_queue_node_group_preferred,       _)                        \
  X(Queue, "node_group_anti_required",    StringList,     Host, kiln_queue_node_group_anti_required,   _)                        \
  X(Queue, "node_group_anti_preferred",   StringList,     Host, kiln_queue_node_group_anti_preferred,  _)                        \
  /* PodDisruptionBudget (pdb) and ResourceQuota (resourcequota), listed in session.pdbs / session.resource_quotas */ \
  X(PodDisruptionBudget, "name",          String,         Host, kiln_pdb_name,                         _)                        \
  X(PodDisruptionBudget, "namespace",     String,         Host, kiln_pdb_namespace,                    _)                        \
  X(PodDisruptionBudget, "selector",      Record,         Host, kiln_pdb_selector,                     LabelSelector)            \
  X(PodDisruptionBudget, "disruptions_allowed", Int,      Host, kiln_pdb_disruptions_allowed,          _)                        \
  X(PodDisruptionBudget, "disrupted_pods", StringList,    Host, kiln_pdb_disrupted_pods,               _)                        \
  X(ResourceQuota, "name",                String,         Host, kiln_resource_quota_name,              _)                        \
  X(ResourceQuota, "namespace",           String,         Host, kiln_resource_quota_namespace,         _)                        \
  X(ResourceQuota, "hard",                Resource,       Host, kiln_resource_quota_hard,              _)                        \
  X(ResourceQuota, "used",                Resource,       Host, kiln_resource_quota_used,              _)                        \
  X(ResourceQuota, "hard_names",          StringList,     Host, kiln_resource_quota_hard_names,        _)                        \
  /* HyperNode (runtime/hyper_node.h): a network domain; session.hyper_nodes lists them all */                        \
  X(HyperNode, "name",                    String,         Host, kiln_hyper_node_name,                  _)                        \
  X(HyperNode, "tier",                    Int,            Host, kiln_hyper_node_tier,                  _)                        \
  X(HyperNode, "tier_name",               String,         Host, kiln_hyper_node_tier_name,             _)                        \
  X(HyperNode, "is_top",                  Bool,           Host, kiln_hyper_node_is_top,                _)                        \
  X(HyperNode, "parent",                  OptionalRecord, Host, kiln_hyper_node_parent,                HyperNode)                \
  X(HyperNode, "children",                RecordList,     Host, kiln_hyper_node_children,              HyperNode)                \
  X(HyperNode, "ancestors",               RecordList,     Host, kiln_hyper_node_ancestors,             HyperNode)                \
  X(HyperNode, "node_count",              Int,            Host, kiln_hyper_node_node_count,            _)                        \
  /* Σ over its nodes as the session opened (Volcano's network-topology-aware cache) */                               \
  X(HyperNode, "allocatable",             Resource,       Host, kiln_hyper_node_allocatable,           _)                        \
  X(HyperNode, "idle",                    Resource,       Host, kiln_hyper_node_idle,                  _)                        \
  X(HyperNode, "future_idle",             Resource,       Host, kiln_hyper_node_future_idle,           _)                        \
  /* Σ over its nodes now: used + pipelined */                                                                        \
  X(HyperNode, "used",                    Resource,       Host, kiln_hyper_node_used,                  _)                        \
  X(Job,   "allocated_hyper_node",        OptionalRecord, Host, kiln_job_allocated_hyper_node,         HyperNode)                \
  X(Job,   "sub_job_allocated_hyper_node", OptionalRecord, Host, kiln_job_sub_job_allocated_hyper_node, HyperNode)               \
  X(Task,  "job_allocated_hyper_node",    OptionalRecord, Host, kiln_task_job_allocated_hyper_node,    HyperNode)                \
  X(Node,  "hyper_node",                  OptionalRecord, Host, kiln_node_hyper_node,                  HyperNode)                \
  /* SubJob (runtime/sub_job.h): a sub-group gang of a job, as the session opened it */                                 \
  X(SubJob, "uid",                        String,         Host, kiln_sub_job_uid,                      _)                        \
  X(SubJob, "group",                      String,         Host, kiln_sub_job_group,                    _)                        \
  X(SubJob, "is_default",                 Bool,           Host, kiln_sub_job_is_default,               _)                        \
  X(SubJob, "job",                        Job,            Host, kiln_sub_job_job,                      _)                        \
  X(SubJob, "tasks",                      TaskList,       Host, kiln_sub_job_tasks,                    _)                        \
  X(SubJob, "task_count",                 Int,            Host, kiln_sub_job_task_count,               _)                        \
  X(SubJob, "min_available",              Int,            Host, kiln_sub_job_min_available,            _)                        \
  X(SubJob, "match_index",                Int,            Host, kiln_sub_job_match_index,              _)                        \
  X(SubJob, "priority",                   Int,            Host, kiln_sub_job_priority,                 _)                        \
  /* Volcano's SubJobInfo counters, over its tasks now */                                                              \
  X(SubJob, "ready_task_num",             Int,            Host, kiln_sub_job_ready_task_num,           _)                        \
  X(SubJob, "waiting_task_num",           Int,            Host, kiln_sub_job_waiting_task_num,         _)                        \
  X(SubJob, "pending_best_effort_task_num", Int,          Host, kiln_sub_job_pending_best_effort_task_num, _)                    \
  X(SubJob, "is_ready",                   Bool,           Host, kiln_sub_job_is_ready,                 _)                        \
  X(SubJob, "is_pipelined",               Bool,           Host, kiln_sub_job_is_pipelined,             _)                        \
  /* Σ InitResreq of its Pending tasks (GetMinResources) */                                                            \
  X(SubJob, "min_resources",              Resource,       Host, kiln_sub_job_min_resources,            _)                        \
  X(SubJob, "has_network_topology",       Bool,           Host, kiln_sub_job_has_network_topology,     _)                        \
  X(SubJob, "hard_topology",              Bool,           Host, kiln_sub_job_hard_topology,            _)                        \
  X(SubJob, "highest_tier_allowed",       Int,            Host, kiln_sub_job_highest_tier_allowed,     _)                        \
  X(SubJob, "allocated_hyper_node",       OptionalRecord, Host, kiln_sub_job_allocated_hyper_node,     HyperNode)                \
  X(SubJob, "nominated_hyper_node",       OptionalRecord, Host, kiln_sub_job_nominated_hyper_node,     HyperNode)                \
  /* SubGroupPolicy: a PodGroup spec.subGroupPolicy entry as written */                                                \
  X(SubGroupPolicy, "name",               String,         Host, kiln_sub_group_policy_name,            _)                        \
  X(SubGroupPolicy, "sub_group_size",     Int,            Host, kiln_sub_group_policy_sub_group_size,  _)                        \
  X(SubGroupPolicy, "min_sub_groups",     Int,            Host, kiln_sub_group_policy_min_sub_groups,  _)                        \
  X(SubGroupPolicy, "match_label_keys",   StringList,     Host, kiln_sub_group_policy_match_label_keys, _)                       \
  X(Job,   "sub_jobs",                    RecordList,     Host, kiln_job_sub_jobs,                     SubJob)                   \
  X(Job,   "sub_group_policy",            RecordList,     Host, kiln_job_sub_group_policy,             SubGroupPolicy)           \
  X(Task,  "sub_job",                     OptionalRecord, Host, kiln_task_sub_job,                     SubJob)                   \
  /* Numatopology (numa-aware): the node's kubelet policies, resReserved and CPUs in id order */                      \
  X(Node,  "has_numa",                    Bool,           Host, kiln_node_has_numa,                    _)                        \
  X(Node,  "numa_policies",               StringMap,      Host, kiln_node_numa_policies,               _)                        \
  X(Node,  "numa_reserved",               Resource,       Host, kiln_node_numa_reserved,               _)                        \
  X(Node,  "numa_cpus",                   RecordList,     Host, kiln_node_numa_cpus,                   NumaCpu)                  \
  X(NumaCpu, "id",                        Int,            Host, kiln_numa_cpu_id,                      _)                        \
  X(NumaCpu, "numa",                      Int,            Host, kiln_numa_cpu_numa,                    _)                        \
  X(NumaCpu, "socket",                    Int,            Host, kiln_numa_cpu_socket,                  _)                        \
  X(NumaCpu, "core",                      Int,            Host, kiln_numa_cpu_core,                    _)                        \
  X(NumaCpu, "allocatable",               Bool,           Host, kiln_numa_cpu_allocatable,             _)                        \
  X(Task,  "qos_guaranteed",              Bool,           Host, kiln_task_qos_guaranteed,              _)
// clang-format on

struct AbiFieldInfo {
  std::string_view owner;  // "Task"
  std::string_view name;   // "priority"
  FieldKind kind;
  FieldAccess access;
  size_t offset;                // Field access: offsetof(owner, member); Host: 0
  std::string_view host;        // Host access: the function's symbol name
  const void* host_fn;          // Host access: its address (for absoluteSymbols); for kinds
                                // whose functions are a _size/_at pair: nullptr (see
                                // AbiShapeHostSymbols)
  std::string_view elem = {};   // record type of RecordList/Record/OptionalRecord fields
  const DerivedJobBool* derived = nullptr;  // Derived access: the formula
};

// A host function's symbol and address (for absoluteSymbols).
struct AbiHostSymbol {
  std::string_view name;
  const void* address;
};

}  // namespace kiln

// ---- host functions (extern "C"; implemented in runtime/abi.cc) ----
extern "C" {

typedef struct KStr {
  const char* data;
  size_t size;
} KStr;

typedef struct KList {
  const void* const* items;
  size_t size;
} KList;

#define KILN_X_DECL_String(owner, fn) KStr fn(const kiln::owner*);
#define KILN_X_DECL_Int(owner, fn) int64_t fn(const kiln::owner*);
#define KILN_X_DECL_Bool(owner, fn) bool fn(const kiln::owner*);
#define KILN_X_DECL_Float(owner, fn) double fn(const kiln::owner*);
#define KILN_X_DECL_TaskStatus(owner, fn) uint32_t fn(const kiln::owner*);
#define KILN_X_DECL_Resource(owner, fn) void fn(const kiln::owner*, kiln::Resource* out);
#define KILN_X_DECL_StringMap(owner, fn)                                        \
  bool fn(const kiln::owner*, const char* key, size_t len, KStr* out);          \
  size_t fn##_size(const kiln::owner*);                                         \
  void fn##_at(const kiln::owner*, size_t i, KStr* key, KStr* value);
#define KILN_X_DECL_TaskList(owner, fn) KList fn(const kiln::owner*);
#define KILN_X_DECL_JobList(owner, fn) KList fn(const kiln::owner*);
#define KILN_X_DECL_QueueList(owner, fn) KList fn(const kiln::owner*);
#define KILN_X_DECL_Field(kind, owner, fn)
#define KILN_X_DECL_Host(kind, owner, fn) KILN_X_DECL_##kind(owner, fn)
#define KILN_X_DECL_Derived(kind, owner, fn)
#define KILN_X_DECL_Ref(kind, owner, fn)
#define KILN_X(owner, name, kind, access, target) KILN_X_DECL_##access(kind, owner, target)
KILN_ABI_FIELDS(KILN_X)
#undef KILN_X

#define KILN_X_SDECL_String(owner, fn, elem) KStr fn(const kiln::owner*);
#define KILN_X_SDECL_Int(owner, fn, elem) int64_t fn(const kiln::owner*);
#define KILN_X_SDECL_Bool(owner, fn, elem) bool fn(const kiln::owner*);
#define KILN_X_SDECL_Resource(owner, fn, elem) void fn(const kiln::owner*, kiln::Resource* out);
#define KILN_X_SDECL_StringMap(owner, fn, elem) KILN_X_DECL_StringMap(owner, fn)
#define KILN_X_SDECL_StringList(owner, fn, elem)                                \
  size_t fn##_size(const kiln::owner*);                                         \
  KStr fn##_at(const kiln::owner*, size_t i);
#define KILN_X_SDECL_IntMap(owner, fn, elem)                                    \
  bool fn(const kiln::owner*, const char* key, size_t len, int64_t* out);       \
  size_t fn##_size(const kiln::owner*);                                         \
  void fn##_at(const kiln::owner*, size_t i, KStr* key, int64_t* value);
#define KILN_X_SDECL_RecordList(owner, fn, elem)                                \
  size_t fn##_size(const kiln::owner*);                                         \
  const void* fn##_at(const kiln::owner*, size_t i);
#define KILN_X_SDECL_Record(owner, fn, elem) const void* fn(const kiln::owner*);
#define KILN_X_SDECL_Job(owner, fn, elem) const void* fn(const kiln::owner*);
#define KILN_X_SDECL_TaskList(owner, fn, elem) KList fn(const kiln::owner*);
#define KILN_X_SDECL_OptionalRecord(owner, fn, elem) const void* fn(const kiln::owner*);
#define KILN_X_SDECL_OptionalInt(owner, fn, elem) bool fn(const kiln::owner*, int64_t* out);
#define KILN_X(owner, name, kind, access, target, elem) KILN_X_SDECL_##kind(owner, target, elem)
KILN_ABI_SHAPE_FIELDS(KILN_X)
#undef KILN_X

// Interns a resource name and returns its id (the index into Resource::values); -1 when the
// registry is full.
int32_t kiln_resource_id(const char* name, size_t len);
// Resource name of an id.
KStr kiln_resource_name(int32_t id);

// A policy fault (division by zero trapped, host error, …) inside the handler currently running
// on this thread: the session logs it with the plugin's name, counts it, and treats the answer as
// that point's abstain/failure. Safe to call outside a handler (then only logged).
void kiln_policy_fault(const char* message, size_t len);
// The same with its kind: 0 host error, 1 allocation over the memory budget, 2 loop budget
// (kiln::FaultKind).
void kiln_policy_fault_kind(int32_t kind, const char* message, size_t len);
// The loop budget of the call running on this thread: compiled loops decrement *fuel once per
// iteration and call kiln_policy_out_of_fuel() when it goes negative, then leave the loop (the
// session has recorded a budget fault and ignores the call's answer). Outside a session call
// there is no budget: the counter is refilled.
int64_t* kiln_policy_fuel(void);
void kiln_policy_out_of_fuel(void);

// Reason/message sinks for Status- and Validation-kind handlers (see runtime/session.h).
typedef struct KStatusOut KStatusOut;
void kiln_status_add_reason(KStatusOut* out, const char* data, size_t len);
void kiln_status_set_message(KStatusOut* out, const char* data, size_t len);

}  // extern "C"

namespace kiln {

#define KILN_X_OFFSET_Field(owner, member) offsetof(owner, member)
#define KILN_X_OFFSET_Host(owner, member) 0
#define KILN_X_OFFSET_Derived(owner, member) 0
#define KILN_X_OFFSET_Ref(owner, member) offsetof(owner, member)
#define KILN_X_HOSTNAME_Field(target) std::string_view{}
#define KILN_X_HOSTNAME_Host(target) std::string_view{#target}
#define KILN_X_HOSTNAME_Derived(target) std::string_view{}
#define KILN_X_HOSTNAME_Ref(target) std::string_view{}
#define KILN_X_HOSTFN_Field(target) nullptr
#define KILN_X_HOSTFN_Host(target) reinterpret_cast<const void*>(&target)
#define KILN_X_HOSTFN_Derived(target) nullptr
#define KILN_X_HOSTFN_Ref(target) nullptr
#define KILN_X_DERIVED_Field(target) nullptr
#define KILN_X_DERIVED_Host(target) nullptr
#define KILN_X_DERIVED_Derived(target) &target
#define KILN_X_DERIVED_Ref(target) nullptr

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// Every field, in table order.
inline const AbiFieldInfo kAbiFields[] = {
#define KILN_X(owner, name, kind, access, target)                                              \
  AbiFieldInfo{#owner, name, FieldKind::kind, FieldAccess::access,                             \
               KILN_X_OFFSET_##access(owner, target), KILN_X_HOSTNAME_##access(target),         \
               KILN_X_HOSTFN_##access(target), {}, KILN_X_DERIVED_##access(target)},
    KILN_ABI_FIELDS(KILN_X)
#undef KILN_X
};
#pragma GCC diagnostic pop

// The C type a Field-access member must have for its kind.
template <FieldKind K> struct FieldCType;
template <> struct FieldCType<FieldKind::Int> { using type = int64_t; };
template <> struct FieldCType<FieldKind::Float> { using type = double; };
template <> struct FieldCType<FieldKind::Bool> { using type = bool; };
template <> struct FieldCType<FieldKind::Time> { using type = int64_t; };
template <> struct FieldCType<FieldKind::Duration> { using type = int64_t; };
template <> struct FieldCType<FieldKind::Resource> { using type = Resource; };
template <> struct FieldCType<FieldKind::Task> { using type = Task*; };
template <> struct FieldCType<FieldKind::Job> { using type = Job*; };
template <> struct FieldCType<FieldKind::Node> { using type = Node*; };
template <> struct FieldCType<FieldKind::Queue> { using type = Queue*; };
template <> struct FieldCType<FieldKind::TaskStatus> { using type = TaskStatus; };
template <> struct FieldCType<FieldKind::PodGroupPhase> { using type = PodGroupPhase; };
template <> struct FieldCType<FieldKind::QueueState> { using type = QueueState; };

#define KILN_X_CHECK_Field(owner, kind, member)                                                \
  static_assert(std::is_same_v<decltype(owner::member), FieldCType<FieldKind::kind>::type>,    \
                #owner "." #member " does not have the C type of kind " #kind);
#define KILN_X_CHECK_Host(owner, kind, member)
#define KILN_X_CHECK_Derived(owner, kind, formula)                                             \
  static_assert(std::is_same_v<owner, Job> && FieldKind::kind == FieldKind::Bool,               \
                "Derived fields are Bool fields of Job");
#define KILN_X_CHECK_Ref(owner, kind, member)                                                  \
  static_assert(std::is_same_v<decltype(owner::member),                                        \
                               const FieldCType<FieldKind::kind>::type*>,                      \
                #owner "." #member " is not a const pointer to the C type of kind " #kind);
#define KILN_X(owner, name, kind, access, target) KILN_X_CHECK_##access(owner, kind, target)
KILN_ABI_FIELDS(KILN_X)
#undef KILN_X

static_assert(sizeof(TaskStatus) == 4 && sizeof(PodGroupPhase) == 4 && sizeof(QueueState) == 4);
static_assert(sizeof(bool) == 1);

// The entry for owner.name, or nullptr (KILN_ABI_FIELDS only).
const AbiFieldInfo* FindAbiField(std::string_view owner, std::string_view name);

// KILN_ABI_SHAPE_FIELDS as data, in table order.
std::span<const AbiFieldInfo> AbiShapeFields();
// The entry for owner.name in the shape table, or nullptr.
const AbiFieldInfo* FindAbiShapeField(std::string_view owner, std::string_view name);
// Every host function of the shape table, _size/_at companions included.
std::span<const AbiHostSymbol> AbiShapeHostSymbols();
// Record type names (KILN_ABI_RECORDS), in order.
std::span<const std::string_view> AbiRecordNames();

}  // namespace kiln
