// allocate (volcano-semantics.md §4.2): places the pending tasks of admitted jobs on nodes —
// bound when the node's idle resources fit, pipelined onto resources that running tasks are
// releasing otherwise — one job at a time, queues taking turns, and keeps a job's placements
// only when the job can start (JobReady) or at least be pipelined (JobPipelined).
//
// Stages:
//   1. Worksheet. For every job: a Pending PodGroup is skipped when the enqueue action is
//      configured (enqueue admits it), otherwise it is moved to Inqueue here; jobs failing
//      JobValid or without a queue are skipped. The job's Pending tasks go into a task heap
//      (TaskOrderFn), except scheduling-gated tasks and BestEffort tasks (backfill places those);
//      a job with no such task is dropped. Jobs go into their queue's heap (JobOrderFn), queues
//      into the queue heap (QueueOrderFn).
//   2. Pop the best queue. An Overused queue is dropped for the rest of the action, as is a queue
//      without jobs. Pop its best job and allocate its tasks (stage 3) in a fresh statement.
//   3. For each task in task order:
//      a. skip it when its queue cannot take it (Allocatable);
//      b. skip it when a task of the same role already failed its predicates in this session
//         (recording "already predicated failed");
//      c. PrePredicate: on failure every node rejects it;
//      d. find feasible nodes: the pod's nominated node first (when it has one whose future idle
//         fits), otherwise PredicateNodes over all nodes with the resource check
//         InitResreq ≤ FutureIdle ("Insufficient <resource>") then the plugins' predicates;
//         with none, record the rejections and either continue with the next task
//         (NeedContinueAllocating) or stop the job;
//      e. prioritize: the nodes whose Idle fits come first, then those whose FutureIdle fits;
//         within the first non-empty group, one node is taken as is, several are scored
//         (NodeOrder + BatchNodeOrder), BestNode decides if a plugin names one, else the best
//         score, ties by node order;
//      f. Allocate on the node when Idle fits, else Pipeline onto its FutureIdle;
//      g. stop once the job is ready.
//      The statement is returned when the job is ready or pipelined; otherwise it is discarded.
//   4. A ready job's statement is committed (its tasks are bound) and the job goes back into its
//      queue's heap when it still has tasks. A statement that only pipelined the job is neither
//      committed nor discarded: its placements keep their resources for the rest of the session
//      and nothing is bound. The queue goes back into the heap, re-ordered by its new share.

#include <spdlog/spdlog.h>

#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/explain.h"
#include "runtime/session.h"
#include "runtime/statement.h"

namespace kiln {
namespace {

using actions::PredicateHelper;
using actions::PredicateResult;

class AllocateRun {
 public:
  explicit AllocateRun(Session& ssn)
      : ssn_(ssn),
        args_(ssn.conf().ArgumentsFor("allocate")),
        pool_(ssn.node_pool()),
        queues_([&ssn](Queue* const& l, Queue* const& r) { return ssn.QueueLess(l, r); }) {}

  void Run() {
    BuildWorksheet();
    AllocateResources();
  }

 private:
  // 1. Worksheet.
  void BuildWorksheet() {
    const bool enqueue_configured = ssn_.HasAction("enqueue");
    auto job_less = [this](Job* const& l, Job* const& r) { return ssn_.JobLess(l, r); };
    auto task_less = [this](Task* const& l, Task* const& r) { return ssn_.TaskLess(l, r); };
    for (Job* job : ssn_.cluster().jobs()) {
      if (job->IsPending()) {
        if (enqueue_configured) continue;
        job->phase = PodGroupPhase::Inqueue;
      }
      if (ssn_.JobValid(job).has_value()) continue;
      if (job->queue == nullptr) continue;

      PriorityQueue<Task*> tasks(task_less);
      for (Task* t : job->TasksWith(TaskStatus::Pending)) {
        if (t->sch_gated || t->best_effort) continue;
        tasks.Push(t);
      }
      if (tasks.Empty()) continue;

      auto [it, inserted] = jobs_by_queue_.try_emplace(job->queue, job_less);
      if (inserted) queues_.Push(job->queue);
      it->second.Push(job);
      tasks_by_job_.emplace(job, std::move(tasks));
    }
  }

