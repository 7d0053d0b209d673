#pragma once
// A fixed pool of worker threads for the data-parallel loops of the actions: predicates and
// scores over nodes (Volcano runs these on 16 goroutines; Kiln sizes the pool to the machine).
//
// Results never depend on which worker ran which index: callers give every index its own output
// slot and combine the slots in index order afterwards, so a session decides the same way on 1
// thread or 64.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  // `threads` counts the calling thread, which always takes part in the work: a pool of size 1
  // starts no worker and runs everything inline. 0 = std::thread::hardware_concurrency().
  // `min_grain` is the fewest indices one range holds: 16 amortises the hand-out for CPU-bound
  // callbacks; a pool for blocking I/O wants 1, so that every call can wait in parallel.
  explicit ThreadPool(int threads = 0, size_t min_grain = 16);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n), ranges of at most `grain`
  // indices, and returns when every range is done. The calling thread runs the first range and
  // times it; when the rest promises to be quicker than waking the workers, it runs inline too. The
  // first exception thrown by fn is rethrown here after all ranges finished. Calls from inside a
  // running loop (nested parallelism) run inline, so a callback may itself use the pool without
  // deadlocking.
  void ParallelForRange(size_t n, size_t grain,
                        const std::function<void(size_t begin, size_t end)>& fn);

  // fn(i) for every i in [0, n).
  template <typename Fn>
  void ParallelFor(size_t n, Fn&& fn, size_t grain = 0) {
    if (grain == 0) grain = DefaultGrain(n);
    ParallelForRange(n, grain, [&fn](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) fn(i);
    });
  }

  // fn(begin, end) over the ranges ParallelFor would hand out: for callbacks that work on a
  // range in stages (all of its indices through one step, then through the next).
  template <typename Fn>
  void ParallelForChunks(size_t n, Fn&& fn) {
    ParallelForRange(n, DefaultGrain(n), fn);
  }

  // The process-wide pool the actions use, sized to the hardware.
  static ThreadPool& Default();
  // The process-wide pool for loops whose callbacks mostly wait (a policy's HTTP calls): as many
  // threads as Volcano runs predicate goroutines (16, or KILN_IO_THREADS) whatever the core
  // count, one index per range.
  static ThreadPool& Io();

  // While it lives, Default() and Io() answer the given pools on the constructing thread. A
  // pool runs one loop at a time, so a session run off the scheduling path (a shadow candidate)
  // on the process-wide pools would make the live session's loops wait behind its own, at the
  // off-path thread's lower priority; on pools of its own it cannot.
  class ThreadOverride {
   public:
    ThreadOverride(ThreadPool& nodes, ThreadPool& io);
    ~ThreadOverride();
    ThreadOverride(const ThreadOverride&) = delete;
    ThreadOverride& operator=(const ThreadOverride&) = delete;

   private:
    ThreadPool* saved_nodes_;
    ThreadPool* saved_io_;
  };

  // How long the rest of a loop must promise to take before the workers are woken (50µs by
  // default). Tests pin it to make the inline-or-parallel choice independent of machine load.
  void set_wake_threshold(std::chrono::nanoseconds t) { wake_threshold_ = t; }
  // How long a worker that finished a loop keeps watching for the next one before it sleeps, and
  // how long the caller watches for the workers' last ranges before it sleeps (default 50µs,
  // KILN_POOL_SPIN_US). An allocate action runs two loops per task a few microseconds apart;
  // catching the next one awake saves a futex wake-up and a context switch each, which on a
  // virtual machine cost more than the loop. 0 sleeps at once.
  void set_spin(std::chrono::nanoseconds t) { spin_ns_.store(t.count(), std::memory_order_relaxed); }

 private:
  struct Loop {
    size_t n = 0;
    size_t grain = 1;
    const std::function<void(size_t, size_t)>* fn = nullptr;
    std::atomic<size_t> next{0};
    std::atomic<int> active{0};  // participants still inside RunLoop
    std::mutex error_mu;
    std::exception_ptr error;
  };

  size_t DefaultGrain(size_t n) const;
  void WorkerMain();
  static void RunLoop(Loop& loop);

  std::vector<std::thread> workers_;
  std::mutex loop_mu_;  // one loop at a time per pool
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Loop* loop_ = nullptr;
  // Written under mu_; read without it by spinning workers.
  std::atomic<unsigned long> generation_{0};
  bool stopping_ = false;
  std::chrono::nanoseconds wake_threshold_ = std::chrono::microseconds(50);
  std::atomic<int64_t> spin_ns_;
  size_t min_grain_ = 16;
};

}  // namespace kiln
