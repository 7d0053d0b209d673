// Host functions of the ABI field table (runtime/abi.h). Each reads one object field; they never
// allocate, and the strings and lists they return live as long as the session's objects.

#include "runtime/abi.h"

#include <iterator>

#include "runtime/hyper_node.h"

namespace kiln {
namespace {

KStr Str(const std::string& s) { return KStr{s.data(), s.size()}; }

bool MapGet(const StringMap& m, const char* key, size_t len, KStr* out) {
  auto it = m.find(std::string_view(key, len));
  if (it == m.end()) {
    if (out) *out = KStr{"", 0};
    return false;
  }
  if (out) *out = Str(it->second);
  return true;
}

void MapAt(const StringMap& m, size_t i, KStr* key, KStr* value) {
  // Maps are small (labels, annotations); iteration by index is linear per step, which keeps
  // the ABI a plain function pair. Policies iterate maps rarely.
  auto it = m.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(i < m.size() ? i : 0));
  if (i >= m.size()) {
    *key = KStr{"", 0};
    *value = KStr{"", 0};
    return;
  }
  *key = Str(it->first);
  *value = Str(it->second);
}

template <typename T>
KList List(const std::vector<T*>& v) {
  return KList{reinterpret_cast<const void* const*>(v.data()), v.size()};
}

}  // namespace

const AbiFieldInfo* FindAbiField(std::string_view owner, std::string_view name) {
  for (const auto& f : kAbiFields)
    if (f.owner == owner && f.name == name) return &f;
  return nullptr;
}

}  // namespace kiln

namespace kiln {
namespace {

constexpr std::string_view ElemName(std::string_view e) { return e == "_" ? std::string_view{} : e; }

// Single-function kinds expose their address in AbiFieldInfo::host_fn; pair kinds do not.
#define KILN_SHAPE_FN_String(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_Int(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_Bool(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_Resource(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_StringMap(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_IntMap(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_Record(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_Job(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_TaskList(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_OptionalRecord(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_OptionalInt(fn) reinterpret_cast<const void*>(&fn)
#define KILN_SHAPE_FN_StringList(fn) nullptr
#define KILN_SHAPE_FN_RecordList(fn) nullptr

const AbiFieldInfo kShapeFields[] = {
#define KILN_X(owner, name, kind, access, target, elem)                                       \
  AbiFieldInfo{#owner, name, FieldKind::kind, FieldAccess::access, 0, #target,               \
               KILN_SHAPE_FN_##kind(target), ElemName(#elem)},
    KILN_ABI_SHAPE_FIELDS(KILN_X)
#undef KILN_X
};

#define KILN_SYM(fn) AbiHostSymbol{#fn, reinterpret_cast<const void*>(&fn)},
#define KILN_SYMS_String(fn) KILN_SYM(fn)
#define KILN_SYMS_Int(fn) KILN_SYM(fn)
#define KILN_SYMS_Bool(fn) KILN_SYM(fn)
#define KILN_SYMS_Resource(fn) KILN_SYM(fn)
#define KILN_SYMS_Record(fn) KILN_SYM(fn)
#define KILN_SYMS_Job(fn) KILN_SYM(fn)
#define KILN_SYMS_TaskList(fn) KILN_SYM(fn)
#define KILN_SYMS_OptionalRecord(fn) KILN_SYM(fn)
#define KILN_SYMS_OptionalInt(fn) KILN_SYM(fn)
#define KILN_SYMS_StringMap(fn) KILN_SYM(fn) KILN_SYM(fn##_size) KILN_SYM(fn##_at)
#define KILN_SYMS_IntMap(fn) KILN_SYM(fn) KILN_SYM(fn##_size) KILN_SYM(fn##_at)
#define KILN_SYMS_StringList(fn) KILN_SYM(fn##_size) KILN_SYM(fn##_at)
#define KILN_SYMS_RecordList(fn) KILN_SYM(fn##_size) KILN_SYM(fn##_at)
const AbiHostSymbol kShapeSymbols[] = {
#define KILN_X(owner, name, kind, access, target, elem) KILN_SYMS_##kind(target)
    KILN_ABI_SHAPE_FIELDS(KILN_X)
#undef KILN_X
};

const std::string_view kRecordNames[] = {
#define KILN_X(rec) #rec,
    KILN_ABI_RECORDS(KILN_X)
#undef KILN_X
};

}  // namespace

std::span<const AbiFieldInfo> AbiShapeFields() { return kShapeFields; }

const AbiFieldInfo* FindAbiShapeField(std::string_view owner, std::string_view name) {
  for (const auto& f : kShapeFields)
    if (f.owner == owner && f.name == name) return &f;
  return nullptr;
}

std::span<const AbiHostSymbol> AbiShapeHostSymbols() { return kShapeSymbols; }

std::span<const std::string_view> AbiRecordNames() { return kRecordNames; }

}  // namespace kiln

using kiln::Job;
using kiln::Node;
using kiln::Queue;
using kiln::Task;

#define KILN_MAP_FN(fn, Owner, member)                                                 \
  bool fn(const Owner* o, const char* key, size_t len, KStr* out) {                    \
    return kiln::MapGet(o->member, key, len, out);                                     \
  }                                                                                    \
  size_t fn##_size(const Owner* o) { return o->member.size(); }                        \
  void fn##_at(const Owner* o, size_t i, KStr* key, KStr* value) {                     \
    kiln::MapAt(o->member, i, key, value);                                             \
  }

