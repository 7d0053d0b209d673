// drf's job_order and share bookkeeping; proportion's queue_order, overused and allocatable;
// JIT vs C++ (handler_bench.h).

#include "tests/bench/handler_bench.h"

namespace kiln::bench {
namespace {

// ============================================================================================
// drf: job_order and the share kept by allocate/deallocate

class NativeDrf : public Plugin {
 public:
  explicit NativeDrf(const PluginOption&) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    total_ = ssn.total_resource();
    const auto& jobs = ssn.cluster().jobs();
    alloc_.assign(jobs.size(), Resource{});
    share_.assign(jobs.size(), 0.0);
    for (const Job* job : jobs) {
      Resource a;
      for (const Task* t : job->tasks)
        if (AllocatedStatus(t->status)) a.Add(t->resreq());
      Set(job, a);
    }
    return RegisterHandlers<ExtensionPoint::JobOrder, ExtensionPoint::OnAllocate,
                            ExtensionPoint::OnDeallocate>(ssn, self, this, &JobOrder,
                                                          &Allocate, &Deallocate);
  }
  static int32_t JobOrder(void* ctx, const Job* l, const Job* r) {
    const auto& self = *static_cast<const NativeDrf*>(ctx);
    const double ls = self.share_[l->index];
    const double rs = self.share_[r->index];
    if (ls == rs) return 0;
    if (ls < rs) return -1;
    return 1;
  }
  static void Allocate(void* ctx, const Task* task) {
    auto& self = *static_cast<NativeDrf*>(ctx);
    self.Set(task->job, LangAdd(self.alloc_[task->job->index], task->resreq()));
  }
  static void Deallocate(void* ctx, const Task* task) {
    auto& self = *static_cast<NativeDrf*>(ctx);
    self.Set(task->job, LangSub(self.alloc_[task->job->index], task->resreq()));
  }

