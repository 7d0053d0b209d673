// Expressions: names and constants, unary and binary operators with the language's defined
// results (saturating integers, division by zero is 0), comparisons and `in`.
#include <llvm/Support/ModRef.h>
#include <fmt/format.h>

#include <limits>

#include "compiler/codegen/lowering.h"

namespace kiln::codegen {

namespace {

// Enum constants by type and name (docs/language.md "Types"); values are the runtime's.
std::optional<int64_t> NamedConstant(const Type* type, std::string_view name) {
  if (type && type->kind == TypeKind::PodGroupPhase) {
    if (auto p = ParsePodGroupPhase(name)) return static_cast<int64_t>(*p);
    return std::nullopt;
  }
  if (type && type->kind == TypeKind::QueueState) {
    if (auto q = ParseQueueState(name)) return static_cast<int64_t>(*q);
    return std::nullopt;
  }
  static const std::map<std::string_view, std::pair<TypeKind, int64_t>, std::less<>> kTable = {
      {"Pending", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Pending)}},
      {"Allocated", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Allocated)}},
      {"Pipelined", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Pipelined)}},
      {"Binding", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Binding)}},
      {"Bound", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Bound)}},
      {"Running", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Running)}},
      {"Releasing", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Releasing)}},
      {"Succeeded", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Succeeded)}},
      {"Failed", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Failed)}},
      {"Unknown", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Unknown)}},
      {"Zero", {TypeKind::Missing, 0}},
      {"Infinity", {TypeKind::Missing, 1}},
      {"permit", {TypeKind::Vote, 1}},
      {"abstain", {TypeKind::Vote, 0}},
      {"reject", {TypeKind::Vote, -1}},
  };
  auto it = kTable.find(name);
  if (it == kTable.end()) return std::nullopt;
  return it->second.second;
}

}  // namespace

Value* Lowering::Emit(const ast::Expr& e) {
  Value* v = EmitExpr(e);
  // A read of in-place state that something may hold on to (state_in_place.h).
  if (in_place_.pinning_reads.count(&e)) {
    Value* r = v;
    if (IsKind(e.type, TypeKind::Optional))
      r = IsPtrOptional(e.type) ? v : b_.CreateExtractValue(v, {1});
    CallRt("kiln_rt_res_pin", b_.getVoidTy(), {r}, /*allocates=*/true);
  }
  return v;
}

