#pragma once
// Test-only oracle: Volcano's cdp (cooldown protection) plugin hand-written in C++
// (volcano-semantics.md §5 "cdp", seed 000), for differential tests against policies/cdp.policy.
// It carries its own Go time.ParseDuration so it does not share the standard library's parser
// with the compiled policy. Never linked into the runtime.

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model.h"

namespace kiln::oracles::cdp {

inline constexpr std::string_view kCooldownKey = "volcano.sh/cooldown-time";

// Go's time.ParseDuration: [-+]? then one or more <decimal><unit> with units ns, us, µs, μs, ms,
// s, m, h; "0" alone is allowed; anything else (empty, missing unit, unknown unit, overflow) is
// an error (nullopt). Result in nanoseconds.
inline std::optional<int64_t> ParseGoDuration(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;
  if (s.empty()) return std::nullopt;
  // Accumulate in long double: exact enough for every duration Go accepts (< 2^63 ns).
  long double total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || (s[0] >= '0' && s[0] <= '9'))) return std::nullopt;
    long double value = 0;
    bool any_digit = false;
    size_t i = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      value = value * 10 + (s[i] - '0');
      any_digit = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      long double scale = 1;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        scale /= 10;
        value += (s[i] - '0') * scale;
        any_digit = true;
        ++i;
      }
    }
    if (!any_digit) return std::nullopt;
    size_t unit_start = i;
    while (i < s.size() && s[i] != '.' && !(s[i] >= '0' && s[i] <= '9')) ++i;
    std::string_view unit = s.substr(unit_start, i - unit_start);
    long double mult;
    if (unit == "ns") mult = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") mult = 1e3L;
    else if (unit == "ms") mult = 1e6L;
    else if (unit == "s") mult = 1e9L;
    else if (unit == "m") mult = 60e9L;
    else if (unit == "h") mult = 3600e9L;
    else return std::nullopt;  // also the "missing unit" case (empty unit)
    total += value * mult;
    if (total > static_cast<long double>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    s.remove_prefix(i);
  }
  auto ns = static_cast<int64_t>(total);
  return negative ? -ns : ns;
}

// The label wins over the annotation; an invalid value means no protection (nullopt).
inline std::optional<int64_t> Cooldown(const Task& t) {
  auto it = t.labels().find(kCooldownKey);
  if (it == t.labels().end()) {
    it = t.annotations().find(kCooldownKey);
    if (it == t.annotations().end()) return std::nullopt;
  }
  return ParseGoDuration(it->second);
}

// Protected while Running and PodScheduled=True lastTransitionTime + cooldown is after now.
inline bool InCooldown(const Task& t, TimeNs now) {
  auto cooldown = Cooldown(t);
  if (!cooldown) return false;
  if (t.status != TaskStatus::Running) return false;
  if (t.scheduled_at == 0) return false;  // no PodScheduled=True condition
  return t.scheduled_at + *cooldown > now;
}

// Preemptable and Reclaimable. Always Permit.
inline std::vector<const Task*> Victims(const Task& /*evictor*/,
                                        std::span<const Task* const> candidates, TimeNs now) {
  std::vector<const Task*> victims;
  for (const Task* c : candidates)
    if (!InCooldown(*c, now)) victims.push_back(c);
  return victims;
}

}  // namespace kiln::oracles::cdp
