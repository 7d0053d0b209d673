// A `for` loop whose iterations leave nothing behind gives its call-arena memory back after each
// one (compiler/codegen/iteration_scratch.h). Each test pairs what must be given back with what
// must survive: a loop under a small memory budget that only completes when its garbage is
// reclaimed, and values that leave an iteration (an outer variable, a map written through, a
// `return`, a `continue`, state) read back intact.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/iteration_scratch.h"
#include "compiler/frontend.h"
#include "stdlib/runtime_support.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

double Eval(const std::string& body, const std::string& prelude = "") {
  return testing::EvalNodeOrder(body, prelude, "test/iteration_scratch_");
}

constexpr double kFault = -12345;

// The call memory budget for one test.
class Budget {
 public:
  explicit Budget(size_t bytes) : saved_(PolicyCallMemoryBudget()) {
    SetPolicyCallMemoryBudget(bytes);
  }
  ~Budget() { SetPolicyCallMemoryBudget(saved_); }

 private:
  size_t saved_;
};

TEST(IterationScratch, EachIterationsTemporariesAreGivenBack) {
  Budget budget(256 << 10);
  // 4,000 iterations, each building two Resources and a string (~600 bytes): 2.4 MB in all,
  // nine times the budget, but one iteration's worth at a time.
  EXPECT_EQ(Eval("var total = 0.0;\n"
                 "for i in range(0, 4000) {\n"
                 "  let r = resource{cpu: float(i)} + resource{memory: 1.0};\n"
                 "  let name = \"node-\" + string(i);\n"
                 "  total += r.cpu + float(len(name));\n"
                 "}\n"
                 "return total;"),
            1000.0 * (3999.0 * 4000 / 2) + 10 * 6 + 90 * 7 + 900 * 8 + 3000 * 9);  // millicores
  // The same garbage with `continue` on every other iteration.
  EXPECT_EQ(Eval("var kept = 0;\n"
                 "for i in range(0, 4000) {\n"
                 "  let r = resource{cpu: float(i)} + resource{memory: 1.0};\n"
                 "  if i % 2 == 0 { continue; }\n"
                 "  if r.cpu > 0.0 { kept += 1; }\n"
                 "}\n"
                 "return float(kept);"),
            2000.0);
}

TEST(IterationScratch, WhatAnIterationHandsOutsideStillCountsAgainstTheBudget) {
  Budget budget(256 << 10);
  // A string carried in an outer variable grows past the budget: that loop is not rewound.
  EXPECT_EQ(Eval("var acc = \"\";\n"
                 "for i in range(0, 40000) { acc = acc + \"node-\" + string(i); }\n"
                 "return float(len(acc));"),
            kFault);
  // A map written through an outer variable keeps every entry.
  EXPECT_EQ(Eval("var m: map<int, string> = {};\n"
                 "for i in range(0, 40000) { m[i] = \"node-\" + string(i); }\n"
                 "return float(len(m));"),
            kFault);
}

