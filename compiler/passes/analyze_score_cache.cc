// Pass: decides whether the policy's node_order scores may be cached per (task shape, node,
// node version) (runtime/score_cache.h), and which task fields make up the shape. No
// diagnostics: the answer lands in `policy.node_order_cache`, with the reason when it is "no".
//
// A score may be cached when the handler — and every `fn` it calls, transitively — reads:
//  * of the scored task, only fields listed in runtime/score_cache.h (resreq, images, ...: fields
//    that never change during a session), either directly or through a stdlib function that
//    declares the Task fields it reads (stdlib/library.h `task_fields`);
//  * of the node, anything (every node mutation bumps Node::version);
//  * no other task (a task on the node may change without its node changing), job or queue;
//  * nothing session-wide (`session.*`), no hidden input (the session bundle: now(), ...; http);
//  * only state that no handler but session_open writes (it is fixed once scoring starts).
//
//   before: `state weighted: list<W>; on session_open() { weighted = ...; }
//            on node_order(task: Task, node: Node) -> float { ... task.resreq.dim(r.id) ... }`
//   after:  cacheable, task fields [resreq]
//   before: the same handler reading `task.status`
//   after:  not cacheable: "reads `task.status`, which is not a field a cached score is keyed on"
#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"
#include "runtime/extension_points.h"
#include "runtime/score_cache.h"
#include "stdlib/library.h"

namespace kiln::passes {

namespace {

struct Verdict {
  bool ok = true;
  std::string reason;
  SourceRange where;
  std::set<std::string> fields;

  void Fail(SourceRange r, std::string why) {
    if (!ok) return;
    ok = false;
    reason = std::move(why);
    where = r;
  }
};

bool IsTask(const ast::Expr* e) { return e && e->type && e->type->Is(TypeKind::Task); }

class Analysis {
 public:
  explicit Analysis(ast::Policy& policy) : policy_(policy) { FindStateWrittenDuringSession(); }

  Verdict Handler(const ast::HandlerDecl* h) {
    std::set<const ast::Local*> task;
    for (const auto& p : h->params)
      if (p.local && p.local->type && p.local->type->Is(TypeKind::Task)) task.insert(p.local.get());
    return Body(h->body.get(), task);
  }

 private:
  // Which state each handler other than session_open writes, through the fns it calls too.
  void FindStateWrittenDuringSession() {
    std::map<const ast::FnDecl*, std::set<const ast::StateDecl*>> direct;
    std::map<const ast::FnDecl*, std::vector<const ast::FnDecl*>> calls;
    auto scan = [](ast::Stmt* body, std::set<const ast::StateDecl*>& writes,
                   std::vector<const ast::FnDecl*>& callees) {
      Walker w;
      w.on_stmt = [&](ast::Stmt* s) {
        if (auto* a = ast::As<ast::Assign>(s))
          if (const ast::StateDecl* st = AssignedState(a->target.get())) writes.insert(st);
      };
      w.on_expr = [&](ast::Expr* e) {
        if (auto* c = ast::As<ast::Call>(e); c && c->call == ast::CallKind::Function && c->fn)
          callees.push_back(c->fn);
      };
      w.Stmt(body);
    };
    for (auto* fn : policy_.All<ast::FnDecl>()) scan(fn->body.get(), direct[fn], calls[fn]);
    for (auto* h : policy_.All<ast::HandlerDecl>()) {
      bool open_only = !h->points.empty();
      for (const auto& p : h->points)
        if (!p.info || p.info->id != ExtensionPoint::SessionOpen) open_only = false;
      if (open_only) continue;
      std::set<const ast::StateDecl*> writes;
      std::vector<const ast::FnDecl*> todo;
      scan(h->body.get(), writes, todo);
      std::set<const ast::FnDecl*> seen;
      while (!todo.empty()) {
        const ast::FnDecl* fn = todo.back();
        todo.pop_back();
        if (!seen.insert(fn).second) continue;
        writes.insert(direct[fn].begin(), direct[fn].end());
        todo.insert(todo.end(), calls[fn].begin(), calls[fn].end());
      }
      for (const ast::StateDecl* st : writes) written_.emplace(st, h->name);
    }
  }

  // A fn with the parameters in `task_params` (bit i: parameter i) bound to the scored task.
  Verdict Fn(const ast::FnDecl* fn, uint64_t task_params) {
    auto key = std::make_pair(fn, task_params);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (!visiting_.insert(key).second) {
      Verdict v;
      v.Fail(fn->name_range, fmt::format("`{}` is recursive", fn->name));
      return v;
    }
    std::set<const ast::Local*> task;
    for (size_t i = 0; i < fn->params.size() && i < 64; ++i)
      if ((task_params >> i) & 1u) task.insert(fn->params[i].local.get());
    Verdict v = Body(fn->body.get(), task);
    visiting_.erase(key);
    memo_[key] = v;
    return v;
  }

