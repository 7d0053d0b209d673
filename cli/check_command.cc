// `kiln check FILE...`: run the policy front end over each file and print its diagnostics like a
// compiler. Exit 0 when every file is clean, 1 when any has errors (or cannot be read). A name
// that is not a file but names a built-in policy ("gang") checks the embedded copy. `--cost` also
// prints each handler's worst-case cost formula (compiler/passes/check_cost.cc); `--score-cache`
// whether node_order's scores may be cached (compiler/passes/analyze_score_cache.cc). A policy
// the front end accepts is also lowered to LLVM IR (not optimised, no machine code), so that
// `kiln check` passing means the policy loads.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/policy_source.h"

namespace kiln::cli {

namespace {

int CheckFiles(const std::vector<std::string>& files, bool print_cost, bool print_cache) {
  int errors = 0;
  for (const auto& path : files) {
    auto loaded = LoadPolicySource(path);
    if (!loaded) {
      PrintError(loaded.error());
      ++errors;
      continue;
    }
    const SourceFile& source = *loaded;
    try {
      FrontendResult result = RunFrontend(source);
      // What the checker accepts must load (issue 28): a clean policy is also lowered to LLVM IR
      // as a load would lower it, so a construct codegen cannot lower is reported here, at its
      // place, instead of only when a scheduler loads the policy.
      if (result.ok()) {
        if (std::optional<Error> lowering = PolicyCompiler::CheckLowering(*result.policy)) {
          SourcePos at{lowering->where.line, lowering->where.column};
          result.diagnostics.Error(
              SourceRange{at, at},
              fmt::format("this passes the checker but cannot be compiled: {}",
                          lowering->message));
        }
      }
      PrintDiagnostics(result.diagnostics, source);
      // --cost: each handler's worst-case steps per call as a formula in the sizes it iterates
      // (compiler/passes/check_cost.cc), and its value at the largest cluster assumed.
      if (print_cost)
        for (const HandlerCost& c : result.costs)
          fmt::print("{}:{}:{}: handler `{}`: cost {} (at most {:.4g} steps)\n", source.path,
                     c.range.begin.line, c.range.begin.column, c.handler, c.formula, c.worst);
      // --score-cache: whether node_order's scores may be cached per (task shape, node), and
      // if not, the first reason (compiler/passes/analyze_score_cache.cc).
      if (print_cache && result.ok() && result.policy->node_order_cache.has_handler) {
        const ast::ScoreCacheFacts& c = result.policy->node_order_cache;
        if (c.cacheable) {
          fmt::print("{}: node_order: scores cached per node and task ({})\n", source.path,
                     fmt::join(c.task_fields, ", "));
        } else {
          fmt::print("{}:{}:{}: node_order: scores not cached: {}\n", source.path,
                     c.where.begin.line, c.where.begin.column, c.reason);
        }
      }
      errors += result.diagnostics.ErrorCount();
    } catch (const std::exception& e) {
      // The front end reports problems as diagnostics; reaching here is a bug in Kiln, and it
      // must still not take the command down without saying which file caused it.
      PrintError(Error{fmt::format("internal compiler error: {}", e.what()), SourceLocation{path}});
      ++errors;
    }
  }
  PrintErrorCount(errors);
  return errors > 0 ? kExitFailed : kExitOk;
}

}  // namespace

void AddCheckCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "compile policies and report diagnostics");
  auto files = std::make_shared<std::vector<std::string>>();
  auto cost = std::make_shared<bool>(false);
  cmd->add_option("files", *files, "policy files (or built-in policy names)")->required();
  cmd->add_flag("--cost", *cost,
                "print each handler's worst-case cost per call, as a formula in the sizes it "
                "iterates (nodes, jobs, candidates, tasks_per_job, ...)");
  auto cache = std::make_shared<bool>(false);
  cmd->add_flag("--score-cache", *cache,
                "say whether node_order's scores may be cached per (task shape, node), or why "
                "not");
  cmd->callback([files, cost, cache] { EndCommand(CheckFiles(*files, *cost, *cache)); });
}

}  // namespace kiln::cli
