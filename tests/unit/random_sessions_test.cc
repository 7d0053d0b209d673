// Randomized sessions with invariants (issue #16): a seeded generator of clusters and workloads
// (nodes, queues with weights, gangs, priorities, running and pending pods, taints) runs through
// the simulator with the built-in policies under a rotation of confs, and every session's
// decisions are checked against invariants that hold whatever the policies decide:
//   - no pod is bound twice, and only pending pods are bound or pipelined;
//   - only running pods are evicted, and never one whose PodGroup's priority is higher than that
//     of every job that got a placement in the session (preempt/reclaim take from lower or
//     equal priority only);
//   - no node is over its allocatable: running − evicted + bound ≤ allocatable, and with the
//     pipelined pods added on the node they are pipelined to (they wait for evicted resources);
//   - gangs are all-or-nothing: a job that got binds has at least minMember pods placed
//     (running + bound + pipelined), when the conf runs the gang plugin;
//   - built-in policies never fault;
//   - determinism: the same scenario gives the same decisions twice.
// KILN_SOAK_SESSIONS (default 40 here; scripts/soak sets it) and KILN_SOAK_SEED choose the run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/host/policy_provider.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln {
namespace {

struct GenPod {
  std::string ns = "c1", name, group;
  int64_t cpu = 0, mem_mi = 0;
  std::string node;  // running on it when set
};
struct GenGroup {
  std::string name, queue, priority_class;
  int min_member = 1;
  int priority = 0;
  bool running = false;
};
struct GenNode {
  std::string name;
  int64_t cpu = 0, mem_mi = 0;  // millicores, MiB
  bool tainted = false;
};
struct Generated {
  std::string yaml;
  std::vector<GenNode> nodes;
  std::vector<GenGroup> groups;
  std::vector<GenPod> pods;
  bool gang = false;
};

const char* const kConfs[] = {
    // Volcano's default plugin set.
    R"(actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
)",
    // Preemption and reclaim.
    R"(actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
)",
    // No gang: tasks place one by one.
    R"(actions: "allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: predicates
  - name: binpack
)",
};

