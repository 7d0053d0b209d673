#pragma once
// Seeded random clusters for randomized testing: nodes with varied allocatable (some tainted),
// queues with weights, PodGroups (gangs) at three priorities, some already running, and their
// pods. The randomized-session invariants test (tests/unit/simulator/random_sessions_test.cc) and
// `kiln test --compare` (differential testing of a policy against a reference) share it.
//
// A RandomCluster is kept as plain structs, not YAML, so a failing one can be shrunk (remove
// objects, simplify quantities) and rendered again as a scenario file after every step.
// The same seed always gives the same cluster.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct RandomNode {
  std::string name;
  int64_t cpu_milli = 0, memory_mi = 0;
  bool tainted = false;  // dedicated=x:NoSchedule, which only pods with `tolerates` tolerate
  std::string zone;      // label topology.kubernetes.io/zone ("" = none; rich clusters only)
  int gpus = 0;          // allocatable nvidia.com/gpu (clusters with GPUs only)
};
struct RandomQueue {
  std::string name;
  int weight = 1;
};
struct RandomGroup {
  std::string name, queue;
  int min_member = 1;
  int priority = 0;  // 0 low, 1 mid, 2 high (priority classes of value 10, 100, 1000)
  bool running = false;
};
struct RandomPod {
  std::string name, group;
  int64_t cpu_milli = 0, memory_mi = 0;
  std::string node;  // Running on it when set; Pending otherwise
  // Rich clusters only (RandomClusterOptions::rich); the defaults render nothing.
  std::string app;        // label app=<app>: what PDBs and anti-affinity select
  std::string zone;       // required node affinity: topology.kubernetes.io/zone In [zone]
  bool tolerates = false;      // tolerates dedicated=x:NoSchedule
  bool anti_affinity = false;  // required pod anti-affinity to its own app, per hostname
  bool preemptable = true;     // annotation volcano.sh/preemptable: "false" when not
  bool never_preempts = false;  // preemptionPolicy: Never
  int gpus = 0;                 // requested nvidia.com/gpu (clusters with GPUs only)
};
struct RandomPdb {
  std::string name, app;  // selects the pods labelled app=<app>
  int min_available = 1;
  int disruptions_allowed = 0;  // the status the pdb plugin reads
};

struct RandomCluster {
  uint64_t seed = 0;
  std::string conf;  // scheduler.conf text
  std::vector<RandomNode> nodes;
  std::vector<RandomQueue> queues;
  std::vector<RandomGroup> groups;
  std::vector<RandomPod> pods;  // namespace c1
  std::vector<RandomPdb> pdbs;  // namespace c1 (rich clusters only)

  // Objects in it (nodes + queues + groups + pods + pdbs): what shrinking reduces.
  size_t size() const {
    return nodes.size() + queues.size() + groups.size() + pods.size() + pdbs.size();
  }
};

struct RandomClusterOptions {
  // The confs to pick from (one per cluster, chosen by the seed); empty: DefaultRandomConfs().
  std::vector<std::string> confs;
  int max_nodes = 8, max_queues = 3, max_groups = 8, max_group_size = 5;
  // Rich clusters (the soak's): sizes from tiny to thousands of pods (the max_* above are
  // ignored), zones, tolerations, node and pod anti-affinity, non-preemptable pods, pods that
  // never preempt and PDBs, and confs from RichRandomConfs() unless `confs` is set. What the
  // plain generator draws for a seed does not change with this option's existence: the rich
  // features come from a second random stream.
  bool rich = false;
  // GPUs: an extended resource, nvidia.com/gpu, on about half of the nodes (1-8 each) and
  // requested by about a third of the pods (1-4 each). Drawn from a stream of their own, like the
  // rich features, so the other draws of a seed do not change with it.
  bool gpus = false;
};

// Volcano's default plugin set; preemption and reclaim; no gang (tasks place one by one).
const std::vector<std::string>& DefaultRandomConfs();

// Confs that together run every built-in plugin but the extender (which needs an HTTP server)
// and every action: the default conf with binpack, preemption and reclaim with pdb, capacity
// instead of proportion, the plugins Volcano leaves out of its default, priority deciding
// preempt's victims alone, and shuffle.
const std::vector<std::string>& RichRandomConfs();

RandomCluster GenerateRandomCluster(uint64_t seed, const RandomClusterOptions& options = {});

// The cluster as a scenario file (scenario-format.md) named `name`, with `extra` (an `expect:`
// block, `notes:`; already YAML) appended. `conf` overrides the cluster's conf when not empty.
std::string RenderScenario(const RandomCluster& c, const std::string& name,
                           const std::string& extra = "", const std::string& conf = "");

// Structural checks a shrinking step must keep: every group's queue exists, every pod's group
// and node exist, running pods fit their node, 1 <= minMember <= the group's pod count.
bool IsConsistent(const RandomCluster& c);

// Shrinks `c` while `interesting(candidate)` stays true (a difference persists): removes queues
// (with their groups), nodes (with the pods running there), groups (with their pods), single
// pods, then simplifies what is left (quantities to round values, weights and priorities to
// their defaults, taints and gang sizes away) — repeated until nothing more can go. Only
// consistent candidates are tried. `interesting(c)` itself is assumed true. At most
// `max_attempts` candidates are evaluated.
struct ShrinkStats {
  int attempts = 0;  // candidates evaluated
  int accepted = 0;  // candidates that kept the difference
};
RandomCluster ShrinkRandomCluster(RandomCluster c,
                                  const std::function<bool(const RandomCluster&)>& interesting,
                                  ShrinkStats* stats = nullptr, int max_attempts = 5000);

}  // namespace kiln
