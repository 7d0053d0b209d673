#pragma once
// The hot handlers of the built-in policies, JIT-compiled vs the same algorithm hand-written in
// C++ (issue #15's goal: JIT/C++ ≤ 1.05 on every built-in handler).
//
// Pairs are named BM_Jit<X> / BM_Native<X>; tests/bench/handler_ratios.py runs them and prints
// `handler | jit ns | native ns | ratio` (ns per handler call: the benchmarks that loop over a
// node or job list report the number of calls per iteration in the `calls` counter).
//
// What is compared — like-for-like, as in jit_bench.cc:
//  * Both sides live in one open session (bench_session.h: PairSession) on the fixed cluster
//    (300 nodes, 6000 placed pods, 600 jobs, 4 queues), registered side by side in one tier; the
//    JIT side is the built-in policy with the arguments of the benchmark's conf, the native side
//    a C++ plugin reading the same runtime objects and doing the policy's algorithm with the same
//    arithmetic (float/int conversions, summation order, Volcano's Resource methods behind the
//    stdlib's resource natives, the stdlib's Kubernetes matchers where the policy calls them).
//  * The timed loop calls each side's raw handler through a volatile function pointer with its
//    context, exactly as the session's dispatchers do; the session's CallScope is not included.
//  * Natural C++ data structures: per-object state in arrays indexed by the objects' dense
//    indexes (the runtime gives every object one for this), string-keyed state in std::map, ids
//    of resource names looked up once at open. Where the JIT does more work for the same answer
//    (a map lookup, a host call per field), the ratio shows it: that is what it is for.
//  * Before any timing, Check* runs both sides on every input of the benchmark and aborts the
//    process on the first difference (the ctest smoke run relies on this), so the ratio compares
//    equal work.
//
// nodeorder's leastrequested/mostrequested: the C++ side reads the per-node Σ of the placed pods'
// non-zero cpu/memory requests from an array computed once at open (Kubernetes' NonZeroRequested,
// which the runtime is to maintain as `node.nonzero_requested`); the policy on this branch still
//
// This header holds what the families share (the language's conversions, the timed loops, the
// per-(policy, arguments) session cache and the node_order check); each family's natives and
// benchmarks are in handler_bench_<family>.cc.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stdlib/k8s_natives.h"
#include "stdlib/natives.h"
#include "tests/bench/bench_session.h"

