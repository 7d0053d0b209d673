// The speed limit scripts/bench compares a session with: the same cluster placed by plain,
// single-threaded C++ doing the core of Volcano's allocate and nothing else. For every pending
// pod, walk the nodes from a rotating start until NumNodesToFind feasible ones are found (each
// requested dimension fits the node's idle, with Volcano's 0.1 tolerance), score each, bind to the
// best (first on ties) and update the node's accounting. No gang, no queues, no tiers, no plugins:
// a bound on what any policy engine can reach on this machine.
//
// The loop touches no Kiln type: the cluster is read once into dense struct-of-arrays doubles
// (one array per dimension, one element per node) and the pods into flat records, so what is
// timed is what a hand-written scheduler would run. Three scorers, one per conf scripts/bench
// runs, so that each session is divided by the limit doing the same work:
//   BM_SampledLimitFit       no scorer (plugin-free): the first feasible node of the sample;
//   BM_SampledLimit          Kubernetes' least-allocated on the non-zero requests, with its
//                            integer arithmetic (the default conf's nodeorder, reduced to it);
//   BM_SampledLimitBinpack   least-allocated plus Volcano's binpack (cpu and memory, weight 1),
//                            in floating point as policies/binpack.policy computes it.
//
// Reads the scenario from $KILN_BENCH_SCENARIO (scripts/bench sets it). Without it the
// benchmark reports an error state rather than a number.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "runtime/actions/helpers.h"
#include "runtime/cluster_spec.h"
#include "runtime/model.h"
#include "simulator/scenario.h"

