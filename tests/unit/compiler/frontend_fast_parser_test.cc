// The front end parses with one left-factored grammar (grammar/Policy.g4) in two stages: SLL
// prediction bailing out at the first error, then full LL prediction with the error listener.
// The first stage does its job only if SLL accepts every valid file (else valid files pay for
// two parses); the factored rules must accept exactly the language the unfactored alternatives
// they replaced did, and build the same AST. These tests hold the grammar to that.
#include <random>
#include <string>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/parse/parser.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

// Whitespace-separated pieces of a policy: a token-level mutation of them keeps most of the
// file intact, so a good share of mutants still parse and both verdicts get exercised.
std::vector<std::string> Pieces(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t') {
      flush();
      out.push_back(std::string(1, c));
    } else if (std::string_view("()[]{},;?:.").find(c) != std::string_view::npos) {
      flush();
      out.push_back(std::string(1, c));
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

const char* const kTokens[] = {"(", ")", "[", "]", "{", "}", ",", ";", "?", ":", "??", "=",
                               "==", "<", "in", "+", "-", "*", "not", "and", "or", "x", "1",
                               "for", "where", "if", "else", "let", "return", "\"s\"", "none",
                               "f(", "[x for x in xs]", "a ? b : c", "order by"};

std::string MutateTokens(const std::vector<std::string>& pieces, std::mt19937& rng) {
  std::vector<std::string> p = pieces;
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int edits = 1 + static_cast<int>(pick(2));
  for (int e = 0; e < edits && !p.empty(); ++e) {
    size_t i = pick(p.size());
    switch (pick(4)) {
      case 0: p.erase(p.begin() + static_cast<long>(i)); break;
      case 1: p.insert(p.begin() + static_cast<long>(i), kTokens[pick(std::size(kTokens))]); break;
      case 2: p.insert(p.begin() + static_cast<long>(i), p[pick(p.size())]); break;
      default: std::swap(p[i], p[pick(p.size())]); break;
    }
  }
  std::string out;
  for (const auto& s : p) out += s;
  return out;
}

TEST(FrontendFastParser, SllAcceptsEveryShippedPolicy) {
  for (const auto& p : BuiltinPolicies()) {
    EXPECT_TRUE(GrammarAccepts(p.text, /*sll=*/true)) << p.path;
    EXPECT_TRUE(GrammarAccepts(p.text, /*sll=*/false)) << p.path;
  }
}

TEST(FrontendFastParser, SllAndLlAgreeOnTokenMutationsOfShippedPolicies) {
  std::mt19937 rng(4);
  int accepted = 0, rejected = 0;
  for (const auto& p : BuiltinPolicies()) {
    std::vector<std::string> pieces = Pieces(std::string(p.text));
    for (int i = 0; i < 60; ++i) {
      std::string text = MutateTokens(pieces, rng);
      bool ll = GrammarAccepts(text, /*sll=*/false);
      ASSERT_EQ(GrammarAccepts(text, /*sll=*/true), ll) << p.path << " mutation " << i << ":\n"
                                                        << text;
      (ll ? accepted : rejected) += 1;
    }
  }
  // Both outcomes must be well represented, or the test proves little.
  EXPECT_GE(accepted, 60);
  EXPECT_GE(rejected, 60);
}

// The factored rules, and inputs at the edges of what they accept: the verdicts of the
// unfactored alternatives they replaced (`expr: coalesce '?' expr ':' expr | coalesce`, ...).
TEST(FrontendFastParser, TheFactoredRulesAcceptTheLanguage) {
  const char* const kAccepted[] = {
      "a ? b : c", "a ? b : c ? d : e", "a ?? b ?? c", "a ?? b ? c : d", "a < b", "a in b",
      "not a == b", "f(a for x in xs)", "f()", "[]", "[,]", "[a,]", "[a, b,]",
      "[a for x in xs]", "[a for x in xs where x > 1 order by x desc]", "{a: 1}", "{}", "{,}",
      "S{a: 1}", "resource{cpu: 1}", "(a ? b : c) + 1", "a == b ? c ?? d : e",
      "sum(x for x in xs) ?? 0", "[x for x in [y for y in ys]]", "f(g(a) for x in xs)",
  };
  const char* const kRejected[] = {
      "a < b < c", "a ? b", "a ?? ", "f(a, b for x in xs)", "f(a for x in xs, b)", "f(a,)",
      "[a for x in xs,]", "[a b]",
  };
  auto accepts = [](const char* e, bool stmt) {
    std::string text = stmt ? fmt::format("policy p;\nfn f() -> int {{ {}; return 0; }}\n", e)
                            : fmt::format("policy p;\nfn f() -> int {{ let v = {}; return 0; }}\n", e);
    bool ll = GrammarAccepts(text, /*sll=*/false);
    EXPECT_EQ(GrammarAccepts(text, /*sll=*/true), ll) << e;
    return ll;
  };
  for (const char* e : kAccepted) {
    EXPECT_TRUE(accepts(e, false)) << e;
    EXPECT_TRUE(accepts(e, true)) << "statement " << e;
  }
  for (const char* e : kRejected) {
    EXPECT_FALSE(accepts(e, false)) << e;
    EXPECT_FALSE(accepts(e, true)) << "statement " << e;
  }
}

// The factored rules build the same trees as the alternatives they replace.
TEST(FrontendFastParser, FactoredRulesBuildTheSameAst) {
  SourceFile source{"fast.policy", R"(policy fast;
fn f(xs: list<int>, m: map<string, int>) -> int {
  let a = len(xs) > 1 ? 1 : len(xs) == 1 ? 2 : 3;
  let b = m.get("k") ?? m.get("j") ?? 0;
  let c = sum(x for x in xs where x > 0);
  let d = [x * 2 for x in xs order by x desc];
  let e = [1, 2,];
  let g = max(a, b);
  return a + b + c + len(d) + len(e) + g;
}
)"};
  FrontendResult r = RunFrontend(source);
  ASSERT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, source);
  std::string dump = DumpAst(*r.policy, false);
  // Right-nested conditional with a comparison as each condition; right-nested coalesce.
  EXPECT_NE(dump.find("        Conditional @3:11\n"
                      "          Binary > @3:11\n"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("          Conditional @3:29\n"
                      "            Binary == @3:29\n"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("        Binary ?? @4:11\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("          Binary ?? @4:25\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Comprehension sum x @5:11\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("Comprehension list x order desc @6:11\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("        ListLit @7:11\n"
                      "          IntLit 1 @7:12\n"
                      "          IntLit 2 @7:15\n"
                      "      Let @8:3"),
            std::string::npos)
      << dump;
  EXPECT_NE(dump.find("        Call max @8:11\n"
                      "          NameRef a @8:15\n"
                      "          NameRef b @8:18\n"),
            std::string::npos)
      << dump;
}

// Syntax errors are reported by the second stage, at the positions the unfactored grammar
// reported (its reporting parse took seconds on deep expressions: issue #16). After recovering
// from the first `)`, the second stray `)` is reported as well (the unfactored grammar's
// recovery swallowed it).
TEST(FrontendFastParser, SyntaxErrorsAreReportedAtTheReferencePositions) {
  EXPECT_EQ(Diagnose("policy x;\nfn f(a: int) -> int { let x = g(a; return x; }\n", "e.policy"),
            "e.policy:2:34: error: syntax error: unexpected `;`\n"
            "    2 | fn f(a: int) -> int { let x = g(a; return x; }\n"
            "      |                                  ^\n");
  EXPECT_EQ(Diagnose("policy x;\nfn f() -> int { let x = ) and ) ; return x; }\n", "e.policy"),
            "e.policy:2:25: error: syntax error: unexpected `)`\n"
            "    2 | fn f() -> int { let x = ) and ) ; return x; }\n"
            "      |                         ^\n"
            "e.policy:2:31: error: syntax error: unexpected `)`\n"
            "    2 | fn f() -> int { let x = ) and ) ; return x; }\n"
            "      |                               ^\n");
}

}  // namespace
}  // namespace kiln::testing
