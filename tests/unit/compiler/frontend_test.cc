// Front end behaviour: valid policies check clean, specific errors are reported at the right
// place, and adversarial input (deep nesting, huge files) gives diagnostics instead of crashes.
#include <chrono>

#include "compiler/builtin_policies.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

FrontendResult RunText(const std::string& text) { return RunFrontend(SourceFile{"t.policy", text}); }

// The nesting checks must hold on inputs up to 1 MiB, over the default source limit (256 KiB):
// `--policy-max-source-bytes` may raise it.
FrontendResult RunLongText(const std::string& text) {
  FrontendLimits limits;
  limits.size.max_source_bytes = 1 << 20;
  return RunFrontend(SourceFile{"t.policy", text}, limits);
}

// The first error's message and line.
std::pair<std::string, int> FirstError(const FrontendResult& r) {
  for (const auto& d : r.diagnostics.items())
    if (d.severity == Severity::Error) return {d.message, d.range.begin.line};
  return {"", 0};
}

TEST(Frontend, MinimalPolicyIsClean) {
  auto r = RunText("policy p;\non job_order(l: Job, r: Job) -> int { return 0; }\n");
  EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, {"t.policy", ""});
  ASSERT_TRUE(r.policy);
  EXPECT_EQ(r.policy->name, "p");
  ASSERT_EQ(r.policy->All<ast::HandlerDecl>().size(), 1u);
  EXPECT_EQ(r.policy->HandlerFor(ExtensionPoint::JobOrder)->points[0].name, "job_order");
}

TEST(Frontend, OneHandlerServesSeveralPoints) {
  auto r = RunText(R"(policy cdp_like;
on preemptable, reclaimable(p: Task, cands: list<Task>) -> Victims {
  return victims([c for c in cands where c.priority < p.priority]);
})");
  ASSERT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, {"t.policy", ""});
  EXPECT_NE(r.policy->HandlerFor(ExtensionPoint::Preemptable), nullptr);
  EXPECT_EQ(r.policy->HandlerFor(ExtensionPoint::Preemptable),
            r.policy->HandlerFor(ExtensionPoint::Reclaimable));
}

TEST(Frontend, HandlerSignaturesComeFromTheExtensionPointTable) {
  // Every point accepts exactly the signature derived from kExtensionPoints.
  for (const auto& p : kExtensionPoints) {
    SCOPED_TRACE(std::string(p.handler));
    std::string params;
    static const char* kNames[] = {"a", "b", "c"};
    TypeContext t;
    for (int i = 0; i < p.param_count; ++i) {
      std::string type;
      switch (p.params[i]) {
        case AbiKind::Task: type = "Task"; break;
        case AbiKind::Job: type = "Job"; break;
        case AbiKind::Node: type = "Node"; break;
        case AbiKind::Queue: type = "Queue"; break;
        case AbiKind::TaskList: type = "list<Task>"; break;
        case AbiKind::NodeList: type = "list<Node>"; break;
        case AbiKind::HyperNodeList: type = "list<HyperNode>"; break;
        case AbiKind::SubJob: type = "SubJob"; break;
        default: FAIL() << "unexpected parameter kind";
      }
      params += std::string(i ? ", " : "") + kNames[i] + ": " + type;
    }
    std::string result, body = "{ }";
    switch (p.result) {
      case AbiKind::Void: break;
      case AbiKind::Int: result = " -> int"; body = "{ return 0; }"; break;
      case AbiKind::Float: result = " -> float"; body = "{ return 0.0; }"; break;
      case AbiKind::Bool: result = " -> bool"; body = "{ return true; }"; break;
      case AbiKind::Vote: result = " -> Vote"; body = "{ return abstain; }"; break;
      case AbiKind::Status: result = " -> Fit"; body = "{ return fits; }"; break;
      case AbiKind::Validation: result = " -> Validation"; body = "{ return valid; }"; break;
      case AbiKind::TaskList: result = " -> list<Task>"; body = "{ return a; }"; break;
      case AbiKind::HyperNodeList: result = " -> list<HyperNode>"; body = "{ return b; }"; break;
      case AbiKind::FloatList:
        result = " -> list<float>?";
        body = "{ return [0.0 for n in b]; }";
        break;
      case AbiKind::NodeOrNone: result = " -> Node?"; body = "{ return none; }"; break;
      case AbiKind::Victims: result = " -> Victims"; body = "{ return abstain_victims(); }"; break;
      default: FAIL() << "unexpected result kind";
    }
    std::string text = fmt::format("policy p;\non {}({}){} {}\n", p.handler, params, result, body);
    auto r = RunText(text);
    EXPECT_TRUE(r.ok()) << text << FormatDiagnostics(r.diagnostics, {"t.policy", text});
  }
}

