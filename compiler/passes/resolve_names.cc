// Pass: bind every name to what it refers to, and every plain call to its target.
//
//   before: NameRef{name: "shares"}, Call{callee: "share"}     (unresolved)
//   after:  NameRef{ref: State, state_decl: shares}, Call{call: Std, std_function: <share>}
//   error:  "unknown name `shres`; did you mean `shares`?"
//
// Locals are scoped by blocks; a `let` is visible after its statement; loop and if-let variables
// inside their bodies; comprehension variables inside the element, filter and key. Method calls
// (`m.get(k)`) are resolved by the type checker, which knows the receiver's type.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"
#include "stdlib/library.h"

namespace kiln::passes {

namespace {

using namespace ast;

// Names are bound on the shared walker (walk.h): its pre-order visit resolves each name and call
// target, and its scope hooks keep the locals visible at each point.
class Resolver {
 public:
  explicit Resolver(PassContext& ctx) : ctx_(ctx) {
    walker_.on_expr = [this](ast::Expr* e) { Visit(e); };
    walker_.on_open_scope = [this] { scopes_.emplace_back(); };
    walker_.on_close_scope = [this] { scopes_.pop_back(); };
    walker_.on_declare = [this](Local* l) { Declare(l); };
  }

  void Run() {
    for (auto& decl : ctx_.policy.decls) {
      // Comprehension variables in global initialisers are numbered per initialiser.
      next_id_ = 0;
      if (auto* c = As<ConstDecl>(decl.get())) {
        walker_.Expr(c->value.get());
      } else if (auto* a = As<ArgDecl>(decl.get())) {
        walker_.Expr(a->default_value.get());
      } else if (auto* r = As<RecordDecl>(decl.get())) {
        for (auto& f : r->fields) walker_.Expr(f.default_value.get());
      } else if (auto* s = As<StateDecl>(decl.get())) {
        walker_.Expr(s->init.get());
      } else if (decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) {
        auto* fn = static_cast<Callable*>(decl.get());
        scopes_.clear();
        scopes_.emplace_back();
        for (auto& p : fn->params) Declare(p.local.get());
        walker_.Body(fn->body.get());
        fn->local_count = next_id_;
        scopes_.clear();
      }
    }
  }

 private:
  using Scope = std::vector<Local*>;

  // Outside a function (global initialisers) there is no scope until a comprehension opens one.
  void Declare(Local* l) {
    l->id = next_id_++;
    for (Local* other : scopes_.back()) {
      if (other->name == l->name) {
        ctx_.diags.Error(l->range, fmt::format("`{}` is already declared in this scope", l->name))
            .notes.push_back({other->range, "previously declared here"});
        break;
      }
    }
    scopes_.back().push_back(l);
  }

  Local* FindLocal(std::string_view name) {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
      for (auto l = s->rbegin(); l != s->rend(); ++l)
        if ((*l)->name == name) return *l;
    return nullptr;
  }

  std::vector<std::string> VisibleNames() {
    std::vector<std::string> out = ctx_.globals.Names();
    for (auto& s : scopes_)
      for (Local* l : s) out.push_back(l->name);
    for (const auto& c : stdlib::Constants()) out.emplace_back(c.name);
    out.emplace_back("session");
    return out;
  }

  void Visit(ast::Expr* e) {
    switch (e->kind) {
      case NodeKind::NameRef: Name(static_cast<NameRef*>(e)); break;
      case NodeKind::Call: CallTarget(static_cast<Call*>(e)); break;
      case NodeKind::RecordLit: RecordType(static_cast<RecordLit*>(e)); break;
      default: break;
    }
  }

  void Name(NameRef* n) {
    if (!scopes_.empty()) {
      if (Local* l = FindLocal(n->name)) {
        n->ref = NameKind::Local;
        n->local = l;
        return;
      }
    }
    auto it = ctx_.globals.by_name.find(n->name);
    if (it != ctx_.globals.by_name.end()) {
      Decl* d = it->second;
      if (auto* c = As<ConstDecl>(d)) {
        n->ref = NameKind::Const;
        n->const_decl = c;
      } else if (auto* a = As<ArgDecl>(d)) {
        n->ref = NameKind::Arg;
        n->arg_decl = a;
      } else if (auto* st = As<StateDecl>(d)) {
        n->ref = NameKind::State;
        n->state_decl = st;
      } else {
        ctx_.diags.Error(n->range, fmt::format("`{}` is a {}, not a value", n->name,
                                               d->kind == NodeKind::Fn ? "function" : "type"))
            .notes.push_back({d->name_range, "declared here"});
      }
      return;
    }
    auto constants = stdlib::Constants();
    for (size_t i = 0; i < constants.size(); ++i) {
      if (constants[i].name == n->name) {
        n->ref = NameKind::StdConstant;
        n->std_constant = static_cast<int>(i);
        return;
      }
    }
    if (n->name == "session") {
      n->ref = NameKind::Session;
      return;
    }
    ctx_.diags.Error(n->range, fmt::format("unknown name `{}`{}", n->name,
                                           DidYouMean(n->name, VisibleNames())));
  }

  void CallTarget(Call* c) {
    if (c->receiver) return;  // a method: the type checker resolves it
    auto it = ctx_.globals.by_name.find(c->callee);
    if (it != ctx_.globals.by_name.end()) {
      if (auto* fn = As<FnDecl>(it->second)) {
        c->call = CallKind::Function;
        c->fn = fn;
        return;
      }
    }
    auto fns = stdlib::Functions();
    for (size_t i = 0; i < fns.size(); ++i) {
      if (fns[i].name == c->callee && fns[i].receiver.empty()) {
        c->call = CallKind::Std;
        c->std_function = static_cast<int>(i);
        if (!fns[i].capability.empty() && !ctx_.policy.Uses(fns[i].capability))
          ctx_.diags.Error(c->callee_range,
                           fmt::format("`{}` needs the `{}` capability; declare `uses {};`",
                                       c->callee, fns[i].capability, fns[i].capability));
        return;
      }
    }
    for (auto b : stdlib::kGenericBuiltins) {
      if (b == c->callee) {
        c->call = CallKind::Builtin;
        return;
      }
    }
    std::vector<std::string> names;
    for (const auto* fn : ctx_.policy.All<FnDecl>()) names.push_back(fn->name);
    for (const auto& f : fns)
      if (f.receiver.empty()) names.emplace_back(f.name);
    for (auto b : stdlib::kGenericBuiltins) names.emplace_back(b);
    ctx_.diags.Error(c->callee_range, fmt::format("unknown function `{}`{}", c->callee,
                                                  DidYouMean(c->callee, names)));
  }

  void RecordType(RecordLit* r) {
    auto it = ctx_.globals.by_name.find(r->type_name);
    if (it != ctx_.globals.by_name.end() && As<RecordDecl>(it->second)) {
      r->record = As<RecordDecl>(it->second);
    } else {
      std::vector<std::string> names;
      for (const auto* rec : ctx_.policy.All<RecordDecl>()) names.push_back(rec->name);
      ctx_.diags.Error(r->type_range, fmt::format("unknown record type `{}`{}", r->type_name,
                                                  DidYouMean(r->type_name, names)));
    }
  }

  PassContext& ctx_;
  Walker walker_;
  std::vector<Scope> scopes_;
  int next_id_ = 0;
};

}  // namespace

void ResolveNames(PassContext& ctx) { Resolver(ctx).Run(); }

}  // namespace kiln::passes
