#pragma once
// The policy front end: source text → checked AST + diagnostics. Codegen and `kiln check` /
// `kiln compile` use only this header (and ast.h for the tree).

#include <memory>
#include <string>

#include "compiler/ast.h"
#include "compiler/diagnostics.h"
#include "compiler/passes/cost.h"
#include "compiler/passes/size_limits.h"
#include "compiler/source.h"
#include "compiler/timings.h"

namespace kiln {

// Limits that keep adversarial input from exhausting memory or the stack.
// The size limits (compiler/passes/size_limits.h) also bound the work and memory of compiling.
struct FrontendLimits {
  SizeLimits size = DefaultSizeLimits();  // source bytes, declarations, nodes per body and total
  int max_nesting = 256;                  // brackets / expression / block nesting
  CostLimits cost;                    // the static cost check (compiler/passes/check_cost.cc)
};

struct FrontendResult {
  // Null only when the file could not be parsed at all (size limit, nesting limit). When
  // `diagnostics.HasErrors()`, the tree may be partial and must not be lowered.
  std::unique_ptr<ast::Policy> policy;
  DiagnosticList diagnostics;  // sorted by position
  PhaseTimings timings;        // lex, parse, build-ast, then one entry per pass
  std::vector<HandlerCost> costs;  // each handler's estimated cost (when the passes ran)
  bool ok() const { return policy && !diagnostics.HasErrors(); }
};

// Parse, build the AST and run every pass (see the pipeline in frontend.cc).
FrontendResult RunFrontend(const SourceFile& source, const FrontendLimits& limits = {});

// A readable, stable dump of the tree for `kiln compile --emit=ast|typed-ast` and the golden
// tests in tests/ast/. `typed` adds each expression's type and each name's binding.
std::string DumpAst(const ast::Policy& policy, bool typed);

}  // namespace kiln
