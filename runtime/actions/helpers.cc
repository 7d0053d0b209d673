#include "runtime/actions/helpers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/reason_codes.h"
#include "runtime/session.h"

namespace kiln::actions {

int NumNodesToFind(int num_all_nodes, int percentage, int min_nodes, int min_percentage) {
  if (num_all_nodes <= min_nodes || percentage >= 100) return num_all_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) {
    constexpr int kBaselinePercentage = 50;
    adaptive = std::max(kBaselinePercentage - num_all_nodes / 125, min_percentage);
  }
  int n = static_cast<int>(static_cast<int64_t>(num_all_nodes) * adaptive / 100);
  return std::max(n, min_nodes);
}

namespace {
// One dimension of Resource::LessEqual (resource.cc's LessEqualTol): request l fits r. Without
// short-circuit, so that a loop over nodes compiles to no branch per node.
inline bool FitsDimension(double l, double r) {
  return (l < r) | (std::abs(l - r) < kMinResource);
}
}  // namespace

namespace detail {
uint64_t ColumnMaskScalar(double l, const double* column, size_t count) {
  uint64_t fits = 0;
  for (size_t i = 0; i < count; ++i) {
    fits |= static_cast<uint64_t>(FitsDimension(l, column[i])) << i;
  }
  return fits;
}

#if defined(__x86_64__)
// ColumnMaskScalar two lanes at a time (SSE2, on every x86-64). A NaN fits nowhere, as in the
// scalar comparison: both compares are ordered.
uint64_t ColumnMaskSse2(double l, const double* column, size_t count) {
  const __m128d left = _mm_set1_pd(l);
  const __m128d tolerance = _mm_set1_pd(kMinResource);
  const __m128d magnitude = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffff));
  uint64_t fits = 0;
  size_t i = 0;
  for (; i + 2 <= count; i += 2) {
    const __m128d r = _mm_loadu_pd(column + i);
    const __m128d near = _mm_cmplt_pd(_mm_and_pd(_mm_sub_pd(left, r), magnitude), tolerance);
    const __m128d ok = _mm_or_pd(_mm_cmplt_pd(left, r), near);
    fits |= static_cast<uint64_t>(_mm_movemask_pd(ok)) << i;
  }
  return fits | (i < count ? ColumnMaskScalar(l, column + i, count - i) << i : 0);
}

// ColumnMaskSse2 four lanes at a time, on processors with AVX2 (WideCompare).
__attribute__((target("avx2"))) uint64_t ColumnMaskAvx2(double l, const double* column,
                                                          size_t count) {
  const __m256d left = _mm256_set1_pd(l);
  const __m256d tolerance = _mm256_set1_pd(kMinResource);
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffff));
  uint64_t fits = 0;
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d r = _mm256_loadu_pd(column + i);
    const __m256d gap = _mm256_and_pd(_mm256_sub_pd(left, r), magnitude);
    const __m256d ok = _mm256_or_pd(_mm256_cmp_pd(left, r, _CMP_LT_OQ),
                                    _mm256_cmp_pd(gap, tolerance, _CMP_LT_OQ));
    fits |= static_cast<uint64_t>(_mm256_movemask_pd(ok)) << i;
  }
  return fits | (i < count ? ColumnMaskScalar(l, column + i, count - i) << i : 0);
}

bool WideCompare() { return __builtin_cpu_supports("avx2"); }
#else
uint64_t ColumnMaskSse2(double l, const double* column, size_t count) {
  return ColumnMaskScalar(l, column, count);
}
uint64_t ColumnMaskAvx2(double l, const double* column, size_t count) {
  return ColumnMaskScalar(l, column, count);
}
bool WideCompare() { return false; }
#endif
}  // namespace detail

