// Scenario loader: every field of scenario-format.md, its defaults, and each error with its line.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/quantity.h"
#include "simulator/scenario.h"
#include "tests/unit/scenario_test_util.h"

namespace kiln {
namespace {

using testing::MustFail;
using testing::MustParse;

// Loading `text` fails with `message`, at `line` when one is given.
void ExpectFailure(std::string_view text, std::string_view message, int line = 0) {
  SCOPED_TRACE(text);
  Error e = MustFail(text);
  EXPECT_EQ(e.message, message);
  if (line > 0) EXPECT_EQ(e.where.line, line);
}

double Dim(const Resource& r, std::string_view name) {
  auto id = ResourceNames::Find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id ? r.Get(*id) : -1;
}

constexpr std::string_view kFull = R"(name: full
conf: |
  actions: "enqueue, allocate"
  tiers: []
now: "2025-01-01T00:00:10Z"
cluster:
  priorityClasses: [{name: high, value: 1000, preemptionPolicy: Never}, {name: low, value: 10, globalDefault: true}]
  queues:
  - name: q1
    weight: 2
    capability: {cpu: "8", memory: 16Gi}
    deserved: {cpu: "4"}
    guarantee: {cpu: "1"}
    priority: 3
    reclaimable: false
    state: Open
    annotations: {volcano.sh/hierarchy: root/q1}
    affinity:
      nodeGroupAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [gpu-pool]
  nodes:
  - name: n1
    allocatable: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}
    labels: {volcano.sh/nodegroup-name: gpu-pool}
    taints: [{key: k, value: v, effect: NoSchedule}]
    usage: {cpu: 40, memory: 60, metricsTime: "2025-01-01T00:00:00Z"}
  - name: n2
    allocatable: {cpu: 500m, memory: "1Gi", pods: "3"}
    capacity: {cpu: "1", memory: 2Gi}
    unschedulable: true
  podGroups:
  - name: pg1
    namespace: c1
    queue: q1
    minMember: 2
    minTaskMember: {worker: 1}
    minResources: {cpu: "1"}
    priorityClassName: high
    phase: Inqueue
    creationTimestamp: "2025-01-01T00:00:00Z"
  pods:
  - name: p1
    namespace: c1
    group: pg1
    task: worker
    requests: {cpu: "1", memory: 1Gi}
    priorityClassName: high
    phase: Running
    node: n1
    scheduledAt: "2025-01-01T00:00:05Z"
    tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule}]
    nodeSelector: {disk: ssd}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{key: zone, operator: In, values: [a, b]}]
      podAntiAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          podAffinityTerm:
            labelSelector: {matchLabels: {app: x}}
            topologyKey: kubernetes.io/hostname
    topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]
    duration: 10m
  - name: p2
    namespace: c1
    group: pg1
    requests: {cpu: 250m}
    priority: 7
    deleting: true
  - name: plain
    requests: {cpu: "1"}
  pdbs: [{name: x, namespace: c1, minAvailable: "1", selector: {app: a}, disruptionsAllowed: 0}]
  resourceQuotas: [{name: rq, namespace: c1, hard: {cpu: "4"}, used: {cpu: "1"}}]
expect:
  binds: {default/plain: n1}
  bindCount: 1
  evictions: [c1/p2]
  evictionCount: 1
  pipelined: {}
  podGroupPhases: {c1/pg1: Inqueue}
  unschedulable: {}
notes: free text
source: test
)";

