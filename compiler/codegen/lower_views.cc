// Views: reading fields of tasks, jobs, nodes and queues through runtime/abi.h (loads or host
// accessors), the session's fields, indexing, and resource literals.
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"

namespace kiln::codegen {

namespace {

std::string_view ViewOwner(const Type* t) {
  switch (t->kind) {
    case TypeKind::Shape: return t->shape;
    case TypeKind::Task: return "Task";
    case TypeKind::Job: return "Job";
    case TypeKind::Node: return "Node";
    case TypeKind::Queue: return "Queue";
    default: return "";
  }
}

}  // namespace

// The shape-table entry when `e` is `view.taints`-like (a RecordList or StringList field of a
// view or shape, read through _size/_at host calls).
const AbiFieldInfo* Lowering::ViewListField(const ast::Expr& e) {
  const auto* sel = ast::As<ast::Select>(&e);
  if (!sel || !IsViewPtr(sel->operand->type) || IsKind(sel->operand->type, TypeKind::Session))
    return nullptr;
  if (FindAbiField(ViewOwner(sel->operand->type), sel->field)) return nullptr;
  const AbiFieldInfo* f = FindAbiShapeField(ViewOwner(sel->operand->type), sel->field);
  return f && (f->kind == FieldKind::RecordList || f->kind == FieldKind::StringList) ? f
                                                                                     : nullptr;
}

// The ABI entry when `e` is `view.labels`-like (a StringMap field read through host calls).
const AbiFieldInfo* Lowering::StringMapField(const ast::Expr& e) {
  const AbiFieldInfo* f = HostMapField(e);
  return f && f->kind == FieldKind::StringMap ? f : nullptr;
}

// The same for any string-keyed host map a view has (`labels`, `node.images`): one key is looked
// up in place by the host function (`bool fn(view, key, len, V* out)`), and its size asked by
// `fn`_size, instead of copying the whole map into a policy map in the call arena.
const AbiFieldInfo* Lowering::HostMapField(const ast::Expr& e) {
  const auto* sel = ast::As<ast::Select>(&e);
  if (!sel || !IsViewPtr(sel->operand->type)) return nullptr;
  const std::string_view owner = ViewOwner(sel->operand->type);
  const AbiFieldInfo* f = FindAbiField(owner, sel->field);
  if (!f) f = FindAbiShapeField(owner, sel->field);
  return f && (f->kind == FieldKind::StringMap || f->kind == FieldKind::IntMap) ? f : nullptr;
}

llvm::Type* Lowering::HostMapValueType(const AbiFieldInfo& f) {
  return f.kind == FieldKind::IntMap ? static_cast<llvm::Type*>(i64_) : str_;
}

Value* Lowering::HostMapZero(const AbiFieldInfo& f) {
  return f.kind == FieldKind::IntMap ? static_cast<Value*>(b_.getInt64(0)) : ZeroStr();
}

Value* Lowering::EmitSelect(const ast::Select& s) {
  const Type* ot = s.operand->type;
  if (IsKind(ot, TypeKind::Session)) return EmitSessionField(s);
  if (s.tuple_element >= 0)
    return b_.CreateExtractValue(Emit(*s.operand), {static_cast<unsigned>(s.tuple_element)});
  if (IsViewPtr(ot)) {
    const AbiFieldInfo* f = FindAbiField(ViewOwner(ot), s.field);
    if (!f) f = FindAbiShapeField(ViewOwner(ot), s.field);
    if (!f) Fail(&s, fmt::format("no ABI field {}.{}", ViewOwner(ot), s.field));
    Value* obj = Emit(*s.operand);
    return LoadField(*f, obj, s.type, &s);
  }
  if (IsKind(ot, TypeKind::Record)) {
    int idx = s.record_field >= 0 ? s.record_field : ot->record->FieldIndex(s.field);
    if (idx < 0) Fail(&s, fmt::format("no field `{}`", s.field));
    return b_.CreateExtractValue(Emit(*s.operand), {static_cast<unsigned>(idx)});
  }
  std::string_view field = s.builtin_field.empty() ? std::string_view(s.field) : s.builtin_field;
  Value* v = Emit(*s.operand);
  if (IsKind(ot, TypeKind::Resource)) {
    if (field == "cpu") return ResourceDim(v, kCpu);
    if (field == "memory") return ResourceDim(v, kMemory);
    if (field == "pods") return ResourceDim(v, kPods);
    if (field == "is_empty") return CallRt("kiln_rt_res_is_empty", i1_, {v});
    if (field == "names") {
      Value* out = Alloca(list_);
      CallRt("kiln_rt_res_names", b_.getVoidTy(), {v, out}, true);
      return b_.CreateLoad(list_, out);
    }
  }
  if (IsKind(ot, TypeKind::Duration)) {
    Value* f = b_.CreateSIToFP(v, f64_);
    if (field == "seconds") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 1e9));
    if (field == "minutes") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 60e9));
    if (field == "hours") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 3600e9));
    if (field == "milliseconds") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 1e6));
    if (field == "nanoseconds") return v;
  }
  if (IsKind(ot, TypeKind::Time) && field == "unix") return b_.CreateSDiv(v, b_.getInt64(1000000000));
  if (IsKind(ot, TypeKind::Time) && field == "unix_seconds")
    return b_.CreateFDiv(b_.CreateSIToFP(v, f64_), llvm::ConstantFP::get(f64_, 1e9));
  // A quantity is held as its value in base units (docs/language.md: `quantity` `.value`).
  if (IsKind(ot, TypeKind::Quantity) && field == "value") return v;
  if (IsKind(ot, TypeKind::Fit)) {
    if (field == "code") return b_.CreateSExt(b_.CreateExtractValue(v, {0}), i64_);
    if (field == "reason") return b_.CreateExtractValue(v, {1});
  }
  if (IsKind(ot, TypeKind::Validation)) {
    if (field == "pass") return b_.CreateExtractValue(v, {0});
    if (field == "reason") return b_.CreateExtractValue(v, {1});
    if (field == "message") return b_.CreateExtractValue(v, {2});
  }
  if ((IsKind(ot, TypeKind::List) || IsKind(ot, TypeKind::String)) &&
      (field == "len" || field == "size"))
    return b_.CreateExtractValue(v, {1});
  Fail(&s, fmt::format("cannot lower field `{}` of {}", s.field, ot ? ot->Name() : "?"));
}