namespace {
std::atomic<bool> g_fused_allocate_search{true};
// The search's nodes are cold at 10k nodes (each is visited once per rotation), and one node's
// predicates and scorers take a few hundred nanoseconds: asking for the lines of the node two
// positions ahead overlaps its misses with the work on this one (about 10% of allocate at 10k
// nodes × 100k pods; the lines are the ones model.h puts first).
constexpr size_t kPrefetchAhead = 2;
// Nodes a search checks before it scores the feasible ones among them (Search's two stages): a
// window's scorer lines are 5 per node, far below the first-level cache.
constexpr size_t kScoreWindow = 16;

void PrefetchForSearch(const Node* node) {
  __builtin_prefetch(node);
  __builtin_prefetch(node->fit_future.data());
}

// The lines the idle check and the scorers read, asked for once a node fits: late in a big
// session most nodes examined are full, and fetching these for them only took bandwidth. The
// predicates of the rest of the node's window run between the request and the first read.
void PrefetchForScore(const Node* node) {
  __builtin_prefetch(&node->idle);
  __builtin_prefetch(&node->allocatable);
  __builtin_prefetch(&node->nonzero_requested);
  __builtin_prefetch(&node->used);
  __builtin_prefetch(&node->pipelined);
}

FeasibleNode::State StateOf(Session::SpeculativeScore s) {
  switch (s) {
    case Session::SpeculativeScore::Ok: return FeasibleNode::kScored;
    case Session::SpeculativeScore::Failed: return FeasibleNode::kFailed;
    case Session::SpeculativeScore::Faulted: break;
  }
  return FeasibleNode::kFaulted;
}

// The mask of the lowest `count` (≤ 64) bits.
constexpr uint64_t LowBits(size_t count) {
  return count >= 64 ? ~uint64_t{0} : (uint64_t{1} << count) - 1;
}

// FitsFutureIdle (over Node::fit_future) or LessEqual(·, Zero) against Node::idle for one
// request, read from FitColumns by node index: the same dimensions — cpu,
// memory, the request's scalars — and the same comparison, so the same answer.
class ColumnFit {
 public:
  ColumnFit(const Resource& req, const FitColumns& columns, bool future) {
    auto column = [&](ResourceId id) { return future ? columns.Future(id) : columns.Idle(id); };
    Add(kCpu, req.values[kCpu], column(kCpu));
    Add(kMemory, req.values[kMemory], column(kMemory));
    ForEachBit(req.scalar_mask(), [&](ResourceId id) { Add(id, req.values[id], column(id)); });
  }
  bool Fits(size_t index) const { return Short(index) < 0; }
  // Fits for the `count` (≤ 64) nodes at indices first, first + 1, …: bit i answers node
  // first + i. One column at a time, several nodes per compare, and no branch per node, so a
  // window's mixed answers cost no mispredicted jumps.
  uint64_t FitMask(size_t first, size_t count) const {
    uint64_t mask = LowBits(count);
    for (int d = 0; d < count_ && mask != 0; ++d)
      mask &= kWide ? detail::ColumnMaskAvx2(request_[d], column_[d] + first, count)
                    : detail::ColumnMaskSse2(request_[d], column_[d] + first, count);
    return mask;
  }
  // The first dimension that does not fit, in FitsFutureIdle's order (cpu, memory, scalars by
  // id): what it would list first as insufficient. -1 when the request fits.
  int32_t Short(size_t index) const {
    for (int d = 0; d < count_; ++d) {
      if (!FitsDimension(request_[d], column_[d][index])) return id_[d];
    }
    return -1;
  }

 private:
  void Add(ResourceId id, double request, const double* column) {
    id_[count_] = id;
    request_[count_] = request;
    column_[count_] = column;
    ++count_;
  }
  static inline const bool kWide = detail::WideCompare();
  std::array<double, kMaxResources> request_{};
  std::array<const double*, kMaxResources> column_{};
  std::array<int32_t, kMaxResources> id_{};
  int count_ = 0;
};

// Calls f(bit) for every set bit of `mask`, from the lowest.
template <typename F>
void ForEachSetBit(uint64_t mask, F&& f) {
  for (; mask != 0; mask &= mask - 1) f(static_cast<size_t>(std::countr_zero(mask)));
}

// The first group BestIdleThenFutureIdleNode scores: the feasible nodes whose Idle fits when
// there are any, else the others (which all fit FutureIdle: the search checked it).
bool FirstGroupIsIdle(const PredicateResult& found) {
  for (const FeasibleNode& f : found.feasible)
    if (f.idle_fit) return true;
  return false;
}
}  // namespace

FitColumns::FitColumns(const Cluster& cluster)
    : list_(cluster.nodes().data()),
      nodes_(cluster.nodes().size()),
      dims_(ResourceRegistry::Count()),
      future_(nodes_ * static_cast<size_t>(dims_)),
      idle_(nodes_ * static_cast<size_t>(dims_)) {
  for (const Node* n : cluster.nodes()) Refresh(n);
}

void FitColumns::Refresh(const Node* n) {
  if (n->index < 0 || static_cast<size_t>(n->index) >= nodes_ || list_[n->index] != n) return;
  const auto i = static_cast<size_t>(n->index);
  for (int id = 0; id < dims_; ++id) {
    future_[id * nodes_ + i] = n->fit_future[id];
    idle_[id * nodes_ + i] = n->idle.values[id];
  }
}

void FitColumns::Note(size_t examined, size_t skipped) {
  if (examined == 0) return;
  const double share = static_cast<double>(skipped) / static_cast<double>(examined);
  skipped_share_ += (share - skipped_share_) / 8;
}

bool FitColumns::Answers(std::span<Node* const> nodes, const Resource& req) const {
  return nodes.data() == list_ && nodes.size() == nodes_ &&
         (dims_ >= kMaxResources || (req.scalar_mask() >> dims_) == 0);
}

void SetFusedAllocateSearch(bool on) { g_fused_allocate_search.store(on); }
bool FusedAllocateSearch() { return g_fused_allocate_search.load(std::memory_order_relaxed); }

PredicateResult PredicateHelper::PredicateNodes(const Task* t, std::span<Node* const> nodes,
                                                const NodePredicate& fn, bool enable_error_cache,
                                                const Resource* future_idle_request) {
  PredicateResult out;
  auto check = [&fn](const Task* task, const Node* node, NodeRejection& rejection) {
    rejection.error = fn(task, node);
    return !rejection.error.has_value();
  };
  Search<false>(nullptr, t, nodes, enable_error_cache, future_idle_request, check, out);
  return out;
}

