#include "runtime/slab.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace kiln {
namespace {

struct Counted {
  static inline int alive = 0;
  static inline std::vector<int> destroyed;
  int id = 0;
  std::string payload = std::string(100, 'x');  // owns heap memory: a leak would show in ASan
  char pad[3000];                               // larger than a page, like a Node
  Counted() { ++alive; }
  ~Counted() {
    --alive;
    destroyed.push_back(id);
  }
};

TEST(SlabTest, ObjectsKeepTheirAddressesAndOrderAcrossBlocks) {
  Slab<Counted> slab;
  std::vector<Counted*> made;
  // 64 KiB first block, then doubling: 2,000 objects of ~3 KiB span several blocks.
  for (int i = 0; i < 2000; ++i) {
    Counted& c = slab.New();
    c.id = i;
    made.push_back(&c);
  }
  ASSERT_EQ(slab.size(), 2000u);
  int i = 0;
  for (Counted* c : slab) {
    EXPECT_EQ(c, made[static_cast<size_t>(i)]);
    EXPECT_EQ(c->id, i);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u) << "object " << i << " is not line-aligned";
    ++i;
  }
}

// The block is faulted in ahead of the cursor (one madvise per window, not one fault per page):
// right after the first object, the pages the next ones will use are resident. (A block made of
// memory the heap had touched before is resident anyway; a fresh one is not without the window.)
TEST(SlabTest, FaultsThePagesAheadOfTheCursorIn) {
  Slab<Counted> slab;
  Counted& first = slab.New();
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(&first) & ~(page - 1);
  const size_t pages = (48u << 10) / page;  // well inside the 64 KiB first block
  std::vector<unsigned char> resident(pages);
  ASSERT_EQ(mincore(reinterpret_cast<void*>(begin), pages * page, resident.data()), 0);
  for (size_t i = 0; i < pages; ++i) EXPECT_TRUE(resident[i] & 1) << "page " << i << " not faulted in";
}

TEST(SlabTest, DestroysEveryObjectOnceNewestFirst) {
  Counted::destroyed.clear();
  {
    Slab<Counted> slab;
    for (int i = 0; i < 50; ++i) slab.New().id = i;
    EXPECT_EQ(Counted::alive, 50);
  }
  EXPECT_EQ(Counted::alive, 0);
  ASSERT_EQ(Counted::destroyed.size(), 50u);
  EXPECT_EQ(Counted::destroyed.front(), 49);
  EXPECT_EQ(Counted::destroyed.back(), 0);
}

TEST(SlabTest, MovingHandsOverTheObjects) {
  Slab<Counted> a;
  Counted* first = &a.New();
  a.New();
  Slab<Counted> b(std::move(a));
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from slab is empty
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(*b.begin(), first);
  Slab<Counted> c;
  c.New();
  c = std::move(b);  // c's own object is destroyed, b's move over
  EXPECT_EQ(Counted::alive, 2);
  EXPECT_EQ(*c.begin(), first);
  a.New();  // a moved-from slab can be used again
  EXPECT_EQ(Counted::alive, 3);
}

// The search reads these together for every node it visits (helpers.cc, PrefetchForSearch).
// Node is not standard-layout; offsetof is what runtime/abi.h relies on too.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
TEST(SlabTest, NodeKeepsItsSearchFieldsInTheFirstLine) {
  EXPECT_LE(offsetof(Node, tasks) + sizeof(Node::tasks), 64u);
  EXPECT_LE(offsetof(Node, taints) + sizeof(Node::taints), 64u);
  EXPECT_EQ(offsetof(Node, fit_future), 64u);
}
#pragma GCC diagnostic pop

}  // namespace
}  // namespace kiln
