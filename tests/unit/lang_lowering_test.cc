// Lowerings the semantics tests elsewhere do not reach:
//  * assignments through nested containers: an entry of a map held in a map (or in state) is
//    assignable (docs/language.md: "entries/fields of maps, records and resources held in them"),
//    so `m[a][b] += x` must update the inner map in place, not a temporary zero value;
//  * `range(n)` and `range(a, b)` as loop sources, comprehension sources and values.
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

TEST(LangNestedUpdate, LocalMapOfMaps) {
  EXPECT_EQ(Eval("", "var m: map<string, map<string, int>> = {};\n"
                     "m[\"a\"][\"x\"] += 2; m[\"a\"][\"x\"] += 3; m[\"a\"][\"y\"] = 7;\n"
                     "return float(m[\"a\"][\"x\"] * 100 + m[\"a\"][\"y\"]);"),
            507.0);
}

TEST(LangNestedUpdate, StateMapOfMaps) {
  EXPECT_EQ(Eval("state m: map<string, map<string, int>>;",
                 "m[\"a\"][\"x\"] += 2; m[\"a\"][\"x\"] += 3; m[\"b\"][\"x\"] = 1;\n"
                 "return float(m[\"a\"][\"x\"] * 10 + m[\"b\"][\"x\"] + len(m) * 1000);"),
            2051.0);
}

TEST(LangNestedUpdate, InnerStateMapOutlivesTheCall) {
  // The inner map is created in the first call. Later calls first fill the call arena (reset at
  // every call) with a local map, which would overwrite an inner map left in that arena.
  EXPECT_EQ(Eval("state m: map<string, map<string, int>>;",
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

}  // namespace
}  // namespace kiln