Value* Lowering::ResourceDim(Value* res, int id) {
  // values[id] at offset 8 + 8*id (runtime/resource.h layout).
  Value* p = b_.CreateConstGEP1_64(i8_, res, 8 + 8 * static_cast<uint64_t>(id));
  return b_.CreateLoad(f64_, p);
}

// The interned id of a resource name known only at run time. "cpu" and "memory" have the fixed
// ids kCpu and kMemory and are by far the most common names (binpack's and
// resource-strategy-fit's weights, drf's dimensions), so they are recognised inline by their
// bytes; any other name asks kiln_rt_res_id. Inlined at every use, and read-only as that host
// function is, so repeated lookups of one name merge.
Value* Lowering::ResourceIdOf(Value* name) {
  if (!res_id_fn_) {
    Function* fn = PureHelper("kiln.res_id", llvm::FunctionType::get(i32_, {ptr_, i64_}, false),
                              /*always_inline=*/true);
    llvm::IRBuilder<> b(ctx_);
    Value* p = fn->getArg(0);
    Value* n = fn->getArg(1);
    auto [entry, len3, not3, len6, is_cpu, is_memory, host] =
        Blocks(fn, {"entry", "len3", "not3", "len6", "cpu", "memory", "host"});
    // Little-endian byte images of the names.
    auto bytes = [&](llvm::IRBuilder<>& bb, int offset, llvm::Type* t) {
      return bb.CreateAlignedLoad(t, bb.CreateConstGEP1_64(i8_, p, offset), llvm::MaybeAlign(1));
    };
    b.SetInsertPoint(entry);
    b.CreateCondBr(b.CreateICmpEQ(n, b.getInt64(3)), len3, not3);
    b.SetInsertPoint(len3);  // "cpu"
    Value* cpu = b.CreateAnd(b.CreateICmpEQ(bytes(b, 0, b.getInt16Ty()), b.getInt16(0x7063)),
                             b.CreateICmpEQ(bytes(b, 2, i8_), b.getInt8('u')));
    b.CreateCondBr(cpu, is_cpu, host);
    b.SetInsertPoint(not3);
    b.CreateCondBr(b.CreateICmpEQ(n, b.getInt64(6)), len6, host);
    b.SetInsertPoint(len6);  // "memory"
    Value* mem = b.CreateAnd(b.CreateICmpEQ(bytes(b, 0, i32_), b.getInt32(0x6f6d656d)),
                             b.CreateICmpEQ(bytes(b, 4, b.getInt16Ty()), b.getInt16(0x7972)));
    b.CreateCondBr(mem, is_memory, host);
    b.SetInsertPoint(is_cpu);
    b.CreateRet(b.getInt32(kCpu));
    b.SetInsertPoint(is_memory);
    b.CreateRet(b.getInt32(kMemory));
    b.SetInsertPoint(host);
    llvm::FunctionCallee call = Rt("kiln_rt_res_id", i32_, {ptr_, i64_});
    b.CreateRet(b.CreateCall(call, {p, n}));
    res_id_fn_ = fn;
  }
  return b_.CreateCall(res_id_fn_, {StrPart(name, 0), StrPart(name, 1)});
}

