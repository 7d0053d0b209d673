// kubernetes/decode for Volcano's topology objects: HyperNode (topology.volcano.sh/v1alpha1),
// Numatopology (nodeinfo.volcano.sh/v1alpha1) and PodGroup spec.networkTopology /
// spec.subGroupPolicy. The decoder must give the structs the scenario loader gives for the same
// object, and refuse what the loader refuses (each bad object named with the field that is
// wrong); references that do not resolve are CompleteCluster's warnings, never decode errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "kubernetes/decode.h"
#include "kubernetes/encode.h"
#include "runtime/cluster_spec.h"
#include "tests/unit/kubernetes/cluster_spec_dump.h"
#include "tests/unit/scenario_test_util.h"

namespace kiln::kube {
namespace {

using json = nlohmann::json;
using namespace kiln::testing;

json HyperNodeJson(const std::string& spec) {
  return json::parse(R"({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                         "metadata": {"name": "s0", "uid": "u", "resourceVersion": "7"}, "spec": )" +
                     spec + "}");
}

json PodGroupJson(const std::string& spec) {
  return json::parse(R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": "pg", "namespace": "c1"}, "spec": )" +
                     spec + "}");
}

TEST(KubernetesTopologyDecode, HyperNodeGivesWhatTheLoaderGives) {
  ScenarioSpec s = MustParse(R"(name: t
cluster:
  nodes: [{name: n0, allocatable: {cpu: "1"}, labels: {rack: r1}}]
  hyperNodes:
  - name: s0
    tier: 1
    tierName: leaf
    members:
    - {type: Node, selector: {exactMatch: {name: n0}}}
    - {type: Node, selector: {regexMatch: {pattern: "^n[1-3]$"}}}
    - {type: Node, selector: {labelMatch: {matchLabels: {rack: r1}, matchExpressions: [{key: zone, operator: In, values: [a, b]}]}}}
    - {type: HyperNode, selector: {exactMatch: {name: s9}}}
)");
  ASSERT_EQ(s.cluster.hyper_nodes.size(), 1u);
  ObjectMeta meta;
  auto r = DecodeHyperNode(HyperNodeJson(R"({"tier": 1, "tierName": "leaf", "members": [
      {"type": "Node", "selector": {"exactMatch": {"name": "n0"}}},
      {"type": "Node", "selector": {"regexMatch": {"pattern": "^n[1-3]$"}}},
      {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r1"},
                                                   "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}}},
      {"type": "HyperNode", "selector": {"exactMatch": {"name": "s9"}}}]})"),
                           &meta);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(D(*r), D(s.cluster.hyper_nodes[0]));
  EXPECT_EQ(meta.namespace_, "");  // cluster-scoped
  EXPECT_EQ(meta.resource_version, "7");
  EXPECT_EQ(r->where.file, "hypernode s0");
  EXPECT_EQ(r->members[3].where.file, "hypernode s0 spec.members[3]");
}

TEST(KubernetesTopologyDecode, PodGroupNetworkTopologyAndSubGroupPolicyGiveWhatTheLoaderGives) {
  ScenarioSpec s = MustParse(R"(name: t
cluster:
  podGroups:
  - name: pg
    namespace: c1
    networkTopology: {mode: soft, highestTierName: spine}
    subGroupPolicy:
    - name: workers
      networkTopology: {highestTierAllowed: 1}
      subGroupSize: 4
      minSubGroups: 2
      labelSelector: {matchLabels: {role: worker}}
      matchLabelKeys: [volcano.sh/task-index]
    - {name: ps}
)");
  ASSERT_EQ(s.cluster.pod_groups.size(), 1u);
  auto r = DecodePodGroup(PodGroupJson(R"({"networkTopology": {"mode": "soft", "highestTierName": "spine"},
      "subGroupPolicy": [{"name": "workers", "networkTopology": {"highestTierAllowed": 1}, "subGroupSize": 4,
                          "minSubGroups": 2, "labelSelector": {"matchLabels": {"role": "worker"}},
                          "matchLabelKeys": ["volcano.sh/task-index"]},
                         {"name": "ps"}]})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  PodGroupSpec want = s.cluster.pod_groups[0];
  ASSERT_TRUE(r->spec.network_topology.has_value());
  EXPECT_EQ(r->spec.network_topology->mode, NetworkTopologyMode::Soft);
  EXPECT_EQ(r->spec.network_topology->highest_tier_name, "spine");
  ASSERT_EQ(r->spec.sub_group_policy.size(), 2u);
  EXPECT_EQ(D(r->spec.network_topology), D(want.network_topology));
  EXPECT_EQ(D(r->spec.sub_group_policy[0]), D(want.sub_group_policy[0]));
  EXPECT_EQ(D(r->spec.sub_group_policy[1]), D(want.sub_group_policy[1]));
  // The CRD's default mode is hard; no networkTopology is none.
  auto bare = DecodePodGroup(PodGroupJson(R"({"networkTopology": {"highestTierAllowed": 2}})"));
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_EQ(bare->spec.network_topology->mode, NetworkTopologyMode::Hard);
  EXPECT_EQ(bare->spec.network_topology->highest_tier_allowed, 2);
  auto none = DecodePodGroup(PodGroupJson(R"({"minMember": 2})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->spec.network_topology.has_value());
  EXPECT_TRUE(none->spec.sub_group_policy.empty());
}

// Each bad object: the loader refuses the scenario form, and the decoder refuses the API form
// with the object and the field named, so `kiln serve` logs it and skips that one object.
struct BadCase {
  const char* scenario;  // YAML under `cluster:`
  const char* kind;      // "hypernode" | "podgroup"
  const char* spec;      // the object's spec as JSON
  const char* message;   // the decoder's whole error
};

const BadCase kBad[] = {
    {"hyperNodes: [{name: s0, members: []}]", "hypernode", R"({"members": []})",
     "hypernode s0: spec: has no tier"},
    {"hyperNodes: [{name: s0, tier: -1}]", "hypernode", R"({"tier": -1})",
     "hypernode s0: spec.tier: must be at least 0, got -1"},
    {"hyperNodes: [{name: s0, tier: one}]", "hypernode", R"({"tier": "one"})",
     "hypernode s0: spec.tier: must be an integer, got \"one\""},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Switch, selector: {exactMatch: {name: n0}}}]}]",
     "hypernode", R"({"tier": 1, "members": [{"type": "Switch", "selector": {"exactMatch": {"name": "n0"}}}]})",
     "hypernode s0: spec.members[0].type: must be Node or HyperNode, got `Switch`"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{selector: {exactMatch: {name: n0}}}]}]", "hypernode",
     R"({"tier": 1, "members": [{"selector": {"exactMatch": {"name": "n0"}}}]})",
     "hypernode s0: spec.members[0]: has no type"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Node}]}]", "hypernode",
     R"({"tier": 1, "members": [{"type": "Node"}]})", "hypernode s0: spec.members[0]: has no selector"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Node, selector: {}}]}]", "hypernode",
     R"({"tier": 1, "members": [{"type": "Node", "selector": {}}]})",
     "hypernode s0: spec.members[0].selector: must give exactly one of exactMatch, regexMatch and labelMatch"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Node, selector: {exactMatch: {name: n0}, regexMatch: {pattern: n}}}]}]",
     "hypernode",
     R"({"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}, "regexMatch": {"pattern": "n"}}}]})",
     "hypernode s0: spec.members[0].selector: must give exactly one of exactMatch, regexMatch and labelMatch"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Node, selector: {exactMatch: {name: \"\"}}}]}]", "hypernode",
     R"({"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": ""}}}]})",
     "hypernode s0: spec.members[0].selector.exactMatch.name: is empty"},
    {"hyperNodes: [{name: s0, tier: 1, members: [{type: Node, selector: {regexMatch: {pattern: \"\"}}}]}]", "hypernode",
     R"({"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": ""}}}]})",
     "hypernode s0: spec.members[0].selector.regexMatch.pattern: is empty"},
    {"hyperNodes: [{name: s0, tier: 1, members: {type: Node}}]", "hypernode",
     R"({"tier": 1, "members": {"type": "Node"}})", "hypernode s0: spec.members: must be a list, got an object"},
    {"podGroups: [{name: pg, namespace: c1, networkTopology: {mode: strict}}]", "podgroup",
     R"({"networkTopology": {"mode": "strict"}})",
     "podgroup c1/pg: spec.networkTopology.mode: must be hard or soft, got `strict`"},
    {"podGroups: [{name: pg, namespace: c1, networkTopology: {highestTierAllowed: 1, highestTierName: leaf}}]",
     "podgroup", R"({"networkTopology": {"highestTierAllowed": 1, "highestTierName": "leaf"}})",
     "podgroup c1/pg: spec.networkTopology: must not set both highestTierAllowed and highestTierName (the "
     "PodGroup webhook refuses it)"},
    {"podGroups: [{name: pg, namespace: c1, networkTopology: {highestTierAllowed: -2}}]", "podgroup",
     R"({"networkTopology": {"highestTierAllowed": -2}})",
     "podgroup c1/pg: spec.networkTopology.highestTierAllowed: must be at least 0, got -2"},
    {"podGroups: [{name: pg, namespace: c1, subGroupPolicy: [{name: w, subGroupSize: 0}]}]", "podgroup",
     R"({"subGroupPolicy": [{"name": "w", "subGroupSize": 0}]})",
     "podgroup c1/pg: spec.subGroupPolicy[0].subGroupSize: must be at least 1, got 0"},
    {"podGroups: [{name: pg, namespace: c1, subGroupPolicy: [{name: w, minSubGroups: -1}]}]", "podgroup",
     R"({"subGroupPolicy": [{"name": "w", "minSubGroups": -1}]})",
     "podgroup c1/pg: spec.subGroupPolicy[0].minSubGroups: must be at least 0, got -1"},
    {"podGroups: [{name: pg, namespace: c1, subGroupPolicy: [{name: w, networkTopology: {mode: loose}}]}]",
     "podgroup", R"({"subGroupPolicy": [{"name": "w", "networkTopology": {"mode": "loose"}}]})",
     "podgroup c1/pg: spec.subGroupPolicy[0].networkTopology.mode: must be hard or soft, got `loose`"},
    {"podGroups: [{name: pg, namespace: c1, subGroupPolicy: {name: w}}]", "podgroup",
     R"({"subGroupPolicy": {"name": "w"}})", "podgroup c1/pg: spec.subGroupPolicy: must be a list, got an object"},
    {"podGroups: [{name: pg, namespace: c1, subGroupPolicy: [{name: w, matchLabelKeys: a}]}]", "podgroup",
     R"({"subGroupPolicy": [{"name": "w", "matchLabelKeys": "a"}]})",
     "podgroup c1/pg: spec.subGroupPolicy[0].matchLabelKeys: must be a list, got a string"},
};

