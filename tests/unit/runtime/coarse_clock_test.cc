#include "runtime/coarse_clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

namespace kiln {
namespace {

using std::chrono::milliseconds;

// Waits (up to 10 s: a loaded machine may keep the ticker off the CPU for a while) until
// CoarseNowNs() has moved `by` past `from`, and answers the reading that did.
int64_t ReadingPast(int64_t from, int64_t by) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t now = CoarseNowNs();
  while (now - from < by && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(1));
    now = CoarseNowNs();
  }
  return now;
}

TEST(CoarseClockTest, WithoutATickerEachReadAsksTheKernel) {
  EXPECT_EQ(detail::g_coarse_now_ns.load(), 0);
  int64_t kernel = detail::ReadCoarseClock();
  int64_t ours = CoarseNowNs();
  EXPECT_GE(ours, kernel);
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_GE(CoarseNowNs() - ours, 20'000'000);
}

TEST(CoarseClockTest, ATickerKeepsOneWordCurrent) {
  int64_t before = detail::ReadCoarseClock();
  {
    CoarseClockTicker ticker;
    // Current from the first read, before the ticker thread has run.
    int64_t first = detail::g_coarse_now_ns.load();
    EXPECT_GE(first, before);
    // The word moves on its own: nothing here reads the kernel's clock.
    int64_t later = ReadingPast(first, 50'000'000);
    EXPECT_GE(later - first, 50'000'000);
    // Never ahead of the kernel's clock.
    EXPECT_LE(CoarseNowNs(), detail::ReadCoarseClock());
  }
  EXPECT_EQ(detail::g_coarse_now_ns.load(), 0) << "the last holder gone, reads go to the kernel";
  // A second session wakes the same thread again.
  CoarseClockTicker again;
  int64_t first = CoarseNowNs();
  EXPECT_NE(detail::g_coarse_now_ns.load(), 0);
  EXPECT_GE(ReadingPast(first, 20'000'000) - first, 20'000'000);
}

TEST(CoarseClockTest, OverlappingHoldersOnThreadsReadMonotonicTime) {
  // Sessions on several threads come and go (kiln serve's live, shadow and what-if sessions).
  // While a thread holds a ticker, the time it reads never goes back; threads without one read
  // the word or the kernel, whichever holds at the moment. The word is 0 once all have left.
  std::vector<std::thread> threads;
  std::vector<int> backwards(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &backwards] {
      for (int round = 0; round < 200; ++round) {
        std::optional<CoarseClockTicker> ticker;
        if ((round + t) % 3 != 0) ticker.emplace();
        int64_t last = 0;
        for (int i = 0; i < 50; ++i) {
          int64_t now = CoarseNowNs();
          if (ticker && now < last) ++backwards[t];
          last = now;
        }
        if (round % 20 == 0) std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(backwards[t], 0) << "thread " << t;
  EXPECT_EQ(detail::g_coarse_now_ns.load(), 0);
}

}  // namespace
}  // namespace kiln
