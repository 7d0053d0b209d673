// The front end pipeline, top to bottom. Each step lives in its own file; this function is the
// only place that knows their order.
#include "compiler/frontend.h"

#include "compiler/parse/parser.h"
#include "compiler/passes/passes.h"

namespace kiln {

FrontendResult RunFrontend(const SourceFile& source, const FrontendLimits& limits) {
  FrontendResult result;
  DiagnosticList& diags = result.diagnostics;

  // 1. Text → AST: size limit, lexing, nesting pre-scan, parse, tree building.
  result.policy = ParsePolicy(source, limits, diags, &result.timings);
  if (!result.policy) {
    diags.Sort();
    return result;
  }

  // 2. Semantic passes. Each marks what it cannot make sense of with the Error type, so later
  //    passes stay quiet about it instead of cascading.
  passes::PassContext ctx{*result.policy, diags, {}};
  auto run = [&](std::string_view name, void (*pass)(passes::PassContext&)) {
    PhaseTimer timer(&result.timings, name);
    pass(ctx);
  };
  {
    // Before anything that grows with the policy's size: an oversized policy stops here.
    PhaseTimer timer(&result.timings, "check-size");
    if (!passes::CheckSize(ctx, limits.size)) {
      diags.Sort();
      return result;
    }
  }
  run("declare-globals", passes::DeclareGlobals);       // top-level names, duplicates, capabilities
  run("resolve-types", passes::ResolveTypes);           // written types → Types
  run("resolve-names", passes::ResolveNames);           // names → locals/consts/args/...; calls
  run("check-types", passes::CheckTypes);               // expressions, assignments, returns, methods
  run("check-handlers", passes::CheckHandlers);         // handlers against kExtensionPoints
  run("check-arg-schema", passes::CheckArgSchema);      // argument types, defaults, conf keys
  run("check-recursion", passes::CheckRecursion);       // no call-graph cycles
  run("check-loop-bounds", passes::CheckLoopBounds);    // loops only over finite collections
  run("check-control-flow", passes::CheckControlFlow);  // returns on every path, no dead code
  run("check-concurrency", passes::CheckConcurrency);   // no state writes in per-node handlers
  if (!diags.HasErrors()) {
    // Only on a well-typed tree: the estimate reads resolved names and types.
    PhaseTimer timer(&result.timings, "check-cost");
    passes::CheckCost(ctx, limits.cost, &result.costs);  // worst-case steps per handler call
  }
  if (!diags.HasErrors()) run("analyze-score-cache", passes::AnalyzeScoreCache);  // pure scorers

  diags.Sort();
  return result;
}

}  // namespace kiln