TEST(KubernetesTopologyDecode, BadObjectsAreRefusedByBothSourcesWithTheFieldNamed) {
  for (const BadCase& c : kBad) {
    SCOPED_TRACE(c.scenario);
    Error loader = MustFail(std::string("name: t\ncluster:\n  ") + c.scenario + "\n");
    EXPECT_FALSE(loader.message.empty());
    std::string kind = c.kind;
    std::string message;
    if (kind == "hypernode") {
      auto r = DecodeHyperNode(HyperNodeJson(c.spec));
      ASSERT_FALSE(r.ok());
      message = r.error().message;
    } else {
      auto r = DecodePodGroup(PodGroupJson(c.spec));
      ASSERT_FALSE(r.ok());
      message = r.error().message;
    }
    EXPECT_EQ(message, c.message);
  }
}

TEST(KubernetesTopologyDecode, HyperNodeWithoutSpecOrNameIsRefused) {
  auto r = DecodeHyperNode(json::parse(R"({"metadata": {"name": "s0"}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "hypernode s0: spec: has no tier");
  EXPECT_FALSE(DecodeHyperNode(json::parse(R"({"metadata": {}, "spec": {"tier": 1}})")).ok());
  EXPECT_FALSE(DecodeHyperNode(json::parse(R"("s0")")).ok());
}

// Members that name nothing are facts about the cluster: decoded, then warned about by
// CompleteCluster with the member's place, as for a scenario; the HyperNodes still load.
TEST(KubernetesTopologyDecode, DanglingMembersAreWarningsNotDecodeErrors) {
  ClusterSpec c;
  auto n0 = DecodeNode(json::parse(R"({"metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "1"}}})"));
  ASSERT_TRUE(n0.ok());
  c.nodes.push_back(*n0);
  for (const char* spec : {R"({"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n0"}}},
                                                      {"type": "Node", "selector": {"exactMatch": {"name": "gone"}}}]})",
                           R"({"tier": 2, "members": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "s0"}}}]})"}) {
    json o = HyperNodeJson(spec);
    if (std::string(spec).find("\"tier\": 2") != std::string::npos) o["metadata"]["name"] = "s1";
    auto r = DecodeHyperNode(o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    c.hyper_nodes.push_back(*r);
  }
  auto warnings = CompleteCluster(c, CompleteOptions{});
  bool named = false;
  for (const auto& w : warnings)
    if (w.where.file == "hypernode s0 spec.members[1]" && w.message.find("gone") != std::string::npos) named = true;
  EXPECT_TRUE(named) << "no warning about member `gone` of s0";
  auto model = BuildCluster(c);
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_NE(model->hyper_nodes(), nullptr);
  EXPECT_TRUE(model->hyper_nodes()->ready());
  ASSERT_NE(model->hyper_nodes()->Find("s1"), nullptr);
  EXPECT_EQ(model->hyper_nodes()->Find("s1")->nodes.size(), 1u);
}

