#pragma once
// What the actions that walk the session's queues, jobs and tasks in order share: the orders as
// comparators, which jobs they consider, and the state of a preempt or reclaim run.

#include <cstddef>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/actions/helpers.h"
#include "runtime/conf.h"
#include "runtime/session.h"
#include "runtime/thread_pool.h"

namespace kiln::actions {

// The session's queue, job and task orders, as the comparators a PriorityQueue takes.
class SessionOrders {
 public:
  explicit SessionOrders(const Session& ssn) : ssn_(&ssn) {}
  bool operator()(Queue* const& l, Queue* const& r) const { return ssn_->QueueLess(l, r); }
  bool operator()(Job* const& l, Job* const& r) const { return ssn_->JobLess(l, r); }
  bool operator()(Task* const& l, Task* const& r) const { return ssn_->TaskLess(l, r); }

 private:
  const Session* ssn_;
};

// Whether backfill, preempt, reclaim and gang_evict consider a job: past enqueue (not Pending),
// with no plugin finding it invalid, and in a queue.
inline bool JobSchedulable(const Session& ssn, const Job* job) {
  return !job->IsPending() && !ssn.JobValid(job).has_value() && job->queue != nullptr;
}

// A job's Pending tasks that no scheduling gate holds, in the session's task order.
inline PriorityQueue<Task*> PendingTasks(const Session& ssn, const Job* job) {
  PriorityQueue<Task*> tasks(SessionOrders{ssn});
  for (Task* t : job->TasksWith(TaskStatus::Pending))
    if (!t->sch_gated) tasks.Push(t);
  return tasks;
}

// Step 1 of preempt, reclaim and the gang evictions: the queues of the jobs they consider, in
// the session's order, and per queue its starving jobs in order. `take(job)` sees each starving
// job first and may leave it out (false).
struct StarvingJobs {
  PriorityQueue<Queue*> queues;
  std::unordered_map<const Queue*, PriorityQueue<Job*>> by_queue;
};
template <typename Take>
StarvingJobs StarvingJobsByQueue(const Session& ssn, Take&& take) {
  const SessionOrders order(ssn);
  StarvingJobs out{PriorityQueue<Queue*>(order), {}};
  for (Job* job : ssn.cluster().jobs()) {
    if (!JobSchedulable(ssn, job)) continue;
    auto [it, inserted] = out.by_queue.try_emplace(job->queue, order);
    if (inserted) out.queues.Push(job->queue);
    if (ssn.JobStarving(job) && take(job)) it->second.Push(job);
  }
  return out;
}

// What a run of preempt or reclaim holds: the session, the action's arguments, the node pool, and
// the predicate helper that goes on over the nodes from where its last search stopped.
class VictimRun {
 protected:
  VictimRun(Session& ssn, std::string_view action)
      : ssn_(ssn),
        args_(ssn.conf().ArgumentsFor(action)),
        pool_(ssn.node_pool()),
        helper_(&rotation_, pool_) {}

  // The nodes where `preemptor` passes the preempt action's predicates, leaving out first the
  // nodes it can never use (UnschedulableAndUnresolvable).
  PredicateResult PreemptCandidates(const Task* preemptor) {
    std::vector<Node*> storage;
    std::span<Node* const> candidates = NodesWithoutUnresolvable(ssn_, preemptor, storage);
    return helper_.PredicateNodes(
        preemptor, candidates,
        [this](const Task* t, const Node* n) { return ssn_.PredicateForPreemptAction(t, n); },
        args_.predicate_error_cache_enable);
  }

  Session& ssn_;
  const ActionArguments& args_;
  ThreadPool& pool_;
  size_t rotation_ = 0;
  PredicateHelper helper_;
};

}  // namespace kiln::actions
