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
//
// Jobs with a hard network topology (runtime/hyper_node.h; after the session's normalisation a
// soft topology is hard up to the top HyperNode's tier) are placed as Volcano's allocateForJob
// places them (actions/allocate/allocate.go at ed72c7c8), with the job's one default sub-job:
//   T1. A job with a network topology is skipped while the HyperNodes are not ready.
//   T2. Job gradients: the candidates are the virtual top's subtree (root first, then level by
//       level); hyper_node_gradient_for_job keeps those the job may use (no handler: the top
//       alone), grouped by tier, lowest first.
//   T3. For each HyperNode of a gradient, a dry run on a copy of the job's task heap (the job's
//       fit errors reset first): the sub-job is placed under that HyperNode (T4) until the job is
//       ready or its tasks run out; a HyperNode where the job is ready or pipelined is a
//       solution, scored by the sum of the sub-job scores; every dry run is discarded.
//   T4. The sub-job under HyperNode H: candidates are H's subtree, kept by
//       hyper_node_gradient_for_sub_job (no handler: H alone); per gradient, a dry run of stage 3
//       over each candidate's nodes (the nominated node only when it is one of them; fit errors
//       name the HyperNode); hyper_node_order scores the candidates that placed the sub-job and
//       the best (the first of equals: Volcano takes one at random) is applied again; the
//       sub-job's allocated HyperNode becomes the LCA of what it had and the chosen one. While
//       tasks are placed, each carries the sub-job's allocated HyperNode so far (for node scores).
//   T5. The first gradient with a solution decides: the best score (the first of equals) is
//       applied again and its remaining tasks become the job's. When the job is ready the
//       statement is committed and the job's allocated HyperNode becomes the LCA of what it had
//       and the chosen HyperNode.
// What T2-T5 tried is kept in a TopologyTrail (runtime/topology_trail.h): the job's unschedulable
// reason when the search fails, and `kiln explain`'s per-job HyperNode table.
// Jobs without a network topology never reach T1-T5: they are placed exactly as above.

