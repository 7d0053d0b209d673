// Compile time of the shipped policies, by phase and in total (issue #4: every built-in compiled
// and JIT'd together well under a second). Run on a quiet machine, or compare CPU times:
//   kiln_bench --benchmark_filter='Frontend|Compile' --benchmark_repetitions=5 \
//              --benchmark_report_aggregates_only=true
// KILN_TIMINGS=1 additionally prints each compile's phases (lex, parse, passes, codegen, o2,
// machine code) to stderr.
//
// Every iteration compiles under a fresh path so the compile cache never answers; the ANTLR DFA
// cache and LLVM's one-time initialisation stay warm after the first iteration, as in a
// long-running scheduler (the first compile of a process pays for them once; `kiln simulate`
// start-up does). The on-disk object cache (--compile-cache) is off in every row but
// the BM_WarmCache ones, which compile the same sources with a warm one: the front end and the
// key still run, codegen, O2 and machine code do not (the object is linked).
// BM_CompileAllBuiltinsShipped does the same with the read-only cache the build ships
// (build/kiln-builtins). (Unset KILN_COMPILE_CACHE and KILN_BUILTIN_CACHE when running this, or
// the cold rows are not cold.)
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/builtin_policies.h"
#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/jit/object_cache.h"
#include "tests/bench/bench_policy_text.h"

