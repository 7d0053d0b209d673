// Pass: resolve every written type (`map<Job, float>?`, `Strategy`) to an interned Type.
//
//   before: TypeRef{name: "lst", args: [int]}        (resolved = null)
//   after:  error "unknown type `lst`; did you mean `list`?"; resolved = Error type
#include <fmt/format.h>

#include "compiler/passes/passes.h"
#include "runtime/abi.h"

namespace kiln::passes {

namespace {

class TypeResolver {
 public:
  explicit TypeResolver(PassContext& ctx) : ctx_(ctx) {}

  const Type* Resolve(ast::TypeRef& ref) {
    ref.resolved = ResolveInner(ref);
    if (ref.optional) ref.resolved = ctx_.types().Optional(ref.resolved);
    return ref.resolved;
  }

 private:
  const Type* ResolveInner(ast::TypeRef& ref) {
    TypeContext& t = ctx_.types();
    if (ref.tuple) return ResolveTuple(ref);
    auto arity = [&](size_t n) {
      if (ref.args.size() == n) return true;
      ctx_.diags.Error(ref.range, fmt::format("`{}` takes {} type argument{}, not {}", ref.name, n,
                                              n == 1 ? "" : "s", ref.args.size()));
      return false;
    };
    if (ref.name == "list") {
      if (!arity(1)) return t.Error();
      return t.List(Resolve(ref.args[0]));
    }
    if (ref.name == "map") {
      if (!arity(2)) return t.Error();
      const Type* k = Resolve(ref.args[0]);
      const Type* v = Resolve(ref.args[1]);
      switch (k->kind) {
        case TypeKind::Int: case TypeKind::String: case TypeKind::Task: case TypeKind::Job:
        case TypeKind::Node: case TypeKind::Queue: case TypeKind::Tuple: case TypeKind::Error:
          break;
        default:
          ctx_.diags.Error(ref.args[0].range,
                           fmt::format("`{}` cannot be a map key (keys are int, string, Task, "
                                       "Job, Node, Queue or a tuple)",
                                       k->Name()));
          return t.Error();
      }
      return t.Map(k, v);
    }
    TypeKind kind;
    if (LookupScalarTypeName(ref.name, &kind)) {
      if (!ref.args.empty()) arity(0);
      return t.Get(kind);
    }
    if (const Type* shape = t.Shape(ref.name)) {
      if (!ref.args.empty()) arity(0);
      return shape;
    }
    auto it = ctx_.globals.by_name.find(ref.name);
    if (it != ctx_.globals.by_name.end()) {
      if (auto* rec = ast::As<ast::RecordDecl>(it->second)) {
        if (!ref.args.empty()) arity(0);
        return t.Record(rec);
      }
      ctx_.diags.Error(ref.range, fmt::format("`{}` is not a type", ref.name))
          .notes.push_back({it->second->name_range, "declared here"});
      return t.Error();
    }
    std::vector<std::string> names = ScalarTypeNames();
    for (std::string_view n : AbiRecordNames()) names.emplace_back(n);
    for (const auto* r : ctx_.policy.All<ast::RecordDecl>()) names.push_back(r->name);
    ctx_.diags.Error(ref.range,
                     fmt::format("unknown type `{}`{}", ref.name, DidYouMean(ref.name, names)));
    return t.Error();
  }

  // `(string, int)`: 2 to 4 elements, each int, float, bool or string (no optionals, views or
  // nested tuples: a tuple is a composite key, and these are the keys it is made of).
  const Type* ResolveTuple(ast::TypeRef& ref) {
    TypeContext& t = ctx_.types();
    if (ref.args.size() > kMaxTupleArity) {
      ctx_.diags.Error(ref.range, fmt::format("a tuple has {} to {} elements, not {}",
                                              kMinTupleArity, kMaxTupleArity, ref.args.size()));
      return t.Error();
    }
    std::vector<const Type*> elems;
    bool ok = true;
    for (auto& a : ref.args) {
      const Type* e = Resolve(a);
      if (e->kind == TypeKind::Error) {
        ok = false;
      } else if (!IsTupleElementKind(e->kind)) {
        ctx_.diags.Error(a.range, fmt::format("`{}` cannot be a tuple element (elements are int, "
                                              "float, bool or string)",
                                              e->Name()));
        ok = false;
      }
      elems.push_back(e);
    }
    return ok ? t.Tuple(elems) : t.Error();
  }

  PassContext& ctx_;
};

// Type references inside statement bodies (`let x: T`).

void ResolveInStmt(TypeResolver& r, ast::Stmt* s) {
  if (!s) return;
  switch (s->kind) {
    case ast::NodeKind::Block:
      for (auto& x : static_cast<ast::Block*>(s)->stmts) ResolveInStmt(r, x.get());
      break;
    case ast::NodeKind::Let:
      if (auto& d = static_cast<ast::Let*>(s)->declared) r.Resolve(*d);
      break;
    case ast::NodeKind::If: {
      auto* i = static_cast<ast::If*>(s);
      ResolveInStmt(r, i->then.get());
      ResolveInStmt(r, i->otherwise.get());
      break;
    }
    case ast::NodeKind::IfLet: {
      auto* i = static_cast<ast::IfLet*>(s);
      ResolveInStmt(r, i->then.get());
      ResolveInStmt(r, i->otherwise.get());
      break;
    }
    case ast::NodeKind::For:
      ResolveInStmt(r, static_cast<ast::For*>(s)->body.get());
      break;
    default:
      break;
  }
}

}  // namespace

void ResolveTypes(PassContext& ctx) {
  TypeResolver r(ctx);
  for (auto& decl : ctx.policy.decls) {
    if (auto* c = ast::As<ast::ConstDecl>(decl.get())) {
      if (c->declared) r.Resolve(*c->declared);
    } else if (auto* a = ast::As<ast::ArgDecl>(decl.get())) {
      r.Resolve(a->declared);
    } else if (auto* rec = ast::As<ast::RecordDecl>(decl.get())) {
      for (auto& f : rec->fields) r.Resolve(f.declared);
    } else if (auto* s = ast::As<ast::StateDecl>(decl.get())) {
      r.Resolve(s->declared);
    } else if (decl->kind == ast::NodeKind::Fn || decl->kind == ast::NodeKind::Handler) {
      auto* fn = static_cast<ast::Callable*>(decl.get());
      for (auto& p : fn->params) p.local->type = r.Resolve(p.declared);
      fn->result_type = fn->result ? r.Resolve(*fn->result) : ctx.types().Void();
      ResolveInStmt(r, fn->body.get());
    }
  }
}

}  // namespace kiln::passes
