// Pass: control flow. A function or handler with a result returns on every path; no statement
// follows a return, break or continue in the same block; break/continue only inside loops.
//
//   before: `fn f(x: int) -> int { if x > 0 { return 1; } }`
//   after:  error "`f` does not return a value on every path" at the closing brace
//   before: `return 1; let y = 2;`      after: error "unreachable code" at the let
#include <fmt/format.h>

#include "compiler/passes/passes.h"

namespace kiln::passes {

namespace {

using namespace ast;

class Flow {
 public:
  explicit Flow(PassContext& ctx) : ctx_(ctx) {}

  // Returns whether control never falls off the end of `s`.
  bool Stmt(ast::Stmt* s, int loops) {
    if (!s) return false;
    switch (s->kind) {
      case NodeKind::Block: return Block(static_cast<ast::Block*>(s), loops);
      case NodeKind::Return: return true;
      case NodeKind::Break:
      case NodeKind::Continue:
        if (loops == 0)
          ctx_.diags.Error(s->range, fmt::format("`{}` outside a loop",
                                                 s->kind == NodeKind::Break ? "break" : "continue"));
        return true;
      case NodeKind::If: {
        auto* i = static_cast<If*>(s);
        bool a = Block(i->then.get(), loops);
        bool b = Stmt(i->otherwise.get(), loops);
        return a && b && i->otherwise;
      }
      case NodeKind::IfLet: {
        auto* i = static_cast<IfLet*>(s);
        bool a = Block(i->then.get(), loops);
        bool b = Stmt(i->otherwise.get(), loops);
        return a && b && i->otherwise;
      }
      case NodeKind::For:
        // A loop may run zero times, and break/continue only leave the loop.
        Block(static_cast<For*>(s)->body.get(), loops + 1);
        return false;
      default: return false;
    }
  }

  bool Block(ast::Block* b, int loops) {
    if (!b) return false;
    bool done = false;
    for (auto& s : b->stmts) {
      if (done) {
        ctx_.diags.Error(s->range, "unreachable code (after return, break or continue)");
        return true;
      }
      done = Stmt(s.get(), loops);
    }
    return done;
  }

 private:
  PassContext& ctx_;
};

}  // namespace

void CheckControlFlow(PassContext& ctx) {
  Flow flow(ctx);
  for (auto& decl : ctx.policy.decls) {
    if (decl->kind != NodeKind::Fn && decl->kind != NodeKind::Handler) continue;
    auto* fn = static_cast<Callable*>(decl.get());
    bool returns = flow.Block(fn->body.get(), 0);
    bool needs_value = fn->result_type && fn->result_type->kind != TypeKind::Void &&
                       fn->result_type->kind != TypeKind::Error;
    if (needs_value && !returns) {
      SourceRange end{fn->body->range.end, fn->body->range.end};
      ctx.diags.Error(end, fmt::format("`{}` does not return a value on every path", fn->name))
          .notes.push_back({fn->name_range, fmt::format("`{}` returns `{}`", fn->name,
                                                        fn->result_type->Name())});
    }
  }
}

}  // namespace kiln::passes