Value* Lowering::EmitExpr(const ast::Expr& e) {
  switch (e.kind) {
    case ast::NodeKind::IntLit: return b_.getInt64(static_cast<const ast::IntLit&>(e).value);
    case ast::NodeKind::FloatLit:
      return llvm::ConstantFP::get(f64_, static_cast<const ast::FloatLit&>(e).value);
    case ast::NodeKind::StringLit: return Str(static_cast<const ast::StringLit&>(e).value);
    case ast::NodeKind::BoolLit: return b_.getInt1(static_cast<const ast::BoolLit&>(e).value);
    case ast::NodeKind::DurationLit:
      return b_.getInt64(static_cast<const ast::DurationLit&>(e).value);
    case ast::NodeKind::QuantityLit:
      return llvm::ConstantFP::get(f64_, static_cast<const ast::QuantityLit&>(e).value);
    case ast::NodeKind::NoneLit:
      return IsKind(e.type, TypeKind::Optional) ? NoneOf(e.type)
                                                : llvm::ConstantPointerNull::get(ptr_);
    case ast::NodeKind::NameRef: return EmitName(static_cast<const ast::NameRef&>(e));
    case ast::NodeKind::Unary: return EmitUnary(static_cast<const ast::Unary&>(e));
    case ast::NodeKind::Binary: return EmitBinary(static_cast<const ast::Binary&>(e));
    case ast::NodeKind::Conditional: {
      const auto& c = static_cast<const ast::Conditional&>(e);
      return EmitChoice(Emit(*c.cond), e.type, [&] {
        return Coerce(Emit(*c.then), c.then->type, e.type);
      }, [&] { return Coerce(Emit(*c.otherwise), c.otherwise->type, e.type); });
    }
    case ast::NodeKind::Select: return EmitSelect(static_cast<const ast::Select&>(e));
    case ast::NodeKind::Index: return EmitIndex(static_cast<const ast::Index&>(e));
    case ast::NodeKind::Call: return EmitCall(static_cast<const ast::Call&>(e));
    case ast::NodeKind::Comprehension:
      return EmitComprehension(static_cast<const ast::Comprehension&>(e));
    case ast::NodeKind::ListLit: {
      const auto& l = static_cast<const ast::ListLit&>(e);
      std::vector<Value*> values;
      for (const ast::ExprPtr& el : l.elements)
        values.push_back(Coerce(Emit(*el), el->type, e.type->elem));
      return BuildList(e.type->elem, values);
    }
    case ast::NodeKind::MapLit: {
      const auto& ml = static_cast<const ast::MapLit&>(e);
      Value* map = NewMap(e.type);
      for (const ast::MapEntry& entry : ml.entries) {
        Value* k = Coerce(Emit(*entry.key), entry.key->type, e.type->key);
        Value* v = Coerce(Emit(*entry.value), entry.value->type, e.type->elem);
        b_.CreateStore(v, MapSlot(e.type, map, k, e.type->key, true, e.type->elem));
      }
      return map;
    }
    case ast::NodeKind::ResourceLit: return EmitResourceLit(static_cast<const ast::ResourceLit&>(e));
    case ast::NodeKind::TupleLit: return EmitTupleLit(static_cast<const ast::TupleLit&>(e));
    case ast::NodeKind::RecordLit: {
      // Start from the record's defaults, then the fields written.
      const auto& rl = static_cast<const ast::RecordLit&>(e);
      Value* v = ZeroOf(e.type);
      const ast::RecordDecl* rec = e.type->record;
      for (const ast::FieldInit& f : rl.fields) {
        int idx = f.field >= 0 ? f.field : rec->FieldIndex(f.name);
        if (idx < 0) Fail(&e, fmt::format("record {} has no field `{}`", rec->name, f.name));
        Value* fv = Coerce(Emit(*f.value), f.value->type, rec->fields[idx].declared.resolved);
        v = b_.CreateInsertValue(v, fv, {static_cast<unsigned>(idx)});
      }
      return v;
    }
    default: Fail(&e, fmt::format("cannot lower expression {}", ast::KindName(e.kind)));
  }
}

Value* Lowering::EmitChoice(Value* cond, const Type* t, const std::function<Value*()>& then,
                            const std::function<Value*()>& otherwise) {
  BasicBlock* tb = BasicBlock::Create(ctx_, "sel.then", fn_);
  BasicBlock* eb = BasicBlock::Create(ctx_, "sel.else", fn_);
  BasicBlock* done = BasicBlock::Create(ctx_, "sel.done", fn_);
  b_.CreateCondBr(cond, tb, eb);
  b_.SetInsertPoint(tb);
  Value* tv = then();
  BasicBlock* tend = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(eb);
  Value* ev = otherwise();
  BasicBlock* eend = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  llvm::PHINode* phi = b_.CreatePHI(tv->getType(), 2);
  phi->addIncoming(tv, tend);
  phi->addIncoming(ev, eend);
  return phi;
}