  // 2 and 4. Queues take turns; one job per turn.
  void AllocateResources() {
    while (!queues_.Empty()) {
      Queue* queue = queues_.Pop();
      if (ssn_.Overused(queue)) {
        spdlog::debug("allocate: queue {} is overused, skipped", queue->name);
        continue;
      }
      auto& jobs = jobs_by_queue_.at(queue);
      if (jobs.Empty()) continue;
      Job* job = jobs.Pop();
      auto& tasks = tasks_by_job_.at(job);

      std::optional<Statement> stmt = AllocateForJob(job, tasks);
      if (stmt && ssn_.JobReady(job)) {
        stmt->Commit();
        if (!tasks.Empty()) jobs.Push(job);
      }
      // Otherwise a returned statement is left as is (pipelined, not ready): see stage 4.
      queues_.Push(queue);
    }
  }

  // 3. One job's tasks, in one statement.
  std::optional<Statement> AllocateForJob(Job* job, PriorityQueue<Task*>& tasks) {
    Statement stmt(ssn_);
    // Volcano makes a predicate helper (and so a fresh error cache) per job attempt.
    PredicateHelper helper(&rotation_, pool_);
    std::span<Node* const> all_nodes = ssn_.cluster().nodes();
    // Allocate's predicate (the resource check InitResreq ≤ FutureIdle, so a full node costs no
    // FitError, then the plugins' predicates) is SearchForAllocate's; it also scores the feasible
    // nodes in the same pass (stage 3e reads those scores).
    const bool cache = args_.predicate_error_cache_enable;

    while (!tasks.Empty()) {
      Task* t = tasks.Pop();
      // 3a.
      if (!ssn_.Allocatable(job->queue, t)) {
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "the queue cannot take the task (allocatable)");
        continue;
      }
      // 3b.
      if (RoleFailedBefore(job, t)) {
        FitErrors errors;
        errors.SetError(fmt::format("Task {} with role spec {} has already predicated failed, skip",
                                    t->name, t->role));
        RecordFitErrors(job, t, std::move(errors));
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "a task of the same role already failed its predicates");
        continue;
      }
      // 3c.
      if (std::optional<PluginStatus> status = ssn_.PrePredicateFn(t)) {
        RecordFitErrors(job, t, actions::SameErrorOnAllNodes(t, all_nodes, *status));
        if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
        if (NeedContinueAllocating(job)) continue;
        break;
      }
      // 3d.
      PredicateResult& found = found_;  // reused: no buffers allocated per task
      found.nodes.clear();
      if (!t->nominated_node_name.empty()) {
        Node* nominated = ssn_.cluster().FindNode(t->nominated_node_name);
        if (nominated != nullptr && actions::FitsFutureIdle(t->init_resreq(), nominated)) {
          helper.SearchForAllocate(ssn_, t, std::span<Node* const>(&nominated, 1), cache,
                                   /*score=*/true, found);
        }
      }
      if (found.nodes.empty())
        helper.SearchForAllocate(ssn_, t, all_nodes, cache, /*score=*/true, found);
      if (found.nodes.empty()) {
        RecordFitErrors(job, t, std::move(found.errors));
        if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
        if (NeedContinueAllocating(job)) continue;
        break;
      }
      // 3e.
      Node* best = actions::BestNodeOfSearch(ssn_, t, found, pool_);
      if (best == nullptr) {
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "no node scored high enough to be selected");
        continue;
      }
      // 3f.
      if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
      AllocateTask(stmt, t, best);
      // 3g.
      if (ssn_.JobReady(job)) break;
    }