void PredicateHelper::SearchForAllocate(const Session& ssn, const Task* t,
                                        std::span<Node* const> nodes, bool enable_error_cache,
                                        bool score, PredicateResult& out) {
  // Session::PredicateForAllocateAction without the FitError of a feasible node: every status
  // the predicates answer fails allocate.
  auto check = [&ssn](const Task* task, const Node* node, NodeRejection& rejection) {
    std::optional<PluginStatus> st = ssn.PredicateStatus(task, node);
    if (!st) return true;
    FitError e;
    e.task_uid = task->uid;
    e.node_name = node->name;
    e.statuses.push_back(std::move(*st));
    rejection.error = std::move(e);
    return false;
  };
  if (!score || !FusedAllocateSearch() || ssn.uses_io_pool()) {
    Search<false>(&ssn, t, nodes, enable_error_cache, &t->init_resreq(), check, out);
    return;
  }
  // A fault anywhere in the pass (a predicate's, reported as usual) may disable a plugin midway,
  // after some nodes were scored with it: then the speculative scores are not what NodeOrderFn
  // answers afterwards, and the plain path scores again.
  const uint64_t faults_before = ssn.fault_count();
  Search<true>(&ssn, t, nodes, enable_error_cache, &t->init_resreq(), check, out);
  if (out.chosen != nullptr) {
    out.scored = true;  // nothing to score: the pass chose
    return;
  }
  if (out.nodes.size() < 2) {
    out.scored = out.nodes.size() == 1;  // one node is taken as is: nothing to score
    return;
  }
  // Score the rest of the first group: its nodes that were not sure to be kept when their block
  // ran, or all of it when no node fits Idle (the search only scores idle-fitting nodes).
  const bool idle = FirstGroupIsIdle(out);
  // Workers read the list through this reference: a thread_local named in the lambda would be
  // each worker's own (empty) one.
  thread_local std::vector<size_t> todo_storage;
  std::vector<size_t>& todo = todo_storage;
  todo.clear();
  size_t group_size = 0;
  for (size_t i = 0; i < out.feasible.size(); ++i) {
    if (out.feasible[i].idle_fit != idle) continue;
    ++group_size;
    if (out.feasible[i].state == FeasibleNode::kUnscored) todo.push_back(i);
  }
  if (group_size >= 2 && !todo.empty()) {
    pool_->ParallelFor(todo.size(), [&](size_t k) {
      FeasibleNode& f = out.feasible[todo[k]];
      f.state = StateOf(ssn.NodeOrderSpeculative(t, out.nodes[todo[k]], &f.score, &f.called));
    });
  }
  bool ok = ssn.fault_count() == faults_before;
  for (const FeasibleNode& f : out.feasible)
    if (f.idle_fit == idle && f.state == FeasibleNode::kFaulted) ok = false;
  out.scored = ok;
}