Value* Lowering::EmitName(const ast::NameRef& n) {
  switch (n.ref) {
    case ast::NameKind::Local: return b_.CreateLoad(Ty(n.local->type), LocalSlot(n.local));
    case ast::NameKind::Const: {
      const ast::ConstDecl* c = n.const_decl;
      return Coerce(Emit(*c->value), c->value->type, c->type ? c->type : c->value->type);
    }
    case ast::NameKind::Arg:
      return b_.CreateLoad(Ty(n.arg_decl->declared.resolved), ArgPtr(n.arg_decl));
    case ast::NameKind::State:
      return b_.CreateLoad(Ty(n.state_decl->declared.resolved), StatePtr(n.state_decl));
    case ast::NameKind::Session: return ictx_;
    case ast::NameKind::StdConstant: {
      if (IsKind(n.type, TypeKind::Fit) && n.name == "fits")
        return llvm::Constant::getNullValue(fit_);
      if (IsKind(n.type, TypeKind::Validation) && n.name == "valid") return ZeroOf(n.type);
      auto constants = stdlib::Constants();
      if (n.std_constant >= 0 && static_cast<size_t>(n.std_constant) < constants.size())
        return b_.getInt32(static_cast<int32_t>(constants[n.std_constant].value));
      if (auto c = NamedConstant(n.type, n.name)) return b_.getInt32(static_cast<int32_t>(*c));
      Fail(&n, fmt::format("unknown standard constant `{}`", n.name));
    }
    case ast::NameKind::Unresolved: Fail(&n, fmt::format("unresolved name `{}`", n.name));
  }
  Fail(&n, "bad name");
}

Value* Lowering::EmitUnary(const ast::Unary& u) {
  Value* v = Emit(*u.operand);
  if (u.op == ast::UnaryOp::Not) return b_.CreateNot(v);
  if (IsFloatLike(u.type)) return b_.CreateFNeg(Coerce(v, u.operand->type, u.type));
  return SatSub(b_.getInt64(0), v);
}

Value* Lowering::SatAdd(Value* a, Value* b) {
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, a, b);
}

Value* Lowering::SatSub(Value* a, Value* b) {
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_sat, a, b);
}

Value* Lowering::SatMul(Value* a, Value* b) {
  Value* r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, a, b);
  Value* prod = b_.CreateExtractValue(r, {0});
  Value* ovf = b_.CreateExtractValue(r, {1});
  // On overflow the sign of the true product is sign(a) xor sign(b).
  Value* neg = b_.CreateICmpSLT(b_.CreateXor(a, b), b_.getInt64(0));
  Value* sat = b_.CreateSelect(neg, b_.getInt64(std::numeric_limits<int64_t>::min()),
                               b_.getInt64(std::numeric_limits<int64_t>::max()));
  return b_.CreateSelect(ovf, sat, prod);
}

// Division and remainder by zero give 0; INT64_MIN / -1 saturates (and its remainder is 0).
Value* Lowering::SafeDiv(Value* a, Value* b, bool rem) {
  Value* zero = b_.CreateICmpEQ(b, b_.getInt64(0));
  Value* minus1 = b_.CreateICmpEQ(b, b_.getInt64(-1));
  Value* safe_b = b_.CreateSelect(b_.CreateOr(zero, minus1), b_.getInt64(1), b);
  Value* q = rem ? b_.CreateSRem(a, safe_b) : b_.CreateSDiv(a, safe_b);
  Value* neg_a = rem ? static_cast<Value*>(b_.getInt64(0)) : SatSub(b_.getInt64(0), a);
  return b_.CreateSelect(zero, b_.getInt64(0), b_.CreateSelect(minus1, neg_a, q));
}

