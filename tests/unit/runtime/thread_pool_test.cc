#include "runtime/thread_pool.h"
#include "runtime/pause_gate.h"
#include "runtime/thread_name.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kiln {
namespace {

// Busy work long enough that the pool hands the loop to its workers instead of running it inline.
void Spin(std::chrono::microseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST(ThreadPoolTest, EveryIndexRunsExactlyOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(10007);
  pool.ParallelFor(
      hits.size(),
      [&](size_t i) {
        hits[i].fetch_add(1);
        if (i % 64 == 0) Spin(std::chrono::microseconds(20));
      },
      /*grain=*/7);
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(ThreadPoolTest, SlotResultsDoNotDependOnPoolSize) {
  auto run = [](int threads) {
    ThreadPool pool(threads);
    std::vector<long> out(5000);
    pool.ParallelFor(
        out.size(),
        [&](size_t i) {
          out[i] = static_cast<long>(i * i % 97);
          if (i % 16 == 0) Spin(std::chrono::microseconds(5));
        },
        3);
    return out;
  };
  EXPECT_EQ(run(1), run(3));
  EXPECT_EQ(run(1), run(8));
}

TEST(ThreadPoolTest, RangesAreDisjointAndBoundedByGrain) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  std::atomic<size_t> widest{0};
  pool.ParallelForRange(hits.size(), 64, [&](size_t b, size_t e) {
    size_t w = e - b;
    size_t cur = widest.load();
    while (w > cur && !widest.compare_exchange_weak(cur, w)) {
    }
    for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
  });
  EXPECT_EQ(widest.load(), 64u);
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, ManyConsecutiveLoopsReuseWorkers) {
  ThreadPool pool(4);
  long total = 0;
  for (int round = 0; round < 500; ++round) {
    std::vector<int> out(100);
    pool.ParallelFor(
        out.size(), [&](size_t i) { out[i] = round; }, 1);
    total += std::accumulate(out.begin(), out.end(), 0L);
  }
  EXPECT_EQ(total, 100L * (499L * 500L / 2));
}

TEST(ThreadPoolTest, NestedLoopRunsInlineWithoutDeadlock) {
  ThreadPool pool(2);
  std::vector<int> out(64 * 64);
  pool.ParallelFor(
      64,
      [&](size_t i) {
        Spin(std::chrono::microseconds(20));
        pool.ParallelFor(
            64, [&](size_t j) { out[i * 64 + j] = static_cast<int>(i + j); }, 1);
      },
      1);
  for (size_t i = 0; i < 64; ++i)
    for (size_t j = 0; j < 64; ++j) ASSERT_EQ(out[i * 64 + j], static_cast<int>(i + j));
}

TEST(ThreadPoolTest, ExceptionReachesTheCallerAndPoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.ParallelFor(
                   1000,
                   [](size_t i) {
                     Spin(std::chrono::microseconds(5));
                     if (i == 517) throw std::runtime_error("boom at 517");
                   },
                   4),
               std::runtime_error);
  std::atomic<int> count{0};
  pool.ParallelFor(
      1000, [&](size_t) { count.fetch_add(1); }, 4);
  EXPECT_EQ(count.load(), 1000);
}

// The threads that ran a loop of `n` iterations (in ranges of `grain`), each spinning `work`.
std::set<std::thread::id> ThreadsThatRan(ThreadPool& pool, size_t n, size_t grain,
                                         std::chrono::microseconds work) {
  std::mutex mu;
  std::set<std::thread::id> seen;
  pool.ParallelFor(
      n,
      [&](size_t) {
        if (work.count() > 0) Spin(work);
        std::lock_guard lock(mu);
        seen.insert(std::this_thread::get_id());
      },
      grain);
  return seen;
}

TEST(ThreadPoolTest, SlowLoopsRunOnTheWorkers) {
  ThreadPool pool(4);
  pool.set_wake_threshold(std::chrono::nanoseconds(0));
  std::set<std::thread::id> seen = ThreadsThatRan(pool, 400, 4, std::chrono::microseconds(50));
  EXPECT_GT(seen.size(), 1u);
}

TEST(ThreadPoolTest, QuickLoopsStayOnTheCallingThread) {
  ThreadPool pool(4);
  // "Quick" is relative to the wake-up threshold; pinning it high keeps a descheduled or
  // sanitizer-slowed first range from flipping the decision.
  pool.set_wake_threshold(std::chrono::hours(1));
  std::set<std::thread::id> seen = ThreadsThatRan(pool, 64, 16, std::chrono::microseconds(0));
  EXPECT_EQ(seen, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPoolTest, SizeCountsTheCallingThread) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(5).size(), 5);
  EXPECT_GE(ThreadPool::Default().size(), 1);
}

