// What one `POST /whatif` costs the server (server/whatif.h) at 1000 nodes and 10,000 pods: the
// snapshot copy and its normalisation, then the off-path session with the job added (explained
// for the job's pods) and the answer's JSON. The HTTP round trip and the body's parsing are left
// out (scripts/bench-serve measures the whole request against a live kiln serve).
//
// The cluster: NODES nodes of 32 cpu / 128Gi, PODS one-cpu pods in gangs of 10, all Running and
// spread evenly (a settled cluster, the common case), in 4 queues; the job asked about is 10 pods
// of 1 cpu with minResources. Volcano's default conf.
//   BM_WhatIf/1000/10000              a copy of the cluster per request (before the shared copy)
//   BM_WhatIfShared/1000/10000        the copy kept ready, the session model built per request
//   BM_WhatIfPrebuilt/1000/10000      the target (< 100 ms): the copy and its model kept ready, as
//                                     kiln serve does; the request adds its job to the model
//   BM_WhatIfSnapshotCopy/1000/10000  of which the snapshot copy and normalisation
//   BM_WhatIfSessionOnly/1000/10000   the session alone, without the explanation
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>

#include "runtime/quantity.h"
#include "runtime/scheduler.h"
#include "server/policy_set.h"
#include "server/whatif.h"

