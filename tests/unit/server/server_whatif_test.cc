// Off-path sessions (server/whatif.h): the request body read through the Kubernetes decoders, the
// what-if answer on a small cluster, the off-path configuration (its own set, refused when the
// files changed under the live one), and the live loop and what-ifs running at once (also in
// kiln_concurrency_tests, for ThreadSanitizer).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/scheduler.h"
#include "server/policy_set.h"
#include "server/scheduler_loop.h"
#include "server/whatif.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/server/server_fixtures.h"
#include "tests/unit/temp_dir.h"

namespace kiln::server {
namespace {

using namespace std::chrono_literals;

// Two 4-cpu nodes; n1 runs a 3-cpu pod of c1/busy.
constexpr std::string_view kScenario = R"(name: whatif
cluster:
  nodes:
  - name: n1
    allocatable: {cpu: "4", memory: 8Gi}
  - name: n2
    allocatable: {cpu: "4", memory: 8Gi}
  podGroups:
  - {name: busy, namespace: c1, minMember: 1, phase: Running}
  - {name: waiting, namespace: c1, minMember: 1}
  pods:
  - {name: r1, namespace: c1, group: busy, requests: {cpu: "3", memory: 1Gi}, phase: Running, node: n1}
  - {name: w1, namespace: c1, group: waiting, requests: {cpu: "1", memory: 1Gi}}
)";

constexpr std::string_view kJob = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train, namespace: c1}
spec: {minMember: 2, queue: default}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: train-0
    namespace: c1
    annotations: {scheduling.k8s.io/group-name: train}
  spec:
    containers: [{name: main, resources: {requests: {cpu: "2", memory: 1Gi}}}]
- apiVersion: v1
  kind: Pod
  metadata:
    name: train-1
    namespace: c1
    annotations: {scheduling.k8s.io/group-name: train}
  spec:
    containers: [{name: main, resources: {requests: {cpu: 2, memory: 1Gi}}}]
)";

ClusterSpec TestCluster() {
  auto spec = ParseScenario(kScenario, "whatif.yaml");
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().Format());
  return spec.ok() ? spec->cluster : ClusterSpec{};
}

std::shared_ptr<const PolicySet> DefaultSet() {
  auto set = LoadPolicySet(PolicySources{}, CompiledProviderFactory(), 1);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : set.error().Format());
  return set.ok() ? *set : nullptr;
}

TEST(WhatIfInput, ReadsYamlDocumentsListsAndJson) {
  auto o = ParseWhatIfObjects(kJob, /*json=*/false, {});
  ASSERT_TRUE(o.ok()) << o.error().Format();
  ASSERT_TRUE(o->group.has_value());
  EXPECT_EQ(o->group->Uid(), "c1/train");
  EXPECT_EQ(o->group->min_member, 2);
  ASSERT_EQ(o->pods.size(), 2u);
  EXPECT_EQ(o->pods[1].Key(), "c1/train-1");
  EXPECT_EQ(o->pods[1].group, "train");
  EXPECT_EQ(o->pods[1].requests.Get(kCpu), 2000);  // a YAML number reads as a quantity
  EXPECT_EQ(o->pods[0].scheduler_name(), "volcano");

  auto j = ParseWhatIfObjects(
      R"([{"kind": "Pod", "metadata": {"name": "p", "namespace": "c2"},
           "spec": {"containers": [{"name": "m", "resources": {"requests": {"cpu": "500m"}}}]}}])",
      /*json=*/true, {});
  ASSERT_TRUE(j.ok()) << j.error().Format();
  EXPECT_FALSE(j->group.has_value());
  EXPECT_EQ(j->pods.at(0).requests.Get(kCpu), 500);
}

