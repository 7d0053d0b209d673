#pragma once
// The named inputs of a scenario call (CallSpec, runtime/calls.h), in one place for the code that
// prints them: the call's description in messages and the JSON output's `calls`.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/calls.h"

namespace kiln {

// Calls f(key, value) for each of task, node, job, queue, l, r and subJob that `c` gives, in that
// order, keyed as the scenario spells them.
template <typename F>
void ForEachNamedInput(const CallSpec& c, F&& f) {
  using Member = std::optional<std::string> CallSpec::*;
  static constexpr std::pair<std::string_view, Member> kInputs[] = {
      {"task", &CallSpec::task},     {"node", &CallSpec::node}, {"job", &CallSpec::job},
      {"queue", &CallSpec::queue},   {"l", &CallSpec::l},       {"r", &CallSpec::r},
      {"subJob", &CallSpec::sub_job}};
  for (const auto& [key, member] : kInputs)
    if (c.*member) f(key, *(c.*member));
}

}  // namespace kiln