template <bool kFused, typename Check>
void PredicateHelper::Search(const Session* ssn, const Task* t, std::span<Node* const> nodes,
                             bool enable_error_cache, const Resource* future_idle_request,
                             const Check& check, PredicateResult& out) {
  out.nodes.clear();
  out.feasible.clear();
  out.errors = FitErrors();
  out.scored = false;
  out.chosen = nullptr;
  const size_t n = nodes.size();
  if (n == 0) {
    out.errors.SetTotalNodes(0);
    return;
  }
  const size_t want = static_cast<size_t>(NumNodesToFind(static_cast<int>(n)));
  out.nodes.reserve(std::min(want, n));
  if constexpr (kFused) out.feasible.reserve(std::min(want, n));
  size_t found = 0;  // out.nodes.size()

  const bool use_cache = enable_error_cache && !t->role.empty();
  const RoleCache* cached = nullptr;
  if (use_cache) {
    group_key_.assign(t->job_uid);
    group_key_ += '/';
    group_key_ += t->role;
    if (auto it = error_cache_.find(group_key_); it != error_cache_.end()) cached = &it->second;
  }

  // Each node's verdict lands in its own slot; the slots are then read in rotated order, so the
  // feasible set is the same whichever worker finished first. The buffers outlive the call: a
  // search over 10k nodes would otherwise map and fault in megabytes per task. Late in a big
  // session most nodes examined are full, so that case costs one byte written and read per node
  // and nothing else: a full node is not listed anywhere, and which resource it lacks is worked
  // out only for the rejections that are kept (reported or cached) — nothing changes the nodes
  // while the search runs.
  enum Verdict : uint8_t { kFeasible, kNoFit, kPredicate, kCached };
  // A rejection other than "does not fit": a cached one, or the predicates' FitError (at `error`
  // in `errors`), at its position in the rotated order.
  struct Noted {
    size_t pos;
    const NodeRejection* cached;
    int32_t error;
  };
  struct Scratch {
    // Per slot of a block: the verdict, and what only some verdicts need.
    std::vector<Verdict> verdict;
    std::vector<const NodeRejection*> cache_hit;  // kCached
    std::vector<NodeRejection> predicate;         // kPredicate
    std::vector<FeasibleNode> fused;              // kFeasible, kFused only
    std::vector<Noted> noted;
    // Rotated positions of out.nodes (the blocks only: the single pass walks the rejections just
    // when it kept no node).
    std::vector<size_t> feasible_pos;
    // The single pass's rejections for the role's cache: rotated positions of the examined nodes
    // that did not fit and were not in it yet.
    std::vector<size_t> fresh_pos;
    std::vector<std::optional<FitError>> errors;
    std::vector<Node*> examined;
    std::vector<NodeRejection> all;
  };
  thread_local Scratch scratch;
  std::vector<Verdict>& verdict = scratch.verdict;
  std::vector<Noted>& noted = scratch.noted;
  std::vector<size_t>& feasible_pos = scratch.feasible_pos;
  std::vector<size_t>& fresh_pos = scratch.fresh_pos;
  std::vector<std::optional<FitError>>& errors = scratch.errors;
  noted.clear();
  feasible_pos.clear();
  fresh_pos.clear();
  errors.clear();
  const size_t start = *rotation_ % n;
  // The node at rotated position k (< n): start + k < 2n, so one subtraction instead of a
  // division per node.
  auto rotated_at = [&](size_t k) {
    size_t i = start + k;
    return i >= n ? i - n : i;
  };
  auto rotated = [&](size_t k) { return nodes[rotated_at(k)]; };
  // Lines worth asking for ahead of the predicates and the scorers: none when no plugin reads
  // the node there (the plugin-free session).
  const bool prefetch_node = ssn == nullptr || ssn->HasHandlers(ExtensionPoint::Predicate);
  const bool prefetch_score = ssn == nullptr || ssn->HasHandlers(ExtensionPoint::NodeOrder);
  // Over the node list the columns were built from (position = Node::index), the columns
  // answer the resource checks: a node that fails them, or that the role's cache rejects, is
  // never read. Late in a big session most nodes examined are full. When no plugin reads the
  // nodes (plugin-free) the columns always pay: not even a feasible node is read. Otherwise they
  // are used only while they pay (FitColumns::Pay): when most nodes examined fit, the predicates
  // read those nodes anyway and the columns are extra lines. The idle fit reads Node::idle when
  // the scorers do (its line was requested with theirs). Like the fused scores, off with
  // SetFusedAllocateSearch(false): the plain path the tests compare with reads the nodes.
  const bool columns_answer = columns_ != nullptr && FusedAllocateSearch() &&
                              future_idle_request == &t->init_resreq() &&
                              columns_->Answers(nodes, *future_idle_request);
  std::optional<ColumnFit> future_fit, idle_fit;
  if (columns_answer && ((!prefetch_node && !prefetch_score) || columns_->Pay())) {
    future_fit.emplace(*future_idle_request, *columns_, /*future=*/true);
    if (!prefetch_score) idle_fit.emplace(*future_idle_request, *columns_, /*future=*/false);
  }
  size_t skipped = 0;  // examined nodes that did not fit or were cached (FitColumns::Note)
  size_t processed = 0;
  // When no plugin reads a node here (no predicate, no scorer: the plugin-free session) and the
  // columns answer both fits, a node's whole verdict is two column reads: one pass on this
  // thread, in rotated order, straight into `out`, is what the blocks below would give, without
  // their verdict slots, their three more walks over them and the workers' hand-offs. A kept
  // node that fits Idle is scored as the pass would score it: NodeOrderSpeculative without a
  // handler answers 0.
  const bool single_pass = kFused && future_fit && idle_fit && !prefetch_node && !prefetch_score;
  if (single_pass) {
    // When no plugin picks among the nodes either, BestNodeOfSearch's answer is the lowest
    // index among the kept nodes that fit Idle, else among all of them: the pass finds it from
    // the masks (indices rise within a window) and lists no FeasibleNode.
    const bool choose = !ssn->HasHandlers(ExtensionPoint::BatchNodeOrder) &&
                        !ssn->HasHandlers(ExtensionPoint::BestNode);
    size_t lowest_idle = n, lowest = n;
    // Written in place, at most `want` of them: the pass pushes nothing.
    out.nodes.resize(std::min(want, n));
    Node** kept_nodes = out.nodes.data();
    while (processed < n && found < want) {
      // A window of up to 64 nodes at consecutive indices (it ends where the rotation wraps),
      // answered as masks: the role's cached rejections, then the fit of the others.
      const size_t first = rotated_at(processed);
      const size_t count = std::min({size_t{64}, n - processed, n - first});
      const uint64_t hits = cached ? cached->HitMask(first, count) : 0;
      uint64_t feasible = future_fit->FitMask(first, count) & ~hits;
      // The window ends after the node that completes the sample.
      size_t consumed = count;
      const size_t needed = want - found;
      if (static_cast<size_t>(std::popcount(feasible)) >= needed) {
        uint64_t last = feasible;
        for (size_t k = 1; k < needed; ++k) last &= last - 1;
        consumed = static_cast<size_t>(std::countr_zero(last)) + 1;
        feasible &= LowBits(consumed);
      }
      const size_t kept = static_cast<size_t>(std::popcount(feasible));
      skipped += consumed - kept;
      ForEachSetBit(hits & LowBits(consumed), [&](size_t i) {
        noted.push_back({processed + i, cached->Find(static_cast<int64_t>(first + i)), -1});
      });
      if (use_cache)
        ForEachSetBit(LowBits(consumed) & ~(feasible | hits),
                      [&](size_t i) { fresh_pos.push_back(processed + i); });
      if (kept > 0) {
        const uint64_t fits_idle = idle_fit->FitMask(first, count) & feasible;
        ForEachSetBit(feasible, [&](size_t i) { *kept_nodes++ = nodes[first + i]; });
        if (choose) {
          if (fits_idle != 0)
            lowest_idle = std::min(lowest_idle, first + std::countr_zero(fits_idle));
          lowest = std::min(lowest, first + std::countr_zero(feasible));
        } else {
          ForEachSetBit(feasible, [&](size_t i) {
            // Filled in place: copying one built on the stack read it back 16 bytes at a time
            // right after its one-byte fields were stored there, and stalled on store forwarding.
            FeasibleNode& f = out.feasible.emplace_back();
            f.index = static_cast<int64_t>(first + i);
            f.idle_fit = (fits_idle >> i) & 1;
            if (f.idle_fit) f.state = FeasibleNode::kScored;
          });
        }
      }
      found += kept;
      processed += consumed;
    }
    out.nodes.resize(found);
    if (choose && found > 0) out.chosen = nodes[lowest_idle < n ? lowest_idle : lowest];
  }
  // Evaluating a little past the target wastes little and keeps every worker busy.
  const size_t min_block = static_cast<size_t>(pool_->size()) * 32;
  while (!single_pass && processed < n && found < want) {
    // A feasible node at a position below `needed` is kept whatever the nodes before it answer:
    // only those are scored in the pass (the others may be examined past the target).
    const size_t needed = want - found;
    size_t block = std::min(n - processed, std::max(needed, min_block));
    // Slots are reused across blocks and tasks: each is written before it is read.
    auto grow = [block](auto& slots) {
      if (slots.size() < block) slots.resize(block);
    };
    grow(verdict);
    grow(scratch.cache_hit);
    grow(scratch.predicate);
    if constexpr (kFused) grow(scratch.fused);
    const NodeRejection** cache_hit = scratch.cache_hit.data();
    NodeRejection* predicate = scratch.predicate.data();
    FeasibleNode* fused = scratch.fused.data();
    // Two stages per window of a range: the checks of every node in the window, then the Idle
    // fit and the scores of its feasible ones. The scorers' lines, requested once a node passes
    // the resource check, then arrive while the window's other nodes are checked instead of
    // stalling the scorer that reads them right after the predicates.
    pool_->ParallelForChunks(block, [&](size_t begin, size_t end) {
      for (size_t window = begin; window < end; window += kScoreWindow) {
        const size_t window_end = std::min(end, window + kScoreWindow);
        if (future_fit) {
          // The window's cache and resource checks from the columns, then the predicates of the
          // nodes left, whose lines are requested in between.
          for (size_t i = window; i < window_end; ++i) {
            const size_t index = rotated_at(processed + i);
            if (cached) {
              if (const NodeRejection* hit = cached->Find(static_cast<int64_t>(index))) {
                verdict[i] = kCached;
                cache_hit[i] = hit;
                continue;
              }
            }
            if (!future_fit->Fits(index)) {
              verdict[i] = kNoFit;
              continue;
            }
            verdict[i] = kFeasible;
            if (prefetch_node) __builtin_prefetch(nodes[index]);
          }
          for (size_t i = window; i < window_end; ++i) {
            if (verdict[i] != kFeasible) continue;
            const Node* node = rotated(processed + i);
            assert(FitsFutureIdle(*future_idle_request, node) && "FitColumns are stale");
            if (prefetch_score) PrefetchForScore(node);
            if constexpr (kFused) ssn->PrefetchCachedScores(t, node);
            verdict[i] = check(t, node, predicate[i]) ? kFeasible : kPredicate;
          }
        } else {
          for (size_t i = window; i < window_end; ++i) {
            const Node* node = rotated(processed + i);
            if (processed + i + kPrefetchAhead < n)
              PrefetchForSearch(rotated(processed + i + kPrefetchAhead));
            if (cached) {
              if (const NodeRejection* hit = cached->Find(node->index)) {
                verdict[i] = kCached;
                cache_hit[i] = hit;
                continue;
              }
            }
            if (future_idle_request && !FitsFutureIdle(*future_idle_request, node)) {
              verdict[i] = kNoFit;
              continue;
            }
            if (prefetch_score) PrefetchForScore(node);
            if constexpr (kFused) ssn->PrefetchCachedScores(t, node);
            // `check` sets the error whenever it rejects, so a stale one is never read.
            verdict[i] = check(t, node, predicate[i]) ? kFeasible : kPredicate;
          }
        }
        if constexpr (kFused) {
          for (size_t i = window; i < window_end; ++i) {
            if (verdict[i] != kFeasible) continue;
            FeasibleNode& f = fused[i];
            f = FeasibleNode{};
            const Node* node = rotated(processed + i);
            if (idle_fit) {
              f.index = static_cast<int64_t>(rotated_at(processed + i));
              f.idle_fit = idle_fit->Fits(static_cast<size_t>(f.index));
            } else {
              f.index = node->index;
              f.idle_fit = t->init_resreq().LessEqual(node->idle, DimensionDefault::Zero);
            }
            if (f.idle_fit && i < needed)
              f.state = StateOf(ssn->NodeOrderSpeculative(t, node, &f.score, &f.called));
          }
        }
      }
    });
    size_t consumed = block;
    for (size_t i = 0; i < block; ++i) {
      switch (verdict[i]) {
        case kNoFit:
          ++skipped;
          continue;
        case kCached:
          ++skipped;
          noted.push_back({processed + i, cache_hit[i], -1});
          continue;
        case kPredicate:
          noted.push_back({processed + i, nullptr, static_cast<int32_t>(errors.size())});
          errors.push_back(std::move(predicate[i].error));
          continue;
        case kFeasible:
          break;
      }
      if constexpr (kFused) out.feasible.push_back(fused[i]);
      out.nodes.push_back(rotated(processed + i));
      feasible_pos.push_back(processed + i);
      if (++found == want) {
        consumed = i + 1;
        break;
      }
    }
    processed += consumed;
  }
  *rotation_ = (start + processed) % n;
  if (columns_answer) columns_->Note(processed, skipped);

  // Walks the rejected nodes in examination order: every examined position that is not a
  // feasible node, with its noted rejection if it has one (else it did not fit). `f` gets the
  // rotated position, so that what the columns answer is found without reading the node.
  auto for_each_rejected = [&](auto&& f) {
    size_t next_feasible = 0, next_noted = 0;
    for (size_t k = 0; k < processed; ++k) {
      if (next_feasible < feasible_pos.size() && feasible_pos[next_feasible] == k) {
        ++next_feasible;
        continue;
      }
      const Noted* note = nullptr;
      if (next_noted < noted.size() && noted[next_noted].pos == k) note = &noted[next_noted++];
      f(k, note);
    }
  };
  // A fresh rejection, for the node at rotated position k, as the cache and the report keep it.
  // Which resource is short comes from the columns when they answered the fit (the same values
  // in the same order as FitsFutureIdle reads from the node, which is then left unread).
  auto fresh = [&](size_t k, const Noted* note, bool copy) {
    NodeRejection rejection;
    if (note != nullptr) {
      std::optional<FitError>& e = errors[static_cast<size_t>(note->error)];
      rejection.error = copy ? e : std::move(e);
    } else if (future_fit) {
      const int32_t shortest = future_fit->Short(rotated_at(k));
      rejection.insufficient = shortest < 0 ? kCpu : shortest;
    } else {
      ResourceIdList insufficient;
      FitsFutureIdle(*future_idle_request, rotated(k), &insufficient);
      rejection.insufficient = insufficient.empty() ? kCpu : insufficient.ids[0];
    }
    return rejection;
  };
  // The rejections are materialised only when they are reported: every examined node rejected
  // the task.
  if (out.nodes.empty()) {
    std::vector<Node*>& examined = scratch.examined;
    std::vector<NodeRejection>& all = scratch.all;
    examined.clear();
    all.clear();
    for_each_rejected([&](size_t k, const Noted* note) {
      examined.push_back(rotated(k));
      if (note != nullptr && note->cached != nullptr) {
        all.push_back(*note->cached);
        if (all.back().error) all.back().error->task_uid = t->uid;
      } else {
        all.push_back(fresh(k, note, /*copy=*/use_cache));  // the cache keeps the original
      }
    });
    out.errors = BuildFitErrors(t, examined, all, static_cast<int>(n));
  }
  // New rejections join the role's cache (an index already there keeps its first rejection).
  if (use_cache) {
    RoleCache* cache = nullptr;
    auto keep = [&](size_t k, const Noted* note) {
      if (note != nullptr && note->cached != nullptr) return;
      if (cache == nullptr) cache = &error_cache_[group_key_];
      // Over the columns' list a node's position is its index: the node stays unread.
      const int64_t index = columns_answer ? static_cast<int64_t>(rotated_at(k)) : rotated(k)->index;
      int32_t* at = nullptr;
      if (index >= 0) {
        if (static_cast<size_t>(index) >= cache->at.size())
          cache->at.resize(std::max(static_cast<size_t>(index) + 1, cache->at.size() * 2), -1);
        at = &cache->at[index];
      } else {
        at = &cache->at_other.try_emplace(index, -1).first->second;
      }
      if (*at >= 0) return;
      *at = static_cast<int32_t>(cache->rejections.size());
      cache->rejections.push_back(fresh(k, note, /*copy=*/false));
    };
    // The single pass listed them as it went (none has a note): no walk over every position.
    if (single_pass) {
      for (size_t k : fresh_pos) keep(k, nullptr);
    } else {
      for_each_rejected(keep);
    }
  }
}