namespace kiln {
namespace {

std::atomic<int> fresh{0};

// A built-in policy's source (bench::BenchPolicySource) under a path not compiled before.
SourceFile Fresh(std::string_view name) {
  SourceFile source = bench::BenchPolicySource(name);
  source.path = "compile-bench/" + std::to_string(fresh++) + "/" + source.path;
  return source;
}

// The plugins of Volcano's default scheduler.conf (examples/conf/volcano-default.conf).
const std::vector<std::string> kVolcanoDefault = {"priority", "gang",       "conformance",
                                                  "overcommit", "drf",      "predicates",
                                                  "proportion", "nodeorder"};

std::vector<SourceFile> FreshSources(const std::vector<std::string>& names) {
  std::vector<SourceFile> out;
  for (const std::string& n : names) out.push_back(Fresh(n));
  return out;
}

std::vector<std::string> AllBuiltinNames() {
  std::vector<std::string> out;
  for (const auto& b : BuiltinPolicies()) out.emplace_back(b.name);
  return out;
}

void BM_Frontend(benchmark::State& state, std::string name) {
  SourceFile source = bench::BenchPolicySource(name);
  for (auto _ : state) {
    FrontendResult r = RunFrontend(source);
    if (!r.ok()) state.SkipWithError("front end failed");
    benchmark::DoNotOptimize(r.policy.get());
  }
}

// The front end of a handler whose one expression concatenates `terms` strings: the cost check
// once walked each prefix of such a chain again (quadratic in its length). Linear time per term
// across the range shows it is not.
void BM_FrontendConcatChain(benchmark::State& state) {
  const int64_t terms = state.range(0);
  std::string chain;
  for (int64_t i = 0; i < terms; ++i)
    chain += (i ? " + " : "") + std::string("l.name + \"") + std::to_string(i) + "\"";
  SourceFile source{"concat-chain.policy",
                    "policy concat_chain;\n\non task_order(l: Task, r: Task) -> int {\n  let s = " +
                        chain + ";\n  return len(s) > 3 ? 1 : 0;\n}\n"};
  for (auto _ : state) {
    FrontendResult r = RunFrontend(source);
    if (!r.ok()) state.SkipWithError("front end failed");
    benchmark::DoNotOptimize(r.policy.get());
  }
  state.SetComplexityN(terms);
}
BENCHMARK(BM_FrontendConcatChain)
    ->RangeMultiplier(4)
    ->Range(125, 2000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

void BM_Compile(benchmark::State& state, std::string name) {
  auto* compiler = *PolicyCompiler::Global();
  for (auto _ : state) {
    auto p = compiler->Compile(Fresh(name));
    if (!p.ok()) state.SkipWithError(p.error().message.c_str());
  }
}

// One after the other, as a conf's plugins are prepared today.
void BM_CompileSequential(benchmark::State& state, std::vector<std::string> names) {
  auto* compiler = *PolicyCompiler::Global();
  for (auto _ : state) {
    for (const SourceFile& s : FreshSources(names)) {
      auto p = compiler->Compile(s);
      if (!p.ok()) state.SkipWithError(p.error().message.c_str());
    }
  }
  state.counters["policies"] = static_cast<double>(names.size());
}

// All at once on the default thread pool (KILN_THREADS sets its size).
void BM_CompileAll(benchmark::State& state, std::vector<std::string> names) {
  auto* compiler = *PolicyCompiler::Global();
  for (auto _ : state) {
    for (auto& p : compiler->CompileAll(FreshSources(names)))
      if (!p.ok()) state.SkipWithError(p.error().message.c_str());
  }
  state.counters["policies"] = static_cast<double>(names.size());
}

// `names` under fresh paths, on the thread pool (`together`) or one after the other.
void CompileFresh(benchmark::State& state, PolicyCompiler* compiler,
                  const std::vector<std::string>& names, bool together) {
  std::vector<SourceFile> sources = FreshSources(names);
  if (together) {
    for (auto& p : compiler->CompileAll(sources))
      if (!p.ok()) state.SkipWithError(p.error().message.c_str());
  } else {
    for (const SourceFile& source : sources)
      if (auto p = compiler->Compile(source); !p.ok())
        state.SkipWithError(p.error().message.c_str());
  }
}

// BM_CompileAll (`together`) or BM_CompileSequential with the on-disk object cache warmed once
// before the timed loop (fresh directory).
void BM_WarmCache(benchmark::State& state, std::vector<std::string> names, bool together) {
  auto* compiler = *PolicyCompiler::Global();
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("kiln-bench-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  compiler->SetCompileCacheDir(dir.string());
  auto compile = [&] { CompileFresh(state, compiler, names, together); };
  compile();
  ObjectCacheStats warmed = compiler->CompileCacheStats();
  for (auto _ : state) compile();
  ObjectCacheStats s = compiler->CompileCacheStats();
  compiler->SetCompileCacheDir("");
  std::filesystem::remove_all(dir);
  state.counters["policies"] = static_cast<double>(names.size());
  // Every timed compile should hit: hits per iteration == policies.
  state.counters["hits"] =
      static_cast<double>(s.hits - warmed.hits) / static_cast<double>(state.iterations());
  state.counters["misses"] =
      static_cast<double>(s.misses - warmed.misses) / static_cast<double>(state.iterations());
}

// The shipped-cache path (PolicyCompiler::SetShippedCacheDir): every built-in compiled one after
// the other, as BM_CompileAllBuiltins (jit_bench.cc) does cold, but with the read-only cache the
// build writes beside the kiln binary (build/kiln-builtins, `kiln warm-cache`). The front end,
// the key and linking run; codegen, O2 and machine code are loaded instead. When the build's
// directory is missing (a build that skipped the kiln_builtin_cache target) one is written to a
// temporary directory first, the same way. Counters: hits and misses per iteration (hits should
// equal builtins).
void BM_CompileAllBuiltinsShipped(benchmark::State& state, bool together) {
  auto* compiler = *PolicyCompiler::Global();
  std::filesystem::path dir = std::filesystem::path(KILN_BINARY_DIR) / "kiln-builtins";
  std::filesystem::path temp;
  std::error_code ec;
  if (std::filesystem::is_empty(dir, ec) || ec) {
    temp = std::filesystem::temp_directory_path() /
           ("kiln-bench-shipped-" + std::to_string(::getpid()));
    std::vector<SourceFile> builtins;
    for (const auto& b : BuiltinPolicies())
      builtins.push_back(SourceFile{std::string(b.path), std::string(b.text)});
    if (auto w = compiler->WriteCacheDir(temp.string(), builtins); !w.ok()) {
      state.SkipWithError(w.error().message.c_str());
      return;
    }
    dir = temp;
  }
  compiler->SetShippedCacheDir(dir.string());
  ObjectCacheStats before = compiler->ShippedCacheStats();
  std::vector<std::string> names = AllBuiltinNames();
  for (auto _ : state) CompileFresh(state, compiler, names, together);
  ObjectCacheStats s = compiler->ShippedCacheStats();
  compiler->SetShippedCacheDir("");
  if (!temp.empty()) std::filesystem::remove_all(temp, ec);
  state.counters["builtins"] = static_cast<double>(names.size());
  state.counters["hits"] =
      static_cast<double>(s.hits - before.hits) / static_cast<double>(state.iterations());
  state.counters["misses"] =
      static_cast<double>(s.misses - before.misses) / static_cast<double>(state.iterations());
}

#define KILN_POLICY_BENCH(policy)                                                            \
  BENCHMARK_CAPTURE(BM_Frontend, policy, std::string(#policy))->Unit(benchmark::kMillisecond); \
  BENCHMARK_CAPTURE(BM_Compile, policy, std::string(#policy))                                 \
      ->Unit(benchmark::kMillisecond)                                                         \
      ->Iterations(5)

KILN_POLICY_BENCH(gang);
KILN_POLICY_BENCH(priority);
KILN_POLICY_BENCH(conformance);
KILN_POLICY_BENCH(cdp);
KILN_POLICY_BENCH(drf);
KILN_POLICY_BENCH(proportion);
KILN_POLICY_BENCH(nodeorder);
KILN_POLICY_BENCH(predicates);
KILN_POLICY_BENCH(binpack);
KILN_POLICY_BENCH(overcommit);
BENCHMARK_CAPTURE(BM_Frontend, resource_strategy_fit, std::string("resource-strategy-fit"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, resource_strategy_fit, std::string("resource-strategy-fit"))
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// Whole-process compiles, timed by the wall clock (CompileAll's threads would not show in CPU
// time) over `iterations` runs.
#define KILN_WALL_TIME_BENCH(fn, name, iterations, ...)   \
  BENCHMARK_CAPTURE(fn, name, __VA_ARGS__)                \
      ->Unit(benchmark::kMillisecond)                     \
      ->Iterations(iterations)                            \
      ->UseRealTime()

KILN_WALL_TIME_BENCH(BM_CompileSequential, volcano_default, 3, kVolcanoDefault);
KILN_WALL_TIME_BENCH(BM_CompileAll, volcano_default, 3, kVolcanoDefault);
KILN_WALL_TIME_BENCH(BM_CompileSequential, all_builtins, 3, AllBuiltinNames());
KILN_WALL_TIME_BENCH(BM_CompileAll, all_builtins, 3, AllBuiltinNames());
KILN_WALL_TIME_BENCH(BM_CompileAllBuiltinsShipped, sequential, 5, false);
KILN_WALL_TIME_BENCH(BM_CompileAllBuiltinsShipped, compile_all, 5, true);
KILN_WALL_TIME_BENCH(BM_WarmCache, sequential_all_builtins, 3, AllBuiltinNames(), false);
KILN_WALL_TIME_BENCH(BM_WarmCache, compile_all_all_builtins, 3, AllBuiltinNames(), true);

}  // namespace
}  // namespace kiln
