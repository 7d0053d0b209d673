#include "runtime/model.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <iterator>
#include <map>

#include "runtime/enum_names.h"
#include "runtime/shared_value.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Enums

namespace {

constexpr EnumName<TaskStatus> kTaskStatusNames[] = {
    {TaskStatus::Pending, "Pending"},     {TaskStatus::Allocated, "Allocated"},
    {TaskStatus::Pipelined, "Pipelined"}, {TaskStatus::Binding, "Binding"},
    {TaskStatus::Bound, "Bound"},         {TaskStatus::Running, "Running"},
    {TaskStatus::Releasing, "Releasing"}, {TaskStatus::Succeeded, "Succeeded"},
    {TaskStatus::Failed, "Failed"},       {TaskStatus::Unknown, "Unknown"}};
static_assert(std::size(kTaskStatusNames) == kTaskStatusCount);

constexpr EnumName<PodGroupPhase> kPodGroupPhaseNames[] = {
    {PodGroupPhase::Pending, "Pending"}, {PodGroupPhase::Running, "Running"},
    {PodGroupPhase::Unknown, "Unknown"}, {PodGroupPhase::Inqueue, "Inqueue"},
    {PodGroupPhase::Completed, "Completed"}};

constexpr EnumName<QueueState> kQueueStateNames[] = {{QueueState::Open, "Open"},
                                                     {QueueState::Closed, "Closed"},
                                                     {QueueState::Closing, "Closing"},
                                                     {QueueState::Unknown, "Unknown"}};

}  // namespace

std::string_view ToString(TaskStatus s) { return NameOf(kTaskStatusNames, s, "Unknown"); }

std::optional<TaskStatus> ParseTaskStatus(std::string_view s) { return ValueOf(kTaskStatusNames, s); }

std::string_view ToString(PodGroupPhase p) { return NameOf(kPodGroupPhaseNames, p, "Unknown"); }

// An unset phase is Pending, as a PodGroup the controller has not reconciled yet is.
std::optional<PodGroupPhase> ParsePodGroupPhase(std::string_view s) {
  return s.empty() ? PodGroupPhase::Pending : ValueOf(kPodGroupPhaseNames, s);
}

std::string_view ToString(QueueState s) { return NameOf(kQueueStateNames, s, "Unknown"); }

// An unset state is Open, as a queue the controller has not reconciled yet is.
std::optional<QueueState> ParseQueueState(std::string_view s) {
  return s.empty() ? QueueState::Open : ValueOf(kQueueStateNames, s);
}

// ---------------------------------------------------------------------------------------------
// Task

bool PodShape::empty() const {
  return labels.empty() && annotations.empty() && node_selector.empty() && tolerations.empty() &&
         !affinity.node_affinity && !affinity.pod_affinity && !affinity.pod_anti_affinity &&
         topology_spread_constraints.empty() && host_ports.empty() && images.empty() &&
         limits.IsEmpty() && !limits.HasScalars();
}

const std::shared_ptr<const PodShape>& PodShape::Empty() { return SharedEmpty<PodShape>(); }

PodShape& Task::mutable_shape() { return MutableShared(shape); }

void Task::SetRequests(const Resource& container_requests) {
  SetResreq(std::make_shared<const Resource>(ResreqOf(container_requests)));
}

Resource Task::ResreqOf(const Resource& container_requests) {
  Resource r = container_requests;
  r.AddScalar(kPods, 1);
  return r;
}

void Task::SetResreq(std::shared_ptr<const Resource> resreq) {
  resreq_owner_ = std::move(resreq);
  resreq_ = resreq_owner_.get();
  best_effort = resreq_->IsEmpty();
}

Resource& Task::mutable_resreq() {
  Resource& r = MutableShared(resreq_owner_);
  resreq_ = &r;
  return r;
}

// ---------------------------------------------------------------------------------------------
// Job

