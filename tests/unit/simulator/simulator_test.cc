// Simulator: the session snapshot built from a scenario, plugin resolution, and how decisions
// change the simulated cluster from one cycle to the next.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cli/output_format.h"
#include "runtime/quantity.h"
#include "runtime/session.h"
#include "simulator/simulator.h"
#include "tests/unit/scenario_test_util.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

ScenarioSpec Spec(std::string_view text) { return testing::MustParse(text, "sim.yaml"); }

SchedulerConf Conf(const ScenarioSpec& spec) {
  auto c = ResolveScenarioConf(spec, nullptr, "");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().Format());
  return c.ok() ? std::move(*c) : SchedulerConf{};
}

std::unique_ptr<Simulator> MakeSim(const ScenarioSpec& spec, PolicyProvider& provider,
                                   int cycles = 1) {
  SimulatorOptions options;
  options.cycles = cycles;
  auto sim = Simulator::Create(spec, Conf(spec), provider, options);
  EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error().Format());
  return sim.ok() ? std::move(*sim) : nullptr;
}

const PodSpec& Pod(const Simulator& sim, std::string_view key) {
  for (const PodSpec& p : sim.state().cluster.pods)
    if (p.Key() == key) return p;
  static PodSpec none;
  ADD_FAILURE() << "no pod " << key;
  return none;
}

TEST(SimulatorTest, TaskStatusFromPod) {
  PodSpec p;
  p.phase = PodPhase::Pending;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Pending);
  p.node = "n1";
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Bound);
  p.deleting = true;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Releasing);
  p.phase = PodPhase::Running;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Releasing);
  p.deleting = false;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Running);
  p.phase = PodPhase::Succeeded;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Succeeded);
  p.phase = PodPhase::Failed;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Failed);
  p.phase = PodPhase::Unknown;
  EXPECT_EQ(TaskStatusOf(p), TaskStatus::Unknown);
}

TEST(SimulatorTest, BuildClusterAccountsRunningReleasingAndTerminatedPods) {
  ScenarioSpec spec = Spec(R"(
cluster:
  priorityClasses: [{name: high, value: 1000}]
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi}}
  podGroups:
  - {name: pg, namespace: c1, priorityClassName: high, annotations: {volcano.sh/preemptable: "true"}}
  pods:
  - {name: run, namespace: c1, group: pg, requests: {cpu: "1"}, phase: Running, node: n1}
  - {name: rel, namespace: c1, group: pg, requests: {cpu: "2"}, phase: Running, node: n1, deleting: true}
  - {name: done, namespace: c1, group: pg, requests: {cpu: "1"}, phase: Succeeded, node: n1}
  - {name: wait, namespace: c1, group: pg, task: worker, requests: {cpu: "1"}, annotations: {volcano.sh/preemptable: "false"}}
)");
  auto cluster = BuildCluster(spec.cluster);
  ASSERT_TRUE(cluster.ok()) << cluster.error().Format();
  Node* n1 = cluster->FindNode("n1");
  ASSERT_NE(n1, nullptr);
  // Running (1) and Releasing (2) occupy n1; the Succeeded pod does not.
  EXPECT_EQ(n1->idle.cpu(), 1000);
  EXPECT_EQ(n1->releasing.cpu(), 2000);
  EXPECT_EQ(n1->used.cpu(), 3000);
  EXPECT_EQ(n1->idle.Get(kPods), 108);  // two tasks on the node
  EXPECT_EQ(n1->FutureIdle().cpu(), 3000);
  Task* run = cluster->FindTask("c1-run");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->status, TaskStatus::Running);
  EXPECT_EQ(run->priority, 1);  // no priority and no class: Volcano's default for a nil priority
  EXPECT_EQ(cluster->FindTask("c1-rel")->status, TaskStatus::Releasing);
  EXPECT_EQ(cluster->FindTask("c1-done")->status, TaskStatus::Succeeded);
  Task* wait = cluster->FindTask("c1-wait");
  EXPECT_EQ(wait->status, TaskStatus::Pending);
  EXPECT_EQ(wait->role, "worker");
  EXPECT_FALSE(wait->preemptable);
  EXPECT_EQ(wait->resreq().Get(kPods), 1);  // the hidden pods request
  Job* job = cluster->FindJob("c1/pg");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->priority, 1000);  // from the PodGroup's priorityClassName
  EXPECT_TRUE(job->preemptable);
  EXPECT_EQ(job->min_available, 1);
}

