// Randomized sessions with invariants (issue #16): a seeded generator of rich clusters and
// workloads (simulator/random_cluster.h: from a handful to thousands of pods; nodes in zones,
// some tainted; queues with weights; gangs at three priorities, some running; pods with
// tolerations, node affinity, pod anti-affinity, non-preemptable pods, pods that never preempt;
// PDBs) runs through the simulator with the built-in policies under a rotation of confs that
// covers every built-in plugin but the extender and every action. The session's own checker
// (runtime/invariants.h: accounting after every action, full snapshots around every discarded
// statement, the victims of every preemption) runs inside each session, and the decisions are
// checked again from the outside against invariants that hold whatever the policies decide:
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
// KILN_SOAK_SESSIONS (default 200 here, what CI runs; scripts/soak sets it) and KILN_SOAK_SEED choose the run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/invariants.h"
#include "simulator/random_cluster.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/runtime/random_cluster_compare.h"

namespace kiln {
namespace {

using testing::SimulateFirstSession;

std::vector<std::string> CheckInvariants(const RandomCluster& g, const SessionResult& s) {
  std::vector<std::string> bad;
  std::map<std::string, const RandomPod*> pods;
  for (const auto& p : g.pods) pods["c1/" + p.name] = &p;
  std::map<std::string, const RandomGroup*> groups;
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
    // but never for nothing: some job must have been placed. Shuffle evicts for no one.
    if (top_placed_priority < 0 && g.conf.find("shuffle") == std::string::npos)
      bad.push_back("evicted " + key + " while placing nothing");
  }
  for (const auto& n : g.nodes) {
    int64_t cpu = 0, mem = 0, cpu_future = 0, mem_future = 0;
    for (const auto& p : g.pods) {
      std::string key = "c1/" + p.name;
      bool here = p.node == n.name && !s.evictions.count(key);
      auto b = s.binds.find(key);
      if (here || (b != s.binds.end() && b->second == n.name)) {
        cpu += p.cpu_milli;
        mem += p.memory_mi;
      }
      auto pl = s.pipelined.find(key);
      if (pl != s.pipelined.end() && pl->second == n.name) {
        cpu_future += p.cpu_milli;
        mem_future += p.memory_mi;
      }
    }
    if (cpu > n.cpu_milli || mem > n.memory_mi)
      bad.push_back(fmt::format("node {} over allocatable: {}m/{}Mi of {}m/{}Mi", n.name, cpu, mem, n.cpu_milli, n.memory_mi));
    if (cpu + cpu_future > n.cpu_milli || mem + mem_future > n.memory_mi)
      bad.push_back(fmt::format("node {} over allocatable with pipelined pods", n.name));
  }
  // Gangs are all-or-nothing only when the conf runs the gang plugin.
  if (g.conf.find("name: gang") != std::string::npos) {
    for (const auto& grp : g.groups) {
      int placed = 0, bound = 0;
      for (const auto& p : g.pods) {
        if (p.group != grp.name) continue;
        std::string key = "c1/" + p.name;
        if (s.binds.count(key)) ++bound;
        if ((!p.node.empty() && !s.evictions.count(key)) || s.binds.count(key) || s.pipelined.count(key)) ++placed;
      }
      if (bound > 0 && placed < grp.min_member)
        bad.push_back(fmt::format("gang {} bound {} pods but has {} of minMember {}", grp.name, bound, placed, grp.min_member));
    }
  }
  for (const auto& f : s.faults) bad.push_back("built-in policy fault: " + f);
  for (const auto& v : s.invariant_violations) bad.push_back("session checker: " + v);
  return bad;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(RandomSessions, InvariantsHoldInEverySession) {
  auto provider = MakeCompiledPolicyProvider(PolicyProviderOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  SetInvariantChecking(true);
  RandomClusterOptions options;
  options.rich = true;
  int sessions = EnvInt("KILN_SOAK_SESSIONS", 200);
  uint64_t seed0 = static_cast<uint64_t>(EnvInt("KILN_SOAK_SEED", 1));
  int violations = 0;
  for (int i = 0; i < sessions; ++i) {
    uint64_t seed = seed0 * 1'000'003 + static_cast<uint64_t>(i);
    RandomCluster g = GenerateRandomCluster(seed, options);
    std::string yaml = RenderScenario(g, fmt::format("random-{}", seed));
    auto first = SimulateFirstSession(yaml, **provider);
    ASSERT_TRUE(first.ok()) << "seed " << seed << ": " << first.error().Format() << "\n" << yaml;
    std::vector<std::string> bad = CheckInvariants(g, *first);
    auto second = SimulateFirstSession(yaml, **provider);
    ASSERT_TRUE(second.ok());
    if (second->binds != first->binds || second->evictions != first->evictions ||
        second->pipelined != first->pipelined || second->bind_order != first->bind_order)
      bad.push_back("not deterministic: the same scenario decided differently");
    for (const auto& b : bad) ADD_FAILURE() << "seed " << seed << ": " << b << "\n" << yaml;
    violations += static_cast<int>(bad.size());
  }
  SetInvariantChecking(false);
  std::printf("random sessions: %d run (seed %llu), %d violations\n", sessions,
              static_cast<unsigned long long>(seed0), violations);
}

}  // namespace
}  // namespace kiln
