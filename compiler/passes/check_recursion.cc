// Pass: reject recursion, so every handler terminates (loops are bounded by check_loops.cc).
//
//   before: `fn a() -> int { return b(); }  fn b() -> int { return a(); }`
//   after:  error at the call in b: "recursion is not allowed: `a` → `b` → `a`"
#include <fmt/format.h>

#include <map>
#include <set>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"

namespace kiln::passes {

namespace {

struct Edge {
  const ast::FnDecl* callee;
  SourceRange where;
};

}  // namespace

void CheckRecursion(PassContext& ctx) {
  std::map<const ast::Decl*, std::vector<Edge>> calls;
  for (auto* fn : ctx.policy.All<ast::FnDecl>()) {
    Walker w;
    w.on_expr = [&](ast::Expr* e) {
      if (auto* c = ast::As<ast::Call>(e); c && c->call == ast::CallKind::Function && c->fn)
        calls[fn].push_back({c->fn, c->callee_range});
    };
    w.Stmt(fn->body.get());
  }
  // Iterative DFS with colours; each back edge is one cycle, reported at its call site.
  enum Colour { White, Grey, Black };
  std::map<const ast::Decl*, Colour> colour;
  std::set<std::pair<int, int>> reported;
  for (auto* root : ctx.policy.All<ast::FnDecl>()) {
    if (colour[root] != White) continue;
    struct Frame {
      const ast::Decl* fn;
      size_t next;
    };
    std::vector<Frame> stack{{root, 0}};
    colour[root] = Grey;
    while (!stack.empty()) {
      Frame& top = stack.back();
      auto& edges = calls[top.fn];
      if (top.next == edges.size()) {
        colour[top.fn] = Black;
        stack.pop_back();
        continue;
      }
      const Edge& e = edges[top.next++];
      if (colour[e.callee] == Grey) {
        std::string path;
        bool on = false;
        for (const Frame& f : stack) {
          if (f.fn == e.callee) on = true;
          if (on) path += fmt::format("`{}` → ", f.fn->name);
        }
        path += fmt::format("`{}`", e.callee->name);
        if (reported.insert({e.where.begin.line, e.where.begin.column}).second)
          ctx.diags.Error(e.where, fmt::format("recursion is not allowed: {}", path))
              .notes.push_back({e.callee->name_range, fmt::format("`{}` is declared here",
                                                                 e.callee->name)});
      } else if (colour[e.callee] == White) {
        colour[e.callee] = Grey;
        stack.push_back({e.callee, 0});
      }
    }
  }
}

}  // namespace kiln::passes
