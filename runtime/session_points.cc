// The per-extension-point dispatchers (volcano-semantics.md §2.1–2.3): each point's public
// method calls the combinator its table row names (session_dispatch.h) and applies the default
// Volcano applies when no plugin answers. Also the explain variants, which ask each plugin alone.

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "runtime/hyper_node.h"
#include "runtime/session.h"
#include "runtime/session_dispatch.h"
#include "runtime/text_util.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Ordering points

namespace {
int CompareTime(TimeNs l, TimeNs r) { return l < r ? -1 : (l > r ? 1 : 0); }
int CompareStr(std::string_view l, std::string_view r) {
  int c = l.compare(r);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// helpers.CompareTask's pod-name index: the number after the last '-' when the name has at
// least three '-'-separated parts.
std::optional<int64_t> PodNameIndex(std::string_view name) {
  size_t dashes = std::count(name.begin(), name.end(), '-');
  if (dashes < 2) return std::nullopt;
  return ParseDigits(name.substr(name.rfind('-') + 1), 18);
}
}  // namespace

int Session::JobCompareFn(const Job* l, const Job* r) const {
  return CombineFirstNonZero<ExtensionPoint::JobOrder>(l, r);
}

// The order points' fallbacks are comparisons; each implementation below is the one the table
// names for its point.
static_assert(FallbackOf(ExtensionPoint::JobOrder) == Fallback::CreationThenUid);
static_assert(FallbackOf(ExtensionPoint::QueueOrder) == Fallback::CreationThenName);
static_assert(FallbackOf(ExtensionPoint::VictimQueueOrder) == Fallback::InverseQueueOrder);
static_assert(FallbackOf(ExtensionPoint::TaskOrder) == Fallback::CompareTask);
static_assert(FallbackOf(ExtensionPoint::NodeOrder) == Fallback::Zero &&
              FallbackOf(ExtensionPoint::BatchNodeOrder) == Fallback::Zero);
static_assert(FallbackOf(ExtensionPoint::BestNode) == Fallback::NoNode);
static_assert(FallbackOf(ExtensionPoint::JobValid) == Fallback::Pass);

int Session::JobOrderFn(const Job* l, const Job* r) const {
  if (int v = JobCompareFn(l, r)) return v;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->uid, r->uid);
}

int Session::QueueCompareFn(const Queue* l, const Queue* r) const {
  return CombineFirstNonZero<ExtensionPoint::QueueOrder>(l, r);
}

int Session::VictimQueueCompareFn(const Queue* l, const Queue* r, const Queue* preemptor) const {
  return CombineFirstNonZero<ExtensionPoint::VictimQueueOrder>(l, r, preemptor);
}

int Session::QueueOrderFn(const Queue* l, const Queue* r) const {
  if (int v = QueueCompareFn(l, r)) return v;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->name, r->name);
}

int Session::VictimQueueOrderFn(const Queue* l, const Queue* r, const Queue* preemptor) const {
  if (int v = VictimQueueCompareFn(l, r, preemptor)) return v;
  // Volcano's default is `!QueueOrderFn(l, r)`: l is evicted first unless it orders first.
  return QueueOrderFn(l, r) < 0 ? 1 : -1;
}

int Session::TaskCompareFn(const Task* l, const Task* r) const {
  return CombineFirstNonZero<ExtensionPoint::TaskOrder>(l, r);
}

int Session::TaskOrderFn(const Task* l, const Task* r) const {
  if (int v = TaskCompareFn(l, r)) return v;
  auto li = PodNameIndex(l->name);
  auto ri = PodNameIndex(r->name);
  if (li && ri && *li != *ri) return *li < *ri ? -1 : 1;
  if (int c = CompareTime(l->creation_time, r->creation_time)) return c;
  return CompareStr(l->uid, r->uid);
}

// ---------------------------------------------------------------------------------------------
// Predicates and scoring

std::optional<PluginStatus> Session::PrePredicateFn(const Task* t) const {
  return CombineFirstError<ExtensionPoint::PrePredicate>(t);
}

std::optional<FitError> Session::PredicateFn(const Task* t, const Node* n) const {
  auto st = CombineFirstError<ExtensionPoint::Predicate>(t, n);
  if (!st) return std::nullopt;
  FitError e;
  e.task_uid = t->uid;
  e.node_name = n->name;
  e.statuses.push_back(std::move(*st));
  return e;
}

void Session::SimulateRemoveTask(const Task* preemptor, const Task* victim, const Node* n) const {
  CombineCallAll<ExtensionPoint::SimulateRemoveTask>(preemptor, victim, n);
}