TEST(WhatIfInput, BadInputSaysWhereAndWhat) {
  auto expect_error = [](std::string_view body, bool json, std::string_view what) {
    auto o = ParseWhatIfObjects(body, json, {});
    ASSERT_FALSE(o.ok()) << body;
    EXPECT_NE(o.error().Format().find(what), std::string::npos) << o.error().Format();
  };
  expect_error("kind: Pod\nmetadata: {name: x\n", false, "not YAML");
  expect_error("{\"kind\": ", true, "not JSON");
  expect_error("kind: Deployment\nmetadata: {name: d}\n", false,
               "object 1 (Deployment d): kind `Deployment` is not read");
  expect_error(
      "kind: Pod\nmetadata: {name: p, namespace: c1}\nspec:\n  containers:\n  - name: m\n"
      "    resources: {requests: {cpu: lots}}\n",
      false, "object 1 (Pod c1/p)");
  expect_error("kind: Pod\nmetadata: {name: p}\nspec: {nodeName: n1, containers: [{name: m}]}\n",
               false, "spec.nodeName is set");
  expect_error("kind: PodGroup\nmetadata: {name: a}\n---\nkind: PodGroup\nmetadata: {name: b}\n",
               false, "one PodGroup per what-if");
  expect_error(
      "kind: PodGroup\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: p}\n"
      "spec: {containers: [{name: m}]}\n",
      false, "pod default/p names no PodGroup");
  expect_error("", false, "nothing to add");
  WhatIfLimits small;
  small.max_body_bytes = 10;
  auto o = ParseWhatIfObjects(kJob, false, small);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("at most 10"), std::string::npos);
}

TEST(WhatIf, PlacesTheJobAsTheSimulatorWouldWithoutTouchingTheCluster) {
  auto set = DefaultSet();
  ASSERT_TRUE(set);
  auto objects = ParseWhatIfObjects(kJob, false, {});
  ASSERT_TRUE(objects.ok());
  ClusterSpec cluster = TestCluster();
  auto a = RunWhatIf(cluster, *objects, *set, 0);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  EXPECT_TRUE(a->admitted);
  EXPECT_EQ(a->job, "c1/train");
  // n1 has 1 cpu left: both 2-cpu pods fit only on n2 (which w1 shares).
  EXPECT_EQ(a->placements, (std::map<std::string, std::string>{{"c1/train-0", "n2"},
                                                               {"c1/train-1", "n2"}}));
  EXPECT_TRUE(a->reasons.empty());
  EXPECT_GE(a->queue_position, 1);
  // The simulator on the same cluster with the job added decides the same.
  auto spec = ParseScenario(kScenario, "whatif.yaml");
  ASSERT_TRUE(spec.ok());
  spec->cluster.pod_groups.push_back(*objects->group);
  for (const PodSpec& p : objects->pods) spec->cluster.pods.push_back(p);
  CompleteOptions complete;
  CompleteCluster(spec->cluster, complete);
  auto sim = Simulator::Create(*spec, set->conf, *set->provider);
  ASSERT_TRUE(sim.ok());
  auto r = (*sim)->RunCycle();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->binds, a->session.binds);

  nlohmann::json j = nlohmann::json::parse(WhatIfJson(*a));
  for (const char* key : {"admitted", "admission", "placements", "pipelined", "evictions",
                          "queuePosition", "reasons"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["admission"].size(), 3u);
}

TEST(WhatIf, APodNoNodeTakesGetsReasons) {
  auto set = DefaultSet();
  ASSERT_TRUE(set);
  auto objects = ParseWhatIfObjects(
      "kind: Pod\nmetadata: {name: picky, namespace: c1}\n"
      "spec: {nodeSelector: {disktype: nvme}, containers: [{name: m, resources: {requests: "
      "{cpu: '1'}}}]}\n",
      false, {});
  ASSERT_TRUE(objects.ok());
  auto a = RunWhatIf(TestCluster(), *objects, *set, 0);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  EXPECT_TRUE(a->admitted);
  EXPECT_TRUE(a->placements.empty());
  ASSERT_EQ(a->reasons.count("c1/picky"), 1u);
  std::string all;
  for (const WhatIfReason& r : a->reasons["c1/picky"]) all += r.message + "\n";
  EXPECT_NE(all.find("node(s) didn't match Pod's node affinity/selector"), std::string::npos) << all;
  EXPECT_NE(all.find("(2 nodes)"), std::string::npos) << all;
}