constexpr std::string_view kTwoCycles = R"(
name: cycles
conf: |
  actions: "enqueue, allocate"
  tiers: []
now: "2025-01-01T00:00:00Z"
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 8Gi}}
  podGroups:
  - {name: short, namespace: c1, creationTimestamp: "2024-12-31T00:00:00Z"}
  - {name: next, namespace: c1}
  pods:
  - {name: s, namespace: c1, group: short, requests: {cpu: "2"}, duration: 1500ms}
  - {name: n, namespace: c1, group: next, requests: {cpu: "2"}}
)";

TEST(SimulatorTest, BindsBecomeRunningAndDurationsComplete) {
  ScenarioSpec spec = Spec(kTwoCycles);
  RegistryPolicyProvider none;
  auto sim = MakeSim(spec, none, 4);
  ASSERT_NE(sim, nullptr);

  // Cycle 0 (t=0): the older job gets the node; `next` does not fit.
  auto s0 = sim->RunCycle();
  ASSERT_TRUE(s0.ok()) << s0.error().Format();
  EXPECT_EQ(s0->binds, (std::map<std::string, std::string>{{"c1/s", "n1"}}));
  EXPECT_EQ(s0->unschedulable.count("c1/n"), 1u);
  EXPECT_EQ(s0->pod_group_phases.at("c1/short"), "Inqueue");  // Binding is not scheduled yet
  EXPECT_EQ(Pod(*sim, "c1/s").phase, PodPhase::Running);
  EXPECT_EQ(Pod(*sim, "c1/s").node, "n1");
  EXPECT_EQ(Pod(*sim, "c1/s").scheduled_at, spec.now);

  // Cycle 1 (t=1s): s is Running (1s < 1.5s), so its group is Running and n still waits.
  auto s1 = sim->RunCycle();
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(s1->time, spec.now + 1'000'000'000);
  EXPECT_TRUE(s1->binds.empty());
  EXPECT_EQ(s1->pod_group_phases.at("c1/short"), "Running");
  EXPECT_EQ(s1->pod_group_phases.at("c1/next"), "Inqueue");

  // Cycle 2 (t=2s): s has run 1.5s and Succeeded, freeing n1 for n. The session reports its job
  // Completed; a multi-cycle run then deletes the finished job (simulator.h, trace replay).
  auto s2 = sim->RunCycle();
  ASSERT_TRUE(s2.ok());
  const auto& pods = sim->state().cluster.pods;
  EXPECT_TRUE(std::none_of(pods.begin(), pods.end(), [](const PodSpec& p) { return p.name == "s"; }));
  EXPECT_EQ(s2->binds, (std::map<std::string, std::string>{{"c1/n", "n1"}}));
  EXPECT_EQ(s2->pod_group_phases.at("c1/short"), "Completed");

  // Cycle 3: nothing left to do; n runs.
  auto s3 = sim->RunCycle();
  ASSERT_TRUE(s3.ok());
  EXPECT_TRUE(s3->binds.empty());
  EXPECT_TRUE(s3->unschedulable.empty());
  EXPECT_EQ(s3->pod_group_phases.at("c1/next"), "Running");
  EXPECT_EQ(sim->cycles_run(), 4);
}

TEST(SimulatorTest, PeriodOptionMovesTheClock) {
  ScenarioSpec spec = Spec(kTwoCycles);
  RegistryPolicyProvider none;
  SimulatorOptions options;
  options.cycles = 2;
  options.period = 2'000'000'000;  // 2s: s (1.5s) is done by the second cycle
  auto sim = Simulator::Create(spec, Conf(spec), none, options);
  ASSERT_TRUE(sim.ok());
  auto run = (*sim)->Run();
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->sessions.size(), 2u);
  EXPECT_EQ(run->scenario, "cycles");
  EXPECT_EQ(run->sessions[1].index, 1);
  EXPECT_EQ(run->sessions[1].binds, (std::map<std::string, std::string>{{"c1/n", "n1"}}));
}