TEST(KubernetesTopologyDecode, NumatopologyGivesWhatTheLoaderGives) {
  ObjectMeta meta;
  auto r = DecodeNumatopology(json::parse(R"({"apiVersion": "nodeinfo.volcano.sh/v1alpha1", "kind": "Numatopology",
      "metadata": {"name": "n0", "resourceVersion": "3"},
      "spec": {"policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
               "resReserved": {"cpu": "1", "memory": "1Gi"},
               "numares": {"cpu": {"allocatable": "0-3,8", "capacity": 8}},
               "cpuDetail": {"0": {"numa": 0, "socket": 0, "core": 0}, "8": {"numa": 1, "socket": 1, "core": 4}},
               "podAllocations": [{"uid": "x"}]}})"),
                               &meta);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(meta.namespace_, "");
  EXPECT_EQ(r->name, "n0");
  EXPECT_EQ(r->policies.at("TopologyManagerPolicy"), "single-numa-node");
  EXPECT_EQ(r->res_reserved.cpu(), 1000);
  EXPECT_EQ(r->numares.at("cpu").allocatable, (std::set<int64_t>{0, 1, 2, 3, 8}));
  EXPECT_EQ(r->numares.at("cpu").capacity, 8);
  EXPECT_EQ(r->cpu_detail.at(8).numa, 1);
  EXPECT_EQ(r->cpu_detail.at(8).core, 4);
  EXPECT_EQ(r->where.file, "numatopology n0");
  // The same object as a scenario's `numatopologies` entry, when the loader reads them.
  auto s = ParseScenario(R"(name: t
cluster:
  numatopologies:
  - name: n0
    policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
    resReserved: {cpu: "1", memory: 1Gi}
    numares: {cpu: {allocatable: "0-3,8", capacity: 8}}
    cpuDetail: {"0": {numa: 0, socket: 0, core: 0}, "8": {numa: 1, socket: 1, core: 4}}
)",
                         "s.yaml");
  if (s.ok()) {
    ASSERT_EQ(s->cluster.numatopologies.size(), 1u);
    EXPECT_EQ(D(*r), D(s->cluster.numatopologies[0]));
  }
}

