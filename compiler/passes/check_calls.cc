// Pass CheckTypes, the calls (type_checker.h): library functions, the generic rows whose
// signature binds `T` at the call, the checker-typed built-ins, methods resolved by the
// receiver's type, and comprehensions with their aggregates.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/passes/type_checker.h"
#include "compiler/sema/signature.h"
#include "compiler/sema/view_fields.h"
#include "stdlib/library.h"

namespace kiln::passes::typing {

void Checker::Args(Call* c, const std::vector<const Type*>& params, size_t offset) {
  size_t want = params.size() - offset;
  if (c->args.size() != want) {
    ctx_.diags.Error(c->range, fmt::format("`{}` takes {} argument{}, {} given", c->callee, want,
                                           want == 1 ? "" : "s", c->args.size()));
    for (auto& a : c->args) Check(a.get(), nullptr);
    return;
  }
  for (size_t i = 0; i < want; ++i)
    Expect(c->args[i].get(), params[i + offset], fmt::format("argument {} of `{}`", i + 1, c->callee));
}

const Type* Checker::CallType(Call* c, const Type* expected) {
  switch (c->call) {
    case CallKind::Function: {
      std::vector<const Type*> params;
      for (const auto& p : c->fn->params) params.push_back(p.local->type);
      Args(c, params);
      return c->fn->result_type ? c->fn->result_type : Err();
    }
    case CallKind::Std: {
      std::string_view text = stdlib::Functions()[c->std_function].signature;
      if (sema::IsGeneric(text)) return GenericStdType(c, text);
      auto sig = sema::ParseSignature(text, t_);
      c->std_params = sig.params;
      Args(c, sig.params);
      return sig.result ? sig.result : Err();
    }
    case CallKind::Builtin: return BuiltinType(c);
    case CallKind::Method:
    case CallKind::Unresolved:
      if (c->receiver) return MethodType(c);
      for (auto& a : c->args) Check(a.get(), nullptr);
      return Err();
  }
  (void)expected;
  return Err();
}

const Type* Checker::GenericStdType(Call* c, std::string_view text) {
  sema::Signature shape = sema::ParseSignature(text, t_, t_.Int());
  if (c->args.size() != shape.params.size()) {
    Args(c, shape.params);
    return Err();
  }
  const Type* bound = nullptr;
  std::vector<const Type*> got(c->args.size(), nullptr);
  for (size_t i = 0; i < c->args.size(); ++i) {
    if (bound) {
      got[i] = Check(c->args[i].get(), sema::ParseSignature(text, t_, bound).params[i]);
    } else {
      got[i] = Check(c->args[i].get(), nullptr);
      if (!IsErr(got[i])) bound = sema::BindTypeVariable(text, i, got[i], t_);
    }
  }
  if (!bound) {
    if (std::none_of(got.begin(), got.end(), [&](const Type* g) { return IsErr(g); }))
      ctx_.diags.Error(c->range, fmt::format("`{}` cannot tell what `T` is in `{}` from these "
                                             "arguments",
                                             c->callee, text));
    return Err();
  }
  return BoundStd(c, text, bound, got);
}

const Type* Checker::BoundStd(Call* c, std::string_view text, const Type* bound,
                              const std::vector<const Type*>& got) {
  sema::Signature sig = sema::ParseSignature(text, t_, bound);
  for (size_t i = 0; i < got.size(); ++i) {
    if (IsErr(got[i]) || Assignable(got[i], sig.params[i])) continue;
    ctx_.diags.Error(c->args[i]->range, fmt::format("argument {} of `{}` has type `{}`, "
                                                    "expected `{}`",
                                                    i + 1, c->callee, got[i]->Name(),
                                                    sig.params[i]->Name()));
  }
  c->std_params = sig.params;
  return sig.result;
}

const Type* Checker::BuiltinType(Call* c) {
  std::vector<const Type*> args;
  for (auto& a : c->args) args.push_back(Check(a.get(), nullptr));
  for (const Type* a : args)
    if (IsErr(a)) return c->callee == "len" ? t_.Int() : Err();
  auto count = [&](size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return true;
    ctx_.diags.Error(c->range, fmt::format("`{}` takes {} argument{}, {} given", c->callee,
                                           lo == hi ? std::to_string(lo)
                                                    : fmt::format("{} or {}", lo, hi),
                                           hi == 1 ? "" : "s", args.size()));
    return false;
  };
  auto bad = [&](size_t i) {
    ctx_.diags.Error(c->args[i]->range,
                     fmt::format("`{}` does not accept a `{}`", c->callee, args[i]->Name()));
    return Err();
  };
  const std::string& f = c->callee;
  if (f == "len") {
    if (!count(1, 1)) return t_.Int();
    TypeKind k = args[0]->kind;
    if (k != TypeKind::List && k != TypeKind::Map && k != TypeKind::String) bad(0);
    return t_.Int();
  }
  if (f == "range") {
    if (!count(1, 2)) return t_.List(t_.Int());
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i]->kind != TypeKind::Int) bad(i);
    return t_.List(t_.Int());
  }
  if (f == "min" || f == "max") {
    if (!count(2, 2)) return Err();
    const Type* u = Unify(args[0], args[1]);
    if (!u || !Ordered(u) || u->kind == TypeKind::Resource || u->kind == TypeKind::String) {
      ctx_.diags.Error(c->range, fmt::format("`{}` needs two numbers, durations, times or "
                                             "quantities of the same type, not `{}` and `{}`",
                                             f, args[0]->Name(), args[1]->Name()));
      return Err();
    }
    return u;
  }
  if (f == "compare") {
    // Three-way: -1, 0 or 1 as a is less than, equal to (neither, for NaN) or greater than b,
    // the answer job_order/task_order handlers give. Bools too (false first), which `<` does
    // not order: "not ready first" is a common tie-break.
    if (!count(2, 2)) return t_.Int();
    const Type* u = Unify(args[0], args[1]);
    if (!u || (!Ordered(u) && u->kind != TypeKind::Bool) || u->kind == TypeKind::Resource) {
      ctx_.diags.Error(c->range, fmt::format("`compare` needs two numbers, strings, bools, "
                                             "durations, times or quantities of the same type, "
                                             "not `{}` and `{}`",
                                             args[0]->Name(), args[1]->Name()));
    }
    return t_.Int();
  }
  if (f == "abs") {
    if (!count(1, 1)) return Err();
    if (!args[0]->IsNumeric() && args[0]->kind != TypeKind::Duration) return bad(0);
    return args[0];
  }
  if (f == "float") {
    if (!count(1, 1)) return t_.Float();
    if (!args[0]->IsNumeric() && args[0]->kind != TypeKind::Quantity) bad(0);
    return t_.Float();
  }
  if (f == "int") {
    if (!count(1, 1)) return t_.Int();
    if (!args[0]->IsNumeric() && args[0]->kind != TypeKind::Quantity &&
        args[0]->kind != TypeKind::TaskStatus)
      bad(0);
    return t_.Int();
  }
  if (f == "string") {
    if (!count(1, 1)) return t_.String();
    switch (args[0]->kind) {
      case TypeKind::Int: case TypeKind::Float: case TypeKind::Bool: case TypeKind::String:
      case TypeKind::Duration: case TypeKind::Quantity:
      case TypeKind::TaskStatus: case TypeKind::QueueState: case TypeKind::PodGroupPhase:
        break;
      case TypeKind::Resource:
        // Codegen has no text form of a resource (it printed the pointer, issue 28).
        ctx_.diags.Error(c->args[0]->range,
                         "`string` does not accept a `Resource`; convert its dimensions: "
                         "`string(r.cpu)`, `string(r[name])`");
        break;
      default: bad(0);
    }
    return t_.String();
  }
  // sum/count/any/all without a generator.
  ctx_.diags.Error(c->range, fmt::format("`{}` takes a generator: `{}(x.value for x in xs where "
                                         "...)`",
                                         f, f));
  return Err();
}