// A test plugin that names every Running task labelled `evict: "yes"` as a victim.
class EvictLabelled : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.On<ExtensionPoint::VictimTasks>(
        self, [](const Task* const* tasks, size_t n, uint8_t* selected) {
          for (size_t i = 0; i < n; ++i) {
            auto it = tasks[i]->labels().find("evict");
            if (it != tasks[i]->labels().end() && it->second == "yes") selected[i] = 1;
          }
        });
    return Status::Ok();
  }
};

RegistryPolicyProvider EvictingProvider() {
  PluginRegistry registry;
  Status s = registry.Register("evict-labelled", [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
    return std::unique_ptr<Plugin>(std::make_unique<EvictLabelled>());
  });
  EXPECT_TRUE(s.ok());
  return RegistryPolicyProvider(std::move(registry));
}

// A scenario whose conf runs `actions` with evict-labelled alone, on one node n1 (4 cpu, 8 Gi);
// `rest` (a newline, then the rest of `cluster:`) follows the node.
std::string EvictLabelledOnN1(std::string_view actions, std::string_view rest) {
  std::string text = R"(
conf: |
  actions: ")";
  text += actions;
  text += R"("
  tiers:
  - plugins:
    - name: evict-labelled
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi}})";
  text += rest;
  return text;
}

TEST(SimulatorTest, EvictedPodsAreRecreatedPendingOnlyInDefinedGroups) {
  ScenarioSpec spec = Spec(EvictLabelledOnN1("shuffle", R"(
  podGroups:
  - {name: job, namespace: c1, phase: Running}
  pods:
  - {name: member, namespace: c1, group: job, requests: {cpu: "1"}, phase: Running, node: n1, labels: {evict: "yes"}}
  - {name: plain, namespace: c1, requests: {cpu: "1"}, phase: Running, node: n1, labels: {evict: "yes"}}
  - {name: stays, namespace: c1, requests: {cpu: "1"}, phase: Running, node: n1}
)"));
  RegistryPolicyProvider provider = EvictingProvider();
  auto sim = MakeSim(spec, provider);
  ASSERT_NE(sim, nullptr);
  auto s0 = sim->RunCycle();
  ASSERT_TRUE(s0.ok()) << s0.error().Format();
  EXPECT_EQ(s0->evictions, (std::set<std::string>{"c1/member", "c1/plain"}));

  const ClusterSpec& c = sim->state().cluster;
  // The job's pod comes back Pending with no node, created at the session's time.
  const PodSpec& member = Pod(*sim, "c1/member");
  EXPECT_EQ(member.phase, PodPhase::Pending);
  EXPECT_TRUE(member.node.empty());
  EXPECT_EQ(member.creation_time, s0->time);
  // The plain pod is gone, and so is the group the loader made for it.
  bool plain_found = false, plain_group_found = false;
  for (const auto& p : c.pods) plain_found |= p.name == "plain";
  for (const auto& g : c.pod_groups) plain_group_found |= g.name == "podgroup-c1-plain";
  EXPECT_FALSE(plain_found);
  EXPECT_FALSE(plain_group_found);
  EXPECT_EQ(Pod(*sim, "c1/stays").phase, PodPhase::Running);
  EXPECT_EQ(c.pods.size(), 2u);
}

// Issue 31: pods naming a PodGroup the cluster does not define are one job without a PodGroup,
// as in Volcano's cache, which the session skips: those on a node still use it, a call may name
// any of them (a task of no job, with the status its phase gives), and each is a warning at its
// line. Three such pods once failed the load with `duplicate job "default/test-group"`.
TEST(SimulatorTest, PodsOfOneUndefinedGroupAreOneJobWithoutPodGroup) {
  ScenarioSpec spec = Spec(EvictLabelledOnN1("allocate", R"(
  podGroups:
  - {name: real, namespace: c1, minMember: 1, phase: Inqueue}
  pods:
  - {name: task1, group: test-group, requests: {cpu: "1"}, phase: Running, node: n1, labels: {evict: "yes"}}
  - {name: task2, group: test-group, requests: {cpu: "1"}, phase: Running, node: n1}
  - {name: task3, group: test-group, requests: {cpu: "1"}, phase: Running, node: n1, labels: {evict: "yes"}}
  - {name: waiting, group: test-group, requests: {cpu: "1"}, labels: {evict: "yes"}}
  - {name: real-0, namespace: c1, group: real, requests: {cpu: "2"}}
calls:
- {fn: victim_tasks, candidates: [default/task1, default/task2, default/task3, default/waiting]}
)"));
  ASSERT_EQ(spec.warnings.size(), 4u);
  EXPECT_EQ(spec.warnings[0].message,
            "pod `default/task1` names podGroup `test-group`, which does not exist in namespace "
            "`default`, so it is not scheduled (it still uses its node)");
  EXPECT_EQ(spec.warnings[0].where.file, "sim.yaml");
  EXPECT_EQ(spec.warnings[0].where.line, 13);
  EXPECT_EQ(spec.warnings[3].where.line, 16);
  RegistryPolicyProvider provider = EvictingProvider();
  auto sim = MakeSim(spec, provider);
  ASSERT_NE(sim, nullptr);
  auto s0 = sim->RunCycle();
  ASSERT_TRUE(s0.ok()) << s0.error().Format();
  // task1-3 hold 3 of n1's 4 cpus: real-0 (2 cpus) does not fit; the orphans are not scheduled.
  EXPECT_TRUE(s0->binds.empty());
  EXPECT_EQ(s0->unschedulable.count("c1/real-0"), 1u);
  EXPECT_EQ(s0->unschedulable.count("default/waiting"), 0u);
  ASSERT_EQ(sim->calls().size(), 1u);
  ASSERT_TRUE(sim->calls()[0].result.has_value());
  const CallValue& r = *sim->calls()[0].result;
  ASSERT_EQ(r.kind, CallValue::Kind::Tasks) << r.text;
  std::vector<std::string> names = r.names;
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"default/task1", "default/task3", "default/waiting"}));
}

