#pragma once
// Source text → AST (no semantic checks). Syntax errors, limit violations and malformed literals
// become diagnostics; the ANTLR console listener is never attached.

#include <memory>
#include <string_view>

#include "compiler/ast.h"
#include "compiler/diagnostics.h"
#include "compiler/frontend.h"
#include "compiler/source.h"
#include "compiler/timings.h"

namespace kiln {

// Null when the file cannot be turned into a tree (size/nesting limits, syntax errors); the
// reasons are in `diags`. Phases (lex, parse, build-ast) are added to `timings` when given.
std::unique_ptr<ast::Policy> ParsePolicy(const SourceFile& source, const FrontendLimits& limits,
                                         DiagnosticList& diags, PhaseTimings* timings = nullptr);

// Whether grammar/Policy.g4 accepts `text` as a policy file with SLL prediction (the front end's
// first stage) or with full LL prediction (its second); no AST, no diagnostics. Text the lexer
// cannot read, such as malformed UTF-8, is accepted by neither. For tests: LL accepts exactly the
// language, and SLL must accept every valid file for the first stage to do its job.
bool GrammarAccepts(std::string_view text, bool sll);

}  // namespace kiln
