// Loading a cluster as Volcano's cache does (volcano-semantics.md §7): CompleteCluster's defaults
// and warnings on plain ClusterSpecs (the path the Kubernetes binding shares with the scenario
// loader), BuildCluster's handling of pods that are no task of the session, and the warnings in
// `kiln simulate`'s JSON output.
#include <gtest/gtest.h>

#include "cli/output_format.h"
#include "runtime/cluster_spec.h"

namespace kiln {
namespace {

PodSpec Pod(std::string name, std::string group, double cpu, std::string node = "") {
  PodSpec p;
  p.name = std::move(name);
  p.namespace_ = "c1";
  p.group = std::move(group);
  p.requests.Set(kCpu, cpu * 1000);
  if (!node.empty()) {
    p.node = std::move(node);
    p.phase = PodPhase::Running;
  }
  return p;
}

ClusterSpec OneNode() {
  ClusterSpec c;
  NodeSpec n;
  n.name = "n1";
  n.allocatable.Set(kCpu, 4000);
  n.allocatable.Set(kPods, 110);
  c.nodes.push_back(n);
  return c;
}

std::vector<std::string> Messages(const std::vector<ClusterWarning>& ws) {
  std::vector<std::string> out;
  for (const auto& w : ws) out.push_back(w.message);
  return out;
}

// Tasks of one request shape share one resreq (Task::resreq_): a model of 100k pods holds one
// Resource per shape. Equal values, not equal pods, decide; an edit copies first.
TEST(BuildClusterTest, TasksOfOneRequestShareTheirResreq) {
  ClusterSpec c = OneNode();
  c.pods.push_back(Pod("a", "", 1));
  c.pods.push_back(Pod("b", "", 1));
  c.pods.push_back(Pod("c", "", 2));
  c.pods.push_back(Pod("d", "", 1, "n1"));  // running: shape, not status, decides
  CompleteCluster(c, {});
  auto cluster = BuildCluster(c);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  Task* a = cluster->FindTask("c1-a");
  Task* b = cluster->FindTask("c1-b");
  Task* t2 = cluster->FindTask("c1-c");
  Task* d = cluster->FindTask("c1-d");
  ASSERT_TRUE(a && b && t2 && d);
  EXPECT_EQ(&a->resreq(), &b->resreq());
  EXPECT_EQ(&a->resreq(), &d->resreq());
  EXPECT_NE(&a->resreq(), &t2->resreq());
  EXPECT_EQ(a->resreq().cpu(), 1000);
  EXPECT_EQ(a->resreq().Get(kPods), 1) << "the hidden pods: 1";
  EXPECT_EQ(t2->resreq().cpu(), 2000);
  EXPECT_EQ(&a->init_resreq(), &a->resreq());

  a->mutable_resreq().Set(kCpu, 3000);
  EXPECT_EQ(a->resreq().cpu(), 3000);
  EXPECT_EQ(b->resreq().cpu(), 1000) << "an edit of one task leaves the others alone";
  EXPECT_NE(&a->resreq(), &b->resreq());
}

// "<namespace>-<name>" joins "a-b"/"c" and "a"/"b-c" alike: both pods are tasks, the later one
// (in the spec's order) under "<namespace>/<name>". A uid that two tasks really share is an error.
TEST(BuildClusterTest, PodsWhoseNamespaceAndNameJoinAlikeAreTwoTasks) {
  ClusterSpec c = OneNode();
  PodSpec first = Pod("c", "", 1, "n1");
  first.namespace_ = "a-b";
  PodSpec second = Pod("b-c", "", 1);
  second.namespace_ = "a";
  c.pods = {first, second};
  CompleteCluster(c, {});
  auto cluster = BuildCluster(c);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  Task* a = cluster->FindTask("a-b-c");
  Task* b = cluster->FindTask("a/b-c");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->Key(), "a-b/c");
  EXPECT_EQ(b->Key(), "a/b-c");
  EXPECT_EQ(cluster->tasks().size(), 2u);
  EXPECT_EQ(cluster->FindNode("n1")->used.cpu(), 1000) << "the running one is on its node";

  c.pods = {c.pods[0], c.pods[0]};  // the same pod twice
  auto twice = BuildCluster(c);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "duplicate task \"a-b-c\"");
}

TEST(CompleteClusterTest, DefaultsWithoutWarnings) {
  ClusterSpec c = OneNode();
  c.pods.push_back(Pod("plain", "", 1));
  CompleteOptions options;
  options.now = 42;
  EXPECT_TRUE(CompleteCluster(c, options).empty());
  ASSERT_EQ(c.queues.size(), 1u);
  EXPECT_EQ(c.queues[0].name, "default");
  EXPECT_TRUE(c.queues[0].implicit);
  EXPECT_EQ(c.queues[0].creation_time, 42);
  ASSERT_EQ(c.pod_groups.size(), 1u);
  EXPECT_EQ(c.pod_groups[0].name, "podgroup-c1-plain");
  EXPECT_EQ(c.pods[0].group, "podgroup-c1-plain");
  EXPECT_EQ(c.pods[0].creation_time, 42);
  // Idempotent: the Kubernetes binding completes a fresh copy every cycle, the simulator once.
  EXPECT_TRUE(CompleteCluster(c, options).empty());
  EXPECT_EQ(c.queues.size(), 1u);
  EXPECT_EQ(c.pod_groups.size(), 1u);
}