TEST(SimulatorTest, UnknownPluginIsAnErrorAtItsConfLine) {
  ScenarioSpec spec = Spec(
      "conf: |\n  actions: \"allocate\"\n  tiers:\n  - plugins:\n    - name: evict-labeled\n");
  RegistryPolicyProvider provider = EvictingProvider();
  auto sim = Simulator::Create(spec, Conf(spec), provider);
  ASSERT_FALSE(sim.ok());
  EXPECT_EQ(sim.error().message, "unknown plugin `evict-labeled`; did you mean `evict-labelled`?");
  EXPECT_EQ(sim.error().where.file, "sim.yaml");
  EXPECT_EQ(sim.error().where.line, 5);
  EXPECT_EQ(sim.error().where.column, 13);
  // A Volcano plugin with no policy behind it says so.
  ScenarioSpec volcano = Spec("conf: |\n  actions: \"allocate\"\n  tiers:\n  - plugins:\n    - name: tdm\n");
  auto tdm = Simulator::Create(volcano, Conf(volcano), provider);
  ASSERT_FALSE(tdm.ok());
  EXPECT_EQ(tdm.error().message,
            "plugin `tdm` is a Volcano plugin that Kiln does not provide (no policy of that name)");
  EXPECT_EQ(tdm.error().where.line, 5);
}

