// preempt (volcano-semantics.md §4.4): a starving job takes resources from lower-ordered work in
// its own queue — first from other jobs of the queue, then from its own running tasks. The
// preemptor is only pipelined onto the freed node; a later cycle's allocate binds it.
//
// Stages:
//   1. Preemptors. Jobs that are not Pending, pass JobValid, have a queue and are JobStarving go
//      into their queue's job heap (JobOrderFn) and the under-request list; each gets a task heap
//      (TaskOrderFn) of its Pending, non-gated tasks. No Overused check. A job with a network
//      topology is no preemptor (Volcano at ed72c7c8 skips it; gangpreempt places such gangs
//      inside a domain).
//   2. For each queue in QueueOrder — phase 1, between jobs of the queue: pop the best preemptor
//      job; in one statement, while it is starving and has tasks, preempt for its next task with
//      victims that are Bound/Running, preemptable, BestEffort when the preemptor is BestEffort,
//      and belong to another job of the same queue. Commit when the job is then JobPipelined,
//      else discard; either way the job is done (Volcano at ed72c7c8 no longer re-queues it).
//   3. Phase 2, inside jobs: for every under-request job of this queue (volcano-semantics.md
//      §4.4's underRequest[q]), a fresh heap of its Pending tasks; preempt for each task with
//      victims of the same job, committing each success; discard and stop the job at the first
//      failure.
//      Volcano once iterated every queue's under-request jobs here, overwriting their phase-1
//      heaps; a later queue's phase 1 then lost tasks or, with a separate heap, met tasks phase 2
//      had pipelined meanwhile. Current Volcano keeps phase 2 inside the queue, as here.
//   Preempting for one task:
//   a. not eligible when its preemptionPolicy is Never, or when it has a nominated node that is
//      gone, that passes the predicates, or (unless the node is UnschedulableAndUnresolvable for
//      it) that holds a lower-priority pod already terminating;
//   b. PrePredicate; candidate nodes = all nodes minus those allocate found
//      UnschedulableAndUnresolvable, filtered by PredicateForPreemptAction (plain Unschedulable
//      passes — eviction may cure it);
//   c. normal: nodes by descending score (ties in node order); per node, victims = Preemptable of
//      the filtered tasks there; skip the node unless the preemptor fits FutureIdle + victims;
//      evict victims in BuildVictimsPriorityQueue order until Allocatable, InitResreq ≤
//      FutureIdle and the full PredicateFn all pass (re-run after every eviction, so predicate
//      obstacles such as pod count are handled); pipeline there and keep the evictions, or undo
//      them and try the next node (also when the pipeline itself fails);
//   d. topology-aware (enableTopologyAwarePreemption): dry-run victim selection on candidate nodes
//      in node order until clamp(n·minCandidateNodesPercentage%, minCandidateNodesAbsolute,
//      maxCandidateNodesAbsolute) nodes have a victim set: remove victims in victim order (with
//      the plugins' simulate_remove_task) until the preemptor fits — simulate_allocatable,
//      InitResreq ≤ the simulated FutureIdle and simulate_predicate; a node where
//      simulate_predicate still fails with every victim gone is no candidate; then reprieve,
//      highest priority first, each victim the preemptor still fits without (a node left with no
//      victim is no candidate); pick the node whose highest victim priority is lowest, then
//      lowest priority sum, then fewest victims, then latest start of the highest-priority
//      victims, then node order; evict its victims and pipeline the preemptor there (a failed
//      pipeline undoes the evictions). Volcano's pickOneNodeForPreemption names PDB violations
//      as its first criterion but, at ed72c7c8, neither counts them nor reprieves violating
//      victims first (a TODO in SelectVictimsOnNode); neither does Kiln.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/actions/session_walk.h"
#include "runtime/clock_use.h"
#include "runtime/explain.h"
#include "runtime/session.h"
#include "runtime/statement.h"

namespace kiln {
namespace {

using VictimFilter = std::function<bool(const Task* victim)>;

class PreemptRun : actions::VictimRun {
 public:
  explicit PreemptRun(Session& ssn) : VictimRun(ssn, "preempt") {}

