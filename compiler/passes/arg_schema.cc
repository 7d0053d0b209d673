// Pass: check the argument schema a policy declares for scheduler.conf.
//
//   before: `arg weight: Task = 1 from "binpack.weight";`
//   after:  error "argument `weight` cannot have type `Task`; arguments are ..."
//   before: `arg a: int = 1 from "k"; arg b: int = 2 from "k";`
//   after:  error "conf key `k` is already read by argument `a`" (+ note)
//
// Defaults (of args and record fields) and const values must be constant: literals, consts and
// literal lists/maps/resources of them, so the schema can be evaluated without running the policy.
#include <fmt/format.h>

#include <map>
#include <set>

#include "compiler/passes/passes.h"

namespace kiln::passes {

namespace {

using namespace ast;

bool ArgTypeAllowed(const Type* t) {
  switch (t->kind) {
    case TypeKind::Error: case TypeKind::Int: case TypeKind::Float: case TypeKind::Bool:
    case TypeKind::String: case TypeKind::Duration: case TypeKind::Quantity:
    case TypeKind::Resource: case TypeKind::Record:
      return true;
    case TypeKind::Optional:
    case TypeKind::List: return ArgTypeAllowed(t->elem);
    case TypeKind::Map: return t->key->kind == TypeKind::String && ArgTypeAllowed(t->elem);
    default: return false;
  }
}

// A constant expression, or the first sub-expression that is not.
const Expr* NonConstant(const Expr* e) {
  if (!e) return nullptr;
  switch (e->kind) {
    case NodeKind::IntLit: case NodeKind::FloatLit: case NodeKind::StringLit:
    case NodeKind::BoolLit: case NodeKind::DurationLit: case NodeKind::QuantityLit:
    case NodeKind::NoneLit:
      return nullptr;
    case NodeKind::NameRef: {
      auto* n = static_cast<const NameRef*>(e);
      return n->ref == NameKind::Const || n->ref == NameKind::StdConstant ||
                     n->ref == NameKind::Unresolved
                 ? nullptr
                 : e;
    }
    case NodeKind::Unary: return NonConstant(static_cast<const Unary*>(e)->operand.get());
    case NodeKind::Binary: {
      auto* b = static_cast<const Binary*>(e);
      if (auto* x = NonConstant(b->left.get())) return x;
      return NonConstant(b->right.get());
    }
    case NodeKind::ListLit:
    case NodeKind::TupleLit:
      for (auto& x : static_cast<const ElementsLit*>(e)->elements)
        if (auto* y = NonConstant(x.get())) return y;
      return nullptr;
    case NodeKind::MapLit:
      for (auto& x : static_cast<const MapLit*>(e)->entries) {
        if (auto* y = NonConstant(x.key.get())) return y;
        if (auto* y = NonConstant(x.value.get())) return y;
      }
      return nullptr;
    case NodeKind::ResourceLit:
      for (auto& x : static_cast<const ResourceLit*>(e)->entries)
        if (auto* y = NonConstant(x.value.get())) return y;
      return nullptr;
    case NodeKind::RecordLit:
      for (auto& f : static_cast<const RecordLit*>(e)->fields)
        if (auto* y = NonConstant(f.value.get())) return y;
      return nullptr;
    case NodeKind::Call: {
      // quantity("250m") and infinite_resource() are pure and evaluated at load time.
      auto* c = static_cast<const Call*>(e);
      if (c->call == CallKind::Std && (c->callee == "quantity" || c->callee == "infinite_resource")) {
        for (auto& a : c->args)
          if (auto* y = NonConstant(a.get())) return y;
        return nullptr;
      }
      return e;
    }
    default: return e;
  }
}

void RequireConstant(PassContext& ctx, const Expr* e, std::string_view what) {
  if (const Expr* bad = NonConstant(e))
    ctx.diags.Error(bad->range, fmt::format("{} must be a constant (literals and consts only)", what));
}

constexpr std::string_view kAllowed =
    "int, float, bool, string, duration, quantity, Resource, a record, or lists, optionals and "
    "map<string, T> of those";

}  // namespace

void CheckArgSchema(PassContext& ctx) {
  std::map<std::string, const ArgDecl*, std::less<>> keys;
  for (auto* c : ctx.policy.All<ConstDecl>()) RequireConstant(ctx, c->value.get(), "a const value");
  for (auto* a : ctx.policy.All<ArgDecl>()) {
    const Type* t = a->declared.resolved;
    if (t && !ArgTypeAllowed(t))
      ctx.diags.Error(a->declared.range, fmt::format("argument `{}` cannot have type `{}`; "
                                                     "arguments are {}",
                                                     a->name, t->Name(), kAllowed));
    if (a->from_flag && t && t->kind != TypeKind::Bool && t->kind != TypeKind::Error)
      ctx.diags.Error(a->declared.range,
                      fmt::format("`from flag` reads a plugin flag, so `{}` must be bool", a->name));
    if (a->from_prefix && t && t->kind != TypeKind::Error &&
        (t->kind != TypeKind::Map || t->key->kind != TypeKind::String))
      ctx.diags.Error(a->declared.range,
                      fmt::format("`from prefix` collects several keys, so `{}` must be a "
                                  "map<string, T>",
                                  a->name));
    if (a->conf_key.empty())
      ctx.diags.Error(a->conf_key_range, "the conf key cannot be empty");
    RequireConstant(ctx, a->default_value.get(), "a default value");
    std::string key = (a->from_flag ? "flag:" : a->from_prefix ? "prefix:" : "") + a->conf_key;
    auto [it, inserted] = keys.emplace(key, a);
    if (!inserted)
      ctx.diags.Error(a->conf_key_range, fmt::format("conf key `{}` is already read by argument "
                                                     "`{}`",
                                                     a->conf_key, it->second->name))
          .notes.push_back({it->second->conf_key_range, "first read here"});
  }
  // A record containing itself (directly or through other records' fields) has no finite zero
  // value; lists, maps and optionals of it are fine (they can be empty / none).
  for (auto* r : ctx.policy.All<RecordDecl>()) {
    std::vector<const RecordDecl*> stack{r};
    std::set<const RecordDecl*> seen;
    bool cyclic = false;
    while (!stack.empty() && !cyclic) {
      const RecordDecl* cur = stack.back();
      stack.pop_back();
      for (const auto& f : cur->fields) {
        const Type* t = f.declared.resolved;
        if (!t || t->kind != TypeKind::Record) continue;
        if (t->record == r) {
          cyclic = true;
          break;
        }
        if (seen.insert(t->record).second) stack.push_back(t->record);
      }
    }
    if (cyclic)
      ctx.diags.Error(r->name_range, fmt::format("record `{}` contains itself; use a list, map or "
                                                 "optional field to break the cycle",
                                                 r->name));
  }
  for (auto* r : ctx.policy.All<RecordDecl>()) {
    std::map<std::string, const RecordField*, std::less<>> fields, rkeys;
    for (const auto& f : r->fields) {
      if (auto [it, ok] = fields.emplace(f.name, &f); !ok)
        ctx.diags.Error(f.range, fmt::format("field `{}` is already declared", f.name))
            .notes.push_back({it->second->range, "previously declared here"});
      else if (auto [kt, kok] = rkeys.emplace(f.conf_key, &f); !kok)
        ctx.diags.Error(f.range, fmt::format("conf key `{}` is already read by field `{}`",
                                             f.conf_key, kt->second->name));
      const Type* t = f.declared.resolved;
      if (t && !ArgTypeAllowed(t))
        ctx.diags.Error(f.declared.range,
                        fmt::format("record field `{}` cannot have type `{}`; fields are {}",
                                    f.name, t->Name(), kAllowed));
      RequireConstant(ctx, f.default_value.get(), "a default value");
    }
  }
}

}  // namespace kiln::passes
