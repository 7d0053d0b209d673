#pragma once
// The source a benchmark compiles for a built-in policy: the shipped text, or, with
// KILN_BENCH_POLICY_TEXT=DIR, the file of the same name in DIR. Two trees' compilers and runtimes
// are then compared on one text: the old tree's policies/ given to the new kiln_bench, say, so
// that what a policy's own edits cost is not counted as the compiler's (docs/performance.md,
// "Issue #29's check").

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "compiler/builtin_policies.h"
#include "compiler/source.h"

namespace kiln::bench {

inline SourceFile BenchPolicySource(std::string_view name) {
  const BuiltinPolicy* b = FindBuiltinPolicy(name);
  if (b == nullptr) {
    std::fprintf(stderr, "no built-in policy %.*s\n", static_cast<int>(name.size()), name.data());
    std::abort();
  }
  SourceFile source{std::string(b->path), std::string(b->text)};
  if (const char* dir = std::getenv("KILN_BENCH_POLICY_TEXT"); dir != nullptr && *dir != '\0') {
    const auto file = std::filesystem::path(dir) / std::filesystem::path(b->path).filename();
    std::ifstream in(file);
    if (!in) {
      std::fprintf(stderr, "KILN_BENCH_POLICY_TEXT: cannot read %s\n", file.c_str());
      std::abort();
    }
    std::ostringstream text;
    text << in.rdbuf();
    source.text = text.str();
  }
  return source;
}

}  // namespace kiln::bench
