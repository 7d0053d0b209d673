#pragma once
// What the compile-cache tests (object_cache_test.cc, shipped_cache_test.cc) share: a policy
// whose wrong object would give a wrong number, its handler's call, the cache files of a
// directory and a way to damage one.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/jit_test_util.h"

namespace kiln::testing {

// A handler with a loop, a branch and an argument, so O2 and the code generator have work to do
// and a wrong object would give a wrong number: Σ_{i<60, 3|i} i × weight = 570 × 2.5 = 1425.
inline std::string CachedPolicyText(const std::string& weight = "2.5") {
  return "policy cached;\n"
         "arg weight: float = " +
         weight +
         " from \"cached.weight\";\n"
         "on node_order(task: Task, node: Node) -> float {\n"
         "  var s = 0.0;\n"
         "  for i in range(0, 60) { if i % 3 == 0 { s += float(i) * weight; } }\n"
         "  return s;\n"
         "}\n";
}

// The node_order score of a policy loaded from CachedPolicyText.
inline double CachedNodeOrder(LoadedPolicy& l) {
  Task task;
  Node node;
  double score = -1;
  EXPECT_EQ(l.Fn<ExtensionPoint::NodeOrder>()(&l.ctx, &task, &node, &score), 0);
  return score;
}

// Loads `text` (a CachedPolicyText) under a path beginning `prefix` and checks that its node_order
// answers `score`; null, with a test failure, when it does not compile.
inline std::unique_ptr<LoadedPolicy> LoadAndCheckCachedPolicy(const std::string& text,
                                                              const std::string& prefix,
                                                              double score = 1425.0) {
  auto l = LoadPolicy(text, prefix);
  EXPECT_TRUE(l);
  if (l) EXPECT_EQ(CachedNodeOrder(*l), score);
  return l;
}

// The .kobj files in `dir`.
inline std::vector<std::filesystem::path> CacheFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".kobj") out.push_back(e.path());
  return out;
}

// Flips one byte of the payload, ten bytes before the end of `file`.
inline void FlipPayloadByte(const std::filesystem::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-10, std::ios::end);
  char c;
  f.get(c);
  f.seekp(-10, std::ios::end);
  f.put(static_cast<char>(c ^ 0x5a));
}

}  // namespace kiln::testing