TEST(Frontend, WrongHandlerResultIsReportedWithTheExpectedSignature) {
  auto r = RunText("policy p;\non node_order(t: Task, n: Node) -> int { return 0; }\n");
  auto [msg, line] = FirstError(r);
  EXPECT_EQ(msg, "`node_order` handlers have the signature (Task, Node) -> float; this one is "
                 "(Task, Node) -> int");
  EXPECT_EQ(line, 2);
}

TEST(Frontend, ErrorsAreSortedAndAllReported) {
  auto r = RunText("policy p;\nfn f() -> int { return \"a\"; }\nfn g() -> bool { return 1; }\n");
  ASSERT_EQ(r.diagnostics.ErrorCount(), 2);
  EXPECT_EQ(r.diagnostics.items()[0].range.begin.line, 2);
  EXPECT_EQ(r.diagnostics.items()[1].range.begin.line, 3);
}

TEST(Frontend, SuggestsNearMissFieldNames) {
  auto r = RunText("policy p;\non job_ready(j: Job) -> bool { return j.min_avialable > 0; }\n");
  EXPECT_EQ(FirstError(r).first,
            "unknown field `min_avialable` on Job; did you mean `min_available`?");
}

TEST(Frontend, DivisionAndMissingKeysHaveDefinedTypes) {
  auto r = RunText(R"(policy p;
state counts: map<Job, int>;
state owners: map<string, Job>;
on job_enqueued(j: Job) {
  counts[j] += 1;
  let x = counts[j] / 0;
  let maybe: Job? = owners["a"];
  if let o = maybe { counts[o] = x; }
})");
  EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, {"t.policy", ""});
}

TEST(Frontend, IndexingAMapOfViewsGivesAnOptional) {
  auto r = RunText(R"(policy p;
state owners: map<string, Job>;
on job_ready(j: Job) -> bool { return owners["a"].min_available > 0; })");
  EXPECT_NE(FirstError(r).first.find("may be none"), std::string::npos) << FirstError(r).first;
}