  void Run() {
    // 1. Preemptors.
    std::unordered_map<const Job*, PriorityQueue<Task*>> preemptor_tasks;
    std::unordered_map<const Queue*, std::vector<Job*>> under_request;
    actions::StarvingJobs preemptors = actions::StarvingJobsByQueue(ssn_, [&](Job* job) {
      // Volcano at ed72c7c8 leaves jobs with a network topology to gangpreempt (a TODO there:
      // volcano-sh/volcano#4374).
      if (job->HasNetworkTopology()) {
        spdlog::debug("preempt: job {} has a network topology, skipped", job->uid);
        return false;
      }
      under_request[job->queue].push_back(job);
      preemptor_tasks.insert_or_assign(job, actions::PendingTasks(ssn_, job));
      return true;
    });
    PriorityQueue<Queue*>& queue_order = preemptors.queues;

    while (!queue_order.Empty()) {
      Queue* queue = queue_order.Pop();
      // 2. Phase 1: between jobs of this queue.
      auto& jobs = preemptors.by_queue.at(queue);
      while (!jobs.Empty()) {
        Job* preemptor_job = jobs.Pop();
        Statement stmt(ssn_);
        auto& tasks = preemptor_tasks.at(preemptor_job);
        while (ssn_.JobStarving(preemptor_job) && !tasks.Empty()) {
          Task* preemptor = tasks.Pop();
          Preempt(stmt, preemptor, [preemptor, preemptor_job](const Task* v) {
            if (!PreemptableStatus(v->status)) return false;
            if (preemptor->best_effort && !v->best_effort) return false;
            if (!v->preemptable || v->job == nullptr) return false;
            return v->job->queue == preemptor_job->queue && v->job != preemptor->job;
          });
        }
        if (!ssn_.JobPipelined(preemptor_job)) {
          stmt.Discard();
          continue;
        }
        stmt.Commit();
      }

      // 3. Phase 2: inside each starving job of this queue.
      for (Job* job : under_request[queue]) {
        PriorityQueue<Task*> tasks = actions::PendingTasks(ssn_, job);
        while (!tasks.Empty()) {
          Task* preemptor = tasks.Pop();
          Statement stmt(ssn_);
          bool assigned = Preempt(stmt, preemptor, [preemptor](const Task* v) {
            if (!PreemptableStatus(v->status)) return false;
            if (preemptor->best_effort && !v->best_effort) return false;
            if (!v->preemptable) return false;
            return v->job == preemptor->job;
          });
          if (!assigned) {
            stmt.Discard();
            break;
          }
          stmt.Commit();
        }
      }
    }
  }

 private:
  // a.
  bool EligibleToPreempt(const Task* preemptor) const {
    if (preemptor->preemption_policy == PreemptionPolicy::Never) return false;
    if (preemptor->nominated_node_name.empty()) return true;
    const Node* nominated = ssn_.cluster().FindNode(preemptor->nominated_node_name);
    if (nominated == nullptr) return false;
    std::optional<FitError> fit = ssn_.PredicateFn(preemptor, nominated);
    if (!fit) return false;
    if (fit->Contains(StatusCode::UnschedulableAndUnresolvable)) return true;
    // A lower-priority pod on the nominated node is still terminating: the room this preemptor
    // asked for is on its way, so it waits instead of evicting more.
    for (const Task* p : nominated->tasks)
      if (p->priority < preemptor->priority && p->deleting) return false;
    return true;
  }

  bool Preempt(Statement& stmt, Task* preemptor, const VictimFilter& filter) {
    // a.
    if (!EligibleToPreempt(preemptor)) return false;
    ++ssn_.decisions().preemption_attempts;  // Volcano's volcano_total_preemption_attempts
    // b.
    if (ssn_.PrePredicateFn(preemptor)) return false;
    actions::PredicateResult found = PreemptCandidates(preemptor);
    if (found.nodes.empty()) return false;
    // c. / d.
    if (args_.enable_topology_aware_preemption)
      return TopologyAwarePreempt(stmt, preemptor, filter, found.nodes);
    return NormalPreempt(stmt, preemptor, filter, found.nodes);
  }

  std::vector<Task*> Preemptees(const Node* node, const VictimFilter& filter) const {
    std::vector<Task*> out;
    for (Task* t : node->tasks)
      if (filter(t)) out.push_back(t);
    return out;
  }