void Session::SimulateAddTask(const Task* preemptor, const Task* victim, const Node* n) const {
  CombineCallAll<ExtensionPoint::SimulateAddTask>(preemptor, victim, n);
}

std::optional<FitError> Session::SimulatePredicateFn(const Task* t, const Node* n) const {
  auto st = CombineFirstError<ExtensionPoint::SimulatePredicate>(t, n);
  if (!st) return std::nullopt;
  FitError e;
  e.task_uid = t->uid;
  e.node_name = n->name;
  e.statuses.push_back(std::move(*st));
  return e;
}

std::optional<FitError> Session::PredicateForAllocateAction(const Task* t, const Node* n) const {
  auto e = PredicateFn(t, n);
  if (e && e->FailsAllocate()) return e;
  return std::nullopt;
}

std::optional<FitError> Session::PredicateForPreemptAction(const Task* t, const Node* n) const {
  auto e = PredicateFn(t, n);
  if (e && e->FailsPreempt()) return e;
  return std::nullopt;
}

std::optional<PluginStatus> Session::PredicateStatus(const Task* t, const Node* n) const {
  return CombineFirstError<ExtensionPoint::Predicate>(t, n);
}

// `cache`'s entry for (t, n) (a registration's own, or the sum's): a hit sets *score; otherwise
// `fill` is the entry to store the answer in once every handler it stands for answered without
// a fault or an error (those are never cached, so the next call raises them again exactly as
// without the cache), or null when the pair is not cached. Both scoring paths use it, so they
// answer alike.
Session::ScoreProbe Session::CachedScore(ScoreCache* cache, const Task* t, const Node* n,
                                         double* score) const {
  if (cache == nullptr) return {};
  const uint32_t epoch = ScoreCacheEpoch();
  if (epoch == 0) return {};
  ScoreCache::Entry* e = cache->Find(t, n);
  const uint64_t tag = ScoreCache::Tag(epoch, n->version);
  const bool hit = e != nullptr && e->Get(tag, score);
  CountScoreCacheLookup(hit);
  return {hit ? nullptr : e, hit, tag};
}

size_t Session::UsableScoreSumRun(const std::vector<Registration>& hs) const {
  const size_t run = score_sum_run_;
  for (size_t k = 0; k < run; ++k)
    if (plugin_disabled(hs[k].slot)) return 0;
  return run;
}

// The handlers are called in registration order and summed from 0. The sum cache stands for
// the first `run` of them: a hit replaces their calls (and marks them called), a miss calls them
// and stores their sum as soon as the last of them answered.
Session::SpeculativeScore Session::NodeOrderSpeculative(const Task* t, const Node* n,
                                                        double* score,
                                                        uint64_t* called) const {
  static_assert(CombineOf(ExtensionPoint::NodeOrder) == Combine::Sum);
  // Same calls and arithmetic as NodeOrderFn; only the bookkeeping differs (see session.h).
  const auto& hs = Handlers<ExtensionPoint::NodeOrder>();
  if (hs.empty()) {
    *score = 0;
    return SpeculativeScore::Ok;
  }
  double total = 0;
  size_t k = 0;
  const size_t run = UsableScoreSumRun(hs);
  ScoreProbe sum;
  if (run != 0) {
    *called |= run == 64 ? ~uint64_t{0} : (uint64_t{1} << run) - 1;
    sum = CachedScore(score_sum_cache_.get(), t, n, &total);
    if (sum.hit) k = run;
  }
  // Set up on the first handler actually called: when every score is cached, the thread's call
  // record is neither saved nor restored.
  std::optional<CallScope> scope;
  for (; k < hs.size(); ++k) {
    const Registration& r = hs[k];
    double s = 0;
    if (plugin_disabled(r.slot)) continue;
    if (k >= 64) return SpeculativeScore::Faulted;  // not accountable in *called
    *called |= uint64_t{1} << k;
    ScoreProbe cached = CachedScore(r.score_cache, t, n, &s);
    if (cached.hit) {
      total += s;
      continue;
    }
    if (!scope) scope.emplace(this);
    scope->Enter(r.slot, ExtensionPoint::NodeOrder, /*mark_called=*/false);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &s);
    if (scope->faulted_silently()) return SpeculativeScore::Faulted;
    if (err != 0) {
      *score = 0;
      return SpeculativeScore::Failed;
    }
    if (cached.fill != nullptr) cached.fill->Put(cached.tag, s);
    total += s;
    if (k + 1 == run && sum.fill != nullptr) sum.fill->Put(sum.tag, total);
  }
  *score = total;
  return SpeculativeScore::Ok;
}