TEST(SimulatorTest, ConfResolution) {
  ScenarioSpec with_conf = Spec("conf: |\n  actions: \"enqueue, alocate\"\n");
  auto bad = ResolveScenarioConf(with_conf, nullptr, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().Format(),
            "sim.yaml:2:22: error: unknown action `alocate`; did you mean `allocate`?");
  // --conf overrides the scenario's conf; its errors name the conf file.
  std::string override_text = "actions: backfill\n";
  auto over = ResolveScenarioConf(with_conf, &override_text, "my.conf");
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->actions, std::vector<std::string>{"backfill"});
  std::string bad_override = "actions: backfill\ntiers: 3\n";
  auto bad_over = ResolveScenarioConf(with_conf, &bad_override, "my.conf");
  ASSERT_FALSE(bad_over.ok());
  EXPECT_EQ(bad_over.error().Format(), "my.conf:2:8: error: `tiers` must be a list, got `3`");
  // Without a conf anywhere, Volcano's default conf applies.
  ScenarioSpec no_conf = Spec("name: x\n");
  auto def = ResolveScenarioConf(no_conf, nullptr, "");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->actions, (std::vector<std::string>{"enqueue", "allocate", "backfill"}));
  EXPECT_EQ(def->tiers.size(), 2u);
}

TEST(SimulatorTest, CheckExpectationsListsEveryDifference) {
  ExpectSpec expect;
  expect.binds = std::map<std::string, std::string>{{"c1/a", "n1"}, {"c1/b", "n2"}};
  expect.bind_count = 3;
  expect.evictions = std::set<std::string>{"c1/x"};
  expect.pod_group_phases = std::map<std::string, std::string>{{"c1/pg", "Running"}};
  SessionResult got;
  got.binds = {{"c1/a", "n1"}, {"c1/b", "n3"}, {"c1/c", "n1"}};
  got.evictions = {"c1/y"};
  got.pod_group_phases = {{"c1/pg", "Inqueue"}, {"c1/other", "Pending"}};
  std::vector<std::string> diffs = CheckExpectations(expect, got);
  EXPECT_EQ(diffs, (std::vector<std::string>{
                       "binds: c1/b: expected n2, got n3",
                       "binds: c1/c: unexpected n1",
                       "evictions: c1/x: expected, not evicted",
                       "evictions: c1/y: unexpected eviction",
                       "podGroupPhases: c1/pg: expected Running, got Inqueue",
                   }));
  // bindCount 3 matches the three binds; unlisted podGroups are not checked.
  got.binds.erase("c1/c");
  diffs = CheckExpectations(expect, got);
  EXPECT_EQ(diffs[1], "bindCount: expected 3, got 2");
}

TEST(SimulatorTest, CreateRejectsBadOptions) {
  ScenarioSpec spec = Spec("name: x\nconf: |\n  actions: \"\"\n");
  RegistryPolicyProvider none;
  SimulatorOptions zero;
  zero.cycles = 0;
  auto sim = Simulator::Create(spec, Conf(spec), none, zero);
  ASSERT_FALSE(sim.ok());
  EXPECT_EQ(sim.error().message, "--cycles must be at least 1");
  // `actions: ""` runs an empty session: no decisions, phases still computed.
  auto ok = Simulator::Create(spec, Conf(spec), none);
  ASSERT_TRUE(ok.ok());
  auto run = (*ok)->Run();
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->sessions.size(), 1u);
  EXPECT_TRUE(run->sessions[0].binds.empty());
}

TEST(SimulatorTest, TerminatingPodsAreGoneNextCycle) {
  ScenarioSpec spec = Spec(R"(
conf: |
  actions: "enqueue, allocate"
  tiers: []
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 8Gi}}
  pods:
  - {name: old, namespace: c1, requests: {cpu: "2"}, phase: Running, node: n1, deleting: true}
  - {name: new, namespace: c1, requests: {cpu: "2"}}
)");
  RegistryPolicyProvider none;
  auto sim = MakeSim(spec, none, 2);
  ASSERT_NE(sim, nullptr);
  auto s0 = sim->RunCycle();
  ASSERT_TRUE(s0.ok());
  // While `old` terminates its CPUs are Releasing: `new` is pipelined, not bound.
  EXPECT_TRUE(s0->binds.empty());
  EXPECT_EQ(s0->pipelined, (std::map<std::string, std::string>{{"c1/new", "n1"}}));
  ASSERT_EQ(sim->state().cluster.pods.size(), 1u);
  EXPECT_EQ(sim->state().cluster.pod_groups.size(), 1u);  // old's own group went with it
  auto s1 = sim->RunCycle();
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(s1->binds, (std::map<std::string, std::string>{{"c1/new", "n1"}}));
}

