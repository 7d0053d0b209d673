#pragma once
// Invariants of a session, checked as it runs when asked to (issue #16): after every action,
// at every statement discard and at every preemption, the checker recomputes what the session
// keeps incrementally and compares it with what the actions and plugins may never do. It is a
// debugging aid for the randomized soak (`scripts/soak`) and for anyone chasing a wrong
// decision (`kiln simulate --check-invariants`); a session without it pays one null-pointer test
// per action and per statement operation.
//
// What it checks:
//   after each action
//     - every node's used, idle, releasing, pipelined, non-zero requests and fit cache equal what
//       its tasks add up to, and each task is on the node its node pointer names, once;
//     - every HyperNode's `used` sum kept as a running sum (runtime/hyper_node.h) is bit for bit
//       its nodes' used + pipelined summed afresh;
//     - no node is over its allocatable (nodes already over it when the session opened are left
//       out), and pipelined pods fit what the node will have once its releasing pods are gone;
//     - every job's status index, counters and allocated resources equal what its tasks add up to;
//     - the jobs whose pods the action bound are ready (ssn.JobReady: gang's all-or-nothing);
//     - no pod is bound twice;
//     - what the plugins report for each queue (their show_queue figures) has no negative share
//       and no negative resource;
//   at a statement's discard
//     - the session is exactly as it was before the statement's first operation (a full
//       snapshot of tasks, nodes, jobs and the plugins' queue figures is compared);
//   at each eviction and at the pipelining that follows evictions
//     - preempt and reclaim evict only preemptable pods in a status they may take (preempt:
//       Bound or Running; reclaim: Running), for a pod that may preempt (preemptionPolicy is not
//       Never); preempt takes from the preemptor's queue, reclaim from other, reclaimable ones;
//     - when the priority plugin decides preemption victims (its Preemptable handler is the last
//       one of the only tier that has any), preempt never takes a pod of a job of higher or equal
//       priority (or, inside one job, of a task of higher or equal priority).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class Session;
struct Task;

// Whether new sessions check their invariants: KILN_CHECK_INVARIANTS=1 in the environment, or
// SetInvariantChecking(true) (what `kiln simulate --check-invariants` does).
bool InvariantCheckingEnabled();
void SetInvariantChecking(bool on);

class InvariantChecker {
 public:
  // After the plugins opened: notes which nodes are already over their allocatable.
  explicit InvariantChecker(Session& ssn);

  // The action about to run (named in violations found while it runs).
  void BeginAction(std::string_view action);
  // Checks everything listed under "after each action" above.
  void AfterAction();

  // The session's state as canonical text: compared before and after a discarded statement.
  std::string Snapshot() const;
  void CompareDiscard(const std::string& before);

  // A victim is about to be evicted with `reason` (the statement's reason string).
  void OnEvict(const Task* victim, std::string_view reason);
  // `preemptor` was pipelined after `victims` were evicted for it in the same statement.
  void OnPreemption(const Task* preemptor, const std::vector<const Task*>& victims);

  const std::vector<std::string>& violations() const { return violations_; }

 private:
  void Violation(std::string what);
  void CheckNodes();
  void CheckHyperNodes();
  void CheckJobs();
  void CheckBinds();
  void CheckQueueFigures();

  Session& ssn_;
  std::string action_ = "open";
  std::vector<bool> over_at_open_;  // per node index
  size_t binds_checked_ = 0;        // decisions().binds already looked at
  bool priority_decides_preempt_ = false;
  std::vector<std::string> violations_;
};

}  // namespace kiln