Value* Lowering::Arith(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
                       const Type* result, const ast::Node* at) {
  if (IsKind(result, TypeKind::String) && op == ast::BinaryOp::Add) {
    return CallStrOut("kiln_rt_str_concat",
                      {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                       b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})},
                      true);
  }
  if (IsKind(result, TypeKind::List) && op == ast::BinaryOp::Add) return ListConcat(l, r, result);
  if (IsKind(result, TypeKind::Resource)) {
    if (op == ast::BinaryOp::Add) return CallRt("kiln_rt_res_add", ptr_, {l, r}, true);
    if (op == ast::BinaryOp::Sub) return CallRt("kiln_rt_res_sub", ptr_, {l, r}, true);
    if (op == ast::BinaryOp::Mul) {
      if (IsKind(lt, TypeKind::Resource))
        return CallRt("kiln_rt_res_mul", ptr_, {l, Coerce(r, rt, FloatType())}, true);
      return CallRt("kiln_rt_res_mul", ptr_, {r, Coerce(l, lt, FloatType())}, true);
    }
    if (op == ast::BinaryOp::Div) {
      Value* f = Coerce(r, rt, FloatType());
      Value* inv = b_.CreateSelect(b_.CreateFCmpOEQ(f, llvm::ConstantFP::get(f64_, 0.0)),
                                   llvm::ConstantFP::get(f64_, 0.0),
                                   b_.CreateFDiv(llvm::ConstantFP::get(f64_, 1.0), f));
      return CallRt("kiln_rt_res_mul", ptr_, {l, inv}, true);
    }
  }
  if (IsFloatLike(result) || ((IsFloatLike(lt) || IsFloatLike(rt)) && !IsIntLike(result))) {
    Value* a = IsFloatLike(lt) ? l : b_.CreateSIToFP(l, f64_);
    Value* c = IsFloatLike(rt) ? r : b_.CreateSIToFP(r, f64_);
    llvm::Constant* zero = llvm::ConstantFP::get(f64_, 0.0);
    switch (op) {
      case ast::BinaryOp::Add: return b_.CreateFAdd(a, c);
      case ast::BinaryOp::Sub: return b_.CreateFSub(a, c);
      case ast::BinaryOp::Mul: return b_.CreateFMul(a, c);
      case ast::BinaryOp::Div:
        return b_.CreateSelect(b_.CreateFCmpOEQ(c, zero), zero, b_.CreateFDiv(a, c));
      case ast::BinaryOp::Mod:
        return b_.CreateSelect(b_.CreateFCmpOEQ(c, zero), zero, b_.CreateFRem(a, c));
      default: break;
    }
  }
  if (IsIntLike(lt) && IsFloatLike(rt) && IsIntLike(result)) {
    // duration * float → duration (nanoseconds, truncated; NaN → 0, saturating).
    Value* f = b_.CreateFMul(b_.CreateSIToFP(l, f64_), r);
    if (op == ast::BinaryOp::Div) {
      llvm::Constant* zero = llvm::ConstantFP::get(f64_, 0.0);
      f = b_.CreateSelect(b_.CreateFCmpOEQ(r, zero), zero, b_.CreateFDiv(b_.CreateSIToFP(l, f64_), r));
    }
    return FloatToInt(f);
  }
  if (IsIntLike(lt) && IsIntLike(rt)) {
    switch (op) {
      case ast::BinaryOp::Add: return SatAdd(l, r);
      case ast::BinaryOp::Sub: return SatSub(l, r);
      case ast::BinaryOp::Mul: return SatMul(l, r);
      case ast::BinaryOp::Div: return SafeDiv(l, r, false);
      case ast::BinaryOp::Mod: return SafeDiv(l, r, true);
      default: break;
    }
  }
  Fail(at, fmt::format("cannot lower `{}` on {} and {}", ast::BinaryOpSpelling(op),
                       lt ? lt->Name() : "?", rt ? rt->Name() : "?"));
}

const Type* Lowering::FloatType() { return policy_.types->Float(); }
                                
                                // int(x) for floats: truncates, NaN → 0, saturates at the int bounds.
                                Value* Lowering::FloatToInt(Value* f) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64_, f64_}, {f});
}

