// The stdlib's Kubernetes matching helpers (stdlib/k8s_natives.h): each rule of apimachinery's
// label selectors, component-helpers' node selector terms, AffinityTerm.Matches and
// Toleration.ToleratesTaint, first on the C++ functions, then through a JIT-compiled policy so
// the C ABI (shape pointers, KMap labels, KStr parts) is exercised as policies call it.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>

#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"
#include "tests/unit/jit_test_util.h"
#include "stdlib/k8s_natives.h"

namespace kiln {
namespace {

SelectorRequirement Req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return SelectorRequirement{std::move(key), std::move(op), std::move(values)};
}

TEST(StdlibK8s, InMatchesOnlyAListedValueOfAPresentLabel) {
  StringMap labels{{"zone", "a"}};
  EXPECT_TRUE(k8s::RequirementMatches(Req("zone", "In", {"b", "a"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("zone", "In", {"b"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("rack", "In", {"a"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("zone", "In", {}), labels)) << "In needs values";
}

TEST(StdlibK8s, NotInMatchesAnAbsentLabel) {
  StringMap labels{{"zone", "a"}};
  EXPECT_FALSE(k8s::RequirementMatches(Req("zone", "NotIn", {"a"}), labels));
  EXPECT_TRUE(k8s::RequirementMatches(Req("zone", "NotIn", {"b"}), labels));
  EXPECT_TRUE(k8s::RequirementMatches(Req("rack", "NotIn", {"a"}), labels));
}

TEST(StdlibK8s, ExistsAndDoesNotExistLookAtPresenceEvenOfAnEmptyValue) {
  StringMap labels{{"gpu", ""}};
  EXPECT_TRUE(k8s::RequirementMatches(Req("gpu", "Exists"), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("gpu", "DoesNotExist"), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("ssd", "Exists"), labels));
  EXPECT_TRUE(k8s::RequirementMatches(Req("ssd", "DoesNotExist"), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("gpu", "Exists", {"x"}), labels))
      << "Exists with values does not construct";
}

TEST(StdlibK8s, GtAndLtCompareBase10Integers) {
  StringMap labels{{"cores", "16"}, {"bad", "16x"}, {"neg", "-3"}};
  EXPECT_TRUE(k8s::RequirementMatches(Req("cores", "Gt", {"8"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("cores", "Gt", {"16"}), labels)) << "strict";
  EXPECT_TRUE(k8s::RequirementMatches(Req("cores", "Lt", {"17"}), labels));
  EXPECT_TRUE(k8s::RequirementMatches(Req("neg", "Lt", {"0"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("bad", "Gt", {"1"}), labels)) << "not a number";
  EXPECT_FALSE(k8s::RequirementMatches(Req("cores", "Gt", {"1", "2"}), labels)) << "one value";
  EXPECT_FALSE(k8s::RequirementMatches(Req("missing", "Lt", {"100"}), labels));
  EXPECT_FALSE(k8s::RequirementMatches(Req("cores", "Gt", {" 8"}), labels)) << "no blanks";
  EXPECT_FALSE(k8s::RequirementMatches(Req("cores", "Gt", {"99999999999999999999"}), labels))
      << "overflow does not parse";
}

TEST(StdlibK8s, UnknownOperatorMatchesNothing) {
  StringMap labels{{"zone", "a"}};
  EXPECT_FALSE(k8s::RequirementMatches(Req("zone", "Equals", {"a"}), labels));
}

TEST(StdlibK8s, LabelSelectorAndsLabelsAndExpressions) {
  LabelSelector sel;
  sel.match_labels = {{"app", "web"}};
  sel.match_expressions = {Req("tier", "In", {"front"})};
  EXPECT_TRUE(k8s::SelectorMatches(sel, {{"app", "web"}, {"tier", "front"}}));
  EXPECT_FALSE(k8s::SelectorMatches(sel, {{"app", "web"}, {"tier", "back"}}));
  EXPECT_FALSE(k8s::SelectorMatches(sel, {{"app", "db"}, {"tier", "front"}}));
  EXPECT_FALSE(k8s::SelectorMatches(sel, {{"tier", "front"}})) << "matchLabels key absent";
  EXPECT_TRUE(k8s::SelectorMatches(LabelSelector{}, {})) << "empty selector matches all";
  LabelSelector numeric;
  numeric.match_expressions = {Req("n", "Gt", {"1"})};
  EXPECT_FALSE(k8s::SelectorMatches(numeric, {{"n", "5"}})) << "Gt is not a LabelSelector op";
}

TEST(StdlibK8s, NodeSelectorTermMatchesLabelsAndMetadataName) {
  Node node;
  node.name = "n1";
  node.labels = {{"zone", "a"}};
  NodeSelectorTerm term;
  EXPECT_FALSE(k8s::TermMatchesNode(term, node)) << "empty term matches nothing";
  term.match_expressions = {Req("zone", "In", {"a"})};
  EXPECT_TRUE(k8s::TermMatchesNode(term, node));
  term.match_fields = {Req("metadata.name", "In", {"n1"})};
  EXPECT_TRUE(k8s::TermMatchesNode(term, node));
  term.match_fields = {Req("metadata.name", "NotIn", {"n1"})};
  EXPECT_FALSE(k8s::TermMatchesNode(term, node));
  NodeSelectorTerm fields_only;
  fields_only.match_fields = {Req("metadata.name", "In", {"n2"})};
  EXPECT_FALSE(k8s::TermMatchesNode(fields_only, node));
  fields_only.match_fields = {Req("metadata.name", "In", {"n1"})};
  EXPECT_TRUE(k8s::TermMatchesNode(fields_only, node));
  fields_only.match_fields = {Req("metadata.namespace", "In", {"n1"})};
  EXPECT_FALSE(k8s::TermMatchesNode(fields_only, node)) << "only metadata.name is a node field";
  fields_only.match_fields = {Req("metadata.name", "In", {"n1", "n2"})};
  EXPECT_FALSE(k8s::TermMatchesNode(fields_only, node)) << "field selectors take one value";
  fields_only.match_fields = {Req("metadata.name", "Exists")};
  EXPECT_FALSE(k8s::TermMatchesNode(fields_only, node));
}

TEST(StdlibK8s, TolerationRules) {
  auto tol = [](std::string key, std::string op, std::string value, std::string effect) {
    Toleration t;
    t.key = std::move(key);
    t.op = std::move(op);
    t.value = std::move(value);
    t.effect = std::move(effect);
    return t;
  };
  EXPECT_TRUE(k8s::ToleratesTaint(tol("k", "Equal", "v", "NoSchedule"), "k", "v", "NoSchedule"));
  EXPECT_FALSE(k8s::ToleratesTaint(tol("k", "Equal", "w", "NoSchedule"), "k", "v", "NoSchedule"));
  EXPECT_TRUE(k8s::ToleratesTaint(tol("k", "", "v", ""), "k", "v", "NoExecute"))
      << "empty op is Equal; empty effect matches every effect";
  EXPECT_FALSE(k8s::ToleratesTaint(tol("k", "Equal", "v", "NoExecute"), "k", "v", "NoSchedule"));
  EXPECT_TRUE(k8s::ToleratesTaint(tol("k", "Exists", "", "NoSchedule"), "k", "any", "NoSchedule"));
  EXPECT_TRUE(k8s::ToleratesTaint(tol("", "Exists", "", ""), "anything", "x", "NoExecute"))
      << "empty key with Exists tolerates every taint";
  EXPECT_FALSE(k8s::ToleratesTaint(tol("j", "Exists", "", ""), "k", "x", "NoSchedule"));
  EXPECT_FALSE(k8s::ToleratesTaint(tol("k", "Lt", "v", ""), "k", "v", "NoSchedule"));
}

TEST(StdlibK8s, PodAffinityTermNamespacesAndSelector) {
  Task owner, same_ns, other_ns;
  owner.namespace_ = "a";
  same_ns.namespace_ = "a";
  same_ns.mutable_shape().labels = {{"app", "db"}};
  other_ns.namespace_ = "b";
  other_ns.mutable_shape().labels = {{"app", "db"}};
  PodAffinityTerm term;
  EXPECT_FALSE(kiln_std_term_matches_pod(&term, &owner, &same_ns)) << "nil selector: no pod";
  term.label_selector = LabelSelector{{{"app", "db"}}, {}};
  EXPECT_TRUE(kiln_std_term_matches_pod(&term, &owner, &same_ns));
  EXPECT_FALSE(kiln_std_term_matches_pod(&term, &owner, &other_ns)) << "owner's namespace";
  term.namespaces = {"b"};
  EXPECT_FALSE(kiln_std_term_matches_pod(&term, &owner, &same_ns));
  EXPECT_TRUE(kiln_std_term_matches_pod(&term, &owner, &other_ns));
  term.namespaces.clear();
  term.namespace_selector = LabelSelector{};
  EXPECT_TRUE(kiln_std_term_matches_pod(&term, &owner, &other_ns)) << "{} selects every namespace";
}

TEST(StdlibK8s, RequiredNodeAffinityIsSelectorAndAnyTerm) {
  Node node;
  node.name = "n1";
  node.labels = {{"zone", "a"}, {"disk", "ssd"}};
  Task task;
  EXPECT_TRUE(kiln_std_required_node_affinity_matches(&task, &node)) << "no constraints";
  task.mutable_shape().node_selector = {{"disk", "ssd"}};
  EXPECT_TRUE(kiln_std_required_node_affinity_matches(&task, &node));
  task.mutable_shape().node_selector = {{"disk", "hdd"}};
  EXPECT_FALSE(kiln_std_required_node_affinity_matches(&task, &node));
  task.mutable_shape().node_selector.clear();
  NodeSelectorTerm wrong, right;
  wrong.match_expressions = {Req("zone", "In", {"b"})};
  right.match_expressions = {Req("zone", "In", {"a"}), Req("disk", "Exists")};
  task.mutable_shape().affinity.node_affinity = NodeAffinity{};
  task.mutable_shape().affinity.node_affinity->required = std::vector<NodeSelectorTerm>{wrong};
  EXPECT_FALSE(kiln_std_required_node_affinity_matches(&task, &node));
  task.mutable_shape().affinity.node_affinity->required = std::vector<NodeSelectorTerm>{wrong, right};
  EXPECT_TRUE(kiln_std_required_node_affinity_matches(&task, &node)) << "terms are ORed";
  task.mutable_shape().affinity.node_affinity->required = std::vector<NodeSelectorTerm>{};
  EXPECT_FALSE(kiln_std_required_node_affinity_matches(&task, &node)) << "no term: nothing";
}

// ---- through the JIT: the policy-facing names, signatures and C ABI ----

// Runs `body` as node_order(task, node) and returns its score.
double Score(const std::string& body, Task& task, Node& node) {
  return testing::EvalNodeOrder(body, "", "test/stdlib_k8s_eval_", task, node);
}

TEST(StdlibK8s, PoliciesCallTheHelpersOnViewsAndLabelMaps) {
  Task task;
  task.namespace_ = "a";
  task.mutable_shape().labels = {{"app", "web"}};
  task.mutable_shape().node_selector = {{"zone", "a"}};
  Toleration tol;
  tol.key = "dedicated";
  tol.op = "Exists";
  tol.effect = "NoSchedule";
  task.mutable_shape().tolerations = {tol};
  PodAffinityTerm term;
  term.label_selector = LabelSelector{{{"app", "web"}}, {}};
  term.topology_key = "zone";
  task.mutable_shape().affinity.pod_anti_affinity = PodAffinity{{term}, {}};
  Node node;
  node.name = "n1";
  node.labels = {{"zone", "a"}, {"cores", "16"}};
  node.taints = {Taint{"dedicated", "x", "NoSchedule"}, Taint{"other", "", "NoExecute"}};

  // Each check adds a distinct power of two, so a wrong answer shows which one.
  const std::string body = R"(
    var s = 0.0;
    for t in task.required_pod_anti_affinity {
      if let sel = t.label_selector {
        if selector_matches(sel, task.labels) { s += 1.0; }
        if selector_matches_task(sel, task) { s += 2.0; }
        if not selector_matches(sel, node.labels) { s += 4.0; }
      }
      if term_matches_pod(t, task, task) { s += 8.0; }
    }
    if required_node_affinity_matches(task, node) { s += 16.0; }
    var first = true;
    for taint in node.taints {
      if first {
        if task_tolerates(task, taint) { s += 32.0; }
        if any(tolerates(tol, taint) for tol in task.tolerations) { s += 512.0; }
      } else {
        if not task_tolerates(task, taint) { s += 64.0; }
      }
      first = false;
    }
    if task_tolerates_taint(task, "dedicated", "", "NoSchedule") { s += 128.0; }
    if not task_tolerates_taint(task, "dedicated", "", "NoExecute") { s += 256.0; }
    return s;)";
  EXPECT_EQ(Score(body, task, node), 1023.0);
  node.labels["zone"] = "b";
  EXPECT_EQ(Score(body, task, node), 1023.0 - 16.0) << "nodeSelector zone=a fails on zone b";
}

TEST(StdlibK8s, PoliciesMatchNodeTermsAndRequirements) {
  Task task;
  NodeSelectorTerm term;
  term.match_expressions = {Req("cores", "Gt", {"8"})};
  term.match_fields = {Req("metadata.name", "In", {"n1"})};
  task.mutable_shape().affinity.node_affinity = NodeAffinity{};
  task.mutable_shape().affinity.node_affinity->required = std::vector<NodeSelectorTerm>{term};
  Node node;
  node.name = "n1";
  node.labels = {{"cores", "16"}};
  const std::string body = R"(
    var s = 0.0;
    for t in task.required_node_affinity {
      if term_matches_node(t, node) { s += 1.0; }
      for r in t.match_expressions {
        if requirement_matches(r, node.labels) { s += 2.0; }
        if not requirement_matches(r, {"cores": "4"}) { s += 4.0; }
      }
    }
    return s;)";
  EXPECT_EQ(Score(body, task, node), 7.0);
  node.name = "n2";
  EXPECT_EQ(Score(body, task, node), 6.0) << "matchFields metadata.name In [n1]";
}

}  // namespace
}  // namespace kiln
