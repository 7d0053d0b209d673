// The speed limit scripts/bench compares a session with: the same cluster placed by plain,
// single-threaded C++ doing the core of Volcano's allocate and nothing else — for every pending
// pod, walk the nodes from a rotating start until NumNodesToFind feasible ones are found
// (resources and the pods count), score each with Kubernetes' least-allocated scorer on the
// non-zero requests, bind to the best (first on ties) and update the node's accounting. No gang,
// no queues, no tiers, no plugins: a bound on what any policy engine can reach on this machine.
//
// Reads the scenario from $KILN_BENCH_SCENARIO (scripts/bench sets it). Without it the
// benchmark reports an error state rather than a number.

#include <benchmark/benchmark.h>

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

struct PlainNode {
  Resource idle;
  double nonzero_cpu = 0, nonzero_memory = 0;
  double cap_cpu = 0, cap_memory = 0;
};

struct PlainPod {
  Resource request;
  double nonzero_cpu = 0, nonzero_memory = 0;
};

double NonZero(double v, double fallback) { return v > 0 ? v : fallback; }

int64_t LeastAllocated(double requested, double capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  const auto cap = static_cast<int64_t>(capacity);
  return (cap - static_cast<int64_t>(requested)) * 100 / cap;
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

void BM_SampledLimit(benchmark::State& state) {
  auto spec = BenchScenario(state);
  if (!spec) return;
  auto cluster = BuildCluster(spec->cluster);
  if (!cluster) {
    state.SkipWithError(cluster.error().Format().c_str());
    return;
  }
  std::vector<PlainNode> base_nodes;
  for (const Node* n : cluster->nodes()) {
    PlainNode p;
    p.idle = n->idle;
    p.nonzero_cpu = n->nonzero_requested.cpu();
    p.nonzero_memory = n->nonzero_requested.memory();
    p.cap_cpu = n->allocatable.cpu();
    p.cap_memory = n->allocatable.memory();
    base_nodes.push_back(p);
  }
  std::vector<PlainPod> pods;
  for (const Task* t : cluster->tasks()) {
    if (t->status != TaskStatus::Pending) continue;
    pods.push_back({t->resreq, NonZero(t->resreq.cpu(), 100), NonZero(t->resreq.memory(), 209715200)});
  }
  const size_t n = base_nodes.size();
  const size_t want = static_cast<size_t>(actions::NumNodesToFind(static_cast<int>(n)));
  int64_t binds = 0;
  for (auto _ : state) {
    std::vector<PlainNode> nodes = base_nodes;
    size_t rotation = 0;
    binds = 0;
    for (const PlainPod& pod : pods) {
      size_t found = 0, best = n, checked = 0;
      int64_t best_score = -1;
      for (; checked < n && found < want; ++checked) {
        const size_t i = (rotation + checked) % n;
        PlainNode& node = nodes[i];
        if (!pod.request.LessEqual(node.idle, DimensionDefault::Zero)) continue;
        ++found;
        const int64_t score = (LeastAllocated(node.nonzero_cpu + pod.nonzero_cpu, node.cap_cpu) +
                               LeastAllocated(node.nonzero_memory + pod.nonzero_memory,
                                              node.cap_memory)) /
                              2;
        if (score > best_score) best_score = score, best = i;
      }
      rotation = (rotation + checked) % n;
      if (best == n) continue;
      PlainNode& node = nodes[best];
      node.idle.SubUnchecked(pod.request);
      node.nonzero_cpu += pod.nonzero_cpu;
      node.nonzero_memory += pod.nonzero_memory;
      ++binds;
    }
    benchmark::DoNotOptimize(binds);
  }
  state.counters["binds"] = static_cast<double>(binds);
  state.counters["pods_per_s"] =
      benchmark::Counter(static_cast<double>(binds), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_SampledLimit)->Unit(benchmark::kMillisecond);

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

}  // namespace
}  // namespace kiln