TEST(CompleteClusterTest, OptionsNameTheSchedulerAndDefaultQueue) {
  ClusterSpec c = OneNode();
  c.pods.push_back(Pod("mine", "", 1));
  c.pods[0].mutable_extras().scheduler_name = "kiln";
  c.pods.push_back(Pod("theirs", "", 1));  // schedulerName volcano, not ours here
  CompleteOptions options;
  options.scheduler_names = {"kiln"};
  options.default_queue = "batch";
  EXPECT_EQ(Messages(CompleteCluster(c, options)),
            std::vector<std::string>{"1 pod of scheduler `volcano` (c1/theirs) is not scheduled by "
                                     "this scheduler; on a node it only counts as node usage"});
  EXPECT_EQ(c.queues.at(0).name, "batch");
  ASSERT_EQ(c.pod_groups.size(), 1u);  // only our pod gets a group
  EXPECT_EQ(c.pod_groups[0].queue, "batch");
  EXPECT_FALSE(c.pods[0].foreign);
  EXPECT_TRUE(c.pods[1].foreign);
  EXPECT_TRUE(c.pods[1].group.empty());
}

TEST(CompleteClusterTest, ManyForeignPodsAreOneWarning) {
  ClusterSpec c = OneNode();
  for (int i = 0; i < 7; ++i) {
    c.pods.push_back(Pod("p" + std::to_string(i), "", 0.1, "n1"));
    c.pods.back().mutable_extras().scheduler_name = "default-scheduler";
  }
  EXPECT_EQ(Messages(CompleteCluster(c, {})),
            std::vector<std::string>{
                "7 pods of scheduler `default-scheduler` (c1/p0, c1/p1, c1/p2, c1/p3, c1/p4, and 2 "
                "more) are not scheduled by this scheduler; on a node they only count as node "
                "usage"});
}

// Pods that are no task of the session still use their nodes (§7.2-7.4); a node that does not
// exist holds nothing.
TEST(BuildClusterTest, PodsOutsideTheSessionUseTheirNodes) {
  ClusterSpec c = OneNode();
  PodGroupSpec lost;
  lost.name = "lost";
  lost.namespace_ = "c1";
  lost.queue = "nowhere";
  c.pod_groups.push_back(lost);
  PodGroupSpec ok;
  ok.name = "ok";
  ok.namespace_ = "c1";
  c.pod_groups.push_back(ok);
  c.pods.push_back(Pod("no-group", "ghost", 1, "n1"));
  c.pods.push_back(Pod("no-group-pending", "ghost", 1));
  c.pods.push_back(Pod("no-queue", "lost", 0.5, "n1"));
  c.pods.push_back(Pod("foreign", "", 0.25, "n1"));
  c.pods.back().mutable_extras().scheduler_name = "default-scheduler";
  c.pods.push_back(Pod("foreign-pending", "", 1));
  c.pods.back().mutable_extras().scheduler_name = "default-scheduler";
  c.pods.push_back(Pod("gone-node", "ok", 2, "n0"));
  c.pods.push_back(Pod("ok-0", "ok", 1));
  std::vector<ClusterWarning> warnings = CompleteCluster(c, {});
  EXPECT_EQ(warnings.size(), 5u);  // ghost ×2, queue, foreign (one), node

  auto cluster = BuildCluster(c);
  ASSERT_TRUE(cluster.ok()) << cluster.error().message;
  ASSERT_EQ(cluster->jobs().size(), 1u);
  EXPECT_EQ(cluster->jobs()[0]->uid, "c1/ok");
  EXPECT_EQ(cluster->jobs()[0]->tasks.size(), 2u);  // gone-node (running, no node) and ok-0
  EXPECT_EQ(cluster->tasks().size(), 2u);
  EXPECT_EQ(cluster->FindTask("c1-no-group"), nullptr);
  EXPECT_EQ(cluster->FindTask("c1-foreign"), nullptr);
  // no-group (1) + no-queue (0.5) + foreign (0.25) occupy n1; the pending ones and the pod on
  // the missing node do not.
  const Node* n1 = cluster->FindNode("n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_DOUBLE_EQ(n1->used.Get(kCpu), 1750);
  EXPECT_DOUBLE_EQ(n1->idle.Get(kCpu), 2250);
  EXPECT_EQ(n1->tasks.size(), 3u);
  EXPECT_EQ(cluster->orphan_tasks().size(), 3u);
}

TEST(SimulateOutputTest, JsonListsWarnings) {
  SimulationResult r;
  r.scenario = "s";
  r.warnings.push_back(ClusterWarning{"pod c1/p", "pod `c1/p` ...", SourceLocation{"s.yaml", 7, 5}});
  r.warnings.push_back(ClusterWarning{"scheduler x", "1 pod ...", SourceLocation{}});
  EXPECT_EQ(cli::FormatJson(r), R"({
  "scenario": "s",
  "sessions": [],
  "warnings": [
    {
      "object": "pod c1/p",
      "message": "pod `c1/p` ...",
      "file": "s.yaml",
      "line": 7
    },
    {
      "object": "scheduler x",
      "message": "1 pod ..."
    }
  ]
}
)");
  EXPECT_EQ(cli::FormatTable(r).rfind(
                "scenario: s\nwarning: s.yaml:7: pod `c1/p` ...\nwarning: 1 pod ...\n", 0),
            0u);
}

}  // namespace
}  // namespace kiln
