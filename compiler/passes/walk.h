#pragma once
// A small pre-order walker over statements and expressions for passes that only need to look at
// some node kinds (calls, loops). Depth is bounded by the parser's nesting limit.

#include <functional>

#include "compiler/ast.h"

namespace kiln::passes {

struct Walker {
  std::function<void(ast::Expr*)> on_expr;  // may be empty
  std::function<void(ast::Stmt*)> on_stmt;  // may be empty

  void Stmt(ast::Stmt* s);
  void Expr(ast::Expr* e);
};

// The state variable an assignment target writes: `s`, `s[k]`, `s.f`, `s[k].f`, ...; null when
// the target is not state.
const ast::StateDecl* AssignedState(const ast::Expr* target);

}  // namespace kiln::passes