FitErrors BuildFitErrors(const Task* t, std::span<Node* const> examined,
                         std::span<NodeRejection> rejections, int total_nodes) {
  FitErrors errors;
  errors.SetTotalNodes(total_nodes);
  bool compact = true;
  for (const NodeRejection& r : rejections)
    if (r.error) compact = false;
  if (compact && !rejections.empty()) {
    // Same text as FitErrors::Message: reasons by count descending, then by text.
    std::array<int, kMaxResources> counts{};
    for (const NodeRejection& r : rejections) ++counts[r.insufficient];
    std::vector<std::pair<int, std::string>> parts;
    for (int id = 0; id < kMaxResources; ++id)
      if (counts[id] > 0)
        parts.emplace_back(
            counts[id],
            fmt::format("Insufficient {}", ResourceNames::Name(static_cast<ResourceId>(id))));
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::string message = fmt::format("0/{} nodes are available: ", total_nodes);
    for (size_t i = 0; i < parts.size(); ++i)
      message += fmt::format("{}{} {}", i ? ", " : "", parts[i].first, parts[i].second);
    message += ".";
    errors.SetError(CodedReason("InsufficientResource", message));
    return errors;
  }
  for (size_t i = 0; i < rejections.size(); ++i) {
    NodeRejection& r = rejections[i];
    if (r.error) {
      errors.Add(std::move(*r.error));
    } else {
      errors.Add(
          FitError(t->uid, examined[i]->name, StatusCode::Unschedulable,
                   CodedReason("InsufficientResource",
                               fmt::format("Insufficient {}", ResourceNames::Name(static_cast<
                                                                  ResourceId>(r.insufficient))))));
    }
  }
  return errors;
}

