// A session model built ahead and extended with one job (runtime/cluster_extend.h) is the model
// BuildCluster builds for the cluster with the job in it: the same objects in the same order, the
// same links and counters, and a session on it decides the same.
#include "runtime/cluster_extend.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/hyper_node.h"
#include "runtime/scheduler.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln {
namespace {

// Named and one-pod PodGroups, a PodGroup in a queue that does not exist, a pod naming a
// PodGroup that does not exist (on a node: it only uses it), another scheduler's pod, priority
// classes, a Numatopology and HyperNodes.
constexpr std::string_view kCluster = R"(name: extend
conf: |
  actions: "enqueue, allocate, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: drf
    - name: predicates
    - name: proportion
    - name: nodeorder
cluster:
  priorityClasses: [{name: high, value: 1000}, {name: low, value: 10, globalDefault: true}]
  queues:
  - {name: research, weight: 2}
  nodes:
  - {name: n1, labels: {zone: a}, allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
  - {name: n2, labels: {zone: a}, allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
  - {name: n3, labels: {zone: b}, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  hyperNodes:
  - {name: s1, tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {zone: a}}}}]}
  numatopologies:
  - name: n3
    policies: {CPUManagerPolicy: static}
    cpuDetail: {"0": {numa: 0, socket: 0, core: 0}, "1": {numa: 0, socket: 0, core: 1}}
    numares: {cpu: {allocatable: "0,1", capacity: 2}}
  podGroups:
  - {name: busy, namespace: c1, minMember: 2, phase: Running, queue: research}
  - {name: waiting, namespace: c1, minMember: 1, priorityClassName: high}
  - {name: lost, namespace: c2, minMember: 1, queue: nowhere}
  pods:
  - {name: b0, namespace: c1, group: busy, requests: {cpu: "2", memory: 1Gi}, phase: Running, node: n1}
  - {name: b1, namespace: c1, group: busy, requests: {cpu: "2", memory: 1Gi}, phase: Running, node: n2}
  - {name: w0, namespace: c1, group: waiting, requests: {cpu: "1", memory: 1Gi}}
  - {name: solo, namespace: c1, requests: {cpu: "1", memory: 1Gi}, phase: Running, node: n2}
  - {name: single, namespace: c3, requests: {cpu: "1", memory: 1Gi}}
  - {name: l0, namespace: c2, group: lost, requests: {cpu: "1", memory: 1Gi}, phase: Running, node: n3}
  - {name: stray, namespace: c2, group: gone, requests: {cpu: "1", memory: 1Gi}, phase: Running, node: n3}
  - {name: other, namespace: c4, schedulerName: default-scheduler, requests: {cpu: "1"}, phase: Running, node: n1}
)";

// Everything of the model that a session reads, in the model's order.
std::string Describe(const Cluster& c) {
  std::string out;
  for (const Queue* q : c.queues()) {
    out += fmt::format("queue {} #{} parent {} jobs", q->name, q->index,
                       q->parent ? q->parent->name : "-");
    for (const Job* j : q->jobs) out += " " + j->uid;
    out += "\n";
  }
  for (const Node* n : c.nodes()) {
    out += fmt::format("node {} #{} idle {} used {} numa {} hyper {} tasks", n->name, n->index,
                       n->idle.Get(kCpu), n->used.Get(kCpu), n->numa ? n->numa->cpus.size() : 0,
                       n->hyper_node != nullptr);
    for (const Task* t : n->tasks) out += " " + t->uid;
    out += "\n";
  }
  for (const Job* j : c.jobs()) {
    out += fmt::format(
        "job {} #{} queue {} priority {} min {} phase {} minres {} tasks {} ready {} valid {} "
        "allocated {} request {}:",
        j->uid, j->index, j->queue->name, j->priority, j->min_available, ToString(j->phase),
        j->min_resources.Get(kCpu), j->task_num, j->ready_num, j->valid_num, j->allocated.Get(kCpu),
        j->total_request.Get(kCpu));
    for (const Task* t : j->tasks) out += " " + t->uid;
    out += "\n";
  }
  for (const Task* t : c.tasks())
    out += fmt::format("task {} #{} job {} node {} status {} priority {} cpu {} shape {}\n", t->uid,
                       t->index, t->job->uid, t->node ? t->node->name : "-", ToString(t->status),
                       t->priority, t->resreq().Get(kCpu), t->labels().size());
  for (const Task* t : c.orphan_tasks())
    out += fmt::format("orphan {} node {}\n", t->uid, t->node ? t->node->name : "-");
  out += fmt::format("hyper nodes {} total cpu {}\n", c.hyper_nodes() != nullptr,
                     c.total_resource().Get(kCpu));
  return out;
}

