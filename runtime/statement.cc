// Volcano's Statement (framework/statement.go), volcano-semantics.md §2.5.

#include "runtime/statement.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>

#include "runtime/invariants.h"
#include "runtime/session.h"

namespace kiln {

namespace {
[[maybe_unused]] bool SameValues(const Resource& a, const Resource& b) {
  for (int i = 0; i < kMaxResources; ++i)
    if (a.values[i] != b.values[i]) return false;
  return true;
}
}  // namespace

void Statement::Capture(Task* t, Node* target) {
  if (ops_.empty() && node_snapshots_.empty() && job_snapshots_.empty()) {
    first_seq_ = ssn_->mutation_seq_;
    if (InvariantChecker* checker = ssn_->invariants()) full_snapshot_ = checker->Snapshot();
  }
  auto snap_node = [&](Node* n) {
    if (n == nullptr) return;
    for (const auto& s : node_snapshots_)
      if (s.node == n) return;
    node_snapshots_.push_back(
        NodeSnapshot{n, n->idle, n->used, n->releasing, n->pipelined, n->tasks.size()});
  };
  snap_node(target);
  snap_node(t->node);
  if (Job* j = t->job) {
    for (const auto& s : job_snapshots_)
      if (s.job == j) return;
    JobSnapshot s{j, {}, j->allocated, j->pending_best_effort};
    for (int i = 0; i < kTaskStatusCount; ++i) s.counts[i] = j->by_status[i].size();
    job_snapshots_.push_back(s);
  }
}

// Only meaningful when nothing outside this statement changed the session in between: the
// session's mutation counter tells.
void Statement::CheckRestored() const {
  for (const auto& s : node_snapshots_) {
    const Node* n = s.node;
    assert(SameValues(n->idle, s.idle) && SameValues(n->used, s.used) &&
           SameValues(n->releasing, s.releasing) && SameValues(n->pipelined, s.pipelined) &&
           n->tasks.size() == s.tasks && "discard did not restore the node exactly");
    (void)n;
  }
  // Volcano's unevict returns a victim to Running even when it was Bound, so those two counters
  // are compared together; every other status must match exactly.
  const int bound = StatusSlot(TaskStatus::Bound);
  const int running = StatusSlot(TaskStatus::Running);
  for (const auto& s : job_snapshots_) {
    const Job* j = s.job;
    for (int i = 0; i < kTaskStatusCount; ++i) {
      if (i == bound || i == running) continue;
      assert(j->by_status[i].size() == s.counts[i] && "discard did not restore job counters");
    }
    assert(j->by_status[bound].size() + j->by_status[running].size() ==
               s.counts[bound] + s.counts[running] &&
           "discard did not restore job counters");
    assert(SameValues(j->allocated, s.allocated) &&
           j->pending_best_effort == s.pending_best_effort &&
           "discard did not restore the job's allocation");
    (void)j;
  }
}

Status Statement::Evict(Task* reclaimee, std::string reason) {
  if (reclaimee->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", reclaimee->uid), {}};
  Node* node = reclaimee->node;
  if (InvariantChecker* checker = ssn_->invariants()) checker->OnEvict(reclaimee, reason);
  Capture(reclaimee, node);
  uint64_t before = ssn_->mutation_seq_;
  if (Status s = ssn_->UpdateTaskStatus(reclaimee, TaskStatus::Releasing); !s.ok())
    spdlog::error("failed to update task {} to Releasing: {}", reclaimee->uid, s.error().message);
  ssn_->FireDeallocate(reclaimee);
  own_mutations_ += ssn_->mutation_seq_ - before;
  ops_.push_back(Operation{Op::Evict, reclaimee, node, std::move(reason)});
  return Status::Ok();
}

Status Statement::Pipeline(Task* task, Node* node, bool eviction_occurred) {
  if (task->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", task->uid), {}};
  Capture(task, node);
  uint64_t before = ssn_->mutation_seq_;
  if (Status s = ssn_->UpdateTaskStatus(task, TaskStatus::Pipelined); !s.ok()) {
    UnPipeline(task);
    own_mutations_ += ssn_->mutation_seq_ - before;
    return s;
  }
  task->eviction_occurred = eviction_occurred;
  if (Status s = ssn_->PlaceTask(task, node); !s.ok()) {
    UnPipeline(task);
    own_mutations_ += ssn_->mutation_seq_ - before;
    return s;
  }
  ssn_->FireAllocate(task);
  own_mutations_ += ssn_->mutation_seq_ - before;
  if (InvariantChecker* checker = ssn_->invariants()) {
    // The evictions since this statement's last placement were made for this task.
    std::vector<const Task*> victims;
    for (auto it = ops_.rbegin(); it != ops_.rend() && it->op == Op::Evict; ++it)
      victims.push_back(it->task);
    if (!victims.empty()) checker->OnPreemption(task, victims);
  }
  ops_.push_back(Operation{Op::Pipeline, task, node, {}});
  return Status::Ok();
}

Status Statement::Allocate(Task* task, Node* node) {
  if (task->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", task->uid), {}};
  Capture(task, node);
  uint64_t before = ssn_->mutation_seq_;
  if (Status s = ssn_->UpdateTaskStatus(task, TaskStatus::Allocated); !s.ok()) {
    UnAllocate(task);
    own_mutations_ += ssn_->mutation_seq_ - before;
    return s;
  }
  if (Status s = ssn_->PlaceTask(task, node); !s.ok()) {
    UnAllocate(task);
    own_mutations_ += ssn_->mutation_seq_ - before;
    return s;
  }
  ssn_->FireAllocate(task);
  own_mutations_ += ssn_->mutation_seq_ - before;
  ops_.push_back(Operation{Op::Allocate, task, node, {}});
  return Status::Ok();
}

// Evicting a pod failed in the cache: it runs on.
void Statement::UnEvict(Task* t) {
  if (Status s = ssn_->UpdateTaskStatus(t, TaskStatus::Running); !s.ok())
    spdlog::error("failed to restore task {}: {}", t->uid, s.error().message);
  ssn_->FireAllocate(t);
}

void Statement::UnPipeline(Task* t) {
  ssn_->UnplaceTask(t);
  if (t->job != nullptr) {
    if (Status s = ssn_->UpdateTaskStatus(t, TaskStatus::Pending); !s.ok())
      spdlog::error("failed to restore task {}: {}", t->uid, s.error().message);
  }
  ssn_->FireDeallocate(t);
}

// An allocation is undone as a pipelining is: the task leaves its node and is pending again.
void Statement::UnAllocate(Task* t) { UnPipeline(t); }

void Statement::Commit() {
  for (Operation& op : ops_) {
    switch (op.op) {
      case Op::Evict:
        if (Status s = ssn_->DispatchEvict(op.task, op.reason); !s.ok()) {
          spdlog::error("failed to evict {}: {}", op.task->uid, s.error().message);
          UnEvict(op.task);
        }
        break;
      case Op::Pipeline:
        // Nothing is sent: the task stays Pipelined in the session until a later cycle binds it.
        break;
      case Op::Allocate:
        if (Status s = ssn_->DispatchBind(op.task); !s.ok()) {
          spdlog::error("failed to bind {}: {}", op.task->uid, s.error().message);
          UnAllocate(op.task);
        }
        break;
    }
  }
  ops_.clear();
  node_snapshots_.clear();
  job_snapshots_.clear();
  own_mutations_ = 0;
  full_snapshot_.clear();
}

void Statement::Discard() {
  uint64_t before = ssn_->mutation_seq_;
  for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
    // Volcano's GenerateLastTxContext: remember what this statement had done with the task.
    it->task->last_transaction = std::make_shared<const TaskTransaction>(
        TaskTransaction{it->reason, it->task->status, it->task->node_name});
    switch (it->op) {
      case Op::Evict:
        UnEvict(it->task);
        break;
      case Op::Pipeline:
        UnPipeline(it->task);
        break;
      case Op::Allocate:
        UnAllocate(it->task);
        break;
    }
  }
  uint64_t undo = ssn_->mutation_seq_ - before;
  // Only this statement's operations and their undo happened since its first operation.
  bool only_ours = ssn_->mutation_seq_ - first_seq_ == own_mutations_ + undo;
  if (!node_snapshots_.empty() && only_ours) CheckRestored();
  if (InvariantChecker* checker = ssn_->invariants(); checker && only_ours && !full_snapshot_.empty())
    checker->CompareDiscard(full_snapshot_);
  ops_.clear();
  node_snapshots_.clear();
  job_snapshots_.clear();
  own_mutations_ = 0;
  full_snapshot_.clear();
}

void Statement::Merge(Statement& other) {
  // The older full snapshot describes the session before both statements.
  if (full_snapshot_.empty() || (!other.full_snapshot_.empty() && other.first_seq_ < first_seq_))
    full_snapshot_ = std::move(other.full_snapshot_);
  other.full_snapshot_.clear();
  if (ops_.empty() && node_snapshots_.empty() && job_snapshots_.empty())
    first_seq_ = other.first_seq_;
  else
    first_seq_ = std::min(first_seq_, other.first_seq_);
  for (auto& op : other.ops_) ops_.push_back(std::move(op));
  // This statement's snapshots are older; the other's fill in objects only it touched.
  for (auto& s : other.node_snapshots_) {
    bool have = false;
    for (const auto& m : node_snapshots_) have |= m.node == s.node;
    if (!have) node_snapshots_.push_back(s);
  }
  for (auto& s : other.job_snapshots_) {
    bool have = false;
    for (const auto& m : job_snapshots_) have |= m.job == s.job;
    if (!have) job_snapshots_.push_back(s);
  }
  own_mutations_ += other.own_mutations_;
  other.ops_.clear();
  other.node_snapshots_.clear();
  other.job_snapshots_.clear();
  other.own_mutations_ = 0;
}

}  // namespace kiln