void Session::PrefetchCachedScores(const Task* t, const Node* n) const {
  if (score_sum_cache_ != nullptr) score_sum_cache_->Prefetch(t, n);
  for (const Registration& r : Handlers<ExtensionPoint::NodeOrder>())
    if (r.score_cache != nullptr) r.score_cache->Prefetch(t, n);
}

void Session::MarkNodeOrderCalled(uint64_t called) const {
  const auto& hs = Handlers<ExtensionPoint::NodeOrder>();
  for (size_t k = 0; k < hs.size() && k < 64; ++k)
    if ((called >> k) & 1u) MarkCalled(hs[k].slot, ExtensionPoint::NodeOrder);
}

Result<double> Session::NodeOrderFn(const Task* t, const Node* n) const {
  static_assert(CombineOf(ExtensionPoint::NodeOrder) == Combine::Sum);
  const auto& hs = Handlers<ExtensionPoint::NodeOrder>();
  double total = 0;
  size_t k = 0;
  const size_t run = UsableScoreSumRun(hs);
  ScoreProbe sum;
  if (run != 0) {
    sum = CachedScore(score_sum_cache_.get(), t, n, &total);
    if (sum.hit) {
      for (; k < run; ++k) MarkCalled(hs[k].slot, ExtensionPoint::NodeOrder);
    }
  }
  CallScope scope(this);
  for (; k < hs.size(); ++k) {
    const Registration& r = hs[k];
    double score = 0;
    if (plugin_disabled(r.slot)) continue;
    ScoreProbe cached = CachedScore(r.score_cache, t, n, &score);
    if (cached.hit) {
      MarkCalled(r.slot, ExtensionPoint::NodeOrder);
      total += score;
      continue;
    }
    scope.Enter(r.slot, ExtensionPoint::NodeOrder);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &score);
    if (scope.faulted()) {
      if (k < run) sum.fill = nullptr;  // the sum misses this handler's score
      continue;
    }
    if (err != 0)
      return Error{fmt::format("plugin {}: node_order failed for task {} on node {}",
                               plugins_[r.slot].name, t->uid, n->name),
                   {}};
    if (cached.fill != nullptr) cached.fill->Put(cached.tag, score);
    total += score;
    if (k + 1 == run && sum.fill != nullptr) sum.fill->Put(sum.tag, total);
  }
  return total;
}

Status Session::BatchNodeOrderFn(const Task* t, std::span<Node* const> nodes,
                                 std::vector<double>& scores) const {
  static_assert(CombineOf(ExtensionPoint::BatchNodeOrder) == Combine::SumPerNode);
  scores.resize(nodes.size(), 0.0);
  const auto& hs = Handlers<ExtensionPoint::BatchNodeOrder>();
  if (hs.empty()) return Status::Ok();
  // Reused across calls: one allocation per task adds up over 100k tasks.
  thread_local std::vector<double> part;
  part.resize(nodes.size());
  for (const auto& r : hs) {
    std::fill(part.begin(), part.end(), 0.0);
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::BatchNodeOrder);
    int32_t err = Fn<ExtensionPoint::BatchNodeOrder>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), part.data());
    if (scope.faulted()) continue;
    if (err != 0)
      return Error{fmt::format("plugin {}: batch_node_order failed for task {}",
                               plugins_[r.slot].name, t->uid),
                   {}};
    for (size_t k = 0; k < nodes.size(); ++k) scores[k] += part[k];
  }
  return Status::Ok();
}

Node* Session::BestNodeFn(const Task* t, std::span<Node* const> nodes,
                          std::span<const double> scores) const {
  static_assert(CombineOf(ExtensionPoint::BestNode) == Combine::FirstNonNull);
  for (const auto& r : Handlers<ExtensionPoint::BestNode>()) {
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::BestNode);
    const Node* best = Fn<ExtensionPoint::BestNode>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), scores.data());
    if (scope.faulted()) continue;
    if (best != nullptr) return const_cast<Node*>(best);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Network topology