// Examples are run, so they cannot rot: every example conf parses, every example scenario loads,
// and one whose conf needs no plugins runs and matches its `expect`.
TEST(SimulatorTest, ExamplesLoadAndPluginFreeOnesMatchTheirExpect) {
  namespace fs = std::filesystem;
  fs::path root = KilnSourceDir() / "examples";
  int confs = 0, scenarios = 0;
  for (const auto& entry : fs::directory_iterator(root / "conf")) {
    if (entry.path().extension() != ".conf") continue;
    auto text = ReadTextFile(entry.path().string());
    ASSERT_TRUE(text.ok());
    auto conf = ParseSchedulerConf(*text, entry.path().string());
    EXPECT_TRUE(conf.ok()) << conf.error().Format();
    ++confs;
  }
  for (const auto& entry : fs::directory_iterator(root / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    auto spec = LoadScenarioFile(entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.error().Format();
    ++scenarios;
    SchedulerConf conf = Conf(*spec);
    bool plugin_free = true;
    for (const Tier& t : conf.tiers) plugin_free &= t.plugins.empty();
    if (!plugin_free || !spec->expect) continue;
    RegistryPolicyProvider none;
    auto sim = Simulator::Create(*spec, conf, none);
    ASSERT_TRUE(sim.ok()) << sim.error().Format();
    auto run = (*sim)->Run();
    ASSERT_TRUE(run.ok()) << run.error().Format();
    EXPECT_EQ(CheckExpectations(*spec->expect, run->sessions[0]), std::vector<std::string>{})
        << entry.path();
  }
  EXPECT_GE(confs, 3);
  EXPECT_GE(scenarios, 1);
}

// A test plugin: the job named "high" is starving, and every preemptee is a fair victim.
class PreemptForHigh : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.On<ExtensionPoint::JobStarving>(self, [](const Job* j) { return j->name == "high"; });
    ssn.On<ExtensionPoint::Preemptable>(
        self, [](const Task*, const Task* const*, size_t n, uint8_t* selected) -> int32_t {
          for (size_t i = 0; i < n; ++i) selected[i] = 1;
          return 1;
        });
    return Status::Ok();
  }
};

TEST(SimulatorTest, PreemptorIsNominatedThenBoundNextCycle) {
  ScenarioSpec spec = Spec(R"(
conf: |
  actions: "allocate, preempt"
  tiers:
  - plugins:
    - name: preempt-for-high
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 8Gi}}
  podGroups:
  - {name: high, namespace: c1, phase: Inqueue, creationTimestamp: "2024-12-01T00:00:00Z"}
  - {name: low, namespace: c1, phase: Running}
  pods:
  - {name: victim, namespace: c1, group: low, requests: {cpu: "2"}, phase: Running, node: n1}
  - {name: preemptor, namespace: c1, group: high, requests: {cpu: "2"}}
)");
  PluginRegistry registry;
  ASSERT_TRUE(registry
                  .Register("preempt-for-high",
                            [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
                              return std::unique_ptr<Plugin>(std::make_unique<PreemptForHigh>());
                            })
                  .ok());
  RegistryPolicyProvider provider(std::move(registry));
  auto sim = MakeSim(spec, provider, 2);
  ASSERT_NE(sim, nullptr);
  auto s0 = sim->RunCycle();
  ASSERT_TRUE(s0.ok()) << s0.error().Format();
  EXPECT_EQ(s0->evictions, (std::set<std::string>{"c1/victim"}));
  EXPECT_EQ(s0->pipelined, (std::map<std::string, std::string>{{"c1/preemptor", "n1"}}));
  EXPECT_TRUE(s0->binds.empty());
  EXPECT_EQ(Pod(*sim, "c1/preemptor").nominated_node, "n1");
  EXPECT_EQ(Pod(*sim, "c1/victim").phase, PodPhase::Pending);  // recreated by its controller
  EXPECT_TRUE(Pod(*sim, "c1/victim").node.empty());

  // Next cycle the victim is gone from n1 and allocate places the preemptor on its nominated node.
  auto s1 = sim->RunCycle();
  ASSERT_TRUE(s1.ok());
  EXPECT_EQ(s1->binds, (std::map<std::string, std::string>{{"c1/preemptor", "n1"}}));
  EXPECT_EQ(s1->unschedulable.count("c1/victim"), 1u);
  EXPECT_TRUE(Pod(*sim, "c1/preemptor").nominated_node.empty());
  EXPECT_EQ(Pod(*sim, "c1/preemptor").phase, PodPhase::Running);
}

