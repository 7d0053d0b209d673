#pragma once
// Source text → AST (no semantic checks). Syntax errors, limit violations and malformed literals
// become diagnostics; the ANTLR console listener is never attached.

#include <memory>

#include "compiler/ast.h"
#include "compiler/diagnostics.h"
#include "compiler/frontend.h"
#include "compiler/source.h"

namespace kiln {

// Null when the file cannot be turned into a tree (size/nesting limits, syntax errors); the
// reasons are in `diags`.
std::unique_ptr<ast::Policy> ParsePolicy(const SourceFile& source, const FrontendLimits& limits,
                                         DiagnosticList& diags);

}  // namespace kiln
