// Every shipped policy (policies/*.policy) passes the front end cleanly — the same check as
// `kiln check policies/*.policy` — and carries the header comment STYLE.md asks for. On failure
// the full diagnostics are printed, so the offending line can be fixed from the test log.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/frontend.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

std::vector<std::filesystem::path> ShippedPolicies() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(KilnSourceDir() / "policies"))
    if (e.path().extension() == ".policy") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PoliciesCheck, TheCorePluginSetIsShipped) {
  std::vector<std::string> names;
  for (const auto& p : ShippedPolicies()) names.push_back(p.stem().string());
  for (const char* want : {"gang", "priority", "conformance", "cdp", "drf",
                           "resource-strategy-fit", "proportion", "binpack", "overcommit",
                           "predicates", "nodeorder", "pdb", "nodegroup", "usage",
                           "resourcequota", "task-topology", "sla", "capacity"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(PoliciesCheck, EveryShippedPolicyHasTheStyleHeader) {
  for (const auto& path : ShippedPolicies()) {
    std::string text = Slurp(path);
    std::string name = path.stem().string();
    // "// <name> — what it does", then the four parts STYLE.md names.
    EXPECT_EQ(text.rfind("// " + name + " — ", 0), 0u) << path << " must open with its name";
    size_t header_end = text.find("\npolicy ");
    ASSERT_NE(header_end, std::string::npos) << path;
    std::string header = text.substr(0, header_end);
    for (const char* part : {"What it does", "When it works well", "Limits", "Why it exists"})
      EXPECT_NE(header.find(part), std::string::npos) << path << " header lacks \"" << part << "\"";
  }
}

TEST(PoliciesCheck, EveryShippedPolicyPassesTheFrontEnd) {
  for (const auto& path : ShippedPolicies()) {
    SourceFile source{"policies/" + path.filename().string(), Slurp(path)};
    FrontendResult result = RunFrontend(source);
    EXPECT_TRUE(result.ok()) << FormatDiagnostics(result.diagnostics, source);
  }
}

}  // namespace
}  // namespace kiln