Status Session::HyperNodeOrderFn(const SubJob* sub, std::span<HyperNode* const> hns,
                                 std::vector<double>& scores) const {
  static_assert(CombineOf(ExtensionPoint::HyperNodeOrder) == Combine::SumPerNode);
  scores.resize(hns.size(), 0.0);
  std::vector<double> part(hns.size());
  for (const auto& r : Handlers<ExtensionPoint::HyperNodeOrder>()) {
    std::fill(part.begin(), part.end(), 0.0);
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::HyperNodeOrder);
    int32_t err = Fn<ExtensionPoint::HyperNodeOrder>(r.fn)(
        r.ctx, sub, const_cast<const HyperNode* const*>(hns.data()), hns.size(), part.data());
    if (scope.faulted()) continue;
    if (err != 0)
      return Error{fmt::format("plugin {}: hyper_node_order failed for sub-job {}",
                               plugins_[r.slot].name, sub->uid),
                   {}};
    for (size_t k = 0; k < hns.size(); ++k) scores[k] += part[k];
  }
  return Status::Ok();
}

template <ExtensionPoint P, typename Owner>
std::optional<std::vector<HyperNode*>> Session::CombineFirstDecides(
    const Owner* j, std::span<HyperNode* const> candidates) const {
  static_assert(CombineOf(P) == Combine::FirstDecides && FallbackOf(P) == Fallback::SearchRootOnly);
  for (const auto& r : Handlers<P>()) {
    if (plugin_disabled(r.slot)) continue;
    std::vector<uint8_t> selected(candidates.size(), 0);
    CallScope scope(this, r.slot, P);
    Fn<P>(r.fn)(r.ctx, j, const_cast<const HyperNode* const*>(candidates.data()),
                candidates.size(), selected.data());
    if (scope.faulted()) continue;
    std::vector<HyperNode*> kept;
    for (size_t k = 0; k < candidates.size(); ++k)
      if (selected[k]) kept.push_back(candidates[k]);
    return kept;
  }
  return std::nullopt;
}

std::optional<std::vector<HyperNode*>> Session::HyperNodeGradientForJobFn(
    const Job* j, std::span<HyperNode* const> candidates) const {
  return CombineFirstDecides<ExtensionPoint::HyperNodeGradientForJob>(j, candidates);
}

std::optional<std::vector<HyperNode*>> Session::HyperNodeGradientForSubJobFn(
    const SubJob* s, std::span<HyperNode* const> candidates) const {
  return CombineFirstDecides<ExtensionPoint::HyperNodeGradientForSubJob>(s, candidates);
}

// ---------------------------------------------------------------------------------------------
// Sub-jobs

bool Session::SubJobReady(const Job* j, const SubJob* s) const {
  if (!j->HasSubGroupPolicy()) return JobReady(j);
  return CombineBool<ExtensionPoint::SubJobReady>(s);
}

bool Session::SubJobPipelined(const Job* j, const SubJob* s) const {
  if (!j->HasSubGroupPolicy()) return JobPipelined(j);
  return CombineVote<ExtensionPoint::SubJobPipelined>(s);
}

int Session::SubJobCompareFn(const SubJob* l, const SubJob* r) const {
  return CombineFirstNonZero<ExtensionPoint::SubJobOrder>(l, r);
}

static_assert(FallbackOf(ExtensionPoint::SubJobOrder) == Fallback::MatchIndexThenUid);
int Session::SubJobOrderFn(const SubJob* l, const SubJob* r) const {
  if (int v = SubJobCompareFn(l, r)) return v;
  if (l->match_index != r->match_index) return l->match_index < r->match_index ? -1 : 1;
  return CompareStr(l->uid, r->uid);
}

// ---------------------------------------------------------------------------------------------
// Victims

std::vector<Task*> Session::Preemptable(const Task* preemptor,
                                        std::span<Task* const> preemptees) const {
  return CombineVictimIntersect<ExtensionPoint::Preemptable>(preemptor, preemptees);
}

std::vector<Task*> Session::Reclaimable(const Task* reclaimer,
                                        std::span<Task* const> reclaimees) const {
  return CombineVictimIntersect<ExtensionPoint::Reclaimable>(reclaimer, reclaimees);
}

std::vector<Task*> Session::UnifiedEvictable(const Job* job,
                                             std::span<Task* const> candidates) const {
  return CombineVictimIntersect<ExtensionPoint::UnifiedEvictable>(job, candidates);
}

std::vector<Task*> Session::VictimTasks(std::span<Task* const> tasks) const {
  return CombineTierUnion<ExtensionPoint::VictimTasks>(tasks);
}

// ---------------------------------------------------------------------------------------------
// Queue and job gates

bool Session::Overused(const Queue* q) const { return CombineBool<ExtensionPoint::Overused>(q); }

bool Session::Allocatable(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::Allocatable>(q, t);
}

bool Session::SimulateAllocatableFn(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::SimulateAllocatable>(q, t);
}

