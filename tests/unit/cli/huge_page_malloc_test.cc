// When kiln serve executes itself again with glibc's malloc on transparent huge pages
// (cli/huge_page_malloc.h). The exec itself is checked on a real kiln serve in
// tests/server/serve_bind_sink_test.py.
#include "cli/huge_page_malloc.h"

#include <gtest/gtest.h>

namespace kiln::cli {
namespace {

constexpr const char* kMadvise = "always [madvise] never\n";

TEST(HugePageMalloc, AddsTheTunableWhereTheKernelAndGlibcTakeIt) {
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, kMadvise, "2.36"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, "[always] madvise never\n", "2.35"),
            "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, "1", kMadvise, "2.40"), "glibc.malloc.hugetlb=1");
  // The user's own tunables are kept, the new one after them.
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=2", nullptr, kMadvise, "2.36"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables("", nullptr, kMadvise, "2.36"), "glibc.malloc.hugetlb=1");
}

TEST(HugePageMalloc, LeavesTheProcessAloneWhenTurnedOffOrPointless) {
  EXPECT_EQ(HugePageTunables(nullptr, "0", kMadvise, "2.36"),
            std::nullopt);  // KILN_MALLOC_HUGEPAGES=0
  // The user chose a value, 0 or 2 (hugetlbfs) included: theirs stands.
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=0", nullptr, kMadvise, "2.36"), std::nullopt);
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=2:glibc.malloc.arena_max=1", nullptr, kMadvise,
                             "2.36"),
            std::nullopt);
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, "always madvise [never]\n", "2.36"), std::nullopt);
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, "", "2.36"), std::nullopt);  // no THP in this kernel
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, kMadvise, "2.34"),
            std::nullopt);  // ignores the tunable
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, kMadvise, "1.99"), std::nullopt);
  EXPECT_EQ(HugePageTunables(nullptr, nullptr, kMadvise, "garbage"), std::nullopt);
}

}  // namespace
}  // namespace kiln::cli
