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
#include "stdlib/library.h"

namespace kiln::passes {

namespace {

using namespace ast;

class Resolver {
 public:
  explicit Resolver(PassContext& ctx) : ctx_(ctx) {}

  void Run() {
    for (auto& decl : ctx_.policy.decls) {
      // Comprehension variables in global initialisers are numbered per initialiser.
      next_id_ = 0;
      if (auto* c = As<ConstDecl>(decl.get())) {
        Expr(c->value.get());
      } else if (auto* a = As<ArgDecl>(decl.get())) {
        Expr(a->default_value.get());
      } else if (auto* r = As<RecordDecl>(decl.get())) {
        for (auto& f : r->fields) Expr(f.default_value.get());
      } else if (auto* s = As<StateDecl>(decl.get())) {
        Expr(s->init.get());
      } else if (decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) {
        auto* fn = static_cast<Callable*>(decl.get());
        next_id_ = 0;
        scopes_.clear();
        scopes_.emplace_back();
        for (auto& p : fn->params) Declare(p.local.get());
        Block(fn->body.get(), /*new_scope=*/false);
        fn->local_count = next_id_;
        scopes_.clear();
      }
    }
  }

 private:
  using Scope = std::vector<Local*>;

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

  void Block(ast::Block* b, bool new_scope = true) {
    if (!b) return;
    if (new_scope) scopes_.emplace_back();
    for (auto& s : b->stmts) Stmt(s.get());
    if (new_scope) scopes_.pop_back();
  }

  void Stmt(ast::Stmt* s) {
    if (!s) return;
    switch (s->kind) {
      case NodeKind::Block: Block(static_cast<ast::Block*>(s)); break;
      case NodeKind::Let: {
        auto* l = static_cast<Let*>(s);
        Expr(l->value.get());
        Declare(l->local.get());
        break;
      }
      case NodeKind::Assign: {
        auto* a = static_cast<Assign*>(s);
        Expr(a->target.get());
        Expr(a->value.get());
        break;
      }
      case NodeKind::If: {
        auto* i = static_cast<If*>(s);
        Expr(i->cond.get());
        Block(i->then.get());
        Stmt(i->otherwise.get());
        break;
      }
      case NodeKind::IfLet: {
        auto* i = static_cast<IfLet*>(s);
        Expr(i->value.get());
        scopes_.emplace_back();
        Declare(i->local.get());
        Block(i->then.get(), false);
        scopes_.pop_back();
        Stmt(i->otherwise.get());
        break;
      }
      case NodeKind::For: {
        auto* f = static_cast<For*>(s);
        Expr(f->source.get());
        scopes_.emplace_back();
        Declare(f->first.get());
        if (f->second) Declare(f->second.get());
        Block(f->body.get(), false);
        scopes_.pop_back();
        break;
      }
      case NodeKind::Return: Expr(static_cast<Return*>(s)->value.get()); break;
      case NodeKind::ExprStmt: Expr(static_cast<ExprStmt*>(s)->value.get()); break;
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

  void Expr(ast::Expr* e) {
    if (!e) return;
    switch (e->kind) {
      case NodeKind::NameRef: Name(static_cast<NameRef*>(e)); break;
      case NodeKind::Unary: Expr(static_cast<Unary*>(e)->operand.get()); break;
      case NodeKind::Binary: {
        auto* b = static_cast<Binary*>(e);
        Expr(b->left.get());
        Expr(b->right.get());
        break;
      }
      case NodeKind::Conditional: {
        auto* c = static_cast<Conditional*>(e);
        Expr(c->cond.get());
        Expr(c->then.get());
        Expr(c->otherwise.get());
        break;
      }
      case NodeKind::Select: Expr(static_cast<Select*>(e)->operand.get()); break;
      case NodeKind::Index: {
        auto* i = static_cast<Index*>(e);
        Expr(i->operand.get());
        Expr(i->index.get());
        break;
      }
      case NodeKind::Call: {
        auto* c = static_cast<Call*>(e);
        Expr(c->receiver.get());
        CallTarget(c);
        for (auto& a : c->args) Expr(a.get());
        break;
      }
      case NodeKind::Comprehension: {
        auto* c = static_cast<Comprehension*>(e);
        Expr(c->source.get());
        scopes_.emplace_back();
        Declare(c->first.get());
        if (c->second) Declare(c->second.get());
        Expr(c->filter.get());
        Expr(c->element.get());
        Expr(c->order_key.get());
        scopes_.pop_back();
        break;
      }
      case NodeKind::ListLit:
        for (auto& x : static_cast<ListLit*>(e)->elements) Expr(x.get());
        break;
      case NodeKind::MapLit:
        for (auto& x : static_cast<MapLit*>(e)->entries) {
          Expr(x.key.get());
          Expr(x.value.get());
        }
        break;
      case NodeKind::ResourceLit:
        for (auto& x : static_cast<ResourceLit*>(e)->entries) Expr(x.value.get());
        break;
      case NodeKind::RecordLit: {
        auto* r = static_cast<RecordLit*>(e);
        auto it = ctx_.globals.by_name.find(r->type_name);
        if (it != ctx_.globals.by_name.end() && As<RecordDecl>(it->second)) {
          r->record = As<RecordDecl>(it->second);
        } else {
          std::vector<std::string> names;
          for (const auto* rec : ctx_.policy.All<RecordDecl>()) names.push_back(rec->name);
          ctx_.diags.Error(r->type_range, fmt::format("unknown record type `{}`{}", r->type_name,
                                                      DidYouMean(r->type_name, names)));
        }
        for (auto& f : r->fields) Expr(f.value.get());
        break;
      }
      default: break;
    }
  }

  PassContext& ctx_;
  std::vector<Scope> scopes_;
  int next_id_ = 0;
};

}  // namespace

void ResolveNames(PassContext& ctx) { Resolver(ctx).Run(); }

}  // namespace kiln::passes