// A one-pod group's minResources are the pod's requests: 64 cpu on an 8-cpu cluster is refused
// at enqueue, and the answer names who refused it.
TEST(WhatIf, EnqueueRefusalNamesThePlugins) {
  auto set = DefaultSet();
  ASSERT_TRUE(set);
  auto objects = ParseWhatIfObjects(
      "kind: Pod\nmetadata: {name: huge, namespace: c1}\n"
      "spec: {containers: [{name: m, resources: {requests: {cpu: '64'}}}]}\n",
      false, {});
  ASSERT_TRUE(objects.ok());
  auto a = RunWhatIf(TestCluster(), *objects, *set, 0);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  EXPECT_FALSE(a->admitted);
  EXPECT_EQ(a->job, "c1/podgroup-c1-huge");
  EXPECT_EQ(a->admission_plugin, "overcommit,proportion");
  ASSERT_EQ(a->reasons.count("c1/huge"), 1u);
  EXPECT_EQ(a->reasons["c1/huge"].at(0).message.rfind("not admitted: overcommit and proportion", 0), 0u)
      << a->reasons["c1/huge"].at(0).message;
}

TEST(WhatIf, ObjectsTheClusterHasAreRefused) {
  auto set = DefaultSet();
  ASSERT_TRUE(set);
  auto objects = ParseWhatIfObjects(
      "kind: Pod\nmetadata: {name: w1, namespace: c1}\nspec: {containers: [{name: m}]}\n", false,
      {});
  ASSERT_TRUE(objects.ok());
  auto a = RunWhatIf(TestCluster(), *objects, *set, 0);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("pod c1/w1 already exists"), std::string::npos);
}

// A Volcano Job is the PodGroup and pods its controller makes: placed as they would be, its
// PodGroup's minResources computed (2 workers of 2 cpu, 1 cpu of ps: 5 cpu), nothing else with it.
constexpr std::string_view kVolcanoJob = R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: mnist, namespace: c1}
spec:
  minAvailable: 3
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: ps, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: w, resources: {requests: {cpu: "2", memory: 1Gi}}}]
)";

TEST(WhatIfInput, ReadsAVolcanoJob) {
  auto o = ParseWhatIfObjects(kVolcanoJob, false, {});
  ASSERT_TRUE(o.ok()) << o.error().Format();
  ASSERT_TRUE(o->group);
  EXPECT_EQ(o->group->Uid(), "c1/mnist");
  EXPECT_EQ(o->group->min_member, 3);
  ASSERT_EQ(o->pods.size(), 3u);
  EXPECT_EQ(o->pods[0].Key(), "c1/mnist-ps-0");
  EXPECT_EQ(o->pods[2].Key(), "c1/mnist-worker-1");
  EXPECT_EQ(o->pods[2].task(), "worker");
  EXPECT_EQ(o->pods[2].JobUid(), "c1/mnist");

  auto set = DefaultSet();
  ASSERT_TRUE(set);
  auto a = RunWhatIf(TestCluster(), *o, *set, 0);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  EXPECT_EQ(a->job, "c1/mnist");
  // Every pod of the job is answered for: placed, or with its reasons.
  EXPECT_EQ(a->placements.size() + a->pipelined.size() + a->reasons.size(), 3u);
  const auto& groups = a->session.pod_group_phases;
  EXPECT_EQ(groups.count("c1/mnist"), 1u);

  auto alone = ParseWhatIfObjects(std::string(kVolcanoJob) + "---\n" + std::string(kJob), false, {});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("object 1 (Job c1/mnist): a Job comes alone"),
            std::string::npos)
      << alone.error().message;
  auto bad = ParseWhatIfObjects(
      "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n"
      "spec: {tasks: [{name: a, replicas: many}]}\n",
      false, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "object 1 (Job j): spec.tasks[0].replicas: must be an integer");
}