std::string Nested(int depth, const std::string& open, const std::string& inner,
                   const std::string& close) {
  std::string s;
  s.reserve(depth * (open.size() + close.size()) + inner.size());
  for (int i = 0; i < depth; ++i) s += open;
  s += inner;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

// Each adversarial shape must produce a nesting diagnostic quickly, without overflowing.
void ExpectNestingError(const std::string& expr) {
  auto start = std::chrono::steady_clock::now();
  auto r = RunLongText("policy deep;\nconst x = " + expr + ";\n");
  auto elapsed = std::chrono::steady_clock::now() - start;
  auto [msg, line] = FirstError(r);
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  EXPECT_EQ(line, 2);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST(Frontend, HundredThousandDeepParenthesesGiveADiagnostic) {
  ExpectNestingError(Nested(100000, "(", "1", ")"));
}
TEST(Frontend, HundredThousandDeepListsGiveADiagnostic) {
  ExpectNestingError(Nested(100000, "[", "1", "]"));
}
TEST(Frontend, HundredThousandPrefixOperatorsGiveADiagnostic) {
  ExpectNestingError(Nested(100000, "not ", "true", ""));
  ExpectNestingError(Nested(100000, "-", "1", ""));
}
TEST(Frontend, LongConditionalChainsGiveADiagnostic) {
  // 50,000 links: long enough to overflow a recursive parser, short enough for 1 MiB.
  ExpectNestingError(Nested(50000, "true ? 1 : ", "2", ""));
}
TEST(Frontend, LongLeftAssociativeChainsGiveADiagnostic) {
  std::string s = "1";
  for (int i = 0; i < 100000; ++i) s += "+1";
  ExpectNestingError(s);
}
TEST(Frontend, LongElseIfChainsGiveADiagnostic) {
  std::string s = "policy p;\nfn f(x: int) -> int {\n  if x == 0 { return 0; }";
  for (int i = 0; i < 30000; ++i) s += " else if x == 1 { return 1; }";
  s += "\n  return 2;\n}\n";
  auto [msg, line] = FirstError(RunLongText(s));
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
}

TEST(Frontend, InvalidUtf8IsReportedWhereItIs) {
  auto [msg, line] = FirstError(RunText("policy p;\nconst s = \"a\xff\";\n"));
  EXPECT_EQ(msg, "invalid UTF-8 in the source (byte 0xff)");
  EXPECT_EQ(line, 2);
}

TEST(Frontend, RecordsThatContainThemselvesAreRejected) {
  auto r = RunText(R"(policy p;
record A { b: B; }
record B { a: A; tail: list<B>; }
on job_order(l: Job, r: Job) -> int { return 0; })");
  ASSERT_EQ(r.diagnostics.ErrorCount(), 2) << FormatDiagnostics(r.diagnostics, {"t", ""});
  EXPECT_EQ(FirstError(r).first,
            "record `A` contains itself; use a list, map or optional field to break the cycle");
}

TEST(Frontend, KubernetesShapesAreReadOnlyViewTypes) {
  auto r = RunText(R"(policy p;
fn tolerated(tols: list<Toleration>, t: Taint) -> bool {
  return any(tol.key == t.key and tol.effect == t.effect for tol in tols);
}
on predicate(task: Task, node: Node) -> Fit {
  for t in node.taints {
    if not tolerated(task.tolerations, t) { return unschedulable("taint " + t.key); }
  }
  return fits;
})");
  EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, {"t", ""});
  auto bad = RunText("policy p;\non predicate(t: Task, n: Node) -> Fit {\n"
                     "  return unschedulable(n.taints.get(0).kee);\n}\n");
  EXPECT_NE(FirstError(bad).first.find("may be none"), std::string::npos) << FirstError(bad).first;
}

TEST(Frontend, FilesOverTheSizeLimitAreRejected) {
  std::string big = "policy p;\n" + std::string(2 << 20, ' ');
  auto [msg, line] = FirstError(RunText(big));
  EXPECT_NE(msg.find("file is too large"), std::string::npos) << msg;
}

TEST(Frontend, GarbageLineInAShippedPolicyIsReportedAtThatLine) {
  const BuiltinPolicy* p = FindBuiltinPolicy("priority");
  ASSERT_NE(p, nullptr);
  std::string text(p->text);
  // Insert after the 10th line.
  size_t pos = 0;
  for (int i = 0; i < 10; ++i) pos = text.find('\n', pos) + 1;
  text.insert(pos, "@@ garbage $$ here\n");
  auto [msg, line] = FirstError(RunText(text));
  EXPECT_EQ(line, 11) << msg;
}

// The policies issue 3 delivers must check clean (kiln check policies/*.policy exits 0 for them).
TEST(Frontend, ShippedPoliciesOfTheLanguageIssueCheckClean) {
  for (const char* name :
       {"gang", "priority", "conformance", "cdp", "drf", "resource-strategy-fit"}) {
    SCOPED_TRACE(name);
    const BuiltinPolicy* p = FindBuiltinPolicy(name);
    ASSERT_NE(p, nullptr);
    SourceFile source{std::string(p->path), std::string(p->text)};
    auto r = RunFrontend(source);
    EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, source);
  }
}

// Every shipped policy at least parses: missing fields are the ABI's business, not syntax.
TEST(Frontend, EveryShippedPolicyParses) {
  for (const auto& p : BuiltinPolicies()) {
    SCOPED_TRACE(std::string(p.name));
    SourceFile source{std::string(p.path), std::string(p.text)};
    auto r = RunFrontend(source);
    ASSERT_NE(r.policy, nullptr) << FormatDiagnostics(r.diagnostics, source);
  }
}

}  // namespace
}  // namespace kiln::testing