Value* Lowering::EmitBinary(const ast::Binary& bin) {
  using Op = ast::BinaryOp;
  switch (bin.op) {
    case Op::And:
    case Op::Or: {
      Value* l = Emit(*bin.left);
      bool is_and = bin.op == Op::And;
      return EmitChoice(
          l, bin.type, [&] { return is_and ? Emit(*bin.right) : static_cast<Value*>(b_.getTrue()); },
          [&] { return is_and ? static_cast<Value*>(b_.getFalse()) : Emit(*bin.right); });
    }
    case Op::Coalesce: {
      Value* l = Emit(*bin.left);
      const Type* lt = bin.left->type;
      if (!IsKind(lt, TypeKind::Optional)) return Coerce(l, lt, bin.type);
      return EmitChoice(IsPresent(lt, l), bin.type,
                        [&] { return Coerce(Payload(lt, l), lt->elem, bin.type); },
                        [&] { return Coerce(Emit(*bin.right), bin.right->type, bin.type); });
    }
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge: return EmitCompare(bin);
    case Op::In: return EmitIn(bin);
    default: {
      if (bin.op == Op::Add && IsKind(bin.type, TypeKind::List)) {
        const auto* one = ast::As<ast::ListLit>(bin.right.get());
        if (one && one->elements.size() == 1) {
          // `xs + [e]`: amortised in-place append (kiln_rt_list_append).
          Value* l = Coerce(Emit(*bin.left), bin.left->type, bin.type);
          llvm::Type* et = Ty(bin.type->elem);
          Value* elem = Alloca(et);
          b_.CreateStore(Coerce(Emit(*one->elements[0]), one->elements[0]->type, bin.type->elem), elem);
          Value* out = Alloca(list_);
          CallRt("kiln_rt_list_append", b_.getVoidTy(),
                 {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}), elem,
                  b_.getInt64(SizeOf(et)), out},
                 true);
          return b_.CreateLoad(list_, out);
        }
      }
      Value* l = Emit(*bin.left);
      Value* r = Emit(*bin.right);
      return Arith(bin.op, l, bin.left->type, r, bin.right->type, bin.type, &bin);
    }
  }
}

Value* Lowering::EmitCompare(const ast::Binary& bin) {
  using Op = ast::BinaryOp;
  const Type* lt = bin.left->type;
  const Type* rt = bin.right->type;
  // `x == none` / `x != none`
  bool right_none = IsKind(rt, TypeKind::None) || bin.right->kind == ast::NodeKind::NoneLit;
  bool left_none = IsKind(lt, TypeKind::None) || bin.left->kind == ast::NodeKind::NoneLit;
  if (right_none || left_none) {
    const ast::Expr& opt = right_none ? *bin.left : *bin.right;
    Value* present = IsKind(opt.type, TypeKind::Optional) ? IsPresent(opt.type, Emit(opt))
                                                          : static_cast<Value*>(b_.getTrue());
    return bin.op == Op::Eq ? b_.CreateNot(present) : present;
  }
  Value* l = Emit(*bin.left);
  Value* r = Emit(*bin.right);
  return Compare(bin.op, l, lt, r, rt, &bin);
}

