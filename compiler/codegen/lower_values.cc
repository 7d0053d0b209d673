// Values: zero values, optionals, the language's implicit conversions, and copying values into
// the session arena when a handler stores them in state.
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"

namespace kiln::codegen {

Value* Lowering::ZeroOf(const Type* t) {
  switch (t->kind) {
    case TypeKind::Resource: return EmptyResource();
    case TypeKind::Map: return NewMap(t);
    case TypeKind::TaskStatus:
      return b_.getInt32(static_cast<uint32_t>(TaskStatus::Unknown));
    case TypeKind::Validation:
      return llvm::ConstantStruct::get(validation_, {b_.getTrue(), ZeroStr(), ZeroStr()});
    case TypeKind::Record: {
      Value* v = llvm::UndefValue::get(Ty(t));
      for (size_t i = 0; i < t->record->fields.size(); ++i) {
        const ast::RecordField& f = t->record->fields[i];
        Value* fv = f.default_value ? Coerce(Emit(*f.default_value), f.default_value->type,
                                             f.declared.resolved)
                                    : ZeroOf(f.declared.resolved);
        v = b_.CreateInsertValue(v, fv, {static_cast<unsigned>(i)});
      }
      return v;
    }
    default: return llvm::Constant::getNullValue(Ty(t));
  }
}

llvm::Constant* Lowering::ZeroStr() { return llvm::Constant::getNullValue(str_); }
                                  
                                  Value* Lowering::EmptyResource() {
  if (!empty_resource_) {
    // kiln::Resource{}: present = cpu|memory, every value 0 (runtime/resource.h layout).
    auto* arr = llvm::ArrayType::get(f64_, kMaxResources);
    auto* ty = llvm::StructType::get(ctx_, {i32_, i32_, arr});
    auto* init = llvm::ConstantStruct::get(
        ty, {b_.getInt32(Resource::kBaseMask), b_.getInt32(0), llvm::ConstantAggregateZero::get(arr)});
    empty_resource_ = new llvm::GlobalVariable(m_, ty, true, llvm::GlobalValue::PrivateLinkage,
                                               init, "kiln.empty_resource");
    empty_resource_->setAlignment(llvm::Align(8));
  }
  return empty_resource_;
}

Value* Lowering::Str(std::string_view s) {
  if (s.empty()) return ZeroStr();
  llvm::Constant* data = b_.CreateGlobalStringPtr(llvm::StringRef(s.data(), s.size()), "str");
  return llvm::ConstantStruct::get(str_, {data, b_.getInt64(static_cast<int64_t>(s.size()))});
}

Value* Lowering::NewMap(const Type* t) {
  // Tuple keys are stored as their encoding (lower_tuples.cc), a string.
  int32_t key_kind =
      IsKind(t->key, TypeKind::String) || IsKind(t->key, TypeKind::Tuple) ? 1 : 0;
  auto size = static_cast<int32_t>(SizeOf(Ty(t->elem)));
  if (int32_t off = ViewIndexOffset(t->key); off >= 0)
    return CallRt("kiln_rt_map_new_view", ptr_,
                  {b_.getInt32(size), b_.getInt32(off), b_.getInt32(in_state_init_ ? 1 : 0)},
                  true);
  return CallRt("kiln_rt_map_new", ptr_, {b_.getInt32(key_kind), b_.getInt32(size)}, true);
}

// Where a map key's view keeps its dense index (runtime/abi.h), or -1 for keys that are not
// views of the cluster: maps keyed by these keep a dense table (stdlib/runtime_internal.h, KMap).
int32_t Lowering::ViewIndexOffset(const Type* key) {
  if (!key) return -1;
  switch (key->kind) {
    case TypeKind::Task: return static_cast<int32_t>(kTaskIndexOffset);
    case TypeKind::Job: return static_cast<int32_t>(kJobIndexOffset);
    case TypeKind::Node: return static_cast<int32_t>(kNodeIndexOffset);
    case TypeKind::Queue: return static_cast<int32_t>(kQueueIndexOffset);
    default: return -1;
  }
}

Value* Lowering::MakeOptional(const Type* opt, Value* payload) {
  if (IsPtrOptional(opt)) return payload;
  Value* v = llvm::UndefValue::get(Ty(opt));
  v = b_.CreateInsertValue(v, b_.getTrue(), {0});
  return b_.CreateInsertValue(v, payload, {1});
}

Value* Lowering::NoneOf(const Type* opt) { return llvm::Constant::getNullValue(Ty(opt)); }
                        
