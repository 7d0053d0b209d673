#pragma once
// The front end's semantic passes, each in its own file, run in this order by RunFrontend
// (compiler/frontend.cc). Each pass reads the AST, fills in what it owns and reports problems to
// the DiagnosticList; later passes skip nodes an earlier pass marked as erroneous (Error type).

#include <map>
#include <string>
#include <vector>

#include "compiler/ast.h"
#include "compiler/diagnostics.h"
#include "compiler/passes/cost.h"
#include "compiler/passes/size_limits.h"

namespace kiln::passes {

// Top-level names of the policy, filled by DeclareGlobals.
struct Globals {
  std::map<std::string, ast::Decl*, std::less<>> by_name;  // const, arg, state, fn, record
  std::vector<std::string> Names() const;
};

struct PassContext {
  ast::Policy& policy;
  DiagnosticList& diags;
  Globals globals;
  TypeContext& types() { return *policy.types; }
};

// Size limits (size_limits.h) on the parsed tree; false when the policy is over one, and then no
// other pass may run.
bool CheckSize(PassContext& ctx, const SizeLimits& limits);  // check_size.cc
// Statements and expressions in one declaration (its body, initialiser or defaults).
int64_t CountNodes(ast::Decl* decl);                          // check_size.cc
void DeclareGlobals(PassContext& ctx);     // declare_globals.cc
void ResolveTypes(PassContext& ctx);       // resolve_types.cc
void ResolveNames(PassContext& ctx);       // resolve_names.cc
void CheckTypes(PassContext& ctx);         // check_types.cc
void CheckHandlers(PassContext& ctx);      // check_handlers.cc
void CheckArgSchema(PassContext& ctx);     // arg_schema.cc
void CheckRecursion(PassContext& ctx);     // check_recursion.cc
void CheckLoopBounds(PassContext& ctx);    // check_loops.cc
void CheckControlFlow(PassContext& ctx);   // check_control_flow.cc
void CheckConcurrency(PassContext& ctx);   // check_concurrency.cc
// Whether node_order's scores may be cached, into policy.node_order_cache (no diagnostics).
void AnalyzeScoreCache(PassContext& ctx);  // analyze_score_cache.cc
// Worst-case cost of every handler within limits.max_handler_cost (appends one entry per handler
// to `out` when given).
void CheckCost(PassContext& ctx, const CostLimits& limits, std::vector<HandlerCost>* out);  // check_cost.cc

}  // namespace kiln::passes
