// JIT-compiled policy handlers vs the same logic hand-written in C++, per call. Also: front end +
// codegen + JIT time of every shipped policy.
//
// Report the ratio JIT/native per handler (target ≤ 1.2, issue #4) from the `Jit*` and `Native*`
// pairs, measured in ONE run (the machine is shared and noisy):
//   kiln_bench --benchmark_filter='Jit|Native|Oracle' --benchmark_repetitions=5 \
//              --benchmark_report_aggregates_only=true
//
// What each side includes — the comparison is like-for-like:
//  * Both are called exactly as the session's dispatchers call a registered handler
//    (runtime/session.cc: `Fn<P>(r.fn)(r.ctx, args...)`): through a C function pointer the
//    optimiser cannot see through (a volatile copy), with a `void* ctx` first argument, on the
//    same Job/Task objects, and for the victim points with the session's zeroed selection mask.
//    The session's CallScope around each call is the same for both and is not included.
//  * Jit*: the policy's exported thunk `kiln.on.<point>` from the JIT — everything a call costs:
//    the fault frame and call-arena reset (only in handlers that can fault, see codegen.cc
//    EmitThunk), the body, its host calls (kiln_job_* counters, label lookups, map and list
//    intrinsics), and writing the answer into the session's out-parameters.
//  * Native*: the rule hand-written in C++ as a session plugin would be (oracle_plugins.h wraps
//    the oracles in a lambda with the same C signature): it reads the same runtime objects the
//    JIT reads and, where the JIT calls into the runtime, calls the same runtime code — Job's
//    O(1) counters (Job::IsReady, ReadyTaskNum, CheckTaskReady) for gang, Task::labels and the
//    duration parser behind the stdlib's parse_duration for cdp. The victim points collect a
//    std::vector and mark the mask afterwards, as the oracle plugins do (the JIT builds a list
//    and marks it too, unless its victim rule is a plain filter, which marks directly).
//  * NativeFlat*: gang's victim rule hand-tuned (a flat array instead of std::map, marking the
//    mask directly) — the best a C++ author would likely write; reported for transparency.
//  * Oracle*: the differential-test oracles themselves (tests/oracles/). The gang oracle
//    recomputes every counter by scanning job.tasks (on purpose: it shares no code with the
//    runtime), so it does more work than either side above and is not the ratio's denominator.
#include <benchmark/benchmark.h>

#include <atomic>
#include <initializer_list>
#include <map>
#include <span>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/parse/literals.h"
#include "runtime/session.h"
#include "tests/bench/bench_policy_text.h"
#include "tests/bench/bench_session.h"
#include "tests/oracles/cdp_oracle.h"
#include "tests/oracles/gang_oracle.h"
#include "tests/oracles/oracle_plugins.h"
#include "tests/oracles/priority_oracle.h"

namespace kiln {
namespace {

struct Loaded {
  std::shared_ptr<const CompiledPolicy> policy;
  std::shared_ptr<const BoundArgs> args;
  PolicyContext ctx;
  Arena arena;

  template <ExtensionPoint P>
  HandlerFn<P> Fn() const {
    return reinterpret_cast<HandlerFn<P>>(args->code->Handler(P));
  }
};

Loaded& Builtin(std::string_view name, TimeNs now = 600'000'000'000) {
  static std::map<std::string, std::unique_ptr<Loaded>, std::less<>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  auto compiled = (*PolicyCompiler::Global())->Compile(bench::BenchPolicySource(name));
  if (!compiled.ok()) {
    fprintf(stderr, "%s\n", compiled.error().Format().c_str());
    std::abort();
  }
  PluginOption option{};
  option.name = std::string(name);
  auto l = std::make_unique<Loaded>();
  l->policy = *compiled;
  l->args = *BindArguments(*compiled, option);
  l->ctx.args = l->args->data;
  l->ctx.now = now;
  l->ctx.session_arena = &l->arena;
  l->args->code->state_init(&l->ctx);
  return *cache.emplace(std::string(name), std::move(l)).first->second;
}

// Two jobs of 8 tasks with mixed statuses, and 64 preemption candidates across 8 jobs.
struct Fixture {
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<const Task*> candidates;