std::optional<std::vector<double>> PrioritizeNodes(const Session& ssn, const Task* t,
                                                   std::span<Node* const> nodes, ThreadPool& pool) {
  std::vector<double> scores(nodes.size(), 0.0);
  pool.ParallelFor(nodes.size(), [&](size_t i) {
    Result<double> s = ssn.NodeOrderFn(t, nodes[i]);
    if (s.ok()) {
      scores[i] = *s;
    } else {
      spdlog::debug("node order for task {} on node {} failed: {}", t->Key(), nodes[i]->name,
                    s.error().message);
    }
  });
  std::vector<double> batch;
  Status st = ssn.BatchNodeOrderFn(t, nodes, batch);
  if (!st.ok()) {
    spdlog::debug("batch node order for task {} failed: {}", t->Key(), st.error().message);
    return std::nullopt;
  }
  for (size_t i = 0; i < batch.size() && i < scores.size(); ++i) scores[i] += batch[i];
  return scores;
}

Node* SelectBestNode(std::span<Node* const> nodes, std::span<const double> scores) {
  Node* best = nullptr;
  double max_score = -1.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (scores[i] > max_score ||
        (best != nullptr && scores[i] == max_score && nodes[i]->index < best->index)) {
      max_score = scores[i];
      best = nodes[i];
    }
  }
  return best;
}

