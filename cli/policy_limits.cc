// `kiln --policy-max-cost ... <command>`: the limits every command holds policies to (issue #16),
// options of the top-level app that may also follow the command (CLI11 fallthrough).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "stdlib/runtime_support.h"
#include "compiler/parse/literals.h"
#include "compiler/passes/cost.h"
#include "compiler/passes/size_limits.h"
#include "runtime/session.h"

namespace kiln::cli {

void AddPolicyLimitOptions(CLI::App& app) {
  app.fallthrough();
  const char* group = "Policy limits (any command; before or after it)";
  app.add_option_function<double>(
         "--policy-max-cost",
         [](double steps) {
           if (!(steps > 0) || !std::isfinite(steps))
             throw CLI::ValidationError("--policy-max-cost", "must be a positive number of steps");
           SetDefaultMaxHandlerCost(steps);
         },
         "static check: the most steps one handler call may take at the largest cluster (default "
         "1e11); a policy over it does not load")
      ->group(group);
  app.add_option_function<std::vector<std::string>>(
         "--policy-cost-size",
         [](const std::vector<std::string>& sizes) {
           for (const std::string& s : sizes) {
             size_t eq = s.find('=');
             double v = 0;
             try {
               size_t used = 0;
               if (eq != std::string::npos) v = std::stod(s.substr(eq + 1), &used);
               if (eq == std::string::npos || used != s.size() - eq - 1) throw std::invalid_argument(s);
             } catch (const std::exception&) {
               throw CLI::ValidationError("--policy-cost-size",
                                          fmt::format("`{}` is not SIZE=NUMBER", s));
             }
             if (!(v >= 0) || !std::isfinite(v))
               throw CLI::ValidationError("--policy-cost-size",
                                          fmt::format("`{}`: the size must be >= 0", s));
             if (!SetDefaultCostBound(s.substr(0, eq), v)) {
               std::string known;
               for (const auto& [k, _] : DefaultCostBounds()) known += (known.empty() ? "" : ", ") + k;
               throw CLI::ValidationError(
                   "--policy-cost-size",
                   fmt::format("unknown size `{}` (one of: {})", s.substr(0, eq), known));
             }
           }
         },
         "static check: the cluster size assumed for one symbol of the cost formulas, as "
         "SIZE=NUMBER (repeatable; e.g. nodes=50000; `kiln check --cost` shows the symbols)")
      ->group(group);
  // A whole number > 0 handed to `set`.
  auto positive = [&](const char* flag, std::function<void(int64_t)> set, const std::string& help) {
    app.add_option_function<int64_t>(
           flag,
           [flag, set](int64_t n) {
             if (n <= 0) throw CLI::ValidationError(flag, "must be > 0");
             set(n);
           },
           help)
        ->group(group);
  };
  // A positive duration (5s, 500ms) handed to `set` in nanoseconds.
  auto duration = [&](const char* flag, void (*set)(int64_t), const std::string& help) {
    app.add_option_function<std::string>(
           flag,
           [flag, set](const std::string& text) {
             auto ns = ParseDurationText(text, /*allow_days=*/false);
             if (!ns || *ns <= 0)
               throw CLI::ValidationError(flag, fmt::format("`{}` is not a positive duration (e.g. "
                                                            "5s, 500ms)",
                                                            text));
             set(*ns);
           },
           help)
        ->group(group);
  };
  // Size limits (compiler/passes/size_limits.h): checked before the type checker and codegen,
  // they bound the time and memory compiling one policy takes.
  auto size_limit = [&](const char* flag, int64_t SizeLimits::*field, const std::string& help) {
    positive(
        flag,
        [field](int64_t n) {
          SizeLimits limits = DefaultSizeLimits();
          limits.*field = n;
          SetDefaultSizeLimits(limits);
        },
        help);
  };
  positive(
      "--policy-max-source-bytes",
      [](int64_t n) {
        SizeLimits limits = DefaultSizeLimits();
        limits.max_source_bytes = static_cast<size_t>(n);
        SetDefaultSizeLimits(limits);
      },
      fmt::format("compile: the largest policy source file, in bytes (default {})",
                  SizeLimits{}.max_source_bytes));
  const SizeLimits defaults;
  size_limit("--policy-max-declarations", &SizeLimits::max_declarations,
             fmt::format("compile: the most top-level declarations one policy may have (default "
                         "{})",
                         defaults.max_declarations));
  size_limit("--policy-max-function-size", &SizeLimits::max_function_nodes,
             fmt::format("compile: the most statements and expressions one fn or handler body "
                         "may have (default {})",
                         defaults.max_function_nodes));
  size_limit("--policy-max-size", &SizeLimits::max_policy_nodes,
             fmt::format("compile: the most statements and expressions one policy may have "
                         "(default {})",
                         defaults.max_policy_nodes));
  positive("--policy-loop-budget", SetPolicyCallIterationBudget,
           "run time: loop iterations one handler call may run before it is abandoned as a budget "
           "fault (default 1e8)");
  positive(
      "--policy-memory-budget",
      [](int64_t bytes) { SetPolicyCallMemoryBudget(static_cast<size_t>(bytes)); },
      "run time: bytes one handler call may allocate before it is abandoned as a memory fault "
      "(default 1073741824)");
  positive(
      "--policy-state-memory-budget",
      [](int64_t bytes) { SetPolicyStateMemoryBudget(static_cast<size_t>(bytes)); },
      "run time: bytes one plugin's `state` may hold in a session; a store past it is a "
      "memory fault and disables the plugin for the rest of the session (default 268435456)");
  positive("--policy-host-work-budget", SetPolicyCallHostWorkBudget,
           "run time: bytes the builtins of one handler call may walk or build (string search, "
           "concatenation, split, JSON, list copies) before the call is abandoned as a budget "
           "fault (default 268435456)");
  duration("--policy-call-time-budget", &SetPolicyCallTimeBudget,
           "run time: wall time one handler call may take, HTTP requests included; over it the "
           "call is a time fault and its answer ignored (default 5s)");
  duration("--policy-session-time-budget", &SetPolicySessionTimeBudget,
           "run time: wall time all handler calls of one plugin may take in a session; past it the "
           "plugin is disabled for the rest of the session (default 120s)");
  duration("--policy-session-http-budget", &SetPolicySessionHttpBudget,
           "run time: time one plugin's http_post requests may take in a session; past it every "
           "request is a time fault without being sent (default 30s)");
  app.add_option_function<int>(
         "--plugin-fault-limit",
         [](int n) {
           if (n < 0) throw CLI::ValidationError("--plugin-fault-limit", "must be >= 0");
           SetPluginFaultLimit(n);
         },
         "run time: faults of one plugin in a session after which it is disabled for the rest of "
         "the session (default 3; 0 never disables)")
      ->group(group);
}

}  // namespace kiln::cli