Value* Lowering::Compare(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
                         const ast::Node* at) {
  using Op = ast::BinaryOp;
  using P = llvm::CmpInst::Predicate;
  auto pick = [&](P eq, P ne, P lt_, P le, P gt, P ge) {
    switch (op) {
      case Op::Eq: return eq;
      case Op::Ne: return ne;
      case Op::Lt: return lt_;
      case Op::Le: return le;
      case Op::Gt: return gt;
      default: return ge;
    }
  };
  // Optional vs optional: equal when both absent, or both present with equal payloads.
  if (IsKind(lt, TypeKind::Optional) && IsKind(rt, TypeKind::Optional) &&
      (op == Op::Eq || op == Op::Ne) && !IsPtrOptional(lt)) {
    Value* lp = IsPresent(lt, l);
    Value* rp = IsPresent(rt, r);
    Value* both = b_.CreateAnd(lp, rp);
    Value* eq = EmitChoice(both, nullptr,
                           [&] { return Compare(Op::Eq, Payload(lt, l), lt->elem, Payload(rt, r), rt->elem, at); },
                           [&] { return b_.CreateICmpEQ(lp, rp); });
    return op == Op::Eq ? eq : b_.CreateNot(eq);
  }
  // Optional vs payload: equal when present and equal.
  if (IsKind(lt, TypeKind::Optional) != IsKind(rt, TypeKind::Optional) &&
      (op == Op::Eq || op == Op::Ne) && !IsPtrOptional(lt) && !IsPtrOptional(rt)) {
    bool left_opt = IsKind(lt, TypeKind::Optional);
    Value* opt = left_opt ? l : r;
    const Type* ot = left_opt ? lt : rt;
    Value* plain = left_opt ? r : l;
    const Type* pt = left_opt ? rt : lt;
    Value* present = IsPresent(ot, opt);
    Value* eq = EmitChoice(present, nullptr,
                           [&] { return Compare(Op::Eq, Payload(ot, opt), ot->elem, plain, pt, at); },
                           [&] { return static_cast<Value*>(b_.getFalse()); });
    return op == Op::Eq ? eq : b_.CreateNot(eq);
  }
  if (IsKind(lt, TypeKind::Tuple)) return CompareTuples(op, l, r, lt, at);
  if (IsFloatLike(lt) || IsFloatLike(rt)) {
    Value* a = IsFloatLike(lt) ? l : b_.CreateSIToFP(l, f64_);
    Value* c = IsFloatLike(rt) ? r : b_.CreateSIToFP(r, f64_);
    return b_.CreateFCmp(pick(P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT,
                              P::FCMP_OGE), a, c);
  }
  if (IsKind(lt, TypeKind::String) && (op == Op::Eq || op == Op::Ne)) {
    Value* eq = b_.CreateCall(StrEqFn(), {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                                          b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})});
    return op == Op::Eq ? eq : b_.CreateNot(eq);
  }
  if (IsKind(lt, TypeKind::String)) {
    Value* c = CallRt("kiln_rt_str_cmp", i32_,
                      {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                       b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})});
    return b_.CreateICmp(pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT,
                              P::ICMP_SGE), c, b_.getInt32(0));
  }
  if (IsKind(lt, TypeKind::Resource)) {
    switch (op) {
      case Op::Le: return CallRt("kiln_rt_res_less_equal", i1_, {l, r, b_.getInt32(0)});
      case Op::Lt: return CallRt("kiln_rt_res_less", i1_, {l, r, b_.getInt32(0)});
      case Op::Ge: return CallRt("kiln_rt_res_less_equal", i1_, {r, l, b_.getInt32(0)});
      case Op::Gt: return CallRt("kiln_rt_res_less", i1_, {r, l, b_.getInt32(0)});
      case Op::Eq: return CallRt("kiln_rt_res_equal", i1_, {l, r});
      case Op::Ne: return b_.CreateNot(CallRt("kiln_rt_res_equal", i1_, {l, r}));
      default: break;
    }
  }
  if (l->getType()->isPointerTy() && r->getType()->isPointerTy())
    return b_.CreateICmp(pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT,
                              P::ICMP_UGE), l, r);
  if (l->getType()->isIntegerTy() && l->getType() == r->getType()) {
    bool is_bool = l->getType() == i1_;
    return b_.CreateICmp(is_bool ? pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE,
                                        P::ICMP_UGT, P::ICMP_UGE)
                                 : pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE,
                                        P::ICMP_SGT, P::ICMP_SGE),
                         l, r);
  }
  Fail(at, fmt::format("cannot compare {} with {}", lt ? lt->Name() : "?", rt ? rt->Name() : "?"));
}

Value* Lowering::EmitIn(const ast::Binary& bin) {
  const Type* ct = bin.right->type;
  // `key in view.labels` asks the view's map in place. This must come before the general map
  // case (a view's labels have a map type too), which would copy every label into a policy map
  // per test: O(labels²) host calls and an allocation, in nodeorder's and predicates' per-node
  // loops.
  if (const AbiFieldInfo* f = HostMapField(*bin.right)) {
    Value* k = Emit(*bin.left);
    Value* obj = Emit(*ast::As<ast::Select>(bin.right.get())->operand);
    Value* out = Alloca(HostMapValueType(*f));
    return CallRt(std::string(f->host), i1_,
                  {obj, b_.CreateExtractValue(k, {0}), b_.CreateExtractValue(k, {1}), out});
  }
  if (IsKind(ct, TypeKind::Map)) {
    Value* k = Coerce(Emit(*bin.left), bin.left->type, ct->key);
    Value* m = Emit(*bin.right);
    return b_.CreateIsNotNull(MapSlot(ct, m, k, ct->key, false, ct->elem));
  }
  if (IsKind(ct, TypeKind::String)) {
    Value* s = Emit(*bin.left);
    Value* h = Emit(*bin.right);
    return CallRt("kiln_rt_str_contains", i1_,
                  {b_.CreateExtractValue(h, {0}), b_.CreateExtractValue(h, {1}),
                   b_.CreateExtractValue(s, {0}), b_.CreateExtractValue(s, {1})});
  }
  if (IsKind(ct, TypeKind::List)) return EmitListContains(*bin.right, *bin.left, &bin);
  Fail(&bin, fmt::format("cannot lower `in` on {}", ct ? ct->Name() : "?"));
}