Generated Generate(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Generated g;
  int conf = pick(0, 2);
  g.gang = conf != 2;
  int n_nodes = pick(1, 8), n_queues = pick(1, 3), n_groups = pick(1, 8);
  for (int i = 0; i < n_nodes; ++i)
    g.nodes.push_back({fmt::format("n{}", i), 1000LL * pick(1, 8), 1024LL * pick(1, 16), pick(0, 6) == 0});
  std::vector<int64_t> free_cpu, free_mem;
  for (const auto& n : g.nodes) {
    free_cpu.push_back(n.cpu);
    free_mem.push_back(n.mem_mi);
  }
  for (int i = 0; i < n_groups; ++i) {
    GenGroup grp;
    grp.name = fmt::format("pg{}", i);
    grp.queue = fmt::format("q{}", pick(0, n_queues - 1));
    grp.priority = pick(0, 2);
    grp.priority_class = grp.priority == 2 ? "high" : grp.priority == 1 ? "mid" : "low";
    int size = pick(1, 5);
    grp.min_member = pick(1, size);
    grp.running = pick(0, 2) == 0;
    for (int k = 0; k < size; ++k) {
      GenPod p;
      p.name = fmt::format("{}-{}", grp.name, k);
      p.group = grp.name;
      p.cpu = 250LL * pick(1, 8);
      p.mem_mi = 256LL * pick(0, 8);
      if (grp.running) {
        // Running pods sit where they fit (the snapshot must be a reachable state).
        for (size_t n = 0; n < g.nodes.size(); ++n) {
          if (free_cpu[n] >= p.cpu && free_mem[n] >= p.mem_mi) {
            free_cpu[n] -= p.cpu;
            free_mem[n] -= p.mem_mi;
            p.node = g.nodes[n].name;
            break;
          }
        }
      }
      g.pods.push_back(p);
    }
    g.groups.push_back(grp);
  }
  std::string y = fmt::format("name: random-{}\nconf: |\n", seed);
  for (std::string_view line : {std::string_view(kConfs[conf])}) {
    size_t start = 0;
    while (start < line.size()) {
      size_t end = line.find('\n', start);
      y += "  " + std::string(line.substr(start, end - start)) + "\n";
      start = end + 1;
    }
  }
  y += "cluster:\n  priorityClasses: [{name: low, value: 10}, {name: mid, value: 100}, {name: high, value: 1000}]\n";
  y += "  queues:\n";
  for (int q = 0; q < n_queues; ++q) y += fmt::format("  - {{name: q{}, weight: {}}}\n", q, pick(1, 4));
  y += "  nodes:\n";
  for (const auto& n : g.nodes) {
    y += fmt::format("  - {{name: {}, allocatable: {{cpu: \"{}m\", memory: {}Mi, pods: \"110\"}}", n.name,
                     n.cpu, n.mem_mi);
    if (n.tainted) y += ", taints: [{key: dedicated, value: x, effect: NoSchedule}]";
    y += "}\n";
  }
  y += "  podGroups:\n";
  for (const auto& grp : g.groups)
    y += fmt::format(
        "  - {{name: {}, namespace: c1, queue: {}, minMember: {}, priorityClassName: {}, phase: {}}}\n",
        grp.name, grp.queue, grp.min_member, grp.priority_class, grp.running ? "Running" : "Inqueue");
  y += "  pods:\n";
  for (const auto& p : g.pods) {
    const GenGroup* grp = nullptr;
    for (const auto& x : g.groups)
      if (x.name == p.group) grp = &x;
    y += fmt::format("  - {{name: {}, namespace: c1, group: {}, priorityClassName: {}, requests: {{cpu: \"{}m\", memory: {}Mi}}",
                     p.name, p.group, grp->priority_class, p.cpu, p.mem_mi);
    if (!p.node.empty()) y += fmt::format(", phase: Running, node: {}", p.node);
    y += "}\n";
  }
  g.yaml = std::move(y);
  return g;
}

Result<SessionResult> RunOnce(const std::string& yaml, PolicyProvider& provider) {
  auto spec = ParseScenario(yaml, "random.yaml");
  if (!spec.ok()) return spec.error();
  auto conf = ParseSchedulerConf(spec->conf_text, "scheduler.conf");
  if (!conf.ok()) return conf.error();
  auto sim = Simulator::Create(*spec, *conf, provider);
  if (!sim.ok()) return sim.error();
  auto run = (*sim)->Run();
  if (!run.ok()) return run.error();
  return run->sessions.at(0);
}