const Type* Checker::MethodType(Call* c) {
  const Type* r = Check(c->receiver.get(), nullptr);
  if (IsErr(r)) {
    for (auto& a : c->args) Check(a.get(), nullptr);
    return Err();
  }
  c->call = CallKind::Method;
  c->method = BuiltinMethod::None;
  c->std_function = -1;
  const std::string& m = c->callee;
  // The collection methods are resolved by the receiver's type only: a list or map receiver
  // never falls through to a library function of the same name (`contains(string, string)`),
  // which would hand the list to the string function (issue 28).
  if (r->kind == TypeKind::Map) {
    if (m == "get") {
      c->method = BuiltinMethod::MapGet;
      Args(c, {r->key});
      return t_.Optional(r->elem);
    }
    if (m == "keys") {
      c->method = BuiltinMethod::MapKeys;
      Args(c, {});
      return t_.List(r->key);
    }
    if (m == "values") {
      c->method = BuiltinMethod::MapValues;
      Args(c, {});
      return t_.List(r->elem);
    }
  }
  if (r->kind == TypeKind::List) {
    if (m == "get") {
      c->method = BuiltinMethod::ListGet;
      Args(c, {t_.Int()});
      return t_.Optional(r->elem);
    }
    if (m == "contains") {
      c->method = BuiltinMethod::ListContains;
      Args(c, {r->elem});
      if (!Equatable(r->elem))
        ctx_.diags.Error(c->callee_range,
                         fmt::format("`contains` compares elements with `==`, which `{}` does "
                                     "not have",
                                     r->elem->Name()));
      return t_.Bool();
    }
  }
  auto fns = stdlib::Functions();
  auto resolve = [&](size_t i) {
    c->std_function = static_cast<int>(i);
    if (!fns[i].capability.empty() && !ctx_.policy.Uses(fns[i].capability))
      ctx_.diags.Error(c->callee_range,
                       fmt::format("`{}` needs the `{}` capability; declare `uses {};`", m,
                                   fns[i].capability, fns[i].capability));
  };
  // Otherwise a library function: a method of the receiver's type, or one whose first
  // parameter has exactly the receiver's type (`s.starts_with(p)`).
  for (size_t i = 0; i < fns.size(); ++i) {
    if (fns[i].name != m) continue;
    if (fns[i].receiver.empty() && sema::IsGeneric(fns[i].signature)) {
      // `xs.append(x)`: the receiver binds `T`.
      const Type* bound = sema::BindTypeVariable(fns[i].signature, 0, r, t_);
      if (!bound) continue;
      resolve(i);
      sema::Signature sig = sema::ParseSignature(fns[i].signature, t_, bound);
      Args(c, sig.params, 1);
      c->std_params = sig.params;
      return sig.result;
    }
    auto sig = sema::ParseSignature(fns[i].signature, t_);
    if (!fns[i].receiver.empty()) {
      if (sema::ParseTypeString(fns[i].receiver, t_) != r) continue;
      resolve(i);
      c->std_params = sig.params;
      c->std_params.insert(c->std_params.begin(), r);
      Args(c, sig.params);
      return sig.result;
    }
    if (!sig.params.empty() && sig.params[0] == r) {
      resolve(i);
      c->std_params = sig.params;
      Args(c, sig.params, 1);
      return sig.result;
    }
  }
  for (auto& a : c->args)
    if (!a->type) Check(a.get(), nullptr);
  std::vector<std::string> names;
  if (r->kind == TypeKind::Map) names = {"get", "keys", "values"};
  if (r->kind == TypeKind::List) names = {"get", "contains"};
  for (const auto& f : fns) {
    auto sig = sema::ParseSignature(f.signature, t_);
    if ((!f.receiver.empty() && sema::ParseTypeString(f.receiver, t_) == r) ||
        (f.receiver.empty() && !sig.params.empty() && sig.params[0] == r))
      names.emplace_back(f.name);
  }
  ctx_.diags.Error(c->callee_range, fmt::format("`{}` has no method `{}`{}", r->Name(), m,
                                                DidYouMean(m, names)));
  return Err();
}

