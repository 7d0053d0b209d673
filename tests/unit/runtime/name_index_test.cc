// NameIndex (runtime/name_index.h): what Cluster::Link's task index relies on — every object
// found by its name and no other, duplicates refused, erased names gone while the names probed
// past them stay found, and the table growing past what it was sized for.
#include "runtime/name_index.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln {
namespace {

struct Named {
  std::string name;
};
using Index = NameIndex<Named, &Named::name>;

std::vector<std::unique_ptr<Named>> MakeNamed(int n, const std::string& prefix) {
  std::vector<std::unique_ptr<Named>> out;
  for (int i = 0; i < n; ++i) out.push_back(std::make_unique<Named>(Named{prefix + std::to_string(i)}));
  return out;
}

TEST(NameIndex, FindsEveryNameAndRefusesDuplicates) {
  auto objs = MakeNamed(5000, "ns-pod-");
  Index index;
  index.Reset(objs.size());
  for (auto& o : objs) ASSERT_TRUE(index.Insert(o.get())) << o->name;
  for (auto& o : objs) EXPECT_EQ(index.Find(o->name), o.get()) << o->name;
  EXPECT_EQ(index.Find("ns-pod-5000"), nullptr);
  EXPECT_EQ(index.Find(""), nullptr);
  Named twin{"ns-pod-17"};
  EXPECT_FALSE(index.Insert(&twin));
  EXPECT_EQ(index.Find("ns-pod-17"), objs[17].get());
}

TEST(NameIndex, InsertsWithHashesTakenAheadAsWithoutThem) {
  // Cluster::Link's way: every hash first, slots requested ahead, then the inserts. A table
  // sized too small grows midway, after the slots of the old size were requested.
  auto objs = MakeNamed(3000, "ns-pod-");
  std::vector<size_t> hashes;
  for (auto& o : objs) hashes.push_back(Index::Hash(o->name));
  Index index;
  index.Prefetch(hashes[0]);  // unsized: nothing to ask for, and no crash
  index.Reset(100);
  for (size_t i = 0; i < objs.size(); ++i) {
    if (i + 16 < objs.size()) index.Prefetch(hashes[i + 16]);
    ASSERT_TRUE(index.Insert(objs[i].get(), hashes[i])) << objs[i]->name;
  }
  for (auto& o : objs) EXPECT_EQ(index.Find(o->name), o.get()) << o->name;
  Named twin{"ns-pod-2999"};
  EXPECT_FALSE(index.Insert(&twin, Index::Hash(twin.name)));
  EXPECT_FALSE(index.Insert(&twin));
  EXPECT_EQ(index.Find("ns-pod-2999"), objs.back().get());
}

TEST(NameIndex, ErasedNamesAreGoneAndTheRestStayFound) {
  // A small table, so that probe sequences run through the erased slots.
  auto objs = MakeNamed(300, "t");
  Index index;
  index.Reset(objs.size());
  for (auto& o : objs) ASSERT_TRUE(index.Insert(o.get()));
  for (size_t i = 0; i < objs.size(); i += 3) index.Erase(objs[i]->name);
  index.Erase("never-there");
  for (size_t i = 0; i < objs.size(); ++i)
    EXPECT_EQ(index.Find(objs[i]->name), i % 3 == 0 ? nullptr : objs[i].get()) << objs[i]->name;
}

TEST(NameIndex, GrowsPastTheSizeItWasGiven) {
  auto objs = MakeNamed(1000, "grow-");
  Index index;
  EXPECT_EQ(index.Find("grow-1"), nullptr);  // never sized
  index.Reset(4);
  for (auto& o : objs) ASSERT_TRUE(index.Insert(o.get()));
  for (auto& o : objs) EXPECT_EQ(index.Find(o->name), o.get());
  index.Reset(0);
  EXPECT_EQ(index.Find("grow-1"), nullptr);
}

}  // namespace
}  // namespace kiln
