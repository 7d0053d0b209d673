// Lowerings the semantics tests elsewhere do not reach:
//  * assignments through nested containers: an entry of a map held in a map (or in state) is
//    assignable (docs/language.md: "entries/fields of maps, records and resources held in them"),
//    so `m[a][b] += x` must update the inner map in place, not a temporary zero value;
//  * `range(n)` and `range(a, b)` as loop sources, comprehension sources and values;
//  * `x = x + [e]` on a local list appends in place (codegen's EmitLocalAppend) only while no other
//    list value could see the write: aliases keep their contents.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

// Calls the compiled `node_order` `calls` times in one session and returns the last score.
double Eval(const std::string& prelude, const std::string& body, int calls = 1) {
  return testing::EvalNodeOrder(body, prelude, "test/lowering_", calls);
}

// The same for bodies that write state: run from the allocate event (testing::EvalInAllocate).
double EvalWritingState(const std::string& prelude, const std::string& body, int calls = 1) {
  return testing::EvalInAllocate(body, prelude, "test/lowering_state_", calls);
}

TEST(LangNestedUpdate, LocalMapOfMaps) {
  EXPECT_EQ(Eval("", "var m: map<string, map<string, int>> = {};\n"
                     "m[\"a\"][\"x\"] += 2; m[\"a\"][\"x\"] += 3; m[\"a\"][\"y\"] = 7;\n"
                     "return float(m[\"a\"][\"x\"] * 100 + m[\"a\"][\"y\"]);"),
            507.0);
}

TEST(LangNestedUpdate, StateMapOfMaps) {
  EXPECT_EQ(EvalWritingState("state m: map<string, map<string, int>>;",
                 "m[\"a\"][\"x\"] += 2; m[\"a\"][\"x\"] += 3; m[\"b\"][\"x\"] = 1;\n"
                 "return float(m[\"a\"][\"x\"] * 10 + m[\"b\"][\"x\"] + len(m) * 1000);"),
            2051.0);
}

TEST(LangNestedUpdate, InnerStateMapOutlivesTheCall) {
  // The inner map is created in the first call. Later calls first fill the call arena (reset at
  // every call) with a local map, which would overwrite an inner map left in that arena.
  EXPECT_EQ(EvalWritingState("state m: map<string, map<string, int>>;",
                 "var junk: map<string, int> = {};\n"
                 "for k in range(200) { if len(m) > 0 { junk[string(k)] = k; } }\n"
                 "m[\"a\"][\"x\"] += 1;\n"
                 "return float(m[\"a\"][\"x\"] + len(m[\"a\"]) * 10);",
                 3),
            13.0);
}

TEST(LangRange, OneAndTwoArgumentFormsAsLoopSources) {
  EXPECT_EQ(Eval("", "var s = 0; for i in range(5) { s += i; } return float(s);"), 10.0);
  EXPECT_EQ(Eval("", "var s = 0; for i in range(3, 6) { s += i; } return float(s);"), 12.0);
  EXPECT_EQ(Eval("", "var s = 0; for i in range(6, 3) { s += 1; } return float(s);"), 0.0);
  EXPECT_EQ(Eval("", "var s = 0; for i in range(0) { s += 1; } return float(s);"), 0.0);
}

TEST(LangRange, ComprehensionsAndValues) {
  EXPECT_EQ(Eval("", "return float(sum(i * i for i in range(4)));"), 14.0);
  EXPECT_EQ(Eval("", "return float(count(i for i in range(2, 10) where i % 3 == 0));"), 3.0);
  EXPECT_EQ(Eval("", "let xs = range(2, 5); return float(len(xs) * 100 + xs[0] * 10 + xs[2]);"),
            324.0);
  EXPECT_EQ(Eval("", "let xs = range(-3); return float(len(xs));"), 0.0);
}

TEST(LangListAppend, GrowsInALoop) {
  EXPECT_EQ(Eval("", "var xs: list<int> = [];\n"
                     "for i in range(100) { xs = xs + [i * 2]; }\n"
                     "var ys: list<string> = [];\n"
                     "for i in range(20) { ys += [string(i)]; }\n"
                     "return float(len(xs) * 1000000 + sum(x for x in xs) * 10 + len(ys[19]));"),
            100.0 * 1000000 + 9900 * 10 + 2);
}

TEST(LangListAppend, AliasesKeepTheirContents) {
  // a3 shares a's buffer; after `a = b` the next append must not write over a3's third element,
  // and c (a copy of the prefix b) must get its own buffer.
  EXPECT_EQ(Eval("", "var a: list<int> = [];\n"
                     "a = a + [1]; a = a + [2];\n"
                     "let b = a;\n"
                     "a = a + [3];\n"
                     "let a3 = a;\n"
                     "var c = b;\n"
                     "c = c + [9];\n"
                     "a = b;\n"
                     "a += [4];\n"
                     "a = a + [5];\n"
                     "return float(len(b) * 1000000 + a3[2] * 100000 + c[2] * 10000\n"
                     "             + a[2] * 1000 + a[3] * 100 + len(a3) * 10 + len(c));"),
            2.0 * 1000000 + 3 * 100000 + 9 * 10000 + 4 * 1000 + 5 * 100 + 3 * 10 + 3);
}

TEST(LangListAppend, AnotherBufferOfTheSameLength) {
  // a is given a list of its builder's length in another buffer (one `t1 + [8]` may still extend
  // in place): appending to a must copy, or the two appends write the same slot.
  EXPECT_EQ(Eval("", "let base = [0];\n"
                     "let t1 = base + [1];\n"
                     "var a: list<int> = [];\n"
                     "a = a + [100]; a = a + [101];\n"
                     "a = t1;\n"
                     "a = a + [7];\n"
                     "let t2 = t1 + [8];\n"
                     "return float(a[2] * 10 + t2[2]);"),
            78.0);
}

TEST(LangListAppend, ListBuiltLocallyOutlivesTheCallInState) {
  // Built in the call arena by in-place appends, kept in state, read in later calls after the
  // call arena was reset and refilled by another local list.
  EXPECT_EQ(EvalWritingState("state keep: list<int>;",
                 "if len(keep) == 0 {\n"
                 "  var l: list<int> = [];\n"
                 "  for i in range(5) { l = l + [i]; }\n"
                 "  keep = l;\n"
                 "}\n"
                 "var junk: list<int> = [];\n"
                 "for i in range(100) { junk = junk + [99]; }\n"
                 "return float(sum(k for k in keep) * 1000 + len(junk));",
                 3),
            10100.0);
}

TEST(LangListAppend, ReassignedInsideALoop) {
  // Each iteration appends to xs, then replaces xs by an older prefix plus another element: the
  // in-place path must never fire on the replaced value.
  EXPECT_EQ(Eval("", "var xs: list<int> = [];\n"
                     "var prefixes: list<list<int>> = [];\n"
                     "for i in range(6) {\n"
                     "  let keep = xs;\n"
                     "  xs = xs + [i];\n"
                     "  prefixes = prefixes + [xs];\n"
                     "  xs = keep + [i + 10];\n"
                     "}\n"
                     "var total = 0;\n"
                     "for p in prefixes { total = total * 10 + p[len(p) - 1] % 10; }\n"
                     "return float(total * 100 + xs[5] - xs[0]);"),
            // prefixes end in 0..5; xs = [10, 11, 12, 13, 14, 15]
            12345.0 * 100 + 5);
}

}  // namespace
}  // namespace kiln
