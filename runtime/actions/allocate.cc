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
// soft topology is hard up to the top HyperNode's tier) on the job or on a sub-job, and jobs with
// a subGroupPolicy (runtime/sub_job.h), are placed sub-job by sub-job as Volcano's allocateForJob
// places them (actions/allocate/allocate.go at ed72c7c8). A job without a policy has one sub-job,
// its default one, holding every task.
//   T1. A job with a network topology (its own or a sub-job's) is skipped while the HyperNodes
//       are not ready.
//   S1. Job worksheet (Volcano's organizeJobWorksheet): per sub-job, its Pending tasks as in
//       stage 1 in a task heap; sub-jobs without such tasks are left out. The sub-jobs that are
//       not ready (sub_job_ready) are sorted by sub_job_order; walking them, each is "required"
//       while its policy has fewer than minSubGroups sub-jobs counted (ready ones count from the
//       start). The sub-job heap puts required sub-jobs first, then follows sub_job_order.
//   T2. Job gradients: the candidates are the virtual top's subtree (root first, then level by
//       level); hyper_node_gradient_for_job keeps those the job may use (no handler: the top
//       alone), grouped by tier, lowest first.
//   T3. For each HyperNode of a gradient, a dry run on a copy of the job worksheet (the job's
//       fit errors reset first): sub-jobs are popped in order and each is placed under that
//       HyperNode (T4); one that placed tasks and still has some goes back into the heap; the
//       run stops once the job is ready or the heap is empty. A HyperNode where the job is ready
//       or pipelined is a solution, scored by the sum of the sub-job scores; every dry run is
//       discarded and the sub-jobs' allocated HyperNodes restored.
//   T4. A sub-job under HyperNode H: candidates are H's subtree, kept by
//       hyper_node_gradient_for_sub_job (no handler: H alone); per gradient, a dry run of stage 3
//       over each candidate's nodes (the sub-job's fit errors reset first; the nominated node only
//       when it is one of them; fit errors name the HyperNode), with the sub-job's readiness
//       (sub_job_ready / sub_job_pipelined; for a job without a policy, job_ready /
//       job_pipelined) in place of the job's; hyper_node_order scores the candidates that placed
//       the sub-job and the best (the first of equals: Volcano takes one at random) is applied
//       again; the sub-job's allocated HyperNode becomes the LCA of what it had and the chosen
//       one. While the tasks of a sub-job with a network topology are placed, each carries the
//       sub-job's allocated HyperNode so far (for node scores).
//   T5. The first gradient with a solution decides: the best score (the first of equals) is
//       applied again and its remaining worksheet becomes the job's. When the job is ready the
//       statement is committed, the job's allocated HyperNode becomes the LCA of what it had and
//       the chosen HyperNode, each placed sub-job's the LCA of what it had and what it got, and
//       a placed sub-job's nominated HyperNode is cleared; the job goes back into its queue's
//       heap while its worksheet has sub-jobs.
// N1. Nominations (Volcano's allocateFromNomination): a sub-job that gangpreempt/gangreclaim
//     planned into a HyperNode (in this or an earlier session; Cluster::nominated_hyper_nodes)
//     is first placed from that plan, before the job's stage 3 (a job placed without the
//     sub-job search: its default sub-job, or the job itself when it has no sub-jobs) or the
//     sub-job's gradients in T4: every task left goes to its own nominated node without scoring,
//     provided each has one inside the nominated HyperNode that passes Allocatable, PrePredicate
//     and allocate's predicate. On any miss the nomination is dropped, with the tasks' nominated
//     nodes (for this session), and the usual search follows. The nomination is cleared when the
//     sub-job's placement is committed.
// What T2-T5 tried is kept in a TopologyTrail (runtime/topology_trail.h): the job's unschedulable
// reason when the search fails, and `kiln explain`'s per-job HyperNode table.
// Jobs with neither a network topology nor a subGroupPolicy never reach T1-T5: they are placed
// exactly as above.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/session.h"
#include "runtime/statement.h"
#include "runtime/sub_job.h"
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
    bool any = false;
    pipelined_by_gang_only_ = true;
    for (const Session::HandlerUse& use : ssn_.HandlerCoverage()) {
      if (use.point != ExtensionPoint::JobPipelined) continue;
      any = true;
      if (use.plugin != "gang") pipelined_by_gang_only_ = false;
    }
    pipelined_by_gang_only_ = pipelined_by_gang_only_ && any;
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
      if (job->ContainsNetworkTopology() && !HyperNodesReady()) continue;

      if (UsesSubJobSearch(job)) {
        // S1.
        JobSheet sheet = OrganizeJobWorksheet(job);
        if (sheet.Empty()) continue;
        sheets_.emplace(job, std::move(sheet));
      } else {
        PriorityQueue<Task*> tasks(task_less);
        for (Task* t : job->TasksWith(TaskStatus::Pending)) {
          if (t->sch_gated || t->best_effort) continue;
          tasks.Push(t);
        }
        if (tasks.Empty()) continue;
        tasks_by_job_.emplace(job, std::move(tasks));
      }

      auto [it, inserted] = jobs_by_queue_.try_emplace(job->queue, job_less);
      if (inserted) queues_.Push(job->queue);
      it->second.Push(job);
    }
  }

  // Volcano's `ContainsHardTopology() || ContainsSubJobPolicy()`: placed by allocateForJob.
  static bool UsesSubJobSearch(const Job* job) {
    return job->ContainsHardTopology() || job->HasSubGroupPolicy();
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

      if (UsesSubJobSearch(job)) {
        JobSheet& sheet = sheets_.at(job);
        std::optional<Statement> stmt =
            AllocateForTopologyJob(job, sheet, ssn_.cluster().hyper_nodes()->top());
        trail_.End(job, stmt.has_value());
        if (stmt && ssn_.JobReady(job)) {
          Settle(*stmt, /*commit=*/true);
          RecordTopologyDecision(job);
          if (!sheet.Empty()) jobs.Push(job);
        }
        queues_.Push(queue);
        continue;
      }
      auto& tasks = tasks_by_job_.at(job);
      // N1. A gang eviction's nomination is honoured first; a miss falls back to stage 3.
      std::optional<Statement> stmt =
          AllocateFromNomination(job, job->uid, job->DefaultSubJob(), tasks);
      if (!stmt) stmt = AllocateForJob(job, tasks);
      if (stmt && ssn_.JobReady(job)) {
        Settle(*stmt, /*commit=*/true);
        ClearNomination(job->uid, job->DefaultSubJob());  // redeemed
        if (!tasks.Empty()) jobs.Push(job);
      }
      // Otherwise a returned statement is left as is (pipelined, not ready): see stage 4.
      queues_.Push(queue);
    }
  }

  // 3. One job's tasks, in one statement.
  std::optional<Statement> AllocateForJob(Job* job, PriorityQueue<Task*>& tasks) {
    return AllocateTasks(job, nullptr, tasks, ssn_.cluster().nodes(), nullptr);
  }

  // Stage 3 over `all_nodes`. sub: the sub-job the tasks are of (T4), or null (the whole job).
  // hn: the HyperNode the nodes are of (T4; the nominated node must be one of them, and a real
  // HyperNode is named in fit errors), or null.
  std::optional<Statement> AllocateTasks(Job* job, SubJob* sub, PriorityQueue<Task*>& tasks,
                                         std::span<Node* const> all_nodes, HyperNode* hn) {
    Statement stmt(ssn_);
    // Volcano makes a predicate helper (and so a fresh error cache) per job attempt.
    PredicateHelper helper(&rotation_, pool_, &columns_);
    // T4: the sub-job's allocated HyperNode as its tasks are placed (sub-jobs with a topology).
    const bool track_hn = hn != nullptr && sub != nullptr && sub->HasNetworkTopology();
    HyperNode* allocated_hn = track_hn ? sub->allocated_hyper_node : nullptr;
    auto ready = [&] { return sub != nullptr ? ssn_.SubJobReady(job, sub) : ssn_.JobReady(job); };
    // Allocate's predicate (the resource check InitResreq ≤ FutureIdle, so a full node costs no
    // FitError, then the plugins' predicates) is SearchForAllocate's; it also scores the feasible
    // nodes in the same pass (stage 3e reads those scores).
    const bool cache = args_.predicate_error_cache_enable;

    while (!tasks.Empty()) {
      Task* t = tasks.Pop();
      // 3a.
      if (!ssn_.Allocatable(job->queue, t)) {
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "the queue cannot take the task (allocatable)",
                    "QueueNotAllocatable");
        continue;
      }
      // 3b.
      if (RoleFailedBefore(job, sub, t)) {
        FitErrors errors;
        errors.SetError(CodedReason(
            "RoleAlreadyFailed",
            fmt::format("Task {} with role spec {} has already predicated failed, skip", t->name,
                        t->role)));
        RecordFitErrors(job, t, std::move(errors));
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "a task of the same role already failed its predicates",
                    "RoleAlreadyFailed");
        continue;
      }
      // 3c.
      if (std::optional<PluginStatus> status = ssn_.PrePredicateFn(t)) {
        RecordFitErrors(job, t, actions::SameErrorOnAllNodes(t, all_nodes, *status));
        if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
        if (NeedContinueAllocating(job, sub)) continue;
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
      if (found.nodes.empty()) {
        helper.SearchForAllocate(ssn_, t, all_nodes, cache, /*score=*/true, found);
        ++searches_;
      }
      if (found.nodes.empty()) {
        if (hn != nullptr && !hn->top) found.errors.SetHyperNode(hn->name);
        RecordFitErrors(job, t, std::move(found.errors));
        if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
        if (NeedContinueAllocating(job, sub)) continue;
        break;
      }
      // 3e.
      if (track_hn) {
        t->job_allocated_hyper_node = allocated_hn;
        if (task_hn_log_ != nullptr) task_hn_log_->push_back({log_position_, {t, allocated_hn}});
      }
      Node* best = actions::BestNodeOfSearch(ssn_, t, found, pool_);
      if (best == nullptr) {
        if (ExplainRecorder* r = ssn_.explain())
          r->Record(ssn_, "allocate", t, "no node scored high enough to be selected",
                    "NoNodeSelected");
        continue;
      }
      // 3f.
      if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "allocate", t);
      AllocateTask(stmt, t, best);
      if (track_hn) {
        HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
        if (HyperNode* leaf = tree.LeafOf(best)) allocated_hn = tree.Lca(leaf, allocated_hn);
      }
      // 3g.
      if (ready()) break;
    }

    if (ready()) return stmt;
    if (sub != nullptr ? ssn_.SubJobPipelined(job, sub) : ssn_.JobPipelined(job)) return stmt;
    Settle(stmt, /*commit=*/false);
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
      columns_.Refresh(tn.second);
    }
    return stmt;
  }

  // Volcano's JobInfo.ResetFitErr.
  void ResetFitErrors(Job* job) {
    job->nodes_fit_errors.clear();
    job->job_fit_error.clear();
    failed_roles_.erase(job);
  }

  // Volcano's JobInfo.ResetSubJobFitErr: the fit errors of the sub-job's tasks.
  void ResetSubJobFitErrors(Job* job, const SubJob* sub) {
    for (const Task* t : sub->tasks) job->nodes_fit_errors.erase(t->index);
    failed_roles_.erase(job);  // rebuilt from what is left
  }

  // T2/T4: the HyperNodes under `root` (root first, then level by level), kept by the gradient
  // point `keep` and grouped by tier, lowest first; the root alone when no plugin answers.
  // within: null for the job's gradients (T2), the job-level HyperNode for a sub-job's (T4).
  template <typename Keep>
  std::vector<std::vector<HyperNode*>> Gradients(HyperNode* root, const HyperNode* within,
                                                 Keep keep) {
    std::vector<HyperNode*> candidates{root};
    for (size_t i = 0; i < candidates.size(); ++i)
      for (HyperNode* c : candidates[i]->children) candidates.push_back(c);
    std::optional<std::vector<HyperNode*>> kept = keep(std::span<HyperNode* const>(candidates));
    if (!kept) {
      trail_.Gradient({&root, 1}, {&root, 1}, within);
      return {{root}};
    }
    trail_.Gradient(candidates, *kept, within);
    std::map<int64_t, std::vector<HyperNode*>> by_tier;
    for (HyperNode* hn : *kept) by_tier[hn->tier].push_back(hn);
    std::vector<std::vector<HyperNode*>> out;
    for (auto& [tier, hns] : by_tier) out.push_back(std::move(hns));
    return out;
  }

  // The job worksheet of a job placed sub-job by sub-job (S1): its sub-jobs with tasks to place,
  // in a heap, and each one's task heap.
  struct JobSheet {
    PriorityQueue<SubJob*> sub_jobs;
    std::unordered_map<const SubJob*, PriorityQueue<Task*>> tasks;
    bool Empty() const { return sub_jobs.Empty(); }
  };

  // S1 (Volcano's organizeJobWorksheet).
  JobSheet OrganizeJobWorksheet(Job* job) {
    auto required = std::make_shared<std::unordered_set<const SubJob*>>(
        actions::SubJobsRequiredByMinSubGroups(ssn_, job));
    JobSheet sheet{PriorityQueue<SubJob*>([this, required](SubJob* const& l, SubJob* const& r) {
                     const bool lr = required->count(l) != 0;
                     const bool rr = required->count(r) != 0;
                     if (lr != rr) return lr;
                     return ssn_.SubJobLess(l, r);
                   }),
                   {}};
    auto task_less = [this](Task* const& l, Task* const& r) { return ssn_.TaskLess(l, r); };
    for (const auto& sub : job->sub_jobs) {
      PriorityQueue<Task*> tasks(task_less);
      for (Task* t : sub->tasks) {
        if (t->status != TaskStatus::Pending || t->sch_gated || t->best_effort) continue;
        tasks.Push(t);
      }
      if (tasks.Empty()) continue;
      sheet.sub_jobs.Push(sub.get());
      sheet.tasks.emplace(sub.get(), std::move(tasks));
    }
    return sheet;
  }

  // A job-level solution under one HyperNode (T3).
  struct Solution {
    HyperNode* hn;
    Placements placements;
    JobSheet remaining;
    double score;
    std::vector<std::pair<SubJob*, HyperNode*>> sub_job_hns;  // the sub-jobs placed, and where
  };

  // T3 under one HyperNode: the job's dry run on a copy of its worksheet. `snapshot` is the
  // sub-jobs' allocated HyperNodes before any dry run (restored after this one). Returns the
  // solution when the job ends ready or pipelined; the dry run is discarded either way.
  std::optional<Solution> DryRunJob(Job* job, const JobSheet& sheet, HyperNode* hn,
                                    const std::vector<HyperNode*>& snapshot) {
    ResetFitErrors(job);
    JobSheet copy = sheet;
    std::vector<Statement> stmts;
    std::vector<SubJob*> placed;
    double score = 0;
    while (!copy.sub_jobs.Empty()) {
      SubJob* sub = copy.sub_jobs.Pop();
      PriorityQueue<Task*>& tasks = copy.tasks.at(sub);
      auto [stmt, sub_score] = AllocateForSubJob(job, sub, tasks, hn);
      if (stmt && !stmt->empty()) {
        stmts.push_back(std::move(*stmt));
        score += sub_score;
        placed.push_back(sub);
        if (!tasks.Empty()) copy.sub_jobs.Push(sub);
        if (ssn_.JobReady(job)) break;
      }
    }
    std::vector<std::pair<SubJob*, HyperNode*>> sub_job_hns;
    for (SubJob* sub : placed) sub_job_hns.push_back({sub, sub->allocated_hyper_node});
    for (size_t k = 0; k < job->sub_jobs.size(); ++k)
      job->sub_jobs[k]->allocated_hyper_node = snapshot[k];
    Placements placements;
    for (const Statement& st : stmts) AppendPlacements(st, placements);
    const bool solution = !placements.empty() && (ssn_.JobReady(job) || ssn_.JobPipelined(job));
    trail_.Tried(hn, nullptr, solution, score);
    std::optional<Solution> out;
    if (solution) out = Solution{hn, std::move(placements), std::move(copy), score,
                                 std::move(sub_job_hns)};
    for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) Settle(*it, /*commit=*/false);
    return out;
  }

  // T2, T3, T5 (Volcano's allocateForJob).
  std::optional<Statement> AllocateForTopologyJob(Job* job, JobSheet& sheet, HyperNode* root) {
    trail_.Begin(job);
    if (sheet.Empty()) return std::nullopt;
    // Volcano's Recorder.SnapshotSubJobStatus / RecoverSubJobStatus: the sub-jobs' allocated
    // HyperNodes before each dry run.
    std::vector<HyperNode*> snapshot;
    for (const auto& sub : job->sub_jobs) snapshot.push_back(sub->allocated_hyper_node);
    auto keep = [&](std::span<HyperNode* const> c) {
      return ssn_.HyperNodeGradientForJobFn(job, c);
    };
    for (const std::vector<HyperNode*>& gradient : Gradients(root, nullptr, keep)) {
      std::optional<Solution> best;
      if (!SearchBestFirst(job, sheet, gradient, snapshot, best)) {
        // Every HyperNode of the gradient is tried; the best score wins, the first of equals.
        for (HyperNode* hn : gradient) {
          std::optional<Solution> sol = DryRunJob(job, sheet, hn, snapshot);
          if (sol && (!best || sol->score > best->score)) best = std::move(sol);
        }
      }
      if (!best) continue;
      trail_.Chosen(best->hn, best->score);
      Statement stmt = Replay(best->placements);
      sheet = std::move(best->remaining);
      job_decision_[job] = {best->hn, std::move(best->sub_job_hns)};
      return stmt;
    }
    return std::nullopt;
  }

  // What a gang's pending tasks need of a HyperNode's nodes, to tell without a dry run that
  // they cannot all be placed there (SearchBestFirst). A task is placed only on a node whose
  // future idle fits it (FitsFutureIdle: per dimension `request < future + kMinResource`), and
  // placing it takes its request off that node's future idle, so the tasks placed on one node
  // sum, per dimension, below its future idle at the start + kMinResource; they sum to at least
  // as much as the same number of the gang's smallest requests. A node thus takes at most the
  // largest k whose k smallest requests stay below that bound, in every dimension (tasks asking
  // nothing of a dimension are not limited by it); when the nodes' k add up to fewer than the
  // gang's tasks, no dry run there can place the whole gang. Likewise the m tasks asking at least
  // x of a dimension: a node takes at most the largest c with c·x below its bound, and when
  // those c add up to fewer than m, the gang cannot be placed either (a nearly full leaf with
  // many small free fragments passes the first test and fails this one).
  struct GangNeed {
    bool usable = true;  // false when a request is negative (the bound above assumes none is)
    size_t count = 0;
    std::vector<ResourceId> dims;
    std::vector<std::vector<double>> sorted;  // per dimension, the requests, smallest first
    std::vector<std::vector<double>> prefix;  // per dimension, prefix[k]: the k smallest summed

    std::vector<std::vector<std::pair<double, size_t>>> levels;  // per dimension: (x > 0, m)

    bool CannotHoldIn(const HyperNode& hn) const {
      if (!usable) return false;
      size_t total = 0;
      std::vector<std::vector<size_t>> room(dims.size());  // per dimension and level: Σ c
      for (size_t d = 0; d < dims.size(); ++d) room[d].assign(levels[d].size(), 0);
      for (const Node* node : hn.nodes) {
        size_t k_node = count;
        for (size_t d = 0; d < dims.size(); ++d) {
          const double future = node->fit_future[dims[d]];
          // A little looser than the check, so rounding can never make this claim too much.
          const double bound = future + kMinResource + 1e-9 * std::abs(future) + 1e-6;
          size_t k = 0;
          while (k < k_node && (sorted[d][k] == 0 || prefix[d][k + 1] < bound)) ++k;
          k_node = k;
          for (size_t l = 0; l < levels[d].size(); ++l) {
            const auto [x, m] = levels[d][l];
            if (bound <= 0 || room[d][l] >= m) continue;
            const double c = std::ceil(bound / x) - 1;  // the largest c with c·x < bound
            room[d][l] += c >= static_cast<double>(m) ? m : static_cast<size_t>(std::max(c, 0.0));
          }
        }
        total += k_node;
      }
      if (total < count) return true;
      for (size_t d = 0; d < dims.size(); ++d)
        for (size_t l = 0; l < levels[d].size(); ++l)
          if (room[d][l] < levels[d][l].second) return true;
      return false;
    }
  };
  static GangNeed GangNeedOf(const PriorityQueue<Task*>& heap) {
    GangNeed need;
    std::vector<const Task*> tasks;
    for (PriorityQueue<Task*> copy = heap; !copy.Empty();) tasks.push_back(copy.Pop());
    need.count = tasks.size();
    uint32_t scalars = 0;
    for (const Task* t : tasks) scalars |= t->init_resreq().scalar_mask();
    need.dims = {kCpu, kMemory};
    ForEachBit(scalars, [&](ResourceId id) { need.dims.push_back(id); });
    for (ResourceId id : need.dims) {
      std::vector<double> v;
      for (const Task* t : tasks) {
        const double x = t->init_resreq().values[id];
        if (!(x >= 0)) need.usable = false;
        v.push_back(x);
      }
      std::sort(v.begin(), v.end());
      std::vector<double> prefix{0.0};
      for (double x : v) prefix.push_back(prefix.back() + x);
      std::vector<std::pair<double, size_t>> levels;
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] > 0 && (i == 0 || v[i] != v[i - 1])) levels.push_back({v[i], v.size() - i});
      need.levels.push_back(std::move(levels));
      need.sorted.push_back(std::move(v));
      need.prefix.push_back(std::move(prefix));
    }
    return need;
  }

  // T3 best first. Trying every HyperNode of a gradient costs a dry run of the whole gang per
  // candidate (about 300 leaves at 10k nodes). Where a candidate's score is known before its dry
  // run, the candidates are tried best score first (the first of equals first) and the first
  // one that holds the gang is the one the full search would choose. That holds when:
  //   * the job has no subGroupPolicy (one sub-job: its default one) and needs every task
  //     (minAvailable ≥ its task count), and the only job_pipelined voter is gang: a dry run then
  //     places the sub-job in one pass — a task that finds no node stops it with that task
  //     still pending, so the job is neither ready nor pipelined and the run is no solution —
  //     and the job's score is the sub-job's;
  //   * every candidate is a HyperNode without children: the sub-job's own gradient under it
  //     is that HyperNode alone (or nothing), so its score is hyper_node_order over that one
  //     HyperNode, on the state every dry run starts from (each one is discarded);
  //   * no nomination and no nominated node is involved (those searches move the rotation and
  //     drop the nomination for the later candidates), no `kiln explain` records the session
  //     (it shows every dry run), and every candidate has at most NumNodesToFind nodes, so
  //     each search examines all of them and leaves the rotation at start (r % n): the rotation
  //     each dry run of the full search would start from is computed, not lived through.
  // A candidate whose nodes cannot hold the gang (GangNeed) is passed over without a dry run:
  // it is no solution. What the full search leaves behind is restored: the rotation, and the fit
  // errors (and failed roles) of the gradient's last dry run, which is run again when it was not
  // the last one run. The tasks' job_allocated_hyper_node are set as the full search leaves them
  // from the dry runs made; when no candidate holds the gang, every one is run, and otherwise the
  // candidates not run come with a solution, whose placement takes every one of the job's tasks
  // out of Pending, where nothing reads that field again. Returns false when the
  // conditions do not hold (or a dry run scores otherwise than predicted): the caller then tries
  // every HyperNode; `best` is the solution, if any.
  bool SearchBestFirst(Job* job, const JobSheet& sheet, const std::vector<HyperNode*>& gradient,
                       const std::vector<HyperNode*>& snapshot, std::optional<Solution>& best) {
    const size_t n = gradient.size();
    if (n < 2 || ssn_.explain() != nullptr || !pipelined_by_gang_only_) return false;
    if (job->HasSubGroupPolicy() || sheet.tasks.size() != 1) return false;
    if (job->min_available < job->TaskCount()) return false;
    const SubJob* sub = sheet.tasks.begin()->first;
    if (ssn_.cluster().nominated_hyper_nodes().count(sub->uid) != 0) return false;
    for (const Task* t : job->tasks)
      if (!t->nominated_node_name.empty()) return false;
    for (const HyperNode* hn : gradient) {
      const size_t size = hn->nodes.size();
      if (!hn->children.empty() || size == 0 ||
          static_cast<size_t>(actions::NumNodesToFind(static_cast<int>(size))) < size)
        return false;
    }

    // The scores, and the order to try the candidates in.
    std::vector<double> scores(n);
    std::vector<double> one;
    for (size_t i = 0; i < n; ++i) {
      HyperNode* hn = gradient[i];
      one.clear();  // HyperNodeOrderFn adds to what it is given
      if (!ssn_.HyperNodeOrderFn(sub, std::span<HyperNode* const>(&hn, 1), one).ok() ||
          one.size() != 1 || std::isnan(one[0]))
        return false;
      scores[i] = one[0];
    }
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });

    // The rotation each dry run of the full search starts from, and the one it ends with.
    const size_t rotation_at_start = rotation_;
    std::vector<size_t> rotation_before(n);
    size_t r = rotation_;
    for (size_t i = 0; i < n; ++i) {
      rotation_before[i] = r;
      r %= gradient[i]->nodes.size();
    }
    const size_t rotation_after = r;

    TopologyTrail::Checkpoint trail = trail_.Save();
    std::vector<HyperNode*> task_hns;
    for (const Task* t : job->tasks) task_hns.push_back(t->job_allocated_hyper_node);
    // Per dry run made (by gradient position), the job_allocated_hyper_node it gave each task.
    std::vector<std::pair<size_t, std::pair<Task*, HyperNode*>>> given;
    task_hn_log_ = &given;
    const uint64_t searches_at_start = searches_;
    size_t last_run = n;
    auto run = [&](size_t i) {
      rotation_ = rotation_before[i];
      log_position_ = i;
      last_run = i;
      return DryRunJob(job, sheet, gradient[i], snapshot);
    };
    bool predicted = true;
    GangNeed need = GangNeedOf(sheet.tasks.begin()->second);
    std::vector<size_t> skipped;  // cannot hold the gang: run only if no candidate holds it
    for (size_t i : order) {
      if (need.CannotHoldIn(*gradient[i])) {
        skipped.push_back(i);
        continue;
      }
      std::optional<Solution> sol = run(i);
      if (!sol) continue;
      predicted = sol->score == scores[i];
      if (predicted) best = std::move(sol);
      break;
    }
    // No solution: the full search's dry runs leave their fit errors, trail entries and task
    // fields, so the skipped ones are made too (they are no solution, as predicted).
    if (predicted && !best)
      for (size_t i : skipped) run(i);
    if (predicted && last_run != n - 1) {
      // The fit errors the full search leaves are its last dry run's; its trail entry is not
      // wanted twice.
      TopologyTrail::Checkpoint before = trail_.Save();
      run(n - 1);
      trail_.Restore(std::move(before));
    }
    task_hn_log_ = nullptr;
    if (!predicted) {
      spdlog::warn("allocate: job {}: a HyperNode scored otherwise than predicted; trying all",
                   job->uid);
      trail_.Restore(std::move(trail));
      for (size_t k = 0; k < job->tasks.size(); ++k)
        job->tasks[k]->job_allocated_hyper_node = task_hns[k];
      rotation_ = rotation_at_start;
      best.reset();
      return false;
    }
    std::stable_sort(given.begin(), given.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [position, task_hn] : given)
      task_hn.first->job_allocated_hyper_node = task_hn.second;
    // No dry run searched (each stops before its first search at the same task): the rotation
    // did not move.
    rotation_ = searches_ == searches_at_start ? rotation_at_start : rotation_after;
    return true;
  }

  // T4 (Volcano's allocateForSubJob): places the sub-job's tasks under `job_hn`; returns the
  // statement and the chosen HyperNode's score.
  std::pair<std::optional<Statement>, double> AllocateForSubJob(Job* job, SubJob* sub,
                                                                PriorityQueue<Task*>& tasks,
                                                                HyperNode* job_hn) {
    if (tasks.Empty()) return {std::nullopt, 0};
    // N1.
    HyperNode* nominated = nullptr;
    if (std::optional<Statement> stmt =
            AllocateFromNomination(job, sub->uid, sub, tasks, &nominated)) {
      trail_.Nominated(nominated, job_hn);
      return {std::move(stmt), 0};
    }
    HyperNodeTree& tree = *ssn_.cluster().hyper_nodes();
    auto keep = [&](std::span<HyperNode* const> c) {
      return ssn_.HyperNodeGradientForSubJobFn(sub, c);
    };
    for (const std::vector<HyperNode*>& gradient : Gradients(job_hn, job_hn, keep)) {
      std::vector<HyperNode*> placed;
      std::vector<Placements> placements;
      std::vector<PriorityQueue<Task*>> remaining;
      for (HyperNode* hn : gradient) {
        ResetSubJobFitErrors(job, sub);
        PriorityQueue<Task*> copy = tasks;
        std::optional<Statement> stmt = AllocateTasks(job, sub, copy, hn->nodes, hn);
        trail_.Tried(hn, job_hn, stmt.has_value() && !stmt->empty());
        if (stmt && !stmt->empty()) {
          placed.push_back(hn);
          placements.emplace_back();
          AppendPlacements(*stmt, placements.back());
          remaining.push_back(std::move(copy));
          Settle(*stmt, /*commit=*/false);
        }
      }
      if (placed.empty()) continue;
      std::vector<double> scores;
      if (Status s = ssn_.HyperNodeOrderFn(sub, placed, scores); !s.ok()) {
        spdlog::error("allocate: scoring HyperNodes for sub-job {}: {}", sub->uid,
                      s.error().message);
        return {std::nullopt, 0};
      }
      size_t best = 0;
      for (size_t k = 1; k < placed.size(); ++k)
        if (scores[k] > scores[best]) best = k;
      trail_.Scored(placed, scores, best, job_hn);
      Statement stmt = Replay(placements[best]);
      sub->allocated_hyper_node = tree.Lca(sub->allocated_hyper_node, placed[best]);
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
    for (auto& [sub, hn] : it->second.second) {
      sub->allocated_hyper_node = tree.Lca(sub->allocated_hyper_node, hn);
      ClearNomination(sub->uid, sub);  // the nomination is redeemed
    }
    if (const SubJob* d = job->DefaultSubJob())
      job->sub_job_allocated_hyper_node = d->allocated_hyper_node;
  }

  // Commits or discards `stmt`, then refreshes the columns of the nodes it had touched (a discard
  // frees them; a bind that fails is undone).
  void Settle(Statement& stmt, bool commit) {
    touched_.clear();
    for (const Statement::Operation& op : stmt.operations()) touched_.push_back(op.node);
    if (commit) {
      stmt.Commit();
    } else {
      stmt.Discard();
    }
    for (const Node* n : touched_) columns_.Refresh(n);
  }

  // 3f. False when the statement refused the placement (logged).
  bool AllocateTask(Statement& stmt, Task* t, Node* node) {
    const bool ok = PlaceTask(stmt, t, node);
    columns_.Refresh(node);
    return ok;
  }
  bool PlaceTask(Statement& stmt, Task* t, Node* node) {
    if (t->init_resreq().LessEqual(node->idle, DimensionDefault::Zero)) {
      if (Status s = stmt.Allocate(t, node); !s.ok()) {
        spdlog::error("allocate: binding task {} to node {} failed: {}", t->Key(), node->name,
                      s.error().message);
        return false;
      }
      return true;
    }
    if (actions::FitsFutureIdle(t->init_resreq(), node)) {
      if (Status s = stmt.Pipeline(t, node, false); !s.ok()) {
        spdlog::error("allocate: pipelining task {} to node {} failed: {}", t->Key(), node->name,
                      s.error().message);
        return false;
      }
    }
    return true;
  }

  // ---- gang-eviction nominations (N1; Volcano's allocateFromNomination) ----

  // N1. The sub-job `uid` (sub: its SubJob; null for a job without sub-jobs, whose tasks are
  // `tasks`) nominated by gangpreempt/gangreclaim: every task left in `tasks` goes to its own
  // nominated node, which must be one of the nominated HyperNode's nodes and pass the queue's
  // Allocatable, PrePredicate and allocate's predicate (FutureIdle, then the plugins'); no
  // scoring. All or nothing: on any miss the nomination is dropped, with the tasks' nominated
  // nodes, and nullopt returned (the caller searches as usual). On success `tasks` is emptied and
  // the sub-job's allocated HyperNode becomes the LCA of what it had and the nominated one; the
  // nomination stays until the placement is committed.
  std::optional<Statement> AllocateFromNomination(Job* job, const std::string& uid, SubJob* sub,
                                                  PriorityQueue<Task*>& tasks,
                                                  HyperNode** placed_under = nullptr) {
    const auto& nominations = ssn_.cluster().nominated_hyper_nodes();
    auto it = nominations.find(uid);
    if (it == nominations.end() || tasks.Empty()) return std::nullopt;
    const std::string pinned_name = it->second;
    auto miss = [&](std::string_view why) -> std::optional<Statement> {
      spdlog::debug("allocate: nomination of {} to {} dropped: {}", uid, pinned_name, why);
      ClearNomination(uid, sub);
      PriorityQueue<Task*> all = tasks;
      while (!all.Empty()) all.Pop()->nominated_node_name.clear();
      return std::nullopt;
    };
    HyperNodeTree* tree = ssn_.cluster().hyper_nodes();
    HyperNode* pinned = tree != nullptr ? tree->Find(pinned_name) : nullptr;
    if (pinned == nullptr && tree != nullptr && pinned_name == kClusterTopHyperNode)
      pinned = tree->top();
    const bool whole_cluster = pinned_name == kClusterTopHyperNode;
    if (pinned == nullptr && !whole_cluster) return miss("the HyperNode is gone");
    std::span<Node* const> leaves = whole_cluster ? ssn_.cluster().nodes() : pinned->nodes;
    if (leaves.empty()) return miss("the HyperNode has no nodes");

    std::vector<std::pair<Task*, Node*>> plan;
    PriorityQueue<Task*> preview = tasks;
    PredicateHelper helper(&rotation_, pool_);
    while (!preview.Empty()) {
      Task* t = preview.Pop();
      if (!ssn_.Allocatable(job->queue, t)) return miss("the queue cannot take a task");
      if (t->nominated_node_name.empty()) return miss("a task has no nominated node");
      Node* node = ssn_.cluster().FindNode(t->nominated_node_name);
      if (node == nullptr || (!whole_cluster && !pinned->Contains(node)))
        return miss("a task's nominated node is outside the HyperNode");
      if (ssn_.PrePredicateFn(t)) return miss("PrePredicate rejects a task");
      PredicateResult& found = found_;
      found.nodes.clear();
      helper.SearchForAllocate(ssn_, t, std::span<Node* const>(&node, 1),
                               args_.predicate_error_cache_enable, /*score=*/false, found);
      if (found.nodes.empty()) return miss("a task's nominated node no longer fits it");
      plan.emplace_back(t, node);
    }
    Statement stmt(ssn_);
    for (auto [t, node] : plan) {
      if (sub != nullptr && sub->HasNetworkTopology()) t->job_allocated_hyper_node = pinned;
      if (!AllocateTask(stmt, t, node)) {
        Settle(stmt, /*commit=*/false);
        return miss("placing a task failed");
      }
    }
    while (!tasks.Empty()) tasks.Pop();
    if (placed_under != nullptr) *placed_under = pinned;
    if (sub != nullptr && tree != nullptr && pinned != nullptr)
      sub->allocated_hyper_node = tree->Lca(sub->allocated_hyper_node, pinned);
    return stmt;
  }

  void ClearNomination(const std::string& uid, SubJob* sub) {
    ssn_.cluster().nominated_hyper_nodes().erase(uid);
    if (sub != nullptr) sub->nominated_hyper_node = nullptr;
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

  // Volcano's TaskHasFitErrors: only tasks with a role share their failures, within the task's
  // sub-job (a job without a policy has one sub-job: the whole job).
  bool RoleFailedBefore(const Job* job, const SubJob* sub, const Task* t) {
    if (t->role.empty()) return false;
    if (sub == nullptr || !job->HasSubGroupPolicy()) return FailedRoles(job)[t->role_slot];
    for (const Task* o : sub->tasks)
      if (o->role_slot == t->role_slot && job->nodes_fit_errors.count(o->index)) return true;
    return false;
  }

  void RecordFitErrors(const Job* job, Task* t, FitErrors errors) {
    FailedRoles(job)[t->role_slot] = 1;
    ssn_.RecordFitErrors(t, std::move(errors));
  }

  // Volcano's JobInfo.NeedContinueAllocating: after a task found no node, may the job's other
  // tasks still make it ready?
  bool NeedContinueAllocating(const Job* job, const SubJob* sub) {
    if (sub != nullptr && job->HasSubGroupPolicy()) {
      if (job->min_available == job->TaskCount()) return false;
      if (sub->min_available >= static_cast<int64_t>(sub->tasks.size())) return false;
      return true;  // Volcano applies no role strategy to jobs with a policy
    }
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
  // The nodes' fit values for the searches (actions::FitColumns): every placement, commit and
  // discard below refreshes the nodes it touched.
  actions::FitColumns columns_{ssn_.cluster()};
  std::vector<const Node*> touched_;  // Settle's, reused
  uint64_t searches_ = 0;  // node searches over a span of nodes (SearchBestFirst's rotation)
  // SearchBestFirst: where AllocateTasks logs each job_allocated_hyper_node it gives a task,
  // with the gradient position of the dry run (log_position_).
  std::vector<std::pair<size_t, std::pair<Task*, HyperNode*>>>* task_hn_log_ = nullptr;
  size_t log_position_ = 0;
  // Whether gang is the only plugin voting on job_pipelined (SearchBestFirst).
  bool pipelined_by_gang_only_ = false;
  PredicateResult found_;  // the current task's search
  PriorityQueue<Queue*> queues_;
  std::unordered_map<const Queue*, PriorityQueue<Job*>> jobs_by_queue_;
  std::unordered_map<const Job*, PriorityQueue<Task*>> tasks_by_job_;
  std::unordered_map<const Job*, std::vector<char>> failed_roles_;
  std::unordered_map<const Job*, JobSheet> sheets_;  // S1: jobs placed sub-job by sub-job
  // T5: per job, the HyperNode its last solution was found under and where its sub-jobs went.
  std::unordered_map<const Job*, std::pair<HyperNode*, std::vector<std::pair<SubJob*, HyperNode*>>>>
      job_decision_;
  // What the HyperNode search tried, for the unschedulable reason and kiln explain.
  TopologyTrail trail_{ssn_};
};

}  // namespace

const Action& AllocateAction() {
  static const RunAction<AllocateRun> action("allocate");
  return action;
}

}  // namespace kiln
