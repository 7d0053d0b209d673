#pragma once
// Test-only oracle: Volcano's priority plugin hand-written in C++ (volcano-semantics.md §5
// "priority"), for differential tests against policies/priority.policy. Never linked into the
// runtime.

#include <span>
#include <vector>

#include "runtime/model.h"

namespace kiln::oracles::priority {

// Higher task priority first.
inline int TaskOrder(const Task& l, const Task& r) {
  if (l.priority > r.priority) return -1;
  if (l.priority < r.priority) return 1;
  return 0;
}

// Higher job priority first.
inline int JobOrder(const Job& l, const Job& r) {
  if (l.priority > r.priority) return -1;
  if (l.priority < r.priority) return 1;
  return 0;
}

// Other jobs: victim iff its job's priority is lower than the preemptor's job's. Same job: victim
// iff the task's priority is lower than the preemptor's. Always Permit.
inline std::vector<const Task*> Victims(const Task& preemptor,
                                        std::span<const Task* const> candidates) {
  std::vector<const Task*> victims;
  const Job* pj = preemptor.job;
  for (const Task* c : candidates) {
    if (c->job != pj) {
      if (c->job->priority < pj->priority) victims.push_back(c);
    } else if (c->priority < preemptor.priority) {
      victims.push_back(c);
    }
  }
  return victims;
}

// Ready (Bound, Binding, Running, Allocated, Succeeded) + Waiting (Pipelined) < all tasks.
inline bool JobStarving(const Job& job) {
  int placed = 0;
  for (const Task* t : job.tasks)
    if (AllocatedStatus(t->status) || t->status == TaskStatus::Succeeded ||
        t->status == TaskStatus::Pipelined)
      ++placed;
  return placed < static_cast<int>(job.tasks.size());
}

}  // namespace kiln::oracles::priority