  Verdict Body(ast::Stmt* body, const std::set<const ast::Local*>& task) {
    Verdict v;
    // Uses of the task that are accounted for (a field read, an argument): any other use of it
    // (`let t = task`, `t == task`) could reach a field that is not part of the key.
    std::set<const ast::Expr*> accounted;
    auto is_bound = [&](const ast::Expr* e) {
      auto* n = ast::As<ast::NameRef>(e);
      return n && n->ref == ast::NameKind::Local && task.count(n->local) > 0;
    };
    Walker w;
    w.on_expr = [&](ast::Expr* e) {
      if (!v.ok) return;
      if (auto* s = ast::As<ast::Select>(e)) {
        const ast::Expr* operand = s->operand.get();
        if (IsTask(operand)) {
          if (!is_bound(operand)) {
            v.Fail(s->range, fmt::format("reads `{}` of a task other than the one scored, which "
                                         "can change without its node changing",
                                         s->field));
          } else if (!FindScoreKeyField(s->field)) {
            v.Fail(s->range, fmt::format("reads `task.{}`, which is not a field a cached score "
                                         "is keyed on",
                                         s->field));
          } else {
            v.fields.insert(s->field);
            accounted.insert(operand);
          }
        } else if (operand->type &&
                   (operand->type->Is(TypeKind::Job) || operand->type->Is(TypeKind::Queue))) {
          v.Fail(s->range, fmt::format("reads `{}` of a {}, which changes during a session",
                                       s->field, operand->type->Name()));
        }
        return;
      }
      if (auto* n = ast::As<ast::NameRef>(e)) {
        if (n->ref == ast::NameKind::Session) {
          v.Fail(n->range, "reads `session`, which is session-wide");
        } else if (n->ref == ast::NameKind::State) {
          if (auto it = written_.find(n->state_decl); it != written_.end())
            v.Fail(n->range, fmt::format("reads state `{}`, which `{}` writes during the session",
                                         n->name, it->second));
        } else if (is_bound(n) && !accounted.count(n)) {
          v.Fail(n->range, fmt::format("uses the task `{}` other than by reading its fields",
                                       n->name));
        }
        return;
      }
      auto* c = ast::As<ast::Call>(e);
      if (!c) return;
      if ((c->call == ast::CallKind::Std || c->call == ast::CallKind::Method) &&
          c->std_function >= 0) {
        const stdlib::Function& f = stdlib::Functions()[static_cast<size_t>(c->std_function)];
        if (f.bundle == "session" || f.bundle == "http" || !f.capability.empty()) {
          v.Fail(c->callee_range, fmt::format("calls `{}`, whose answer depends on more than its "
                                              "arguments",
                                              f.name));
          return;
        }
        auto task_arg = [&](const ast::Expr* a) {
          if (!IsTask(a) || !v.ok) return;
          if (!is_bound(a)) {
            v.Fail(a->range, fmt::format("passes a task other than the one scored to `{}`",
                                         f.name));
          } else if (f.task_fields.empty()) {
            v.Fail(a->range, fmt::format("passes the task to `{}`, which does not declare the "
                                         "task fields it reads",
                                         f.name));
          } else {
            accounted.insert(a);
            std::string_view rest = f.task_fields;
            while (!rest.empty()) {
              size_t comma = rest.find(',');
              std::string_view name = rest.substr(0, comma);
              if (!FindScoreKeyField(name))
                v.Fail(a->range, fmt::format("passes the task to `{}`, which reads `task.{}`, "
                                             "not a field a cached score is keyed on",
                                             f.name, name));
              v.fields.emplace(name);
              rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
            }
          }
        };
        task_arg(c->receiver.get());
        for (const auto& a : c->args) task_arg(a.get());
        return;
      }
      if (c->call == ast::CallKind::Function && c->fn) {
        uint64_t bound = 0;
        for (size_t i = 0; i < c->args.size() && i < 64; ++i) {
          if (is_bound(c->args[i].get())) {
            bound |= uint64_t{1} << i;
            accounted.insert(c->args[i].get());
          }
        }
        Verdict inner = Fn(c->fn, bound);
        if (!inner.ok) {
          v.Fail(inner.where, fmt::format("calls `{}`, which {}", c->fn->name, inner.reason));
          // Callers see the place in the callee, the first reason the chain fails for.
        }
        v.fields.insert(inner.fields.begin(), inner.fields.end());
      }
    };
    w.Stmt(body);
    return v;
  }

  ast::Policy& policy_;
  std::map<const ast::StateDecl*, std::string> written_;  // state → a handler writing it
  std::map<std::pair<const ast::FnDecl*, uint64_t>, Verdict> memo_;
  std::set<std::pair<const ast::FnDecl*, uint64_t>> visiting_;
};

}  // namespace

void AnalyzeScoreCache(PassContext& ctx) {
  ast::ScoreCacheFacts& out = ctx.policy.node_order_cache;
  out = {};
  const ast::HandlerDecl* h = ctx.policy.HandlerFor(ExtensionPoint::NodeOrder);
  if (!h) return;
  out.has_handler = true;
  Analysis analysis(ctx.policy);
  Verdict v = analysis.Handler(h);
  out.cacheable = v.ok;
  out.reason = v.reason;
  out.where = v.where;
  if (v.ok) out.task_fields.assign(v.fields.begin(), v.fields.end());
}

}  // namespace kiln::passes