namespace kiln {
namespace {

enum class Scorer { kNone, kLeastAllocated, kLeastAllocatedBinpack };

// The nodes as columns. Extended resources (GPUs, ...) get one idle column each, indexed by the
// position of their name in `scalar_ids`.
struct NodeColumns {
  std::vector<double> idle_cpu, idle_memory;
  std::vector<double> used_cpu, used_memory;        // binpack's "used"
  std::vector<double> nonzero_cpu, nonzero_memory;  // least-allocated's "requested"
  std::vector<double> cap_cpu, cap_memory;
  std::vector<std::vector<double>> idle_scalar;
};

struct ScalarRequest {
  uint32_t column;
  double value;
};

struct PodRow {
  double cpu, memory;
  double nonzero_cpu, nonzero_memory;
  uint32_t first_scalar, scalar_count;  // a range of PodTable::scalars
};

struct PodTable {
  std::vector<PodRow> rows;
  std::vector<ScalarRequest> scalars;
};

constexpr double kTolerance = 0.1;  // Volcano's minResource, as Resource::LessEqual applies it

inline bool Fits(double request, double idle) {
  return request < idle || std::abs(request - idle) < kTolerance;
}

inline int64_t LeastAllocated(double requested, double capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  const auto cap = static_cast<int64_t>(capacity);
  return (cap - static_cast<int64_t>(requested)) * 100 / cap;
}

// policies/binpack.policy's node_order for cpu and memory at weight 1: 0 when either would
// exceed the node's capacity, else the mean of (request + used) / capacity, times 100.
inline double Binpack(const PodRow& pod, const NodeColumns& n, size_t i) {
  double score = 0;
  int weights = 0;
  // One dimension: adds its share and weight; false when the request would exceed the capacity.
  auto add = [&](double request, double used_now, double cap) {
    if (request == 0) return true;
    if (cap != 0) {
      const double used = request + used_now;
      if (used > cap) return false;
      score += used / cap;
    }
    ++weights;
    return true;
  };
  if (!add(pod.cpu, n.used_cpu[i], n.cap_cpu[i])) return 0;
  if (!add(pod.memory, n.used_memory[i], n.cap_memory[i])) return 0;
  return weights > 0 ? score / weights * 100 : 0;
}

// The scenario $KILN_BENCH_SCENARIO names, or nullopt after marking `state` as skipped.
std::optional<ScenarioSpec> BenchScenario(benchmark::State& state) {
  const char* path = std::getenv("KILN_BENCH_SCENARIO");
  if (path == nullptr) {
    state.SkipWithError("set KILN_BENCH_SCENARIO to a scenario file");
    return std::nullopt;
  }
  auto spec = LoadScenarioFile(path);
  if (!spec) {
    state.SkipWithError(spec.error().Format().c_str());
    return std::nullopt;
  }
  return std::move(*spec);
}

double NonZero(double v, double fallback) { return v > 0 ? v : fallback; }

// Reads the cluster into columns (not timed): Kiln's types are used here and nowhere after.
void ReadColumns(const Cluster& cluster, NodeColumns& nodes, PodTable& pods) {
  std::vector<ResourceId> scalar_ids;
  auto column_of = [&](ResourceId id) {
    for (size_t c = 0; c < scalar_ids.size(); ++c)
      if (scalar_ids[c] == id) return static_cast<uint32_t>(c);
    scalar_ids.push_back(id);
    nodes.idle_scalar.emplace_back();
    return static_cast<uint32_t>(scalar_ids.size() - 1);
  };
  for (const Task* t : cluster.tasks()) {
    if (t->status != TaskStatus::Pending) continue;
    PodRow row{t->resreq().cpu(), t->resreq().memory(), NonZero(t->resreq().cpu(), 100),
               NonZero(t->resreq().memory(), 209715200), static_cast<uint32_t>(pods.scalars.size()),
               0};
    ForEachBit(t->resreq().scalar_mask(), [&](ResourceId id) {
      pods.scalars.push_back({column_of(id), t->resreq().Get(id)});
      ++row.scalar_count;
    });
    pods.rows.push_back(row);
  }
  for (const Node* n : cluster.nodes()) {
    nodes.idle_cpu.push_back(n->idle.cpu());
    nodes.idle_memory.push_back(n->idle.memory());
    nodes.used_cpu.push_back(n->used.cpu());
    nodes.used_memory.push_back(n->used.memory());
    nodes.nonzero_cpu.push_back(n->nonzero_requested.cpu());
    nodes.nonzero_memory.push_back(n->nonzero_requested.memory());
    nodes.cap_cpu.push_back(n->allocatable.cpu());
    nodes.cap_memory.push_back(n->allocatable.memory());
    for (size_t c = 0; c < scalar_ids.size(); ++c)
      nodes.idle_scalar[c].push_back(n->idle.Get(scalar_ids[c]));
  }
}

// One pass over every pending pod; returns the binds.
int64_t PlaceAll(NodeColumns& nodes, const PodTable& pods, size_t want, Scorer scorer) {
  const size_t n = nodes.idle_cpu.size();
  size_t rotation = 0;
  int64_t binds = 0;
  for (const PodRow& pod : pods.rows) {
    const ScalarRequest* scalars = pods.scalars.data() + pod.first_scalar;
    size_t found = 0, best = n, checked = 0;
    double best_score = -1;
    for (; checked < n && found < want; ++checked) {
      size_t i = rotation + checked;
      if (i >= n) i -= n;
      if (!Fits(pod.cpu, nodes.idle_cpu[i]) || !Fits(pod.memory, nodes.idle_memory[i])) continue;
      bool fits = true;
      for (uint32_t s = 0; s < pod.scalar_count && fits; ++s)
        fits = Fits(scalars[s].value, nodes.idle_scalar[scalars[s].column][i]);
      if (!fits) continue;
      ++found;
      if (scorer == Scorer::kNone) {
        if (best == n) best = i;
        continue;
      }
      double score = static_cast<double>(
          (LeastAllocated(nodes.nonzero_cpu[i] + pod.nonzero_cpu, nodes.cap_cpu[i]) +
           LeastAllocated(nodes.nonzero_memory[i] + pod.nonzero_memory, nodes.cap_memory[i])) /
          2);
      if (scorer == Scorer::kLeastAllocatedBinpack) score += Binpack(pod, nodes, i);
      if (score > best_score) best_score = score, best = i;
    }
    rotation = (rotation + checked) % n;
    if (best == n) continue;
    nodes.idle_cpu[best] -= pod.cpu;
    nodes.idle_memory[best] -= pod.memory;
    nodes.used_cpu[best] += pod.cpu;
    nodes.used_memory[best] += pod.memory;
    nodes.nonzero_cpu[best] += pod.nonzero_cpu;
    nodes.nonzero_memory[best] += pod.nonzero_memory;
    for (uint32_t s = 0; s < pod.scalar_count; ++s)
      nodes.idle_scalar[scalars[s].column][best] -= scalars[s].value;
    ++binds;
  }
  return binds;
}

void SampledLimit(benchmark::State& state, Scorer scorer) {
  auto spec = BenchScenario(state);
  if (!spec) return;
  auto cluster = BuildCluster(spec->cluster);
  if (!cluster) {
    state.SkipWithError(cluster.error().Format().c_str());
    return;
  }
  NodeColumns base;
  PodTable pods;
  ReadColumns(*cluster, base, pods);
  if (base.idle_cpu.empty()) {
    state.SkipWithError("the scenario has no nodes");
    return;
  }
  const auto want = static_cast<size_t>(
      actions::NumNodesToFind(static_cast<int>(base.idle_cpu.size())));
  int64_t binds = 0;
  for (auto _ : state) {
    state.PauseTiming();
    NodeColumns nodes = base;  // the copy is setup, not placement
    state.ResumeTiming();
    binds = PlaceAll(nodes, pods, want, scorer);
    benchmark::DoNotOptimize(binds);
  }
  state.counters["binds"] = static_cast<double>(binds);
  state.counters["pods_per_s"] =
      benchmark::Counter(static_cast<double>(binds), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SampledLimitFit(benchmark::State& state) { SampledLimit(state, Scorer::kNone); }
void BM_SampledLimit(benchmark::State& state) { SampledLimit(state, Scorer::kLeastAllocated); }
void BM_SampledLimitBinpack(benchmark::State& state) {
  SampledLimit(state, Scorer::kLeastAllocatedBinpack);
}

BENCHMARK(BM_SampledLimitFit)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SampledLimit)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SampledLimitBinpack)->Unit(benchmark::kMillisecond);

// The snapshot a session starts from: BuildCluster over the scenario's cluster (what
// SimulatedCluster::Snapshot does each cycle), without the load.
void BM_BuildCluster(benchmark::State& state) {
  auto spec = BenchScenario(state);
  if (!spec) return;
  size_t tasks = 0;
  for (auto _ : state) {
    auto cluster = BuildCluster(spec->cluster);
    if (!cluster) {
      state.SkipWithError(cluster.error().Format().c_str());
      return;
    }
    tasks = cluster->tasks().size();
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

BENCHMARK(BM_BuildCluster)->Unit(benchmark::kMillisecond);

// The snapshot kiln serve takes once every pod is bound: the copy of the objects, CompleteCluster
// and BuildCluster over the scenario's cluster with each pending pod put Running on a node
// (spread over all of them). The scenario binds a fifth of its pods; a live cluster most of
// them, and every bound pod's node is looked up by name in each step.
void BM_SnapshotAllBound(benchmark::State& state) {
  auto spec = BenchScenario(state);
  if (!spec) return;
  ClusterSpec bound = spec->cluster;
  if (bound.nodes.empty()) {
    state.SkipWithError("the scenario has no nodes");
    return;
  }
  for (size_t i = 0; i < bound.pods.size(); ++i) {
    PodSpec& p = bound.pods[i];
    if (!p.node.empty()) continue;
    p.node = bound.nodes[(i * 7919) % bound.nodes.size()].name;
    p.phase = PodPhase::Running;
  }
  using Ms = std::chrono::duration<double, std::milli>;
  double copy_ms = 0, complete_ms = 0, build_ms = 0;
  size_t tasks = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    ClusterSpec c = bound;
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<ClusterWarning> warnings = CompleteCluster(c, CompleteOptions{});
    const auto t2 = std::chrono::steady_clock::now();
    auto cluster = BuildCluster(c);
    const auto t3 = std::chrono::steady_clock::now();
    if (!cluster) {
      state.SkipWithError(cluster.error().Format().c_str());
      return;
    }
    tasks = cluster->tasks().size();
    copy_ms += Ms(t1 - t0).count();
    complete_ms += Ms(t2 - t1).count();
    build_ms += Ms(t3 - t2).count();
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["copy_ms"] = copy_ms / runs;
  state.counters["complete_ms"] = complete_ms / runs;
  state.counters["build_ms"] = build_ms / runs;
  state.counters["tasks"] = static_cast<double>(tasks);
}

BENCHMARK(BM_SnapshotAllBound)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kiln
