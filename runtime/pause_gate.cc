#include "runtime/pause_gate.h"

namespace kiln {
namespace {

thread_local PauseGate* t_gate = nullptr;

}  // namespace

void PauseGate::Close() {
  std::lock_guard lock(mu_);
  if (!released_) closed_ = true;
}

void PauseGate::Open() {
  {
    std::lock_guard lock(mu_);
    closed_ = false;
  }
  opened_.notify_all();
}

void PauseGate::Release() {
  {
    std::lock_guard lock(mu_);
    released_ = true;
    closed_ = false;
  }
  opened_.notify_all();
}

int PauseGate::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_;
}

std::chrono::nanoseconds PauseGate::waited() const {
  std::lock_guard lock(mu_);
  return waited_;
}

PauseGate::Bind::Bind(PauseGate& gate) : saved_(t_gate) { t_gate = &gate; }

PauseGate::Bind::~Bind() { t_gate = saved_; }

void PauseGate::Checkpoint() {
  if (t_gate != nullptr) t_gate->WaitOpen();
}

void PauseGate::WaitOpen() {
  if (!closed_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(mu_);
  if (!closed_) return;
  const auto start = std::chrono::steady_clock::now();
  ++waiting_;
  opened_.wait(lock, [this] { return !closed_; });
  --waiting_;
  waited_ += std::chrono::steady_clock::now() - start;
}

}  // namespace kiln
