// Calls: policy functions, the generic builtins the checker types itself, and standard-library
// rows (stdlib/library.h) by the lowering their row names.
#include <llvm/IR/Intrinsics.h>
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"
#include "compiler/sema/signature.h"

namespace kiln::codegen {

std::vector<Value*> Lowering::Args(const ast::Call& c) {
  std::vector<Value*> out;
  for (const ast::ExprPtr& a : c.args) out.push_back(Emit(*a));
  return out;
}

Value* Lowering::StrPart(Value* s, unsigned i) { return b_.CreateExtractValue(s, {i}); }
                         
                         Value* Lowering::EmitCall(const ast::Call& c) {
  if (c.call == ast::CallKind::Function) {
    auto it = fns_.find(c.fn);
    if (it == fns_.end()) Fail(&c, fmt::format("unknown function `{}`", c.callee));
    std::vector<Value*> args{ictx_};
    for (size_t i = 0; i < c.args.size(); ++i)
      args.push_back(Coerce(Emit(*c.args[i]), c.args[i]->type, c.fn->params[i].local->type));
    callees_[fn_].push_back(it->second);
    ++allocating_sites_;  // may allocate: known only once every function is lowered
    return b_.CreateCall(it->second, args);
  }
  return EmitLibraryCall(c);
}

Value* Lowering::F(double v) { return llvm::ConstantFP::get(f64_, v); }
                   