TEST(IterationScratch, ValuesThatLeaveAnIterationSurviveTheRewinds) {
  // The inner loop is rewound after each of its iterations; the outer one appends to a list
  // declared outside it and is not. Every name and map entry reads back as built.
  EXPECT_EQ(Eval("var names: list<string> = [];\n"
                 "var lens: map<string, int> = {};\n"
                 "var inner = 0;\n"
                 "for i in range(0, 300) {\n"
                 "  for j in range(0, 20) {\n"
                 "    let t = \"tmp-\" + string(i * 100 + j);\n"
                 "    inner += len(t);\n"
                 "  }\n"
                 "  let name = \"name-\" + string(i);\n"
                 "  names = append(names, name);\n"
                 "  lens[name] = len(name);\n"
                 "}\n"
                 "var bad = 0;\n"
                 "var k = 0;\n"
                 "for n in names {\n"
                 "  if n != \"name-\" + string(k) or lens[n] != len(n) { bad += 1; }\n"
                 "  k += 1;\n"
                 "}\n"
                 "return float(bad * 1000000 + len(names) * 1000 + len(lens));"),
            300.0 * 1000 + 300);
  // A `return` from inside the loop leaves with the iteration's value; a later call's loop
  // rewinds to a mark after it.
  EXPECT_EQ(Eval("let a = find(73);\n"
                 "let b = find(12);\n"
                 "return a == \"value-73\" and b == \"value-12\" ? 1.0 : 0.0;",
                 "fn find(n: int) -> string {\n"
                 "  for i in range(0, 100) {\n"
                 "    let s = \"value-\" + string(i);\n"
                 "    if i == n { return s; }\n"
                 "  }\n"
                 "  return \"\";\n"
                 "}\n"),
            1.0);
  // A map declared in the body and written there dies with the iteration; the one built
  // outside before the loop is only read.
  EXPECT_EQ(Eval("var outer: map<string, int> = {};\n"
                 "for i in range(0, 40) { outer[\"k\" + string(i)] = i; }\n"
                 "var total = 0;\n"
                 "for i in range(0, 200) {\n"
                 "  var local: map<string, int> = {};\n"
                 "  for j in range(0, 20) { local[\"x\" + string(j)] = j; }\n"
                 "  total += len(local) + outer[\"k\" + string(i % 40)];\n"
                 "}\n"
                 "return float(total);"),
            200.0 * 20 + 5 * (39.0 * 40 / 2));
}

// State written inside a rewound loop lives in the session arena: it survives, and it survives
// the next call's rewinds too.
TEST(IterationScratch, StateWrittenInsideARewoundLoopSurvives) {
  EXPECT_EQ(testing::EvalInAllocate(
                "for i in range(0, 500) {\n"
                "  let name = \"job-\" + string(i);\n"
                "  names[i] = name;\n"
                "  held[i] = resource{cpu: float(i)} + resource{memory: 2.0};\n"
                "}\n"
                "var bad = 0;\n"
                "for i in range(0, 500) {\n"
                "  let scratch = \"scratch-\" + string(i);\n"
                "  if names[i] != \"job-\" + string(i) or\n"
                "     held[i] != resource{cpu: float(i), memory: 2.0} or len(scratch) == 0 {\n"
                "    bad += 1;\n"
                "  }\n"
                "}\n"
                "return float(bad * 1000 + len(names));",
                "state names: map<int, string>;\nstate held: map<int, Resource>;\n",
                "test/iteration_scratch_state_", 3),
            500.0);
}

// A state initialiser runs with the session arena current: a loop there gives nothing back (the
// arena holds state), and what it computes is right.
TEST(IterationScratch, StateInitialisersAreNotRewound) {
  EXPECT_EQ(testing::EvalInAllocate("return float(total + len(labels));",
                                    "fn count() -> int {\n"
                                    "  var n = 0;\n"
                                    "  for i in range(0, 100) { let s = \"abc\" + string(i); n += len(s); }\n"
                                    "  return n;\n"
                                    "}\n"
                                    "state total: int = count();\n"
                                    "state labels: list<string> = [\"a\", \"b\"];\n",
                                    "test/iteration_scratch_init_"),
            10 * 4 + 90 * 5 + 2);
}

bool HoldsMemory(const Type* t) {
  switch (t->kind) {
    case TypeKind::String:
    case TypeKind::Resource:
    case TypeKind::Map:
    case TypeKind::List:
    case TypeKind::Record:
    case TypeKind::Tuple: return true;
    case TypeKind::Optional: return !t->elem->IsView() && HoldsMemory(t->elem);
    default: return false;
  }
}

// The verdict on the first `for` statement of each function of `text`, by function name.
std::map<std::string, bool> Verdicts(const std::string& text) {
  std::map<std::string, bool> out;
  FrontendResult front = RunFrontend(SourceFile{"test/iteration_scratch_analysis.policy", text});
  EXPECT_TRUE(front.policy && !front.diagnostics.HasErrors())
      << FormatDiagnostics(front.diagnostics, SourceFile{"", text});
  if (!front.policy) return out;
  for (const ast::FnDecl* f : front.policy->All<ast::FnDecl>())
    for (const ast::StmtPtr& s : f->body->stmts)
      if (const auto* loop = ast::As<ast::For>(s.get())) {
        out[f->name] = codegen::IterationsLeaveNothing(*loop, &HoldsMemory);
        break;
      }
  return out;
}