namespace kiln::bench {
namespace {

ClusterSpec SettledCluster(int nodes, int pods) {
  ClusterSpec c;
  for (int q = 0; q < 4; ++q) {
    QueueSpec queue;
    queue.name = "q" + std::to_string(q);
    c.queues.push_back(queue);
  }
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n;
    n.name = fmt::format("node-{:04d}", i);
    n.allocatable.Set(kCpu, 32000);
    n.allocatable.Set(kMemory, 128.0 * 1024 * 1024 * 1024);
    n.allocatable.Set(kPods, 110);
    n.capacity = n.allocatable;
    c.nodes.push_back(std::move(n));
  }
  const int gang = 10;
  for (int j = 0; j < pods / gang; ++j) {
    PodGroupSpec g;
    g.name = fmt::format("job-{:05d}", j);
    g.namespace_ = "bench";
    g.queue = "q" + std::to_string(j % 4);
    g.min_member = gang;
    g.phase = PodGroupPhase::Running;
    c.pod_groups.push_back(g);
    for (int k = 0; k < gang; ++k) {
      PodSpec p;
      p.name = fmt::format("{}-{}", g.name, k);
      p.namespace_ = "bench";
      p.group = g.name;
      p.requests.Set(kCpu, 1000);
      p.requests.Set(kMemory, 1024.0 * 1024 * 1024);
      p.phase = PodPhase::Running;
      p.node = fmt::format("node-{:04d}", (j * gang + k) % nodes);
      c.pods.push_back(std::move(p));
    }
  }
  CompleteOptions complete;
  complete.now = 1'700'000'000'000'000'000;
  CompleteCluster(c, complete);
  return c;
}

server::WhatIfObjects TheJob() {
  server::WhatIfObjects o;
  PodGroupSpec g;
  g.name = "asked";
  g.namespace_ = "bench";
  g.queue = "q1";
  g.min_member = 10;
  Resource min;
  min.Set(kCpu, 10000);
  min.Set(kMemory, 10.0 * 1024 * 1024 * 1024);
  g.min_resources = min;
  o.group = g;
  for (int k = 0; k < 10; ++k) {
    PodSpec p;
    p.name = fmt::format("asked-{}", k);
    p.namespace_ = "bench";
    p.group = "asked";
    p.requests.Set(kCpu, 1000);
    p.requests.Set(kMemory, 1024.0 * 1024 * 1024);
    o.pods.push_back(std::move(p));
  }
  return o;
}

// Volcano's default conf with the built-in policies; null (the benchmark skipped) when it does not
// load.
std::shared_ptr<const server::PolicySet> DefaultSet(benchmark::State& state) {
  auto set = server::LoadPolicySet(server::PolicySources{}, server::CompiledProviderFactory(), 1);
  if (!set) {
    state.SkipWithError(set.error().Format().c_str());
    return nullptr;
  }
  return *set;
}

// The answer's JSON, as the server sends it; false (the benchmark skipped) when there is none.
bool Answered(benchmark::State& state, const Result<server::WhatIfAnswer>& answer, size_t* placed) {
  if (!answer) {
    state.SkipWithError(answer.error().Format().c_str());
    return false;
  }
  std::string json = server::WhatIfJson(*answer);
  benchmark::DoNotOptimize(json);
  *placed = answer->placements.size();
  return true;
}

void BM_WhatIf(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pods = static_cast<int>(state.range(1));
  auto set = DefaultSet(state);
  if (!set) return;
  const ClusterSpec live = SettledCluster(nodes, pods);
  const server::WhatIfObjects job = TheJob();
  const TimeNs now = 1'700'000'000'000'000'000;
  size_t placed = 0;
  for (auto _ : state) {
    ClusterSpec copy = live;  // what hooks.snapshot_spec hands over
    server::NormaliseLikeScenario(copy);
    if (!Answered(state, server::RunWhatIf(std::move(copy), job, *set, now), &placed)) return;
  }
  state.counters["placed"] = static_cast<double>(placed);
}
BENCHMARK(BM_WhatIf)->Args({1000, 10000})->Unit(benchmark::kMillisecond)->UseRealTime();

// What `kiln serve` does per request since the copy is kept ready (server/offpath_snapshot.h):
// the what-if on the published copy, normalised and completed once, outside the timed loop; the
// job's objects are completed alone, appended for the session and removed.
// With `prebuilt`, the copy's session model is built ahead of each request (OffPathCluster::spare,
// outside the timed part, as the publisher thread does after each what-if), and the request adds
// only its job to it; without, the request builds the whole copy with its job in it.
void WhatIfOnSharedCopy(benchmark::State& state, bool prebuilt) {
  auto set = DefaultSet(state);
  if (!set) return;
  server::OffPathCluster base;
  base.now = 1'700'000'000'000'000'000;
  base.spec = SettledCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  server::NormaliseLikeScenario(base.spec);
  CompleteOptions complete;
  complete.now = base.now;
  base.warnings = CompleteCluster(base.spec, complete);
  const server::WhatIfObjects job = TheJob();
  size_t placed = 0;
  for (auto _ : state) {
    if (prebuilt) {
      state.PauseTiming();
      base.spares.emplace_back(base.spec);
      state.ResumeTiming();
    }
    auto answer = server::RunWhatIfOn(base, job, *set);
    if (answer && answer->prebuilt != prebuilt) {
      state.SkipWithError("the what-if did not start from the model it was meant to");
      return;
    }
    if (!Answered(state, answer, &placed)) return;
  }
  state.counters["placed"] = static_cast<double>(placed);
}

void BM_WhatIfShared(benchmark::State& state) { WhatIfOnSharedCopy(state, /*prebuilt=*/false); }
BENCHMARK(BM_WhatIfShared)->Args({1000, 10000})->Unit(benchmark::kMillisecond)->UseRealTime();

// kiln serve since the model is built ahead (server/offpath_snapshot.h): the target (< 100 ms).
void BM_WhatIfPrebuilt(benchmark::State& state) { WhatIfOnSharedCopy(state, /*prebuilt=*/true); }
BENCHMARK(BM_WhatIfPrebuilt)->Args({1000, 10000})->Unit(benchmark::kMillisecond)->UseRealTime();

// The part of BM_WhatIf spent before the session: the snapshot copy and its normalisation.
void BM_WhatIfSnapshotCopy(benchmark::State& state) {
  const ClusterSpec live =
      SettledCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    ClusterSpec copy = live;
    server::NormaliseLikeScenario(copy);
    benchmark::DoNotOptimize(copy);
  }
}
BENCHMARK(BM_WhatIfSnapshotCopy)->Args({1000, 10000})->Unit(benchmark::kMillisecond)->UseRealTime();

// The same session as BM_WhatIf's, with the job added, without the explanation the answer is
// made from (what the session alone costs).
void BM_WhatIfSessionOnly(benchmark::State& state) {
  auto set = DefaultSet(state);
  if (!set) return;
  ClusterSpec live =
      SettledCluster(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const server::WhatIfObjects job = TheJob();
  live.pod_groups.push_back(*job.group);
  for (const PodSpec& p : job.pods) live.pods.push_back(p);
  CompleteOptions complete;
  complete.now = 1'700'000'000'000'000'000;
  CompleteCluster(live, complete);
  for (auto _ : state) {
    auto built = BuildCluster(live);
    auto r = RunSession(std::move(*built), set->conf, set->registry, complete.now, 0);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_WhatIfSessionOnly)->Args({1000, 10000})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kiln::bench
