// Stable reason codes (runtime/reason_codes.h, docs/reasons.md): the documented list and the
// catalog agree; every reason the golden scenarios produce carries a listed code; codes never
// reach a text; a refused PodGroup gets its code on the condition only where Volcano writes none.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/explain.h"
#include "runtime/fit_error.h"
#include "runtime/pod_group_status.h"
#include "runtime/reason_codes.h"
#include "simulator/explain_scenario.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

std::vector<std::string> DocumentedCodes() {
  std::ifstream in(KilnSourceDir() / "docs" / "reasons.md");
  EXPECT_TRUE(in.good()) << "docs/reasons.md is missing";
  std::vector<std::string> out;
  std::string line;
  const std::regex row(R"(^\| `([A-Za-z]+)` \|)");
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, row)) out.push_back(m[1]);
  return out;
}

TEST(ReasonCodes, DocsListExactlyTheCatalogInItsOrder) {
  std::vector<std::string> catalog;
  for (const ReasonCodeInfo& c : ReasonCodes()) {
    catalog.emplace_back(c.code);
    EXPECT_FALSE(c.producer.empty()) << c.code;
    EXPECT_FALSE(c.meaning.empty()) << c.code;
  }
  EXPECT_EQ(DocumentedCodes(), catalog);
  std::set<std::string> distinct(catalog.begin(), catalog.end());
  EXPECT_EQ(distinct.size(), catalog.size()) << "a code is listed twice";
  // The examples the issue names are all there.
  for (const char* c : {"InsufficientResource", "NodeAffinityMismatch", "TaintNotTolerated",
                        "GangNotReady", "QueueOverCapability", "EnqueueRejectedOvercommit",
                        "TopologyConstraint"})
    EXPECT_TRUE(IsReasonCode(c)) << c;
  EXPECT_FALSE(IsReasonCode("NoSuchCode"));
}

TEST(ReasonCodes, CodeTravelsBesideTheTextAndNeverInIt) {
  std::string coded = CodedReason("TaintNotTolerated", "node(s) had untolerated taint {k: v}");
  SplitReason split = SplitCodedReason(coded);
  EXPECT_EQ(split.code, "TaintNotTolerated");
  EXPECT_EQ(split.text, "node(s) had untolerated taint {k: v}");
  EXPECT_EQ(SplitCodedReason("plain text").code, "");
  EXPECT_EQ(SplitCodedReason("plain text").text, "plain text");
  EXPECT_EQ(CodedReason("", "t"), "t");

  // Volcano's aggregate text is unchanged by the codes; the codes come by node count.
  FitErrors errors;
  errors.SetTotalNodes(3);
  errors.Add(FitError("t", "n1", StatusCode::Unschedulable,
                      CodedReason("InsufficientResource", "Insufficient cpu")));
  errors.Add(FitError("t", "n2", StatusCode::Unschedulable,
                      CodedReason("InsufficientResource", "Insufficient cpu")));
  errors.Add(FitError("t", "n3", StatusCode::UnschedulableAndUnresolvable,
                      CodedReason("TaintNotTolerated", "node(s) had untolerated taint {k: v}")));
  EXPECT_EQ(errors.Message(),
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}.");
  EXPECT_EQ(CodesOf(errors), (std::vector<std::string>{"InsufficientResource", "TaintNotTolerated"}));
  EXPECT_EQ(errors.errors()[2].Reasons(),
            std::vector<std::string>{"node(s) had untolerated taint {k: v}"});

  // A task-level error (the compact resource form) keeps its text too.
  FitErrors compact;
  compact.SetError(CodedReason("InsufficientResource", "0/2 nodes are available: 2 Insufficient cpu."));
  EXPECT_EQ(compact.Message(), "0/2 nodes are available: 2 Insufficient cpu.");
  EXPECT_EQ(CodesOf(compact), std::vector<std::string>{"InsufficientResource"});

  // A policy that gives no code is still answered, as Unspecified.
  PluginStatus st;
  st.reasons = {"custom text"};
  EXPECT_EQ(CodesOf(st), std::vector<std::string>{"Unspecified"});
}

// Every listed code, not Unspecified (the shipped policies give one for every reason).
void ExpectShippedCodes(const std::vector<std::string>& codes, const std::string& what) {
  EXPECT_FALSE(codes.empty()) << what << ": a reason without a code";
  for (const std::string& c : codes) {
    EXPECT_TRUE(IsReasonCode(c)) << what << ": `" << c << "` is not in docs/reasons.md";
    EXPECT_NE(c, "Unspecified") << what << ": a shipped policy gave a reason without `coded`";
  }
}