                   // The standard-library row a Std or Method call was resolved to by the checker, or null.
                   const stdlib::Function* Lowering::StdRow(const ast::Call& c) {
  auto fns = stdlib::Functions();
  if (c.std_function < 0 || static_cast<size_t>(c.std_function) >= fns.size()) return nullptr;
  return &fns[static_cast<size_t>(c.std_function)];
}

Value* Lowering::EmitLibraryCall(const ast::Call& c) {
  // Methods: receiver.name(args). The checker tagged each one with a collection method or a
  // library row; lowering follows the tag, never the callee's name alone (issue 28: a list's
  // `contains` reached the string function of that name).
  if (c.receiver) {
    const ast::Expr& recv = *c.receiver;
    switch (c.method) {
      case ast::BuiltinMethod::ListGet: return EmitListGet(c);
      case ast::BuiltinMethod::ListContains: return EmitListContains(recv, *c.args.at(0), &c);
      case ast::BuiltinMethod::MapGet: return EmitMapGet(c);
      case ast::BuiltinMethod::MapKeys: return EmitMapKeysOrValues(c, /*keys=*/true);
      case ast::BuiltinMethod::MapValues: return EmitMapKeysOrValues(c, /*keys=*/false);
      case ast::BuiltinMethod::None: break;
    }
    const stdlib::Function* row = StdRow(c);
    if (c.call != ast::CallKind::Method || !row || row->name != c.callee)
      Fail(&c, fmt::format("method `{}` on `{}` was not resolved to a lowering", c.callee,
                           recv.type ? recv.type->Name() : "?"));
    if (row->lower == stdlib::Lower::Dim && IsKind(recv.type, TypeKind::Resource)) {
      // An id outside the registry (resource_id of a full registry: -1, or any other int)
      // reads 0, as r[name] of an unknown name does.
      Value* r = Emit(recv);
      Value* id = Emit(*c.args[0]);
      Value* fits = b_.CreateICmpULT(id, b_.getInt64(kMaxResources));
      return b_.CreateSelect(fits, ResourceDimAt(r, b_.CreateTrunc(id, i32_)), F(0.0));
    }
    // Other methods are the library function with the receiver first: s.contains(x).
    std::vector<const ast::Expr*> all{&recv};
    for (const auto& a : c.args) all.push_back(a.get());
    return EmitNamedFunction(c, std::string(row->name), all);
  }
  std::vector<const ast::Expr*> all;
  for (const auto& a : c.args) all.push_back(a.get());
  return EmitNamedFunction(c, c.callee, all);
}

Value* Lowering::EmitNamedFunction(const ast::Call& c, const std::string& name,
                                   const std::vector<const ast::Expr*>& args) {
  const Type* t = c.type;
  auto arg = [&](size_t i) { return Emit(*args.at(i)); };
  auto argf = [&](size_t i) { return Coerce(Emit(*args.at(i)), args.at(i)->type, FloatType()); };
  auto at = [&](size_t i) { return args.at(i)->type; };
  // Generic built-ins (typed by the checker itself) are lowered by name; everything else by
  // the standard-library row the checker resolved it to.
  const bool generic = c.call == ast::CallKind::Builtin;
  const stdlib::Function* resolved = generic ? nullptr : StdRow(c);
  if (!generic && (!resolved || resolved->name != name))
    Fail(&c, fmt::format("call to `{}` was not resolved to a library function", name));
  if (generic) {
    if (name == "range") {
      // As a value (outside `for` and comprehension sources, which count without a list).
      auto [lo, n] = RangeBounds(c);
      Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(8))}, true);
      ForRange(n, [&](Value* i) {
        b_.CreateStore(b_.CreateAdd(lo, i), b_.CreateGEP(i64_, items, i));
      });
      Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
      return b_.CreateInsertValue(list, n, {1});
    }
    if (name == "len") {
      const ast::Expr& x = *args.at(0);
      // A view's host map or list: its size, without copying it into the call arena.
      const AbiFieldInfo* f = HostMapField(x);
      if (!f) f = ViewListField(x);
      if (f) {
        Value* obj = Emit(*ast::As<ast::Select>(&x)->operand);
        return CallRt(std::string(f->host) + "_size", i64_, {obj});
      }
      Value* v = Emit(x);
      if (IsKind(x.type, TypeKind::Map)) return MapSize(v);
      return b_.CreateExtractValue(v, {1});
    }
    if (name == "count" && args.size() == 1) return b_.CreateExtractValue(arg(0), {1});
    if (name == "float") return argf(0);
    if (name == "int") {
      if (IsFloatLike(at(0))) return FloatToInt(arg(0));
      Value* v = arg(0);
      return v->getType() == i32_ ? b_.CreateSExt(v, i64_) : v;
    }
    if (name == "string") {
      if (IsKind(at(0), TypeKind::String)) return arg(0);
      if (IsFloatLike(at(0))) return CallStrOut("kiln_rt_str_of_float", {arg(0)}, true);
      if (IsKind(at(0), TypeKind::Bool))
        return b_.CreateSelect(arg(0), Str("true"), Str("false"));
      Value* v = arg(0);
      if (v->getType() == i32_) v = b_.CreateSExt(v, i64_);
      return CallStrOut("kiln_rt_str_of_int", {v}, true);
    }
    if ((name == "min" || name == "max") && args.size() == 2) {
      bool is_min = name == "min";
      if (IsFloatLike(t)) {
        Value* a = argf(0);
        Value* b = argf(1);
        return b_.CreateSelect(is_min ? b_.CreateFCmpOLE(a, b) : b_.CreateFCmpOGE(a, b), a, b);
      }
      Value* a = arg(0);
      Value* b = arg(1);
      return b_.CreateSelect(is_min ? b_.CreateICmpSLE(a, b) : b_.CreateICmpSGE(a, b), a, b);
    }
    if (name == "compare" && args.size() == 2) {
      // -1, 0 or 1; strings through one runtime comparison, the rest as `<` and `>` do.
      Value* lt;
      Value* gt;
      if (IsKind(at(0), TypeKind::String)) {
        Value* a = arg(0);
        Value* b = arg(1);
        Value* cmp = CallRt("kiln_rt_str_cmp", i32_, {StrPart(a, 0), StrPart(a, 1), StrPart(b, 0),
                                                      StrPart(b, 1)});
        lt = b_.CreateICmpSLT(cmp, b_.getInt32(0));
        gt = b_.CreateICmpSGT(cmp, b_.getInt32(0));
      } else if (IsKind(at(0), TypeKind::Bool)) {
        Value* a = arg(0);  // false before true: unsigned
        Value* b = arg(1);
        lt = b_.CreateICmpULT(a, b);
        gt = b_.CreateICmpUGT(a, b);
      } else {
        Value* a = arg(0);
        Value* b = arg(1);
        lt = Compare(ast::BinaryOp::Lt, a, at(0), b, at(1), &c);
        gt = Compare(ast::BinaryOp::Gt, a, at(0), b, at(1), &c);
      }
      return b_.CreateSelect(lt, b_.getInt64(-1), b_.CreateSelect(gt, b_.getInt64(1), b_.getInt64(0)));
    }
    if (name == "abs") {
      if (IsFloatLike(t)) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, argf(0));
      Value* v = arg(0);
      return b_.CreateSelect(b_.CreateICmpSLT(v, b_.getInt64(0)), SatSub(b_.getInt64(0), v), v);
    }
    Fail(&c, fmt::format("codegen does not implement the built-in `{}`", name));
  }
  // Everything else is lowered as its standard-library row says (stdlib/library.h).
  const stdlib::Function& row = *resolved;
  auto fit = [&](StatusCode code) {
    Value* v = llvm::UndefValue::get(fit_);
    v = b_.CreateInsertValue(v, b_.getInt32(static_cast<int32_t>(code)), {0});
    return b_.CreateInsertValue(v, args.empty() ? ZeroStr() : arg(0), {1});
  };
  auto status_in = [&](uint32_t mask) {
    Value* s = arg(0);
    if (s->getType() == i64_) s = b_.CreateTrunc(s, i32_);
    return b_.CreateICmpNE(b_.CreateAnd(s, b_.getInt32(mask)), b_.getInt32(0));
  };
  using stdlib::Lower;
  switch (row.lower) {
    case Lower::Call: return EmitStdNative(c, std::string(row.symbol), args);
    // Host helpers without session access (JSON parsing, HTTP) use the native ABI as is; their
    // string and list results are built in the call arena.
    case Lower::ArenaCall:
      return EmitStdNative(c, std::string(row.symbol), args, /*with_ctx=*/false,
                           /*builds_in_arena=*/true);
    // Session-facing host functions take the PolicyContext first, then the native ABI.
    case Lower::ContextCall:
      return EmitStdNative(c, std::string(row.symbol), args, /*with_ctx=*/true);
    case Lower::Floor: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, argf(0));
    case Lower::Ceil: return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, argf(0));
    case Lower::Sqrt: {
      Value* v = argf(0);
      return b_.CreateSelect(b_.CreateFCmpOLT(v, F(0.0)), F(0.0),
                             b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, v));
    }
    case Lower::Share: {
      // Volcano's helpers.Share: b == 0 → (a == 0 ? 0 : 1).
      Value* a = argf(0);
      Value* b = argf(1);
      Value* b0 = b_.CreateFCmpOEQ(b, F(0.0));
      Value* a0 = b_.CreateFCmpOEQ(a, F(0.0));
      return b_.CreateSelect(b0, b_.CreateSelect(a0, F(0.0), F(1.0)), b_.CreateFDiv(a, b));
    }
    case Lower::Now: return CtxField(kCtxNow, i64_);
    case Lower::ResourceId: return b_.CreateSExt(ResourceIdOf(arg(0)), i64_);
    case Lower::Dim: break;  // a method: EmitLibraryCall
    case Lower::Victims: {
      Value* v = llvm::UndefValue::get(victims_);
      v = b_.CreateInsertValue(v, b_.getTrue(), {0});
      return b_.CreateInsertValue(v, arg(0), {1});
    }
    case Lower::AbstainVictims: return llvm::Constant::getNullValue(victims_);
    case Lower::Invalid: {
      Value* v = llvm::UndefValue::get(validation_);
      v = b_.CreateInsertValue(v, b_.getFalse(), {0});
      v = b_.CreateInsertValue(v, arg(0), {1});
      return b_.CreateInsertValue(v, args.size() > 1 ? arg(1) : ZeroStr(), {2});
    }
    case Lower::Unschedulable: return fit(StatusCode::Unschedulable);
    case Lower::Unresolvable: return fit(StatusCode::UnschedulableAndUnresolvable);
    case Lower::FitError: return fit(StatusCode::Error);
    case Lower::FitWait: return fit(StatusCode::Wait);
    case Lower::FitSkip: return fit(StatusCode::Skip);
    case Lower::Combine: {
      // Both parts go to the runtime, which joins the reasons and picks the blocking code.
      Value* a = arg(0);
      Value* b = arg(1);
      Value* reason = Alloca(str_);
      Value* code = CallRt("kiln_rt_fit_combine", i32_,
                           {b_.CreateExtractValue(a, {0}), StrPart(b_.CreateExtractValue(a, {1}), 0),
                            StrPart(b_.CreateExtractValue(a, {1}), 1), b_.CreateExtractValue(b, {0}),
                            StrPart(b_.CreateExtractValue(b, {1}), 0),
                            StrPart(b_.CreateExtractValue(b, {1}), 1), reason},
                           true);
      Value* v = b_.CreateInsertValue(llvm::UndefValue::get(fit_), code, {0});
      return b_.CreateInsertValue(v, b_.CreateLoad(str_, reason), {1});
    }
    case Lower::AllocatedStatus: return status_in(kAllocatedStatusMask);
    case Lower::PreemptableStatus: return status_in(kPreemptableStatusMask);
    case Lower::CompletedStatus: return status_in(kCompletedStatusMask);
    case Lower::ScheduledStatus: return status_in(kScheduledStatusMask);
  }
  Fail(&c, fmt::format("codegen does not implement `{}` yet", name));
}