namespace kiln::bench {

// ---- helpers mirroring the language's conversions and resource operators --------------------

// int(x) on a float: truncates toward zero, NaN → 0, saturates (codegen's fptosi.sat).
inline int64_t IntOf(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (x <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// The language's `a - b` on Resources (kiln_rt_res_sub): never below zero per dimension.
inline Resource LangSub(const Resource& a, const Resource& b) {
  Resource out = a;
  out.SubWithoutAssert(b);
  for (double& v : out.values)
    if (v < 0) v = 0;
  return out;
}

inline Resource LangAdd(const Resource& a, const Resource& b) {
  Resource out = a;
  out.Add(b);
  return out;
}

inline const ConfValue* FindArg(const PluginOption& o, std::string_view key) {
  for (const auto& [k, v] : o.arguments)
    if (k == key) return &v;
  return nullptr;
}
inline int64_t ArgInt(const PluginOption& o, std::string_view key, int64_t def) {
  const ConfValue* v = FindArg(o, key);
  if (!v) return def;
  if (auto* i = std::get_if<int64_t>(&v->value)) return *i;
  Die("argument " + std::string(key) + " is not an int");
}
inline std::string ArgString(const PluginOption& o, std::string_view key, std::string def) {
  const ConfValue* v = FindArg(o, key);
  if (!v) return def;
  if (auto* s = std::get_if<std::string>(&v->value)) return *s;
  return v->text;
}

inline ResourceId Rid(std::string_view name) {
  auto id = ResourceRegistry::Intern(name);
  if (!id.ok()) Die("resource registry full");
  return *id;
}

// A label's value, or null when the map has no such key.
inline const std::string* Label(const StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

// Topology spread's node inclusion policies (predicates and nodeorder both define it):
// nodeAffinityPolicy Honor (default) keeps nodes the pod's required affinity admits;
// nodeTaintsPolicy Honor keeps nodes whose NoSchedule/NoExecute taints it tolerates.
inline bool SpreadIncludes(const TopologySpreadConstraint& c, const Task* task, const Node* n) {
  if (c.node_affinity_policy != "Ignore" && !kiln_std_required_node_affinity_matches(task, n))
    return false;
  if (c.node_taints_policy == "Honor")
    for (const Taint& taint : n->taints)
      if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") &&
          !kiln_std_task_tolerates(task, &taint))
        return false;
  return true;
}

// The timed loops: one handler call per element (per node, per job pair, ...), through a volatile
// function pointer; the `calls` counter (calls per iteration) lets handler_ratios.py report ns
// per call.
template <typename Fn>
void PerNode(benchmark::State& state, Fn fn, void* ctx, const Task* t,
             const std::vector<const Node*>& nodes) {
  Fn volatile target = fn;
  for (auto _ : state)
    for (const Node* n : nodes) {
      if constexpr (std::is_same_v<Fn, HandlerFn<ExtensionPoint::NodeOrder>>) {
        double score = 0;
        benchmark::DoNotOptimize(target(ctx, t, n, &score));
        benchmark::DoNotOptimize(score);
      } else {
        benchmark::DoNotOptimize(target(ctx, t, n, static_cast<KStatusOut*>(nullptr)));
      }
    }
  state.counters["calls"] = static_cast<double>(nodes.size());
}

inline std::vector<const Node*> AllNodes(PairSession& p) {
  return {p.cluster().nodes().begin(), p.cluster().nodes().end()};
}

// Registers a native's handlers `fns` for the points P… with `ctx` (the native) as their
// context; what its OnSessionOpen then returns.
template <ExtensionPoint... P>
Status RegisterHandlers(Session& ssn, PluginHandle self, void* ctx, HandlerFn<P>... fns) {
  (ssn.Register<P>(self, ctx, fns), ...);
  return Status::Ok();
}

// ============================================================================================
// Sessions, checks and benchmarks

template <typename N>
std::function<std::unique_ptr<Plugin>(const PluginOption&)> Make() {
  return [](const PluginOption& o) { return std::make_unique<N>(o); };
}

// One session per (policy, arguments); opened and checked on first use.
inline PairSession& Pair(const std::string& key, const std::string& policy,
                         const std::string& args,
                         std::function<std::unique_ptr<Plugin>(const PluginOption&)> make,
                         void (*check)(PairSession&, const std::string&)) {
  static std::map<std::string, std::unique_ptr<PairSession>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto p = OpenPairSession(policy, args, std::move(make));
  check(*p, key);
  return *cache.emplace(key, std::move(p)).first->second;
}

[[noreturn]] inline void Mismatch(const std::string& key, const std::string& what) {
  Die("JIT and C++ disagree (" + key + "): " + what);
}

// node_order of both sides on every benchmark task × every node, through the session.
inline void CheckNodeOrder(PairSession& p, const std::string& key) {
  int compared = 0;
  for (BenchTask bt : kBenchTasks) {
    const Task* t = p.task(bt);
    for (const Node* n : p.cluster().nodes()) {
      std::string error;
      auto each = p.session->NodeOrderEach(t, n, &error);
      if (!error.empty() || each.size() != 2)
        Mismatch(key, "node_order failed for " + t->uid + " on " + n->name + ": " + error);
      if (each[0].second != each[1].second)
        Mismatch(key, fmt::format("node_order({}, {}): jit {} native {}", t->uid, n->name,
                                  each[0].second, each[1].second));
      ++compared;
    }
  }
  if (compared == 0) Mismatch(key, "nothing compared");
}

// node_order of one task over every node.
template <typename N>
void NodeOrderBench(benchmark::State& s, PairSession& p, BenchTask bt, bool jit) {
  auto nodes = AllNodes(p);
  if (jit)
    PerNode(s, p.jit->Fn<ExtensionPoint::NodeOrder>(), p.jit->ctx(), p.task(bt), nodes);
  else
    PerNode(s, HandlerFn<ExtensionPoint::NodeOrder>(&N::NodeOrder), static_cast<N*>(p.native),
            p.task(bt), nodes);
}

#define KILN_NODE_ORDER_PAIR(Name, pair_expr, N, task)                                          \
  void BM_Jit##Name(benchmark::State& s) { NodeOrderBench<N>(s, pair_expr, task, true); }       \
  void BM_Native##Name(benchmark::State& s) { NodeOrderBench<N>(s, pair_expr, task, false); }   \
  BENCHMARK(BM_Jit##Name);                                                                       \
  BENCHMARK(BM_Native##Name);

}  // namespace kiln::bench
