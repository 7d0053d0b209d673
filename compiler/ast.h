#pragma once
// The policy AST: node kinds (ast/node.h), expressions (ast/expr.h), statements and locals
// (ast/stmt.h), declarations and the Policy root (ast/decl.h). Every node carries a SourceRange;
// expression types, name bindings, call targets and handler points are filled in by the passes
// run by RunFrontend (compiler/frontend.h). Codegen consumes the checked tree read-only.

#include "compiler/ast/decl.h"
#include "compiler/ast/expr.h"
#include "compiler/ast/node.h"
#include "compiler/ast/stmt.h"
#include "compiler/types.h"
