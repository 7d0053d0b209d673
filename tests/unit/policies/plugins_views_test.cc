// What the pdb, nodegroup, usage, resourcequota, task-topology and sla policies read beyond the
// core views: the cluster's PodDisruptionBudgets and ResourceQuotas (session.pdbs,
// session.resource_quotas), a queue's spec.parent and spec.affinity (nodegroup) — from the
// scenario file through BuildCluster to a compiled policy — and a scheduler.conf naming all six
// plugins loads and runs a session without a policy fault.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/cluster_spec.h"
#include "runtime/session.h"
#include "simulator/simulator.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

ScenarioSpec Spec(std::string_view text) {
  auto r = ParseScenario(text, "views.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
  return r.ok() ? std::move(*r) : ScenarioSpec{};
}

constexpr std::string_view kCluster = R"(name: views
conf: |
  actions: ""
  tiers: []
cluster:
  queues:
  - name: root
    affinity:
      nodeGroupAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [g1, g2]
        preferredDuringSchedulingIgnoredDuringExecution: [g2]
      nodeGroupAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [g3]
        preferredDuringSchedulingIgnoredDuringExecution: [g4, g5]
  - {name: blank, parent: root, affinity: {}}
  - {name: plain, parent: root}
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  podGroups:
  - {name: pg, namespace: c1, queue: plain, minMember: 1}
  pods:
  - {name: p1, namespace: c1, group: pg, labels: {app: web}, requests: {cpu: "1", memory: 1Gi}}
  pdbs:
  - {name: web, namespace: c1, selector: {app: web}, disruptionsAllowed: 2, disruptedPods: [a, b, c]}
  - {name: db, namespace: c2, selector: {matchLabels: {app: db}}, disruptionsAllowed: 0}
  resourceQuotas:
  - {name: rq, namespace: c1, hard: {cpu: "8", nvidia.com/gpu: "2"}, used: {cpu: "3"}}
)";

TEST(PluginViews, BuildClusterCarriesPdbsQuotasAndQueueAffinity) {
  ScenarioSpec spec = Spec(kCluster);
  auto cluster = BuildCluster(spec.cluster);
  ASSERT_TRUE(cluster.ok()) << cluster.error().Format();
  ASSERT_EQ(cluster->pdb_list().size(), 2u);
  EXPECT_EQ(cluster->pdb_list()[0]->name, "web");
  EXPECT_EQ(cluster->pdb_list()[0]->disruptions_allowed, 2);
  EXPECT_EQ(cluster->pdb_list()[1]->namespace_, "c2");
  ASSERT_EQ(cluster->resource_quota_list().size(), 1u);
  EXPECT_EQ(cluster->resource_quota_list()[0]->hard.cpu(), 8000);
  const Queue* root = cluster->FindQueue("root");
  const Queue* blank = cluster->FindQueue("blank");
  const Queue* plain = cluster->FindQueue("plain");
  ASSERT_TRUE(root && blank && plain);
  EXPECT_TRUE(root->has_affinity);
  EXPECT_TRUE(blank->has_affinity);  // `affinity: {}` is set, only empty
  EXPECT_FALSE(plain->has_affinity);
  EXPECT_EQ(root->node_group_anti_affinity.preferred, (std::vector<std::string>{"g4", "g5"}));
}

// A node_order handler over the session of kCluster, evaluated for p1 on n1.
double Score(const std::string& body) {
  ScenarioSpec spec = Spec(kCluster);
  auto cluster = BuildCluster(spec.cluster);
  EXPECT_TRUE(cluster.ok());
  if (!cluster.ok()) return std::nan("");
  SchedulerConf conf;
  Session ssn(std::move(*cluster), conf, 0, "views");
  auto l = testing::LoadPolicy(
      "policy views;\non node_order(task: Task, node: Node) -> float {\n" + body + "\n}\n",
      "test/plugins_views_");
  if (!l) return std::nan("");
  l->ctx.session = &ssn;
  const Task* task = ssn.cluster().FindTask("c1-p1");
  const Node* node = ssn.cluster().FindNode("n1");
  EXPECT_TRUE(task && node);
  double score = -12345;
  EXPECT_EQ(l->Fn<ExtensionPoint::NodeOrder>()(&l->ctx, task, node, &score), 0);
  return score;
}

TEST(PluginViews, SessionPdbsAreReadableRecords) {
  // 2 budgets; web: allowed 2, 3 disrupted pods, selects p1; db: allowed 0, other namespace.
  EXPECT_EQ(Score("var s = float(len(session.pdbs)) * 10000.0;\n"
                  "for b in session.pdbs {\n"
                  "  s += float(b.disruptions_allowed) * 1000.0 + float(len(b.disrupted_pods)) * 100.0;\n"
                  "  if b.namespace == task.namespace and selector_matches_task(b.selector, task) { s += 10.0; }\n"
                  "  if b.name == \"db\" and b.selector.match_labels[\"app\"] == \"db\" { s += 1.0; }\n"
                  "}\n"
                  "return s;"),
            20000.0 + 2000.0 + 300.0 + 10.0 + 1.0);
}

