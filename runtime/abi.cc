// Host functions of the ABI field table (runtime/abi.h). Each reads one object field; they never
// allocate, and the strings and lists they return live as long as the session's objects.

#include "runtime/abi.h"

#include <cstring>

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
KILN_MAP_FN(kiln_task_label, Task, labels)
KILN_MAP_FN(kiln_task_annotation, Task, annotations)
KILN_MAP_FN(kiln_task_node_selector, Task, node_selector)

KStr kiln_job_uid(const Job* j) { return kiln::Str(j->uid); }
KStr kiln_job_name(const Job* j) { return kiln::Str(j->name); }
KStr kiln_job_namespace(const Job* j) { return kiln::Str(j->namespace_); }
KStr kiln_job_queue_name(const Job* j) { return kiln::Str(j->queue_name); }
KStr kiln_job_priority_class_name(const Job* j) { return kiln::Str(j->priority_class_name); }
void kiln_job_elastic_resources(const Job* j, kiln::Resource* out) {
  *out = j->GetElasticResources();
}
int64_t kiln_job_task_count(const Job* j) { return j->TaskCount(); }
int64_t kiln_job_ready_task_num(const Job* j) { return j->ReadyTaskNum(); }
int64_t kiln_job_waiting_task_num(const Job* j) { return j->WaitingTaskNum(); }
int64_t kiln_job_valid_task_num(const Job* j) { return j->ValidTaskNum(); }
int64_t kiln_job_pending_best_effort_task_num(const Job* j) {
  return j->PendingBestEffortTaskNum();
}
int64_t kiln_job_task_min_available_total(const Job* j) { return j->task_min_available_total; }
bool kiln_job_is_ready(const Job* j) { return j->IsReady(); }
bool kiln_job_is_pipelined(const Job* j) { return j->IsPipelined(); }
bool kiln_job_is_starving(const Job* j) { return j->IsStarving(); }
bool kiln_job_check_task_valid(const Job* j) { return j->CheckTaskValid(); }
bool kiln_job_check_task_ready(const Job* j) { return j->CheckTaskReady(); }
bool kiln_job_check_task_pipelined(const Job* j) { return j->CheckTaskPipelined(); }
bool kiln_job_check_task_starving(const Job* j) { return j->CheckTaskStarving(); }
KList kiln_job_tasks(const Job* j) { return kiln::List(j->tasks); }
KILN_MAP_FN(kiln_job_annotation, Job, annotations)
KILN_MAP_FN(kiln_job_label, Job, labels)

KStr kiln_node_name(const Node* n) { return kiln::Str(n->name); }
void kiln_node_future_idle(const Node* n, kiln::Resource* out) { *out = n->FutureIdle(); }
int64_t kiln_node_task_count(const Node* n) { return static_cast<int64_t>(n->tasks.size()); }
KList kiln_node_tasks(const Node* n) { return kiln::List(n->tasks); }
KILN_MAP_FN(kiln_node_label, Node, labels)
KILN_MAP_FN(kiln_node_annotation, Node, annotations)

KStr kiln_queue_name(const Queue* q) { return kiln::Str(q->name); }
KStr kiln_queue_hierarchy(const Queue* q) { return kiln::Str(q->hierarchy); }
KStr kiln_queue_hierarchy_weights(const Queue* q) { return kiln::Str(q->hierarchy_weights); }
bool kiln_queue_is_leaf(const Queue* q) { return q->IsLeaf(); }
KList kiln_queue_children(const Queue* q) { return kiln::List(q->children); }
KList kiln_queue_jobs(const Queue* q) { return kiln::List(q->jobs); }
KILN_MAP_FN(kiln_queue_annotation, Queue, annotations)

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
