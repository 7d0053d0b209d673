// HyperNodes: loading (scenario `cluster.hyperNodes`, PodGroup `networkTopology` and
// `subGroupPolicy`), resolution as Volcano's HyperNodesInfo does (real nodes, tiers, the virtual
// top, LCA, readiness) with warnings for what does not resolve, and the session-open
// normalisation of a job's network topology (runtime/hyper_node.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "runtime/cluster_spec.h"
#include "runtime/hyper_node.h"
#include "simulator/scenario.h"
#include "tests/unit/scenario_test_util.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

using testing::MustFail;
using testing::MustParse;

Cluster MustBuild(const ScenarioSpec& spec) {
  auto c = BuildCluster(spec.cluster);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().Format());
  return c.ok() ? std::move(*c) : Cluster{};
}

std::vector<std::string> NodeNames(const HyperNode* hn) {
  std::vector<std::string> out;
  if (hn == nullptr) return out;
  for (const Node* n : hn->nodes) out.push_back(n->name);
  return out;
}

std::vector<std::string> Names(std::span<HyperNode* const> hns) {
  std::vector<std::string> out;
  for (const HyperNode* h : hns) out.push_back(h->name);
  return out;
}

// The text of tests/unit/runtime/data/`name`, for MustParse (whose warnings then name s.yaml).
std::string DataText(std::string_view name) {
  auto text = ReadTextFile((KilnSourceDir() / "tests/unit/runtime/data" / name).string());
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : text.error().Format());
  return text.ok() ? *text : "";
}

// The tree most tests here start from: data/hyper-node-tree.yaml (s0,s1 under s4; s2,s3 under
// s5; s4,s5 under s6).
ScenarioSpec Tree() { return MustParse(DataText("hyper-node-tree.yaml")); }