  // c.
  bool NormalPreempt(Statement& stmt, Task* preemptor, const VictimFilter& filter,
                     const std::vector<Node*>& nodes) {
    std::optional<std::vector<double>> scores =
        actions::PrioritizeNodes(ssn_, preemptor, nodes, pool_);
    if (!scores) return false;
    const Queue* queue = preemptor->job->queue;
    for (Node* node : actions::SortNodesByScore(nodes, *scores)) {
      std::vector<Task*> victims = ssn_.Preemptable(preemptor, Preemptees(node, filter));
      if (!actions::ValidateVictims(preemptor, node, victims)) continue;

      auto fits = [&] {
        return ssn_.Allocatable(queue, preemptor) &&
               actions::FitsFutureIdle(preemptor->init_resreq(), node) &&
               !ssn_.PredicateFn(preemptor, node).has_value();
      };
      Statement node_stmt(ssn_);
      PriorityQueue<Task*> victim_queue =
          actions::BuildVictimsPriorityQueue(ssn_, victims, preemptor);
      int evicted = 0;
      bool ok = fits();
      while (!ok && !victim_queue.Empty()) {
        Task* victim = victim_queue.Pop();
        if (Status s = node_stmt.Evict(victim, "preempt"); !s.ok()) {
          spdlog::error("preempt: evicting {} for {} failed: {}", victim->Key(), preemptor->Key(),
                        s.error().message);
          continue;
        }
        ++evicted;
        ok = fits();
      }
      if (!ok) {
        node_stmt.Discard();
        continue;
      }
      // A pipeline that fails undoes this node's evictions and the next node is tried.
      if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "preempt", preemptor);
      if (Status s = node_stmt.Pipeline(preemptor, node, evicted > 0); !s.ok()) {
        spdlog::error("preempt: pipelining {} on {} failed: {}", preemptor->Key(), node->name,
                      s.error().message);
        node_stmt.Discard();
        continue;
      }
      stmt.Merge(node_stmt);
      return true;
    }
    return false;
  }

  // d. ---- topology-aware preemption ----

  struct Candidate {
    Node* node = nullptr;
    std::vector<Task*> victims;
  };

  int NumCandidates(int num_nodes) const {
    int n = num_nodes * args_.min_candidate_nodes_percentage / 100;
    n = std::max(n, args_.min_candidate_nodes_absolute);
    n = std::min(n, args_.max_candidate_nodes_absolute);
    return std::min(n, num_nodes);
  }

  // Volcano's SelectVictimsOnNode, a dry run on one node. Volcano runs it on a clone of the node
  // and of the preemptor's cycle state; Kiln runs it on the session itself and leaves both as it
  // found them: a removal is the victim's Resreq added to the node's FutureIdle plus the
  // plugins' simulate_remove_task (predicates moves the preemptor's inter-pod affinity counts,
  // proportion and capacity their queue's allocation; the session gates the call by
  // enablePreemptable or enabledAllocatable, so with both off that state stays stale, as in
  // Volcano), a give-back is the reverse through simulate_add_task. The preemptor fits when
  // simulate_allocatable passes (the queue's allocation without the victims taken so far), its
  // InitResreq ≤ the simulated FutureIdle and simulate_predicate passes. Victims leave in victim
  // order until it fits; a node where it still does not pass simulate_predicate with all of them
  // gone is no candidate (evicting there would not help). Then each victim, highest first, is
  // given back when the preemptor still fits. A node where every victim is given back is no
  // candidate either: Volcano expects at least one victim.
  std::optional<std::vector<Task*>> SelectVictimsOnNode(Task* preemptor, Node* node,
                                                        const VictimFilter& filter) {
    std::vector<Task*> all = ssn_.Preemptable(preemptor, Preemptees(node, filter));
    if (!actions::ValidateVictims(preemptor, node, all)) return std::nullopt;
    // Volcano sorts by MoreImportantPod before building the victim heap; the push order decides
    // between victims the victim order calls equal.
    std::stable_sort(all.begin(), all.end(), [this](const Task* l, const Task* r) {
      if (l->priority != r->priority) return l->priority > r->priority;
      return StartTime(l) < StartTime(r);
    });
    const Resource base = node->FutureIdle();
    std::vector<Task*> removed;
    auto remove = [&](Task* v) {
      ssn_.SimulateRemoveTask(preemptor, v, node);
      removed.push_back(v);
    };
    auto give_back = [&](Task* v) {
      ssn_.SimulateAddTask(preemptor, v, node);
      removed.erase(std::find(removed.begin(), removed.end(), v));
    };
    auto predicate_passes = [&] { return !ssn_.SimulatePredicateFn(preemptor, node).has_value(); };
    const Queue* queue = preemptor->job->queue;
    auto fits = [&] {
      if (!ssn_.SimulateAllocatableFn(queue, preemptor)) return false;
      Resource future = base;
      for (const Task* v : removed) future.Add(v->resreq());
      return preemptor->init_resreq().LessEqual(future, DimensionDefault::Zero) && predicate_passes();
    };
    auto restore = [&] {
      while (!removed.empty()) give_back(removed.back());
    };

    PriorityQueue<Task*> victim_queue = actions::BuildVictimsPriorityQueue(ssn_, all, preemptor);
    std::vector<Task*> potential;
    while (!victim_queue.Empty()) {
      Task* v = victim_queue.Pop();
      potential.push_back(v);
      remove(v);
      if (fits()) break;
    }
    if (!predicate_passes()) {
      restore();
      return std::nullopt;
    }
    // Reprieve, highest-priority victims (removed last) first.
    std::vector<Task*> victims;
    for (auto it = potential.rbegin(); it != potential.rend(); ++it) {
      give_back(*it);
      if (!fits()) {
        remove(*it);
        victims.push_back(*it);
      }
    }
    restore();
    if (victims.empty()) return std::nullopt;
    return victims;
  }