TEST(PluginViews, SessionResourceQuotasCarryHardAndUsed) {
  // hard cpu 8000m and 2 GPUs (2000 milli-units); used 3000m cpu, no GPU dimension.
  EXPECT_EQ(Score("var s = 0.0;\n"
                  "for q in session.resource_quotas {\n"
                  "  s += q.hard.cpu + q.hard[\"nvidia.com/gpu\"] * 10.0 + q.used.cpu * 0.001;\n"
                  "  if q.hard.has(\"nvidia.com/gpu\") and not q.used.has(\"nvidia.com/gpu\") { s += 0.5; }\n"
                  "  if q.name == \"rq\" and q.namespace == \"c1\" { s += 0.25; }\n"
                  "}\n"
                  "return s;"),
            8000.0 + 20000.0 + 3.0 + 0.5 + 0.25);
}

TEST(PluginViews, QueueParentNameAndNodeGroupAffinity) {
  // p1's queue is `plain` (parent root, no affinity); root carries the lists.
  EXPECT_EQ(Score("let q = task.job.queue;\n"
                  "var s = 0.0;\n"
                  "if q.parent_name == \"root\" { s += 1.0; }\n"
                  "if not q.has_affinity { s += 2.0; }\n"
                  "for r in session.queues {\n"
                  "  if r.name == \"root\" and r.has_affinity and r.parent_name == \"\" {\n"
                  "    s += float(len(r.node_group_required)) * 10.0;\n"
                  "    if \"g2\" in r.node_group_preferred { s += 100.0; }\n"
                  "    if \"g3\" in r.node_group_anti_required { s += 1000.0; }\n"
                  "    s += float(len(r.node_group_anti_preferred)) * 10000.0;\n"
                  "  }\n"
                  "  if r.name == \"blank\" and r.has_affinity and len(r.node_group_required) == 0 { s += 4.0; }\n"
                  "}\n"
                  "return s;"),
            1.0 + 2.0 + 20.0 + 100.0 + 1000.0 + 20000.0 + 4.0);
}

// `quantity.value` (documented, accepted by the checker) lowers to the value in base units; usage
// reads its BestEffort estimates (`be_cpu: 250m`) through it.
TEST(PluginViews, QuantityValueLowers) {
  EXPECT_EQ(testing::EvalNodeOrder(
                "if let q = parse_quantity(\"250m\") { return q.value * 1000.0 + quantity(\"2Ki\").value; }\n"
                "return -1.0;",
                "", "test/plugins_views_q_"),
            250.0 + 2048.0);
}

// Every plugin of this task, named in one scheduler.conf with arguments, loads and runs a session
// (allocate, preempt, reclaim, shuffle) without a policy fault.
TEST(PluginViews, ConfNamingEveryNewPluginLoadsAndRuns) {
  ScenarioSpec spec = Spec(R"(name: all-new-plugins
conf: |
  actions: "enqueue, allocate, preempt, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
    - name: sla
      arguments: {sla-waiting-time: 5m}
    - name: pdb
  - plugins:
    - name: resourcequota
    - name: predicates
    - name: nodegroup
      enableHierarchy: true
      arguments: {strict: false, enablePreferredOrder: true}
    - name: usage
      arguments:
        usage.weight: 5
        thresholds: {cpu: 90, mem: 90}
        estimator: {request_ratio: 0.5, be_cpu: 100m, be_memory: 100Mi}
    - name: task-topology
      arguments: {task-topology.weight: 2}
now: "2025-01-01T00:10:00Z"
cluster:
  queues:
  - name: q
    affinity:
      nodeGroupAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [g1]
        preferredDuringSchedulingIgnoredDuringExecution: [g1]
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, labels: {volcano.sh/nodegroup-name: g1}, usage: {cpu: 10, memory: 10, metricsTime: "2025-01-01T00:09:00Z"}}
  - {name: n2, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  podGroups:
  - name: tf
    namespace: c1
    queue: q
    minMember: 2
    minResources: {cpu: "2"}
    annotations: {volcano.sh/task-topology-affinity: "ps,worker", sla-waiting-time: 1m}
    creationTimestamp: "2025-01-01T00:00:00Z"
  pods:
  - {name: tf-ps-0, namespace: c1, group: tf, task: ps, labels: {app: tf}, requests: {cpu: "1", memory: 1Gi}}
  - {name: tf-worker-0, namespace: c1, group: tf, task: worker, labels: {app: tf}, requests: {cpu: "1", memory: 1Gi}}
  pdbs:
  - {name: tf, namespace: c1, selector: {app: tf}, disruptionsAllowed: 1}
  resourceQuotas:
  - {name: rq, namespace: c1, hard: {cpu: "8"}, used: {cpu: "1"}}
)");
  auto conf = ResolveScenarioConf(spec, nullptr, "");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  SimulatorOptions options;
  auto sim = Simulator::Create(spec, *conf, **provider, options);
  ASSERT_TRUE(sim.ok()) << sim.error().Format();
  auto result = (*sim)->RunCycle();
  ASSERT_TRUE(result.ok()) << result.error().Format();
  EXPECT_TRUE(result->faults.empty()) << result->faults.front();
  // Both tasks of the gang land in the only node group the queue may use.
  EXPECT_EQ(result->binds,
            (std::map<std::string, std::string>{{"c1/tf-ps-0", "n1"}, {"c1/tf-worker-0", "n1"}}));
}

}  // namespace
}  // namespace kiln