// n1 and n2 each run a low-priority pod and a high one; c1/high-0 (pending, high) preempts one of
// the low pods in every session. A what-if of another high-priority pod makes the session evict
// both; the answer names only the eviction the job adds.
std::string PreemptScenario() {
  std::string text = R"(name: whatif-preempt
conf: |
  actions: "enqueue, allocate, preempt"
  tiers:
  - plugins:
    - name: priority
cluster:
  priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
  podGroups:
  - {name: low, namespace: c1, minMember: 1, phase: Running, priorityClassName: low}
  - {name: peer, namespace: c1, minMember: 1, phase: Running, priorityClassName: high}
  - {name: high, namespace: c1, minMember: 1, phase: Inqueue, priorityClassName: high}
)";
  std::string nodes = "  nodes:\n";
  std::string pods = "  pods:\n  - {name: high-0, namespace: c1, group: high, requests: {cpu: \"1\", memory: 1Gi}}\n";
  for (int i = 0; i < 2; ++i) {
    nodes += fmt::format("  - {{name: n{}, allocatable: {{cpu: \"2\", memory: 8Gi, pods: \"110\"}}}}\n", i + 1);
    for (const char* group : {"low", "peer"})
      pods += fmt::format("  - {{name: {}-{}, namespace: c1, group: {}, phase: Running, node: n{}, "
                          "requests: {{cpu: \"1\", memory: 1Gi}}}}\n",
                          group, i, group, i + 1);
  }
  return text + nodes + pods;
}

TEST(WhatIf, EvictionsAreTheJobsOwn) {
  auto spec = ParseScenario(PreemptScenario(), "preempt.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  // The conf of the scenario, built as the live one would be.
  testing::TempDir dir;
  auto conf = dir.path() / "scheduler.conf";
  testing::WriteFileWhole(conf, spec->conf_text);
  PolicySources sources;
  sources.conf_file = conf.string();
  auto preempting = LoadPolicySet(sources, CompiledProviderFactory(), 1);
  ASSERT_TRUE(preempting.ok()) << preempting.error().Format();
  auto objects = ParseWhatIfObjects(
      "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: urgent, namespace: c1}\n"
      "spec: {minMember: 1, priorityClassName: high}\n---\n"
      "kind: Pod\nmetadata: {name: urgent-0, namespace: c1, annotations: {scheduling.k8s.io/group-name: urgent}}\n"
      "spec: {priorityClassName: high, containers: [{name: m, resources: {requests: {cpu: '1', memory: 1Gi}}}]}\n",
      false, {});
  ASSERT_TRUE(objects.ok()) << objects.error().Format();

  OffPathCluster base;
  base.spec = spec->cluster;
  base.warnings = CompleteCluster(base.spec, {});
  const size_t pods = base.spec.pods.size(), groups = base.spec.pod_groups.size();
  auto a = RunWhatIfOn(base, *objects, **preempting);
  ASSERT_TRUE(a.ok()) << a.error().Format();
  ASSERT_EQ(a->session.evictions.size(), 2u) << "both low pods go in the session with the job";
  ASSERT_TRUE(base.baseline_evictions);
  ASSERT_EQ(base.baseline_evictions->size(), 1u) << "high-0 evicts one without the job";
  ASSERT_EQ(a->evictions.size(), 1u);
  EXPECT_EQ(base.baseline_evictions->count(a->evictions[0]), 0u) << a->evictions[0];
  EXPECT_EQ(a->evictions[0].rfind("c1/low-", 0), 0u) << a->evictions[0];
  // The shared copy is left as it was, and the baseline is reused by the next what-if.
  EXPECT_EQ(base.spec.pods.size(), pods);
  EXPECT_EQ(base.spec.pod_groups.size(), groups);
  auto again = RunWhatIfOn(base, *objects, **preempting);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->evictions, a->evictions);
  // Each answer equals one on a fresh copy of the cluster.
  auto fresh = RunWhatIf(spec->cluster, *objects, **preempting, 0);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->evictions, a->evictions);
  EXPECT_EQ(fresh->session.evictions, a->session.evictions);
  EXPECT_EQ(fresh->pipelined, a->pipelined);
}