// values[id] for an id known only at run time (kiln_rt_res_id of a name), as kiln_rt_res_get
// defines it but inline: an id outside 0..kMaxResources-1 (-1: the registry is full) reads 0.
// A load, not a host call, since binpack and resource-strategy-fit do this per resource per
// node.
Value* Lowering::ResourceDimAt(Value* res, Value* id) {
  Value* valid = b_.CreateICmpULT(id, b_.getInt32(kMaxResources));
  Value* slot = b_.CreateZExt(b_.CreateSelect(valid, id, b_.getInt32(0)), i64_);
  Value* offset = b_.CreateAdd(b_.getInt64(8), b_.CreateMul(slot, b_.getInt64(8)));
  Value* v = b_.CreateLoad(f64_, b_.CreateGEP(i8_, res, offset));
  return b_.CreateSelect(valid, v, llvm::ConstantFP::get(f64_, 0.0));
}

// A Derived Bool of Job (runtime/abi.h DerivedJobBool): loads of the job's counters and one
// comparison, no call.
Value* Lowering::LoadDerived(const DerivedJobBool& d, Value* job) {
  auto member = [&](size_t offset) {
    return b_.CreateLoad(i64_, b_.CreateConstGEP1_64(i8_, job, offset));
  };
  Value* sum = nullptr;
  for (size_t t : d.terms) {
    if (t == DerivedJobBool::kNoTerm) continue;
    Value* v = member(t);
    // Counters are non-negative task counts: their sum cannot wrap.
    sum = sum ? b_.CreateAdd(sum, v, "", /*HasNUW=*/true, /*HasNSW=*/true) : v;
  }
  Value* min = member(kJobMinAvailableOffset);
  switch (d.rule) {
    case DerivedJobBool::SumAtLeastMin: return b_.CreateICmpSGE(sum, min);
    case DerivedJobBool::SumBelowMin: return b_.CreateICmpSLT(sum, min);
    case DerivedJobBool::NoRoleShort:
    case DerivedJobBool::SomeRoleShort: {
      Value* skipped = b_.CreateICmpSLT(min, member(kJobTaskMinAvailableTotalOffset));
      Value* zero = b_.getInt64(0);
      Value* holds = d.rule == DerivedJobBool::NoRoleShort ? b_.CreateICmpEQ(sum, zero)
                                                            : b_.CreateICmpNE(sum, zero);
      return b_.CreateOr(skipped, holds);
    }
  }
  Fail(nullptr, "unknown derived field rule");
}

