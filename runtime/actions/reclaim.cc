// reclaim (volcano-semantics.md §4.5): a starving job takes back resources that other queues'
// jobs hold beyond what those queues are owed — cross-queue only, from Running tasks of
// reclaimable queues, by resource arithmetic. The reclaimer is only pipelined.
//
// Stages:
//   1. Jobs that are not Pending, pass JobValid and have a queue put their queue into the queue
//      heap (QueueOrderFn); starving ones (JobStarving) go into their queue's job heap
//      (JobOrderFn) with a task heap (TaskOrderFn) of their Pending, non-gated tasks.
//   2. Pop the best queue; an Overused queue reclaims nothing this cycle. Take its jobs in order;
//      for each, in one statement, while it is starving and has tasks: skip a task whose
//      preemptionPolicy is Never, that its queue may not reclaim for (Preemptive), or that fails
//      PrePredicate; otherwise reclaim for it (3). Commit when the job is then JobPipelined, else
//      discard. (Volcano re-pushes the queue after each job while it has jobs left, but it has
//      already drained them by then, so those pushes find nothing to do.)
//   3. Reclaiming for one task: nodes = all nodes minus those allocate found
//      UnschedulableAndUnresolvable, filtered by PredicateForPreemptAction, in predicate order —
//      no scoring. Per node, reclaimees = its Running (not Bound), preemptable tasks whose job is
//      in another queue that is reclaimable; none → next node. victims = Reclaimable; skip the
//      node unless the task fits FutureIdle + victims. Evict victims in victim order while the
//      task does not fit (the check comes before each eviction), counting each evicted Resreq as
//      available; still short → undo this node's evictions and try the next; else pipeline the
//      task there and stop. Unlike preempt: no Allocatable check and no predicate re-run after
//      evictions — resources only.

#include <spdlog/spdlog.h>

#include <unordered_map>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/actions/session_walk.h"
#include "runtime/explain.h"
#include "runtime/session.h"
#include "runtime/statement.h"

namespace kiln {
namespace {

class ReclaimRun : actions::VictimRun {
 public:
  explicit ReclaimRun(Session& ssn) : VictimRun(ssn, "reclaim") {}

  void Run() {
    // 1.
    std::unordered_map<const Job*, PriorityQueue<Task*>> preemptor_tasks;
    actions::StarvingJobs preemptors = actions::StarvingJobsByQueue(ssn_, [&](Job* job) {
      preemptor_tasks.insert_or_assign(job, actions::PendingTasks(ssn_, job));
      return true;
    });
    PriorityQueue<Queue*>& queues = preemptors.queues;

    // 2.
    while (!queues.Empty()) {
      Queue* queue = queues.Pop();
      if (ssn_.Overused(queue)) {
        spdlog::debug("reclaim: queue {} is overused, skipped", queue->name);
        continue;
      }
      auto& jobs = preemptors.by_queue.at(queue);
      while (!jobs.Empty()) {
        Job* job = jobs.Pop();
        auto& tasks = preemptor_tasks.at(job);
        Statement stmt(ssn_);
        while (ssn_.JobStarving(job) && !tasks.Empty()) {
          Task* t = tasks.Pop();
          if (t->preemption_policy == PreemptionPolicy::Never) continue;
          if (!ssn_.Preemptive(queue, t)) continue;
          if (ssn_.PrePredicateFn(t)) continue;
          ReclaimForTask(stmt, t);
        }
        if (ssn_.JobPipelined(job)) {
          stmt.Commit();
        } else {
          stmt.Discard();
        }
      }
    }
  }

 private:
  // 3.
  void ReclaimForTask(Statement& stmt, Task* t) {
    actions::PredicateResult found = PreemptCandidates(t);
    const Queue* own_queue = t->job->queue;
    for (Node* node : found.nodes) {
      std::vector<Task*> reclaimees;
      for (Task* r : node->tasks) {
        if (r->status != TaskStatus::Running || !r->preemptable) continue;
        if (r->job == nullptr || r->job->queue == nullptr) continue;
        if (r->job->queue == own_queue || !r->job->queue->reclaimable) continue;
        reclaimees.push_back(r);
      }
      if (reclaimees.empty()) continue;
      std::vector<Task*> victims = ssn_.Reclaimable(t, reclaimees);
      if (!actions::ValidateVictims(t, node, victims)) continue;

      Resource available = node->FutureIdle();
      Statement node_stmt(ssn_);
      PriorityQueue<Task*> victim_queue = actions::BuildVictimsPriorityQueue(ssn_, victims, t);
      int evicted = 0;
      while (!t->init_resreq().LessEqual(available, DimensionDefault::Zero) &&
             !victim_queue.Empty()) {
        Task* victim = victim_queue.Pop();
        if (Status s = node_stmt.Evict(victim, "reclaim"); !s.ok()) {
          spdlog::error("reclaim: evicting {} for {} failed: {}", victim->Key(), t->Key(),
                        s.error().message);
          continue;
        }
        available.Add(victim->resreq());
        ++evicted;
      }
      if (!t->init_resreq().LessEqual(available, DimensionDefault::Zero)) {
        node_stmt.Discard();
        continue;
      }
      if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "reclaim", t);
      if (Status s = node_stmt.Pipeline(t, node, evicted > 0); !s.ok())
        spdlog::error("reclaim: pipelining {} on {} failed: {}", t->Key(), node->name,
                      s.error().message);
      stmt.Merge(node_stmt);
      return;
    }
  }
};

}  // namespace

const Action& ReclaimAction() {
  static const RunAction<ReclaimRun> action("reclaim");
  return action;
}

}  // namespace kiln
