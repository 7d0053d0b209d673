// Maps: the one lookup emitter (kiln.map.find_i / find_v / probe_i, JIT'd forms of KMap's
// lookup), map slots for reads and writes, and `get` / `keys` / `values`.
#include <llvm/Support/ModRef.h>
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"
#include "stdlib/runtime_support.h"

namespace kiln::codegen {

// An internal helper function the JIT'd code calls for a pure read: no throw, reads memory
// only, returns; always inlined, or never (kept out of line to keep its callers small).
Function* Lowering::PureHelper(const char* name, llvm::FunctionType* type, bool always_inline) {
  auto* fn = Function::Create(type, Function::InternalLinkage, name, m_);
  fn->addFnAttr(always_inline ? llvm::Attribute::AlwaysInline : llvm::Attribute::NoInline);
  fn->setDoesNotThrow();
  fn->setOnlyReadsMemory();
  fn->setWillReturn();
  return fn;
}

namespace {

// A KMap as the lookup helpers read it (the offsets are stdlib/runtime_support.h's).
struct MapReader {
  llvm::IRBuilder<>& b;
  llvm::PointerType* ptr;
  Value* map;
  Value* value_size;

  Value* Field(llvm::Type* t, int offset) {
    return b.CreateLoad(t, b.CreateConstGEP1_64(b.getInt8Ty(), map, offset));
  }
  Value* KeyAt(Value* keys, Value* at) {
    return b.CreateLoad(b.getInt64Ty(), b.CreateGEP(b.getInt64Ty(), keys, at));
  }
  // Bucket `at` of an index table: the entry's position + 1, or 0 when empty.
  Value* Entry(Value* table, Value* at) {
    return b.CreateLoad(b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), table, at));
  }
  void ReturnSlot(Value* at) {
    Value* values = Field(ptr, kMapValuesOffset);
    b.CreateRet(b.CreateGEP(b.getInt8Ty(), values, b.CreateMul(at, value_size)));
  }
  void ReturnNull() { b.CreateRet(llvm::ConstantPointerNull::get(ptr)); }
};

}  // namespace