Value* Lowering::LoadField(const AbiFieldInfo& f, Value* obj, const Type* want, const ast::Node* at) {
  if (f.access == FieldAccess::Derived) return LoadDerived(*f.derived, obj);
  // A value shared between owners: the member points at it (abi.h).
  if (f.access == FieldAccess::Ref)
    return b_.CreateLoad(ptr_, b_.CreateConstGEP1_64(i8_, obj, f.offset));
  if (f.access == FieldAccess::Field) {
    Value* p = b_.CreateConstGEP1_64(i8_, obj, f.offset);
    switch (f.kind) {
      case FieldKind::Int:
      case FieldKind::Duration: return b_.CreateLoad(i64_, p);
      case FieldKind::Time: {
        Value* t = b_.CreateLoad(i64_, p);
        // 0 means "unset" (runtime/model.h): a `time?` view of the field is none then.
        if (IsKind(want, TypeKind::Optional)) {
          Value* v = llvm::UndefValue::get(Ty(want));
          v = b_.CreateInsertValue(v, b_.CreateICmpNE(t, b_.getInt64(0)), {0});
          return b_.CreateInsertValue(v, t, {1});
        }
        return t;
      }
      case FieldKind::Float: return b_.CreateLoad(f64_, p);
      case FieldKind::Bool: return b_.CreateICmpNE(b_.CreateLoad(i8_, p), b_.getInt8(0));
      case FieldKind::Resource: return p;
      case FieldKind::Task:
      case FieldKind::Job:
      case FieldKind::Node:
      case FieldKind::Queue: return b_.CreateLoad(ptr_, p);
      case FieldKind::TaskStatus:
      case FieldKind::PodGroupPhase:
      case FieldKind::QueueState: {
        Value* v = b_.CreateLoad(i32_, p);
        return Ty(want) == i64_ ? b_.CreateZExt(v, i64_) : v;
      }
      default: break;
    }
    Fail(at, fmt::format("field {}.{} has no direct load", f.owner, f.name));
  }
  std::string fn(f.host);
  switch (f.kind) {
    case FieldKind::String: return CallRt(fn, str_, {obj});
    case FieldKind::Int: return CallRt(fn, i64_, {obj});
    case FieldKind::Bool: return CallRt(fn, i1_, {obj});
    case FieldKind::Float: return CallRt(fn, f64_, {obj});
    case FieldKind::TaskStatus: {
      Value* v = CallRt(fn, i32_, {obj});
      return Ty(want) == i64_ ? b_.CreateZExt(v, i64_) : v;
    }
    case FieldKind::Resource: {
      Value* out = CallRt("kiln_rt_res_new", ptr_, {}, true);
      CallRt(fn, b_.getVoidTy(), {obj, out});
      return out;
    }
    case FieldKind::TaskList:
    case FieldKind::JobList:
    case FieldKind::QueueList: return CallRt(fn, list_, {obj});
    case FieldKind::StringMap: return MaterializeStringMap(fn, obj);
    case FieldKind::Job:
    case FieldKind::Record:
    case FieldKind::OptionalRecord: return CallRt(fn, ptr_, {obj});
    case FieldKind::OptionalInt: {
      Value* out = Alloca(i64_);
      b_.CreateStore(b_.getInt64(0), out);
      Value* present = CallRt(fn, i1_, {obj, out});
      Value* v = llvm::UndefValue::get(llvm::StructType::get(ctx_, {i1_, i64_}));
      v = b_.CreateInsertValue(v, present, {0});
      return b_.CreateInsertValue(v, b_.CreateLoad(i64_, out), {1});
    }
    case FieldKind::StringList:
    case FieldKind::RecordList: {
      // Materialised into the call arena: these lists are short (tolerations, terms, images).
      bool strings = f.kind == FieldKind::StringList;
      llvm::Type* et = strings ? static_cast<llvm::Type*>(str_) : ptr_;
      Value* n = CallRt(fn + "_size", i64_, {obj});
      Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
      ForRange(n, [&](Value* i) {
        b_.CreateStore(CallRt(fn + "_at", et, {obj, i}), b_.CreateGEP(et, items, i));
      });
      Value* list = llvm::UndefValue::get(list_);
      list = b_.CreateInsertValue(list, items, {0});
      return b_.CreateInsertValue(list, n, {1});
    }
    case FieldKind::IntMap: return MaterializeHostMap(fn, obj, i64_);
    default: break;
  }
  Fail(at, fmt::format("field {}.{} has no host accessor", f.owner, f.name));
}

// A view's string map as a policy map<string, string> (when used as a whole value).
Value* Lowering::MaterializeStringMap(const std::string& fn, Value* obj) {
  return MaterializeHostMap(fn, obj, str_);
}

// A view's string-keyed host map (`fn`_size / `fn`_at accessors) copied into a policy map whose
// values have type `vty`.
Value* Lowering::MaterializeHostMap(const std::string& fn, Value* obj, llvm::Type* vty) {
  auto value_size = static_cast<int32_t>(SizeOf(vty));
  Value* map = CallRt("kiln_rt_map_new", ptr_, {b_.getInt32(1), b_.getInt32(value_size)}, true);
  Value* n = CallRt(fn + "_size", i64_, {obj});
  ForRange(n, [&](Value* i) {
    Value* k = Alloca(str_);
    Value* v = Alloca(vty);
    CallRt(fn + "_at", b_.getVoidTy(), {obj, i, k, v});
    Value* key = b_.CreateLoad(str_, k);
    Value* inserted = Alloca(i8_);
    Value* slot = CallRt("kiln_rt_map_slot_s", ptr_,
                         {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1}),
                          inserted}, true);
    b_.CreateStore(b_.CreateLoad(vty, v), slot);
  });
  return map;
}

Value* Lowering::EmitSessionField(const ast::Select& s) {
  if (s.field == "now") return CtxField(kCtxNow, i64_);
  // The rest come from the stdlib's session table: lists by value, booleans as i1, the
  // Resource by pointer.
  for (const stdlib::SessionField& f : stdlib::SessionFields())
    if (f.name == s.field)
      return CallRt(std::string(f.symbol),
                    IsKind(s.type, TypeKind::List)   ? static_cast<llvm::Type*>(list_)
                    : IsKind(s.type, TypeKind::Bool) ? static_cast<llvm::Type*>(i1_)
                                                     : ptr_,
                    {ictx_});
  Fail(&s, fmt::format("cannot lower session.{}", s.field));
}