  Fixture() {
    std::mt19937 rng(7);
    const TaskStatus statuses[] = {TaskStatus::Pending, TaskStatus::Running, TaskStatus::Bound,
                                   TaskStatus::Pipelined, TaskStatus::Succeeded};
    for (int j = 0; j < 8; ++j) {
      auto job = std::make_unique<Job>();
      job->name = "job" + std::to_string(j);
      job->priority = j % 3;
      job->min_available = 3;
      for (int t = 0; t < 8; ++t) {
        auto task = std::make_unique<Task>();
        task->name = job->name + "-" + std::to_string(t);
        task->status = statuses[rng() % 5];
        task->priority = static_cast<int64_t>(rng() % 4);
        task->mutable_resreq().Set(kCpu, 1000);
        if (t % 3 == 0) task->mutable_shape().labels["volcano.sh/cooldown-time"] = "5m";
        task->scheduled_at = 1'000'000'000LL * (rng() % 600);
        job->AddTask(task.get());
        candidates.push_back(task.get());
        tasks.push_back(std::move(task));
      }
      jobs.push_back(std::move(job));
    }
  }
};

Fixture& F() {
  static Fixture f;
  return f;
}

// ---- hand-written handlers with the session's C ABI ----
int32_t NativePriorityJobOrder(void*, const Job* l, const Job* r) {
  return oracles::priority::JobOrder(*l, *r);
}
int32_t NativePriorityTaskOrder(void*, const Task* l, const Task* r) {
  return oracles::priority::TaskOrder(*l, *r);
}
// gang on the runtime's counters (what `job.is_ready` etc. read through kiln_job_*).
bool NativeGangJobReady(void*, const Job* j) { return j->CheckTaskReady() && j->IsReady(); }
int32_t NativeGangJobOrder(void*, const Job* l, const Job* r) {
  bool l_ready = l->IsReady();
  bool r_ready = r->IsReady();
  if (l_ready && !r_ready) return 1;
  if (!l_ready && r_ready) return -1;
  return 0;
}
bool OracleGangJobReady(void*, const Job* j) { return oracles::gang::JobReady(*j); }
int32_t OracleGangJobOrder(void*, const Job* l, const Job* r) {
  return oracles::gang::JobOrder(*l, *r);
}
using oracles::MarkVictims;
int32_t NativePriorityPreemptable(void*, const Task* p, const Task* const* c, size_t n,
                                  uint8_t* sel) {
  return MarkVictims(c, n, sel, oracles::priority::Victims(*p, std::span(c, n)));
}
// The gang oracle's victim rule, with the job's ready count from the runtime's counter.
int32_t NativeGangPreemptable(void*, const Task*, const Task* const* c, size_t n,
                              uint8_t* sel) {
  std::map<const Job*, int32_t> occupied;
  std::vector<const Task*> victims;
  for (size_t i = 0; i < n; ++i) {
    const Job* job = c[i]->job;
    auto [it, inserted] = occupied.try_emplace(job, 0);
    if (inserted) it->second = job->ReadyTaskNum();
    if (it->second > job->min_available) {
      --it->second;
      victims.push_back(c[i]);
    }
  }
  return MarkVictims(c, n, sel, victims);
}
int32_t NativeFlatGangPreemptable(void*, const Task*, const Task* const* c, size_t n,
                                  uint8_t* sel) {
  struct Entry {
    const Job* job;
    int64_t occupied;
  };
  Entry small[16];
  std::vector<Entry> big;
  Entry* entries = small;
  size_t size = 0, cap = 16;
  for (size_t i = 0; i < n; ++i) {
    const Job* job = c[i]->job;
    Entry* e = nullptr;
    for (size_t k = 0; k < size; ++k)
      if (entries[k].job == job) {
        e = &entries[k];
        break;
      }
    if (!e) {
      if (size == cap) {
        big.assign(entries, entries + size);
        big.resize(cap *= 2);
        entries = big.data();
      }
      e = &entries[size++];
      *e = {job, job->ReadyTaskNum()};
    }
    if (e->occupied > job->min_available) {
      --e->occupied;
      sel[i] = 1;
    }
  }
  return 1;
}
int32_t OracleGangPreemptable(void*, const Task* p, const Task* const* c, size_t n,
                              uint8_t* sel) {
  return MarkVictims(c, n, sel, oracles::gang::Victims(*p, std::span(c, n)));
}
// cdp with the runtime's label map and the parser behind the stdlib's parse_duration.
int32_t NativeCdpPreemptable(void* ctx, const Task*, const Task* const* c, size_t n,
                             uint8_t* sel) {
  constexpr std::string_view kKey = "volcano.sh/cooldown-time";
  const TimeNs now = static_cast<PolicyContext*>(ctx)->now;
  std::vector<const Task*> victims;
  for (size_t i = 0; i < n; ++i) {
    const Task& t = *c[i];
    bool protect = false;
    if (t.status == TaskStatus::Running) {
      const std::string* v = nullptr;
      if (auto it = t.labels().find(kKey); it != t.labels().end())
        v = &it->second;
      else if (auto it = t.annotations().find(kKey); it != t.annotations().end())
        v = &it->second;
      if (v) {
        auto cooldown = ParseDurationText(*v, /*allow_days=*/false);
        protect = cooldown && t.scheduled_at != 0 && t.scheduled_at + *cooldown > now;
      }
    }
    if (!protect) victims.push_back(c[i]);
  }
  return MarkVictims(c, n, sel, victims);
}
int32_t OracleCdpPreemptable(void* ctx, const Task* p, const Task* const* c, size_t n,
                             uint8_t* sel) {
  return MarkVictims(c, n, sel,
                     oracles::cdp::Victims(*p, std::span(c, n), static_cast<PolicyContext*>(ctx)->now));
}

// The per-call path shape every JIT/C++ pair is measured through (bench_session.h).
using bench::Run;

// The native side gets a context too (the session always passes one); cdp reads its clock.
PolicyContext& NativeCtx() {
  static PolicyContext ctx = [] {
    PolicyContext c;
    c.now = 600'000'000'000;
    return c;
  }();
  return ctx;
}

// job_order of the fixture's jobs 0 and 1: the built-in policy `policy`'s compiled handler, or
// a C++ side of it.
void JitJobOrder(benchmark::State& s, std::string_view policy) {
  auto& l = Builtin(policy);
  Run(s, l.Fn<ExtensionPoint::JobOrder>(), &l.ctx, F().jobs[0].get(), F().jobs[1].get());
}
void NativeJobOrder(benchmark::State& s, HandlerFn<ExtensionPoint::JobOrder> fn) {
  Run(s, fn, &NativeCtx(), F().jobs[0].get(), F().jobs[1].get());
}

void BM_JitPriorityJobOrder(benchmark::State& s) { JitJobOrder(s, "priority"); }
void BM_NativePriorityJobOrder(benchmark::State& s) { NativeJobOrder(s, &NativePriorityJobOrder); }
void BM_JitPriorityTaskOrder(benchmark::State& s) {
  auto& l = Builtin("priority");
  Run(s, l.Fn<ExtensionPoint::TaskOrder>(), &l.ctx, F().candidates[0], F().candidates[1]);
}
void BM_NativePriorityTaskOrder(benchmark::State& s) {
  Run(s, &NativePriorityTaskOrder, &NativeCtx(), F().candidates[0], F().candidates[1]);
}
void BM_JitGangJobReady(benchmark::State& s) {
  auto& l = Builtin("gang");
  Run(s, l.Fn<ExtensionPoint::JobReady>(), &l.ctx, static_cast<const Job*>(F().jobs[0].get()));
}
void BM_NativeGangJobReady(benchmark::State& s) {
  Run(s, &NativeGangJobReady, &NativeCtx(), static_cast<const Job*>(F().jobs[0].get()));
}
void BM_OracleGangJobReady(benchmark::State& s) {
  Run(s, &OracleGangJobReady, &NativeCtx(), static_cast<const Job*>(F().jobs[0].get()));
}
void BM_JitGangJobOrder(benchmark::State& s) { JitJobOrder(s, "gang"); }
void BM_NativeGangJobOrder(benchmark::State& s) { NativeJobOrder(s, &NativeGangJobOrder); }
void BM_OracleGangJobOrder(benchmark::State& s) { NativeJobOrder(s, &OracleGangJobOrder); }

template <typename Fn>
void RunVictims(benchmark::State& state, Fn fn, void* ctx) {
  const auto& c = F().candidates;
  std::vector<uint8_t> sel(c.size());
  Fn volatile target = fn;
  for (auto _ : state) {
    std::fill(sel.begin(), sel.end(), 0);
    benchmark::DoNotOptimize(target(ctx, c[0], c.data(), c.size(), sel.data()));
  }
}
using VictimsFn = int32_t (*)(void*, const Task*, const Task* const*, size_t, uint8_t*);

// BM_Jit<Policy>Preemptable64, RunVictims on the built-in policy `builtin`'s compiled
// preemptable, then BM_<side><Policy>Preemptable64 on each C++ side of it.
void RegisterVictims(const std::string& policy, const char* builtin,
                     std::initializer_list<std::pair<const char*, VictimsFn>> sides) {
  benchmark::RegisterBenchmark(("BM_Jit" + policy + "Preemptable64").c_str(),
                               [builtin](benchmark::State& s) {
                                 auto& l = Builtin(builtin);
                                 RunVictims(s, l.Fn<ExtensionPoint::Preemptable>(), &l.ctx);
                               });
  for (auto [side, fn] : sides)
    benchmark::RegisterBenchmark(("BM_" + std::string(side) + policy + "Preemptable64").c_str(),
                                 [fn](benchmark::State& s) { RunVictims(s, fn, &NativeCtx()); });
}


BENCHMARK(BM_JitPriorityJobOrder);
BENCHMARK(BM_NativePriorityJobOrder);
BENCHMARK(BM_JitPriorityTaskOrder);
BENCHMARK(BM_NativePriorityTaskOrder);
BENCHMARK(BM_JitGangJobOrder);
BENCHMARK(BM_NativeGangJobOrder);
BENCHMARK(BM_OracleGangJobOrder);
BENCHMARK(BM_JitGangJobReady);
BENCHMARK(BM_NativeGangJobReady);
BENCHMARK(BM_OracleGangJobReady);
[[maybe_unused]] const bool kVictimsRegistered = [] {
  RegisterVictims("Priority", "priority", {{"Native", &NativePriorityPreemptable}});
  RegisterVictims("Gang", "gang",
                  {{"Native", &NativeGangPreemptable},
                   {"NativeFlat", &NativeFlatGangPreemptable},
                   {"Oracle", &OracleGangPreemptable}});
  RegisterVictims("Cdp", "cdp",
                  {{"Native", &NativeCdpPreemptable}, {"Oracle", &OracleCdpPreemptable}});
  return true;
}();

// Front end + codegen + O2 + JIT of one shipped policy, uncached (a fresh path each time).
void BM_CompilePolicy(benchmark::State& state, std::string name) {
  static std::atomic<int> n{0};
  const SourceFile source = bench::BenchPolicySource(name);
  auto* compiler = *PolicyCompiler::Global();
  for (auto _ : state) {
    auto p = compiler->Compile(SourceFile{"bench/" + std::to_string(n++) + "/" + source.path, source.text});
    if (!p.ok()) {
      state.SkipWithError(p.error().Format().c_str());
      break;
    }
    benchmark::DoNotOptimize(p->get());
  }
}

// Every built-in that compiles today, together (the "well under a second" target).
void BM_CompileAllBuiltins(benchmark::State& state) {
  static std::atomic<int> n{0};
  auto* compiler = *PolicyCompiler::Global();
  for (auto _ : state) {
    int ok = 0;
    std::string run = std::to_string(n++);
    for (const auto& b : BuiltinPolicies()) {
      auto p = compiler->Compile(SourceFile{"bench-all/" + run + "/" + std::string(b.path), std::string(b.text)});
      ok += p.ok();
    }
    state.counters["compiled"] = ok;
    state.counters["builtins"] = static_cast<double>(BuiltinPolicies().size());
  }
}

// BM_CompileAllBuiltins with the JIT's tier 0 (compiler/host/jit_tiers.h): O0 and FastISel, what
// a cold `kiln` compiles before a policy is usable. `mode`: "sequential" (tier 0 only, one after
// the other), "compile_all" (tier 0 only, on the thread pool: CPU is the calling thread's) or
// "two_tier" (sequential, with the clone and queueing of the background O2 compile, whose time
// is left out: the loop waits for it with the timer paused). The shipped cache is off.
// Counters per iteration: front_end_ms (lexing, parsing, checker passes) summed over the
// policies, compile_ms (each policy's Compile from start to usable code) summed, and
// front_end_share = their ratio.
void BM_CompileAllBuiltinsTier0(benchmark::State& state, std::string mode) {
  static std::atomic<int> n{0};
  auto* compiler = *PolicyCompiler::Global();
  const JitTiers saved = compiler->GetJitTiers();
  compiler->SetShippedCacheDir("");
  compiler->SetJitTiers(mode == "two_tier" ? JitTiers::kTwoTier : JitTiers::kFastOnly);
  // Each policy whole, as one-shot commands compile it, except in the `lazy` modes (as `kiln
  // serve` does, jit_tiers.h): `lazy` until every built-in is ready to call, `lazy_every_handler`
  // then every handler of every built-in asked for, 2 threads (the most a session could compile).
  const bool saved_lazy = LazyHandlersEnabled();
  SetLazyHandlers(mode.rfind("lazy", 0) == 0);
  double front_end_ms = 0, compile_ms = 0;
  for (auto _ : state) {
    std::string run = std::to_string(n++);
    std::vector<SourceFile> sources;
    for (const auto& b : BuiltinPolicies())
      sources.push_back(
          SourceFile{"bench-tier0/" + run + "/" + std::string(b.path), std::string(b.text)});
    std::vector<PolicyCompiler::CompileResult> results;
    if (mode != "sequential") {
      results = compiler->CompileAll(sources);
    } else {
      for (const SourceFile& source : sources) results.push_back(compiler->Compile(source));
    }
    for (const auto& r : results) {
      if (!r.ok()) {
        state.SkipWithError(r.error().message.c_str());
        break;
      }
      compile_ms += (*r)->compile_ms;
      for (const auto& [phase, ms] : (*r)->timings.phases) {
        if (phase == "cache-lookup" || phase == "codegen") break;  // the front end ends there
        front_end_ms += ms;
      }
    }
    if (mode == "lazy_every_handler") {
      std::vector<std::pair<const PolicyCode*, ExtensionPoint>> handlers;
      std::vector<std::shared_ptr<const PolicyCode>> codes;
      for (const auto& r : results)
        if (r.ok()) {
          codes.push_back((*r)->Code());
          for (ExtensionPoint p : codes.back()->points) handlers.push_back({codes.back().get(), p});
        }
      std::atomic<bool> failed{false};
      ThreadPool::Default().ParallelFor(
          handlers.size(),
          [&](size_t i) {
            if (!handlers[i].first->Handler(handlers[i].second)) failed = true;
          },
          /*grain=*/1);
      if (failed) state.SkipWithError("a handler did not compile");
    }
    if (mode == "two_tier") {
      state.PauseTiming();
      compiler->WaitForTierUp();
      state.ResumeTiming();
    }
  }
  SetLazyHandlers(saved_lazy);
  compiler->SetJitTiers(saved);
  compiler->SetShippedCacheDir(PolicyCompiler::DefaultShippedCacheDir());
  const double iterations = static_cast<double>(state.iterations());
  state.counters["builtins"] = static_cast<double>(BuiltinPolicies().size());
  state.counters["front_end_ms"] = front_end_ms / iterations;
  state.counters["compile_ms"] = compile_ms / iterations;
  state.counters["front_end_share"] = compile_ms > 0 ? front_end_ms / compile_ms : 0;
}

BENCHMARK_CAPTURE(BM_CompilePolicy, gang, std::string("gang"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_CompilePolicy, priority, std::string("priority"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_CompilePolicy, conformance, std::string("conformance"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_CompilePolicy, cdp, std::string("cdp"))->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_CompilePolicy, drf, std::string("drf"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_CompilePolicy, proportion, std::string("proportion"))->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CompileAllBuiltins)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(BM_CompileAllBuiltinsTier0, sequential, std::string("sequential"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileAllBuiltinsTier0, compile_all, std::string("compile_all"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileAllBuiltinsTier0, lazy, std::string("lazy"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileAllBuiltinsTier0, lazy_every_handler,
                  std::string("lazy_every_handler"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileAllBuiltinsTier0, two_tier, std::string("two_tier"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();

}  // namespace
}  // namespace kiln
