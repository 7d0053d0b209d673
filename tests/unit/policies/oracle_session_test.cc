// The gang, priority and cdp oracles run as session plugins (tests/oracles/oracle_plugins.h)
// through the real simulator and actions. Each case also runs without the plugin under test, so
// the assertion shows the plugin's effect rather than a coincidence. This is the harness the
// differential tests reuse: the same scenario through the compiled policies must give the same
// SessionResult.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/oracles/oracle_plugins.h"

namespace kiln::oracles {
namespace {

// Runs one session of `scenario_yaml` with the oracle plugins; fails the test on any error.
SessionResult RunWithOracles(const std::string& scenario_yaml) {
  auto spec = ParseScenario(scenario_yaml, "oracle_session_test.yaml");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().message);
  if (!spec.ok()) return {};
  auto conf = ResolveScenarioConf(*spec, nullptr, "");
  EXPECT_TRUE(conf.ok()) << (conf.ok() ? "" : conf.error().message);
  if (!conf.ok()) return {};
  RegistryPolicyProvider provider;
  Status registered = RegisterOraclePlugins(provider.registry());
  EXPECT_TRUE(registered.ok());
  auto sim = Simulator::Create(std::move(*spec), std::move(*conf), provider);
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error().message);
  if (!sim.ok()) return {};
  auto result = (*sim)->RunCycle();
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? *result : SessionResult{};
}

// A 3-task gang (minMember 3, 2 cpu each) cannot fit on two 2-cpu nodes; a 1-cpu job can.
std::string GangScenario(const std::string& tier) {
  return R"(name: oracle-gang
conf: |
  actions: "allocate"
  tiers:
  - plugins: [)" + tier + R"(]
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 4Gi}}
  - {name: n2, allocatable: {cpu: "2", memory: 4Gi}}
  podGroups:
  - {name: a-big, namespace: c1, queue: default, minMember: 3, phase: Inqueue}
  - {name: b-small, namespace: c1, queue: default, minMember: 1, phase: Inqueue}
  pods:
  - {name: big-0, namespace: c1, group: a-big, requests: {cpu: "2", memory: 1Gi}}
  - {name: big-1, namespace: c1, group: a-big, requests: {cpu: "2", memory: 1Gi}}
  - {name: big-2, namespace: c1, group: a-big, requests: {cpu: "2", memory: 1Gi}}
  - {name: small-0, namespace: c1, group: b-small, requests: {cpu: "1", memory: 1Gi}}
)";
}

TEST(OracleSession, GangKeepsAPartialJobFromBinding) {
  SessionResult with_gang = RunWithOracles(GangScenario("{name: priority}, {name: gang}"));
  EXPECT_EQ(with_gang.binds, (std::map<std::string, std::string>{{"c1/small-0", "n1"}}));

  SessionResult without = RunWithOracles(GangScenario("{name: priority}"));
  EXPECT_EQ(without.binds, (std::map<std::string, std::string>{{"c1/big-0", "n1"},
                                                                {"c1/big-1", "n2"}}));
}

// A pod of the low job running on n1 since 00:05, its cooldown label `cooldown`.
std::string LowPod(const std::string& name, const std::string& cooldown) {
  return "  - name: " + name + R"(
    namespace: c1
    group: low
    requests: {cpu: "1", memory: 1Gi}
    phase: Running
    node: n1
    scheduledAt: "2025-01-01T00:05:00Z"
    labels: {volcano.sh/cooldown-time: ")" + cooldown + "\"}\n";
}

// A high-priority job preempts a low-priority running task on a full node. All plugins share one
// tier, so victims are the intersection: priority offers both low tasks, gang only the first (the
// low job must keep minMember 1), cdp none while their cooldown runs — and an empty answer
// discards the tier, leaving no victims at all (§2.2).
std::string PreemptScenario(const std::string& tier, const std::string& cooldown) {
  return R"(name: oracle-preempt
now: "2025-01-01T00:10:00Z"
conf: |
  actions: "allocate, preempt"
  tiers:
  - plugins: [)" + tier + R"(]
cluster:
  priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 4Gi}}
  podGroups:
  - {name: low, namespace: c1, queue: default, minMember: 1, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, queue: default, minMember: 1, phase: Inqueue, priorityClassName: high}
  pods:
)" + LowPod("low-0", cooldown) + LowPod("low-1", cooldown) + R"(  - {name: high-0, namespace: c1, group: high, requests: {cpu: "1", memory: 1Gi}}
)";
}

TEST(OracleSession, PriorityPreemptsALowerPriorityJob) {
  SessionResult r = RunWithOracles(PreemptScenario("{name: priority}, {name: gang}", "10m"));
  EXPECT_EQ(r.evictions, (std::set<std::string>{"c1/low-0"}));
  EXPECT_EQ(r.pipelined, (std::map<std::string, std::string>{{"c1/high-0", "n1"}}));
  EXPECT_TRUE(r.binds.empty());
}

TEST(OracleSession, CdpSparesAVictimInsideItsCooldown) {
  // Scheduled 5 minutes ago with a 10 minute cooldown: protected.
  SessionResult in_cooldown =
      RunWithOracles(PreemptScenario("{name: priority}, {name: gang}, {name: cdp}", "10m"));
  EXPECT_TRUE(in_cooldown.evictions.empty());
  EXPECT_TRUE(in_cooldown.pipelined.empty());
  // A 3 minute cooldown has expired: evicted as without cdp.
  SessionResult expired =
      RunWithOracles(PreemptScenario("{name: priority}, {name: gang}, {name: cdp}", "3m"));
  EXPECT_EQ(expired.evictions, (std::set<std::string>{"c1/low-0"}));
}

}  // namespace
}  // namespace kiln::oracles