extern "C" {

KStr kiln_task_uid(const Task* t) { return kiln::Str(t->uid); }
KStr kiln_task_name(const Task* t) { return kiln::Str(t->name); }
KStr kiln_task_namespace(const Task* t) { return kiln::Str(t->namespace_); }
KStr kiln_task_role(const Task* t) { return kiln::Str(t->role); }
KStr kiln_task_node_name(const Task* t) { return kiln::Str(t->node_name); }
KStr kiln_task_priority_class_name(const Task* t) { return kiln::Str(t->priority_class_name); }
bool kiln_task_preempt_never(const Task* t) {
  return t->preemption_policy == kiln::PreemptionPolicy::Never;
}
uint32_t kiln_task_transaction_status(const Task* t) {
  return static_cast<uint32_t>(t->TransactionStatus());
}
KILN_MAP_FN(kiln_task_label, Task, labels())
KILN_MAP_FN(kiln_task_annotation, Task, annotations())
KILN_MAP_FN(kiln_task_node_selector, Task, node_selector())

KStr kiln_job_uid(const Job* j) { return kiln::Str(j->uid); }
KStr kiln_job_name(const Job* j) { return kiln::Str(j->name); }
KStr kiln_job_namespace(const Job* j) { return kiln::Str(j->namespace_); }
KStr kiln_job_queue_name(const Job* j) { return kiln::Str(j->queue_name); }
KStr kiln_job_priority_class_name(const Job* j) { return kiln::Str(j->priority_class_name); }
void kiln_task_limits(const Task* t, kiln::Resource* out) { *out = t->limits(); }
void kiln_job_elastic_resources(const Job* j, kiln::Resource* out) {
  *out = j->GetElasticResources();
}
KList kiln_job_tasks(const Job* j) { return kiln::List(j->tasks); }
KILN_MAP_FN(kiln_job_annotation, Job, annotations)
KILN_MAP_FN(kiln_job_label, Job, labels)
// Not thread-safe (the text lives in the job): meant for session_close and other single-threaded
// points, which is where gang reads it.
KStr kiln_job_fit_error(const Job* j) {
  j->fit_error_cache = j->FitError();
  return kiln::Str(j->fit_error_cache);
}

KStr kiln_node_name(const Node* n) { return kiln::Str(n->name); }
void kiln_node_future_idle(const Node* n, kiln::Resource* out) { *out = n->FutureIdle(); }
int64_t kiln_node_task_count(const Node* n) { return static_cast<int64_t>(n->tasks.size()); }
KList kiln_node_tasks(const Node* n) { return kiln::List(n->tasks); }
KList kiln_node_affinity_tasks(const Node* n) { return kiln::List(n->affinity_tasks); }
KILN_MAP_FN(kiln_node_label, Node, labels)
KILN_MAP_FN(kiln_node_annotation, Node, annotations)

KStr kiln_queue_name(const Queue* q) { return kiln::Str(q->name); }
KStr kiln_queue_hierarchy(const Queue* q) { return kiln::Str(q->hierarchy); }
KStr kiln_queue_hierarchy_weights(const Queue* q) { return kiln::Str(q->hierarchy_weights); }
bool kiln_queue_is_leaf(const Queue* q) { return q->IsLeaf(); }
KList kiln_queue_children(const Queue* q) { return kiln::List(q->children); }
KList kiln_queue_jobs(const Queue* q) { return kiln::List(q->jobs); }
KILN_MAP_FN(kiln_queue_annotation, Queue, annotations)

// ---- Kubernetes placement shapes (KILN_ABI_SHAPE_FIELDS) ----

using kiln::HostPort;
using kiln::HyperNode;
using kiln::NumaCpu;
using kiln::LabelSelector;
using kiln::NodeSelectorTerm;
using kiln::PodAffinityTerm;
using kiln::PodDisruptionBudget;
using kiln::ResourceQuota;
using kiln::PreferredSchedulingTerm;
using kiln::SelectorRequirement;
using kiln::Taint;
using kiln::Toleration;
using kiln::TopologySpreadConstraint;
using kiln::WeightedPodAffinityTerm;

#define KILN_STR_FN(fn, Owner, expr) \
  KStr fn(const Owner* o) { return kiln::Str(expr); }
#define KILN_INT_FN(fn, Owner, expr) \
  int64_t fn(const Owner* o) { return static_cast<int64_t>(expr); }
#define KILN_RECLIST_FN(fn, Owner, expr)                                             \
  size_t fn##_size(const Owner* o) { return (expr).size(); }                         \
  const void* fn##_at(const Owner* o, size_t i) {                                    \
    const auto& v = (expr);                                                          \
    return i < v.size() ? static_cast<const void*>(&v[i]) : nullptr;                 \
  }