// Standard-library natives (stdlib/library.h C ABI): scalars by value, a string or list as two
// parameters (data, size), a type-variable parameter as (pointer, size), Resource and list
// results through a trailing out pointer, T? results as a bool return with the payload through
// a trailing out pointer.
Value* Lowering::EmitStdNative(const ast::Call& c, const std::string& sym,
                               const std::vector<const ast::Expr*>& args, bool with_ctx,
                               bool builds_in_arena) {
  std::vector<Value*> vals;
  if (with_ctx) vals.push_back(ictx_);
  const Type* t = c.type;
  // Parameters of the row's type variable `T` (a generic row such as append).
  const stdlib::Function* row = StdRow(c);
  const std::vector<bool> by_pointer =
      row ? sema::TypeVariableParams(row->signature) : std::vector<bool>{};
  // A native whose result is a scalar keeps no Resource it is given, so a sum or difference of
  // Resources passed to it (proportion's `less_equal_in(allocated[q] + task.resreq, ...)`) is
  // built in a stack temporary instead of the call arena: no allocation, no fault frame.
  const bool scalar_result = IsKind(t, TypeKind::Bool) || IsKind(t, TypeKind::Float) ||
                             IsKind(t, TypeKind::Int);
  for (const ast::Expr* const& a : args) {
    const auto* bin = ast::As<ast::Binary>(a);
    if (scalar_result && !with_ctx && bin &&
        (bin->op == ast::BinaryOp::Add || bin->op == ast::BinaryOp::Sub) &&
        IsKind(bin->left->type, TypeKind::Resource) &&
        IsKind(bin->right->type, TypeKind::Resource)) {
      Value* l = Emit(*bin->left);
      Value* r = Emit(*bin->right);
      Value* tmp = Alloca(llvm::ArrayType::get(i64_, sizeof(Resource) / 8));
      CallRt(bin->op == ast::BinaryOp::Add ? "kiln_rt_res_add_to" : "kiln_rt_res_sub_to",
             b_.getVoidTy(), {tmp, l, r});
      vals.push_back(tmp);
      continue;
    }
    Value* v = Emit(*a);
    // The value converted to the parameter's type the checker resolved (int → float).
    const size_t i = static_cast<size_t>(&a - args.data());
    if (i < c.std_params.size()) v = Coerce(v, a->type, c.std_params[i]);
    if (i < by_pointer.size() && by_pointer[i]) {
      // A type-variable parameter (`T`): a pointer to the value and its size.
      Value* slot = Alloca(v->getType());
      b_.CreateStore(v, slot);
      vals.push_back(slot);
      vals.push_back(b_.getInt64(static_cast<int64_t>(SizeOf(v->getType()))));
    } else if (v->getType() == str_) {
      vals.push_back(StrPart(v, 0));
      vals.push_back(StrPart(v, 1));
    } else {
      vals.push_back(v);
    }
  }
  // Optional results come back through an out pointer: bool fn(args..., T* out). Natives
  // allocate only when they build maps/resources (the JSON helpers).
  if (IsKind(t, TypeKind::Optional) && !IsPtrOptional(t)) {
    bool allocates = builds_in_arena || t->elem->kind == TypeKind::Map ||
                     t->elem->kind == TypeKind::Resource;
    Value* out = Alloca(Ty(t->elem));
    b_.CreateStore(ZeroOf(t->elem), out);
    vals.push_back(out);
    Value* present = CallRt(sym, i1_, vals, allocates);
    Value* o = llvm::UndefValue::get(Ty(t));
    o = b_.CreateInsertValue(o, present, {0});
    return b_.CreateInsertValue(o, b_.CreateLoad(Ty(t->elem), out), {1});
  }
  if (IsKind(t, TypeKind::Resource)) {
    Value* out = CallRt("kiln_rt_res_new", ptr_, {}, true);
    vals.push_back(out);
    CallRt(sym, b_.getVoidTy(), vals, true);
    return out;
  }
  if (IsKind(t, TypeKind::List)) {
    // A list result comes back through an out pointer (split, victim_order), built in the call
    // arena.
    Value* out = Alloca(list_);
    vals.push_back(out);
    CallRt(sym, b_.getVoidTy(), vals, true);
    return b_.CreateLoad(list_, out);
  }
  if (IsKind(t, TypeKind::Bool)) return CallRt(sym, i1_, vals);
  if (!t || IsKind(t, TypeKind::Void)) {
    CallRt(sym, b_.getVoidTy(), vals);
    return llvm::UndefValue::get(i1_);
  }
  return CallRt(sym, Ty(t), vals, builds_in_arena);
}

}  // namespace kiln::codegen
