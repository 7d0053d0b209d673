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

// Whether each grammar accepts `text` as a policy file (no AST, no diagnostics; text the lexer
// cannot read, such as malformed UTF-8, is accepted by neither). The front end
// trusts the fast grammar's "yes" and the reference grammar's errors; tests check that the two
// agree (grammar/PolicyFastParser.g4).
struct GrammarVerdicts {
  bool fast = false;
  bool reference = false;
};
GrammarVerdicts ParseWithBothGrammars(std::string_view text);

}  // namespace kiln
