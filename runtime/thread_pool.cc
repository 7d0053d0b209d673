#include "runtime/thread_pool.h"

#include "runtime/pause_gate.h"
#include "runtime/thread_name.h"

#include <cstdlib>

#include <algorithm>
#include <chrono>

namespace kiln {
namespace {

// True while this thread runs a range of some loop: a nested ParallelFor then runs inline
// instead of waiting for workers that are busy with the outer loop.
thread_local bool t_inside_loop = false;

struct InsideLoop {
  bool saved = t_inside_loop;
  InsideLoop() { t_inside_loop = true; }
  ~InsideLoop() { t_inside_loop = saved; }
};

// Spins until pred() or `limit` passed; true when pred() held. Reads the clock every 64 polls.
template <typename Pred>
bool SpinUntil(Pred pred, std::chrono::nanoseconds limit) {
  if (limit.count() <= 0) return pred();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

std::chrono::nanoseconds DefaultSpin() {
  const char* env = std::getenv("KILN_POOL_SPIN_US");
  return std::chrono::microseconds(env ? std::max(0, std::atoi(env)) : 50);
}

}  // namespace

ThreadPool::ThreadPool(int threads, size_t min_grain)
    : spin_ns_(DefaultSpin().count()), min_grain_(std::max<size_t>(min_grain, 1)) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] {
      NameThisThread("kiln-pool");
      WorkerMain();
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

namespace {
thread_local ThreadPool* t_nodes_override = nullptr;
thread_local ThreadPool* t_io_override = nullptr;
}  // namespace

ThreadPool::ThreadOverride::ThreadOverride(ThreadPool& nodes, ThreadPool& io)
    : saved_nodes_(t_nodes_override), saved_io_(t_io_override) {
  t_nodes_override = &nodes;
  t_io_override = &io;
}

ThreadPool::ThreadOverride::~ThreadOverride() {
  t_nodes_override = saved_nodes_;
  t_io_override = saved_io_;
}

ThreadPool& ThreadPool::Default() {
  if (t_nodes_override) return *t_nodes_override;
  // KILN_THREADS pins the worker count (1 runs every loop on the calling thread); unset or
  // invalid means one worker per hardware thread.
  static ThreadPool pool([] {
    const char* env = std::getenv("KILN_THREADS");
    return env ? std::max(0, std::atoi(env)) : 0;
  }());
  return pool;
}

ThreadPool& ThreadPool::Io() {
  if (t_io_override) return *t_io_override;
  static ThreadPool& pool = []() -> ThreadPool& {
    const char* env = std::getenv("KILN_IO_THREADS");
    const int n = env ? std::atoi(env) : 0;
    static ThreadPool io(n > 0 ? n : 16, /*min_grain=*/1);
    // Its loops wait on the network: nothing to gain from spinning, sixteen threads to burn.
    io.set_spin(std::chrono::nanoseconds(0));
    return io;
  }();
  return pool;
}

size_t ThreadPool::DefaultGrain(size_t n) const {
  // Several ranges per participant balance uneven callbacks (one node's predicate may be far
  // slower than another's) without paying an atomic per index.
  size_t per = n / (static_cast<size_t>(size()) * 8);
  return std::max<size_t>(per, min_grain_);
}

void ThreadPool::RunLoop(Loop& loop) {
  InsideLoop inside;
  for (;;) {
    size_t begin = loop.next.fetch_add(loop.grain, std::memory_order_relaxed);
    if (begin >= loop.n) return;
    size_t end = std::min(loop.n, begin + loop.grain);
    try {
      (*loop.fn)(begin, end);
    } catch (...) {
      std::lock_guard lock(loop.error_mu);
      if (!loop.error) loop.error = std::current_exception();
      loop.next.store(loop.n, std::memory_order_relaxed);  // stop handing out ranges
    }
  }
}

void ThreadPool::WorkerMain() {
  unsigned long seen = 0;
  for (;;) {
    Loop* loop;
    SpinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; },
              std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed)));
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || generation_.load() != seen; });
      if (stopping_) return;
      seen = generation_.load();
      loop = loop_;
    }
    RunLoop(*loop);
    if (loop->active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);
      done_.notify_all();
    }
  }
}

void ThreadPool::ParallelForRange(size_t n, size_t grain,
                                  const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  // Off the scheduling path, a loop waits here while a live session runs (never inside a range
  // of another loop: that range's loop waits for it).
  if (!t_inside_loop) PauseGate::Checkpoint();
  grain = std::max<size_t>(grain, 1);
  if (workers_.empty() || t_inside_loop || n <= grain) {
    InsideLoop inside;
    for (size_t b = 0; b < n; b += grain) fn(b, std::min(n, b + grain));
    return;
  }
  // Waking the workers costs tens of microseconds on a busy machine, more than many loops take
  // (a resource check over a few hundred nodes). Run the first range here, and hand the rest to
  // the workers only when it promises to take longer than the wake-up.
  size_t first = grain;
  {
    InsideLoop inside;
    auto start = std::chrono::steady_clock::now();
    fn(0, first);
    auto elapsed = std::chrono::steady_clock::now() - start;
    const auto rest = static_cast<int64_t>((n - first + first - 1) / first);
    if (elapsed * rest < wake_threshold_) {
      for (size_t b = first; b < n; b += grain) fn(b, std::min(n, b + grain));
      return;
    }
  }
  std::lock_guard serial(loop_mu_);
  Loop loop;
  loop.n = n;
  loop.grain = grain;
  loop.next.store(first, std::memory_order_relaxed);
  loop.fn = &fn;
  // Every worker takes part in every generation (even when there is nothing left for it), so
  // the caller can wait for an exact count before `loop` goes out of scope.
  loop.active.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    loop_ = &loop;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  RunLoop(loop);
  SpinUntil([&] { return loop.active.load(std::memory_order_acquire) == 0; },
            std::chrono::nanoseconds(spin_ns_.load(std::memory_order_relaxed)));
  {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return loop.active.load(std::memory_order_acquire) == 0; });
    loop_ = nullptr;
  }
  if (loop.error) std::rethrow_exception(loop.error);
}

}  // namespace kiln
