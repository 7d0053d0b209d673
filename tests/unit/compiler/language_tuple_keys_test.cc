// Tuples, the composite map keys of docs/language.md "Tuples": what the checker accepts and
// rejects, and what the compiled code answers (lookups, iteration order, element access,
// comparisons, state that outlives the call). What the checker rejects, with each message and
// where it points, is the golden tests/diagnostics/tuple_keys.policy.
#include <gtest/gtest.h>

#include <string>

#include "compiler/types.h"
#include "tests/unit/compiler/frontend_test_util.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

double Eval(const std::string& body, const std::string& prelude = "") {
  return testing::EvalNodeOrder(body, prelude, "test/tuple_keys_");
}

std::string Check(const std::string& body, const std::string& prelude = "") {
  return testing::Diagnose("policy p;\n" + prelude + "\nfn f(a: string, i: int) -> int {\n" +
                               body + "\n}\n",
                           "p.policy");
}

TEST(TupleTypes, AreInternedAndNamed) {
  TypeContext t;
  const Type* a = t.Tuple({t.String(), t.Int()});
  EXPECT_EQ(a, t.Tuple({t.String(), t.Int()}));
  EXPECT_NE(a, t.Tuple({t.Int(), t.String()}));
  EXPECT_EQ(a->Name(), "(string, int)");
  EXPECT_EQ(t.Map(a, t.Bool())->Name(), "map<(string, int), bool>");
}

TEST(TupleKeys, TheCheckerAcceptsKeysLookupsAndElements) {
  EXPECT_EQ(Check("var m: map<(string, int), int> = {};\n"
                  "m[(a, i)] += 1;\n"
                  "if (a, i) in m { m[(a, 2)] = m.get((a, i)) ?? 0; }\n"
                  "var total = 0;\n"
                  "for k, v in m { total += k.1 + v + len(k.0); }\n"
                  "let ks = m.keys();\n"
                  "let lit = {(\"x\", 1): 2};\n"
                  "let f: (float, bool) = (1, true);\n"
                  "if (a, i) < (\"b\", 0) or (a, i) == (a, 1) { return len(ks) + len(lit); }\n"
                  "return total + int(f.0);"),
            "");
}

TEST(TupleKeys, LookupsFindWhatWasStored) {
  // Keys differing in any element are different entries; equal elements are one entry.
  EXPECT_EQ(Eval("var m: map<(string, int), int> = {};\n"
                 "for i in range(20) { m[(\"n\" + string(i % 5), i % 3)] += 1; }\n"
                 "let hit = m.get((\"n1\", 1)) ?? -1;\n"
                 "let miss = m.get((\"n1\", 7)) ?? -1;\n"
                 "return float(len(m) * 100 + hit * 10) + float(miss);"),
            15 * 100 + 2 * 10 - 1);
  // A string's length is part of the key: no separator can make two keys collide.
  EXPECT_EQ(Eval("var m: map<(string, string), int> = {};\n"
                 "m[(\"a|b\", \"c\")] = 1; m[(\"a\", \"b|c\")] = 2; m[(\"\", \"\")] = 3;\n"
                 "return float(len(m) * 100 + m[(\"a|b\", \"c\")] * 10 + m[(\"a\", \"b|c\")]) + "
                 "float(m[(\"\", \"\")]) / 10.0;"),
            312.3);
  // Floats and bools: 0.0 and -0.0 are one key; false and true are two.
  EXPECT_EQ(Eval("var m: map<(float, bool, int), int> = {};\n"
                 "m[(0.0, false, 1)] += 1; m[(-0.0, false, 1)] += 1; m[(0.0, true, 1)] += 1;\n"
                 "return float(len(m) * 10 + m[(0.0, false, 1)]);"),
            22.0);
}

TEST(TupleKeys, IterationIsInInsertionOrderAndGivesTheTuplesBack) {
  EXPECT_EQ(Eval("var m: map<(string, int), int> = {};\n"
                 "m[(\"c\", 3)] = 1; m[(\"a\", 1)] = 2; m[(\"b\", 2)] = 3; m[(\"a\", 1)] += 10;\n"
                 "var digits = 0;\n"
                 "for k, v in m { digits = digits * 10 + k.1; }\n"
                 "let names = [k.0 for k, v in m];\n"
                 "let ks = m.keys();\n"
                 "if names[0] != \"c\" or ks[2].0 != \"b\" or ks[1] != (\"a\", 1) { return -1.0; }\n"
                 "return float(digits * 100 + m[(\"a\", 1)]);"),
            312 * 100 + 12);
}

TEST(TupleKeys, ComparisonsAreElementwiseAndLexicographic) {
  EXPECT_EQ(Eval("var bits = 0;\n"
                 "if (\"a\", 2) < (\"b\", 1) { bits += 1; }\n"
                 "if (\"a\", 2) < (\"a\", 3) { bits += 2; }\n"
                 "if not ((\"a\", 3) < (\"a\", 3)) and (\"a\", 3) <= (\"a\", 3) { bits += 4; }\n"
                 "if (\"b\", 0) > (\"a\", 9) and (\"a\", 9) >= (\"a\", 9) { bits += 8; }\n"
                 "if (1, false) < (1, true) and (1, 2.5) != (1, 2.0) { bits += 16; }\n"
                 "if (\"x\", 1) in [(\"y\", 1), (\"x\", 1)] { bits += 32; }\n"
                 "return float(bits);"),
            63.0);
}

TEST(TupleKeys, StateMapsKeepTheirKeysAcrossCalls) {
  // The key is built in the call arena; the map keeps its own copy, so a later call still finds
  // it and iterates its strings.
  double got = testing::EvalInAllocate(
      "counts[(task.name + \"-\" + string(len(counts)), 7)] += 1;\n"
      "var total = 0;\n"
      "for k, v in counts { total += len(k.0) + k.1 + v; }\n"
      "return float(total);",
      "state counts: map<(string, int), int>;", "test/tuple_keys_state_", 3);
  // Keys "-0", "-1", "-2" (an empty task name): 2 bytes + 7 + 1 each.
  EXPECT_EQ(got, 30.0);
}

}  // namespace
}  // namespace kiln