                        Value* Lowering::IsPresent(const Type* opt, Value* v) {
  if (IsPtrOptional(opt)) return b_.CreateIsNotNull(v);
  return b_.CreateExtractValue(v, {0});
}

Value* Lowering::Payload(const Type* opt, Value* v) {
  if (IsPtrOptional(opt)) return v;
  return b_.CreateExtractValue(v, {1});
}

// Converts a value of type `from` to `to` where the language converts implicitly.
Value* Lowering::Coerce(Value* v, const Type* from, const Type* to) {
  if (!from || !to || from == to) return v;
  if (to->kind == TypeKind::Optional) {
    if (from->kind == TypeKind::None) return NoneOf(to);
    if (from->kind == TypeKind::Optional) {
      if (IsPtrOptional(from) == IsPtrOptional(to) && Ty(from) == Ty(to)) return v;
      Fail(nullptr, fmt::format("cannot convert {} to {}", from->Name(), to->Name()));
    }
    return MakeOptional(to, Coerce(v, from, to->elem));
  }
  if (IsFloatLike(to) && from->kind == TypeKind::Int) return b_.CreateSIToFP(v, f64_);
  if (IsFloatLike(to) && IsFloatLike(from)) return v;
  if (IsIntLike(to) && IsIntLike(from)) return v;
  if (to->kind == TypeKind::List && from->kind == TypeKind::List) return v;  // e.g. [] literal
  if (to->kind == TypeKind::Map && from->kind == TypeKind::Map) return v;
  if (Ty(from) == Ty(to)) return v;
  Fail(nullptr, fmt::format("cannot convert {} to {}", from->Name(), to->Name()));
}

// Whether a value of type `t` may point into the call arena.
bool Lowering::NeedsPersist(const Type* t) {
  switch (t->kind) {
    case TypeKind::String:
    case TypeKind::Resource:
    case TypeKind::Map:
    case TypeKind::List:
    case TypeKind::Record: return true;
    case TypeKind::Optional: return !t->elem->IsView() && NeedsPersist(t->elem);
    case TypeKind::Tuple:
      for (const Type* e : t->elems)
        if (NeedsPersist(e)) return true;
      return false;
    default: return false;
  }
}

// Copies a value into the session arena so it outlives the handler call (state stores).
Value* Lowering::Persist(Value* v, const Type* t) {
  switch (t->kind) {
    case TypeKind::String: {
      Value* arena = CtxField(kCtxSessionArena, ptr_);
      return CallStrOut("kiln_rt_str_copy",
                        {b_.CreateExtractValue(v, {0}), b_.CreateExtractValue(v, {1}), arena},
                        true);
    }
    case TypeKind::Resource:
      return CallRt("kiln_rt_res_copy", ptr_, {v, CtxField(kCtxSessionArena, ptr_)}, true);
    case TypeKind::Map: {
      Value* copy = CallRt("kiln_rt_map_copy", ptr_, {v, CtxField(kCtxSessionArena, ptr_)}, true);
      // Values are copied byte-wise; those that point into the call arena are persisted too.
      if (NeedsPersist(t->elem)) {
        llvm::Type* vt = Ty(t->elem);
        Value* n = MapSize(copy);
        ForRange(n, [&](Value* i) {
          Value* slot = CallRt("kiln_rt_map_value_at", ptr_, {copy, i});
          b_.CreateStore(Persist(b_.CreateLoad(vt, slot), t->elem), slot);
        });
      }
      return copy;
    }
    case TypeKind::List: {
      // Copy the items array into the session arena (element values are copied shallowly
      // except strings and resources, which are persisted one by one).
      llvm::Type* et = Ty(t->elem);
      Value* n = b_.CreateExtractValue(v, {1});
      Value* bytes = b_.CreateMul(n, b_.getInt64(SizeOf(et)));
      Value* prev = CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)});
      Value* items = CallRt("kiln_rt_alloc", ptr_, {bytes}, true);
      CallRt("kiln_rt_set_arena", ptr_, {prev});
      b_.CreateMemCpy(items, llvm::MaybeAlign(8), b_.CreateExtractValue(v, {0}),
                      llvm::MaybeAlign(8), bytes);
      Value* out = b_.CreateInsertValue(v, items, {0});
      if (NeedsPersist(t->elem)) {
        ForRange(n, [&](Value* i) {
          Value* p = b_.CreateGEP(et, items, i);
          b_.CreateStore(Persist(b_.CreateLoad(et, p), t->elem), p);
        });
      }
      return out;
    }
    case TypeKind::Optional:
      if (IsPtrOptional(t)) return v;
      return b_.CreateInsertValue(v, Persist(b_.CreateExtractValue(v, {1}), t->elem), {1});
    case TypeKind::Tuple: {
      Value* out = v;
      for (size_t i = 0; i < t->elems.size(); ++i) {
        unsigned idx = static_cast<unsigned>(i);
        out = b_.CreateInsertValue(out, Persist(b_.CreateExtractValue(v, {idx}), t->elems[i]),
                                   {idx});
      }
      return out;
    }
    case TypeKind::Record: {
      Value* out = v;
      for (size_t i = 0; i < t->record->fields.size(); ++i) {
        unsigned idx = static_cast<unsigned>(i);
        out = b_.CreateInsertValue(
            out, Persist(b_.CreateExtractValue(v, {idx}), t->record->fields[i].declared.resolved),
            {idx});
      }
      return out;
    }
    default: return v;
  }
}

// The Resource to keep in a state slot that holds `old` after storing `v` (state_in_place.h):
// `old` itself, overwritten, unless it is pinned or the shared empty resource.
Value* Lowering::StoreResourceInPlace(Value* old, Value* v) {
  return CallRt("kiln_rt_res_store", ptr_, {old, v, EmptyResource(), CtxField(kCtxSessionArena, ptr_)},
                true);
}

}  // namespace kiln::codegen