struct Compared {
  std::string built, extended;
  SessionResult built_session, extended_session;
};

// `added` (scenario objects) appended to kCluster and the whole completed; the extension is made
// from the cluster without them and given them completed, as a what-if gives them.
Compared BuildBothWays(std::string_view added_groups, std::string_view added_pods) {
  std::string text(kCluster);
  text.insert(text.find("  pods:\n"), added_groups);
  text += added_pods;
  auto whole = ParseScenario(text, "whole.yaml");
  EXPECT_TRUE(whole.ok()) << (whole.ok() ? "" : whole.error().Format());
  auto alone = ParseScenario(kCluster, "alone.yaml");
  EXPECT_TRUE(alone.ok());
  if (!whole.ok() || !alone.ok()) return {};
  CompleteOptions complete;
  complete.now = 1'700'000'000'000'000'000;
  CompleteCluster(whole->cluster, complete);
  CompleteCluster(alone->cluster, complete);
  // The added objects as the whole's completion left them (one-pod groups made for them too).
  std::vector<PodGroupSpec> groups;
  std::vector<PodSpec> pods;
  std::set<std::string> had_groups, had_pods;
  for (const PodGroupSpec& g : alone->cluster.pod_groups) had_groups.insert(g.Uid());
  for (const PodSpec& p : alone->cluster.pods) had_pods.insert(p.Key());
  for (const PodGroupSpec& g : whole->cluster.pod_groups)
    if (!had_groups.count(g.Uid())) groups.push_back(g);
  for (const PodSpec& p : whole->cluster.pods)
    if (!had_pods.count(p.Key())) pods.push_back(p);

  auto conf = ResolveScenarioConf(*whole, nullptr, "");
  EXPECT_TRUE(conf.ok());
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  EXPECT_TRUE(provider.ok());
  auto registry = ResolvePlugins(*conf, **provider);
  EXPECT_TRUE(registry.ok()) << (registry.ok() ? "" : registry.error().Format());

  Compared out;
  auto built = BuildCluster(whole->cluster);
  EXPECT_TRUE(built.ok()) << (built.ok() ? "" : built.error().Format());
  PartialCluster part(alone->cluster);
  EXPECT_TRUE(part.CanAdd(groups));
  auto extended = std::move(part).Finish(groups, pods);
  EXPECT_TRUE(extended.ok()) << (extended.ok() ? "" : extended.error().Format());
  if (!built.ok() || !extended.ok() || !registry.ok()) return out;
  out.built = Describe(*built);
  out.extended = Describe(*extended);
  auto a = RunSession(std::move(*built), *conf, *registry, complete.now, 0);
  auto b = RunSession(std::move(*extended), *conf, *registry, complete.now, 0);
  EXPECT_TRUE(a.ok() && b.ok());
  if (a.ok()) out.built_session = std::move(*a);
  if (b.ok()) out.extended_session = std::move(*b);
  return out;
}

void ExpectSame(const Compared& c) {
  EXPECT_FALSE(c.built.empty());
  EXPECT_EQ(c.extended, c.built);
  EXPECT_EQ(c.extended_session.binds, c.built_session.binds);
  EXPECT_EQ(c.extended_session.bind_order, c.built_session.bind_order);
  EXPECT_EQ(c.extended_session.pipelined, c.built_session.pipelined);
  EXPECT_EQ(c.extended_session.evictions, c.built_session.evictions);
  EXPECT_EQ(c.extended_session.pod_group_phases, c.built_session.pod_group_phases);
  EXPECT_EQ(c.extended_session.unschedulable, c.built_session.unschedulable);
}