// A what-if on a copy whose session model was built ahead (OffPathCluster::spares) answers as one
// that builds the whole copy with the job in it: for a job placed, one left unplaced (a second
// session explains it), one refused at enqueue, and a job whose pods join a PodGroup the cluster
// has. The model is used up; the copy is left as it was.
TEST(WhatIf, TheModelBuiltAheadAnswersAsABuildOfTheWholeCopy) {
  auto set = DefaultSet();
  ASSERT_TRUE(set);
  const std::vector<std::string> bodies = {
      std::string(kJob),
      "kind: Pod\nmetadata: {name: picky, namespace: c1}\n"
      "spec: {nodeSelector: {disktype: nvme}, containers: [{name: m, resources: {requests: "
      "{cpu: '1'}}}]}\n",
      "kind: Pod\nmetadata: {name: huge, namespace: c1}\n"
      "spec: {containers: [{name: m, resources: {requests: {cpu: '64'}}}]}\n",
      "kind: Pod\nmetadata: {name: w2, namespace: c1, annotations: {scheduling.k8s.io/group-name: "
      "waiting}}\nspec: {containers: [{name: m, resources: {requests: {cpu: '1'}}}]}\n"};
  for (const std::string& body : bodies) {
    SCOPED_TRACE(body);
    auto objects = ParseWhatIfObjects(body, false, {});
    ASSERT_TRUE(objects.ok()) << objects.error().Format();
    auto fresh = RunWhatIf(TestCluster(), *objects, *set, 0);
    ASSERT_TRUE(fresh.ok()) << fresh.error().Format();
    EXPECT_FALSE(fresh->prebuilt);

    OffPathCluster base;
    base.spec = TestCluster();
    NormaliseLikeScenario(base.spec);
    base.warnings = CompleteCluster(base.spec, {});
    base.spares.emplace_back(base.spec);
    const size_t pods = base.spec.pods.size(), groups = base.spec.pod_groups.size();
    auto a = RunWhatIfOn(base, *objects, *set);
    ASSERT_TRUE(a.ok()) << a.error().Format();
    EXPECT_TRUE(a->prebuilt);
    EXPECT_EQ(base.spare_count(), 0u) << "used up";
    EXPECT_EQ(WhatIfJson(*a), WhatIfJson(*fresh));
    EXPECT_EQ(a->session.binds, fresh->session.binds);
    EXPECT_EQ(a->session.pod_group_phases, fresh->session.pod_group_phases);
    EXPECT_EQ(a->session.unschedulable, fresh->session.unschedulable);
    EXPECT_EQ(base.spec.pods.size(), pods);
    EXPECT_EQ(base.spec.pod_groups.size(), groups);
    // Without a model ready the same copy answers the same, built whole.
    auto again = RunWhatIfOn(base, *objects, *set);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->prebuilt);
    EXPECT_EQ(WhatIfJson(*again), WhatIfJson(*a));
  }
}