std::vector<std::string> CheckInvariants(const Generated& g, const SessionResult& s) {
  std::vector<std::string> bad;
  std::map<std::string, const GenPod*> pods;
  for (const auto& p : g.pods) pods[p.ns + "/" + p.name] = &p;
  std::map<std::string, const GenGroup*> groups;
  for (const auto& grp : g.groups) groups[grp.name] = &grp;
  std::set<std::string> seen;
  for (const auto& key : s.bind_order)
    if (!seen.insert(key).second) bad.push_back("pod bound twice: " + key);
  for (const auto& [key, node] : s.binds) {
    auto it = pods.find(key);
    if (it == pods.end()) bad.push_back("bound an unknown pod " + key);
    else if (!it->second->node.empty()) bad.push_back("bound a running pod " + key);
  }
  for (const auto& [key, node] : s.pipelined) {
    if (s.binds.count(key)) bad.push_back("pod both bound and pipelined: " + key);
    auto it = pods.find(key);
    if (it != pods.end() && !it->second->node.empty()) bad.push_back("pipelined a running pod " + key);
  }
  int top_placed_priority = -1;
  for (const auto& [key, node] : s.binds) top_placed_priority = std::max(top_placed_priority, groups[pods[key]->group]->priority);
  for (const auto& [key, node] : s.pipelined) top_placed_priority = std::max(top_placed_priority, groups[pods[key]->group]->priority);
  for (const auto& key : s.evictions) {
    auto it = pods.find(key);
    if (it == pods.end() || it->second->node.empty()) {
      bad.push_back("evicted a pod that was not running: " + key);
      continue;
    }
    // Preempt takes from lower priority jobs; reclaim from other queues whatever the priority,
    // but never for nothing: some job must have been placed.
    if (top_placed_priority < 0) bad.push_back("evicted " + key + " while placing nothing");
  }
  for (const auto& n : g.nodes) {
    int64_t cpu = 0, mem = 0, cpu_future = 0, mem_future = 0;
    for (const auto& p : g.pods) {
      std::string key = p.ns + "/" + p.name;
      bool here = p.node == n.name && !s.evictions.count(key);
      auto b = s.binds.find(key);
      if (here || (b != s.binds.end() && b->second == n.name)) {
        cpu += p.cpu;
        mem += p.mem_mi;
      }
      auto pl = s.pipelined.find(key);
      if (pl != s.pipelined.end() && pl->second == n.name) {
        cpu_future += p.cpu;
        mem_future += p.mem_mi;
      }
    }
    if (cpu > n.cpu || mem > n.mem_mi)
      bad.push_back(fmt::format("node {} over allocatable: {}m/{}Mi of {}m/{}Mi", n.name, cpu, mem, n.cpu, n.mem_mi));
    if (cpu + cpu_future > n.cpu || mem + mem_future > n.mem_mi)
      bad.push_back(fmt::format("node {} over allocatable with pipelined pods", n.name));
  }
  if (g.gang) {
    for (const auto& grp : g.groups) {
      int placed = 0, bound = 0;
      for (const auto& p : g.pods) {
        if (p.group != grp.name) continue;
        std::string key = p.ns + "/" + p.name;
        if (s.binds.count(key)) ++bound;
        if ((!p.node.empty() && !s.evictions.count(key)) || s.binds.count(key) || s.pipelined.count(key)) ++placed;
      }
      if (bound > 0 && placed < grp.min_member)
        bad.push_back(fmt::format("gang {} bound {} pods but has {} of minMember {}", grp.name, bound, placed, grp.min_member));
    }
  }
  for (const auto& f : s.faults) bad.push_back("built-in policy fault: " + f);
  return bad;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(RandomSessions, InvariantsHoldInEverySession) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  int sessions = EnvInt("KILN_SOAK_SESSIONS", 40);
  uint64_t seed0 = static_cast<uint64_t>(EnvInt("KILN_SOAK_SEED", 1));
  int violations = 0;
  for (int i = 0; i < sessions; ++i) {
    uint64_t seed = seed0 * 1'000'003 + static_cast<uint64_t>(i);
    Generated g = Generate(seed);
    auto first = RunOnce(g.yaml, **provider);
    ASSERT_TRUE(first.ok()) << "seed " << seed << ": " << first.error().Format() << "\n" << g.yaml;
    std::vector<std::string> bad = CheckInvariants(g, *first);
    auto second = RunOnce(g.yaml, **provider);
    ASSERT_TRUE(second.ok());
    if (second->binds != first->binds || second->evictions != first->evictions ||
        second->pipelined != first->pipelined || second->bind_order != first->bind_order)
      bad.push_back("not deterministic: the same scenario decided differently");
    for (const auto& b : bad) ADD_FAILURE() << "seed " << seed << ": " << b << "\n" << g.yaml;
    violations += static_cast<int>(bad.size());
  }
  std::printf("random sessions: %d run (seed %llu), %d violations\n", sessions,
              static_cast<unsigned long long>(seed0), violations);
}

}  // namespace
}  // namespace kiln
