// NameTable (runtime/name_table.h): what the snapshot's node checks rely on — every name found at
// the position it was first added at and no other name found, a repeated name keeping its first
// position while still taking one, and the table growing past what it was sized for.
#include "runtime/name_table.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace {

std::vector<std::string> Names(int n, const std::string& prefix) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

TEST(NameTable, FindsEveryNameAtItsPosition) {
  const std::vector<std::string> names = Names(10000, "n");
  const NameTable table(names, [](const std::string& s) { return std::string_view(s); });
  ASSERT_EQ(table.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(table.Find(names[i]), static_cast<int64_t>(i)) << names[i];
    EXPECT_EQ(table.NameAt(i), names[i]);
  }
  for (const char* absent : {"", "n", "n10000", "n01", "N1", "n1 "}) {
    EXPECT_EQ(table.Find(absent), -1) << absent;
    EXPECT_FALSE(table.Contains(absent)) << absent;
  }
}

TEST(NameTable, ARepeatedNameKeepsItsFirstPosition) {
  NameTable table;
  EXPECT_TRUE(table.Add("a"));
  EXPECT_TRUE(table.Add("b"));
  EXPECT_FALSE(table.Add("a"));
  EXPECT_TRUE(table.Add("c"));
  EXPECT_EQ(table.size(), 4u);  // positions follow the caller's list, repeats included
  EXPECT_EQ(table.Find("a"), 0);
  EXPECT_EQ(table.Find("b"), 1);
  EXPECT_EQ(table.Find("c"), 3);
  EXPECT_EQ(table.NameAt(2), "a");
}

TEST(NameTable, GrowsPastItsReserveAndAgreesWithASet) {
  // Unsized, then far past a small reserve: the answers are a set's, names of every length
  // (the empty one too) and shared prefixes included.
  NameTable table;
  EXPECT_FALSE(table.Contains("x"));  // empty: no slot to probe, and no crash
  table.Reserve(3);
  std::unordered_set<std::string> set;
  std::vector<std::string> added;
  for (int i = 0; i < 5000; ++i) {
    std::string name = std::string(static_cast<size_t>(i % 40), 'x') + std::to_string(i % 3000);
    const bool fresh = set.insert(name).second;
    EXPECT_EQ(table.Add(name), fresh) << name;
    added.push_back(name);
  }
  ASSERT_TRUE(table.Add(""));
  for (size_t i = 0; i < added.size(); ++i) {
    const int64_t at = table.Find(added[i]);
    ASSERT_GE(at, 0) << added[i];
    EXPECT_LE(at, static_cast<int64_t>(i));
    EXPECT_EQ(table.NameAt(static_cast<size_t>(at)), added[i]);
  }
  EXPECT_EQ(table.Find(""), static_cast<int64_t>(added.size()));
  for (int i = 3000; i < 3100; ++i) EXPECT_FALSE(table.Contains("x" + std::to_string(i)));
}

}  // namespace
}  // namespace kiln
