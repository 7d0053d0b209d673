// Volcano's Statement (framework/statement.go), volcano-semantics.md §2.5.

#include "runtime/statement.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cassert>

#include "runtime/session.h"

namespace kiln {

Status Statement::Evict(Task* reclaimee, std::string reason) {
  if (reclaimee->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", reclaimee->uid), {}};
  Node* node = reclaimee->node;
  if (Status s = ssn_->UpdateTaskStatus(reclaimee, TaskStatus::Releasing); !s.ok())
    spdlog::error("failed to update task {} to Releasing: {}", reclaimee->uid, s.error().message);
  ssn_->FireDeallocate(reclaimee);
  ops_.push_back(Operation{Op::Evict, reclaimee, node, std::move(reason)});
  return Status::Ok();
}

Status Statement::Pipeline(Task* task, Node* node, bool eviction_occurred) {
  if (task->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", task->uid), {}};
  if (Status s = ssn_->UpdateTaskStatus(task, TaskStatus::Pipelined); !s.ok()) {
    UnPipeline(task);
    return s;
  }
  task->eviction_occurred = eviction_occurred;
  if (Status s = ssn_->PlaceTask(task, node); !s.ok()) {
    UnPipeline(task);
    return s;
  }
  ssn_->FireAllocate(task);
  ops_.push_back(Operation{Op::Pipeline, task, node, {}});
  return Status::Ok();
}

Status Statement::Allocate(Task* task, Node* node) {
  if (task->job == nullptr)
    return Error{fmt::format("failed to find job for task {}", task->uid), {}};
  if (Status s = ssn_->UpdateTaskStatus(task, TaskStatus::Allocated); !s.ok()) {
    UnAllocate(task);
    return s;
  }
  if (Status s = ssn_->PlaceTask(task, node); !s.ok()) {
    UnAllocate(task);
    return s;
  }
  ssn_->FireAllocate(task);
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

void Statement::UnAllocate(Task* t) {
  ssn_->UnplaceTask(t);
  if (t->job != nullptr) {
    if (Status s = ssn_->UpdateTaskStatus(t, TaskStatus::Pending); !s.ok())
      spdlog::error("failed to restore task {}: {}", t->uid, s.error().message);
  }
  ssn_->FireDeallocate(t);
}

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
}

void Statement::Discard() {
  for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
    // Volcano's GenerateLastTxContext: remember what this statement had done with the task.
    it->task->last_transaction_reason = it->reason;
    it->task->has_last_transaction = true;
    it->task->last_transaction_status = it->task->status;
    it->task->last_transaction_node = it->task->node_name;
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
  ops_.clear();
}

void Statement::Merge(Statement& other) {
  for (auto& op : other.ops_) ops_.push_back(std::move(op));
  other.ops_.clear();
}

}  // namespace kiln