#define KILN_STRLIST_FN(fn, Owner, expr)                                             \
  size_t fn##_size(const Owner* o) { return (expr).size(); }                         \
  KStr fn##_at(const Owner* o, size_t i) {                                           \
    const auto& v = (expr);                                                          \
    return i < v.size() ? kiln::Str(v[i]) : KStr{"", 0};                             \
  }
#define KILN_OPTREC_FN(fn, Owner, expr)                                              \
  const void* fn(const Owner* o) {                                                   \
    const auto& v = (expr);                                                          \
    return v ? static_cast<const void*>(&*v) : nullptr;                              \
  }

}  // extern "C"

namespace {
const std::vector<NodeSelectorTerm> kNoTerms;
const std::vector<PreferredSchedulingTerm> kNoPreferred;
const std::vector<PodAffinityTerm> kNoPodTerms;
const std::vector<kiln::WeightedPodAffinityTerm> kNoWeighted;

const std::vector<NodeSelectorTerm>& RequiredNodeTerms(const Task* t) {
  const auto& na = t->affinity().node_affinity;
  return na && na->required ? *na->required : kNoTerms;
}
const std::vector<PreferredSchedulingTerm>& PreferredNodeTerms(const Task* t) {
  const auto& na = t->affinity().node_affinity;
  return na ? na->preferred : kNoPreferred;
}
const std::vector<PodAffinityTerm>& Required(const std::optional<kiln::PodAffinity>& a) {
  return a ? a->required : kNoPodTerms;
}
const std::vector<WeightedPodAffinityTerm>& Preferred(const std::optional<kiln::PodAffinity>& a) {
  return a ? a->preferred : kNoWeighted;
}
}  // namespace

