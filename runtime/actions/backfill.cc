// backfill (volcano-semantics.md §4.3): places BestEffort tasks — pods that request nothing, which
// allocate leaves alone — on any node whose predicates accept them. No resource check, no queue
// limits (Allocatable, Overused), no statements: each placement goes straight to the session.
//
// Stages:
//   1. Candidates. For every job that is not Pending, passes JobValid and has a queue: its
//      BestEffort Pending tasks (not scheduling-gated) and its BestEffort Pipelined tasks, which
//      are taken back out of the pipeline first.
//   2. Order: queues by QueueOrderFn; all jobs of a queue (JobOrderFn) before the next queue;
//      within a job, tasks by TaskOrderFn.
//   3. For each task: PrePredicate (on failure every node rejects it; next task); PredicateNodes
//      over all nodes with the plugins' predicates only; none → record the rejections, next task.
//   4. Pick: a single feasible node as is; several are scored (NodeOrder + BatchNodeOrder),
//   BestNode
//      decides if a plugin names one, else the best score, ties by node order.
//   5. Session::Allocate: the task is Allocated there, and once its job is ready every Allocated
//      task of the job is bound.

#include <spdlog/spdlog.h>

#include <unordered_map>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/actions/session_walk.h"
#include "runtime/explain.h"
#include "runtime/session.h"

namespace kiln {
namespace {

class Backfill final : public Action {
 public:
  std::string_view name() const override { return "backfill"; }

  void Execute(Session& ssn) const override {
    const ActionArguments& args = ssn.conf().ArgumentsFor(name());
    ThreadPool& pool = ssn.node_pool();
    const actions::SessionOrders order(ssn);

    // 1. Candidates.
    PriorityQueue<Queue*> queues(order);
    std::unordered_map<const Queue*, PriorityQueue<Job*>> jobs_by_queue;
    std::unordered_map<const Job*, PriorityQueue<Task*>> tasks_by_job;
    for (Job* job : ssn.cluster().jobs()) {
      if (!actions::JobSchedulable(ssn, job)) continue;
      PriorityQueue<Task*> tasks(order);
      for (Task* t : job->TasksWith(TaskStatus::Pending))
        if (t->best_effort && !t->sch_gated) tasks.Push(t);
      // Copy: un-pipelining moves tasks out of the Pipelined list.
      std::vector<Task*> pipelined = job->TasksWith(TaskStatus::Pipelined);
      for (Task* t : pipelined) {
        if (!t->best_effort) continue;
        actions::UnPipelineTask(ssn, t);
        tasks.Push(t);
      }
      if (tasks.Empty()) continue;
      auto [it, inserted] = jobs_by_queue.try_emplace(job->queue, order);
      if (inserted) queues.Push(job->queue);
      it->second.Push(job);
      tasks_by_job.emplace(job, std::move(tasks));
    }

    size_t rotation = 0;
    actions::PredicateHelper helper(&rotation, pool);
    std::span<Node* const> all_nodes = ssn.cluster().nodes();
    const actions::NodePredicate predicate = [&ssn](const Task* t, const Node* n) {
      return ssn.PredicateForAllocateAction(t, n);
    };

    // 2. Queue by queue, job by job, task by task.
    while (!queues.Empty()) {
      Queue* queue = queues.Pop();
      auto& jobs = jobs_by_queue.at(queue);
      while (!jobs.Empty()) {
        Job* job = jobs.Pop();
        auto& tasks = tasks_by_job.at(job);
        while (!tasks.Empty()) {
          Task* t = tasks.Pop();
          // 3.
          if (std::optional<PluginStatus> status = ssn.PrePredicateFn(t)) {
            ssn.RecordFitErrors(t, actions::SameErrorOnAllNodes(t, all_nodes, *status));
            if (ExplainRecorder* r = ssn.explain()) r->Record(ssn, "backfill", t);
            continue;
          }
          actions::PredicateResult found =
              helper.PredicateNodes(t, all_nodes, predicate, args.predicate_error_cache_enable);
          if (found.nodes.empty()) {
            ssn.RecordFitErrors(t, std::move(found.errors));
            if (ExplainRecorder* r = ssn.explain()) r->Record(ssn, "backfill", t);
            continue;
          }
          // 4.
          Node* node = found.nodes.size() == 1 ? found.nodes.front()
                                               : actions::BestScoredNode(ssn, t, found.nodes, pool);
          if (ExplainRecorder* r = ssn.explain()) r->Record(ssn, "backfill", t);
          if (node == nullptr) continue;
          // 5.
          if (Status s = ssn.Allocate(t, node); !s.ok()) {
            spdlog::error("backfill: allocating task {} on node {} failed: {}", t->Key(),
                          node->name, s.error().message);
            FitErrors errors;
            errors.Add(FitError(t->uid, node->name, StatusCode::Error,
                                CodedReason("PredicateError", s.error().message)));
            ssn.RecordFitErrors(t, std::move(errors));
          }
        }
      }
    }
  }
};

}  // namespace

const Action& BackfillAction() {
  static const Backfill action;
  return action;
}

}  // namespace kiln