 private:
  void Set(const Job* job, const Resource& a) {
    alloc_[job->index] = a;
    share_[job->index] = kiln_std_dominant_share(&a, &total_);
  }
  Resource total_;
  std::vector<Resource> alloc_;
  std::vector<double> share_;
};

// ============================================================================================
// proportion: queue_order, overused, allocatable

class NativeProportion : public Plugin {
 public:
  explicit NativeProportion(const PluginOption&) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    total_ = ssn.total_resource();
    const size_t nq = ssn.cluster().queues().size();
    allocated_.assign(nq, Resource{});
    request_.assign(nq, Resource{});
    guarantee_.assign(nq, Resource{});
    real_capability_.assign(nq, Resource{});
    deserved_.assign(nq, Resource{});
    share_.assign(nq, 0.0);
    std::vector<bool> added(nq, false);
    Resource total_guarantee;
    for (const Queue* q : ssn.cluster().queues())
      if (q->has_guarantee) total_guarantee.Add(q->guarantee);
    for (const Job* job : ssn.cluster().jobs()) {
      const Queue* q = job->queue;
      if (!added[q->index]) {
        added[q->index] = true;
        AddQueue(q, total_guarantee);
      }
      for (const Task* t : job->tasks) {
        if (AllocatedStatus(t->status)) {
          allocated_[q->index] = LangAdd(allocated_[q->index], t->resreq());
          request_[q->index] = LangAdd(request_[q->index], t->resreq());
        } else if (t->status == TaskStatus::Pending) {
          request_[q->index] = LangAdd(request_[q->index], t->resreq());
        }
      }
      // (inqueue/elastic feed only job_enqueueable, which is not benchmarked here.)
    }
    ComputeDeserved();
    return RegisterHandlers<ExtensionPoint::QueueOrder, ExtensionPoint::Overused,
                            ExtensionPoint::Allocatable>(ssn, self, this, &QueueOrder,
                                                         &Overused, &Allocatable);
  }
  static int32_t QueueOrder(void* ctx, const Queue* l, const Queue* r) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    if (l->priority != r->priority) return l->priority > r->priority ? -1 : 1;
    const double ls = self.share_[l->index], rs = self.share_[r->index];
    if (ls == rs) return 0;
    return ls < rs ? -1 : 1;
  }
  static bool Overused(void* ctx, const Queue* q) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    return self.deserved_[q->index].LessEqual(self.allocated_[q->index], DimensionDefault::Zero);
  }
  static bool Allocatable(void* ctx, const Queue* q, const Task* task) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    if (q->state != QueueState::Open) return false;
    const Resource future = LangAdd(self.allocated_[q->index], task->resreq());
    return future.LessEqualWithDimensionAndResourcesName(self.deserved_[q->index], task->resreq());
  }

 private:
  void AddQueue(const Queue* q, const Resource& total_guarantee) {
    queues_.push_back(q);
    guarantee_[q->index] = q->has_guarantee ? q->guarantee : Resource{};
    Resource real = LangAdd(total_.ExceededPart(total_guarantee), guarantee_[q->index]);
    if (q->has_capability) {
      Resource capability = q->capability;
      const Resource unlimited = Resource::Infinite();
      if (capability.cpu() <= 0.0) capability.Set(kCpu, unlimited.cpu());
      if (capability.memory() <= 0.0) capability.Set(kMemory, unlimited.memory());
      real.MinDimensionResource(capability, DimensionDefault::Infinity);
    }
    real_capability_[q->index] = real;
  }
  void UpdateShare(const Queue* q) {
    const Resource& d = deserved_[q->index];
    const Resource& a = allocated_[q->index];
    double s = 0.0;
    for (ResourceId id : d.ResourceNames()) s = std::max(s, kiln_std_share(a.Get(id), d.Get(id)));
    share_[q->index] = s;
  }
  void ComputeDeserved() {
    Resource remaining = total_;
    std::vector<bool> met(deserved_.size(), false);
    for (int round = 0; round < 1000; ++round) {
      int64_t total_weight = 0;
      for (const Queue* q : queues_)
        if (!met[q->index]) total_weight += q->weight;
      if (total_weight == 0) break;
      const Resource old_remaining = remaining;
      Resource increased, decreased;
      for (const Queue* q : queues_) {
        if (met[q->index]) continue;
        const Resource old = deserved_[q->index];
        Resource share = remaining;
        share.Multi(static_cast<double>(q->weight) / static_cast<double>(total_weight));
        Resource d = LangAdd(old, share);
        d.MinDimensionResource(real_capability_[q->index], DimensionDefault::Infinity);
        d.MinDimensionResource(request_[q->index], DimensionDefault::Zero);
        if (request_[q->index].LessEqual(d, DimensionDefault::Zero)) {
          met[q->index] = true;
        } else if (d.Equal(old, DimensionDefault::Zero)) {
          met[q->index] = true;
        }
        d.SetMax(guarantee_[q->index]);
        deserved_[q->index] = d;
        UpdateShare(q);
        increased = LangAdd(increased, d.ExceededPart(old));
        decreased = LangAdd(decreased, old.ExceededPart(d));
      }
      remaining = LangAdd(remaining, decreased).ExceededPart(increased);
      if (remaining.IsEmpty() || remaining.Equal(old_remaining, DimensionDefault::Zero)) break;
    }
  }

  Resource total_;
  std::vector<const Queue*> queues_;
  std::vector<Resource> allocated_, request_, guarantee_, real_capability_, deserved_;
  std::vector<double> share_;
};

// ---- drf ----

std::vector<std::pair<const Job*, const Job*>> JobPairs(PairSession& p) {
  // Consecutive jobs and a stride, so equal and different shares both occur.
  std::vector<std::pair<const Job*, const Job*>> pairs;
  const auto& jobs = p.cluster().jobs();
  for (size_t i = 0; i + 1 < jobs.size(); ++i) {
    pairs.emplace_back(jobs[i], jobs[i + 1]);
    pairs.emplace_back(jobs[i], jobs[(i * 7 + 3) % jobs.size()]);
  }
  return pairs;
}

void CheckDrf(PairSession& p, const std::string& key) {
  auto jit = p.jit->Fn<ExtensionPoint::JobOrder>();
  auto* native = static_cast<NativeDrf*>(p.native);
  auto compare_all = [&](const char* when) {
    int differ = 0;
    for (auto [l, r] : JobPairs(p)) {
      int32_t a = jit(p.jit->ctx(), l, r), b = NativeDrf::JobOrder(native, l, r);
      if (a != b) Mismatch(key, fmt::format("{}: job_order({}, {}): jit {} native {}", when,
                                            l->uid, r->uid, a, b));
      differ += a != 0;
    }
    if (differ == 0) Mismatch(key, "every job pair compares equal: the check proves nothing");
  };
  compare_all("after open");
  // allocate one task of every 3rd job (shares move), then compare; then undo.
  auto alloc = p.jit->Fn<ExtensionPoint::OnAllocate>();
  auto dealloc = p.jit->Fn<ExtensionPoint::OnDeallocate>();
  std::vector<const Task*> moved;
  for (size_t j = 0; j < p.cluster().jobs().size(); j += 3)
    moved.push_back(p.cluster().jobs()[j]->tasks.front());
  for (const Task* t : moved) {
    alloc(p.jit->ctx(), t);
    NativeDrf::Allocate(native, t);
  }
  compare_all("after allocate");
  for (const Task* t : moved) {
    dealloc(p.jit->ctx(), t);
    NativeDrf::Deallocate(native, t);
  }
  compare_all("after deallocate");
}