extern "C" {

KILN_RECLIST_FN(kiln_task_tolerations, Task, o->tolerations())
bool kiln_task_has_required_node_affinity(const Task* o) {
  const auto& na = o->affinity().node_affinity;
  return na && na->required.has_value();
}
KILN_RECLIST_FN(kiln_task_required_node_affinity, Task, RequiredNodeTerms(o))
KILN_RECLIST_FN(kiln_task_preferred_node_affinity, Task, PreferredNodeTerms(o))
KILN_RECLIST_FN(kiln_task_required_pod_affinity, Task, Required(o->affinity().pod_affinity))
KILN_RECLIST_FN(kiln_task_preferred_pod_affinity, Task, Preferred(o->affinity().pod_affinity))
KILN_RECLIST_FN(kiln_task_required_pod_anti_affinity, Task,
                Required(o->affinity().pod_anti_affinity))
KILN_RECLIST_FN(kiln_task_preferred_pod_anti_affinity, Task,
                Preferred(o->affinity().pod_anti_affinity))
KILN_RECLIST_FN(kiln_task_topology_spread_constraints, Task, o->topology_spread_constraints())
KILN_RECLIST_FN(kiln_task_host_ports, Task, o->host_ports())
KILN_STRLIST_FN(kiln_task_images, Task, o->images())
KILN_RECLIST_FN(kiln_node_taints, Node, o->taints)

bool kiln_node_images(const Node* o, const char* key, size_t len, int64_t* out) {
  auto it = o->images.find(std::string_view(key, len));
  if (it == o->images.end()) {
    if (out) *out = 0;
    return false;
  }
  if (out) *out = it->second;
  return true;
}
size_t kiln_node_images_size(const Node* o) { return o->images.size(); }
void kiln_node_images_at(const Node* o, size_t i, KStr* key, int64_t* value) {
  if (i >= o->images.size()) {
    *key = KStr{"", 0};
    *value = 0;
    return;
  }
  auto it = o->images.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(i));
  *key = kiln::Str(it->first);
  *value = it->second;
}

KILN_STR_FN(kiln_taint_key, Taint, o->key)
KILN_STR_FN(kiln_taint_value, Taint, o->value)
KILN_STR_FN(kiln_taint_effect, Taint, o->effect)
KILN_STR_FN(kiln_toleration_key, Toleration, o->key)
KILN_STR_FN(kiln_toleration_op, Toleration, o->op)
KILN_STR_FN(kiln_toleration_value, Toleration, o->value)
KILN_STR_FN(kiln_toleration_effect, Toleration, o->effect)
bool kiln_toleration_seconds(const Toleration* o, int64_t* out) {
  if (!o->toleration_seconds) return false;
  if (out) *out = *o->toleration_seconds;
  return true;
}
KILN_STR_FN(kiln_selector_requirement_key, SelectorRequirement, o->key)
KILN_STR_FN(kiln_selector_requirement_op, SelectorRequirement, o->op)
KILN_STRLIST_FN(kiln_selector_requirement_values, SelectorRequirement, o->values)
KILN_MAP_FN(kiln_label_selector_match_labels, LabelSelector, match_labels)
KILN_RECLIST_FN(kiln_label_selector_match_expressions, LabelSelector, o->match_expressions)
KILN_RECLIST_FN(kiln_node_selector_term_match_expressions, NodeSelectorTerm, o->match_expressions)
KILN_RECLIST_FN(kiln_node_selector_term_match_fields, NodeSelectorTerm, o->match_fields)
KILN_INT_FN(kiln_preferred_scheduling_term_weight, PreferredSchedulingTerm, o->weight)
const void* kiln_preferred_scheduling_term_preference(const PreferredSchedulingTerm* o) {
  return &o->preference;
}
KILN_OPTREC_FN(kiln_pod_affinity_term_label_selector, PodAffinityTerm, o->label_selector)
KILN_STRLIST_FN(kiln_pod_affinity_term_namespaces, PodAffinityTerm, o->namespaces)
bool kiln_pod_affinity_term_has_namespace_selector(const PodAffinityTerm* o) {
  return o->namespace_selector.has_value();
}
KILN_OPTREC_FN(kiln_pod_affinity_term_namespace_selector, PodAffinityTerm, o->namespace_selector)
KILN_STR_FN(kiln_pod_affinity_term_topology_key, PodAffinityTerm, o->topology_key)
KILN_INT_FN(kiln_weighted_pod_affinity_term_weight, WeightedPodAffinityTerm, o->weight)
const void* kiln_weighted_pod_affinity_term_term(const WeightedPodAffinityTerm* o) {
  return &o->term;
}
KILN_INT_FN(kiln_topology_spread_max_skew, TopologySpreadConstraint, o->max_skew)
KILN_STR_FN(kiln_topology_spread_topology_key, TopologySpreadConstraint, o->topology_key)
KILN_STR_FN(kiln_topology_spread_when_unsatisfiable, TopologySpreadConstraint,
            o->when_unsatisfiable)