// The one map-lookup emitter: KMap::FindInt (stdlib/runtime_internal.h) as JIT'd code, so that
// a lookup is a direct call the optimiser can inline and, the helpers being pure reads, merge
// (`if m[k] > x { m[k] -= 1; }` scans once; see RunO2's early CSE). Each returns the value slot
// of the key, or null:
//   kiln.map.find_i(map, key, value_size)   up to kMapLinearLimit entries (the usual per-call
//       map keyed by job or queue) a scan of the key array, inlined at every use so the value
//       size folds to a constant; past it, probe_i.
//   kiln.map.probe_i(map, key, value_size)  the open-addressing probe of the hash index instead
//       of a host call (drf's job_order does two per comparison in a 10k-entry map); kept out of
//       line so the scan stays small enough to inline.
//   kiln.map.find_v(map, key, value_size, index_offset)  find_i for a view-keyed map. Once the
//       map has a dense table (past the linear limit; a state map's from its first entry) it
//       answers first: the key's index (read from the view at `index_offset`), the table's entry
//       for it, and the key stored at that entry, which must be the key looked up; anything else
//       (no table yet, an index outside it, an empty or shared slot) goes to find_i. Always
//       inlined, so the offset and value size fold to constants.
Function* Lowering::MapLookupFn(MapLookup kind) {
  Function*& cached = map_lookup_[static_cast<size_t>(kind)];
  if (cached) return cached;
  static constexpr const char* kNames[] = {"kiln.map.find_i", "kiln.map.probe_i",
                                           "kiln.map.find_v"};
  std::vector<llvm::Type*> params{ptr_, i64_, i64_};
  if (kind == MapLookup::View) params.push_back(i64_);
  Function* fn = PureHelper(kNames[static_cast<size_t>(kind)],
                            llvm::FunctionType::get(ptr_, params, false),
                            /*always_inline=*/kind != MapLookup::Probe);
  cached = fn;
  llvm::IRBuilder<> b(ctx_);
  Value* key = fn->getArg(1);
  MapReader m{b, ptr_, fn->getArg(0), fn->getArg(2)};
  BasicBlock* entry = BasicBlock::Create(ctx_, "entry", fn);
  b.SetInsertPoint(entry);
  switch (kind) {
    case MapLookup::Scan: {
      auto [scan, loop, body, next, found, missing, hashed] =
          Blocks(fn, {"scan", "loop", "body", "next", "found", "missing", "hashed"});
      Value* size = m.Field(i64_, kMapSizeOffset);
      b.CreateCondBr(b.CreateICmpSLE(size, b.getInt64(kMapLinearLimit)), scan, hashed);
      b.SetInsertPoint(hashed);
      b.CreateRet(b.CreateCall(MapLookupFn(MapLookup::Probe), {m.map, key, m.value_size}));
      b.SetInsertPoint(scan);
      Value* keys = m.Field(ptr_, kMapIntKeysOffset);
      llvm::PHINode* i = EnterCountedLoop(b, loop, body, missing, size);
      b.CreateCondBr(b.CreateICmpEQ(m.KeyAt(keys, i), key), found, next);
      b.SetInsertPoint(next);
      i->addIncoming(b.CreateAdd(i, b.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true), next);
      b.CreateBr(loop);
      b.SetInsertPoint(found);
      m.ReturnSlot(i);
      b.SetInsertPoint(missing);
      m.ReturnNull();
      break;
    }
    case MapLookup::Probe: {
      auto [probe, occupied, hit, step, missing] =
          Blocks(fn, {"probe", "occupied", "hit", "next", "missing"});
      Value* keys = m.Field(ptr_, kMapIntKeysOffset);
      Value* index = m.Field(ptr_, kMapIndexOffset);
      Value* mask = m.Field(i64_, kMapIndexMaskOffset);
      Value* x = b.CreateMul(key, b.getInt64(static_cast<int64_t>(kMapHashMultiplier)));
      Value* h = b.CreateXor(x, b.CreateLShr(x, b.getInt64(kMapHashShift)));
      Value* first = b.CreateAnd(h, mask);
      b.CreateBr(probe);
      b.SetInsertPoint(probe);
      llvm::PHINode* bucket = b.CreatePHI(i64_, 2);
      bucket->addIncoming(first, entry);
      Value* e = m.Entry(index, bucket);
      b.CreateCondBr(b.CreateICmpEQ(e, b.getInt32(0)), missing, occupied);
      b.SetInsertPoint(occupied);
      Value* at = b.CreateSub(b.CreateSExt(e, i64_), b.getInt64(1));
      b.CreateCondBr(b.CreateICmpEQ(m.KeyAt(keys, at), key), hit, step);
      b.SetInsertPoint(step);
      bucket->addIncoming(b.CreateAnd(b.CreateAdd(bucket, b.getInt64(1)), mask), step);
      b.CreateBr(probe);
      b.SetInsertPoint(hit);
      m.ReturnSlot(at);
      b.SetInsertPoint(missing);
      m.ReturnNull();
      break;
    }
    case MapLookup::View: {
      auto [has_table, has_key, in_table, candidate, hit, generic] =
          Blocks(fn, {"has_table", "has_key", "in_table", "candidate", "hit", "generic"});
      Value* size = m.Field(i64_, kMapSizeOffset);
      Value* dense = m.Field(ptr_, kMapDenseOffset);
      b.CreateCondBr(b.CreateIsNotNull(dense), has_table, generic);
      b.SetInsertPoint(has_table);
      b.CreateCondBr(b.CreateICmpNE(key, b.getInt64(0)), has_key, generic);
      b.SetInsertPoint(has_key);
      Value* view = b.CreateIntToPtr(key, ptr_);
      Value* idx = b.CreateLoad(i64_, b.CreateGEP(i8_, view, fn->getArg(3)));
      Value* dense_size = m.Field(i64_, kMapDenseSizeOffset);
      b.CreateCondBr(b.CreateICmpULT(idx, dense_size), in_table, generic);
      b.SetInsertPoint(in_table);
      Value* at = b.CreateSub(b.CreateSExt(m.Entry(dense, idx), i64_), b.getInt64(1));
      // e == 0 (no entry) makes `at` -1, which is not below size either.
      b.CreateCondBr(b.CreateICmpULT(at, size), candidate, generic);
      b.SetInsertPoint(candidate);
      Value* keys = m.Field(ptr_, kMapIntKeysOffset);
      b.CreateCondBr(b.CreateICmpEQ(m.KeyAt(keys, at), key), hit, generic);
      b.SetInsertPoint(hit);
      m.ReturnSlot(at);
      b.SetInsertPoint(generic);
      b.CreateRet(b.CreateCall(MapLookupFn(MapLookup::Scan), {m.map, key, m.value_size}));
      break;
    }
  }
  return fn;
}

