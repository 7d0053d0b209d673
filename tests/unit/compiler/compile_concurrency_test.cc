// PolicyCompiler::CompileAll compiles a conf's policies in parallel (each has its own LLVM
// context and JIT unit; each thread parses with DFA caches of its own). It must give what one-at-a-time Compile gives, share
// one compile between concurrent requests for the same file, and report each failure in place.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/frontend.h"
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

// What the front end makes of `source`: the typed tree's dump and the diagnostics.
std::string FrontEndOutcome(const SourceFile& source) {
  FrontendResult fe = RunFrontend(source);
  std::string out = FormatDiagnostics(fe.diagnostics, source);
  if (fe.policy) out += DumpAst(*fe.policy, /*typed=*/true);
  return out;
}

// Threads lex and parse at once, each growing DFA caches of its own from a cold start (fresh
// threads), and get what one thread gets: every built-in's tree, and the same syntax errors
// (the error-reporting stage takes turns).
TEST(CompileConcurrency, ParsingOnManyThreadsMatchesOneThread) {
  std::vector<SourceFile> sources = Builtins("parse-threads/");
  sources.push_back({"parse-threads/syntax.policy", "policy syntax;\nfn f( {\n"});
  sources.push_back({"parse-threads/deep.policy",
                     "policy deep;\nconst x = ((((y((((1))))))));\nfn g() -> int { return 1 }\n"});
  sources.push_back({"parse-threads/lex.policy", "policy lex;\nfn f() -> int { return 1 # 2; }\n"});
  std::vector<std::string> expected;
  for (const SourceFile& s : sources) expected.push_back(FrontEndOutcome(s));
  ASSERT_NE(expected[sources.size() - 3].find("syntax.policy:2:"), std::string::npos)
      << expected[sources.size() - 3];

  // Each thread starts at a different source, so that different decisions warm at once, and
  // goes round twice (cold caches, then warm ones).
  constexpr int kThreads = 6;
  auto source_of = [&](int t, size_t k) { return (k + static_cast<size_t>(t) * 5) % sources.size(); };
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < 2 * sources.size(); ++k)
        got[t].push_back(FrontEndOutcome(sources[source_of(t, k)]));
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (size_t k = 0; k < got[t].size(); ++k)
      EXPECT_EQ(got[t][k], expected[source_of(t, k)])
          << "thread " << t << ", " << sources[source_of(t, k)].path;
}

}  // namespace
}  // namespace kiln