TEST(HyperNodeTest, ResolvesRealNodesTiersAndTop) {
  ScenarioSpec spec = Tree();
  EXPECT_TRUE(spec.warnings.empty()) << spec.warnings.front().message;
  ASSERT_EQ(spec.cluster.hyper_nodes.size(), 7u);
  EXPECT_EQ(spec.cluster.hyper_nodes[0].tier_name, "leaf");
  Cluster c = MustBuild(spec);
  const HyperNodeTree* tree = c.hyper_nodes();
  ASSERT_NE(tree, nullptr);
  EXPECT_TRUE(tree->ready());
  EXPECT_TRUE(tree->has_real());
  using V = std::vector<std::string>;
  EXPECT_EQ(NodeNames(tree->Find("s0")), (V{"node-0", "node-1"}));
  EXPECT_EQ(NodeNames(tree->Find("s1")), (V{"node-2", "node-3"}));
  EXPECT_EQ(NodeNames(tree->Find("s2")), (V{"prefix-0", "prefix-1"}));
  EXPECT_EQ(NodeNames(tree->Find("s3")), (V{"r-a"}));
  EXPECT_EQ(NodeNames(tree->Find("s4")), (V{"node-0", "node-1", "node-2", "node-3"}));
  EXPECT_EQ(NodeNames(tree->Find("s5")), (V{"prefix-0", "prefix-1", "r-a"}));
  EXPECT_EQ(NodeNames(tree->Find("s6")),
            (V{"node-0", "node-1", "node-2", "node-3", "prefix-0", "prefix-1", "r-a"}));
  // The virtual top: every node, tier above the highest, parent of the roots.
  const HyperNode* top = tree->top();
  EXPECT_EQ(top->name, kClusterTopHyperNode);
  EXPECT_EQ(top->tier, 4);
  EXPECT_EQ(NodeNames(top).size(), 8u);
  EXPECT_EQ(tree->Find("s6")->parent, top);
  EXPECT_EQ(tree->Find("s0")->parent, tree->Find("s4"));
  EXPECT_EQ(tree->tiers(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Names(tree->AtTier(1)), (V{"s0", "s1", "s2", "s3"}));
  EXPECT_EQ(Names(tree->AtTier(2)), (V{"s4", "s5"}));
  EXPECT_EQ(tree->TierOfName("spine"), 2);
  EXPECT_EQ(tree->TierOfName("leaf"), 1);
  EXPECT_FALSE(tree->TierOfName("core").has_value());
}

TEST(HyperNodeTest, LcaLeafAndLowestCovering) {
  ScenarioSpec spec = Tree();
  Cluster c = MustBuild(spec);
  const HyperNodeTree& t = *c.hyper_nodes();
  HyperNode* s0 = t.Find("s0");
  HyperNode* s1 = t.Find("s1");
  HyperNode* s2 = t.Find("s2");
  EXPECT_EQ(t.Lca(s0, s1), t.Find("s4"));
  EXPECT_EQ(t.Lca(s0, s2), t.Find("s6"));
  EXPECT_EQ(t.Lca(s0, s0), s0);
  EXPECT_EQ(t.Lca(nullptr, s1), s1);
  EXPECT_EQ(t.Lca(s1, nullptr), s1);
  EXPECT_EQ(t.Lca(s0, t.Find("s4")), t.Find("s4"));
  EXPECT_EQ(t.Lca(s0, t.top()), t.top());
  EXPECT_TRUE(t.Find("s6")->Covers(s2));
  EXPECT_FALSE(s2->Covers(t.Find("s6")));
  EXPECT_EQ(t.LeafOf(c.FindNode("node-2")), s1);
  EXPECT_EQ(t.LeafOf(c.FindNode("lone")), nullptr);  // in no tier-1 HyperNode
  std::vector<Node*> nodes = {c.FindNode("node-0"), c.FindNode("node-1")};
  EXPECT_EQ(t.LowestCovering(nodes), s0);
  nodes.push_back(c.FindNode("node-3"));
  EXPECT_EQ(t.LowestCovering(nodes), t.Find("s4"));
  nodes.push_back(c.FindNode("lone"));
  EXPECT_EQ(t.LowestCovering(nodes), t.top());
  EXPECT_EQ(t.LowestCovering({}), nullptr);
}

TEST(HyperNodeTest, OpenNormalisesTopologyAndRecoversPlacement) {
  ScenarioSpec spec = Tree();
  Cluster c = MustBuild(spec);
  OpenTopology(c);
  const HyperNodeTree& t = *c.hyper_nodes();
  Job* hard = c.FindJob("c1/hard");
  Job* named = c.FindJob("c1/named");
  Job* soft = c.FindJob("c1/soft");
  Job* plain = c.FindJob("c1/plain");
  ASSERT_TRUE(hard && named && soft && plain);
  EXPECT_TRUE(hard->hard_topology);
  EXPECT_EQ(hard->highest_tier_allowed, 2);
  // Placed on node-0 and node-3: the lowest HyperNode holding both.
  EXPECT_EQ(hard->allocated_hyper_node, t.Find("s4"));
  // highestTierName translated; mode defaults to hard.
  EXPECT_TRUE(named->hard_topology);
  EXPECT_EQ(named->highest_tier_allowed, 2);
  EXPECT_EQ(named->allocated_hyper_node, t.Find("s0"));
  // Soft becomes hard up to the top's tier; `lone` is in no HyperNode but the top.
  EXPECT_TRUE(soft->hard_topology);
  EXPECT_EQ(soft->highest_tier_allowed, 4);
  EXPECT_EQ(soft->allocated_hyper_node, t.top());
  EXPECT_FALSE(plain->hard_topology);
  EXPECT_EQ(plain->allocated_hyper_node, nullptr);
  // The resource sums the network-topology-aware policy reads.
  EXPECT_EQ(t.Find("s0")->allocatable.cpu(), 8000);
  EXPECT_EQ(t.Find("s0")->idle.cpu(), 8000 - 2000);
}

Task* TaskNamed(const Cluster& c, std::string_view name) {
  for (Task* t : c.tasks())
    if (t->name == name) return t;
  return nullptr;
}

Resource FreshUsed(const HyperNode* h) {
  Resource sum;
  for (const Node* n : h->nodes) {
    sum.Add(n->used);
    sum.Add(n->pipelined);
  }
  return sum;
}

bool SameBits(const Resource& a, const Resource& b) {
  return a.present == b.present && std::memcmp(a.values, b.values, sizeof a.values) == 0;
}

// Moves `t` onto `n` the way Session::PlaceTask does, telling the tree.
void Place(HyperNodeTree& tree, Task* t, Node* n) {
  const Resource old_used = n->used, old_pipelined = n->pipelined;
  ASSERT_TRUE(n->AddTask(t).ok());
  tree.NoteNodeUsage(*n, old_used, old_pipelined);
}

void Unplace(HyperNodeTree& tree, Task* t) {
  Node* n = t->node;
  const Resource old_used = n->used, old_pipelined = n->pipelined;
  n->RemoveTask(t);
  tree.NoteNodeUsage(*n, old_used, old_pipelined);
}

// A HyperNode's `used` is kept as a running sum only while that is bit for bit the fresh sum
// (integers below 2^53); fractional quantities fall back to summing afresh on each read.
TEST(HyperNodeTest, UsedSumIsKeptExactlyAsItsNodesAddUp) {
  ScenarioSpec spec = Tree();
  Cluster c = MustBuild(spec);
  OpenTopology(c);
  HyperNodeTree& t = *c.hyper_nodes();
  HyperNode* s0 = t.Find("s0");
  HyperNode* s1 = t.Find("s1");
  HyperNode* s4 = t.Find("s4");
  ASSERT_TRUE(s0 && s1 && s4);
  for (const HyperNode* h : t.all()) {
    EXPECT_TRUE(h->used_exact) << h->name;
    EXPECT_TRUE(SameBits(h->Used(), FreshUsed(h))) << h->name;
  }
  EXPECT_EQ(s0->Used().cpu(), 2000);  // a and d
  EXPECT_EQ(s4->Used().cpu(), 3000);  // and b
  Task* pending = TaskNamed(c, "c");
  Task* running = TaskNamed(c, "a");
  ASSERT_TRUE(pending && running);

  Place(t, pending, c.FindNode("node-2"));
  Unplace(t, running);
  EXPECT_EQ(s0->Used().cpu(), 1000);
  EXPECT_EQ(s1->Used().cpu(), 2000);
  EXPECT_EQ(s4->Used().cpu(), 3000);
  EXPECT_EQ(t.top()->Used().cpu(), 4000);  // with e on `lone`
  for (const HyperNode* h : t.all()) {
    EXPECT_TRUE(h->used_exact) << h->name;
    EXPECT_TRUE(SameBits(h->used_sum, FreshUsed(h))) << h->name;
  }

  // A fraction of a millicore: sums of such doubles depend on their order, so the HyperNodes
  // over node-0 stop keeping a running sum; the others keep theirs.
  running->mutable_resreq().Set(kCpu, 0.3);
  Place(t, running, c.FindNode("node-0"));
  EXPECT_FALSE(s0->used_exact);
  EXPECT_FALSE(s4->used_exact);
  EXPECT_FALSE(t.top()->used_exact);
  EXPECT_TRUE(s1->used_exact);
  for (const HyperNode* h : t.all()) EXPECT_TRUE(SameBits(h->Used(), FreshUsed(h))) << h->name;
  EXPECT_DOUBLE_EQ(s0->Used().cpu(), 1000.3);

  // Beyond 2^52 in a dimension the running sum is given up too.
  Task* other = TaskNamed(c, "b");  // on node-3, under s1
  Unplace(t, other);
  other->mutable_resreq().Set(kMemory, 9.0e15);
  Place(t, other, c.FindNode("node-3"));
  EXPECT_FALSE(s1->used_exact);
  EXPECT_TRUE(SameBits(s1->Used(), FreshUsed(s1)));
}

TEST(HyperNodeTest, TopologyJobsWithoutHyperNodesGetTheTopAlone) {
  ScenarioSpec spec = MustParse(R"(name: flat
cluster:
  nodes: [{name: n1, allocatable: {cpu: "2"}}, {name: n2, allocatable: {cpu: "2"}}]
  podGroups: [{name: pg, namespace: c1, networkTopology: {mode: soft}}]
)");
  Cluster c = MustBuild(spec);
  EXPECT_EQ(c.hyper_nodes(), nullptr);
  OpenTopology(c);
  ASSERT_NE(c.hyper_nodes(), nullptr);
  const HyperNodeTree& t = *c.hyper_nodes();
  EXPECT_FALSE(t.has_real());
  EXPECT_EQ(t.top()->tier, 1);
  EXPECT_EQ(NodeNames(t.top()), (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(c.FindJob("c1/pg")->highest_tier_allowed, 1);
  EXPECT_EQ(t.LeafOf(c.FindNode("n1")), t.top());
}

TEST(HyperNodeTest, MembersThatSelectNothingAreLocatedWarnings) {
  ScenarioSpec spec = MustParse(DataText("hyper-node-dangling.yaml"));

  ASSERT_EQ(spec.warnings.size(), 7u);
  const auto& w = spec.warnings;
  EXPECT_EQ(w[0].message, "hyperNode `s0`: member {type: Node, exactMatch: gone} selects no node");
  EXPECT_EQ(w[0].where.line, 9);
  EXPECT_EQ(w[0].where.file, "s.yaml");
  EXPECT_EQ(w[1].message,
            "hyperNode `s0`: member {type: Node, regexMatch: \"^x\"} selects no node");
  EXPECT_EQ(w[2].message, "hyperNode `s0`: member {type: Node, labelMatch} selects no node");
  EXPECT_NE(w[3].message.find("does not compile"), std::string::npos) << w[3].message;
  EXPECT_EQ(w[3].where.line, 12);
  EXPECT_EQ(w[4].message,
            "hyperNode `s1`: member {type: HyperNode, exactMatch: missing} names no HyperNode; "
            "the member is ignored");
  EXPECT_EQ(w[4].where.line, 17);
  EXPECT_NE(w[5].message.find("exactMatch only"), std::string::npos) << w[5].message;
  EXPECT_EQ(w[6].message,
            "podGroup `c1/pg` names highestTierName `rack`, which no HyperNode has, so no tier "
            "limits it");
  // The cluster loads; what resolved is kept and the HyperNodes are ready.
  Cluster c = MustBuild(spec);
  EXPECT_TRUE(c.hyper_nodes()->ready());
  EXPECT_EQ(NodeNames(c.hyper_nodes()->Find("s1")), (std::vector<std::string>{"n1"}));
  OpenTopology(c);
  EXPECT_FALSE(c.FindJob("c1/pg")->hard_topology);  // no tier: placed as without topology
}

TEST(HyperNodeTest, CyclesAndDoubleParentsMakeHyperNodesNotReady) {
  ScenarioSpec cyc = MustParse(R"(name: cycle
cluster:
  nodes: [{name: n1, allocatable: {cpu: "2"}}]
  hyperNodes:
  - {name: a, tier: 1, members: [{type: HyperNode, selector: {exactMatch: {name: b}}}, {type: Node, selector: {exactMatch: {name: n1}}}]}
  - {name: b, tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: a}}}]}
  - {name: c, tier: 3, members: [{type: HyperNode, selector: {exactMatch: {name: c}}}]}
)");
  ASSERT_EQ(cyc.warnings.size(), 2u);
  EXPECT_EQ(cyc.warnings[0].message,
            "hyperNode `b`: member {type: HyperNode, exactMatch: a} closes a cycle; the member "
            "is ignored and HyperNodes are not ready (jobs with a network topology wait)");
  EXPECT_EQ(cyc.warnings[0].where.line, 6);
  EXPECT_NE(cyc.warnings[1].message.find("hyperNode `c`"), std::string::npos);
  Cluster c1 = MustBuild(cyc);
  EXPECT_FALSE(c1.hyper_nodes()->ready());
  // The edge that closed the cycle is dropped: a stays b's parent, the rest hangs off the top.
  EXPECT_EQ(c1.hyper_nodes()->Find("b")->parent, c1.hyper_nodes()->Find("a"));
  EXPECT_EQ(NodeNames(c1.hyper_nodes()->Find("a")), (std::vector<std::string>{"n1"}));

  ScenarioSpec twice = MustParse(R"(name: twice
cluster:
  nodes: [{name: n1, allocatable: {cpu: "2"}}]
  hyperNodes:
  - {name: leaf, tier: 1, members: [{type: Node, selector: {exactMatch: {name: n1}}}]}
  - {name: p1, tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: leaf}}}]}
  - {name: p2, tier: 2, members: [{type: HyperNode, selector: {exactMatch: {name: leaf}}}]}
)");
  ASSERT_EQ(twice.warnings.size(), 1u);
  EXPECT_NE(twice.warnings[0].message.find("is already a member of `p1`"), std::string::npos)
      << twice.warnings[0].message;
  Cluster c2 = MustBuild(twice);
  EXPECT_FALSE(c2.hyper_nodes()->ready());
  EXPECT_EQ(NodeNames(c2.hyper_nodes()->Find("p1")), (std::vector<std::string>{"n1"}));
  EXPECT_TRUE(NodeNames(c2.hyper_nodes()->Find("p2")).empty());
}

