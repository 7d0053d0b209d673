#pragma once
// Building blocks the actions share (Volcano's pkg/scheduler/util and actions/utils): how many
// feasible nodes to look for, predicates over nodes on the thread pool with the per-(job, role)
// error cache, node scoring and selection, and the victim checks of preempt and reclaim.
//
// Determinism: wherever Volcano is random (which feasible nodes a parallel search returns, which
// of several best-scoring nodes is picked), Kiln decides by node order — the order in which the
// cluster lists its nodes (Node::index). Results never depend on the number of threads.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
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

// What allocate's fused search (PredicateHelper::SearchForAllocate) learnt of a feasible node
// besides its feasibility, in the same parallel pass.
struct FeasibleNode {
  enum State : uint8_t {
    kUnscored = 0,  // not scored (yet)
    kScored,        // `score` is NodeOrderFn's sum
    kFailed,        // NodeOrderFn answered an error: the node scores 0 (and it is logged)
    kFaulted,       // a handler faulted: the fused scores cannot stand in for NodeOrderFn
  };
  double score = 0;
  uint64_t called = 0;   // Session::NodeOrderSpeculative's handler bits
  int64_t index = -1;    // the node's Node::index, so that choosing by node order reads no node
  bool idle_fit = false;  // InitResreq ≤ Idle (else only FutureIdle fits)
  State state = kUnscored;
};

namespace detail {
// The resource check of many nodes at once, over one FitColumns column: bit i is set when the
// request `l` fits column[i] (i < count ≤ 64), compared as LessEqual with its tolerance: l < r,
// or the two within kMinResource. One comparison in three forms, held equal by a test: one
// node at a time, two (SSE2, on every x86-64) and four (AVX2, only where WideCompare()).
uint64_t ColumnMaskScalar(double l, const double* column, size_t count);
uint64_t ColumnMaskSse2(double l, const double* column, size_t count);
uint64_t ColumnMaskAvx2(double l, const double* column, size_t count);
bool WideCompare();
}  // namespace detail

struct PredicateResult {
  std::vector<Node*> nodes;  // feasible nodes, in the order they were examined
  // Why every node rejected the task — filled only when `nodes` is empty, the one case the
  // actions record it (a search that found nodes drops its rejections, so they are never built).
  FitErrors errors;
  // SearchForAllocate only: per feasible node (same positions as `nodes`).
  std::vector<FeasibleNode> feasible;
  // SearchForAllocate only: whether `feasible` holds the node-order scores of the group
  // BestIdleThenFutureIdleNode would score (see BestNodeOfSearch).
  bool scored = false;
  // SearchForAllocate's single pass when no plugin scores or picks nodes: the node
  // BestNodeOfSearch answers (the lowest index among the feasible nodes that fit Idle, else among
  // all), found as the pass went; `feasible` is then left empty.
  Node* chosen = nullptr;
};

// Whether allocate scores nodes in its predicate pass and answers the resource checks from
// FitColumns (default on). Process-wide; tests turn it off to compare these fast paths with the
// plain one.
void SetFusedAllocateSearch(bool on);
bool FusedAllocateSearch();

// One node's rejection, compact while the search runs: a failed resource check is just the
// first insufficient dimension; only the predicates' own answers carry a FitError.
struct NodeRejection {
  int32_t insufficient = -1;  // resource id, when the resource check failed
  std::optional<FitError> error;
};

// What allocate's search compares for every (task, node) pair, copied out of the nodes into one
// array per resource dimension, indexed by position in the cluster's node list (= Node::index):
// Node::fit_future (FitsFutureIdle's side) and Node::idle's values (the idle fit of a feasible
// node). At 10k nodes a node the search visits is cold, and late in a big session most of those
// it visits are full: two doubles read from dense arrays answer them without touching the node.
// The owner keeps the copy exact: Refresh(node) after every change it makes to a node (allocate:
// each placement, and the nodes of each statement it commits or discards); nothing else changes
// nodes while an action runs.
class FitColumns {
 public:
  // Covers cluster.nodes() and the resource ids interned by now.
  explicit FitColumns(const Cluster& cluster);
  void Refresh(const Node* n);

  // Whether a search over `nodes` with request `req` can read the columns: `nodes` is the list
  // they were built from, and every dimension of `req` has a column.
  bool Answers(std::span<Node* const> nodes, const Resource& req) const;
  const double* Future(ResourceId id) const { return future_.data() + id * nodes_; }
  const double* Idle(ResourceId id) const { return idle_.data() + id * nodes_; }

  // Whether the columns pay off for the next search: they save reading a node only when it is
  // skipped (it does not fit, or the role's cache rejects it); a node the predicates and scorers
  // read anyway costs its column lines and a second pass on top. Judged from the share of
  // skipped nodes in the searches so far (Noted after each one): at 3k nodes under binpack most
  // nodes examined fit, and the columns made allocate's search ~35% slower there.
  bool Pay() const { return skipped_share_ >= kPayingShare; }
  void Note(size_t examined, size_t skipped);