Node* BestScoredNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                     ThreadPool& pool) {
  // Nobody scores and nobody picks: every score is 0, and SelectBestNode's tie-break (the lowest
  // node index) decides alone.
  if (!ssn.HasHandlers(ExtensionPoint::NodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BatchNodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BestNode) && !nodes.empty()) {
    return *std::min_element(nodes.begin(), nodes.end(),
                             [](const Node* a, const Node* b) { return a->index < b->index; });
  }
  auto scores = PrioritizeNodes(ssn, t, nodes, pool);
  if (!scores) return nullptr;
  if (Node* n = ssn.BestNodeFn(t, nodes, *scores)) return n;
  return SelectBestNode(nodes, *scores);
}

Node* BestIdleThenFutureIdleNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                                 ThreadPool& pool) {
  std::vector<Node*> idle_fit;
  std::vector<Node*> future_fit;
  idle_fit.reserve(nodes.size());
  for (Node* n : nodes) {
    if (t->init_resreq().LessEqual(n->idle, DimensionDefault::Zero)) {
      idle_fit.push_back(n);
    } else if (FitsFutureIdle(t->init_resreq(), n)) {
      future_fit.push_back(n);
    }
  }
  for (const auto* group : {&idle_fit, &future_fit}) {
    Node* best = nullptr;
    if (group->size() == 1) {
      best = group->front();
    } else if (group->size() > 1) {
      best = BestScoredNode(ssn, t, *group, pool);
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

namespace {
// BestScoredNode over nodes whose NodeOrderFn sums are already in `scores` (fused search).
Node* BestOfScored(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                   std::vector<double>& scores, uint64_t called, size_t failed) {
  if (!ssn.HasHandlers(ExtensionPoint::NodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BatchNodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BestNode)) {
    return *std::min_element(nodes.begin(), nodes.end(),
                             [](const Node* a, const Node* b) { return a->index < b->index; });
  }
  ssn.MarkNodeOrderCalled(called);
  if (failed > 0) spdlog::debug("node order for task {} failed on {} node(s)", t->Key(), failed);
  thread_local std::vector<double> batch;
  batch.clear();
  Status st = ssn.BatchNodeOrderFn(t, nodes, batch);
  if (!st.ok()) {
    spdlog::debug("batch node order for task {} failed: {}", t->Key(), st.error().message);
    return nullptr;
  }
  for (size_t i = 0; i < batch.size() && i < scores.size(); ++i) scores[i] += batch[i];
  if (Node* n = ssn.BestNodeFn(t, nodes, scores)) return n;
  return SelectBestNode(nodes, scores);
}
}  // namespace

Node* BestNodeOfSearch(const Session& ssn, const Task* t, const PredicateResult& found,
                       ThreadPool& pool) {
  if (found.chosen != nullptr) return found.chosen;
  if (!found.scored || found.feasible.size() != found.nodes.size())
    return BestIdleThenFutureIdleNode(ssn, t, found.nodes, pool);
  if (!ssn.HasHandlers(ExtensionPoint::NodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BatchNodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BestNode)) {
    // Nobody scores (BestOfScored's first case): the lowest node index of the first non-empty
    // group, the first of equals, read from the search's notes instead of the nodes.
    for (bool idle : {true, false}) {
      const FeasibleNode* best = nullptr;
      Node* best_node = nullptr;
      for (size_t i = 0; i < found.nodes.size(); ++i) {
        const FeasibleNode& f = found.feasible[i];
        if (f.idle_fit != idle || (best != nullptr && f.index >= best->index)) continue;
        best = &f;
        best_node = found.nodes[i];
      }
      if (best_node != nullptr) return best_node;
    }
    return nullptr;
  }
  thread_local std::vector<Node*> group;
  thread_local std::vector<double> scores;
  bool first = true;
  for (bool idle : {true, false}) {
    group.clear();
    scores.clear();
    size_t failed = 0;
    uint64_t called = 0;
    for (size_t i = 0; i < found.nodes.size(); ++i) {
      const FeasibleNode& f = found.feasible[i];
      if (f.idle_fit != idle) continue;
      group.push_back(found.nodes[i]);
      scores.push_back(f.score);
      called |= f.called;
      if (f.state == FeasibleNode::kFailed) ++failed;
    }
    if (group.empty()) continue;
    Node* best = nullptr;
    if (group.size() == 1) {
      best = group.front();
    } else if (first) {
      best = BestOfScored(ssn, t, group, scores, called, failed);
    } else {
      // The idle group was scored and selected nothing: the FutureIdle group is scored now, as
      // BestIdleThenFutureIdleNode does (its nodes were never scored speculatively).
      best = BestScoredNode(ssn, t, group, pool);
    }
    first = false;
    if (best != nullptr) return best;
  }
  return nullptr;
}

std::vector<Node*> SortNodesByScore(std::span<Node* const> nodes, std::span<const double> scores) {
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return nodes[a]->index < nodes[b]->index;
  });
  std::vector<Node*> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back(nodes[i]);
  return out;
}

bool ValidateVictims(const Task* preemptor, const Node* node, std::span<Task* const> victims) {
  Resource future_idle = node->FutureIdle();
  for (const Task* v : victims) future_idle.Add(v->resreq());
  return preemptor->init_resreq().LessEqual(future_idle, DimensionDefault::Zero);
}

PriorityQueue<Task*> BuildVictimsPriorityQueue(const Session& ssn, std::span<Task* const> victims,
                                               const Task* preemptor) {
  PriorityQueue<Task*> queue([&ssn, preemptor](Task* const& l, Task* const& r) {
    if (l->job == r->job) return !ssn.TaskLess(l, r);
    if (l->job == nullptr) return true;
    if (r->job == nullptr) return false;
    const Job* pj = preemptor->job;
    if (pj == nullptr || l->job->queue == r->job->queue) {
      if (int c = ssn.JobCompareFn(l->job, r->job); c != 0) return c > 0;
      return !ssn.TaskLess(l, r);
    }
    return ssn.VictimQueueOrderFn(l->job->queue, r->job->queue, pj->queue) < 0;
  });
  for (Task* v : victims) queue.Push(v);
  return queue;
}

void UnPipelineTask(Session& ssn, Task* t) {
  ssn.UnplaceTask(t);
  Status st = ssn.UpdateTaskStatus(t, TaskStatus::Pending);
  if (!st.ok()) spdlog::error("un-pipelining task {}: {}", t->Key(), st.error().message);
  ssn.FireDeallocate(t);
  t->node_name.clear();
}

bool FitsFutureIdle(const Resource& req, const Node* node, ResourceIdList* insufficient) {
  // Node::FutureIdle = Idle + Releasing − Pipelined, where Resource::Sub leaves the scalars alone
  // when the left side has none (Volcano's Sub on a nil scalar map): node->fit_future holds it.
  auto future = [&](ResourceId id) { return node->fit_future[id]; };
  bool ok = true;
  auto check = [&](ResourceId id) {
    if (FitsDimension(req.values[id], future(id))) return;
    ok = false;
    if (insufficient) insufficient->Push(id);
  };
  check(kCpu);
  if (!ok && !insufficient) return false;
  check(kMemory);
  if (!ok && !insufficient) return false;
  ForEachBit(req.scalar_mask(), [&](ResourceId id) {
    if (ok || insufficient) check(id);
  });
  return ok;
}

std::span<Node* const> NodesWithoutUnresolvable(const Session& ssn, const Task* t,
                                                std::vector<Node*>& storage) {
  const std::vector<Node*>& all = ssn.cluster().nodes();
  const FitErrors* recorded = nullptr;
  if (t->job != nullptr) {
    auto it = t->job->nodes_fit_errors.find(t->index);
    if (it != t->job->nodes_fit_errors.end()) recorded = &it->second;
  }
  if (recorded == nullptr) return all;
  // One name lookup per recorded rejection, not one per (task, node).
  std::vector<int64_t> unresolvable;
  for (const FitError& e : recorded->errors()) {
    if (!e.Contains(StatusCode::UnschedulableAndUnresolvable)) continue;
    const Node* n = ssn.cluster().FindNode(e.node_name);
    if (n != nullptr && n->index >= 0 && static_cast<size_t>(n->index) < all.size())
      unresolvable.push_back(n->index);
  }
  if (unresolvable.empty()) return all;
  std::vector<char> drop(all.size(), 0);
  for (int64_t i : unresolvable) drop[i] = 1;
  storage.clear();
  storage.reserve(all.size());
  for (Node* n : all)
    if (n->index < 0 || static_cast<size_t>(n->index) >= drop.size() || !drop[n->index])
      storage.push_back(n);
  return storage;
}

FitErrors SameErrorOnAllNodes(const Task* t, std::span<Node* const> nodes,
                              const PluginStatus& status) {
  FitErrors errors;
  errors.SetTotalNodes(static_cast<int>(nodes.size()));
  for (const Node* n : nodes) {
    FitError e;
    e.task_uid = t->uid;
    e.node_name = n->name;
    e.statuses.push_back(status);
    errors.Add(std::move(e));
  }
  return errors;
}

std::unordered_set<const SubJob*> SubJobsRequiredByMinSubGroups(const Session& ssn,
                                                                const Job* job) {
  std::unordered_map<const SubGroupPolicySpec*, int64_t> counted;
  std::vector<SubJob*> unready;
  for (const auto& sub : job->sub_jobs) {
    if (ssn.SubJobReady(job, sub.get())) ++counted[sub->policy];
    else unready.push_back(sub.get());
  }
  std::stable_sort(unready.begin(), unready.end(),
                   [&ssn](SubJob* l, SubJob* r) { return ssn.SubJobLess(l, r); });
  std::unordered_set<const SubJob*> required;
  for (SubJob* sub : unready) {
    const int64_t min = sub->IsDefault() ? 0 : sub->policy->min_sub_groups.value_or(0);
    if (counted[sub->policy] < min) {
      required.insert(sub);
      ++counted[sub->policy];
    }
  }
  return required;
}

}  // namespace kiln::actions
