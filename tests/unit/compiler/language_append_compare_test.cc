// `append` (a generic library row: `(list<T>, T) -> list<T>`, T bound at each call) and
// `compare` (the three-way comparison ordering handlers answer): what the checker accepts and
// rejects, and what the compiled code answers.
#include <gtest/gtest.h>

#include <string>

#include "compiler/sema/signature.h"
#include "compiler/types.h"
#include "tests/unit/compiler/frontend_test_util.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

double Eval(const std::string& body, const std::string& prelude = "") {
  return testing::EvalNodeOrder(body, prelude, "test/append_compare_");
}

std::string Check(const std::string& body) {
  return testing::Diagnose("policy p;\nfn f(xs: list<int>, names: list<string>) -> int {\n" +
                               body + "\n}\n",
                           "p.policy");
}

TEST(GenericRows, TheTypeVariableIsBoundFromTheArguments) {
  TypeContext t;
  const char* sig = "(list<T>, T) -> list<T>";
  EXPECT_TRUE(sema::IsGeneric(sig));
  EXPECT_FALSE(sema::IsGeneric("(Task, list<Task>) -> list<Task>"));
  EXPECT_EQ(sema::BindTypeVariable(sig, 0, t.List(t.String()), t), t.String());
  EXPECT_EQ(sema::BindTypeVariable(sig, 1, t.List(t.Int()), t), t.List(t.Int()));
  EXPECT_EQ(sema::BindTypeVariable(sig, 0, t.Int(), t), nullptr);  // not a list
  // Unbound, the signature does not parse; bound, it is the concrete one.
  EXPECT_EQ(sema::ParseSignature(sig, t).result, nullptr);
  EXPECT_EQ(sema::ParseSignature(sig, t, t.Float()).result, t.List(t.Float()));
  EXPECT_EQ(sema::TypeVariableParams(sig), (std::vector<bool>{false, true}));
  EXPECT_EQ(sema::TypeVariableParams("(map<string, T>, int) -> T"),
            (std::vector<bool>{false, false}));
}

TEST(GenericRows, AppendAcceptsItsElementTypeOnly) {
  EXPECT_EQ(Check("let ys = append(xs, 3); let zs = names.append(\"a\");\n"
                  "let fs = append([1.5], 2); return len(ys) + len(zs) + len(fs);"),
            "");
  EXPECT_EQ(Check("let ys = append(xs, \"a\"); return len(ys);"),
            "p.policy:3:21: error: argument 2 of `append` has type `string`, expected `int`\n"
            "    3 | let ys = append(xs, \"a\"); return len(ys);\n"
            "      |                     ^~~\n");
  // `4` binds T = int; then 3 is not a list<int>.
  EXPECT_NE(Check("let ys = append(3, 4); return len(ys);")
                .find("argument 1 of `append` has type `int`, expected `list<int>`"),
            std::string::npos);
  EXPECT_NE(Check("let ys = append(3, [4]); return len(ys);")
                .find("argument 1 of `append` has type `int`, expected `list<list<int>>`"),
            std::string::npos);
  EXPECT_NE(Check("let ys = append(none, none); return len(ys);")
                .find("`append` cannot tell what `T` is in `(list<T>, T) -> list<T>`"),
            std::string::npos);

  EXPECT_NE(Check("let ys = append(xs); return len(ys);").find("`append` takes 2 arguments, 1 given"),
            std::string::npos);
}

TEST(GenericRows, AppendLeavesItsListAlone) {
  // The appended list is new; the one it came from and another append to it are unchanged.
  EXPECT_EQ(Eval("let a = [1, 2];\nlet b = append(a, 3);\nlet c = append(a, 4);\n"
                 "return float(len(a) * 1000 + b[2] * 100 + c[2] * 10 + len(c));"),
            2000.0 + 300.0 + 40.0 + 3.0);
  // In a loop, `x = append(x, e)` as `x = x + [e]`, of strings and records as well.
  EXPECT_EQ(Eval("var names: list<string> = [];\nvar total = 0;\n"
                 "for i in range(100) { names = append(names, string(i)); }\n"
                 "for n in names { total += len(n); }\n"
                 "var ps: list<P> = [];\nfor i in range(3) { ps = ps.append(P{w: 1.5 * float(i)}); }\n"
                 "return float(total) + ps[2].w + float(len(names));",
                 "record P { w: float = 0.0; }"),
            190.0 + 3.0 + 100.0);
}

TEST(Compare, AcceptsOrderedValuesOfOneType) {
  EXPECT_EQ(Check("return compare(1, 2) + compare(1.5, 2) + compare(\"a\", \"b\") + "
                  "compare(true, false) + compare(90s, 2m);"),
            "");
  EXPECT_NE(Check("return compare(1, \"a\");")
                .find("`compare` needs two numbers, strings, bools, durations, times or "
                      "quantities of the same type, not `int` and `string`"),
            std::string::npos);
  EXPECT_NE(Check("return compare(resource{cpu: 1}, resource{cpu: 2});").find("`compare` needs"),
            std::string::npos);
  EXPECT_NE(Check("return compare(1);").find("`compare` takes 2 arguments, 1 given"),
            std::string::npos);
}

// compare's answers to the argument lists `a`, `b` and `c` (after the statements `prelude`), as
// a × 100 + b × 10 + c.
double Compares(const std::string& a, const std::string& b, const std::string& c,
                const std::string& prelude = "") {
  return Eval(prelude + "return float(compare(" + a + ") * 100 + compare(" + b + ") * 10 + " +
              "compare(" + c + "));");
}

TEST(Compare, AnswersMinusOneZeroOrOne) {
  EXPECT_EQ(Compares("1, 2", "2, 2", "3, 2"), -100.0 + 0.0 + 1.0);
  EXPECT_EQ(Compares("\"ab\", \"b\"", "\"b\", \"b\"", "\"ba\", \"b\""), -100.0 + 0.0 + 1.0);
  EXPECT_EQ(Compares("false, true", "true, true", "true, false"), -100.0 + 0.0 + 1.0);
  // An int meets a float as a float; NaN is neither less nor greater.
  EXPECT_EQ(Compares("2, 2.5", "nan, 1.0", "2.5, 2",
                     "let big = 1.0e308 * 10.0; let nan = big - big;\n"),
            -100.0 + 0.0 + 1.0);
  EXPECT_EQ(Compares("90s, 2m", "1Gi, 1Gi", "task.creation_time, task.creation_time"), -100.0);
}

}  // namespace
}  // namespace kiln
