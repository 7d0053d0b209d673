// Hundreds of random mutations of the shipped policies: the front end always returns, in bounded
// time, with either a clean result or at least one error diagnostic that has a position — never
// a crash, a hang, or a silent failure.
#include <chrono>
#include <random>

#include "compiler/builtin_policies.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

const char* const kFragments[] = {
    "(", ")", "{", "}", "[", "]", ";", ",", "?", "??", "->", "not ", "-", "+", "*", "/", "%",
    "==", "<=", " for ", " in ", " where ", " order by ", "if ", "else ", "let ", "var ", "return ",
    "on ", "fn ", "state ", "arg ", "record ", "\"", "\"x\"", "1h", "1Gi", "1e309", "99999999999999999999",
    "none", "session.", ".", "job", "task", "\\", "/*", "*/", "//", "\n", "\0", "\xff\xfe",
    "range(", "victims(", "resource{", "Strategy{a: 1}",
};

std::string Mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    size_t pos = pick(text.size() + 1);
    switch (pick(5)) {
      case 0: {  // delete a span
        size_t len = 1 + pick(20);
        text.erase(pos, std::min(len, text.size() - std::min(pos, text.size())));
        break;
      }
      case 1: {  // insert a fragment
        const char* f = kFragments[pick(std::size(kFragments))];
        text.insert(pos, f, f[0] == '\0' ? 1 : std::char_traits<char>::length(f));
        break;
      }
      case 2: {  // duplicate a span
        size_t len = 1 + pick(40);
        std::string span = text.substr(std::min(pos, text.size()), len);
        text.insert(pos, span);
        break;
      }
      case 3:  // swap two characters
        if (text.size() > 2) std::swap(text[pick(text.size())], text[pick(text.size())]);
        break;
      default:  // a random byte
        text.insert(pos, 1, static_cast<char>(pick(256)));
        break;
    }
  }
  return text;
}

TEST(FrontendMutation, RandomMutationsOfShippedPoliciesNeverCrashOrHang) {
  std::mt19937 rng(20261121);
  int runs = 0, rejected = 0;
  auto& policies = BuiltinPolicies();
  ASSERT_FALSE(policies.empty());
  const int per_policy = std::max(30, 480 / static_cast<int>(policies.size()));
  for (const auto& p : policies) {
    for (int i = 0; i < per_policy; ++i) {
      SourceFile source{std::string(p.path), Mutate(std::string(p.text), rng)};
      auto start = std::chrono::steady_clock::now();
      FrontendResult r = RunFrontend(source);
      std::string printed = FormatDiagnostics(r.diagnostics, source);
      auto elapsed = std::chrono::steady_clock::now() - start;
      ++runs;
      ASSERT_LT(elapsed, std::chrono::seconds(5)) << p.path << " mutation " << i;
      if (!r.ok()) {
        ++rejected;
        ASSERT_TRUE(r.diagnostics.HasErrors()) << "failed without an error: " << p.path;
        for (const auto& d : r.diagnostics.items())
          ASSERT_TRUE(d.range.valid() || d.message.find("too large") != std::string::npos)
              << "diagnostic without a position: " << d.message;
        ASSERT_NE(printed.find("error: "), std::string::npos);
      }
    }
  }
  EXPECT_GE(runs, 300);
  // Most random edits break a policy; if almost none did, the mutator is not mutating.
  EXPECT_GT(rejected, runs / 2);
}

}  // namespace
}  // namespace kiln::testing