TEST(KubernetesTopologyDecode, BadNumatopologiesAreRefusedWithTheFieldNamed) {
  struct Case {
    const char* spec;
    const char* message;
  } cases[] = {
      {R"({"numares": {"cpu": "0-3"}})", "numatopology n0: spec.numares.cpu: must be an object, got a string"},
      {R"({"numares": {"cpu": {"allocatable": "3-0"}}})",
       "numatopology n0: spec.numares.cpu.allocatable: `3-0` is not a cpuset (`0-3,8`): bad part `3-0`"},
      {R"({"numares": {"cpu": {"allocatable": "0-3,x"}}})",
       "numatopology n0: spec.numares.cpu.allocatable: `0-3,x` is not a cpuset (`0-3,8`): bad part `x`"},
      {R"({"numares": {"cpu": {"allocatable": "0-99999"}}})",
       "numatopology n0: spec.numares.cpu.allocatable: `0-99999` is not a cpuset (`0-3,8`): bad part `0-99999`"},
      {R"({"numares": {"cpu": {"allocatable": "0-3", "capacity": -4}}})",
       "numatopology n0: spec.numares.cpu.capacity: must be at least 0, got -4"},
      {R"({"cpuDetail": {"zero": {"numa": 0}}})",
       "numatopology n0: spec.cpuDetail: key `zero` is not a CPU id (a non-negative integer)"},
      {R"({"cpuDetail": {"0": {"numa": "zero"}}})",
       "numatopology n0: spec.cpuDetail.0.numa: must be an integer, got \"zero\""},
      {R"({"policies": ["static"]})", "numatopology n0: spec.policies: must be an object, got a list"},
      {R"({"resReserved": {"cpu": "lots"}})", "numatopology n0: spec.resReserved.cpu: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.spec);
    auto r = DecodeNumatopology(json::parse(std::string(R"({"metadata": {"name": "n0"}, "spec": )") + c.spec + "}"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.substr(0, std::string(c.message).size()), c.message);
  }
}

// export-manifests writes what the decoder reads back: HyperNodes and Numatopologies as
// cluster-scoped objects of their API groups, PodGroups with their topology fields.
TEST(KubernetesTopologyDecode, EncodedTopologyDecodesBack) {
  ClusterSpec c;
  HyperNodeSpec hn;
  hn.name = "s0";
  hn.tier = 2;
  hn.tier_name = "spine";
  HyperNodeMemberSpec m;
  m.type = HyperNodeMemberSpec::Type::Node;
  m.selector = HyperNodeMemberSpec::Selector::Label;
  m.labels.match_labels["rack"] = "r1";
  hn.members.push_back(m);
  c.hyper_nodes.push_back(hn);
  NumatopologySpec n;
  n.name = "n0";
  n.policies["CPUManagerPolicy"] = "static";
  n.numares["cpu"] = NumatopologySpec::NumaResource{{0, 1, 2, 3, 6, 7, 9}, 8};
  n.cpu_detail[7] = NumatopologySpec::CpuInfo{1, 0, 3};
  c.numatopologies.push_back(n);
  PodGroupSpec g;
  g.name = "pg";
  g.namespace_ = "c1";
  g.network_topology = NetworkTopologySpec{NetworkTopologyMode::Hard, 1, ""};
  SubGroupPolicySpec sg;
  sg.name = "w";
  sg.min_sub_groups = 0;
  sg.match_label_keys = {"k"};
  g.sub_group_policy.push_back(sg);
  c.pod_groups.push_back(g);
  auto items = EncodeCluster(c, EncodeOptions{});
  int seen = 0;
  for (const json& item : items) {
    std::string kind = item["kind"];
    if (kind == "HyperNode") {
      EXPECT_EQ(item["apiVersion"], "topology.volcano.sh/v1alpha1");
      EXPECT_FALSE(item["metadata"].contains("namespace"));
      auto r = DecodeHyperNode(item);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(D(*r), D(hn));
      ++seen;
    } else if (kind == "Numatopology") {
      EXPECT_EQ(item["apiVersion"], "nodeinfo.volcano.sh/v1alpha1");
      EXPECT_EQ(item["spec"]["numares"]["cpu"]["allocatable"], "0-3,6-7,9");
      auto r = DecodeNumatopology(item);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(D(*r), D(n));
      ++seen;
    } else if (kind == "PodGroup") {
      auto r = DecodePodGroup(item);
      ASSERT_TRUE(r.ok()) << r.error().message;
      EXPECT_EQ(D(r->spec.network_topology), D(g.network_topology));
      ASSERT_EQ(r->spec.sub_group_policy.size(), 1u);
      EXPECT_EQ(D(r->spec.sub_group_policy[0]), D(sg));
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
}

}  // namespace
}  // namespace kiln::kube