bool Session::Preemptive(const Queue* q, const Task* t) const {
  return CombineBool<ExtensionPoint::Preemptive>(q, t);
}

bool Session::JobReady(const Job* j) const { return CombineBool<ExtensionPoint::JobReady>(j); }

bool Session::JobPipelined(const Job* j) const {
  return CombineVote<ExtensionPoint::JobPipelined>(j);
}

bool Session::JobEnqueueable(const Job* j) const {
  return CombineVote<ExtensionPoint::JobEnqueueable>(j);
}

void Session::JobEnqueued(const Job* j) { CombineCallAll<ExtensionPoint::JobEnqueued>(j); }

bool Session::JobStarving(const Job* j) const {
  return CombineBool<ExtensionPoint::JobStarving>(j);
}

std::optional<ValidateResult> Session::JobValid(const Job* j) const {
  static_assert(CombineOf(ExtensionPoint::JobValid) == Combine::FirstInvalid);
  for (const auto& r : Handlers<ExtensionPoint::JobValid>()) {
    ValidateResult vr;
    KStatusOut out{nullptr, &vr};
    if (plugin_disabled(r.slot)) continue;
    CallScope scope(this, r.slot, ExtensionPoint::JobValid);
    bool pass = Fn<ExtensionPoint::JobValid>(r.fn)(r.ctx, j, &out);
    if (scope.faulted() || pass) continue;
    vr.pass = false;
    vr.plugin = plugins_[r.slot].name;
    return vr;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Explain: each plugin's answer on its own (runtime/explain.h). The scheduling path never calls
// these; they run the same handlers with the same fault handling as the combinators above.

std::vector<PluginStatus> Session::PredicateEach(const Task* t, const Node* n) const {
  std::vector<PluginStatus> out;
  for (const auto& r : Handlers<ExtensionPoint::Predicate>()) {
    PluginStatus st;
    KStatusOut sink{&st, nullptr};
    CallScope scope(this, r.slot, ExtensionPoint::Predicate);
    int32_t code = Fn<ExtensionPoint::Predicate>(r.fn)(r.ctx, t, n, &sink);
    st.plugin = plugins_[r.slot].name;
    if (scope.faulted()) {
      st.code = StatusCode::Error;
      st.reasons = {CodedReason("PluginFailed", fmt::format("plugin {} failed", st.plugin))};
    } else {
      st.code = code >= 0 && code <= 5 ? static_cast<StatusCode>(code) : StatusCode::Error;
      if (st.code == StatusCode::Success) st.reasons.clear();
    }
    out.push_back(std::move(st));
  }
  return out;
}

std::vector<std::pair<std::string, double>> Session::NodeOrderEach(const Task* t, const Node* n,
                                                                   std::string* error) const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& r : Handlers<ExtensionPoint::NodeOrder>()) {
    double score = 0;
    CallScope scope(this, r.slot, ExtensionPoint::NodeOrder);
    int32_t err = Fn<ExtensionPoint::NodeOrder>(r.fn)(r.ctx, t, n, &score);
    if (scope.faulted()) continue;
    const std::string& name = plugins_[r.slot].name;
    if (err != 0) {
      if (error) *error = fmt::format("plugin {}: node_order failed", name);
      break;
    }
    if (!out.empty() && out.back().first == name) out.back().second += score;
    else out.emplace_back(name, score);
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<double>>> Session::BatchNodeOrderEach(
    const Task* t, std::span<Node* const> nodes, std::string* error) const {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  std::vector<double> part(nodes.size());
  for (const auto& r : Handlers<ExtensionPoint::BatchNodeOrder>()) {
    std::fill(part.begin(), part.end(), 0.0);
    CallScope scope(this, r.slot, ExtensionPoint::BatchNodeOrder);
    int32_t err = Fn<ExtensionPoint::BatchNodeOrder>(r.fn)(
        r.ctx, t, const_cast<const Node* const*>(nodes.data()), nodes.size(), part.data());
    if (scope.faulted()) continue;
    const std::string& name = plugins_[r.slot].name;
    if (err != 0) {
      if (error) *error = fmt::format("plugin {}: batch_node_order failed", name);
      break;
    }
    if (out.empty() || out.back().first != name) out.emplace_back(name, std::vector<double>(nodes.size()));
    for (size_t k = 0; k < nodes.size(); ++k) out.back().second[k] += part[k];
  }
  return out;
}

void Session::ShowQueueFn(const Queue* q) const { CombineCallAll<ExtensionPoint::ShowQueue>(q); }

}  // namespace kiln