TEST(IterationScratch, TheAnalysisRefusesLoopsWhoseValuesEscape) {
  const std::map<std::string, bool> v = Verdicts(R"(policy p;
state s: map<int, string>;
fn scalar_outer(xs: list<int>) -> int {
  var n = 0;
  for x in xs { let t = "v" + string(x); n += len(t); }
  return n;
}
fn state_writes(xs: list<int>) -> int {
  for x in xs { s[x] = "v" + string(x); }
  return 0;
}
fn string_outer(xs: list<int>) -> int {
  var acc = "";
  for x in xs { acc = acc + string(x); }
  return len(acc);
}
fn list_outer(xs: list<int>) -> int {
  var out: list<int> = [];
  for x in xs { out = append(out, x); }
  return len(out);
}
fn map_outer(xs: list<int>) -> int {
  var m: map<int, int> = {};
  for x in xs { m[x] = 1; }
  return len(m);
}
fn nested_map_outer(xs: list<int>) -> int {
  var m: map<int, int> = {};
  for x in xs { for y in xs { m[y] += x; } }
  return len(m);
}
fn fresh_map_inside(xs: list<int>) -> int {
  var n = 0;
  for x in xs { var m: map<int, int> = {}; m[x] = 1; n += len(m); }
  return n;
}
fn shared_map_inside(xs: list<int>) -> int {
  var outer: map<int, int> = {};
  for x in xs { var m = outer; m[x] = 1; }
  return len(outer);
}
fn reassigned_map_inside(xs: list<int>) -> int {
  var outer: map<int, int> = {};
  for x in xs { var m: map<int, int> = {}; m = outer; m[x] = 1; }
  return len(outer);
}
fn resource_dimension_inside(xs: list<int>) -> float {
  var total = 0.0;
  for x in xs { var r = resource{cpu: 1.0}; r["cpu"] = float(x); total += r.cpu; }
  return total;
}
fn resource_outer(xs: list<int>) -> float {
  var r = resource{};
  for x in xs { r["cpu"] = float(x); }
  return r.cpu;
}
)");
  const std::map<std::string, bool> want{
      {"scalar_outer", true},           {"state_writes", true},
      {"string_outer", false},          {"list_outer", false},
      {"map_outer", false},             {"nested_map_outer", false},
      {"fresh_map_inside", true},       {"shared_map_inside", false},
      {"reassigned_map_inside", false}, {"resource_dimension_inside", true},
      {"resource_outer", false},
  };
  EXPECT_EQ(v, want);
}

// The loops this is for: proportion's and drf's walks over every job at session_open.
TEST(IterationScratch, ProportionAndDrfOpenLoopsAreRewound) {
  for (const char* name : {"proportion", "drf"}) {
    const BuiltinPolicy* p = FindBuiltinPolicy(name);
    ASSERT_NE(p, nullptr);
    FrontendResult front = RunFrontend(SourceFile{std::string(p->path), std::string(p->text)});
    ASSERT_TRUE(front.policy && !front.diagnostics.HasErrors()) << name;
    bool found = false;
    for (const ast::HandlerDecl* h : front.policy->All<ast::HandlerDecl>()) {
      if (h->name != "session_open") continue;
      for (const ast::StmtPtr& s : h->body->stmts)
        if (const auto* loop = ast::As<ast::For>(s.get())) {
          found = true;
          EXPECT_TRUE(codegen::IterationsLeaveNothing(*loop, &HoldsMemory)) << name;
        }
    }
    EXPECT_TRUE(found) << name << "'s session_open has no top-level loop";
  }
}

}  // namespace
}  // namespace kiln
