// Pass: give every expression and local a type and reject ill-typed code.
//
//   before: `let free = node.idel - task.resreq;`             (types unset)
//   after:  error "unknown field `idel` on Node; did you mean `idle`?"; free: <error>
//   before: `let s = share(a, b);`      after: s: float, Call{type: float}
//
// Also: assignment targets (only `var` locals, state, and entries of maps held in them), method
// calls (resolved here because they depend on the receiver's type), return values against the
// declared result, and the initialisers of consts, args, record fields and state.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/passes/type_checker.h"
#include "compiler/sema/signature.h"
#include "compiler/sema/view_fields.h"
#include "stdlib/library.h"

namespace kiln::passes {

namespace typing {

void Checker::Run() {
  // Consts first, in source order, so later declarations can use their types.
  for (auto* c : ctx_.policy.All<ConstDecl>()) ConstType(c);
  for (auto& decl : ctx_.policy.decls) {
    if (auto* a = As<ArgDecl>(decl.get())) {
      if (a->default_value) Expect(a->default_value.get(), a->declared.resolved, "default value");
    } else if (auto* r = As<RecordDecl>(decl.get())) {
      for (auto& f : r->fields)
        if (f.default_value) Expect(f.default_value.get(), f.declared.resolved, "default value");
    } else if (auto* s = As<StateDecl>(decl.get())) {
      if (s->init) Expect(s->init.get(), s->declared.resolved, "initial value");
      if (s->across_sessions) KeptScalar(*s);
    } else if (decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) {
      current_ = static_cast<Callable*>(decl.get());
      Block(current_->body.get());
      current_ = nullptr;
    }
  }
}

void Checker::KeptScalar(const StateDecl& s) {
  const Type* t = s.declared.resolved;
  if (IsErr(t)) return;
  switch (t->kind) {
    case TypeKind::Int:
    case TypeKind::Float:
    case TypeKind::Bool:
    case TypeKind::Duration:
    case TypeKind::Time:
    case TypeKind::Quantity: return;
    default: break;
  }
  ctx_.diags.Error(s.declared.range,
                   fmt::format("state `{}` is kept across sessions, so its type must be "
                               "`int`, `float`, `bool`, `duration`, `time` or `quantity`, "
                               "not `{}`",
                               s.name, t->Name()));
}

bool Checker::Assignable(const Type* from, const Type* to) {
  if (IsErr(from) || IsErr(to) || from == to) return true;
  if (from->kind == TypeKind::Int && to->kind == TypeKind::Float) return true;
  if (to->kind == TypeKind::Optional) {
    if (from->kind == TypeKind::None) return true;
    return Assignable(from, to->elem);
  }
  return false;
}

const Type* Checker::ConstType(ConstDecl* c) {
  if (c->type) return c->type;
  c->type = Err();  // guards against `const a = a;`
  const Type* declared = c->declared ? c->declared->resolved : nullptr;
  c->type = declared ? Expect(c->value.get(), declared, "constant value")
                     : Check(c->value.get(), nullptr);
  if (declared) c->type = declared;
  return c->type;
}

const Type* Checker::Expect(ast::Expr* e, const Type* expected, std::string_view what) {
  const Type* got = Check(e, expected);
  if (!Assignable(got, expected)) {
    Diagnostic& d = ctx_.diags.Error(
        e->range, fmt::format("{} has type `{}`, expected `{}`", what, got->Name(),
                              expected->Name()));
    if (got->kind == TypeKind::Tuple && expected->kind == TypeKind::Tuple &&
        got->elems.size() != expected->elems.size())
      d.notes.push_back({e->range, fmt::format("this tuple has {} elements, not {}",
                                               got->elems.size(), expected->elems.size())});
  }
  return got;
}

void Checker::Block(ast::Block* b) {
  if (!b) return;
  for (auto& s : b->stmts) Stmt(s.get());
}

void Checker::Stmt(ast::Stmt* s) {
  if (!s) return;
  switch (s->kind) {
    case NodeKind::Block: Block(static_cast<ast::Block*>(s)); break;
    case NodeKind::Let: {
      auto* l = static_cast<Let*>(s);
      const Type* declared = l->declared ? l->declared->resolved : nullptr;
      const Type* got = declared ? Expect(l->value.get(), declared, "initial value")
                                 : Check(l->value.get(), nullptr);
      if (!declared && (got->kind == TypeKind::None || got->kind == TypeKind::Void)) {
        ctx_.diags.Error(l->value->range,
                         got->kind == TypeKind::None
                             ? fmt::format("cannot infer the type of `{}` from `none`; write "
                                           "`let {}: T? = none;`",
                                           l->local->name, l->local->name)
                             : fmt::format("`{}` has no value to bind", "expression"));
        got = Err();
      }
      l->local->type = declared ? declared : got;
      break;
    }
    case NodeKind::Assign: Assignment(static_cast<Assign*>(s)); break;
    case NodeKind::If: {
      auto* i = static_cast<If*>(s);
      Expect(i->cond.get(), t_.Bool(), "condition");
      Block(i->then.get());
      Stmt(i->otherwise.get());
      break;
    }
    case NodeKind::IfLet: {
      auto* i = static_cast<IfLet*>(s);
      const Type* v = Check(i->value.get(), nullptr);
      if (IsErr(v)) {
        i->local->type = Err();
      } else if (v->kind != TypeKind::Optional) {
        ctx_.diags.Error(i->value->range,
                         fmt::format("`if let` needs an optional value, but this has type `{}`",
                                     v->Name()));
        i->local->type = v;
      } else {
        i->local->type = v->elem;
      }
      Block(i->then.get());
      Stmt(i->otherwise.get());
      break;
    }
    case NodeKind::For: {
      auto* f = static_cast<For*>(s);
      BindIteration(f->source.get(), f->first.get(), f->second.get());
      Block(f->body.get());
      break;
    }
    case NodeKind::Return: {
      auto* r = static_cast<Return*>(s);
      const Type* want = current_ ? current_->result_type : t_.Void();
      if (IsErr(want)) {
        if (r->value) Check(r->value.get(), nullptr);
      } else if (want->kind == TypeKind::Void) {
        if (r->value) {
          Check(r->value.get(), nullptr);
          ctx_.diags.Error(r->value->range,
                           fmt::format("`{}` returns nothing, but a value is returned",
                                       current_->name));
        }
      } else if (!r->value) {
        ctx_.diags.Error(r->range, fmt::format("`{}` must return a value of type `{}`",
                                               current_->name, want->Name()));
      } else {
        Expect(r->value.get(), want, "returned value");
      }
      break;
    }
    case NodeKind::ExprStmt: {
      auto* e = static_cast<ExprStmt*>(s);
      const Type* got = Check(e->value.get(), nullptr);
      if (e->value->kind != NodeKind::Call && !IsErr(got))
        ctx_.diags.Error(e->value->range, "this expression's value is unused");
      break;
    }
    default: break;
  }
}

void Checker::BindIteration(ast::Expr* source, Local* first, Local* second) {
  const Type* src = Check(source, nullptr);
  if (IsErr(src)) {
    first->type = Err();
    if (second) second->type = Err();
    return;
  }
  if (src->kind == TypeKind::List) {
    first->type = src->elem;
    if (second) {
      ctx_.diags.Error(second->range, "a list gives one variable per element; two are "
                                      "written only for maps (`for k, v in m`)");
      second->type = Err();
    }
    return;
  }
  if (src->kind == TypeKind::Map) {
    first->type = src->key;
    if (second) second->type = src->elem;
    return;
  }
  ctx_.diags.Error(source->range,
                   fmt::format("cannot iterate over `{}`; loops run over lists, maps and "
                               "range(a, b)",
                               src->Name()));
  first->type = Err();
  if (second) second->type = Err();
}

void Checker::Assignment(Assign* a) {
  const Type* target = Check(a->target.get(), nullptr);
  ast::Expr* root = a->target.get();
  while (auto* ix = As<Index>(root)) root = ix->operand.get();
  while (auto* sel = As<Select>(root)) root = sel->operand.get();
  auto* name = As<NameRef>(root);
  bool ok_root = false;
  if (name) {
    switch (name->ref) {
      case NameKind::Local:
        ok_root = name->local->is_mutable;
        if (!ok_root)
          ctx_.diags.Error(a->target->range,
                           fmt::format("cannot assign to `{}`: it is not declared with `var`",
                                       name->name))
              .notes.push_back({name->local->range, "declared here"});
        break;
      case NameKind::State: ok_root = true; break;
      case NameKind::Unresolved: ok_root = true; break;  // already reported
      default:
        ctx_.diags.Error(a->target->range,
                         fmt::format("cannot assign to `{}`: only `var` locals and state can "
                                     "change",
                                     name->name));
        break;
    }
  } else {
    ctx_.diags.Error(a->target->range, "cannot assign to this expression");
  }
  if (auto* sel = As<Select>(a->target.get()); sel && ok_root) {
    const Type* base = sel->operand->type;
    if (base && base->kind != TypeKind::Record)
      ctx_.diags.Error(a->target->range,
                       fmt::format("cannot assign to `.{}`: fields of `{}` are read-only",
                                   sel->field, base->Name()));
  }
  if (auto* ix = As<Index>(a->target.get()); ix && ok_root) {
    const Type* base = ix->operand->type;
    if (base && base->kind == TypeKind::List)
      ctx_.diags.Error(a->target->range,
                       "cannot assign to a list element: a list is built whole (`append`, a "
                       "comprehension); keep a map<int, T> to change entries in place");
  }
  if (a->op == AssignOp::Set) {
    Expect(a->value.get(), target, "assigned value");
    return;
  }
  const Type* v = Check(a->value.get(), target);
  BinaryOp op = a->op == AssignOp::Add   ? BinaryOp::Add
                : a->op == AssignOp::Sub ? BinaryOp::Sub
                : a->op == AssignOp::Mul ? BinaryOp::Mul
                                         : BinaryOp::Div;
  const Type* result = Arith(op, target, v, a->range);
  if (!Assignable(result, target))
    ctx_.diags.Error(a->range, fmt::format("`{}` gives `{}`, which cannot be stored in `{}`",
                                           AssignOpSpelling(a->op), result->Name(),
                                           target->Name()));
}

const Type* Checker::Check(ast::Expr* e, const Type* expected) {
  if (!e) return Err();
  const Type* t = CheckInner(e, expected);
  e->type = t ? t : Err();
  return e->type;
}

const Type* Checker::CheckInner(ast::Expr* e, const Type* expected) {
  switch (e->kind) {
    case NodeKind::IntLit: return t_.Int();
    case NodeKind::FloatLit: return t_.Float();
    case NodeKind::StringLit: return t_.String();
    case NodeKind::BoolLit: return t_.Bool();
    case NodeKind::DurationLit: return t_.Get(TypeKind::Duration);
    case NodeKind::QuantityLit: return t_.Get(TypeKind::Quantity);
    case NodeKind::NoneLit:
      return expected && expected->kind == TypeKind::Optional ? expected
                                                              : t_.Get(TypeKind::None);
    case NodeKind::NameRef: return NameType(static_cast<NameRef*>(e));
    case NodeKind::Unary: return UnaryType(static_cast<Unary*>(e));
    case NodeKind::Binary: return BinaryType(static_cast<Binary*>(e), expected);
    case NodeKind::Conditional: {
      auto* c = static_cast<Conditional*>(e);
      Expect(c->cond.get(), t_.Bool(), "condition");
      const Type* a = Check(c->then.get(), expected);
      const Type* b = Check(c->otherwise.get(), expected ? expected : a);
      const Type* u = Unify(a, b);
      if (!u) {
        ctx_.diags.Error(e->range, fmt::format("the branches have different types: `{}` and `{}`",
                                               a->Name(), b->Name()));
        return Err();
      }
      return u;
    }
    case NodeKind::Select: return SelectType(static_cast<Select*>(e));
    case NodeKind::Index: return IndexType(static_cast<Index*>(e));
    case NodeKind::Call: return CallType(static_cast<Call*>(e), expected);
    case NodeKind::Comprehension: return ComprehensionType(static_cast<Comprehension*>(e));
    case NodeKind::TupleLit: return TupleType(static_cast<TupleLit*>(e), expected);
    case NodeKind::ListLit: {
      auto* l = static_cast<ListLit*>(e);
      const Type* want = expected && expected->kind == TypeKind::List ? expected->elem : nullptr;
      const Type* elem = want;
      for (auto& x : l->elements) {
        const Type* got = Check(x.get(), elem);
        if (!elem) {
          elem = got;
        } else if (want && got->IsNumeric() && want->IsNumeric() && !Assignable(got, want)) {
          // Unify would widen to float; an element of a declared list<int> must not narrow.
          ctx_.diags.Error(x->range, fmt::format("list element has type `{}`, expected `{}`",
                                                 got->Name(), want->Name()));
        } else if (const Type* u = Unify(elem, got)) {
          elem = want ? want : u;
        } else {
          ctx_.diags.Error(x->range, fmt::format("list element has type `{}`, expected `{}`",
                                                 got->Name(), elem->Name()));
        }
      }
      if (!elem) {
        ctx_.diags.Error(e->range, "cannot infer the element type of `[]`; declare it: "
                                   "`var xs: list<T> = [];`");
        return Err();
      }
      return t_.List(elem);
    }
    case NodeKind::MapLit: {
      auto* m = static_cast<MapLit*>(e);
      const Type* k = expected && expected->kind == TypeKind::Map ? expected->key : nullptr;
      const Type* v = expected && expected->kind == TypeKind::Map ? expected->elem : nullptr;
      for (auto& entry : m->entries) {
        const Type* kt = Check(entry.key.get(), k);
        const Type* vt = Check(entry.value.get(), v);
        if (!k) k = kt;
        else if (!Assignable(kt, k))
          ctx_.diags.Error(entry.key->range, fmt::format("map key has type `{}`, expected `{}`",
                                                         kt->Name(), k->Name()));
        if (!v) v = vt;
        else if (!Assignable(vt, v))
          ctx_.diags.Error(entry.value->range,
                           fmt::format("map value has type `{}`, expected `{}`", vt->Name(),
                                       v->Name()));
      }
      if (!k || !v) {
        ctx_.diags.Error(e->range, "cannot infer the type of `{}`; declare it: "
                                   "`var m: map<K, V> = {};`");
        return Err();
      }
      return t_.Map(k, v);
    }
    case NodeKind::ResourceLit: {
      auto* r = static_cast<ResourceLit*>(e);
      for (auto& entry : r->entries) {
        Check(entry.key.get(), t_.String());
        const Type* vt = Check(entry.value.get(), nullptr);
        if (!IsErr(vt) && !vt->IsNumeric() && vt->kind != TypeKind::Quantity)
          ctx_.diags.Error(entry.value->range,
                           fmt::format("a resource amount must be a number or a quantity, not "
                                       "`{}`",
                                       vt->Name()));
      }
      return t_.Get(TypeKind::Resource);
    }
    case NodeKind::RecordLit: {
      auto* r = static_cast<RecordLit*>(e);
      if (!r->record) {
        for (auto& f : r->fields) Check(f.value.get(), nullptr);
        return Err();
      }
      std::vector<std::string> names;
      for (const auto& f : r->record->fields) names.push_back(f.name);
      for (size_t i = 0; i < r->fields.size(); ++i) {
        auto& f = r->fields[i];
        f.field = r->record->FieldIndex(f.name);
        if (f.field < 0) {
          ctx_.diags.Error(f.range, fmt::format("record `{}` has no field `{}`{}", r->type_name,
                                                f.name, DidYouMean(f.name, names)));
          Check(f.value.get(), nullptr);
          continue;
        }
        for (size_t j = 0; j < i; ++j)
          if (r->fields[j].name == f.name)
            ctx_.diags.Error(f.range, fmt::format("field `{}` is given twice", f.name))
                .notes.push_back({r->fields[j].range, "first given here"});
        Expect(f.value.get(), r->record->fields[f.field].declared.resolved,
               fmt::format("field `{}`", f.name));
      }
      return t_.Record(r->record);
    }
    default: return Err();
  }
}

const Type* Checker::Unify(const Type* a, const Type* b) {
  if (IsErr(a)) return b;
  if (IsErr(b) || a == b) return a;
  if (a->IsNumeric() && b->IsNumeric()) return t_.Float();
  if (a->kind == TypeKind::None && b->kind == TypeKind::Optional) return b;
  if (b->kind == TypeKind::None && a->kind == TypeKind::Optional) return a;
  if (a->kind == TypeKind::None) return t_.Optional(b);
  if (b->kind == TypeKind::None) return t_.Optional(a);
  if (a->kind == TypeKind::Optional && a->elem == b) return a;
  if (b->kind == TypeKind::Optional && b->elem == a) return b;
  return nullptr;
}

const Type* Checker::NameType(NameRef* n) {
  switch (n->ref) {
    case NameKind::Local: return n->local->type ? n->local->type : Err();
    case NameKind::Const: return ConstType(const_cast<ConstDecl*>(n->const_decl));
    case NameKind::Arg: return n->arg_decl->declared.resolved;
    case NameKind::State: return n->state_decl->declared.resolved;
    case NameKind::StdConstant: {
      const auto& c = stdlib::Constants()[n->std_constant];
      return sema::ParseTypeString(c.type, t_);
    }
    case NameKind::Session: return t_.Get(TypeKind::Session);
    case NameKind::Unresolved: return Err();
  }
  return Err();
}

const Type* Checker::UnaryType(Unary* u) {
  const Type* o = Check(u->operand.get(), nullptr);
  if (IsErr(o)) return Err();
  if (u->op == UnaryOp::Not) {
    if (o->kind != TypeKind::Bool)
      ctx_.diags.Error(u->range, fmt::format("`not` needs a bool, not `{}`", o->Name()));
    return t_.Bool();
  }
  if (o->IsNumeric() || o->kind == TypeKind::Duration || o->kind == TypeKind::Quantity) return o;
  ctx_.diags.Error(u->range, fmt::format("cannot negate a `{}`", o->Name()));
  return Err();
}

const Type* Checker::Arith(BinaryOp op, const Type* a, const Type* b, const SourceRange& r) {
  if (IsErr(a) || IsErr(b)) return Err();
  TypeKind ka = a->kind, kb = b->kind;
  auto num = [&] {
    return ka == TypeKind::Int && kb == TypeKind::Int ? t_.Int() : t_.Float();
  };
  switch (op) {
    case BinaryOp::Add:
      if (a->IsNumeric() && b->IsNumeric()) return num();
      if (ka == kb && (ka == TypeKind::String || ka == TypeKind::Resource ||
                       ka == TypeKind::Duration || ka == TypeKind::Quantity))
        return a;
      if (ka == TypeKind::List && a == b) return a;
      if (ka == TypeKind::Time && kb == TypeKind::Duration) return a;
      break;
    case BinaryOp::Sub:
      if (a->IsNumeric() && b->IsNumeric()) return num();
      if (ka == kb && (ka == TypeKind::Resource || ka == TypeKind::Duration ||
                       ka == TypeKind::Quantity))
        return a;
      if (ka == TypeKind::Time && kb == TypeKind::Time) return t_.Get(TypeKind::Duration);
      if (ka == TypeKind::Time && kb == TypeKind::Duration) return a;
      break;
    case BinaryOp::Mul:
      if (a->IsNumeric() && b->IsNumeric()) return num();
      if ((ka == TypeKind::Resource || ka == TypeKind::Duration || ka == TypeKind::Quantity) &&
          b->IsNumeric())
        return a;
      if (a->IsNumeric() &&
          (kb == TypeKind::Resource || kb == TypeKind::Duration || kb == TypeKind::Quantity))
        return b;
      break;
    case BinaryOp::Div:
      if (a->IsNumeric() && b->IsNumeric()) return num();
      if ((ka == TypeKind::Duration || ka == TypeKind::Quantity) && a == b) return t_.Float();
      if ((ka == TypeKind::Duration || ka == TypeKind::Quantity) && b->IsNumeric()) return a;
      break;
    case BinaryOp::Mod:
      if (ka == TypeKind::Int && kb == TypeKind::Int) return a;
      break;
    default: break;
  }
  ctx_.diags.Error(r, fmt::format("`{}` is not defined for `{}` and `{}`", BinaryOpSpelling(op),
                                  a->Name(), b->Name()));
  return Err();
}

bool Checker::Equatable(const Type* t) {
  if (IsErr(t)) return true;
  switch (t->kind) {
    case TypeKind::List: case TypeKind::Map: case TypeKind::Record: case TypeKind::Fit:
    case TypeKind::Validation: case TypeKind::Victims: case TypeKind::Void:
    case TypeKind::Session:
      return false;
    case TypeKind::Optional: return Equatable(t->elem);
    default: return true;
  }
}

bool Checker::Ordered(const Type* t) {
  switch (t->kind) {
    case TypeKind::Int: case TypeKind::Float: case TypeKind::String: case TypeKind::Duration:
    case TypeKind::Time: case TypeKind::Quantity: case TypeKind::Resource:
      return true;
    default: return false;
  }
}

const Type* Checker::BinaryType(Binary* b, const Type* expected) {
  switch (b->op) {
    case BinaryOp::And:
    case BinaryOp::Or:
      Expect(b->left.get(), t_.Bool(), fmt::format("the left side of `{}`", BinaryOpSpelling(b->op)));
      Expect(b->right.get(), t_.Bool(), fmt::format("the right side of `{}`", BinaryOpSpelling(b->op)));
      return t_.Bool();
    case BinaryOp::Coalesce: {
      const Type* l = Check(b->left.get(), nullptr);
      if (IsErr(l)) {
        Check(b->right.get(), nullptr);
        return Err();
      }
      if (l->kind != TypeKind::Optional) {
        ctx_.diags.Error(b->left->range,
                         fmt::format("`??` needs an optional on its left, not `{}`", l->Name()));
        Check(b->right.get(), l);
        return l;
      }
      const Type* r = Check(b->right.get(), l->elem);
      if (Assignable(r, l->elem)) return l->elem;
      if (Assignable(r, l)) return l;
      ctx_.diags.Error(b->right->range, fmt::format("`??` default has type `{}`, expected `{}`",
                                                    r->Name(), l->elem->Name()));
      return l->elem;
    }
    case BinaryOp::In: {
      const Type* r = Check(b->right.get(), nullptr);
      const Type* want = nullptr;
      if (!IsErr(r)) {
        if (r->kind == TypeKind::Map) want = r->key;
        else if (r->kind == TypeKind::List) {
          want = r->elem;
          if (!Equatable(r->elem))
            ctx_.diags.Error(b->range,
                             fmt::format("`in` compares elements with `==`, which `{}` does not "
                                         "have",
                                         r->elem->Name()));
        }
        else if (r->kind == TypeKind::String) want = r;
        else
          ctx_.diags.Error(b->right->range,
                           fmt::format("`in` needs a map, list or string on its right, not `{}`",
                                       r->Name()));
      }
      if (want) Expect(b->left.get(), want, "the left side of `in`");
      else Check(b->left.get(), nullptr);
      return t_.Bool();
    }
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: {
      const Type* l = Check(b->left.get(), nullptr);
      const Type* r = Check(b->right.get(), l);
      if (IsErr(l) || IsErr(r)) return t_.Bool();
      bool comparable = Unify(l, r) != nullptr;
      if (comparable && (b->op == BinaryOp::Eq || b->op == BinaryOp::Ne)) {
        if (l->kind == TypeKind::List || l->kind == TypeKind::Map)
          ctx_.diags.Error(b->range, fmt::format("`{}` cannot compare lists or maps",
                                                 BinaryOpSpelling(b->op)));
        else if (!Equatable(Unify(l, r)))
          ctx_.diags.Error(b->range, fmt::format("`{}` cannot compare values of type `{}`",
                                                 BinaryOpSpelling(b->op), Unify(l, r)->Name()));
        return t_.Bool();
      }
      // Tuples order lexicographically by their elements (bools: false first).
      if (comparable && (Ordered(Unify(l, r)) || l->kind == TypeKind::Tuple)) return t_.Bool();
      ctx_.diags.Error(b->range, fmt::format("cannot compare `{}` with `{}` using `{}`",
                                             l->Name(), r->Name(), BinaryOpSpelling(b->op)));
      return t_.Bool();
    }
    default: {
      const Type* l = Check(b->left.get(), expected);
      const Type* r = Check(b->right.get(), l);
      return Arith(b->op, l, r, b->range);
    }
  }
}

const Type* Checker::SelectType(Select* s) {
  const Type* o = Check(s->operand.get(), nullptr);
  if (IsErr(o)) return Err();
  auto unknown = [&](std::vector<std::string> names) {
    ctx_.diags.Error(s->field_range, fmt::format("unknown field `{}` on {}{}", s->field,
                                                 o->Name(), DidYouMean(s->field, names)));
    return Err();
  };
  auto builtin = [&](std::string_view name, const Type* t) {
    s->builtin_field = std::string(name);
    return t;
  };
  switch (o->kind) {
    case TypeKind::Task:
    case TypeKind::Job:
    case TypeKind::Node:
    case TypeKind::Queue:
    case TypeKind::Shape: {
      const sema::ViewField* f = sema::FindViewField(o, s->field);
      if (!f) return unknown(sema::ViewFieldNames(o));
      s->view_field = f->abi_index;
      s->shape_field = f->shape_index;
      return sema::ViewFieldType(*f, t_);
    }
    case TypeKind::Session: {
      std::vector<std::string> names;
      for (const auto& f : stdlib::SessionFields()) {
        if (f.name == s->field) return builtin(f.name, sema::ParseTypeString(f.type, t_));
        names.emplace_back(f.name);
      }
      return unknown(names);
    }
    case TypeKind::Resource:
      if (s->field == "cpu" || s->field == "memory") return builtin(s->field, t_.Float());
      if (s->field == "names") return builtin(s->field, t_.List(t_.String()));
      if (s->field == "is_empty") return builtin(s->field, t_.Bool());
      return unknown({"cpu", "memory", "names", "is_empty"});
    case TypeKind::Duration:
      if (s->field == "seconds") return builtin(s->field, t_.Float());
      if (s->field == "nanoseconds") return builtin(s->field, t_.Int());
      return unknown({"seconds", "nanoseconds"});
    case TypeKind::Time:
      if (s->field == "unix_seconds") return builtin(s->field, t_.Float());
      return unknown({"unix_seconds"});
    case TypeKind::Quantity:
      if (s->field == "value") return builtin(s->field, t_.Float());
      return unknown({"value"});
    case TypeKind::Fit:
      if (s->field == "code") return builtin(s->field, t_.Int());
      if (s->field == "reason") return builtin(s->field, t_.String());
      return unknown({"code", "reason"});
    case TypeKind::Record: {
      int i = o->record->FieldIndex(s->field);
      if (i < 0) {
        std::vector<std::string> names;
        for (const auto& f : o->record->fields) names.push_back(f.name);
        return unknown(names);
      }
      s->record_field = i;
      return o->record->fields[i].declared.resolved;
    }
    case TypeKind::Tuple: {
      // `k.0`: the position is written as a number (the parser gives it as the field).
      size_t n = o->elems.size();
      if (s->field.size() == 1 && s->field[0] >= '0' && static_cast<size_t>(s->field[0] - '0') < n) {
        s->tuple_element = s->field[0] - '0';
        return o->elems[s->tuple_element];
      }
      ctx_.diags.Error(s->field_range,
                       fmt::format("`{}` has elements `.0` to `.{}`, not `.{}`", o->Name(), n - 1,
                                   s->field));
      return Err();
    }
    case TypeKind::Optional:
      ctx_.diags.Error(s->operand->range,
                       fmt::format("this value is `{}` and may be none; unwrap it with `if let` "
                                   "or `??` before reading `.{}`",
                                   o->Name(), s->field));
      return Err();
    default:
      ctx_.diags.Error(s->field_range,
                       fmt::format("`{}` has no fields (reading `.{}`)", o->Name(), s->field));
      return Err();
  }
}

const Type* Checker::TupleType(TupleLit* t, const Type* expected) {
  const Type* want = expected && expected->kind == TypeKind::Tuple &&
                             expected->elems.size() == t->elements.size()
                         ? expected
                         : nullptr;
  std::vector<const Type*> elems;
  bool ok = true;
  for (size_t i = 0; i < t->elements.size(); ++i) {
    ast::Expr* x = t->elements[i].get();
    const Type* got = Check(x, want ? want->elems[i] : nullptr);
    if (IsErr(got)) {
      ok = false;
    } else if (!IsTupleElementKind(got->kind)) {
      ctx_.diags.Error(x->range, fmt::format("a tuple element must be an int, float, bool or "
                                             "string, not `{}`",
                                             got->Name()));
      ok = false;
    }
    // An int element of a literal written where a float element is expected becomes a float.
    elems.push_back(want && Assignable(got, want->elems[i]) ? want->elems[i] : got);
  }
  if (t->elements.size() > kMaxTupleArity) {
    ctx_.diags.Error(t->range, fmt::format("a tuple has {} to {} elements, not {}",
                                           kMinTupleArity, kMaxTupleArity, t->elements.size()));
    return Err();
  }
  return ok ? t_.Tuple(elems) : Err();
}

const Type* Checker::IndexType(Index* ix) {
  const Type* o = Check(ix->operand.get(), nullptr);
  if (IsErr(o)) {
    Check(ix->index.get(), nullptr);
    return Err();
  }
  switch (o->kind) {
    case TypeKind::List:
      Expect(ix->index.get(), t_.Int(), "list index");
      return OrNone(o->elem);
    case TypeKind::Map:
      Expect(ix->index.get(), o->key, "map key");
      return OrNone(o->elem);
    case TypeKind::Resource:
      Expect(ix->index.get(), t_.String(), "resource name");
      return t_.Float();
    default:
      Check(ix->index.get(), nullptr);
      ctx_.diags.Error(ix->range, fmt::format("cannot index a `{}`", o->Name()));
      return Err();
  }
}

}  // namespace typing

void CheckTypes(PassContext& ctx) { typing::Checker(ctx).Run(); }

}  // namespace kiln::passes
