// Pass: handlers the actions call on many threads at once (predicate and node_order, see
// RunsConcurrently in runtime/extension_points.h) cannot assign state, directly or through a
// `fn` they call. Two threads growing one state map at once corrupt the heap: this is the rule
// that keeps a policy from crashing the scheduler that way.
//
//   before: `state seen: map<string, int>;
//            on node_order(task: Task, node: Node) -> float { seen[node.name] += 1; ... }`
//   after:  error at `seen[node.name] += 1`: "`node_order` runs on many threads at once and
//           cannot assign state `seen` ..."
//   before: the same assignment in `fn remember(n: Node)`, called from a predicate handler
//   after:  error at the call, with a note at the assignment
#include <fmt/format.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"
#include "runtime/extension_points.h"

namespace kiln::passes {

namespace {

struct StateWrite {
  SourceRange where;  // the assignment
  std::string state;
};

struct FnFacts {
  std::optional<StateWrite> write;  // the first assignment to state in the body
  std::vector<std::pair<const ast::FnDecl*, SourceRange>> calls;
};

FnFacts Scan(ast::Stmt* body) {
  FnFacts facts;
  Walker w;
  w.on_stmt = [&](ast::Stmt* s) {
    auto* a = ast::As<ast::Assign>(s);
    if (!a || facts.write) return;
    if (const ast::StateDecl* st = AssignedState(a->target.get()))
      facts.write = StateWrite{a->range, st->name};
  };
  w.on_expr = [&](ast::Expr* e) {
    if (auto* c = ast::As<ast::Call>(e); c && c->call == ast::CallKind::Function && c->fn)
      facts.calls.emplace_back(c->fn, c->callee_range);
  };
  w.Stmt(body);
  return facts;
}

}  // namespace

void CheckConcurrency(PassContext& ctx) {
  std::map<const ast::FnDecl*, FnFacts> facts;
  for (auto* fn : ctx.policy.All<ast::FnDecl>()) facts[fn] = Scan(fn->body.get());

  // Does `fn`, or a fn it calls, assign state? The assignment found first, memoised; a cycle
  // (reported by check-recursion) is cut where it closes.
  std::map<const ast::FnDecl*, std::optional<StateWrite>> writes;
  std::set<const ast::FnDecl*> visiting;
  std::function<std::optional<StateWrite>(const ast::FnDecl*)> writes_state =
      [&](const ast::FnDecl* fn) -> std::optional<StateWrite> {
    if (auto it = writes.find(fn); it != writes.end()) return it->second;
    if (!visiting.insert(fn).second) return std::nullopt;
    const FnFacts& f = facts[fn];
    std::optional<StateWrite> found = f.write;
    for (size_t i = 0; !found && i < f.calls.size(); ++i) found = writes_state(f.calls[i].first);
    visiting.erase(fn);
    writes[fn] = found;
    return found;
  };

  for (auto* h : ctx.policy.All<ast::HandlerDecl>()) {
    const ExtensionPointInfo* concurrent = nullptr;
    for (const auto& p : h->points)
      if (p.info && RunsConcurrently(p.info->id)) concurrent = p.info;
    if (!concurrent) continue;
    std::string why = fmt::format(
        "`{}` runs on many threads at once (one call per node), so it cannot", concurrent->handler);
    const char* hint =
        "keep per-call values in `var` locals; state is written in handlers that run one at a "
        "time (session_open, allocate, deallocate, ...)";
    FnFacts own = Scan(h->body.get());
    if (own.write) {
      Walker w;
      w.on_stmt = [&](ast::Stmt* s) {
        auto* a = ast::As<ast::Assign>(s);
        if (!a) return;
        if (const ast::StateDecl* st = AssignedState(a->target.get()))
          ctx.diags.Error(a->range, fmt::format("{} assign state `{}`", why, st->name))
              .notes.push_back({st->name_range, hint});
      };
      w.Stmt(h->body.get());
    }
    std::set<std::pair<int, int>> reported;
    for (const auto& [fn, where] : own.calls) {
      std::optional<StateWrite> write = writes_state(fn);
      if (!write || !reported.insert({where.begin.line, where.begin.column}).second) continue;
      ctx.diags.Error(where, fmt::format("{} call `{}`, which assigns state `{}`", why, fn->name,
                                         write->state))
          .notes.push_back({write->where, "assigned here"});
    }
  }
}

}  // namespace kiln::passes
