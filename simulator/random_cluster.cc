#include "simulator/random_cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string_view>

#include "runtime/conf.h"
#include "runtime/text_util.h"

namespace kiln {

namespace {

// A conf's text: the actions, then one tier per list of plugins, each a name with any argument
// lines after it ("drf\n    enableHierarchy: false").
std::string ConfText(std::string_view actions,
                     std::initializer_list<std::initializer_list<std::string_view>> tiers) {
  std::string out = fmt::format("actions: \"{}\"\ntiers:\n", actions);
  for (const auto& tier : tiers) {
    out += "- plugins:\n";
    for (std::string_view plugin : tier) out += fmt::format("  - name: {}\n", plugin);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& DefaultRandomConfs() {
  static const std::vector<std::string> confs = {
      // Volcano's default conf with binpack.
      std::string(DefaultSchedulerConfText()) + "  - name: binpack\n",
      ConfText("enqueue, allocate, preempt, reclaim, backfill",
               {{"priority", "gang", "conformance"}, {"drf", "predicates", "proportion", "nodeorder"}}),
      ConfText("allocate, backfill", {{"priority", "predicates", "binpack"}}),
  };
  return confs;
}

const std::vector<std::string>& RichRandomConfs() {
  static const std::vector<std::string> confs = [] {
    std::vector<std::string> out = DefaultRandomConfs();
    out.push_back(ConfText("enqueue, allocate, preempt, reclaim, backfill",
                           {{"priority", "gang", "conformance", "pdb"},
                            {"overcommit", "drf\n    enableHierarchy: false", "predicates", "capacity",
                             "nodeorder", "binpack"}}));
    out.push_back(ConfText("enqueue, allocate, preempt, backfill",
                           {{"priority", "gang", "sla", "cdp"},
                            {"overcommit", "drf", "predicates", "proportion", "resourcequota",
                             "resource-strategy-fit", "task-topology", "nodegroup", "usage"}}));
    // priority has the last word on preempt's victims here (drf's Preemptable is off): the
    // session checker then also holds preempt to lower-priority victims.
    out.push_back(ConfText("enqueue, allocate, preempt, backfill",
                           {{"gang", "conformance", "priority"},
                            {"drf\n    enablePreemptable: false", "predicates", "proportion", "nodeorder"}}));
    out.push_back(ConfText("allocate, shuffle",
                           {{"priority", "gang", "conformance", "pdb"}, {"predicates", "nodeorder"}}));
    return out;
  }();
  return confs;
}

namespace {

// The rich features, drawn from their own stream so that the plain generator's draws are the
// same with or without them.
void AddRichFeatures(RandomCluster& c, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  static const char* const kZones[] = {"a", "b", "c"};
  for (auto& n : c.nodes) n.zone = kZones[pick(0, 2)];
  int n_apps = pick(1, 4);
  for (auto& p : c.pods) {
    if (pick(0, 2) == 0) p.app = fmt::format("app{}", pick(0, n_apps - 1));
    if (pick(0, 7) == 0) p.zone = kZones[pick(0, 2)];
    p.tolerates = pick(0, 3) == 0;
    p.anti_affinity = !p.app.empty() && pick(0, 5) == 0;
    p.preemptable = pick(0, 5) != 0;
    p.never_preempts = pick(0, 9) == 0;
  }
  for (int i = 0, n = pick(0, n_apps); i < n; ++i)
    c.pdbs.push_back({fmt::format("pdb{}", i), fmt::format("app{}", i), pick(0, 3), pick(0, 2)});
}

// GPUs on nodes and in pods' requests, from their own stream. A running pod asks for GPUs only
// when its node has them left, so the snapshot stays a state a cluster can be in.
void AddGpus(RandomCluster& c, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0xc2b2ae3d27d4eb4fULL);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::map<std::string, int> free;
  for (auto& n : c.nodes) {
    if (pick(0, 1) == 0) n.gpus = pick(1, 8);
    free[n.name] = n.gpus;
  }
  for (auto& p : c.pods) {
    if (pick(0, 2) != 0) continue;
    int want = pick(1, 4);
    if (!p.node.empty()) {
      int& left = free[p.node];
      if (left < want) continue;
      left -= want;
    }
    p.gpus = want;
  }
}

}  // namespace

RandomCluster GenerateRandomCluster(uint64_t seed, const RandomClusterOptions& options) {
  const std::vector<std::string>& confs =
      !options.confs.empty() ? options.confs : options.rich ? RichRandomConfs() : DefaultRandomConfs();
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  RandomCluster c;
  c.seed = seed;
  c.conf = confs[static_cast<size_t>(pick(0, static_cast<int>(confs.size()) - 1))];
  int max_nodes = options.max_nodes, max_queues = options.max_queues,
      max_groups = options.max_groups, max_group_size = options.max_group_size;
  if (options.rich) {
    // Mostly small clusters, where a violation is easy to read, with a tail of large ones: a
    // tenth reach hundreds of nodes and thousands of pods.
    std::mt19937_64 size_rng(seed ^ 0x5bd1e995ULL);
    int size_class = std::uniform_int_distribution<int>(0, 9)(size_rng);
    if (size_class < 6) {
      max_nodes = 8, max_queues = 3, max_groups = 10, max_group_size = 5;
    } else if (size_class < 9) {
      max_nodes = 48, max_queues = 5, max_groups = 60, max_group_size = 8;
    } else {
      max_nodes = 300, max_queues = 8, max_groups = 500, max_group_size = 12;
    }
  }
  int n_nodes = pick(1, max_nodes), n_queues = pick(1, max_queues), n_groups = pick(1, max_groups);
  for (int i = 0; i < n_nodes; ++i) {
    RandomNode n;
    n.name = fmt::format("n{}", i);
    n.cpu_milli = 1000LL * pick(1, 8);
    n.memory_mi = 1024LL * pick(1, 16);
    n.tainted = pick(0, 6) == 0;
    c.nodes.push_back(n);
  }
  std::vector<int64_t> free_cpu, free_mem;
  for (const auto& n : c.nodes) {
    free_cpu.push_back(n.cpu_milli);
    free_mem.push_back(n.memory_mi);
  }
  for (int i = 0; i < n_groups; ++i) {
    RandomGroup g;
    g.name = fmt::format("pg{}", i);
    g.queue = fmt::format("q{}", pick(0, n_queues - 1));
    g.priority = pick(0, 2);
    int size = pick(1, max_group_size);
    g.min_member = pick(1, size);
    g.running = pick(0, 2) == 0;
    for (int k = 0; k < size; ++k) {
      RandomPod p;
      p.name = fmt::format("{}-{}", g.name, k);
      p.group = g.name;
      p.cpu_milli = 250LL * pick(1, 8);
      p.memory_mi = 256LL * pick(0, 8);
      if (g.running) {
        // Running pods sit where they fit: the snapshot must be a state a cluster can be in.
        for (size_t n = 0; n < c.nodes.size(); ++n) {
          if (free_cpu[n] >= p.cpu_milli && free_mem[n] >= p.memory_mi) {
            free_cpu[n] -= p.cpu_milli;
            free_mem[n] -= p.memory_mi;
            p.node = c.nodes[n].name;
            break;
          }
        }
      }
      c.pods.push_back(p);
    }
    c.groups.push_back(g);
  }
  for (int q = 0; q < n_queues; ++q) c.queues.push_back({fmt::format("q{}", q), pick(1, 4)});
  // A group of which no pod found room is still "running" by its phase; the snapshot's gang
  // rules treat it like any other Running PodGroup.
  if (options.rich) AddRichFeatures(c, seed);
  if (options.gpus) AddGpus(c, seed);
  return c;
}

namespace {

const char* PriorityClass(int priority) {
  return priority >= 2 ? "high" : priority == 1 ? "mid" : "low";
}

}  // namespace

std::string RenderScenario(const RandomCluster& c, const std::string& name,
                           const std::string& extra, const std::string& conf) {
  std::string y = fmt::format("name: {}\nconf: |\n", name);
  AppendIndented(y, conf.empty() ? c.conf : conf, "  ");
  y += "cluster:\n";
  y += "  priorityClasses: [{name: low, value: 10}, {name: mid, value: 100}, {name: high, value: "
       "1000}]\n";
  y += c.queues.empty() ? "  queues: []\n" : "  queues:\n";
  for (const auto& q : c.queues) y += fmt::format("  - {{name: {}, weight: {}}}\n", q.name, q.weight);
  y += c.nodes.empty() ? "  nodes: []\n" : "  nodes:\n";
  for (const auto& n : c.nodes) {
    y += fmt::format("  - {{name: {}, allocatable: {{cpu: \"{}m\", memory: {}Mi, pods: \"110\"{}}}",
                     n.name, n.cpu_milli, n.memory_mi,
                     n.gpus > 0 ? fmt::format(", nvidia.com/gpu: \"{}\"", n.gpus) : "");
    if (n.tainted) y += ", taints: [{key: dedicated, value: x, effect: NoSchedule}]";
    if (!n.zone.empty())
      y += fmt::format(", labels: {{topology.kubernetes.io/zone: {}, kubernetes.io/hostname: {}}}",
                       n.zone, n.name);
    y += "}\n";
  }
  y += c.groups.empty() ? "  podGroups: []\n" : "  podGroups:\n";
  for (const auto& g : c.groups)
    y += fmt::format(
        "  - {{name: {}, namespace: c1, queue: {}, minMember: {}, priorityClassName: {}, phase: "
        "{}}}\n",
        g.name, g.queue, g.min_member, PriorityClass(g.priority), g.running ? "Running" : "Inqueue");
  std::map<std::string, int> priority;
  for (const auto& g : c.groups) priority[g.name] = g.priority;
  y += c.pods.empty() ? "  pods: []\n" : "  pods:\n";
  for (const auto& p : c.pods) {
    y += fmt::format(
        "  - {{name: {}, namespace: c1, group: {}, priorityClassName: {}, requests: {{cpu: "
        "\"{}m\", memory: {}Mi{}}}",
        p.name, p.group, PriorityClass(priority[p.group]), p.cpu_milli, p.memory_mi,
        p.gpus > 0 ? fmt::format(", nvidia.com/gpu: \"{}\"", p.gpus) : "");
    if (!p.node.empty()) y += fmt::format(", phase: Running, node: {}", p.node);
    if (!p.app.empty()) y += fmt::format(", labels: {{app: {}}}", p.app);
    if (!p.preemptable) y += ", annotations: {volcano.sh/preemptable: \"false\"}";
    if (p.never_preempts) y += ", preemptionPolicy: Never";
    if (p.tolerates)
      y += ", tolerations: [{key: dedicated, operator: Equal, value: x, effect: NoSchedule}]";
    if (!p.zone.empty() || p.anti_affinity) {
      y += ", affinity: {";
      if (!p.zone.empty())
        y += fmt::format(
            "nodeAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: {{nodeSelectorTerms: "
            "[{{matchExpressions: [{{key: topology.kubernetes.io/zone, operator: In, values: "
            "[{}]}}]}}]}}}}",
            p.zone);
      if (!p.zone.empty() && p.anti_affinity) y += ", ";
      if (p.anti_affinity)
        y += fmt::format(
            "podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{{labelSelector: "
            "{{matchLabels: {{app: {}}}}}, topologyKey: kubernetes.io/hostname}}]}}",
            p.app);
      y += "}";
    }
    y += "}\n";
  }
  if (!c.pdbs.empty()) {
    y += "  pdbs:\n";
    for (const auto& d : c.pdbs)
      y += fmt::format(
          "  - {{name: {}, namespace: c1, minAvailable: {}, selector: {{app: {}}}, "
          "disruptionsAllowed: {}}}\n",
          d.name, d.min_available, d.app, d.disruptions_allowed);
  }
  y += extra;
  return y;
}

bool IsConsistent(const RandomCluster& c) {
  std::set<std::string> queues;
  for (const auto& q : c.queues) queues.insert(q.name);
  struct Free {
    int64_t cpu, memory, gpus;
  };
  std::map<std::string, Free> free;
  for (const auto& n : c.nodes) free[n.name] = {n.cpu_milli, n.memory_mi, n.gpus};
  std::map<std::string, int> members;
  for (const auto& g : c.groups) {
    if (!queues.count(g.queue)) return false;
    members[g.name] = 0;
  }
  for (const auto& p : c.pods) {
    auto m = members.find(p.group);
    if (m == members.end()) return false;
    ++m->second;
    if (p.node.empty()) continue;
    auto n = free.find(p.node);
    if (n == free.end()) return false;
    n->second.cpu -= p.cpu_milli;
    n->second.memory -= p.memory_mi;
    n->second.gpus -= p.gpus;
    if (n->second.cpu < 0 || n->second.memory < 0 || n->second.gpus < 0) return false;
  }
  for (const auto& g : c.groups)
    if (g.min_member < 1 || g.min_member > members[g.name]) return false;
  return true;
}

namespace {

// Greedy shrinking: each pass tries every single-step reduction in a fixed order and keeps the
// first candidate that is still interesting, restarting its pass from there; passes repeat until
// one changes nothing. Fixed orders keep the result a function of the input.
class Shrinker {
 public:
  Shrinker(const std::function<bool(const RandomCluster&)>& interesting, ShrinkStats& stats,
           int max_attempts)
      : interesting_(interesting), stats_(stats), max_attempts_(max_attempts) {}

  RandomCluster Run(RandomCluster c) {
    for (bool changed = true; changed && !Exhausted();) {
      changed = false;
      changed |= RemoveEach(c, &RandomCluster::queues, RemoveQueue);
      changed |= RemoveEach(c, &RandomCluster::groups, RemoveGroup);
      changed |= RemoveEach(c, &RandomCluster::nodes, RemoveNode);
      changed |= RemoveEach(c, &RandomCluster::pods, RemovePod);
      changed |= RemoveEach(c, &RandomCluster::pdbs, RemovePdb);
      changed |= Simplify(c);
    }
    return c;
  }

 private:
  bool Exhausted() const { return stats_.attempts >= max_attempts_; }

  bool Try(RandomCluster& c, RandomCluster candidate) {
    if (Exhausted() || !IsConsistent(candidate)) return false;
    ++stats_.attempts;
    if (!interesting_(candidate)) return false;
    ++stats_.accepted;
    c = std::move(candidate);
    return true;
  }

  static RandomCluster RemoveQueue(const RandomCluster& c, size_t i) {
    RandomCluster out = c;
    std::string name = c.queues[i].name;
    out.queues.erase(out.queues.begin() + static_cast<std::ptrdiff_t>(i));
    std::set<std::string> gone;
    for (const auto& g : out.groups)
      if (g.queue == name) gone.insert(g.name);
    DropGroups(out, gone);
    return out;
  }
  static RandomCluster RemoveGroup(const RandomCluster& c, size_t i) {
    RandomCluster out = c;
    DropGroups(out, {c.groups[i].name});
    return out;
  }
  // Removes the named groups and their pods.
  static void DropGroups(RandomCluster& c, const std::set<std::string>& names) {
    std::erase_if(c.groups, [&](const RandomGroup& g) { return names.count(g.name) > 0; });
    std::erase_if(c.pods, [&](const RandomPod& p) { return names.count(p.group) > 0; });
  }
  static RandomCluster RemoveNode(const RandomCluster& c, size_t i) {
    RandomCluster out = c;
    std::string name = c.nodes[i].name;
    out.nodes.erase(out.nodes.begin() + static_cast<std::ptrdiff_t>(i));
    std::erase_if(out.pods, [&](const RandomPod& p) { return p.node == name; });
    FixGroups(out);
    return out;
  }
  static RandomCluster RemovePdb(const RandomCluster& c, size_t i) {
    RandomCluster out = c;
    out.pdbs.erase(out.pdbs.begin() + static_cast<std::ptrdiff_t>(i));
    return out;
  }
  static RandomCluster RemovePod(const RandomCluster& c, size_t i) {
    RandomCluster out = c;
    out.pods.erase(out.pods.begin() + static_cast<std::ptrdiff_t>(i));
    FixGroups(out);
    return out;
  }
  // After pods went away: a group with none left goes too, and minMember is capped at what is
  // left (a gang of 3 with one pod removed still asks for all of them).
  static void FixGroups(RandomCluster& c) {
    std::map<std::string, int> members;
    for (const auto& p : c.pods) ++members[p.group];
    std::erase_if(c.groups, [&](const RandomGroup& g) { return members[g.name] == 0; });
    for (auto& g : c.groups) g.min_member = std::min(g.min_member, members[g.name]);
  }

  template <typename T>
  bool RemoveEach(RandomCluster& c, std::vector<T> RandomCluster::*list,
                  RandomCluster (*remove)(const RandomCluster&, size_t)) {
    bool changed = false;
    for (size_t i = 0; i < (c.*list).size() && !Exhausted();) {
      if (Try(c, remove(c, i)))
        changed = true;  // the element at i is now the next one
      else
        ++i;
    }
    return changed;
  }

  // Tries `values` in order of preference for one field, stopping at the current value: a
  // value is only replaced by a simpler one.
  template <typename V, typename Set>
  bool SimplifyField(RandomCluster& c, V current, const std::vector<V>& values, Set set) {
    for (const V& v : values) {
      if (v == current) return false;
      RandomCluster candidate = c;
      set(candidate, v);
      if (Try(c, std::move(candidate))) return true;
    }
    return false;
  }

  bool Simplify(RandomCluster& c) {
    bool changed = false;
    const std::vector<int64_t> pod_cpu = {1000, 500, 2000, 250};
    const std::vector<int64_t> pod_mem = {0, 1024, 512};
    std::vector<int64_t> node_cpu, node_mem;
    for (int k = 1; k <= 16; ++k) node_cpu.push_back(1000LL * k);
    for (int k = 1; k <= 64; ++k) node_mem.push_back(1024LL * k);
    for (size_t i = 0; i < c.queues.size(); ++i)
      changed |= SimplifyField(c, c.queues[i].weight, {1},
                               [i](RandomCluster& x, int v) { x.queues[i].weight = v; });
    for (size_t i = 0; i < c.groups.size(); ++i) {
      changed |= SimplifyField(c, c.groups[i].priority, {0},
                               [i](RandomCluster& x, int v) { x.groups[i].priority = v; });
      changed |= SimplifyField(c, c.groups[i].min_member, {1},
                               [i](RandomCluster& x, int v) { x.groups[i].min_member = v; });
    }
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      changed |= SimplifyField(c, c.nodes[i].tainted, {false},
                               [i](RandomCluster& x, bool v) { x.nodes[i].tainted = v; });
      changed |= SimplifyField(c, c.nodes[i].cpu_milli, node_cpu,
                               [i](RandomCluster& x, int64_t v) { x.nodes[i].cpu_milli = v; });
      changed |= SimplifyField(c, c.nodes[i].memory_mi, node_mem,
                               [i](RandomCluster& x, int64_t v) { x.nodes[i].memory_mi = v; });
    }
    for (size_t i = 0; i < c.pods.size(); ++i) {
      changed |= SimplifyField(c, c.pods[i].cpu_milli, pod_cpu,
                               [i](RandomCluster& x, int64_t v) { x.pods[i].cpu_milli = v; });
      changed |= SimplifyField(c, c.pods[i].memory_mi, pod_mem,
                               [i](RandomCluster& x, int64_t v) { x.pods[i].memory_mi = v; });
      changed |= SimplifyField(c, c.pods[i].zone, {std::string()},
                               [i](RandomCluster& x, std::string v) { x.pods[i].zone = v; });
      changed |= SimplifyField(c, c.pods[i].anti_affinity, {false},
                               [i](RandomCluster& x, bool v) { x.pods[i].anti_affinity = v; });
      changed |= SimplifyField(c, c.pods[i].tolerates, {false},
                               [i](RandomCluster& x, bool v) { x.pods[i].tolerates = v; });
      changed |= SimplifyField(c, c.pods[i].preemptable, {true},
                               [i](RandomCluster& x, bool v) { x.pods[i].preemptable = v; });
      changed |= SimplifyField(c, c.pods[i].never_preempts, {false},
                               [i](RandomCluster& x, bool v) { x.pods[i].never_preempts = v; });
    }
    return changed;
  }

  const std::function<bool(const RandomCluster&)>& interesting_;
  ShrinkStats& stats_;
  int max_attempts_;
};

}  // namespace

RandomCluster ShrinkRandomCluster(RandomCluster c,
                                  const std::function<bool(const RandomCluster&)>& interesting,
                                  ShrinkStats* stats, int max_attempts) {
  ShrinkStats local;
  Shrinker shrinker(interesting, stats ? *stats : local, max_attempts);
  return shrinker.Run(std::move(c));
}

}  // namespace kiln