const Type* Checker::ComprehensionType(Comprehension* c) {
  BindIteration(c->source.get(), c->first.get(), c->second.get());
  if (c->filter) Expect(c->filter.get(), t_.Bool(), "the `where` condition");
  if (c->order_key) {
    const Type* k = Check(c->order_key.get(), nullptr);
    if (!IsErr(k) && (!Ordered(k) || k->kind == TypeKind::Resource))
      ctx_.diags.Error(c->order_key->range,
                       fmt::format("cannot order by a `{}`; keys are numbers, strings, "
                                   "durations, times or quantities",
                                   k->Name()));
  }
  const Type* e = Check(c->element.get(), nullptr);
  if (IsErr(e)) return c->aggregate == Aggregate::Count ? t_.Int() : Err();
  switch (c->aggregate) {
    case Aggregate::List: return t_.List(e);
    case Aggregate::Count: return t_.Int();
    case Aggregate::Any:
    case Aggregate::All:
      if (e->kind != TypeKind::Bool)
        ctx_.diags.Error(c->element->range, fmt::format("`{}` needs bool elements, not `{}`",
                                                        AggregateName(c->aggregate), e->Name()));
      return t_.Bool();
    case Aggregate::Sum:
      if (e->IsNumeric() || e->kind == TypeKind::Duration || e->kind == TypeKind::Quantity ||
          e->kind == TypeKind::Resource)
        return e;
      break;
    case Aggregate::Max:
    case Aggregate::Min:
      if (e->IsNumeric() || e->kind == TypeKind::Duration || e->kind == TypeKind::Quantity ||
          e->kind == TypeKind::Time)
        return e;
      break;
  }
  ctx_.diags.Error(c->element->range, fmt::format("`{}` is not defined over `{}`",
                                                  AggregateName(c->aggregate), e->Name()));
  return Err();
}

}  // namespace kiln::passes::typing