// String equality inline: strings of different lengths differ without a call (most taint
// effects, label values and names compared in predicates), and equal lengths up to
// kInlineStrEqBytes compare bytes with memcmp, which the code generator expands into a few loads
// when one side is a literal. Longer equal lengths go to the host (kiln_rt_str_eq), which
// charges the bytes as host work before it compares, as every other builtin that walks a
// string does (issue 28): a loop of comparisons of long equal strings runs out of the call's
// host-work budget instead of walking gigabytes under the loop budget alone. Not a PureHelper:
// the charge writes the thread's budget.
Function* Lowering::StrEqFn() {
  if (str_eq_) return str_eq_;
  auto* fn = Function::Create(llvm::FunctionType::get(i1_, {ptr_, i64_, ptr_, i64_}, false),
                              Function::InternalLinkage, "kiln.str_eq", m_);
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  fn->setDoesNotThrow();
  fn->setWillReturn();
  llvm::IRBuilder<> b(ctx_);
  auto [entry, same_len, bytes, inline_bytes, host_bytes, differ, equal] = Blocks(
      fn, {"entry", "same_len", "bytes", "inline_bytes", "host_bytes", "differ", "equal"});
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateICmpEQ(fn->getArg(1), fn->getArg(3)), same_len, differ);
  b.SetInsertPoint(same_len);
  // Empty strings may have null data.
  b.CreateCondBr(b.CreateICmpSLE(fn->getArg(1), b.getInt64(0)), equal, bytes);
  b.SetInsertPoint(bytes);
  b.CreateCondBr(b.CreateICmpSGT(fn->getArg(1), b.getInt64(kInlineStrEqBytes)), host_bytes,
                 inline_bytes);
  b.SetInsertPoint(inline_bytes);
  llvm::FunctionCallee memcmp = m_.getOrInsertFunction(
      "memcmp", llvm::FunctionType::get(b.getInt32Ty(), {ptr_, ptr_, i64_}, false));
  Value* c = b.CreateCall(memcmp, {fn->getArg(0), fn->getArg(2), fn->getArg(1)});
  b.CreateRet(b.CreateICmpEQ(c, b.getInt32(0)));
  b.SetInsertPoint(host_bytes);
  llvm::FunctionCallee host = Rt("kiln_rt_str_eq", i1_, {ptr_, ptr_, i64_});
  // It reads the two strings and writes only the thread's budget and fault record, which no
  // policy code reads: loads of policy memory may still move across it.
  if (auto* host_fn = llvm::dyn_cast<Function>(host.getCallee())) {
    host_fn->setMemoryEffects(llvm::MemoryEffects::argMemOnly(llvm::ModRefInfo::Ref) |
                              llvm::MemoryEffects::inaccessibleMemOnly());
    host_fn->setDoesNotThrow();
  }
  b.CreateRet(b.CreateCall(host, {fn->getArg(0), fn->getArg(2), fn->getArg(1)}));
  b.SetInsertPoint(differ);
  b.CreateRet(b.getFalse());
  b.SetInsertPoint(equal);
  b.CreateRet(b.getTrue());
  str_eq_ = fn;
  return fn;
}

}  // namespace kiln::codegen