KILN_OPTREC_FN(kiln_topology_spread_label_selector, TopologySpreadConstraint, o->label_selector)
bool kiln_topology_spread_min_domains(const TopologySpreadConstraint* o, int64_t* out) {
  if (!o->min_domains) return false;
  if (out) *out = *o->min_domains;
  return true;
}
KILN_STRLIST_FN(kiln_topology_spread_match_label_keys, TopologySpreadConstraint,
                o->match_label_keys)
KILN_STR_FN(kiln_topology_spread_node_affinity_policy, TopologySpreadConstraint,
            o->node_affinity_policy)
KILN_STR_FN(kiln_topology_spread_node_taints_policy, TopologySpreadConstraint,
            o->node_taints_policy)
KILN_INT_FN(kiln_host_port_host_port, HostPort, o->host_port)
KILN_INT_FN(kiln_host_port_container_port, HostPort, o->container_port)
KILN_STR_FN(kiln_host_port_protocol, HostPort, o->protocol)
KILN_STR_FN(kiln_host_port_host_ip, HostPort, o->host_ip)

KStr kiln_queue_parent_name(const Queue* o) { return kiln::Str(o->parent_name); }
bool kiln_queue_has_affinity(const Queue* o) { return o->has_affinity; }
KILN_STRLIST_FN(kiln_queue_node_group_required, Queue, o->node_group_affinity.required)
KILN_STRLIST_FN(kiln_queue_node_group_preferred, Queue, o->node_group_affinity.preferred)
KILN_STRLIST_FN(kiln_queue_node_group_anti_required, Queue, o->node_group_anti_affinity.required)
KILN_STRLIST_FN(kiln_queue_node_group_anti_preferred, Queue,
                o->node_group_anti_affinity.preferred)

KILN_STR_FN(kiln_pdb_name, PodDisruptionBudget, o->name)
KILN_STR_FN(kiln_pdb_namespace, PodDisruptionBudget, o->namespace_)
const void* kiln_pdb_selector(const PodDisruptionBudget* o) { return &o->selector; }
KILN_INT_FN(kiln_pdb_disruptions_allowed, PodDisruptionBudget, o->disruptions_allowed)
KILN_STRLIST_FN(kiln_pdb_disrupted_pods, PodDisruptionBudget, o->disrupted_pods)
KILN_STR_FN(kiln_resource_quota_name, ResourceQuota, o->name)
KILN_STR_FN(kiln_resource_quota_namespace, ResourceQuota, o->namespace_)
void kiln_resource_quota_hard(const ResourceQuota* o, kiln::Resource* out) { *out = o->hard; }
void kiln_resource_quota_used(const ResourceQuota* o, kiln::Resource* out) { *out = o->used; }
KILN_STRLIST_FN(kiln_resource_quota_hard_names, ResourceQuota, o->hard_names)

