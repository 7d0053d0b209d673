#pragma once
// Trace replay's measurements (scenario-format.md, "Trace replay and the simulation report"):
// what the cluster looked like after each session (`metrics`) and what the whole run did to each
// job and queue (`summary`).
//
// Definitions (docs/scenario-extensions.md repeats them for readers of the output):
//   * a metrics sample is taken after the session's decisions are applied, so it describes the
//     cluster from the session's time until the next session;
//   * `pending`: pods in the cluster (arrived) that are Pending without a node; `running`: pods
//     Running on a node;
//   * `utilisation` of a resource: Σ requests of the pods on nodes ÷ Σ allocatable of the nodes,
//     for every resource some node has except `pods`;
//   * `fragmentation` of a resource: of its free capacity (allocatable − requests of the pods on
//     the node, summed over nodes), the share that sits on nodes whose free amount is below the
//     median request of that resource among pending pods that ask for it (the lower median:
//     element ⌈n/2⌉ of the sorted requests). Present only for resources some pending pod asks for;
//     0 when nothing is free;
//   * per queue: `allocated` (requests of its pods on nodes), `deserved` (the figure named
//     `deserved` that the first plugin in conf order showing one reports through `show_queue`,
//     e.g. proportion's water-filling or capacity's), `pending` (its pending pods);
//   * a job arrives with its PodGroup's creationTimestamp; its first bind is the time of the
//     session that bound its first pod; it completes when its last pod finishes (start +
//     duration, the exact time, not the session that noticed); waiting time = first bind −
//     arrival; JCT = completion − arrival;
//   * percentiles use the nearest-rank definition: p-th percentile of n sorted values is the
//     value at 1-based rank ⌈p/100 · n⌉;
//   * the run's mean utilisation weights each sample by the time until the next sample (the last
//     one by one period);
//   * `gangsByTier` (clusters with HyperNodes): every job with a pod on a node counted under the
//     tier of the lowest HyperNode holding all its pods' nodes (the virtual top's tier when they
//     span trees, or when a node is under no HyperNode);
//   * waiting per queue split by topology mode: the same statistics over the jobs whose PodGroup
//     has a network topology of that mode ("hard", "soft") or none ("none"); only when some job
//     has one.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cluster_spec.h"
#include "runtime/model.h"
#include "runtime/resource.h"

namespace kiln {

struct QueueMetrics {
  Resource allocated;
  std::optional<Resource> deserved;
  int pending = 0;
};

// A compact record of why one pending pod stayed pending (the report's decision table): each
// distinct (plugin, reason) rejection with the number of nodes it rejected, and the best-scored
// nodes that passed. Bounded: a few pods per session, a few lines per pod.
struct PendingDigest {
  std::string pod;
  std::string reason;  // the session's FitError text
  struct Rejection {
    std::string plugin;
    std::string reason;
    int nodes = 0;
  };
  std::vector<Rejection> rejections;
  std::vector<std::pair<std::string, double>> best_nodes;  // node → total, best first
};

struct SessionMetrics {
  TimeNs time = 0;
  int pending = 0;
  int running = 0;
  std::vector<std::pair<std::string, double>> utilisation;    // resource → share, registry order
  std::vector<std::pair<std::string, double>> fragmentation;  // resource → share
  std::map<std::string, QueueMetrics> queues;
  std::vector<PendingDigest> explained;  // --report only
  std::vector<std::pair<int64_t, int>> gang_tiers;  // tier → gangs spanning it, ascending tier
};

struct JobRecord {
  std::string uid;
  std::string queue;
  TimeNs arrival = 0;
  std::optional<TimeNs> first_bind;
  std::optional<TimeNs> completion;
  std::string topology = "none";  // the PodGroup's networkTopology mode: "hard", "soft", "none"
};

struct WaitingStats {
  int jobs = 0;          // jobs of the queue that started (have a first bind)
  int not_started = 0;   // jobs that arrived and never got a pod bound
  double mean = 0, p50 = 0, p95 = 0, max = 0;  // seconds
};

struct TraceSummary {
  TimeNs start = 0;
  TimeNs end = 0;  // time of the last session run
  int sessions_run = 0;
  int sessions_skipped = 0;  // periods skipped because they provably decided nothing
  std::string stopped;       // "cycles", "until" or "idle"
  std::vector<JobRecord> jobs;  // by uid
  std::map<std::string, WaitingStats> queues;
  // queue → topology mode → waiting; empty when no job has a network topology.
  std::map<std::string, std::map<std::string, WaitingStats>> queues_by_topology;
  std::vector<std::pair<std::string, double>> mean_utilisation;
};

// The cluster as it stands, measured. `deserved` holds each queue's shown deserved figure.
SessionMetrics MeasureCluster(const ClusterSpec& cluster, TimeNs time,
                              const std::map<std::string, Resource>& deserved);

// Nearest-rank percentile of `sorted` (ascending, not empty); p in (0, 100].
double NearestRankPercentile(const std::vector<double>& sorted, double p);

// Per-queue waiting statistics and the time-weighted mean utilisation.
void Summarize(const std::vector<SessionMetrics>& samples, DurationNs period,
               TraceSummary& summary);

}  // namespace kiln