TEST(ScenarioTest, LoadsEveryFieldWithUnits) {
  ScenarioSpec s = MustParse(kFull);
  EXPECT_EQ(s.name, "full");
  EXPECT_TRUE(s.has_conf);
  EXPECT_EQ(s.conf_text, "actions: \"enqueue, allocate\"\ntiers: []\n");
  EXPECT_EQ(s.conf_first_line, 3);
  EXPECT_EQ(s.conf_indent, 2);
  EXPECT_EQ(s.now, *ParseTimestamp("2025-01-01T00:00:10Z"));
  EXPECT_EQ(s.notes, "free text");
  EXPECT_EQ(s.source, "test");

  const ClusterSpec& c = s.cluster;
  ASSERT_EQ(c.priority_classes.size(), 2u);
  EXPECT_EQ(c.priority_classes[0].preemption_policy, PreemptionPolicy::Never);
  EXPECT_TRUE(c.priority_classes[1].global_default);

  ASSERT_EQ(c.queues.size(), 2u);  // q1 and the implicit default queue
  const QueueSpec& q1 = c.queues[0];
  EXPECT_EQ(q1.weight, 2);
  EXPECT_EQ(Dim(*q1.capability, "cpu"), 8000);
  EXPECT_EQ(Dim(*q1.capability, "memory"), 16.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(Dim(*q1.guarantee, "cpu"), 1000);
  EXPECT_EQ(q1.priority, 3);
  EXPECT_FALSE(q1.reclaimable);
  EXPECT_EQ(q1.node_group_affinity.required, std::vector<std::string>{"gpu-pool"});
  EXPECT_EQ(c.queues[1].name, "default");
  EXPECT_TRUE(c.queues[1].implicit);
  EXPECT_EQ(c.queues[1].weight, 1);

  ASSERT_EQ(c.nodes.size(), 2u);
  const NodeSpec& n1 = c.nodes[0];
  EXPECT_EQ(Dim(n1.allocatable, "cpu"), 2000);
  EXPECT_EQ(Dim(n1.allocatable, "pods"), 110);  // kubelet default
  EXPECT_EQ(Dim(n1.allocatable, "nvidia.com/gpu"), 1000);  // extended resources in milli-units
  EXPECT_TRUE(n1.capacity == n1.allocatable);
  ASSERT_EQ(n1.taints.size(), 1u);
  EXPECT_EQ(n1.taints[0].effect, "NoSchedule");
  ASSERT_TRUE(n1.usage.has_value());
  EXPECT_EQ(n1.usage->cpu, 40);
  const NodeSpec& n2 = c.nodes[1];
  EXPECT_EQ(Dim(n2.allocatable, "cpu"), 500);
  EXPECT_EQ(Dim(n2.allocatable, "pods"), 3);
  EXPECT_EQ(Dim(n2.capacity, "cpu"), 1000);
  EXPECT_EQ(Dim(n2.capacity, "pods"), 3);
  EXPECT_TRUE(n2.unschedulable);

  ASSERT_EQ(c.pod_groups.size(), 2u);  // pg1 and plain's own group
  const PodGroupSpec& pg1 = c.pod_groups[0];
  EXPECT_EQ(pg1.Uid(), "c1/pg1");
  EXPECT_EQ(pg1.min_member, 2);
  EXPECT_EQ(pg1.min_task_member.at("worker"), 1);
  EXPECT_EQ(pg1.phase, PodGroupPhase::Inqueue);
  EXPECT_EQ(pg1.creation_time, *ParseTimestamp("2025-01-01T00:00:00Z"));

  ASSERT_EQ(c.pods.size(), 3u);
  const PodSpec& p1 = c.pods[0];
  EXPECT_EQ(p1.Uid(), "c1-p1");
  EXPECT_EQ(p1.Key(), "c1/p1");
  EXPECT_EQ(p1.JobUid(), "c1/pg1");
  EXPECT_EQ(p1.phase, PodPhase::Running);
  EXPECT_EQ(p1.priority, 1000);  // from its class
  EXPECT_EQ(p1.preemption_policy, PreemptionPolicy::Never);
  EXPECT_EQ(Dim(p1.requests, "memory"), 1024.0 * 1024 * 1024);
  EXPECT_EQ(p1.duration, 600'000'000'000);
  EXPECT_EQ(p1.creation_time, s.now);  // defaults to `now`
  ASSERT_TRUE(p1.affinity().node_affinity.has_value());
  ASSERT_TRUE(p1.affinity().node_affinity->required.has_value());
  EXPECT_EQ((*p1.affinity().node_affinity->required)[0].match_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(p1.affinity().pod_anti_affinity.has_value());
  EXPECT_EQ(p1.affinity().pod_anti_affinity->preferred[0].weight, 10);
  EXPECT_EQ(p1.topology_spread_constraints()[0].topology_key, "zone");
  const PodSpec& p2 = c.pods[1];
  EXPECT_EQ(p2.priority, 7);  // explicit wins over the global default class
  EXPECT_TRUE(p2.deleting);
  EXPECT_EQ(Dim(p2.requests, "cpu"), 250);

  // A pod without a group gets its own single-member group, named like Volcano's controller does.
  const PodSpec& plain = c.pods[2];
  EXPECT_EQ(plain.namespace_, "default");
  EXPECT_EQ(plain.group, "podgroup-default-plain");
  EXPECT_EQ(plain.priority, 10);  // the global default class
  const PodGroupSpec& shadow = c.pod_groups[1];
  EXPECT_TRUE(shadow.implicit);
  EXPECT_EQ(shadow.Uid(), "default/podgroup-default-plain");
  EXPECT_EQ(shadow.queue, "default");
  EXPECT_EQ(shadow.min_member, 1);
  EXPECT_EQ(Dim(*shadow.min_resources, "cpu"), 1000);

  ASSERT_EQ(c.pdbs.size(), 1u);
  EXPECT_EQ(c.pdbs[0].selector.match_labels.at("app"), "a");
  EXPECT_EQ(*c.pdbs[0].min_available, "1");
  ASSERT_EQ(c.resource_quotas.size(), 1u);
  EXPECT_EQ(Dim(c.resource_quotas[0].hard, "cpu"), 4000);

  ASSERT_TRUE(s.expect.has_value());
  EXPECT_EQ(s.expect->binds->at("default/plain"), "n1");
  EXPECT_EQ(*s.expect->bind_count, 1);
  EXPECT_EQ(s.expect->evictions->count("c1/p2"), 1u);
  EXPECT_TRUE(s.expect->pipelined->empty());
  EXPECT_EQ(s.expect->pod_group_phases->at("c1/pg1"), "Inqueue");
  EXPECT_TRUE(s.expect->unschedulable->empty());
}

TEST(ScenarioTest, MinimalScenarioDefaults) {
  ScenarioSpec s = MustParse("cluster:\n  nodes: [{name: n1, allocatable: {cpu: 1}}]\n");
  EXPECT_EQ(s.name, "s");  // from the file name
  EXPECT_FALSE(s.has_conf);
  EXPECT_EQ(s.now, *ParseTimestamp("2025-01-01T00:00:00Z"));
  EXPECT_FALSE(s.expect.has_value());
  ASSERT_EQ(s.cluster.queues.size(), 1u);
  EXPECT_EQ(s.cluster.queues[0].name, "default");
}

// Issue 31: Go's zero time is accepted wherever a time is and means "unset" as Volcano reads each
// field: a creationTimestamp orders before every other time (kZeroTime), a PodScheduled time or
// metricsTime is absent (0), and a zero `now` is the default clock.
TEST(ScenarioTest, GoZeroTimeMeansUnset) {
  constexpr std::string_view kZero = "\"0001-01-01T00:00:00Z\"";
  ScenarioSpec s = MustParse(fmt::format(R"(now: {0}
cluster:
  queues: [{{name: q, creationTimestamp: {0}}}]
  nodes: [{{name: n1, allocatable: {{cpu: 1}}, creationTimestamp: {0}, usage: {{cpu: 90, metricsTime: {0}}}}}]
  podGroups: [{{name: pg, queue: q, creationTimestamp: {0}}}]
  pods:
  - {{name: p, group: pg, phase: Running, node: n1, creationTimestamp: {0}, scheduledAt: {0}}}
  - {{name: plain, creationTimestamp: {0}}}
)",
                                         kZero));
  EXPECT_EQ(s.now, *ParseTimestamp("2025-01-01T00:00:00Z"));
  EXPECT_EQ(s.cluster.queues[0].creation_time, kZeroTime);
  EXPECT_EQ(s.cluster.nodes[0].creation_time, kZeroTime);
  ASSERT_TRUE(s.cluster.nodes[0].usage.has_value());
  EXPECT_EQ(s.cluster.nodes[0].usage->metrics_time, 0);
  EXPECT_EQ(s.cluster.pods[0].creation_time, kZeroTime);
  EXPECT_EQ(s.cluster.pods[0].scheduled_at, 0);
  for (const PodGroupSpec& g : s.cluster.pod_groups) EXPECT_EQ(g.creation_time, kZeroTime) << g.name;
  EXPECT_TRUE(s.warnings.empty());
  // Before every written time, and apart from "not written" (which becomes `now`).
  EXPECT_LT(kZeroTime, *ParseTimestamp("1678-01-01T00:00:00Z"));
  EXPECT_NE(kZeroTime, kUnsetTime);
  // Any other year-1 time is still refused, at its line.
  auto bad = ParseScenario("cluster:\n  podGroups: [{name: pg, creationTimestamp: \"0001-01-01T00:00:01Z\"}]\n",
                           "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where.line, 2);
}

TEST(ScenarioTest, DefinedDefaultQueueIsNotDuplicated) {
  ScenarioSpec s = MustParse("cluster:\n  queues: [{name: default, weight: 3}]\n");
  ASSERT_EQ(s.cluster.queues.size(), 1u);
  EXPECT_EQ(s.cluster.queues[0].weight, 3);
  EXPECT_FALSE(s.cluster.queues[0].implicit);
}

TEST(ScenarioTest, UnknownKeyNamesFileLineAndKey) {
  Error e = MustFail("name: x\ncluster:\n  nodes:\n  - name: n1\n    allocatable: {cpu: 1}\n    lables: {a: b}\n");
  EXPECT_EQ(e.Format(), "s.yaml:6:5: error: unknown key `lables` in node; did you mean `labels`?");
  Error top = MustFail("name: x\nexpected: {}\n");
  EXPECT_EQ(top.Format(), "s.yaml:2:1: error: unknown key `expected` in scenario; did you mean `expect`?");
  Error pod = MustFail("cluster:\n  pods:\n  - name: p\n    request: {cpu: 1}\n");
  EXPECT_EQ(pod.Format(), "s.yaml:4:5: error: unknown key `request` in pod; did you mean `requests`?");
}

TEST(ScenarioTest, BadQuantityNamesValueAndLine) {
  Error e = MustFail("cluster:\n  nodes:\n  - name: n1\n    allocatable: {cpu: \"2x\", memory: 1Gi}\n");
  EXPECT_EQ(e.where.line, 4);
  EXPECT_EQ(e.message,
            "bad quantity `2x` for `cpu` in `allocatable` of node `n1`: invalid quantity \"2x\"");
  ExpectFailure("cluster:\n  pods:\n  - name: p\n    requests: {cpu: \"-1\"}\n",
                "quantity `-1` for `cpu` in `requests` of pod `p` must not be negative");
  Error list = MustFail("cluster:\n  pods:\n  - name: p\n    requests: {cpu: [1]}\n");
  EXPECT_EQ(list.message,
            "quantity of `cpu` in `requests` of pod `p` must be a string like \"1\" or \"500m\", got "
            "a list");
}

TEST(ScenarioTest, WrongTypes) {
  Error w = MustFail("cluster:\n  queues: [{name: q, weight: heavy}]\n");
  EXPECT_EQ(w.Format(), "s.yaml:2:30: error: `weight` of queue `q` must be an integer, got `heavy`");
  ExpectFailure("cluster:\n  queues: [{name: q, weight: -1}]\n",
                "`weight` of queue `q` must not be negative, got -1");
  EXPECT_EQ(MustParse("cluster:\n  queues: [{name: q, weight: 0}]\n").cluster.queues[0].weight, 0);
  ExpectFailure("cluster:\n  nodes: [{name: n, allocatable: {}, unschedulable: maybe}]\n",
                "`unschedulable` of node `n` must be true or false, got `maybe`");
  ExpectFailure("cluster:\n  pods: [{name: p, phase: Runing}]\n",
                "`phase` of pod `p` must be Pending, Running, Succeeded, Failed or Unknown, got "
                "`Runing`; did you mean `Running`?");
  Error pods = MustFail("cluster:\n  pods: {name: p}\n");
  EXPECT_EQ(pods.message, "`pods` must be a list, got a map");
  Error ts = MustFail("now: yesterday\n");
  EXPECT_EQ(ts.where.line, 1);
  EXPECT_EQ(ts.message, "`now`: invalid timestamp \"yesterday\"");
  ExpectFailure("cluster:\n  pods: [{name: p, duration: 10 minutes}]\n",
                "`duration` of pod `p`: invalid duration \"10 minutes\"");
  ExpectFailure("cluster:\n  nodes: [{allocatable: {}}]\n", "node has no `name`");
  ExpectFailure("cluster:\n  nodes: [{name: n}]\n", "node `n` has no `allocatable`");
}

TEST(ScenarioTest, NodeImagesAndPodImage) {
  ScenarioSpec s = MustParse(R"(cluster:
  nodes:
  - name: n1
    allocatable: {cpu: "1"}
    images:
    - {names: ["docker.io/library/nginx:1.25", "nginx:1.25"], sizeBytes: 200000000}
    - {names: [redis:7], sizeBytes: 30000000}
  pods:
  - {name: p, image: "nginx:1.25"}
)");
  ASSERT_EQ(s.cluster.nodes.size(), 1u);
  const auto& images = s.cluster.nodes[0].images;
  EXPECT_EQ(images.size(), 3u);
  EXPECT_EQ(images.at("nginx:1.25"), 200000000);
  EXPECT_EQ(images.at("docker.io/library/nginx:1.25"), 200000000);
  EXPECT_EQ(images.at("redis:7"), 30000000);
  ASSERT_EQ(s.cluster.pods.size(), 1u);
  EXPECT_EQ(s.cluster.pods[0].image(), "nginx:1.25");
  EXPECT_TRUE(s.cluster.pods[0].scheduling_gates().empty());

  Error size = MustFail(
      "cluster:\n  nodes:\n  - name: n\n    allocatable: {}\n    images: [{names: [a]}]\n");
  EXPECT_EQ(size.where.line, 5);
  EXPECT_EQ(size.message, "an image in `images` of node `n` has no `sizeBytes`");
  Error key = MustFail(
      "cluster:\n  nodes:\n  - name: n\n    allocatable: {}\n    images: [{name: [a], sizeBytes: 1}]\n");
  EXPECT_EQ(key.message, "unknown key `name` in a node image; did you mean `names`?");
}

// Pods that leave task, limits, priority class, annotations, image, scheduler name and gates at
// their defaults share one PodExtras; a pod that sets one has its own, and editing a copy of a
// spec leaves the original as it was.
TEST(ScenarioTest, PodsAtTheDefaultsShareTheirExtras) {
  ScenarioSpec s = MustParse(R"(cluster:
  pods:
  - {name: a}
  - {name: b, requests: {cpu: "1"}, labels: {app: x}}
  - {name: c, image: "nginx:1.25"}
  - {name: d, task: worker, annotations: {k: v}}
)");
  const auto& pods = s.cluster.pods;
  ASSERT_EQ(pods.size(), 4u);
  EXPECT_EQ(pods[0].extras, PodExtras::None());
  EXPECT_EQ(pods[1].extras, PodExtras::None());
  EXPECT_NE(pods[2].extras, PodExtras::None());
  EXPECT_EQ(pods[2].image(), "nginx:1.25");
  EXPECT_EQ(pods[3].task(), "worker");
  EXPECT_EQ(pods[3].annotations(), (StringMap{{"k", "v"}}));
  EXPECT_EQ(pods[0].scheduler_name(), kDefaultSchedulerName);

  PodSpec copy = pods[3];
  EXPECT_EQ(copy.extras, pods[3].extras) << "a copy shares the extras until it writes them";
  copy.mutable_extras().image = "redis:7";
  EXPECT_EQ(copy.image(), "redis:7");
  EXPECT_EQ(copy.task(), "worker");
  EXPECT_EQ(pods[3].image(), "") << "the original is unchanged";
  PodSpec fresh;
  fresh.mutable_extras().task = "ps";
  EXPECT_EQ(PodExtras::None()->task, "") << "the shared default is never written";
}

// Every object read from one file points to one copy of the file's name.
TEST(ScenarioTest, LocationsOfOneFileShareItsName) {
  ScenarioSpec s = MustParse("cluster:\n  nodes:\n  - {name: n, allocatable: {cpu: \"1\"}}\n"
                             "  pods:\n  - {name: a}\n  - {name: b}\n");
  ASSERT_EQ(s.cluster.pods.size(), 2u);
  EXPECT_EQ(s.cluster.pods[1].where.file, "s.yaml");
  EXPECT_EQ(s.cluster.pods[1].where.line, 6);
  EXPECT_EQ(&s.cluster.pods[0].where.file.str(), &s.cluster.pods[1].where.file.str());
  EXPECT_EQ(&s.cluster.pods[0].where.file.str(), &s.cluster.nodes[0].where.file.str());
  SourceLocation none;
  EXPECT_TRUE(none.file.empty());
  EXPECT_EQ(none.file, "");
  EXPECT_EQ(fmt::format("{}", s.cluster.pods[0].where.file), "s.yaml");
}

TEST(ScenarioTest, SchedulingGates) {
  ScenarioSpec s = MustParse(
      "cluster:\n  pods:\n  - {name: p, schedulingGates: [{name: a.io/x}, {name: b.io/y}]}\n");
  EXPECT_EQ(s.cluster.pods[0].scheduling_gates(), (std::vector<std::string>{"a.io/x", "b.io/y"}));
  Error e = MustFail("cluster:\n  pods:\n  - {name: p, schedulingGates: [{gate: x}]}\n");
  EXPECT_EQ(e.Format(), "s.yaml:3:34: error: unknown key `gate` in a scheduling gate");
}

// A reference that does not resolve is a fact about the cluster (volcano-semantics.md §7): the
// loader warns and loads; only what is malformed as a file stays an error.
std::vector<std::string> Warnings(std::string_view text) {
  std::vector<std::string> out;
  for (const ClusterWarning& w : MustParse(text).warnings) out.push_back(w.message);
  return out;
}

TEST(ScenarioTest, DanglingReferencesAreWarnings) {
  ScenarioSpec group = MustParse("cluster:\n  pods:\n  - {name: p, namespace: c1, group: pg9}\n");
  ASSERT_EQ(group.warnings.size(), 1u);
  EXPECT_EQ(group.warnings[0].message,
            "pod `c1/p` names podGroup `pg9`, which does not exist in namespace `c1`, so it is "
            "not scheduled");
  EXPECT_EQ(group.warnings[0].object, "pod c1/p");
  EXPECT_EQ(group.warnings[0].where.line, 3);
  EXPECT_EQ(group.warnings[0].where.file, "s.yaml");
  EXPECT_EQ(Warnings("cluster:\n  nodes: [{name: node-1, allocatable: {}}]\n  pods:\n  - {name: p, "
                     "node: node-2, phase: Running}\n"),
            std::vector<std::string>{"pod `default/p` is on node `node-2`, which does not exist, "
                                     "so it uses no node; did you mean `node-1`?"});
  EXPECT_EQ(Warnings("cluster:\n  nodes: [{name: n1, allocatable: {}}]\n  pods:\n  - {name: p, "
                     "nominatedNodeName: n9}\n"),
            std::vector<std::string>{"pod `default/p` names nominated node `n9`, which does not "
                                     "exist, so preempt does not consider the pod"});
  EXPECT_EQ(Warnings("cluster:\n  podGroups:\n  - {name: pg, queue: q2}\n"),
            std::vector<std::string>{"podGroup `default/pg` names queue `q2`, which does not exist, "
                                     "so its pods are not scheduled (those on nodes still use them)"});
  EXPECT_EQ(Warnings("cluster:\n  pods:\n  - {name: p, priorityClassName: hihg}\n"),
            std::vector<std::string>{"pod `default/p` names priority class `hihg`, which does not "
                                     "exist, so its priority is 1 (a pod without spec.priority)"});
  EXPECT_EQ(Warnings("cluster:\n  priorityClasses: [{name: a, value: 5, globalDefault: true}, {name: "
                     "b, value: 7, globalDefault: true}]\n  podGroups: [{name: pg, "
                     "priorityClassName: c}]\n"),
            (std::vector<std::string>{
                "priority classes `a` and `b` are both globalDefault; `b` (the later) is the default",
                "podGroup `default/pg` names priority class `c`, which does not exist, so its "
                "priority is 7 (global default `b`)"}));
  EXPECT_EQ(Warnings("cluster:\n  queues: [{name: a, parent: b}]\n"),
            std::vector<std::string>{"queue `a` names parent `b`, which does not exist, so it is a "
                                     "root queue"});
  ScenarioSpec cycle = MustParse("cluster:\n  queues: [{name: a, parent: b}, {name: b, parent: a}]\n");
  ASSERT_EQ(cycle.warnings.size(), 1u);
  EXPECT_EQ(cycle.warnings[0].message,
            "queue `a` is its own ancestor (parent cycle through `b`); it is a root queue");
  EXPECT_TRUE(cycle.cluster.queues[0].parent.empty());
  EXPECT_EQ(cycle.cluster.queues[1].parent, "a");
  EXPECT_EQ(Warnings("cluster:\n  pods:\n  - {name: a, schedulerName: default-scheduler}\n  - {name: "
                     "b, schedulerName: default-scheduler}\n"),
            std::vector<std::string>{"2 pods of scheduler `default-scheduler` (default/a, default/b) "
                                     "are not scheduled by this scheduler; on a node they only "
                                     "count as node usage"});
}

TEST(ScenarioTest, FileErrorsStayErrors) {
  ExpectFailure("cluster:\n  pods:\n  - {name: p, phase: Running}\n",
                "pod `p` is Running but has no `node`");
  ExpectFailure("cluster:\n  pods:\n  - {name: p}\n  - {name: p}\n",
                "pod `default/p` is defined twice (first at line 3)", 4);
  Error key = MustFail("cluster:\n  pods:\n  - {name: p, schedulerNmae: x}\n");
  EXPECT_EQ(key.message, "unknown key `schedulerNmae` in pod; did you mean `schedulerName`?");
}

TEST(ScenarioTest, ExpectReferencesAreChecked) {
  Error pod = MustFail(
      "cluster:\n  nodes: [{name: n1, allocatable: {}}]\n  pods: [{name: p1, namespace: c1}]\n"
      "expect:\n  binds: {c1/p2: n1}\n");
  EXPECT_EQ(pod.message,
            "expect names pod `c1/p2`, which is not defined (pods are named <namespace>/<name>); "
            "did you mean `c1/p1`?");
  EXPECT_EQ(pod.where.line, 5);
  Error node = MustFail(
      "cluster:\n  nodes: [{name: n1, allocatable: {}}]\n  pods: [{name: p1}]\n"
      "expect:\n  binds: {default/p1: n3}\n");
  EXPECT_EQ(node.message, "expect names node `n3`, which is not defined");
  Error phase = MustFail(
      "cluster:\n  podGroups: [{name: pg}]\nexpect:\n  podGroupPhases: {default/pg: Queued}\n");
  EXPECT_EQ(phase.message,
            "`expect.podGroupPhases` of `default/pg` must be Pending, Inqueue, Running, Unknown or "
            "Completed, got `Queued`");
  ExpectFailure("expect:\n  bind: {}\n", "unknown key `bind` in `expect`; did you mean `binds`?");
}

TEST(ScenarioTest, ConfErrorsMapToScenarioLines) {
  ScenarioSpec s = MustParse("name: x\nconf: |\n  actions: \"allocate\"\n  tiers:\n  - plugins:\n    - name: gang\n      enableJobOrdr: true\n");
  Error conf_error{"unknown plugin option", SourceLocation{"s.yaml", 5, 5}};
  Error mapped = MapConfError(s, conf_error);
  EXPECT_EQ(mapped.where.file, "s.yaml");
  EXPECT_EQ(mapped.where.line, 7);
  EXPECT_EQ(mapped.where.column, 7);
}

TEST(ScenarioTest, EmptyAndInvalidDocuments) {
  EXPECT_EQ(MustFail("").message, "scenario is empty");
  Error syntax = MustFail("cluster:\n  nodes: [\n");
  EXPECT_EQ(syntax.message.rfind("invalid YAML: ", 0), 0u);
  EXPECT_GT(syntax.where.line, 0);
  auto missing = LoadScenarioFile("/nonexistent/x.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "cannot read /nonexistent/x.yaml: No such file or directory");
}

}  // namespace
}  // namespace kiln
