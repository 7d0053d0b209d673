// PolicyCompiler::CompileAll compiles a conf's policies in parallel (each has its own LLVM
// context and JIT unit; parses take turns). It must give what one-at-a-time Compile gives, share
// one compile between concurrent requests for the same file, and report each failure in place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"

namespace kiln {
namespace {

std::vector<SourceFile> Builtins(const std::string& prefix) {
  std::vector<SourceFile> out;
  for (const auto& b : BuiltinPolicies())
    out.push_back({prefix + std::string(b.path), std::string(b.text)});
  return out;
}

TEST(CompileConcurrency, CompileAllMatchesOneAtATime) {
  auto* compiler = *PolicyCompiler::Global();
  std::vector<SourceFile> one = Builtins("concurrency-seq/");
  std::vector<SourceFile> all = Builtins("concurrency-par/");
  std::vector<PolicyCompiler::CompileResult> parallel = compiler->CompileAll(all);
  ASSERT_EQ(parallel.size(), one.size());
  int compiled = 0;
  for (size_t i = 0; i < one.size(); ++i) {
    auto seq = compiler->Compile(one[i]);
    ASSERT_EQ(seq.ok(), parallel[i].ok()) << one[i].path;
    if (!seq.ok()) continue;
    ++compiled;
    const CompiledPolicy& a = **seq;
    const CompiledPolicy& b = *parallel[i].value();
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(b.path, all[i].path) << "results come back in the order of the sources";
    EXPECT_EQ(a.args_size, b.args_size) << a.name;
    std::shared_ptr<const PolicyCode> ac = a.Code(), bc = b.Code();
    ASSERT_EQ(ac->points, bc->points) << a.name;
    for (ExtensionPoint p : ac->points) {
      EXPECT_NE(bc->Handler(p), nullptr) << a.name;
      EXPECT_NE(ac->Handler(p), bc->Handler(p)) << "two JIT units, two copies";
    }
    EXPECT_NE(bc->state_init, nullptr);
    EXPECT_NE(bc->args_default, nullptr);
  }
  EXPECT_GE(compiled, 4);
}

TEST(CompileConcurrency, ConcurrentRequestsForOneFileShareOneCompile) {
  auto* compiler = *PolicyCompiler::Global();
  const BuiltinPolicy* drf = FindBuiltinPolicy("drf");
  const BuiltinPolicy* gang = FindBuiltinPolicy("gang");
  SourceFile d{"concurrency-dup/drf.policy", std::string(drf->text)};
  SourceFile g{"concurrency-dup/gang.policy", std::string(gang->text)};
  auto results = compiler->CompileAll({d, g, d, g, d});
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(results[0].value(), results[2].value());
  EXPECT_EQ(results[0].value(), results[4].value());
  EXPECT_EQ(results[1].value(), results[3].value());
  EXPECT_NE(results[0].value(), results[1].value());
}

TEST(CompileConcurrency, EachFailureIsReportedInPlace) {
  auto* compiler = *PolicyCompiler::Global();
  const BuiltinPolicy* gang = FindBuiltinPolicy("gang");
  auto results = compiler->CompileAll({
      {"concurrency-err/gang.policy", std::string(gang->text)},
      {"concurrency-err/broken.policy", "policy broken;\nfn f() -> int { return \"x\"; }\n"},
      {"concurrency-err/syntax.policy", "policy syntax;\nfn f( {\n"},
  });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].ok());
  ASSERT_FALSE(results[1].ok());
  EXPECT_NE(results[1].error().message.find("concurrency-err/broken.policy:2:"),
            std::string::npos)
      << results[1].error().message;
  ASSERT_FALSE(results[2].ok());
  EXPECT_NE(results[2].error().message.find("concurrency-err/syntax.policy:2:"),
            std::string::npos)
      << results[2].error().message;
}

}  // namespace
}  // namespace kiln