TEST(PartialCluster, AloneIsBuildCluster) {
  auto spec = ParseScenario(kCluster, "alone.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  CompleteCluster(spec->cluster, {});
  auto built = BuildCluster(spec->cluster);
  ASSERT_TRUE(built.ok()) << built.error().Format();
  auto finished = PartialCluster(spec->cluster).Finish({}, {});
  ASSERT_TRUE(finished.ok());
  const std::string d = Describe(*built);
  EXPECT_EQ(Describe(*finished), d);
  // The cluster has what the comparison is meant to cover.
  for (const char* want : {"job c1/podgroup-c1-solo", "orphan c2-l0 node n3", "orphan c2-stray",
                           "orphan c4-other node n1", "numa 2", "hyper true", "hyper nodes true"})
    EXPECT_NE(d.find(want), std::string::npos) << want << "\n" << d;
}

TEST(PartialCluster, ANamedJobGoesBeforeTheOnePodGroups) {
  ExpectSame(BuildBothWays(
      "  - {name: train, namespace: c1, minMember: 2, priorityClassName: high}\n",
      "  - {name: t0, namespace: c1, group: train, requests: {cpu: \"2\", memory: 1Gi}}\n"
      "  - {name: t1, namespace: c1, group: train, requests: {cpu: \"2\", memory: 1Gi}}\n"));
}

TEST(PartialCluster, AJobInANewNamespaceAndAQueueThatDoesNotExist) {
  Compared c = BuildBothWays(
      "  - {name: elsewhere, namespace: fresh, minMember: 1, queue: nosuch}\n",
      "  - {name: e0, namespace: fresh, group: elsewhere, requests: {cpu: \"1\", memory: 1Gi}}\n");
  ExpectSame(c);
  EXPECT_EQ(c.built_session.pod_group_phases.count("fresh/elsewhere"), 0u) << "not scheduled";
}

TEST(PartialCluster, PodsWithoutAGroupAndPodsJoiningAnExistingOne) {
  ExpectSame(BuildBothWays(
      "",
      "  - {name: loner, namespace: new, requests: {cpu: \"1\", memory: 1Gi}}\n"
      "  - {name: w1, namespace: c1, group: waiting, requests: {cpu: \"1\", memory: 1Gi}}\n"
      "  - {name: hi, namespace: c3, priorityClassName: high, requests: {cpu: \"3\"}}\n"));
}

TEST(PartialCluster, AJobInAnotherQueueThatTheClusterCannotFit) {
  ExpectSame(BuildBothWays(
      "  - {name: huge, namespace: c1, minMember: 3, queue: research}\n",
      "  - {name: h0, namespace: c1, group: huge, requests: {cpu: \"6\", memory: 1Gi}}\n"
      "  - {name: h1, namespace: c1, group: huge, requests: {cpu: \"6\", memory: 1Gi}}\n"
      "  - {name: h2, namespace: c1, group: huge, requests: {cpu: \"6\", memory: 1Gi}}\n"));
}

// c2/stray names PodGroup c2/gone, which the cluster lacks: adding it would make the stray pod
// its task, which the partial model cannot do; it says so instead of building something else.
TEST(PartialCluster, APodGroupPodsAlreadyNameIsRefused) {
  auto spec = ParseScenario(kCluster, "alone.yaml");
  ASSERT_TRUE(spec.ok());
  CompleteCluster(spec->cluster, {});
  PodGroupSpec gone;
  gone.name = "gone";
  gone.namespace_ = "c2";
  gone.queue = "default";
  gone.min_member = 1;
  PartialCluster part(spec->cluster);
  EXPECT_FALSE(part.CanAdd({gone}));
  auto r = std::move(part).Finish({gone}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("build the cluster whole"), std::string::npos);
}

}  // namespace
}  // namespace kiln