Value* Lowering::EmitIndex(const ast::Index& ix) {
  const Type* ot = ix.operand->type;
  if (const AbiFieldInfo* f = HostMapField(*ix.operand)) {
    Value* obj = Emit(*ast::As<ast::Select>(ix.operand.get())->operand);
    Value* k = Emit(*ix.index);
    llvm::Type* vt = HostMapValueType(*f);
    Value* out = Alloca(vt);
    b_.CreateStore(HostMapZero(*f), out);
    Value* found = CallRt(std::string(f->host), i1_,
                          {obj, b_.CreateExtractValue(k, {0}), b_.CreateExtractValue(k, {1}), out});
    Value* v = b_.CreateLoad(vt, out);
    if (IsKind(ix.type, TypeKind::Optional)) {
      Value* o = llvm::UndefValue::get(Ty(ix.type));
      o = b_.CreateInsertValue(o, found, {0});
      return b_.CreateInsertValue(o, v, {1});
    }
    return b_.CreateSelect(found, v, HostMapZero(*f));
  }
  if (IsKind(ot, TypeKind::Resource)) {
    Value* r = Emit(*ix.operand);
    Value* id;
    if (const auto* lit = ast::As<ast::StringLit>(ix.index.get())) {
      // Resource ids are interned process-wide and never reused, so a literal dimension name
      // becomes a constant offset.
      auto interned = ResourceNames::Intern(lit->value);
      if (!interned.ok()) Fail(&ix, interned.error().message);
      return ResourceDim(r, *interned);
    }
    Value* name = Emit(*ix.index);
    id = ResourceIdOf(name);
    return ResourceDimAt(r, id);
  }
  if (IsKind(ot, TypeKind::List)) {
    Value* list = Emit(*ix.operand);
    Value* i = Emit(*ix.index);
    Value* n = b_.CreateExtractValue(list, {1});
    Value* ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, n));
    llvm::Type* et = Ty(ot->elem);
    bool opt = IsKind(ix.type, TypeKind::Optional) && !IsKind(ot->elem, TypeKind::Optional);
    return EmitChoice(ok, ix.type, [&] {
      Value* v = b_.CreateLoad(et, b_.CreateGEP(et, b_.CreateExtractValue(list, {0}), i));
      return opt ? MakeOptional(ix.type, v) : v;
    }, [&] { return opt ? NoneOf(ix.type) : ZeroOf(ot->elem); });
  }
  if (IsKind(ot, TypeKind::Map)) {
    Value* m = Emit(*ix.operand);
    Value* k = Coerce(Emit(*ix.index), ix.index->type, ot->key);
    Value* slot = MapSlot(ot, m, k, ot->key, false, ot->elem);
    llvm::Type* vt = Ty(ot->elem);
    bool opt = IsKind(ix.type, TypeKind::Optional) && !IsKind(ot->elem, TypeKind::Optional);
    return EmitChoice(b_.CreateIsNotNull(slot), ix.type, [&] {
      Value* v = b_.CreateLoad(vt, slot);
      return opt ? MakeOptional(ix.type, v) : v;
    }, [&] { return opt ? NoneOf(ix.type) : ZeroOf(ot->elem); });
  }
  Fail(&ix, fmt::format("cannot index {}", ot ? ot->Name() : "?"));
}

Value* Lowering::EmitResourceLit(const ast::ResourceLit& lit) {
  Value* r = CallRt("kiln_rt_res_new", ptr_, {}, true);
  for (const ast::MapEntry& e : lit.entries) {
    std::string name;
    if (const auto* s = ast::As<ast::StringLit>(e.key.get()))
      name = s->value;
    else if (const auto* n = ast::As<ast::NameRef>(e.key.get()))
      name = n->name;
    else
      Fail(e.key.get(), "resource dimension must be a name");
    auto id = ResourceNames::Intern(name);
    if (!id.ok()) Fail(e.key.get(), id.error().message);
    Value* v = Coerce(Emit(*e.value), e.value->type, FloatType());
    // User units → Volcano units: cores → milli-cores, scalar counts → milli; memory and pods
    // are already in base units.
    if (*id == kCpu || (*id != kMemory && *id != kPods))
      v = b_.CreateFMul(v, llvm::ConstantFP::get(f64_, 1000.0));
    CallRt("kiln_rt_res_set", b_.getVoidTy(), {r, b_.getInt32(*id), v});
  }
  return r;
}

}  // namespace kiln::codegen