 private:
  static constexpr double kPayingShare = 0.5;
  double skipped_share_ = 0;  // per search, averaged with a decay of 1/8
  const Node* const* list_ = nullptr;  // the cluster's node list
  size_t nodes_ = 0;
  int dims_ = 0;                        // ids [0, dims_) have a column
  std::vector<double> future_, idle_;  // node i's value of id at [id * nodes_ + i]
};

// Volcano's PredicateHelper. One per action run (allocate makes one per job attempt, as Volcano
// does); it remembers, per (job, role), which nodes rejected a task of that role, so the role's
// later tasks skip those nodes without calling the predicates again.
class PredicateHelper {
 public:
  // `rotation` is Volcano's lastProcessedNodeIndex: where the next search starts, so that large
  // clusters share the work of being examined. Shared by the helpers of one action run.
  // `columns` (optional) answers SearchForAllocate's resource checks over the nodes it covers
  // when they pay (FitColumns::Pay); each search reports to them how many nodes it skipped.
  explicit PredicateHelper(size_t* rotation, ThreadPool& pool = ThreadPool::Default(),
                           FitColumns* columns = nullptr)
      : rotation_(rotation), pool_(&pool), columns_(columns) {}

  // Checks `nodes` from the rotation point, in parallel, until NumNodesToFind feasible nodes are
  // found (all nodes when there are ≤ 100). A node is feasible when `future_idle_request` (if
  // given) fits its FutureIdle — allocate's resource check, "Insufficient <resource>" otherwise —
  // and `fn` accepts it. The feasible set is the first ones in the rotated order, whatever the
  // thread timing. `enable_error_cache` applies only to tasks with a role (tasks without one
  // would all share one group; Volcano issue #3527).
  PredicateResult PredicateNodes(const Task* t, std::span<Node* const> nodes,
                                 const NodePredicate& fn, bool enable_error_cache,
                                 const Resource* future_idle_request = nullptr);

  // allocate's PredicateNodes, with its fixed predicate — InitResreq ≤ FutureIdle, then
  // Session::PredicateForAllocateAction — called directly (no std::function, no FitError for a
  // feasible node) into `out`, whose buffers are reused from task to task. Same feasible set,
  // rotation, cache and errors as PredicateNodes. With `score` (and FusedAllocateSearch(), and no
  // plugin on the I/O pool) the same parallel pass also checks InitResreq ≤ Idle and scores
  // (NodeOrderSpeculative) each feasible node that fits Idle and is sure to be kept; after the pass
  // the rest of the group BestIdleThenFutureIdleNode will score is scored in one more parallel
  // loop, and out.scored says whether these scores may stand in for NodeOrderFn's.
  void SearchForAllocate(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                         bool enable_error_cache, bool score, PredicateResult& out);

 private:
  // The rejections of one (job, role): per node index, the position of its rejection (-1: none).
  struct RoleCache {
    std::vector<int32_t> at;
    std::unordered_map<int64_t, int32_t> at_other;  // negative indices (nodes outside a cluster)
    std::vector<NodeRejection> rejections;
    const NodeRejection* Find(int64_t index) const {
      int32_t k = -1;
      if (index >= 0) {
        if (static_cast<size_t>(index) < at.size()) k = at[index];
      } else if (auto it = at_other.find(index); it != at_other.end()) {
        k = it->second;
      }
      return k >= 0 ? &rejections[k] : nullptr;
    }
    // Bit i: whether node index first + i (≥ 0) has a rejection, for count ≤ 64 nodes.
    uint64_t HitMask(size_t first, size_t count) const {
      uint64_t mask = 0;
      const size_t end = std::min(first + count, at.size());
      for (size_t i = first; i < end; ++i)
        mask |= static_cast<uint64_t>(at[i] >= 0) << (i - first);
      return mask;
    }
  };
  // The search both entry points share. `check(t, node, rejection)` → feasible; kFused adds the
  // idle-fit check and the speculative scores.
  template <bool kFused, typename Check>
  void Search(const Session* ssn, const Task* t, std::span<Node* const> nodes,
              bool enable_error_cache, const Resource* future_idle_request, const Check& check,
              PredicateResult& out);

  size_t* rotation_;
  ThreadPool* pool_;
  FitColumns* columns_;
  std::unordered_map<std::string, RoleCache> error_cache_;
  std::string group_key_;  // reused: "<job uid>/<role>"
};

// allocate's 3e over a SearchForAllocate result: BestIdleThenFutureIdleNode(found.nodes), using
// the fused scores when found.scored (same group, same sums, same BatchNodeOrder / BestNode /
// tie-break), else calling it as is.
Node* BestNodeOfSearch(const Session& ssn, const Task* t, const PredicateResult& found,
                       ThreadPool& pool);

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

// The sub-jobs of `job` its minSubGroups still needs, as Volcano's organizeJobWorksheet (allocate)
// and organizeEvictionWorksheet (gangpreempt, gangreclaim) pick them: the ready sub-jobs count
// toward their subGroupPolicy entry's minSubGroups; then, in sub-job order, each sub-job that is
// not ready is required while its entry still lacks sub-groups. The default sub-job never is.
// Both worksheets put these first and the rest after, each part in sub-job order.
std::unordered_set<const SubJob*> SubJobsRequiredByMinSubGroups(const Session& ssn,
                                                                const Job* job);

}  // namespace actions
}  // namespace kiln