  TimeNs StartTime(const Task* t) const {
    if (t->scheduled_at == 0) NoteClockUse();
    return t->scheduled_at != 0 ? t->scheduled_at : ssn_.now();
  }

  // pickOneNodeForPreemption: each criterion keeps the candidates with the best value; the
  // first candidate left (node order) wins.
  const Candidate* PickCandidate(const std::vector<Candidate>& candidates) const {
    std::vector<const Candidate*> left;
    for (const auto& c : candidates) left.push_back(&c);
    auto highest_priority = [](const Candidate& c) {
      int64_t p = INT64_MIN;
      for (const Task* v : c.victims) p = std::max(p, v->priority);
      return p;
    };
    std::vector<std::function<int64_t(const Candidate&)>> scores = {
        [&](const Candidate& c) { return -highest_priority(c); },
        [](const Candidate& c) {
          int64_t sum = 0;
          for (const Task* v : c.victims) sum += v->priority + int64_t{INT32_MAX} + 1;
          return -sum;
        },
        [](const Candidate& c) { return -static_cast<int64_t>(c.victims.size()); },
        [&](const Candidate& c) {
          int64_t top = highest_priority(c);
          TimeNs earliest = INT64_MAX;
          for (const Task* v : c.victims)
            if (v->priority == top) earliest = std::min(earliest, StartTime(v));
          return static_cast<int64_t>(earliest);
        },
    };
    for (const auto& score : scores) {
      if (left.size() <= 1) break;
      int64_t best = INT64_MIN;
      std::vector<const Candidate*> kept;
      for (const Candidate* c : left) {
        int64_t s = score(*c);
        if (s > best) {
          best = s;
          kept.clear();
        }
        if (s == best) kept.push_back(c);
      }
      left = std::move(kept);
    }
    return left.empty() ? nullptr : left.front();
  }

  bool TopologyAwarePreempt(Statement& stmt, Task* preemptor, const VictimFilter& filter,
                            const std::vector<Node*>& nodes) {
    const size_t want = static_cast<size_t>(NumCandidates(static_cast<int>(nodes.size())));
    std::vector<Candidate> candidates;
    // The dry runs go one node at a time: each moves the plugins' simulation state and puts it
    // back. Volcano starts at a random node; Kiln in node order, so runs are reproducible.
    for (size_t i = 0; i < nodes.size() && candidates.size() < want; ++i)
      if (auto victims = SelectVictimsOnNode(preemptor, nodes[i], filter))
        candidates.push_back(Candidate{nodes[i], std::move(*victims)});
    const Candidate* best = PickCandidate(candidates);
    if (best == nullptr) return false;

    Statement node_stmt(ssn_);
    for (Task* victim : best->victims) {
      if (Status s = node_stmt.Evict(victim, "preempt"); !s.ok()) {
        spdlog::error("preempt: evicting {} for {} failed: {}", victim->Key(), preemptor->Key(),
                      s.error().message);
        node_stmt.Discard();
        return false;
      }
    }
    // A pipeline that fails undoes the evictions: the preemptor is not placed.
    if (ExplainRecorder* r = ssn_.explain()) r->Record(ssn_, "preempt", preemptor);
    if (Status s = node_stmt.Pipeline(preemptor, best->node, true); !s.ok()) {
      spdlog::error("preempt: pipelining {} on {} failed: {}", preemptor->Key(), best->node->name,
                    s.error().message);
      node_stmt.Discard();
      return false;
    }
    stmt.Merge(node_stmt);
    return true;
  }
};

}  // namespace

const Action& PreemptAction() {
  static const RunAction<PreemptRun> action("preempt");
  return action;
}

}  // namespace kiln