TEST(HyperNodeTest, PodGroupTopologyAndSubGroupPolicyLoad) {
  ScenarioSpec spec = MustParse(R"(name: pg
cluster:
  podGroups:
  - name: pg1
    namespace: c1
    networkTopology: {mode: soft, highestTierAllowed: 2}
    subGroupPolicy:
    - name: workers
      subGroupSize: 4
      minSubGroups: 2
      matchLabelKeys: [volcano.sh/partition]
      labelSelector: {matchLabels: {role: worker}}
      networkTopology: {mode: hard, highestTierName: leaf}
)");
  ASSERT_EQ(spec.cluster.pod_groups.size(), 1u);
  const PodGroupSpec& g = spec.cluster.pod_groups[0];
  ASSERT_TRUE(g.network_topology.has_value());
  EXPECT_EQ(g.network_topology->mode, NetworkTopologyMode::Soft);
  EXPECT_EQ(g.network_topology->highest_tier_allowed, 2);
  ASSERT_EQ(g.sub_group_policy.size(), 1u);
  const SubGroupPolicySpec& p = g.sub_group_policy[0];
  EXPECT_EQ(p.name, "workers");
  EXPECT_EQ(p.sub_group_size, 4);
  EXPECT_EQ(p.min_sub_groups, 2);
  EXPECT_EQ(p.match_label_keys, (std::vector<std::string>{"volcano.sh/partition"}));
  ASSERT_TRUE(p.label_selector.has_value());
  EXPECT_EQ(p.label_selector->match_labels.at("role"), "worker");
  ASSERT_TRUE(p.network_topology.has_value());
  EXPECT_EQ(p.network_topology->highest_tier_name, "leaf");
  Cluster c = MustBuild(spec);
  ASSERT_NE(c.FindJob("c1/pg1"), nullptr);
  EXPECT_EQ(c.FindJob("c1/pg1")->sub_group_policy.size(), 1u);
}