namespace {
constexpr uint32_t kReadyMask = kAllocatedStatusMask | TaskStatus::Succeeded;
constexpr uint32_t kValidMask =
    kAllocatedStatusMask | TaskStatus::Succeeded | TaskStatus::Pipelined | TaskStatus::Pending;
constexpr uint32_t kOccupiedMask = kReadyMask | TaskStatus::Pipelined;

int32_t SumStatus(const std::array<int32_t, kTaskStatusCount>& counts, uint32_t mask) {
  int32_t n = 0;
  for (int i = 0; i < kTaskStatusCount; ++i)
    if (mask & (1u << i)) n += counts[i];
  return n;
}

// Which of the four per-role checks a role currently fails (bit per check).
enum : uint32_t { kShortValid = 1, kShortReady = 2, kShortPipelined = 4, kShortStarving = 8 };

uint32_t ShortChecks(const Job::Role& r) {
  if (r.min_available == 0) return 0;
  uint32_t bits = 0;
  if (SumStatus(r.status_count, kValidMask) < r.min_available) bits |= kShortValid;
  if (SumStatus(r.status_count, kReadyMask) + r.pending_empty_init < r.min_available)
    bits |= kShortReady;
  int32_t occupied = SumStatus(r.status_count, kOccupiedMask);
  if (occupied + r.pending_empty_init < r.min_available) bits |= kShortPipelined;
  if (occupied < r.min_available) bits |= kShortStarving;
  return bits;
}

// Adds (sign 1) or removes (sign -1) a role's failed checks from the job's counts.
void CountShortChecks(Job& j, uint32_t bits, int sign) {
  if (bits & kShortValid) j.roles_short_valid += sign;
  if (bits & kShortReady) j.roles_short_ready += sign;
  if (bits & kShortPipelined) j.roles_short_pipelined += sign;
  if (bits & kShortStarving) j.roles_short_starving += sign;
}
}  // namespace

int32_t Job::RoleSlot(std::string_view role) {
  for (size_t i = 0; i < roles.size(); ++i)
    if (roles[i].name == role) return static_cast<int32_t>(i);
  Role r;
  r.name = std::string(role);
  auto it = task_min_available.find(role);
  r.min_available = it == task_min_available.end() ? 0 : it->second;
  CountShortChecks(*this, ShortChecks(r), 1);
  roles.push_back(std::move(r));
  return static_cast<int32_t>(roles.size() - 1);
}

namespace {
// The job's status counters for one task entering (sign 1) or leaving (sign -1) a status.
void CountTask(Job& j, TaskStatus status, int sign) {
  uint32_t bit = static_cast<uint32_t>(status);
  if (bit & kReadyMask) j.ready_num += sign;
  if (status == TaskStatus::Pipelined) j.waiting_num += sign;
  if (bit & kValidMask) j.valid_num += sign;
}

void UpdateShortChecks(Job& j, uint32_t before, uint32_t after) {
  if (before == after) return;
  CountShortChecks(j, before, -1);
  CountShortChecks(j, after, 1);
}

void IndexInsert(Job& j, Task* t) {
  auto& list = j.by_status[StatusSlot(t->status)];
  t->job_status_pos = static_cast<int32_t>(list.size());
  list.push_back(t);
  Job::Role& role = j.roles[t->role_slot];
  uint32_t short_before = ShortChecks(role);
  ++role.status_count[StatusSlot(t->status)];
  CountTask(j, t->status, 1);
  if (t->status == TaskStatus::Pending && t->best_effort) {
    ++j.pending_best_effort;
    ++role.pending_empty_init;
  }
  UpdateShortChecks(j, short_before, ShortChecks(role));
  if (AllocatedStatus(t->status)) j.allocated.Add(t->resreq());
}

void IndexErase(Job& j, Task* t) {
  auto& list = j.by_status[StatusSlot(t->status)];
  assert(t->job_status_pos >= 0 && t->job_status_pos < static_cast<int32_t>(list.size()) &&
         list[t->job_status_pos] == t);
  Task* last = list.back();
  list[t->job_status_pos] = last;
  last->job_status_pos = t->job_status_pos;
  list.pop_back();
  t->job_status_pos = -1;
  Job::Role& role = j.roles[t->role_slot];
  uint32_t short_before = ShortChecks(role);
  --role.status_count[StatusSlot(t->status)];
  CountTask(j, t->status, -1);
  if (t->status == TaskStatus::Pending && t->best_effort) {
    --j.pending_best_effort;
    --role.pending_empty_init;
  }
  UpdateShortChecks(j, short_before, ShortChecks(role));
  if (AllocatedStatus(t->status)) j.allocated.SubUnchecked(t->resreq());
}
}  // namespace