#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/session.h"
#include "runtime/statement.h"
#include "runtime/topology_trail.h"

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
      // T1.
      if (job->HasNetworkTopology() && !HyperNodesReady()) continue;

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

      if (job->hard_topology) {
        std::optional<Statement> stmt = AllocateForTopologyJob(job, tasks);
        trail_.End(job, stmt.has_value());
        if (stmt && ssn_.JobReady(job)) {
          stmt->Commit();
          RecordTopologyDecision(job);
          if (!tasks.Empty()) jobs.Push(job);
        }
        queues_.Push(queue);
        continue;
      }
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
    return AllocateTasks(job, tasks, ssn_.cluster().nodes(), nullptr);
  }

  // Stage 3 over `all_nodes`. hn: the HyperNode they are the nodes of (T4; the nominated node
  // must be one of them, and a real HyperNode is named in fit errors), or null.
  std::optional<Statement> AllocateTasks(Job* job, PriorityQueue<Task*>& tasks,
                                         std::span<Node* const> all_nodes, HyperNode* hn) {
    Statement stmt(ssn_);
    // Volcano makes a predicate helper (and so a fresh error cache) per job attempt.
    PredicateHelper helper(&rotation_, pool_);
    // T4: the sub-job's allocated HyperNode as its tasks are placed.
    HyperNode* allocated_hn = hn != nullptr ? job->sub_job_allocated_hyper_node : nullptr;
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
        if (hn != nullptr && !hn->Contains(nominated)) nominated = nullptr;
        if (nominated != nullptr && actions::FitsFutureIdle(t->init_resreq(), nominated)) {
          helper.SearchForAllocate(ssn_, t, std::span<Node* const>(&nominated, 1), cache,
                                   /*score=*/true, found);
        }
      }
      if (found.nodes.empty())
        helper.SearchForAllocate(ssn_, t, all_nodes, cache, /*score=*/true, found);
      if (found.nodes.empty()) {
        if (hn != nullptr && !hn->top) found.errors.SetHyperNode(hn->name);
        RecordFitErrors(job, t, std::move(found.errors));
        if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
        if (NeedContinueAllocating(job)) continue;
        break;
      }
      // 3e.
      if (hn != nullptr) t->job_allocated_hyper_node = allocated_hn;
      Node* best = actions::BestNodeOfSearch(ssn_, t, found, pool_);
      if (best == nullptr) {
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "no node scored high enough to be selected");
        continue;
      }
      // 3f.
      if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
      AllocateTask(stmt, t, best);
      if (hn != nullptr) {
        HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
        if (HyperNode* leaf = tree.LeafOf(best)) allocated_hn = tree.Lca(leaf, allocated_hn);
      }
      // 3g.
      if (ssn_.JobReady(job)) break;
    }

    if (ssn_.JobReady(job) || ssn_.JobPipelined(job)) return stmt;
    stmt.Discard();
    return std::nullopt;
  }

  // ---- jobs with a hard network topology (T1-T5) ----

  bool HyperNodesReady() const {
    const HyperNodeTree* tree = ssn_.cluster().hyper_nodes();
    return tree != nullptr && tree->ready();
  }

  // A dry run's placements, to apply again once the best one is known (Volcano's
  // SaveOperations / RecoverOperations).
  using Placements = std::vector<std::pair<Statement::Op, std::pair<Task*, Node*>>>;
  static void AppendPlacements(const Statement& stmt, Placements& out) {
    for (const Statement::Operation& op : stmt.operations())
      out.push_back({op.op, {op.task, op.node}});
  }
  Statement Replay(const Placements& placements) {
    Statement stmt(ssn_);
    for (const auto& [op, tn] : placements) {
      Status s = op == Statement::Op::Allocate ? stmt.Allocate(tn.first, tn.second)
                                               : stmt.Pipeline(tn.first, tn.second, false);
      if (!s.ok())
        spdlog::error("allocate: placing task {} on node {} again failed: {}", tn.first->Key(),
                      tn.second->name, s.error().message);
    }
    return stmt;
  }

  // Volcano's JobInfo.ResetFitErr / ResetSubJobFitErr (the default sub-job holds every task).
  void ResetFitErrors(Job* job) {
    job->nodes_fit_errors.clear();
    job->job_fit_error.clear();
    failed_roles_.erase(job);
  }

  // T2/T4: the HyperNodes under `root` (root first, then level by level), kept by the gradient
  // point and grouped by tier, lowest first; the root alone when no plugin answers.
  std::vector<std::vector<HyperNode*>> Gradients(const Job* job, HyperNode* root, bool sub_job) {
    std::vector<HyperNode*> candidates{root};
    for (size_t i = 0; i < candidates.size(); ++i)
      for (HyperNode* c : candidates[i]->children) candidates.push_back(c);
    std::optional<std::vector<HyperNode*>> kept =
        sub_job ? ssn_.HyperNodeGradientForSubJobFn(job, candidates)
                : ssn_.HyperNodeGradientForJobFn(job, candidates);
    if (!kept) {
      trail_.Gradient({&root, 1}, {&root, 1}, sub_job ? root : nullptr);
      return {{root}};
    }
    trail_.Gradient(candidates, *kept, sub_job ? root : nullptr);
    std::map<int64_t, std::vector<HyperNode*>> by_tier;
    for (HyperNode* hn : *kept) by_tier[hn->tier].push_back(hn);
    std::vector<std::vector<HyperNode*>> out;
    for (auto& [tier, hns] : by_tier) out.push_back(std::move(hns));
    return out;
  }

  // T2, T3, T5 (Volcano's allocateForJob with the job's default sub-job).
  std::optional<Statement> AllocateForTopologyJob(Job* job, PriorityQueue<Task*>& tasks) {
    trail_.Begin(job);
    if (tasks.Empty()) return std::nullopt;
    HyperNode* sub_job_snapshot = job->sub_job_allocated_hyper_node;
    HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
    for (const std::vector<HyperNode*>& gradient : Gradients(job, tree.top(), false)) {
      struct Solution {
        HyperNode* hn;
        Placements placements;
        PriorityQueue<Task*> remaining;
        double score;
        HyperNode* sub_job_hn;
      };
      std::vector<Solution> solutions;
      for (HyperNode* hn : gradient) {
        ResetFitErrors(job);
        PriorityQueue<Task*> copy = tasks;
        std::vector<Statement> stmts;
        double score = 0;
        // The sub-job queue: one default sub-job, pushed back while it has tasks and the job is
        // not ready.
        for (bool again = true; again;) {
          again = false;
          auto [stmt, sub_score] = AllocateForSubJob(job, copy, hn);
          if (stmt && !stmt->empty()) {
            stmts.push_back(std::move(*stmt));
            score += sub_score;
            again = !copy.Empty() && !ssn_.JobReady(job);
          }
        }
        HyperNode* sub_job_hn = job->sub_job_allocated_hyper_node;
        job->sub_job_allocated_hyper_node = sub_job_snapshot;
        Placements placements;
        for (const Statement& st : stmts) AppendPlacements(st, placements);
        const bool solution =
            !placements.empty() && (ssn_.JobReady(job) || ssn_.JobPipelined(job));
        trail_.Tried(hn, nullptr, solution, score);
        if (solution) solutions.push_back({hn, placements, copy, score, sub_job_hn});
        for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) it->Discard();
      }
      if (solutions.empty()) continue;
      const Solution* best = &solutions.front();
      for (const Solution& sol : solutions)
        if (sol.score > best->score) best = &sol;
      trail_.Chosen(best->hn, best->score);
      Statement stmt = Replay(best->placements);
      tasks = best->remaining;
      job_decision_[job] = {best->hn, best->sub_job_hn};
      return stmt;
    }
    return std::nullopt;
  }

  // T4 (Volcano's allocateForSubJob): places the default sub-job's tasks under `job_hn`; returns
  // the statement and the chosen HyperNode's score.
  std::pair<std::optional<Statement>, double> AllocateForSubJob(Job* job, PriorityQueue<Task*>& tasks,
                                                                HyperNode* job_hn) {
    if (tasks.Empty()) return {std::nullopt, 0};
    HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
    for (const std::vector<HyperNode*>& gradient : Gradients(job, job_hn, true)) {
      std::vector<HyperNode*> placed;
      std::vector<Placements> placements;
      std::vector<PriorityQueue<Task*>> remaining;
      for (HyperNode* hn : gradient) {
        ResetFitErrors(job);
        PriorityQueue<Task*> copy = tasks;
        std::optional<Statement> stmt = AllocateTasks(job, copy, hn->nodes, hn);
        trail_.Tried(hn, job_hn, stmt.has_value() && !stmt->empty());
        if (stmt && !stmt->empty()) {
          placed.push_back(hn);
          placements.emplace_back();
          AppendPlacements(*stmt, placements.back());
          remaining.push_back(std::move(copy));
          stmt->Discard();
        }
      }
      if (placed.empty()) continue;
      std::vector<double> scores;
      if (Status s = ssn_.HyperNodeOrderFn(job, placed, scores); !s.ok()) {
        spdlog::error("allocate: scoring HyperNodes for job {}: {}", job->uid, s.error().message);
        return {std::nullopt, 0};
      }
      size_t best = 0;
      for (size_t k = 1; k < placed.size(); ++k)
        if (scores[k] > scores[best]) best = k;
      trail_.Scored(placed, scores, best, job_hn);
      Statement stmt = Replay(placements[best]);
      job->sub_job_allocated_hyper_node = tree.Lca(job->sub_job_allocated_hyper_node, placed[best]);
      tasks = std::move(remaining[best]);
      return {std::move(stmt), scores[best]};
    }
    return {std::nullopt, 0};
  }

  // T5, after the commit (Volcano's Recorder.UpdateDecisionToJob).
  void RecordTopologyDecision(Job* job) {
    auto it = job_decision_.find(job);
    if (it == job_decision_.end()) return;
    HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
    job->allocated_hyper_node = tree.Lca(job->allocated_hyper_node, it->second.first);
    job->sub_job_allocated_hyper_node =
        tree.Lca(job->sub_job_allocated_hyper_node, it->second.second);
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
  // What the HyperNode search tried, for the unschedulable reason and kiln explain.
  TopologyTrail trail_{ssn_};
  // T5: per job, the HyperNode its last solution was found under and its sub-job's.
  std::unordered_map<const Job*, std::pair<HyperNode*, HyperNode*>> job_decision_;
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