    if (ssn_.JobReady(job) || ssn_.JobPipelined(job)) return stmt;
    stmt.Discard();
    return std::nullopt;
  }

  // 3f.
  void AllocateTask(Statement& stmt, Task* t, Node* node) {
    if (t->init_resreq().LessEqual(node->idle, DimensionDefault::Zero)) {
      if (Status s = stmt.Allocate(t, node); !s.ok())
        spdlog::error("allocate: binding task {} to node {} failed: {}", t->Key(), node->name,
                      s.error().message);
      return;
    }
    if (actions::FitsFutureIdle(t->init_resreq(), node)) {
      if (Status s = stmt.Pipeline(t, node, false); !s.ok())
        spdlog::error("allocate: pipelining task {} to node {} failed: {}", t->Key(), node->name,
                      s.error().message);
    }
  }

  // ---- the job's failed roles (Volcano's FitFailedRoles over job.NodesFitErrors) ----

  // Per role slot: whether a task of that role has recorded fit errors in this session. Built once
  // per job from what earlier actions recorded, then kept current, so the per-task check is O(1).
  std::vector<char>& FailedRoles(const Job* job) {
    auto [it, inserted] = failed_roles_.try_emplace(job);
    if (inserted) {
      it->second.assign(job->roles.size(), 0);
      for (const Task* t : job->tasks)
        if (job->nodes_fit_errors.count(t->index)) it->second[t->role_slot] = 1;
    }
    return it->second;
  }

  // Volcano's TaskHasFitErrors: only tasks with a role share their failures.
  bool RoleFailedBefore(const Job* job, const Task* t) {
    return !t->role.empty() && FailedRoles(job)[t->role_slot];
  }

  void RecordFitErrors(const Job* job, Task* t, FitErrors errors) {
    FailedRoles(job)[t->role_slot] = 1;
    ssn_.RecordFitErrors(t, std::move(errors));
  }

  // Volcano's JobInfo.NeedContinueAllocating: after a task found no node, may the job's other
  // tasks still make it ready?
  bool NeedContinueAllocating(const Job* job) {
    // Every task is needed (the job's default sub-job has minAvailable = the job's): one failure
    // sinks the job.
    if (job->min_available >= job->TaskCount()) return false;
    const std::vector<char>& failed = FailedRoles(job);
    const int pending_slot = StatusSlot(TaskStatus::Pending);
    if (job->min_available < job->task_min_available_total) {
      int64_t left = 0;
      for (size_t r = 0; r < job->roles.size(); ++r)
        if (!failed[r]) left += job->roles[r].status_count[pending_slot];
      return job->ReadyTaskNum() + left >= job->min_available;
    }
    for (size_t r = 0; r < job->roles.size(); ++r) {
      if (!failed[r]) continue;
      const Job::Role& role = job->roles[r];
      if (role.min_available == 0) continue;
      int32_t occupied = role.pending_empty_init;
      for (int slot = 0; slot < kTaskStatusCount; ++slot) {
        TaskStatus s = StatusFromSlot(slot);
        if (AllocatedStatus(s) || s == TaskStatus::Succeeded) occupied += role.status_count[slot];
      }
      if (occupied < role.min_available) return false;
    }
    return true;
  }

  Session& ssn_;
  const ActionArguments& args_;
  ThreadPool& pool_;
  size_t rotation_ = 0;
  PredicateResult found_;  // the current task's search
  PriorityQueue<Queue*> queues_;
  std::unordered_map<const Queue*, PriorityQueue<Job*>> jobs_by_queue_;
  std::unordered_map<const Job*, PriorityQueue<Task*>> tasks_by_job_;
  std::unordered_map<const Job*, std::vector<char>> failed_roles_;
};

class Allocate final : public Action {
 public:
  std::string_view name() const override { return "allocate"; }
  void Execute(Session& ssn) const override { AllocateRun(ssn).Run(); }
};

}  // namespace

const Action& AllocateAction() {
  static const Allocate action;
  return action;
}

}  // namespace kiln
