// Tuples: `(a, b)` literals, `k.0`, comparisons, and the map key a tuple becomes.
//
// A tuple value is an LLVM struct of its elements. A map keyed by tuples is a string-keyed KMap
// (stdlib/runtime_internal.h): the key is the tuple's elements written one after the other, each
// in a fixed form for its type, so that two tuples are the same key exactly when their elements
// are equal, and iterating the map decodes the key back into the tuple:
//   int    8 bytes, the value's bits
//   float  8 bytes, the bits of `x + 0.0` (so -0.0 and 0.0 are one key)
//   bool   1 byte, 0 or 1
//   string 8 bytes of length, then the bytes
// The element types are known statically, so no tag is needed, and a string's length prefix
// keeps `("a|b", "c")` and `("a", "b|c")` apart, which the `a + "|" + b` keys policies built
// before could not. The map's insertion order (its iteration order) is unchanged by the encoding.
#include "compiler/codegen/lowering.h"

namespace kiln::codegen {

namespace {

// Bytes of a fixed-size element, or of a string's length prefix.
uint64_t FixedBytes(const Type* t) { return IsKind(t, TypeKind::Bool) ? 1 : 8; }

}  // namespace

llvm::Type* Lowering::TupleTy(const Type* t) {
  std::vector<llvm::Type*> elems;
  for (const Type* e : t->elems) elems.push_back(Ty(e));
  return llvm::StructType::get(ctx_, elems);
}

Value* Lowering::EmitTupleLit(const ast::TupleLit& lit) {
  Value* v = llvm::UndefValue::get(Ty(lit.type));
  for (size_t i = 0; i < lit.elements.size(); ++i) {
    const ast::Expr& e = *lit.elements[i];
    v = b_.CreateInsertValue(v, Coerce(Emit(e), e.type, lit.type->elems[i]),
                             {static_cast<unsigned>(i)});
  }
  return v;
}

Value* Lowering::TupleKey(Value* tuple, const Type* t) {
  // 1. The key's length: the fixed parts, plus every string's bytes.
  uint64_t fixed = 0;
  Value* total = nullptr;
  for (size_t i = 0; i < t->elems.size(); ++i) {
    fixed += FixedBytes(t->elems[i]);
    if (!IsKind(t->elems[i], TypeKind::String)) continue;
    Value* len = b_.CreateExtractValue(tuple, {static_cast<unsigned>(i), 1u});
    total = total ? b_.CreateAdd(total, len) : len;
  }
  Value* size = total ? b_.CreateAdd(total, b_.getInt64(fixed)) : b_.getInt64(fixed);
  // 2. The bytes, element by element, in the call arena.
  Value* buf = CallRt("kiln_rt_alloc", ptr_, {size}, true);
  Value* at = b_.getInt64(0);
  for (size_t i = 0; i < t->elems.size(); ++i) {
    const Type* et = t->elems[i];
    Value* v = b_.CreateExtractValue(tuple, {static_cast<unsigned>(i)});
    Value* p = b_.CreateGEP(i8_, buf, at);
    if (IsKind(et, TypeKind::String)) {
      Value* len = b_.CreateExtractValue(v, {1});
      b_.CreateAlignedStore(len, p, llvm::Align(1));
      b_.CreateMemCpy(b_.CreateGEP(i8_, p, b_.getInt64(8)), llvm::Align(1),
                      b_.CreateExtractValue(v, {0}), llvm::Align(1), len);
      at = b_.CreateAdd(at, b_.CreateAdd(len, b_.getInt64(8)));
      continue;
    }
    if (IsKind(et, TypeKind::Bool)) v = b_.CreateZExt(v, i8_);
    if (IsKind(et, TypeKind::Float)) v = b_.CreateFAdd(v, llvm::ConstantFP::get(f64_, 0.0));
    b_.CreateAlignedStore(v, p, llvm::Align(1));
    at = b_.CreateAdd(at, b_.getInt64(FixedBytes(et)));
  }
  Value* key = b_.CreateInsertValue(llvm::UndefValue::get(str_), buf, {0});
  return b_.CreateInsertValue(key, size, {1});
}

Value* Lowering::TupleFromKey(Value* key, const Type* t) {
  Value* buf = b_.CreateExtractValue(key, {0});
  Value* v = llvm::UndefValue::get(Ty(t));
  Value* at = b_.getInt64(0);
  for (size_t i = 0; i < t->elems.size(); ++i) {
    const Type* et = t->elems[i];
    Value* p = b_.CreateGEP(i8_, buf, at);
    Value* e;
    if (IsKind(et, TypeKind::String)) {
      Value* len = b_.CreateAlignedLoad(i64_, p, llvm::Align(1));
      e = b_.CreateInsertValue(llvm::UndefValue::get(str_), b_.CreateGEP(i8_, p, b_.getInt64(8)),
                               {0});
      e = b_.CreateInsertValue(e, len, {1});
      at = b_.CreateAdd(at, b_.CreateAdd(len, b_.getInt64(8)));
    } else if (IsKind(et, TypeKind::Bool)) {
      e = b_.CreateICmpNE(b_.CreateAlignedLoad(i8_, p, llvm::Align(1)), b_.getInt8(0));
      at = b_.CreateAdd(at, b_.getInt64(1));
    } else {
      e = b_.CreateAlignedLoad(Ty(et), p, llvm::Align(1));
      at = b_.CreateAdd(at, b_.getInt64(8));
    }
    v = b_.CreateInsertValue(v, e, {static_cast<unsigned>(i)});
  }
  return v;
}

// Key `i` of a map in its iteration order, as the key type's value.
Value* Lowering::MapKeyAt(Value* map, Value* i, const Type* key_type) {
  if (IsKind(key_type, TypeKind::String))
    return CallStrOut("kiln_rt_map_key_s", {map, i}, false);
  if (IsKind(key_type, TypeKind::Tuple))
    return TupleFromKey(CallStrOut("kiln_rt_map_key_s", {map, i}, false), key_type);
  return KeyFromInt(CallRt("kiln_rt_map_key_i", i64_, {map, i}), key_type);
}

// `==` and `!=`: every element equal. `<`, `<=`, `>`, `>=`: lexicographic, the first element
// that differs decides (bools: false first); `a > b` is `b < a`.
Value* Lowering::CompareTuples(ast::BinaryOp op, Value* l, Value* r, const Type* t,
                               const ast::Node* at) {
  using Op = ast::BinaryOp;
  auto elem = [&](Op o, Value* a, Value* b, size_t i) {
    unsigned idx = static_cast<unsigned>(i);
    return Compare(o, b_.CreateExtractValue(a, {idx}), t->elems[i],
                   b_.CreateExtractValue(b, {idx}), t->elems[i], at);
  };
  size_t n = t->elems.size();
  if (op == Op::Eq || op == Op::Ne) {
    Value* eq = elem(Op::Eq, l, r, 0);
    for (size_t i = 1; i < n; ++i) eq = b_.CreateAnd(eq, elem(Op::Eq, l, r, i));
    return op == Op::Eq ? eq : b_.CreateNot(eq);
  }
  if (op == Op::Gt) return CompareTuples(Op::Lt, r, l, t, at);
  if (op == Op::Ge) return CompareTuples(Op::Le, r, l, t, at);
  // From the last element back: less(i) = l[i] < r[i] or (l[i] == r[i] and less(i + 1)).
  Value* less = elem(op, l, r, n - 1);
  for (size_t i = n - 1; i-- > 0;)
    less = b_.CreateOr(elem(Op::Lt, l, r, i), b_.CreateAnd(elem(Op::Eq, l, r, i), less));
  return less;
}

}  // namespace kiln::codegen