SimulationResult SampleResult() {
  SessionResult s;
  s.index = 0;
  s.time = *ParseTimestamp("2025-01-01T00:00:00Z");
  s.binds = {{"c1/p1", "n1"}, {"c1/p0", "n2"}};
  s.bind_order = {"c1/p1", "c1/p0"};
  s.evictions = {"c1/p9"};
  s.pipelined = {{"c1/p2", "n1"}};
  s.pod_group_phases = {{"c1/pg1", "Running"}};
  s.unschedulable = {{"c1/p3", "0/3 nodes are available: 2 Insufficient cpu, 1 Insufficient pods."}};
  s.duration_micros = 412;
  return SimulationResult{"demo", {s}};
}

TEST(SimulatorOutputTest, JsonFollowsTheContractShape) {
  EXPECT_EQ(cli::FormatJson(SampleResult()), R"({
  "scenario": "demo",
  "sessions": [
    {
      "index": 0,
      "binds": {
        "c1/p1": "n1",
        "c1/p0": "n2"
      },
      "evictions": [
        "c1/p9"
      ],
      "pipelined": {
        "c1/p2": "n1"
      },
      "podGroupPhases": {
        "c1/pg1": "Running"
      },
      "unschedulable": {
        "c1/p3": "0/3 nodes are available: 2 Insufficient cpu, 1 Insufficient pods."
      },
      "durationMicros": 412
    }
  ],
  "warnings": []
}
)");
}

TEST(SimulatorOutputTest, TableListsEveryDecision) {
  std::string table = cli::FormatTable(SampleResult());
  EXPECT_NE(table.find("session 0 at 2025-01-01T00:00:00Z (412 µs)"), std::string::npos) << table;
  EXPECT_NE(table.find("binds: 2\n    c1/p1"), std::string::npos) << table;  // bind order kept
  EXPECT_NE(table.find("c1/p9"), std::string::npos);
  EXPECT_NE(table.find("c1/pg1"), std::string::npos);
  EXPECT_NE(table.find("c1/p3: 0/3 nodes are available"), std::string::npos);
}

TEST(SimulatorOutputTest, FormatTime) {
  EXPECT_EQ(cli::FormatTime(*ParseTimestamp("2025-03-01T09:00:01Z")), "2025-03-01T09:00:01Z");
  EXPECT_EQ(cli::FormatTime(*ParseTimestamp("2025-03-01T09:00:01.25Z")), "2025-03-01T09:00:01.25Z");
  EXPECT_EQ(cli::FormatTime(0), "1970-01-01T00:00:00Z");
}

// The block printed by a failing --check must paste back into a scenario unchanged.
TEST(SimulatorOutputTest, ExpectBlockPastesBackIntoAScenario) {
  SessionResult s = SampleResult().sessions[0];
  std::string text = R"(cluster:
  nodes: [{name: n1, allocatable: {}}, {name: n2, allocatable: {}}]
  podGroups: [{name: pg1, namespace: c1}]
  pods:
  - {name: p0, namespace: c1, group: pg1}
  - {name: p1, namespace: c1, group: pg1}
  - {name: p2, namespace: c1, group: pg1}
  - {name: p3, namespace: c1, group: pg1}
  - {name: p9, namespace: c1, group: pg1}
)" + cli::FormatExpectBlock(s);
  auto spec = ParseScenario(text, "paste.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format() << "\n" << text;
  EXPECT_EQ(CheckExpectations(*spec->expect, s), std::vector<std::string>{});
}

}  // namespace
}  // namespace kiln
