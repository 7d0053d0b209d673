#pragma once
// Test-only oracle: Volcano's gang plugin hand-written in C++ (volcano-semantics.md §5 "gang",
// §3.2 for the JobInfo counters), for differential tests against policies/gang.policy.
//
// It reads only the plain fields of the model (job.tasks, task.status, task.role, ...) and
// recomputes every counter itself, so it shares no code with the runtime's Job helpers nor with
// the compiled policy: a disagreement points at one of the two implementations, not at a common
// helper. Never linked into the runtime.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace kiln::oracles::gang {

inline bool IsAllocated(TaskStatus s) { return AllocatedStatus(s); }

// Bound + Binding + Running + Allocated + Succeeded.
inline int32_t ReadyTaskNum(const Job& job) {
  int32_t n = 0;
  for (const Task* t : job.tasks)
    if (IsAllocated(t->status) || t->status == TaskStatus::Succeeded) ++n;
  return n;
}

inline int32_t WaitingTaskNum(const Job& job) {
  int32_t n = 0;
  for (const Task* t : job.tasks)
    if (t->status == TaskStatus::Pipelined) ++n;
  return n;
}

inline int32_t PendingBestEffortTaskNum(const Job& job) {
  int32_t n = 0;
  for (const Task* t : job.tasks)
    if (t->status == TaskStatus::Pending && t->best_effort) ++n;
  return n;
}

// AllocatedStatus ∪ Succeeded ∪ Pipelined ∪ Pending.
inline bool IsValidStatus(TaskStatus s) {
  return IsAllocated(s) || s == TaskStatus::Succeeded || s == TaskStatus::Pipelined ||
         s == TaskStatus::Pending;
}

inline int32_t ValidTaskNum(const Job& job) {
  int32_t n = 0;
  for (const Task* t : job.tasks)
    if (IsValidStatus(t->status)) ++n;
  return n;
}

inline bool IsReady(const Job& job) {
  return ReadyTaskNum(job) + PendingBestEffortTaskNum(job) >= job.min_available;
}

inline bool IsPipelined(const Job& job) {
  return WaitingTaskNum(job) + ReadyTaskNum(job) + PendingBestEffortTaskNum(job) >=
         job.min_available;
}

// Volcano skips every per-role check when minMember is below the sum of the role minima.
inline bool RoleChecksApply(const Job& job) {
  return job.min_available >= job.task_min_available_total;
}

// Counts the job's tasks per role that satisfy `pred`.
template <typename Pred>
std::map<std::string, int32_t, std::less<>> CountByRole(const Job& job, Pred pred) {
  std::map<std::string, int32_t, std::less<>> counts;
  for (const Task* t : job.tasks)
    if (pred(*t)) ++counts[t->role];
  return counts;
}

inline bool CheckTaskValid(const Job& job) {
  if (!RoleChecksApply(job)) return true;
  auto actual = CountByRole(job, [](const Task& t) { return IsValidStatus(t.status); });
  for (const auto& [role, min] : job.task_min_available) {
    if (min == 0) continue;
    auto it = actual.find(role);
    if (it == actual.end() || it->second < min) return false;
  }
  return true;
}

inline bool CheckTaskReady(const Job& job) {
  if (!RoleChecksApply(job)) return true;
  auto occupied = CountByRole(job, [](const Task& t) {
    return IsAllocated(t.status) || t.status == TaskStatus::Succeeded ||
           (t.status == TaskStatus::Pending && t.best_effort);
  });
  for (const auto& [role, min] : job.task_min_available)
    if (occupied[role] < min) return false;
  return true;
}

inline bool CheckTaskPipelined(const Job& job) {
  if (!RoleChecksApply(job)) return true;
  auto occupied = CountByRole(job, [](const Task& t) {
    return IsAllocated(t.status) || t.status == TaskStatus::Succeeded ||
           t.status == TaskStatus::Pipelined ||
           (t.status == TaskStatus::Pending && t.best_effort);
  });
  for (const auto& [role, min] : job.task_min_available)
    if (occupied[role] < min) return false;
  return true;
}

struct Validation {
  bool pass = true;
  std::string reason;
  std::string message;
};

inline Validation JobValid(const Job& job) {
  if (!CheckTaskValid(job))
    return {false, "NotEnoughPodsOfTask",
            "Not enough valid pods of each task for gang-scheduling"};
  int32_t vtn = ValidTaskNum(job);
  if (vtn < job.min_available)
    return {false, "NotEnoughTasks",
            "Not enough valid tasks for gang-scheduling, valid: " + std::to_string(vtn) +
                ", min: " + std::to_string(job.min_available)};
  return {};
}

// Preemptable and Reclaimable (the same function in Volcano). Always Permit.
inline std::vector<const Task*> Victims(const Task& /*preemptor*/,
                                        std::span<const Task* const> candidates) {
  std::map<const Job*, int32_t> occupied;
  std::vector<const Task*> victims;
  for (const Task* c : candidates) {
    const Job* job = c->job;
    auto [it, inserted] = occupied.try_emplace(job, 0);
    if (inserted) it->second = ReadyTaskNum(*job);
    if (it->second > job->min_available) {
      --it->second;
      victims.push_back(c);
    }
  }
  return victims;
}

// Not-ready jobs first.
inline int JobOrder(const Job& l, const Job& r) {
  bool l_ready = IsReady(l);
  bool r_ready = IsReady(r);
  if (l_ready && !r_ready) return 1;
  if (!l_ready && r_ready) return -1;
  return 0;
}

inline bool JobReady(const Job& job) { return CheckTaskReady(job) && IsReady(job); }

// Vote: 1 Permit, -1 Reject (gang never abstains here).
inline int JobPipelined(const Job& job) {
  return CheckTaskPipelined(job) && IsPipelined(job) ? 1 : -1;
}

inline bool JobStarving(const Job& job) {
  return WaitingTaskNum(job) + ReadyTaskNum(job) < job.min_available;
}

}  // namespace kiln::oracles::gang
