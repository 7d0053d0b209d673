#pragma once
// A gate that work off the scheduling path waits at while the live session runs.
//
// A shadow candidate's session (server/shadow.h) runs on a thread of idle priority, but idle
// priority only decides who gets a core: on a machine with few cores the shadow still runs on
// the core the live session's pool worker has just left, and shares the caches and the memory
// bus with it. The gate makes the shadow step aside instead: the scheduling loop closes it when
// a live session starts and opens it when the session ends, and a thread bound to it waits at
// its next checkpoint while it is closed.
//
// Checkpoints are where a session hands out work anyway: every ThreadPool loop started on a bound
// thread (an allocate action starts two per task), and every node and pod a session model is
// built from. A thread bound to no gate passes a checkpoint for the price of a thread-local load.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kiln {

class PauseGate {
 public:
  // From now on, bound threads wait at their next checkpoint. Nothing once Release()d.
  void Close();
  // Lets waiting threads go on.
  void Open();
  // Opens the gate for good (the bound thread is stopping).
  void Release();

  // Threads waiting at the gate now, and the time they waited in all.
  int waiting() const;
  std::chrono::nanoseconds waited() const;

  // While it lives, the constructing thread is bound to `gate`.
  class Bind {
   public:
    explicit Bind(PauseGate& gate);
    ~Bind();
    Bind(const Bind&) = delete;
    Bind& operator=(const Bind&) = delete;

   private:
    PauseGate* saved_;
  };

  // Waits while the calling thread's gate is closed.
  static void Checkpoint();

 private:
  void WaitOpen();

  mutable std::mutex mu_;
  std::condition_variable opened_;
  std::atomic<bool> closed_{false};  // written under mu_; read without it first
  bool released_ = false;
  int waiting_ = 0;
  std::chrono::nanoseconds waited_{0};
};

}  // namespace kiln
