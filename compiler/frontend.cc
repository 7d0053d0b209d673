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
  result.policy = ParsePolicy(source, limits, diags);
  if (!result.policy) {
    diags.Sort();
    return result;
  }

  // 2. Semantic passes. Each marks what it cannot make sense of with the Error type, so later
  //    passes stay quiet about it instead of cascading.
  passes::PassContext ctx{*result.policy, diags, {}};
  passes::DeclareGlobals(ctx);    // top-level names, duplicates, capabilities
  passes::ResolveTypes(ctx);      // written types → Types
  passes::ResolveNames(ctx);      // names → locals/consts/args/state/stdlib; calls → targets
  passes::CheckTypes(ctx);        // expression types, assignments, returns, methods
  passes::CheckHandlers(ctx);     // handlers against kExtensionPoints
  passes::CheckArgSchema(ctx);    // argument types, constant defaults, conf keys
  passes::CheckRecursion(ctx);    // no call-graph cycles
  passes::CheckLoopBounds(ctx);   // loops only over finite collections / bounded ranges
  passes::CheckControlFlow(ctx);  // returns on every path, no unreachable code

  diags.Sort();
  return result;
}

}  // namespace kiln