KILN_STR_FN(kiln_hyper_node_name, HyperNode, o->name)
KILN_INT_FN(kiln_hyper_node_tier, HyperNode, o->tier)
KILN_STR_FN(kiln_hyper_node_tier_name, HyperNode, o->tier_name)
bool kiln_hyper_node_is_top(const HyperNode* o) { return o->top; }
const void* kiln_hyper_node_parent(const HyperNode* o) { return o->parent; }
size_t kiln_hyper_node_children_size(const HyperNode* o) { return o->children.size(); }
const void* kiln_hyper_node_children_at(const HyperNode* o, size_t i) {
  return i < o->children.size() ? o->children[i] : nullptr;
}
size_t kiln_hyper_node_ancestors_size(const HyperNode* o) { return o->ancestors.size(); }
const void* kiln_hyper_node_ancestors_at(const HyperNode* o, size_t i) {
  return i < o->ancestors.size() ? o->ancestors[i] : nullptr;
}
KILN_INT_FN(kiln_hyper_node_node_count, HyperNode, o->nodes.size())
void kiln_hyper_node_allocatable(const HyperNode* o, kiln::Resource* out) { *out = o->allocatable; }
void kiln_hyper_node_idle(const HyperNode* o, kiln::Resource* out) { *out = o->idle; }
void kiln_hyper_node_future_idle(const HyperNode* o, kiln::Resource* out) { *out = o->future_idle; }
void kiln_hyper_node_used(const HyperNode* o, kiln::Resource* out) { *out = o->Used(); }
bool kiln_job_has_network_topology(const Job* o) { return o->HasNetworkTopology(); }
const void* kiln_job_allocated_hyper_node(const Job* o) { return o->allocated_hyper_node; }
const void* kiln_job_sub_job_allocated_hyper_node(const Job* o) {
  return o->sub_job_allocated_hyper_node;
}
const void* kiln_task_job_allocated_hyper_node(const Task* o) {
  return o->job_allocated_hyper_node;
}
const void* kiln_node_hyper_node(const Node* o) { return o->hyper_node; }