// The copy off-path sessions share (server/offpath_snapshot.h): none while nobody asks, one per
// live session while someone does, taken by the publisher and shared by the requests.
TEST(OffPathSnapshots, CopiesAfterSessionsOnlyWhileAsked) {
  std::atomic<int> taken{0};
  OffPathSnapshots snaps(
      [&](TimeNs) {
        ++taken;
        return TestCluster();
      },
      [] { return TimeNs{0}; }, {});
  snaps.SessionDone();  // nobody asked yet
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(taken.load(), 0);
  double waited = -1;
  auto first = snaps.Current(&waited);  // the first request takes its own
  EXPECT_EQ(taken.load(), 1);
  EXPECT_GE(waited, 0);
  EXPECT_TRUE(std::any_of(first->spec.queues.begin(), first->spec.queues.end(),
                          [](const QueueSpec& q) { return q.name == "default"; }))
      << "completed";
  EXPECT_EQ(snaps.Current(nullptr).get(), first.get()) << "no session since: the same copy";
  EXPECT_EQ(taken.load(), 1);
  snaps.SessionDone();  // someone asked lately: the publisher copies, the request waits for it
  auto second = snaps.Current(nullptr);
  EXPECT_EQ(taken.load(), 2);
  EXPECT_NE(second.get(), first.get());
  EXPECT_EQ(second->after_session, 2);
  EXPECT_EQ(snaps.Current(nullptr).get(), second.get());
  // The session model is built off the request's path: after the thread published a copy, or
  // after a what-if took the model (Replenish). The request's own first copy has none.
  // Two are kept ready (Options::spare_models), so that a request right after another finds one
  // while the publisher builds the next.
  EXPECT_EQ(first->spare_count(), 0u);
  snaps.Replenish();
  EXPECT_TRUE(fixtures::WaitFor([&] { return second->spare_count() == 2; }));
  const uint64_t built = snaps.spares();
  EXPECT_GE(built, 2u);
  EXPECT_TRUE(second->TakeSpare().has_value());  // a what-if took one
  EXPECT_EQ(second->spare_count(), 1u);           // the next request finds the other
  snaps.Replenish();                              // the publisher builds it again
  EXPECT_TRUE(fixtures::WaitFor([&] { return snaps.spares() == built + 1; }));
  EXPECT_TRUE(fixtures::WaitFor([&] { return second->spare_count() == 2; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(snaps.spares(), built + 1) << "never more than two ahead";
}

TEST(OffPathRunner, RefusesToAnswerForFilesTheLiveSchedulerHasNotLoaded) {
  testing::TempDir dir;
  auto conf = dir.path() / "scheduler.conf";
  testing::WriteFileWhole(conf, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n");
  PolicySources sources;
  sources.conf_file = conf.string();
  auto live = LoadPolicySet(sources, CompiledProviderFactory(), 1);
  ASSERT_TRUE(live.ok()) << live.error().Format();
  OffPathRunner::Deps deps;
  deps.sources = sources;
  deps.factory = CompiledProviderFactory();
  std::shared_ptr<const PolicySet> current = *live;
  deps.live = [&] { return current; };
  deps.snapshot = [](TimeNs) { return TestCluster(); };
  deps.clock = [] { return TimeNs{0}; };
  OffPathRunner runner(deps);
  auto first = runner.Policies();
  ASSERT_TRUE(first.ok()) << first.error().Format();
  EXPECT_NE(first->get(), current.get()) << "an off-path set of its own";
  EXPECT_EQ((*first)->hash, current->hash);
  EXPECT_EQ(runner.Policies()->get(), first->get()) << "kept while the generation stands";

  // Edited on disk; the live scheduler has not reloaded (a new generation would be needed).
  testing::WriteFileWhole(conf, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: binpack\n");
  auto live2 = LoadPolicySet(sources, CompiledProviderFactory(), 2);
  ASSERT_TRUE(live2.ok());
  // A live generation 2 whose hash is not what the files now hash to (the files changed again
  // after it was loaded).
  auto fake = std::make_shared<PolicySet>();
  fake->generation = 2;
  fake->hash = current->hash;
  current = fake;
  auto refused = runner.Policies();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("changed since the live configuration"),
            std::string::npos)
      << refused.error().message;
  auto reply = runner.WhatIf(kJob, "application/yaml");
  EXPECT_EQ(reply.status, 503) << reply.body;

  current = *live2;  // the live scheduler took the edit
  auto rebuilt = runner.Policies();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.error().Format();
  EXPECT_EQ((*rebuilt)->hash, (*live2)->hash);
  reply = runner.WhatIf(kJob, "application/yaml; charset=utf-8");
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(runner.WhatIf(kJob, "text/plain").status, 415);
  EXPECT_EQ(runner.WhatIf("kind: Foo\n", "application/yaml").status, 400);
  EXPECT_NE(runner.MetricsText().find(
                "kiln_whatif_requests_total{endpoint=\"whatif\",outcome=\"ok\"} 1"),
            std::string::npos)
      << runner.MetricsText();
}

// The scenario as a live cluster: Snapshot and Apply hold its lock, as the Kubernetes binding's
// cache does, and so does the off-path runner's snapshot copy.
class LockedCluster : public ClusterBinding {
 public:
  explicit LockedCluster(ScenarioSpec spec) : sim_(std::move(spec)) {}
  Result<Cluster> Snapshot(TimeNs now) override {
    std::lock_guard<std::mutex> l(mu_);
    return sim_.Snapshot(now);
  }
  void Apply(const SessionResult& r) override {
    std::lock_guard<std::mutex> l(mu_);
    sim_.Apply(r);
    for (const auto& [pod, node] : r.binds)
      if (pod.find("train") != std::string::npos) what_if_leaked = true;
  }
  ClusterSpec Copy() {
    std::lock_guard<std::mutex> l(mu_);
    return sim_.state().cluster;
  }
  std::atomic<bool> what_if_leaked{false};

 private:
  std::mutex mu_;
  SimulatedCluster sim_;
};

TEST(OffPathRunner, RunsBesideTheLiveLoop) {
  auto spec = ParseScenario(kScenario, "whatif.yaml");
  ASSERT_TRUE(spec.ok());
  LockedCluster cluster(*spec);
  PolicyReloader reloader(PolicySources{}, CompiledProviderFactory());
  ASSERT_TRUE(reloader.LoadInitial().ok());
  LoopOptions options;
  options.period = 1ms;
  SchedulerLoop loop(cluster, reloader, nullptr, options);

  OffPathRunner::Deps deps;
  deps.sources = reloader.sources();
  deps.factory = CompiledProviderFactory();
  deps.live = [&] { return reloader.Current(); };
  deps.snapshot = [&](TimeNs) { return cluster.Copy(); };
  deps.clock = WallClockNs;
  deps.explain_json = [](const Explanation& e) { return std::to_string(e.jobs.size()); };
  OffPathRunner runner(deps);
  // As kiln serve does: each live session asks the publisher for a new copy (its own thread),
  // which the what-ifs then share.
  loop.SetObserver([&](const SessionResult&, const PolicySet&) { runner.SessionDone(); });
  std::thread live([&] { loop.Run(); });
  // Two clients at once: one of them may be told 429 (one off-path question at a time), and
  // retries as a client would; every question must get its answer.
  std::atomic<int> ok{0}, busy{0}, other{0};
  auto ask = [&] {
    for (int i = 0; i < 10; ++i) {
      for (int attempt = 0; attempt < 1000; ++attempt) {
        auto r = i % 2 ? runner.Explain("podgroup", "c1/busy") : runner.WhatIf(kJob, "application/yaml");
        if (r.status == 429) {
          busy.fetch_add(1);
          std::this_thread::sleep_for(1ms);
          continue;
        }
        (r.status == 200 ? ok : other).fetch_add(1);
        break;
      }
    }
  };
  std::thread a(ask), b(ask);
  a.join();
  b.join();
  int64_t before = loop.sessions();
  std::this_thread::sleep_for(20ms);
  loop.Stop();
  live.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok.load(), 20) << busy.load() << " answers were 429";
  EXPECT_GT(loop.sessions(), 0);
  EXPECT_GE(loop.sessions(), before);
  EXPECT_FALSE(cluster.what_if_leaked.load()) << "a what-if pod reached the live cluster";
  // Models were built beside the loop (by the publisher, or by requests that did not wait).
  EXPECT_NE(runner.MetricsText().find("\nkiln_whatif_prebuilt_sessions_total "), std::string::npos);
  for (const PodSpec& p : cluster.Copy().pods) EXPECT_EQ(p.name.find("train"), std::string::npos);
}

}  // namespace
}  // namespace kiln::server