TEST(ReasonCodes, EveryReasonOfEveryGoldenScenarioCarriesAListedCode) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok());
  int scenarios = 0, reasons = 0, admissions = 0, results = 0;
  std::set<std::string> seen;
  for (const std::filesystem::path& file : AllScenarioFiles()) {
    auto spec = LoadScenarioFile(file.string());
    if (!spec) continue;  // scenarios that test loader errors
    auto conf = ResolveScenarioConf(*spec, nullptr, "");
    if (!conf) continue;  // a conf naming policies outside policies/ (packs, custom dirs)
    auto e = ExplainScenarioSession(*spec, *conf, **provider);
    if (!e) continue;  // scenarios whose first session is meant to fail
    SCOPED_TRACE(file.string());
    ++scenarios;
    auto check = [&](const std::vector<std::string>& codes, const std::string& what) {
      ExpectShippedCodes(codes, what);
      seen.insert(codes.begin(), codes.end());
      ++reasons;
    };
    for (const TaskExplain& t : e->tasks) {
      if (t.pre_predicate) check(t.pre_predicate->codes, t.key + " pre_predicate");
      if (!t.note.empty()) check({t.note_code}, t.key + " note");
      if (t.result_kind == "unschedulable" && !t.result_value.empty()) {
        check(t.result_codes, t.key + " result `" + t.result_value + "`");
        ++results;
      }
      for (const NodeExplain& n : t.nodes) {
        if (n.code != StatusCode::Success) check(n.codes, t.key + " on " + n.node);
        EXPECT_EQ(n.reason.find(kReasonCodeMark), std::string::npos) << n.reason;
        for (const PluginAnswer& a : n.predicates) {
          if (a.code == StatusCode::Success) continue;
          check(a.codes, t.key + " on " + n.node + " by " + a.plugin);
        }
      }
      EXPECT_EQ(t.result_value.find(kReasonCodeMark), std::string::npos) << t.result_value;
    }
    for (const JobExplain& j : e->jobs) {
      if (!j.valid) check({j.invalid_code}, j.uid + " invalid");
      if (j.admission) {
        check({j.admission->code}, j.uid + " admission");
        EXPECT_FALSE(j.admission->plugin.empty()) << j.uid;
        EXPECT_FALSE(j.admission->message.empty()) << j.uid;
        ++admissions;
      }
      if (j.topology)
        for (const HyperNodeTry& h : j.topology->tries)
          if (!h.reason.empty()) check({h.reason_code}, j.uid + " HyperNode " + h.hyper_node);
      if (j.gang_eviction)
        for (const EvictionDomainTry& d : j.gang_eviction->domains)
          if (!d.reason.empty()) check({d.reason_code}, j.uid + " domain " + d.hyper_node);
    }
    if (HasFailure()) break;  // one scenario's misses are enough to read
  }
  EXPECT_GT(scenarios, 100);
  EXPECT_GT(reasons, 500);
  EXPECT_GT(results, 50);
  EXPECT_GT(admissions, 0);
  // The goldens reach the common codes (a sign the walk above saw real reasons).
  for (const char* c : {"InsufficientResource", "TaintNotTolerated", "NodeAffinityMismatch",
                        "GangNotReady", "NotEnoughTasks"})
    EXPECT_TRUE(seen.count(c)) << c << " never seen";
}

TEST(ReasonCodes, EmptyPodGroupIsExplainedByEnqueuesRefusalNotGangsValidation) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok());
  auto spec = LoadScenarioFile(
      (KilnSourceDir() / "tests/cli/explain/data/empty-podgroup.yaml").string());
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  auto conf = ResolveScenarioConf(*spec, nullptr, "");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  auto e = ExplainScenarioSession(*spec, *conf, **provider);
  ASSERT_TRUE(e.ok()) << e.error().Format();
  std::map<std::string, AdmissionRefusal> refused;
  for (const JobExplain& j : e->jobs)
    if (j.admission) refused[j.uid] = *j.admission;
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_EQ(refused["c1/capped"].plugin, "proportion");
  EXPECT_EQ(refused["c1/capped"].code, "QueueOverCapability");
  EXPECT_EQ(refused["c1/capped"].message, "queue resource quota insufficient: insufficient cpu");
  EXPECT_EQ(refused["c1/huge"].plugin, "overcommit");
  EXPECT_EQ(refused["c1/huge"].code, "EnqueueRejectedOvercommit");
  EXPECT_EQ(refused["c1/huge"].message, "resource in cluster is overused: overused cpu");
}

TEST(ReasonCodes, AdmissionConditionOnlyWhereVolcanoWritesNone) {
  AdmissionRefusal r{"proportion", "QueueOverCapability",
                     "queue resource quota insufficient: insufficient cpu"};
  // No condition: Kiln adds one, with the code as its reason.
  std::vector<PodGroupCondition> conds;
  SetAdmissionCondition(conds, &r, 10, "session-1");
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].type, "Unschedulable");
  EXPECT_EQ(conds[0].status, "True");
  EXPECT_EQ(conds[0].reason, "QueueOverCapability");
  EXPECT_EQ(conds[0].message,
            "enqueue did not admit the PodGroup: proportion: queue resource quota insufficient: "
            "insufficient cpu");
  // The same refusal next session: unchanged, so the status is not written again.
  SetAdmissionCondition(conds, &r, 20, "session-2");
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time, 10);
  // Another refusal replaces it.
  AdmissionRefusal o{"overcommit", "EnqueueRejectedOvercommit", "resource in cluster is overused"};
  SetAdmissionCondition(conds, &o, 30, "session-3");
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].reason, "EnqueueRejectedOvercommit");
  // Admitted: Kiln's condition goes.
  SetAdmissionCondition(conds, nullptr, 40, "session-4");
  EXPECT_TRUE(conds.empty());
  // Volcano's own Unschedulable condition (gang's NotEnoughResources) is kept, nothing added.
  std::vector<PodGroupCondition> volcano{
      PodGroupCondition{"Unschedulable", "True", "s", 5, "NotEnoughResources", "1/2 tasks ..."}};
  SetAdmissionCondition(volcano, &r, 50, "session-5");
  ASSERT_EQ(volcano.size(), 1u);
  EXPECT_EQ(volcano[0].reason, "NotEnoughResources");
}

}  // namespace
}  // namespace kiln