TEST(HyperNodeTest, MalformedTopologyIsALocatedError) {
  struct Case {
    std::string_view yaml;
    std::string_view message;
    int line;
  };
  const Case cases[] = {
      {"cluster:\n  podGroups:\n  - name: pg\n    networkTopology: {mode: strict}\n",
       "must be hard or soft, got `strict`", 4},
      {"cluster:\n  podGroups:\n  - name: pg\n    networkTopology: {highestTierAllowed: 1, "
       "highestTierName: leaf}\n",
       "must not set both `highestTierAllowed` and `highestTierName`", 4},
      {"cluster:\n  podGroups:\n  - name: pg\n    networkTopology: {highestTierAllowed: -1}\n",
       "must be between 0", 4},
      {"cluster:\n  podGroups:\n  - name: pg\n    networkTopology: {tier: 1}\n", "tier", 4},
      {"cluster:\n  podGroups:\n  - name: pg\n    subGroupPolicy:\n    - {name: w, subGroupSize: "
       "0}\n",
       "must be between 1", 5},
      {"cluster:\n  podGroups:\n  - name: pg\n    subGroupPolicy:\n    - {name: w, minSubGroups: "
       "-1}\n",
       "must be between 0", 5},
      {"cluster:\n  podGroups:\n  - name: pg\n    subGroupPolicy:\n    - {name: w, bogus: 1}\n",
       "bogus", 5},
      {"cluster:\n  hyperNodes:\n  - {name: s0, members: []}\n", "has no `tier`", 3},
      {"cluster:\n  hyperNodes:\n  - {name: s0, tier: -1}\n", "must be between 0", 3},
      {"cluster:\n  hyperNodes:\n  - name: s0\n    tier: 1\n    members:\n    - {type: Rack, "
       "selector: {exactMatch: {name: n}}}\n",
       "must be Node or HyperNode, got `Rack`", 6},
      {"cluster:\n  hyperNodes:\n  - name: s0\n    tier: 1\n    members:\n    - {type: Node, "
       "selector: {exactMatch: {name: n}, regexMatch: {pattern: x}}}\n",
       "exactly one of exactMatch, regexMatch and labelMatch", 6},
      {"cluster:\n  hyperNodes:\n  - name: s0\n    tier: 1\n    members:\n    - {type: Node}\n",
       "has no `selector`", 6},
      {"cluster:\n  hyperNodes:\n  - name: s0\n    tier: 1\n    members:\n    - {type: Node, "
       "selector: {exactMatch: {}}}\n",
       "has no `name`", 6},
      {"cluster:\n  hyperNodes:\n  - {name: s0, tier: 1}\n  - {name: s0, tier: 2}\n",
       "hyperNode `s0` is defined twice", 4},
  };
  for (const Case& c : cases) {
    Error e = MustFail(c.yaml);
    EXPECT_NE(e.message.find(c.message), std::string::npos) << c.yaml << "\n→ " << e.message;
    EXPECT_EQ(e.where.line, c.line) << c.yaml << "\n→ " << e.message;
  }
}

}  // namespace
}  // namespace kiln