using kiln::SubGroupPolicy;
using kiln::SubJob;
KILN_STR_FN(kiln_sub_job_uid, SubJob, o->uid)
KILN_STR_FN(kiln_sub_job_group, SubJob, o->group)
bool kiln_sub_job_is_default(const SubJob* o) { return o->IsDefault(); }
const void* kiln_sub_job_job(const SubJob* o) { return o->job; }
KList kiln_sub_job_tasks(const SubJob* o) { return kiln::List(o->tasks); }
KILN_INT_FN(kiln_sub_job_task_count, SubJob, o->tasks.size())
KILN_INT_FN(kiln_sub_job_min_available, SubJob, o->min_available)
KILN_INT_FN(kiln_sub_job_match_index, SubJob, o->match_index)
KILN_INT_FN(kiln_sub_job_priority, SubJob, o->priority)
KILN_INT_FN(kiln_sub_job_ready_task_num, SubJob, o->ReadyTaskNum())
KILN_INT_FN(kiln_sub_job_waiting_task_num, SubJob, o->WaitingTaskNum())
KILN_INT_FN(kiln_sub_job_pending_best_effort_task_num, SubJob, o->PendingBestEffortTaskNum())
bool kiln_sub_job_is_ready(const SubJob* o) { return o->IsReady(); }
bool kiln_sub_job_is_pipelined(const SubJob* o) { return o->IsPipelined(); }
void kiln_sub_job_min_resources(const SubJob* o, kiln::Resource* out) { *out = o->PendingRequest(); }
bool kiln_sub_job_has_network_topology(const SubJob* o) { return o->HasNetworkTopology(); }
bool kiln_sub_job_hard_topology(const SubJob* o) { return o->hard_topology; }
KILN_INT_FN(kiln_sub_job_highest_tier_allowed, SubJob, o->highest_tier_allowed)
const void* kiln_sub_job_allocated_hyper_node(const SubJob* o) { return o->allocated_hyper_node; }
const void* kiln_sub_job_nominated_hyper_node(const SubJob* o) { return o->nominated_hyper_node; }
KILN_STR_FN(kiln_sub_group_policy_name, SubGroupPolicy, o->name)
KILN_INT_FN(kiln_sub_group_policy_sub_group_size, SubGroupPolicy, o->sub_group_size.value_or(1))
KILN_INT_FN(kiln_sub_group_policy_min_sub_groups, SubGroupPolicy, o->min_sub_groups.value_or(0))
KILN_STRLIST_FN(kiln_sub_group_policy_match_label_keys, SubGroupPolicy, o->match_label_keys)
size_t kiln_job_sub_jobs_size(const Job* o) { return o->sub_jobs.size(); }
const void* kiln_job_sub_jobs_at(const Job* o, size_t i) {
  return i < o->sub_jobs.size() ? o->sub_jobs[i].get() : nullptr;
}
size_t kiln_job_sub_group_policy_size(const Job* o) { return o->sub_group_policy.size(); }
const void* kiln_job_sub_group_policy_at(const Job* o, size_t i) {
  return i < o->sub_group_policy.size() ? &o->sub_group_policy[i] : nullptr;
}
const void* kiln_task_sub_job(const Task* o) { return o->sub_job; }
bool kiln_node_has_numa(const Node* o) { return o->numa != nullptr; }
bool kiln_node_numa_policies(const Node* o, const char* key, size_t len, KStr* out) {
  static const kiln::StringMap kNone;
  return kiln::MapGet(o->numa ? o->numa->policies : kNone, key, len, out);
}
size_t kiln_node_numa_policies_size(const Node* o) { return o->numa ? o->numa->policies.size() : 0; }
void kiln_node_numa_policies_at(const Node* o, size_t i, KStr* key, KStr* value) {
  static const kiln::StringMap kNone;
  kiln::MapAt(o->numa ? o->numa->policies : kNone, i, key, value);
}
void kiln_node_numa_reserved(const Node* o, kiln::Resource* out) {
  *out = o->numa ? o->numa->reserved : kiln::Resource{};
}
size_t kiln_node_numa_cpus_size(const Node* o) { return o->numa ? o->numa->cpus.size() : 0; }
const void* kiln_node_numa_cpus_at(const Node* o, size_t i) {
  return o->numa && i < o->numa->cpus.size() ? &o->numa->cpus[i] : nullptr;
}
KILN_INT_FN(kiln_numa_cpu_id, NumaCpu, o->id)
KILN_INT_FN(kiln_numa_cpu_numa, NumaCpu, o->numa)
KILN_INT_FN(kiln_numa_cpu_socket, NumaCpu, o->socket)
KILN_INT_FN(kiln_numa_cpu_core, NumaCpu, o->core)
bool kiln_numa_cpu_allocatable(const NumaCpu* o) { return o->allocatable; }
bool kiln_task_qos_guaranteed(const Task* o) { return o->qos_guaranteed; }

int32_t kiln_resource_id(const char* name, size_t len) {
  auto id = kiln::ResourceRegistry::Intern(std::string_view(name, len));
  return id.ok() ? static_cast<int32_t>(*id) : -1;
}

KStr kiln_resource_name(int32_t id) {
  if (id < 0 || id >= kiln::ResourceRegistry::Count()) return KStr{"", 0};
  std::string_view n = kiln::ResourceRegistry::Name(static_cast<kiln::ResourceId>(id));
  return KStr{n.data(), n.size()};
}

}  // extern "C"
