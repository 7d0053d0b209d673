#pragma once
// ANTLR parse tree → AST. Runs only on trees without syntax errors, so every named element the
// grammar makes mandatory is present. Literal decoding errors and the AST depth limit become
// diagnostics.

#include <memory>

#include "compiler/ast.h"
#include "compiler/diagnostics.h"


namespace kiln {

struct AstBuildOptions {
  int max_depth = 256 * 16;  // grammar rule levels; one source nesting level is up to ~16
  int reported_limit = 256;   // the source-level limit named in the diagnostic
};

// `tree` is a PolicyParser::PolicyFileContext* (grammar/Policy.g4). Returns null
// when the depth limit was exceeded.
std::unique_ptr<ast::Policy> BuildAst(void* tree, const std::string& path,
                                      const AstBuildOptions& options, DiagnosticList& diags);

}  // namespace kiln