// find_v for view-keyed maps, find_i for the other int-keyed ones.
Value* Lowering::FindIntKey(const Type* mt, Value* map, Value* k, Value* value_size) {
  if (int32_t off = ViewIndexOffset(mt->key); off >= 0)
    return b_.CreateCall(MapLookupFn(MapLookup::View), {map, k, value_size, b_.getInt64(off)});
  return b_.CreateCall(MapLookupFn(MapLookup::Scan), {map, k, value_size});
}

// Slot of `key` in a map (inserting the value type's zero value when asked), or null.
Value* Lowering::MapSlot(const Type* mt, Value* map, Value* key, const Type* key_type, bool insert,
                         const Type* vt) {
  if (IsKind(mt->key, TypeKind::Tuple)) key = TupleKey(key, mt->key);
  bool string_key = IsKind(mt->key, TypeKind::String) || IsKind(mt->key, TypeKind::Tuple);
  Value* value_size = b_.getInt64(static_cast<int64_t>(SizeOf(Ty(vt))));
  if (!insert) {
    if (string_key)
      return CallRt("kiln_rt_map_find_s", ptr_,
                    {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1})});
    return FindIntKey(mt, map, KeyInt(key, key_type), value_size);
  }
  Value* inserted = Alloca(i8_);
  Value* slot = nullptr;
  if (string_key) {
    slot = CallRt("kiln_rt_map_slot_s", ptr_,
                  {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1}),
                   inserted},
                  true);
  } else {
    // Found inline, or inserted by the host (which may grow the map, so it allocates).
    Value* k = KeyInt(key, key_type);
    Value* found = FindIntKey(mt, map, k, value_size);
    b_.CreateStore(b_.getInt8(0), inserted);
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* miss = BasicBlock::Create(ctx_, "map.insert", fn_);
    BasicBlock* join = BasicBlock::Create(ctx_, "map.slot", fn_);
    b_.CreateCondBr(b_.CreateIsNull(found), miss, join);
    b_.SetInsertPoint(miss);
    Value* added = CallRt("kiln_rt_map_slot_i", ptr_, {map, k, inserted}, true);
    BasicBlock* miss_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    llvm::PHINode* phi = b_.CreatePHI(ptr_, 2);
    phi->addIncoming(found, pre);
    phi->addIncoming(added, miss_end);
    slot = phi;
  }
  // Zero-filled bytes are the zero value of every type except those with a non-null zero.
  if (vt->kind == TypeKind::Resource || vt->kind == TypeKind::Map ||
      vt->kind == TypeKind::TaskStatus || vt->kind == TypeKind::Validation ||
      vt->kind == TypeKind::Record) {
    Value* fresh = b_.CreateICmpNE(b_.CreateLoad(i8_, inserted), b_.getInt8(0));
    EmitIfElse(fresh, [&] { b_.CreateStore(ZeroOf(vt), slot); }, {});
  }
  return slot;
}

Value* Lowering::KeyInt(Value* key, const Type* key_type) {
  if (key->getType()->isPointerTy()) return b_.CreatePtrToInt(key, i64_);
  if (key->getType() == i32_) return b_.CreateZExt(key, i64_);
  if (key->getType() == i64_) return key;
  Fail(nullptr, fmt::format("unsupported map key type {}", key_type ? key_type->Name() : "?"));
}

Value* Lowering::KeyFromInt(Value* k, const Type* key_type) {
  if (IsViewPtr(key_type)) return b_.CreateIntToPtr(k, ptr_);
  if (Ty(key_type) == i32_) return b_.CreateTrunc(k, i32_);
  return k;
}

// len(m) of a policy map: its size field, read inline (a map is never null; predicates asks
// `len(evicted_on)` of every node it examines).
Value* Lowering::MapSize(Value* map) {
  return b_.CreateLoad(i64_, b_.CreateConstGEP1_64(i8_, map, kMapSizeOffset));
}

