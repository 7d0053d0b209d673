#pragma once
// Wall time per compiler phase (lex, parse, each pass, codegen, O2, machine code), so a slow
// policy can be explained without a profiler. Recording costs two clock reads per phase.
// `KILN_TIMINGS=1` in the environment prints each compiled policy's phases to stderr
// (PolicyCompiler::Compile); otherwise they go to spdlog at debug level.

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

struct PhaseTimings {
  std::vector<std::pair<std::string_view, double>> phases;  // name (a literal) → ms, in order

  void Add(std::string_view phase, double ms) { phases.emplace_back(phase, ms); }
  void Append(const PhaseTimings& other) {
    phases.insert(phases.end(), other.phases.begin(), other.phases.end());
  }
  double Total() const;
  // "parse 1.20 ms, resolve-names 0.31 ms, ..., total 9.80 ms"
  std::string Format() const;
};

// Adds the time from construction to Stop() (or destruction) to `timings` as `phase`; a null
// `timings` records nothing.
class PhaseTimer {
 public:
  PhaseTimer(PhaseTimings* timings, std::string_view phase)
      : timings_(timings), phase_(phase), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { Stop(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  void Stop() {
    if (!timings_) return;
    timings_->Add(phase_, std::chrono::duration<double, std::milli>(
                              std::chrono::steady_clock::now() - start_)
                              .count());
    timings_ = nullptr;
  }

 private:
  PhaseTimings* timings_;
  std::string_view phase_;
  std::chrono::steady_clock::time_point start_;
};

// True when KILN_TIMINGS is set to anything but "" or "0" (read once).
bool TimingsRequested();

}  // namespace kiln