void Job::AddTask(Task* t) {
  t->job = this;
  t->role_slot = RoleSlot(t->role);
  tasks.push_back(t);
  ++task_num;
  total_request.Add(t->resreq());
  IndexInsert(*this, t);
}

void Job::UpdateTaskStatus(Task* t, TaskStatus status) {
  assert(t->job == this);
  if (t->status == status) return;
  IndexErase(*this, t);
  t->status = status;
  IndexInsert(*this, t);
  // A scorer may read the statuses of a node's tasks: the node changed too, even before the
  // session re-accounts the task there (Node::UpdateTask).
  if (t->node != nullptr) ++t->node->version;
}

Job::SchedulingReason Job::TaskSchedulingReason(const Task* t) const {
  TaskStatus status = t->TransactionStatus();
  const std::string& node = t->TransactionNode();
  SchedulingReason r;
  r.message = job_fit_error;
  switch (status) {
    case TaskStatus::Allocated:
      r.reason = "Schedulable";
      r.message = fmt::format("Pod {}/{} can possibly be assigned to {}, once minAvailable is satisfied",
                              t->namespace_, t->name, node);
      return r;
    case TaskStatus::Pipelined:
      r.reason = "Unschedulable";
      r.message = fmt::format(
          "Pod {}/{} can possibly be assigned to {}, once resource is released and minAvailable is "
          "satisfied",
          t->namespace_, t->name, node);
      if (t->eviction_occurred) r.nominated_node = node;
      return r;
    case TaskStatus::Pending: {
      r.reason = "Unschedulable";
      auto it = nodes_fit_errors.find(t->index);
      if (it != nodes_fit_errors.end()) r.message = it->second.Message();
      return r;
    }
    default:
      r.reason = std::string(ToString(status));
      return r;
  }
}

namespace {
// "N key" entries sorted as strings, like Volcano's sortReasonsHistogram.
std::string Histogram(const std::map<std::string, int>& counts) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : counts) parts.push_back(fmt::format("{} {}", v, k));
  std::sort(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, ", "));
}
}  // namespace

std::string Job::FitError() const {
  std::map<std::string, int> counts;
  for (int i = 0; i < kTaskStatusCount; ++i)
    if (!by_status[i].empty())
      counts[std::string(ToString(StatusFromSlot(i)))] += static_cast<int>(by_status[i].size());
  counts["minAvailable"] = static_cast<int>(min_available);
  std::string msg = fmt::format("{}, {}", IsReady() ? "pod group is ready" : "pod group is not ready",
                                Histogram(counts));
  std::map<std::string, int> pending;
  for (const Task* t : TasksWith(TaskStatus::Pending)) ++pending[TaskSchedulingReason(t).reason];
  if (!pending.empty()) msg += fmt::format("; Pending: {}", Histogram(pending));
  if (!job_fit_error.empty()) {
    msg += ". Origin reason is: " + job_fit_error;
  } else {
    for (const Task* t : tasks) {
      auto it = nodes_fit_errors.find(t->index);
      if (it != nodes_fit_errors.end()) {
        msg += fmt::format(". Origin reason is {}: {}", t->name, it->second.Message());
        break;
      }
    }
  }
  // Kiln's addition (runtime/topology_trail.h): why allocate's HyperNode search left the job out.
  if (!topology_reason.empty() && msg.find(topology_reason) == std::string::npos)
    msg += (msg.back() == '.' ? " " : ". ") + topology_reason;
  return msg;
}

void Job::SetCondition(PodGroupCondition c) {
  for (auto& existing : conditions) {
    if (existing.type == c.type) {
      existing = std::move(c);
      return;
    }
  }
  conditions.push_back(std::move(c));
}

