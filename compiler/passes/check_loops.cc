// Pass: every loop is bounded. Loops and comprehensions run over lists and maps (finite by
// construction) or over `range(a, b)` whose bounds are constants, consts, args or sizes of
// collections (`len(xs)`, `count(...)`), `let` locals bound to such values, min/max of them,
// combined with + and -.
//
//   before: `for i in range(x * 1000000000) { ... }`
//   after:  error "range bound must be a constant or a collection size (len, count)"
#include <fmt/format.h>

#include <map>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"

namespace kiln::passes {

namespace {

using namespace ast;

constexpr int64_t kMaxConstantRange = 1'000'000;

// Initialisers of `let` locals in the function being checked: a range may use `let n = len(xs);`.
// One table per run of the pass, never a global: policies go through the front end on several
// threads at once (PolicyCompiler::CompileAll), and a shared map is corrupted by them.
using LetValues = std::map<const Local*, const Expr*>;

const Expr* Unbounded(const Expr* e, LetValues& let_values) {
  switch (e->kind) {
    case NodeKind::IntLit:
      return static_cast<const IntLit*>(e)->value > kMaxConstantRange ? e : nullptr;
    case NodeKind::NameRef: {
      auto* n = static_cast<const NameRef*>(e);
      if (n->ref == NameKind::Local) {
        auto it = let_values.find(n->local);
        if (it == let_values.end()) return e;
        const Expr* init = it->second;
        let_values.erase(it);  // each let is expanded once: no cycles, bounded work
        const Expr* bad = Unbounded(init, let_values);
        return bad ? e : nullptr;
      }
      auto ref = n->ref;
      return ref == NameKind::Const || ref == NameKind::Arg || ref == NameKind::Unresolved ? nullptr
                                                                                          : e;
    }
    case NodeKind::Unary: return Unbounded(static_cast<const Unary*>(e)->operand.get(), let_values);
    case NodeKind::Binary: {
      auto* b = static_cast<const Binary*>(e);
      if (b->op != BinaryOp::Add && b->op != BinaryOp::Sub) return e;
      if (auto* x = Unbounded(b->left.get(), let_values)) return x;
      return Unbounded(b->right.get(), let_values);
    }
    case NodeKind::Call: {
      auto* c = static_cast<const Call*>(e);
      if (c->call != CallKind::Builtin) return e;
      if (c->callee == "len") return nullptr;
      if (c->callee == "min" || c->callee == "max") {
        for (auto& a : c->args)
          if (Unbounded(a.get(), let_values)) return e;
        return nullptr;
      }
      return e;
    }
    case NodeKind::Comprehension:
      return static_cast<const Comprehension*>(e)->aggregate == Aggregate::Count ? nullptr : e;
    default: return e;
  }
}

void CheckSource(PassContext& ctx, Expr* source, LetValues& let_values) {
  auto* c = As<Call>(source);
  if (!c || c->call != CallKind::Builtin || c->callee != "range") return;
  for (auto& a : c->args) {
    if (const Expr* bad = Unbounded(a.get(), let_values))
      ctx.diags.Error(bad->range,
                      fmt::format("range bound must be a constant (at most {}), a const or arg, or "
                                  "a collection size (len, count), combined with + and -",
                                  kMaxConstantRange));
  }
}

}  // namespace

void CheckLoopBounds(PassContext& ctx) {
  LetValues let_values;
  Walker w;
  w.on_stmt = [&](ast::Stmt* s) {
    if (auto* f = As<For>(s)) CheckSource(ctx, f->source.get(), let_values);
  };
  w.on_expr = [&](ast::Expr* e) {
    if (auto* c = As<Comprehension>(e)) CheckSource(ctx, c->source.get(), let_values);
  };
  for (auto& decl : ctx.policy.decls) {
    if (decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) {
      auto* body = static_cast<Callable*>(decl.get())->body.get();
      Walker lets;
      lets.on_stmt = [&](ast::Stmt* s) {
        if (auto* l = As<Let>(s); l && !l->local->is_mutable)
          let_values[l->local.get()] = l->value.get();
      };
      let_values.clear();
      lets.Stmt(body);
      w.Stmt(body);
    }
    else if (auto* s = As<StateDecl>(decl.get()))
      w.Expr(s->init.get());
  }
}

}  // namespace kiln::passes