// The map an indexed assignment writes into: `m` itself, or for `m[a][b] = v` the inner map
// `m[a]`, inserted empty when missing, so that the write lands in `m` and not in a temporary
// zero value. An inner map created under state lives in the session arena, like its root.
Value* Lowering::EmitMapForWrite(const ast::Expr& e) {
  const auto* inner = ast::As<ast::Index>(&e);
  if (!inner || !IsKind(inner->operand->type, TypeKind::Map)) return Emit(e);
  Value* outer = EmitMapForWrite(*inner->operand);
  Value* key = Emit(*inner->index);
  bool in_state = RootIsState(e);
  Value* prev = in_state ? CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)})
                         : nullptr;
  Value* slot = MapSlot(inner->operand->type, outer, key, inner->index->type, /*insert=*/true,
                        e.type);
  if (prev) CallRt("kiln_rt_set_arena", ptr_, {prev});
  return b_.CreateLoad(ptr_, slot);
}

// m.get(k): the value when the key is present, else none.
Value* Lowering::EmitMapGet(const ast::Call& c) {
  const ast::Expr& recv = *c.receiver;
  const Type* t = c.type;
  if (const AbiFieldInfo* f = HostMapField(recv)) {
    Value* obj = Emit(*ast::As<ast::Select>(&recv)->operand);
    Value* k = Emit(*c.args[0]);
    llvm::Type* vt = HostMapValueType(*f);
    Value* out = Alloca(vt);
    b_.CreateStore(HostMapZero(*f), out);
    Value* found = CallRt(std::string(f->host), i1_, {obj, StrPart(k, 0), StrPart(k, 1), out});
    Value* o = llvm::UndefValue::get(Ty(t));
    o = b_.CreateInsertValue(o, found, {0});
    return b_.CreateInsertValue(o, b_.CreateLoad(vt, out), {1});
  }
  const Type* mt = recv.type;
  if (!IsKind(mt, TypeKind::Map) || !IsKind(t, TypeKind::Optional))
    Fail(&c, "`get` on a map needs a map receiver and an optional result");
  Value* m = Emit(recv);
  Value* k = Coerce(Emit(*c.args[0]), c.args[0]->type, mt->key);
  Value* slot = MapSlot(mt, m, k, mt->key, false, mt->elem);
  bool wrap = !IsKind(mt->elem, TypeKind::Optional);
  return EmitChoice(b_.CreateIsNotNull(slot), t, [&] {
    Value* v = b_.CreateLoad(Ty(mt->elem), slot);
    return wrap ? MakeOptional(t, v) : v;
  }, [&] { return NoneOf(t); });
}

// m.keys() / m.values(): a new list in the call arena, in the map's iteration order.
Value* Lowering::EmitMapKeysOrValues(const ast::Call& c, bool keys) {
  const ast::Expr& recv = *c.receiver;
  const Type* mt = recv.type;
  if (!IsKind(mt, TypeKind::Map) || !IsKind(c.type, TypeKind::List))
    Fail(&c, "`keys`/`values` need a map receiver");
  llvm::Type* et = Ty(c.type->elem);
  Value* n;
  if (const AbiFieldInfo* f = HostMapField(recv); f && f->kind == FieldKind::StringMap) {
    Value* obj = Emit(*ast::As<ast::Select>(&recv)->operand);
    n = CallRt(std::string(f->host) + "_size", i64_, {obj});
  } else {
    n = nullptr;  // taken from the map EmitIterate materialises, below
  }
  // The map is walked once to count (for a policy map, its size) and once to copy; a view's
  // label map is read in place both times.
  if (!n) {
    Value* m = Emit(recv);
    n = MapSize(m);
    Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
    llvm::Type* vt = Ty(mt->elem);
    ForRange(n, [&](Value* i) {
      Value* v;
      if (keys)
        v = MapKeyAt(m, i, mt->key);
      else
        v = b_.CreateLoad(vt, CallRt("kiln_rt_map_value_at", ptr_, {m, i}));
      b_.CreateStore(v, b_.CreateGEP(et, items, i));
    });
    Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
    return b_.CreateInsertValue(list, n, {1});
  }
  Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
  Value* at = Alloca(i64_);
  b_.CreateStore(b_.getInt64(0), at);
  EmitIterate(recv, [&](Value* k, Value* v) {
    Value* i = b_.CreateLoad(i64_, at);
    b_.CreateStore(keys ? k : v, b_.CreateGEP(et, items, i));
    b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1)), at);
  }, nullptr, nullptr);
  Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
  return b_.CreateInsertValue(list, n, {1});
}

}  // namespace kiln::codegen