// A thread whose pools are overridden (a shadow session's) runs its loops while a loop on the
// process-wide pool is stuck, instead of queueing behind it; other threads keep the shared pool.
TEST(ThreadPoolTest, AnOverrideKeepsAThreadsLoopsOffTheSharedPools) {
  std::atomic<bool> release{false}, holding{false}, own_done{false};
  std::thread stuck([&] {
    ThreadPool::Default().ParallelFor(
        2,
        [&](size_t) {
          holding = true;
          for (int i = 0; i < 10000 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        1);
  });
  while (!holding) std::this_thread::yield();
  ThreadPool* shared = &ThreadPool::Default();
  std::thread off_path([&] {
    ThreadPool nodes(1), io(1, 1);
    {
      ThreadPool::ThreadOverride own(nodes, io);
      EXPECT_EQ(&ThreadPool::Default(), &nodes);
      EXPECT_EQ(&ThreadPool::Io(), &io);
      std::atomic<int> sum{0};
      ThreadPool::Default().ParallelFor(100, [&](size_t i) { sum += static_cast<int>(i); }, 1);
      ThreadPool::Io().ParallelFor(10, [&](size_t) { sum += 1; }, 1);
      EXPECT_EQ(sum.load(), 4950 + 10);
      own_done = true;
    }
    EXPECT_EQ(&ThreadPool::Default(), shared);
  });
  for (int i = 0; i < 10000 && !own_done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(own_done.load()) << "the overridden thread waited for the shared pool's loop";
  EXPECT_EQ(&ThreadPool::Default(), shared);
  release = true;
  stuck.join();
  off_path.join();
}

// Polls `done` every millisecond for up to ten seconds.
bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A thread bound to a closed gate (a shadow session's, while a live session runs) starts no loop
// until the gate opens, on a pool with workers or without; the loop then runs in full.
TEST(PauseGateTest, ABoundThreadStartsNoLoopWhileTheGateIsClosed) {
  for (int threads : {1, 2}) {
    PauseGate gate;
    gate.Close();
    ThreadPool pool(threads);
    std::atomic<int> ran{0};
    std::thread off_path([&] {
      PauseGate::Bind bound(gate);
      pool.ParallelFor(64, [&](size_t) { ++ran; }, 1);
    });
    ASSERT_TRUE(Eventually([&] { return gate.waiting() == 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(ran.load(), 0) << threads << " threads";
    gate.Open();
    off_path.join();
    EXPECT_EQ(ran.load(), 64);
    EXPECT_EQ(gate.waiting(), 0);
    EXPECT_GE(gate.waited(), std::chrono::milliseconds(20));
  }
}

// The gate holds only the threads bound to it: the live session's own loops, on the same pool,
// never wait; and a loop nested in a bound thread's running loop runs inline rather than waiting
// inside a range its outer loop waits for.
TEST(PauseGateTest, OnlyBoundThreadsWaitAndNeverInsideALoop) {
  PauseGate gate;
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  gate.Close();
  pool.ParallelFor(100, [&](size_t) { ++ran; }, 1);
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(gate.waited(), std::chrono::nanoseconds(0));

  gate.Open();
  ran = 0;
  std::thread off_path([&] {
    PauseGate::Bind bound(gate);
    pool.ParallelFor(4, [&](size_t i) {
      if (i == 0) gate.Close();  // a live session starts in the middle of the loop
      pool.ParallelFor(10, [&](size_t) { ++ran; }, 1);
    }, 1);
  });
  off_path.join();
  EXPECT_EQ(ran.load(), 40);
}

// Release opens the gate for good: a waiting thread goes on, and closing it again holds nobody
// (the shadow is stopping while the loop may still start a session).
TEST(PauseGateTest, ReleaseOpensForGood) {
  PauseGate gate;
  gate.Close();
  std::atomic<bool> done{false};
  std::thread off_path([&] {
    PauseGate::Bind bound(gate);
    PauseGate::Checkpoint();
    gate.Close();
    PauseGate::Checkpoint();
    done = true;
  });
  ASSERT_TRUE(Eventually([&] { return gate.waiting() == 1; }));
  gate.Release();
  off_path.join();
  EXPECT_TRUE(done.load());
  PauseGate::Checkpoint();  // this thread is bound to no gate
}

TEST(ThreadPoolTest, ZeroIterationsCallsNothing) {
  ThreadPool pool(2);
  bool called = false;
  pool.ParallelFor(0, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

// The name a thread sees itself under (what /proc/PID/task/TID/comm and `top -H` show).
std::string OwnThreadName() {
  char buf[16] = {};
  pthread_getname_np(pthread_self(), buf, sizeof buf);
  return buf;
}

TEST(ThreadNameTest, NamesTheCallingThreadAndCutsAtFifteenBytes) {
  std::string short_name, long_name;
  std::thread([&] {
    NameThisThread("kiln-write");
    short_name = OwnThreadName();
    NameThisThread("watch-priorityclasses");
    long_name = OwnThreadName();
  }).join();
  EXPECT_EQ(short_name, "kiln-write");
  EXPECT_EQ(long_name, "watch-priorityc");
}

TEST(ThreadPoolTest, WorkersAreNamedAndTheCallerKeepsItsName) {
  const std::string caller = OwnThreadName();
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::string> names;
  // Long iterations, so that the workers take some of them.
  pool.ParallelFor(64, [&](size_t) {
    Spin(std::chrono::microseconds(500));
    std::lock_guard lock(mu);
    names.insert(OwnThreadName());
  });
  EXPECT_TRUE(names.count("kiln-pool")) << "no iteration ran on a worker";
  for (const std::string& n : names) EXPECT_TRUE(n == "kiln-pool" || n == caller) << n;
  EXPECT_EQ(OwnThreadName(), caller);
}

}  // namespace
}  // namespace kiln