const PodGroupCondition* Job::FindCondition(std::string_view type) const {
  for (const auto& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Node

Resource Node::FutureIdle() const {
  Resource r = idle;
  r.Add(releasing);
  r.SubUnchecked(pipelined);
  return r;
}

// Kubernetes' non-zero defaults (pkg/scheduler/util: DefaultMilliCPURequest,
// DefaultMemoryRequest), for a pod that requests none of the resource.
constexpr double kNonZeroMilliCpu = 100;
constexpr double kNonZeroMemory = 200.0 * 1024 * 1024;

void AddNonZeroRequest(Resource& sum, const Resource& request, double sign) {
  sum.values[kCpu] += sign * (request.cpu() > 0 ? request.cpu() : kNonZeroMilliCpu);
  sum.values[kMemory] += sign * (request.memory() > 0 ? request.memory() : kNonZeroMemory);
}

void Node::RefreshFitFuture() {
  const bool sub_scalars = ((idle.present | releasing.present) & ~Resource::kBaseMask) != 0;
  for (int id = 0; id < kMaxResources; ++id) {
    double v = idle.values[id] + releasing.values[id];
    if (id == kCpu || id == kMemory || sub_scalars) v -= pipelined.values[id];
    fit_future[id] = v;
  }
}

Status Node::AddTask(Task* t) {
  Status s = PlaceTask(t);
  if (s.ok()) RefreshFitFuture();
  return s;
}

Status Node::PlaceTask(Task* t) {
  if (t->node_pos >= 0)
    return Error{fmt::format("task <{}/{}> already on node <{}>", t->namespace_, t->name,
                             t->node ? t->node->name : std::string("?")),
                 {}};
  switch (t->status) {
    case TaskStatus::Releasing:
      idle.SubUnchecked(t->resreq());
      releasing.Add(t->resreq());
      used.Add(t->resreq());
      break;
    case TaskStatus::Pipelined:
      pipelined.Add(t->resreq());
      break;
    case TaskStatus::Binding: {
      ResourceIdList insufficient;
      if (!t->resreq().LessEqualWithResourcesName(idle, DimensionDefault::Zero, &insufficient))
        return Error{fmt::format("node <{}> has not enough resources ({}) for task <{}/{}>", name,
                                 insufficient.Join(), t->namespace_, t->name),
                     {}};
      idle.SubUnchecked(t->resreq());
      used.Add(t->resreq());
      break;
    }
    default:
      idle.SubUnchecked(t->resreq());
      used.Add(t->resreq());
      break;
  }
  t->node = this;
  t->node_status = t->status;
  ++version;
  AddNonZeroRequest(nonzero_requested, t->resreq(), 1.0);
  t->node_pos = static_cast<int32_t>(tasks.size());
  tasks.push_back(t);
  if (t->has_pod_affinity_terms) {
    t->affinity_pos = static_cast<int32_t>(affinity_tasks.size());
    affinity_tasks.push_back(t);
    if (affinity_tasks.size() == 1 && affinity_nodes != nullptr) {
      affinity_node_pos = static_cast<int32_t>(affinity_nodes->size());
      affinity_nodes->push_back(this);
    }
  }
  return Status::Ok();
}

void Node::RemoveTask(Task* t) {
  if (t->node != this || t->node_pos < 0) return;
  switch (t->node_status) {
    case TaskStatus::Releasing:
      releasing.SubUnchecked(t->resreq());
      idle.Add(t->resreq());
      used.SubUnchecked(t->resreq());
      break;
    case TaskStatus::Pipelined:
      pipelined.SubUnchecked(t->resreq());
      break;
    default:
      idle.Add(t->resreq());
      used.SubUnchecked(t->resreq());
      break;
  }
  ++version;
  RefreshFitFuture();
  AddNonZeroRequest(nonzero_requested, t->resreq(), -1.0);
  Task* last = tasks.back();
  tasks[t->node_pos] = last;
  last->node_pos = t->node_pos;
  tasks.pop_back();
  t->node_pos = -1;
  if (t->affinity_pos >= 0) {
    Task* last_affine = affinity_tasks.back();
    affinity_tasks[t->affinity_pos] = last_affine;
    last_affine->affinity_pos = t->affinity_pos;
    affinity_tasks.pop_back();
    t->affinity_pos = -1;
    if (affinity_tasks.empty() && affinity_node_pos >= 0) {
      Node* last_node = affinity_nodes->back();
      (*affinity_nodes)[affinity_node_pos] = last_node;
      last_node->affinity_node_pos = affinity_node_pos;
      affinity_nodes->pop_back();
      affinity_node_pos = -1;
    }
  }
  t->node = nullptr;
}

Status Node::UpdateTask(Task* t) {
  TaskStatus new_status = t->status;
  TaskStatus old_status = t->node_status;
  RemoveTask(t);
  Status s = AddTask(t);
  if (!s.ok()) {
    // Put the task back as it was so the node's accounting is unchanged.
    t->status = old_status;
    Status restore = AddTask(t);
    (void)restore;
    t->status = new_status;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Cluster

Task& Cluster::NewTask() { return tasks_.New(); }
Job& Cluster::NewJob() { return jobs_.New(); }
Node& Cluster::NewNode() { return nodes_.New(); }
Queue& Cluster::NewQueue() { return *queues_.emplace_back(std::make_unique<Queue>()); }
PriorityClass& Cluster::NewPriorityClass() {
  return *priority_classes_.emplace_back(std::make_unique<PriorityClass>());
}
PodDisruptionBudget& Cluster::NewPdb() {
  PodDisruptionBudget& p = *pdbs_.emplace_back(std::make_unique<PodDisruptionBudget>());
  pdb_ptrs_.push_back(&p);
  return p;
}
ResourceQuota& Cluster::NewResourceQuota() {
  ResourceQuota& q = *resource_quotas_.emplace_back(std::make_unique<ResourceQuota>());
  quota_ptrs_.push_back(&q);
  return q;
}

namespace {
bool HasPodAffinityTerms(const Affinity& a) {
  auto any = [](const std::optional<PodAffinity>& p) {
    return p.has_value() && (!p->required.empty() || !p->preferred.empty());
  };
  return any(a.pod_affinity) || any(a.pod_anti_affinity);
}
}  // namespace

Status Cluster::Link() {
  task_ptrs_.clear();
  job_ptrs_.clear();
  node_ptrs_.clear();
  queue_ptrs_.clear();
  orphan_ptrs_.clear();
  job_by_uid_.clear();
  queue_by_name_.clear();
  pc_by_name_.clear();
  total_resource_ = Resource{};
  affinity_nodes_->clear();
  // Sized once: at 100k tasks, growing the uid index rehash by rehash was a quarter of the
  // snapshot. Nothing iterates these maps, so their bucket counts change no order.
  task_ptrs_.reserve(tasks_.size());
  task_by_uid_.Reset(tasks_.size());
  job_ptrs_.reserve(jobs_.size());
  job_by_uid_.reserve(jobs_.size());
  node_ptrs_.reserve(nodes_.size());
  node_names_.Clear();
  node_names_.Reserve(nodes_.size());

  const PriorityClass* global_default = nullptr;
  for (auto& pc : priority_classes_) {
    if (!pc_by_name_.emplace(pc->name, pc.get()).second)
      return Error{fmt::format("duplicate priority class \"{}\"", pc->name), {}};
    if (pc->global_default) global_default = pc.get();
  }

  for (auto& q : queues_) {
    if (!queue_by_name_.emplace(q->name, q.get()).second)
      return Error{fmt::format("duplicate queue \"{}\"", q->name), {}};
    q->index = static_cast<int64_t>(queue_ptrs_.size());
    q->children.clear();
    q->jobs.clear();
    q->parent = nullptr;
    queue_ptrs_.push_back(q.get());
  }
  for (Queue* q : queue_ptrs_) {
    if (q->parent_name.empty()) continue;
    auto it = queue_by_name_.find(q->parent_name);
    if (it == queue_by_name_.end()) continue;  // a dangling parent leaves the queue a root
    q->parent = it->second;
    it->second->children.push_back(q);
  }

  for (Node* n : nodes_) {
    if (!node_names_.Add(n->name))
      return Error{fmt::format("duplicate node \"{}\"", n->name), {}};
    n->index = static_cast<int64_t>(node_ptrs_.size());
    n->idle = n->allocatable;
    n->used = Resource{};
    n->releasing = Resource{};
    n->pipelined = Resource{};
    n->nonzero_requested = Resource{};
    ++n->version;
    n->tasks.clear();
    n->affinity_tasks.clear();
    n->affinity_nodes = affinity_nodes_.get();
    n->affinity_node_pos = -1;
    node_ptrs_.push_back(n);
    total_resource_.Add(n->allocatable);
  }

  for (Job* j : jobs_) {
    if (!job_by_uid_.emplace(j->uid, j).second)
      return Error{fmt::format("duplicate job \"{}\"", j->uid), {}};
    auto qit = queue_by_name_.find(j->queue_name);
    j->queue = qit == queue_by_name_.end() ? nullptr : qit->second;
    j->tasks.clear();
    for (auto& list : j->by_status) list.clear();
    j->roles.clear();
    j->task_num = j->ready_num = j->waiting_num = j->valid_num = 0;
    j->pending_best_effort = 0;
    j->roles_short_valid = j->roles_short_ready = j->roles_short_pipelined = 0;
    j->roles_short_starving = 0;
    j->allocated = Resource{};
    j->total_request = Resource{};
    j->task_min_available_total = 0;
    for (const auto& [role, n] : j->task_min_available) {
      j->task_min_available_total += n;
      j->RoleSlot(role);
    }
    if (!j->priority_class_name.empty()) {
      auto pit = pc_by_name_.find(j->priority_class_name);
      if (pit != pc_by_name_.end()) {
        j->priority = pit->second->value;
      } else {
        j->priority = global_default ? global_default->value : 0;
      }
    } else {
      j->priority = global_default ? global_default->value : 0;
    }
    if (j->queue == nullptr) {
      spdlog::debug("job {} dropped from the snapshot: queue \"{}\" does not exist", j->uid,
                    j->queue_name);
      continue;
    }
    j->index = static_cast<int64_t>(job_ptrs_.size());
    job_ptrs_.push_back(j);
    j->queue->jobs.push_back(j);
  }

  // A job's tasks are next to each other: the previous task's job is looked up again only
  // when the uid changes (one string hash per job instead of per task).
  Job* last_job = nullptr;
  // The uids' hashes first, in one pass whose reads do not wait on each other; then each insert
  // finds the slot it probes requested kAhead tasks earlier (NameIndex::Prefetch).
  constexpr size_t kAhead = 16;
  thread_local std::vector<size_t> uid_hashes;
  Task* const* all_tasks = tasks_.begin();
  const size_t task_count = tasks_.size();
  // Likewise each bound task's node (its position, -1 for none) first, so that the lines of
  // the node PlaceTask writes are requested kAhead tasks before it.
  thread_local std::vector<int32_t> node_of;
  uid_hashes.resize(task_count);
  node_of.resize(task_count);
  for (size_t i = 0; i < task_count; ++i) {
    const Task* t = all_tasks[i];
    uid_hashes[i] = task_by_uid_.Hash(t->uid);
    node_of[i] = t->node_name.empty() || CompletedStatus(t->status)
                     ? -1
                     : static_cast<int32_t>(node_names_.Find(t->node_name));
  }
  const auto prefetch_node = [&](size_t i) {
    if (node_of[i] < 0) return;
    const Node* n = node_ptrs_[node_of[i]];
    __builtin_prefetch(n, 1);
    __builtin_prefetch(&n->idle, 1);
    __builtin_prefetch(&n->used, 1);
    __builtin_prefetch(&n->nonzero_requested, 1);
  };
  for (size_t i = 0; i < kAhead && i < task_count; ++i) {
    task_by_uid_.Prefetch(uid_hashes[i]);
    prefetch_node(i);
  }
  for (size_t ti = 0; ti < task_count; ++ti) {
    Task* t = all_tasks[ti];
    if (ti + kAhead < task_count) {
      task_by_uid_.Prefetch(uid_hashes[ti + kAhead]);
      prefetch_node(ti + kAhead);
    }
    if (!task_by_uid_.Insert(t, uid_hashes[ti]) && !TakeUnambiguousUid(*t))
      return Error{fmt::format("duplicate task \"{}\"", t->uid), {}};
    t->job = nullptr;
    t->node = nullptr;
    t->node_pos = -1;
    t->affinity_pos = -1;
    t->has_pod_affinity_terms = HasPodAffinityTerms(t->affinity());
    t->job_status_pos = -1;
    if (last_job == nullptr || last_job->uid != t->job_uid) {
      auto jit = job_by_uid_.find(t->job_uid);
      if (jit == job_by_uid_.end())
        return Error{fmt::format("task \"{}\" names job \"{}\", which does not exist", t->uid,
                                 t->job_uid),
                     {}};
      last_job = jit->second;
    }
    Job* j = last_job;
    if (j->queue != nullptr) {
      t->index = static_cast<int64_t>(task_ptrs_.size());
      task_ptrs_.push_back(t);
      j->AddTask(t);
    } else {
      t->index = -1;
      orphan_ptrs_.push_back(t);
    }
    // Terminated pods no longer hold node resources (cache.addTask skips them).
    if (!t->node_name.empty() && !CompletedStatus(t->status)) {
      Node* n = node_of[ti] < 0 ? nullptr : node_ptrs_[node_of[ti]];
      if (n == nullptr)
        return Error{fmt::format("task \"{}\" is on node \"{}\", which does not exist", t->uid,
                                 t->node_name),
                     {}};
      Status s = n->PlaceTask(t);
      if (!s.ok()) return s;
    }
  }
  // Once per node rather than per task: the refresh reads and writes 16 of the node's lines.
  for (Node* n : node_ptrs_) n->RefreshFitFuture();
  // Dropped jobs and their tasks are not part of the session's view.
  for (Job* j : jobs_)
    if (j->queue == nullptr) job_by_uid_.erase(j->uid);
  for (Task* t : orphan_ptrs_) task_by_uid_.Erase(t->uid);
  return Status::Ok();
}

bool Cluster::TakeUnambiguousUid(Task& t) {
  // Only a uid made of the namespace and the name, as BuildCluster makes it: tasks built by
  // hand keep whatever uid they were given, and a second one is an error.
  const bool made = t.uid.size() == t.namespace_.size() + 1 + t.name.size() &&
                    t.uid.starts_with(t.namespace_) && t.uid[t.namespace_.size()] == '-' &&
                    t.uid.ends_with(t.name);
  const Task* other = task_by_uid_.Find(t.uid);
  if (!made || other == nullptr || (other->namespace_ == t.namespace_ && other->name == t.name))
    return false;
  // Neither a namespace nor a pod name holds a '/', so no "-"-joined uid is this one.
  std::string uid = t.namespace_ + "/" + t.name;
  spdlog::debug("pods {}/{} and {}/{} share the uid \"{}\"; the second is \"{}\" in this snapshot",
                other->namespace_, other->name, t.namespace_, t.name, t.uid, uid);
  t.uid = std::move(uid);
  return task_by_uid_.Insert(&t);
}

Task* Cluster::FindTask(std::string_view uid) const {
  return task_by_uid_.Find(uid);
}
Job* Cluster::FindJob(std::string_view uid) const {
  auto it = job_by_uid_.find(uid);
  return it == job_by_uid_.end() ? nullptr : it->second;
}
Node* Cluster::FindNode(std::string_view name) const {
  const int64_t position = node_names_.Find(name);
  return position < 0 ? nullptr : node_ptrs_[position];
}
Queue* Cluster::FindQueue(std::string_view name) const {
  auto it = queue_by_name_.find(name);
  return it == queue_by_name_.end() ? nullptr : it->second;
}
const PriorityClass* Cluster::FindPriorityClass(std::string_view name) const {
  auto it = pc_by_name_.find(name);
  return it == pc_by_name_.end() ? nullptr : it->second;
}

}  // namespace kiln
