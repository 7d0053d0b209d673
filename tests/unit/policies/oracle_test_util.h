#pragma once
// Hand-built jobs and tasks for the oracle unit tests (no Cluster, no session: the oracles read
// plain fields only).

#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace kiln::oracles::testing {

class MiniCluster {
 public:
  Job& AddJob(std::string uid, int64_t min_available, int64_t priority = 0) {
    jobs_.push_back(std::make_unique<Job>());
    Job& j = *jobs_.back();
    j.uid = std::move(uid);
    j.min_available = min_available;
    j.priority = priority;
    return j;
  }

  Task& AddTask(Job& job, std::string name, TaskStatus status, std::string role = "",
                int64_t priority = 1) {
    tasks_.push_back(std::make_unique<Task>());
    Task& t = *tasks_.back();
    t.name = std::move(name);
    t.uid = t.name;
    t.status = status;
    t.role = std::move(role);
    t.priority = priority;
    t.job = &job;
    job.tasks.push_back(&t);
    return t;
  }

  // minTaskMember, keeping the total in sync as the model does.
  static void SetRoleMin(Job& job, const std::string& role, int32_t min) {
    job.task_min_available[role] = min;
    job.task_min_available_total = 0;
    for (const auto& [r, m] : job.task_min_available) job.task_min_available_total += m;
  }

 private:
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<std::unique_ptr<Task>> tasks_;
};

inline std::vector<std::string> Names(const std::vector<const Task*>& tasks) {
  std::vector<std::string> names;
  for (const Task* t : tasks) names.push_back(t->name);
  return names;
}

}  // namespace kiln::oracles::testing
