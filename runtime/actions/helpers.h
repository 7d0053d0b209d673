#pragma once
// Building blocks the actions share (Volcano's pkg/scheduler/util and actions/utils): how many
// feasible nodes to look for, predicates over nodes on the thread pool with the per-(job, role)
// error cache, node scoring and selection, and the victim checks of preempt and reclaim.
//
// Determinism: wherever Volcano is random (which feasible nodes a parallel search returns, which
// of several best-scoring nodes is picked), Kiln decides by node order — the order in which the
// cluster lists its nodes (Node::index). Results never depend on the number of threads.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/actions/priority_queue.h"
#include "runtime/fit_error.h"
#include "runtime/model.h"
#include "runtime/thread_pool.h"

namespace kiln {

class Session;

namespace actions {

// Volcano's CalculateNumOfFeasibleNodesToFind with the scheduler's default flags: every node up
// to `min_nodes` (minimum-feasible-nodes, 100); beyond that `percentage` percent of them
// (--percentage-nodes-to-find; 0 = adaptive max(min_percentage, 50 − n/125)), never fewer than
// `min_nodes`.
int NumNodesToFind(int num_all_nodes, int percentage = 0, int min_nodes = 100,
                   int min_percentage = 5);

// A per-(task, node) check: nullopt = the task may go there.
using NodePredicate = std::function<std::optional<FitError>(const Task*, const Node*)>;

struct PredicateResult {
  std::vector<Node*> nodes;  // feasible nodes, in the order they were examined
  // Why every node rejected the task — filled only when `nodes` is empty, the one case the
  // actions record it (a search that found nodes drops its rejections, so they are never built).
  FitErrors errors;
};

// One node's rejection, compact while the search runs: a failed resource check is just the
// first insufficient dimension; only the predicates' own answers carry a FitError.
struct NodeRejection {
  int32_t insufficient = -1;  // resource id, when the resource check failed
  std::optional<FitError> error;
};

// Volcano's PredicateHelper. One per action run (allocate makes one per job attempt, as Volcano
// does); it remembers, per (job, role), which nodes rejected a task of that role, so the role's
// later tasks skip those nodes without calling the predicates again.
class PredicateHelper {
 public:
  // `rotation` is Volcano's lastProcessedNodeIndex: where the next search starts, so that large
  // clusters share the work of being examined. Shared by the helpers of one action run.
  explicit PredicateHelper(size_t* rotation, ThreadPool& pool = ThreadPool::Default())
      : rotation_(rotation), pool_(&pool) {}

  // Checks `nodes` from the rotation point, in parallel, until NumNodesToFind feasible nodes are
  // found (all nodes when there are ≤ 100). A node is feasible when `future_idle_request` (if
  // given) fits its FutureIdle — allocate's resource check, "Insufficient <resource>" otherwise —
  // and `fn` accepts it. The feasible set is the first ones in the rotated order, whatever the
  // thread timing. `enable_error_cache` applies only to tasks with a role (tasks without one
  // would all share one group; Volcano issue #3527).
  PredicateResult PredicateNodes(const Task* t, std::span<Node* const> nodes,
                                 const NodePredicate& fn, bool enable_error_cache,
                                 const Resource* future_idle_request = nullptr);

 private:
  size_t* rotation_;
  ThreadPool* pool_;
  std::unordered_map<std::string, std::unordered_map<int64_t, NodeRejection>> error_cache_;
};

// The FitErrors of a search in which every examined node rejected the task. When all of them
// failed only the resource check, the Kubernetes-style message is built from the counts alone
// (identical to FitErrors::Message over per-node errors) and no per-node error is kept: nothing
// reads per-node errors but the UnschedulableAndUnresolvable filter, which such nodes never match.
FitErrors BuildFitErrors(const Task* t, std::span<Node* const> examined,
                         std::span<NodeRejection> rejections, int total_nodes);

// Per node (same positions as `nodes`): Σ NodeOrderFn + Σ BatchNodeOrderFn. A node whose
// NodeOrderFn fails scores 0 from it (Volcano logs and skips it); a failing BatchNodeOrderFn
// yields nullopt — Volcano then has no scores and selects no node.
std::optional<std::vector<double>> PrioritizeNodes(const Session& ssn, const Task* t,
                                                   std::span<Node* const> nodes,
                                                   ThreadPool& pool = ThreadPool::Default());

// The node with the highest score, ties broken by node order. Like Volcano's SelectBestNode the
// running maximum starts at −1, so a node scoring −1 or less is never chosen (nullptr when all
// do).
Node* SelectBestNode(std::span<Node* const> nodes, std::span<const double> scores);

// Volcano's PrioritizeNodes → (BestNodeFn ∨ SelectBestNode) for one group of candidates.
Node* BestScoredNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                     ThreadPool& pool = ThreadPool::Default());

// allocate's choice among feasible nodes (Volcano's prioritizeNodes): the nodes where the task's
// InitResreq fits Idle, else those where it fits FutureIdle; one node is taken as is, several are
// scored (BestScoredNode). nullptr when neither group has a node or scoring failed.
Node* BestIdleThenFutureIdleNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                                 ThreadPool& pool);

// Nodes by descending score, equal scores in node order (Volcano's SortNodes).
std::vector<Node*> SortNodesByScore(std::span<Node* const> nodes, std::span<const double> scores);

// Whether the preemptor fits the node's future idle plus everything the victims hold (an empty
// victim list is valid: an earlier eviction may already have made room).
bool ValidateVictims(const Task* preemptor, const Node* node, std::span<Task* const> victims);

// Volcano's BuildVictimsPriorityQueue: pops the task to evict first.
//  * same job: reverse task order (the task that would be scheduled last goes first);
//  * a victim whose job is gone goes first;
//  * preemptor without job, or both victims' jobs in one queue: the job that orders later
//    (JobCompareFn > 0) goes first, ties by reverse task order;
//  * different queues: VictimQueueOrderFn(lq, rq, preemptor's queue) < 0 goes first.
PriorityQueue<Task*> BuildVictimsPriorityQueue(const Session& ssn, std::span<Task* const> victims,
                                               const Task* preemptor);

// Statement::UnPipeline without a statement (backfill takes BestEffort tasks back out of the
// pipeline before placing them): → Pending, off its node, DeallocateFunc, no node name.
void UnPipelineTask(Session& ssn, Task* t);

// req.LessEqual(node->FutureIdle(), Zero) without building the FutureIdle vector: only the
// dimensions the request has are read, so the per-(task, node) check touches a few values instead
// of three whole resource vectors. Same arithmetic, same order, same result. Fills `insufficient`
// like LessEqualWithResourcesName.
bool FitsFutureIdle(const Resource& req, const Node* node, ResourceIdList* insufficient = nullptr);

// The session's nodes minus those an earlier action found UnschedulableAndUnresolvable for t
// (Volcano's FilterOutUnschedulableAndUnresolvableNodesForTask), in node order. Returns the
// session's own node list when nothing is dropped (no copy per preemptor); otherwise the nodes
// kept are written to `storage`.
std::span<Node* const> NodesWithoutUnresolvable(const Session& ssn, const Task* t,
                                                std::vector<Node*>& storage);

// Every node rejects the task for the same reason (PrePredicate failures).
FitErrors SameErrorOnAllNodes(const Task* t, std::span<Node* const> nodes,
                              const PluginStatus& status);

}  // namespace actions
}  // namespace kiln
