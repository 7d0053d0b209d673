#pragma once
// Helpers shared by the front end tests: run the front end on text, read/write golden files.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/frontend.h"
#include "tests/unit/source_dir.h"

namespace kiln::testing {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::filesystem::path SourceDir() { return KilnSourceDir(); }

// Files under `dir` (relative to the source dir) ending in `ext`, sorted.
inline std::vector<std::filesystem::path> FilesIn(const std::string& dir, const std::string& ext) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() / dir))
    if (e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs the front end on `text` (named `path` in diagnostics) and returns the formatted output.
inline std::string Diagnose(const std::string& text, const std::string& path = "test.policy") {
  SourceFile source{path, text};
  FrontendResult r = RunFrontend(source);
  return FormatDiagnostics(r.diagnostics, source);
}

// Golden comparison: on mismatch, prints the actual text so it can be reviewed and pasted; with
// KILN_UPDATE_GOLDEN=1 in the environment, rewrites the expected file instead.
inline void ExpectGolden(const std::filesystem::path& expected_file, const std::string& actual) {
  if (const char* u = std::getenv("KILN_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(expected_file, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expected_file))
      << expected_file << " is missing; actual output:\n" << actual;
  std::string expected = ReadFile(expected_file);
  EXPECT_EQ(expected, actual) << "golden mismatch for " << expected_file
                              << "\n---- actual output ----\n" << actual;
}

}  // namespace kiln::testing