PairSession& DrfPair() { return Pair("drf", "drf", "", Make<NativeDrf>(), &CheckDrf); }

template <typename Fn>
void PerJobPair(benchmark::State& state, Fn fn, void* ctx,
                const std::vector<std::pair<const Job*, const Job*>>& pairs) {
  Fn volatile target = fn;
  for (auto _ : state)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(ctx, l, r));
  state.counters["calls"] = static_cast<double>(pairs.size());
}
void BM_JitDrfJobOrder(benchmark::State& s) {
  auto& p = DrfPair();
  PerJobPair(s, p.jit->Fn<ExtensionPoint::JobOrder>(), p.jit->ctx(), JobPairs(p));
}
void BM_NativeDrfJobOrder(benchmark::State& s) {
  auto& p = DrfPair();
  PerJobPair(s, HandlerFn<ExtensionPoint::JobOrder>(&NativeDrf::JobOrder),
             static_cast<NativeDrf*>(p.native), JobPairs(p));
}
// The share computation: allocate then deallocate of one task (two calls; the state returns to
// where it was).
template <typename A, typename D>
void AllocDealloc(benchmark::State& state, A alloc, D dealloc, void* ctx, const Task* t) {
  A volatile a = alloc;
  D volatile d = dealloc;
  for (auto _ : state) {
    a(ctx, t);
    d(ctx, t);
  }
  state.counters["calls"] = 2;
}
const Task* DrfTask(PairSession& p) { return p.task(BenchTask::Gpu); }
void BM_JitDrfAllocateShare(benchmark::State& s) {
  auto& p = DrfPair();
  AllocDealloc(s, p.jit->Fn<ExtensionPoint::OnAllocate>(), p.jit->Fn<ExtensionPoint::OnDeallocate>(),
               p.jit->ctx(), DrfTask(p));
}
void BM_NativeDrfAllocateShare(benchmark::State& s) {
  auto& p = DrfPair();
  AllocDealloc(s, HandlerFn<ExtensionPoint::OnAllocate>(&NativeDrf::Allocate),
               HandlerFn<ExtensionPoint::OnDeallocate>(&NativeDrf::Deallocate),
               static_cast<NativeDrf*>(p.native), DrfTask(p));
}
BENCHMARK(BM_JitDrfJobOrder);
BENCHMARK(BM_NativeDrfJobOrder);
// Fixed iterations: when this was written every JIT'd allocate stored a fresh Resource copy in
// the session arena (docs/performance-history.md, "Why the JIT is slower"), so a time-based run
// grew the process by ~0.5 KB per iteration; stores overwrite in place now, and a fixed count
// keeps the runs comparable with the earlier ones.
BENCHMARK(BM_JitDrfAllocateShare)->Iterations(50'000);
BENCHMARK(BM_NativeDrfAllocateShare)->Iterations(50'000);

// ---- proportion ----

std::vector<std::pair<const Queue*, const Queue*>> QueuePairs(PairSession& p) {
  std::vector<std::pair<const Queue*, const Queue*>> pairs;
  for (const Queue* l : p.cluster().queues())
    for (const Queue* r : p.cluster().queues()) pairs.emplace_back(l, r);
  return pairs;
}
// (queue, task) for allocatable: every benchmark task against every queue.
std::vector<std::pair<const Queue*, const Task*>> QueueTasks(PairSession& p) {
  std::vector<std::pair<const Queue*, const Task*>> out;
  for (const Queue* q : p.cluster().queues())
    for (BenchTask bt : kBenchTasks) out.emplace_back(q, p.task(bt));
  // and a few placed tasks
  for (size_t k = 0; k < p.cluster().tasks().size(); k += 997)
    out.emplace_back(p.cluster().queues()[k % 4], p.cluster().tasks()[k]);
  return out;
}

void CheckProportion(PairSession& p, const std::string& key) {
  auto* native = static_cast<NativeProportion*>(p.native);
  auto qo = p.jit->Fn<ExtensionPoint::QueueOrder>();
  int nonzero = 0;
  for (auto [l, r] : QueuePairs(p)) {
    int32_t a = qo(p.jit->ctx(), l, r), b = NativeProportion::QueueOrder(native, l, r);
    if (a != b) Mismatch(key, fmt::format("queue_order({}, {}): jit {} native {}", l->name,
                                          r->name, a, b));
    nonzero += a != 0;
  }
  if (nonzero == 0) Mismatch(key, "every queue pair compares equal");
  auto ov = p.jit->Fn<ExtensionPoint::Overused>();
  for (const Queue* q : p.cluster().queues()) {
    bool a = ov(p.jit->ctx(), q), b = NativeProportion::Overused(native, q);
    if (a != b) Mismatch(key, fmt::format("overused({}): jit {} native {}", q->name, a, b));
  }
  auto al = p.jit->Fn<ExtensionPoint::Allocatable>();
  int yes = 0, no = 0;
  for (auto [q, t] : QueueTasks(p)) {
    bool a = al(p.jit->ctx(), q, t), b = NativeProportion::Allocatable(native, q, t);
    if (a != b)
      Mismatch(key, fmt::format("allocatable({}, {}): jit {} native {}", q->name, t->uid, a, b));
    (a ? yes : no)++;
  }
  if (yes == 0 || no == 0)
    Mismatch(key, fmt::format("allocatable is {} on every input: the check proves little", yes > 0));
}

PairSession& ProportionPair() {
  return Pair("proportion", "proportion", "", Make<NativeProportion>(), &CheckProportion);
}

void BM_JitProportionQueueOrder(benchmark::State& s) {
  auto& p = ProportionPair();
  auto pairs = QueuePairs(p);
  auto fn = p.jit->Fn<ExtensionPoint::QueueOrder>();
  decltype(fn) volatile target = fn;
  for (auto _ : s)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(p.jit->ctx(), l, r));
  s.counters["calls"] = static_cast<double>(pairs.size());
}
void BM_NativeProportionQueueOrder(benchmark::State& s) {
  auto& p = ProportionPair();
  auto pairs = QueuePairs(p);
  HandlerFn<ExtensionPoint::QueueOrder> volatile target = &NativeProportion::QueueOrder;
  for (auto _ : s)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(p.native, l, r));
  s.counters["calls"] = static_cast<double>(pairs.size());
}
template <typename Fn>
void PerQueue(benchmark::State& s, Fn fn, void* ctx, PairSession& p) {
  Fn volatile target = fn;
  for (auto _ : s)
    for (const Queue* q : p.cluster().queues()) benchmark::DoNotOptimize(target(ctx, q));
  s.counters["calls"] = static_cast<double>(p.cluster().queues().size());
}
template <typename Fn>
void PerQueueTask(benchmark::State& s, Fn fn, void* ctx, PairSession& p) {
  auto items = QueueTasks(p);
  Fn volatile target = fn;
  for (auto _ : s)
    for (auto [q, t] : items) benchmark::DoNotOptimize(target(ctx, q, t));
  s.counters["calls"] = static_cast<double>(items.size());
}
// One side of proportion's handler at point P: the JIT's, or NativeProportion's `native`; timed
// per queue (overused) or per (queue, task) (allocatable).
template <ExtensionPoint P>
void ProportionSide(benchmark::State& s, bool jit, HandlerFn<P> native) {
  auto& p = ProportionPair();
  HandlerFn<P> fn = jit ? p.jit->Fn<P>() : native;
  void* ctx = jit ? p.jit->ctx() : static_cast<NativeProportion*>(p.native);
  if constexpr (P == ExtensionPoint::Overused)
    PerQueue(s, fn, ctx, p);
  else
    PerQueueTask(s, fn, ctx, p);
}
#define KILN_PROPORTION_PAIR(Point)                                                             \
  void BM_JitProportion##Point(benchmark::State& s) {                                           \
    ProportionSide<ExtensionPoint::Point>(s, true, &NativeProportion::Point);                   \
  }                                                                                             \
  void BM_NativeProportion##Point(benchmark::State& s) {                                        \
    ProportionSide<ExtensionPoint::Point>(s, false, &NativeProportion::Point);                  \
  }
KILN_PROPORTION_PAIR(Overused)
KILN_PROPORTION_PAIR(Allocatable)

BENCHMARK(BM_JitProportionQueueOrder);
BENCHMARK(BM_NativeProportionQueueOrder);
BENCHMARK(BM_JitProportionOverused);
BENCHMARK(BM_NativeProportionOverused);
BENCHMARK(BM_JitProportionAllocatable);
BENCHMARK(BM_NativeProportionAllocatable);

}  // namespace
}  // namespace kiln::bench
