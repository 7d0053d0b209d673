#pragma once
// A small pre-order walker over statements and expressions for passes that only need to look at
// some node kinds (calls, loops), and, through the scope hooks, for passes that bind names
// (resolve_names.cc). Depth is bounded by the parser's nesting limit.

#include <functional>

#include "compiler/ast.h"

namespace kiln::passes {

struct Walker {
  std::function<void(ast::Expr*)> on_expr;  // may be empty
  std::function<void(ast::Stmt*)> on_stmt;  // may be empty
  // Scopes, each may be empty. A block opens one; an if-let or `for` opens one holding its
  // variables and its body's statements; a comprehension opens one after its source, holding its
  // variables for the filter, element and key. A local is declared where it becomes visible: a
  // `let` after its value, loop and comprehension variables after their source.
  std::function<void()> on_open_scope;
  std::function<void()> on_close_scope;
  std::function<void(ast::Local*)> on_declare;

  void Stmt(ast::Stmt* s);
  void Expr(ast::Expr* e);
  // A function body: its statements in the scope the caller opened for the parameters.
  void Body(ast::Block* b);

 private:
  void Open() {
    if (on_open_scope) on_open_scope();
  }
  void Close() {
    if (on_close_scope) on_close_scope();
  }
  void Declare(ast::Local* l) {
    if (l && on_declare) on_declare(l);
  }
};

// The variable an assignment target writes: `x` in `x`, `x[k]`, `x.f`, `x[k].f`, ...; null when
// the target is rooted in something else. `through_map`, when given, is set to whether the path
// goes through a map's entry (`x[k]` on a map; `r[name]` on a Resource does not).
const ast::NameRef* AssignedName(const ast::Expr* target, bool* through_map = nullptr);

// The state variable an assignment target writes; null when the target is not state.
const ast::StateDecl* AssignedState(const ast::Expr* target);

}  // namespace kiln::passes
