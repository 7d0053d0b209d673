// Collections: iterating lists, maps, views' lists and `range`; building lists; `xs.get(i)`,
// `contains`; comprehensions.
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"

namespace kiln::codegen {

// The built-in `range(n)` / `range(a, b)`, or null.
const ast::Call* Lowering::RangeCall(const ast::Expr& e) {
  const auto* call = ast::As<ast::Call>(&e);
  if (!call || call->callee != "range" || call->receiver || call->call != ast::CallKind::Builtin)
    return nullptr;
  return call->args.size() == 1 || call->args.size() == 2 ? call : nullptr;
}

// {first value, count}: `range(n)` is 0..n-1, `range(a, b)` is a..b-1; empty when b <= a.
std::pair<Value*, Value*> Lowering::RangeBounds(const ast::Call& call) {
  Value* lo = call.args.size() == 2 ? Emit(*call.args[0]) : b_.getInt64(0);
  Value* hi = Emit(*call.args.back());
  Value* n = b_.CreateSelect(b_.CreateICmpSGT(hi, lo), b_.CreateSub(hi, lo), b_.getInt64(0));
  return {lo, n};
}

// Iterates a collection: `body(first, second)` gets the element (list) or key/value (map).
void Lowering::EmitIterate(const ast::Expr& source,
                           const std::function<void(Value*, Value*)>& body, BasicBlock** continue_to,
                           BasicBlock** break_to) {
  const Type* st = source.type;
  // `range(n)`, `range(a, b)`: counted without building the list.
  if (const ast::Call* call = RangeCall(source)) {
    auto [lo, n] = RangeBounds(*call);
    LoopN(n, [&](Value* i) { body(b_.CreateAdd(lo, i), nullptr); }, continue_to, break_to);
    return;
  }
  // A view's label/annotation map: iterate through the host's _size/_at accessors.
  if (const AbiFieldInfo* f = StringMapField(source)) {
    Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
    std::string fn(f->host);
    Value* n = CallRt(fn + "_size", i64_, {obj});
    LoopN(n, [&](Value* i) {
      Value* k = Alloca(str_);
      Value* v = Alloca(str_);
      CallRt(fn + "_at", b_.getVoidTy(), {obj, i, k, v});
      body(b_.CreateLoad(str_, k), b_.CreateLoad(str_, v));
    }, continue_to, break_to);
    return;
  }
  // A view's record or string list (node.taints, task.tolerations, term.values): iterate through
  // the host's _size/_at accessors instead of first copying the list into the call arena, as
  // using it as a value does. The views are read-only during a call, so the walk sees the
  // same elements.
  if (const AbiFieldInfo* f = ViewListField(source)) {
    Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
    std::string fn(f->host);
    llvm::Type* et = f->kind == FieldKind::StringList ? static_cast<llvm::Type*>(str_) : ptr_;
    Value* n = CallRt(fn + "_size", i64_, {obj});
    LoopN(n, [&](Value* i) { body(CallRt(fn + "_at", et, {obj, i}), nullptr); }, continue_to,
          break_to);
    return;
  }
  if (IsKind(st, TypeKind::List)) {
    Value* list = Emit(source);
    Value* items = b_.CreateExtractValue(list, {0});
    Value* n = b_.CreateExtractValue(list, {1});
    llvm::Type* et = Ty(st->elem);
    LoopN(n, [&](Value* i) { body(b_.CreateLoad(et, b_.CreateGEP(et, items, i)), nullptr); },
          continue_to, break_to);
    return;
  }
  if (IsKind(st, TypeKind::Map)) {
    Value* map = Emit(source);
    Value* n = MapSize(map);
    llvm::Type* vt = Ty(st->elem);
    LoopN(n, [&](Value* i) {
      Value* key = MapKeyAt(map, i, st->key);
      Value* val = b_.CreateLoad(vt, CallRt("kiln_rt_map_value_at", ptr_, {map, i}));
      body(key, val);
    }, continue_to, break_to);
    return;
  }
  Fail(&source, fmt::format("cannot iterate over {}", st ? st->Name() : "?"));
}

Value* Lowering::BuildList(const Type* elem, const std::vector<Value*>& values) {
  llvm::Type* et = Ty(elem);
  if (values.empty()) return llvm::Constant::getNullValue(list_);
  Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.getInt64(SizeOf(et) * values.size())}, true);
  for (size_t i = 0; i < values.size(); ++i)
    b_.CreateStore(values[i], b_.CreateConstGEP1_64(et, items, i));
  Value* list = llvm::UndefValue::get(list_);
  list = b_.CreateInsertValue(list, items, {0});
  return b_.CreateInsertValue(list, b_.getInt64(static_cast<int64_t>(values.size())), {1});
}

Value* Lowering::ListConcat(Value* l, Value* r, const Type* t) {
  llvm::Type* et = Ty(t->elem);
  uint64_t es = SizeOf(et);
  Value* ln = b_.CreateExtractValue(l, {1});
  Value* rn = b_.CreateExtractValue(r, {1});
  Value* n = b_.CreateAdd(ln, rn);
  Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(es))}, true);
  b_.CreateMemCpy(items, llvm::MaybeAlign(8), b_.CreateExtractValue(l, {0}), llvm::MaybeAlign(8),
                  b_.CreateMul(ln, b_.getInt64(es)));
  b_.CreateMemCpy(b_.CreateGEP(et, items, ln), llvm::MaybeAlign(8),
                  b_.CreateExtractValue(r, {0}), llvm::MaybeAlign(8),
                  b_.CreateMul(rn, b_.getInt64(es)));
  Value* out = llvm::UndefValue::get(list_);
  out = b_.CreateInsertValue(out, items, {0});
  return b_.CreateInsertValue(out, n, {1});
}

// xs.get(i): the element when 0 <= i < len(xs), else none.
Value* Lowering::EmitListGet(const ast::Call& c) {
  const ast::Expr& recv = *c.receiver;
  const Type* lt = recv.type;
  const Type* t = c.type;
  if (!IsKind(lt, TypeKind::List) || !IsKind(t, TypeKind::Optional))
    Fail(&c, "`get` on a list needs a list receiver and an optional result");
  Value* list = Emit(recv);
  Value* i = Emit(*c.args.at(0));
  Value* n = b_.CreateExtractValue(list, {1});
  Value* ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, n));
  llvm::Type* et = Ty(lt->elem);
  // A list of optionals gives its element as is (T?? is T?).
  bool wrap = !IsKind(lt->elem, TypeKind::Optional);
  return EmitChoice(ok, t, [&] {
    Value* v = b_.CreateLoad(et, b_.CreateGEP(et, b_.CreateExtractValue(list, {0}), i));
    return wrap ? MakeOptional(t, v) : v;
  }, [&] { return NoneOf(t); });
}

// `x in xs` and `xs.contains(x)`: whether some element equals x, stopping at the first.
Value* Lowering::EmitListContains(const ast::Expr& list, const ast::Expr& item, const ast::Node* at) {
  const Type* ct = list.type;
  if (!IsKind(ct, TypeKind::List)) Fail(at, "`contains` needs a list");
  Value* x = Coerce(Emit(item), item.type, ct->elem);
  Value* found = Alloca(i1_);
  b_.CreateStore(b_.getFalse(), found);
  BasicBlock* brk = nullptr;
  EmitIterate(list, [&](Value* el, Value*) {
    Value* eq = Compare(ast::BinaryOp::Eq, el, ct->elem, x, ct->elem, at);
    EmitIfElse(eq, [&] {
      b_.CreateStore(b_.getTrue(), found);
      b_.CreateBr(brk);
    }, {});
  }, nullptr, &brk);
  return b_.CreateLoad(i1_, found);
}

Value* Lowering::EmitComprehension(const ast::Comprehension& c) {
  auto bind = [&](Value* a, Value* b) {
    b_.CreateStore(a, LocalSlot(c.first.get()));
    if (c.second) b_.CreateStore(b, LocalSlot(c.second.get()));
  };
  auto filtered = [&](const std::function<void()>& body) {
    if (c.filter) {
      Value* keep = Emit(*c.filter);
      EmitIfElse(keep, body, {});
    } else {
      body();
    }
  };
  switch (c.aggregate) {
    case ast::Aggregate::List: {
      const Type* et = c.type->elem;
      llvm::Type* ety = Ty(et);
      Value* cap = SourceSize(*c.source);
      Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(cap, b_.getInt64(SizeOf(ety)))}, true);
      Value* keys = nullptr;
      bool string_key = c.order_key && IsKind(c.order_key->type, TypeKind::String);
      if (c.order_key)
        keys = CallRt("kiln_rt_alloc", ptr_,
                      {b_.CreateMul(cap, b_.getInt64(string_key ? SizeOf(str_) : 8))}, true);
      Value* n = Alloca(i64_);
      b_.CreateStore(b_.getInt64(0), n);
      EmitIterate(*c.source, [&](Value* a, Value* b) {
        bind(a, b);
        filtered([&] {
          Value* i = b_.CreateLoad(i64_, n);
          b_.CreateStore(Coerce(Emit(*c.element), c.element->type, et), b_.CreateGEP(ety, items, i));
          if (keys) {
            Value* k = Emit(*c.order_key);
            if (string_key) {
              b_.CreateStore(k, b_.CreateGEP(str_, keys, i));
            } else {
              b_.CreateStore(ToSortKey(k, c.order_key->type), b_.CreateGEP(f64_, keys, i));
            }
          }
          b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1)), n);
        });
      }, nullptr, nullptr);
      Value* count = b_.CreateLoad(i64_, n);
      if (keys)
        CallRt("kiln_rt_sort", b_.getVoidTy(),
               {items, count, b_.getInt64(SizeOf(ety)), keys, b_.getInt32(string_key ? 1 : 0),
                b_.getInt1(c.descending)});
      Value* list = llvm::UndefValue::get(list_);
      list = b_.CreateInsertValue(list, items, {0});
      return b_.CreateInsertValue(list, count, {1});
    }
    case ast::Aggregate::Count: {
      Value* n = Alloca(i64_);
      b_.CreateStore(b_.getInt64(0), n);
      EmitIterate(*c.source, [&](Value* a, Value* b) {
        bind(a, b);
        filtered([&] {
          if (c.element && IsKind(c.element->type, TypeKind::Bool) && c.element->kind != ast::NodeKind::NameRef) {
            // count(cond for x in xs): counts where the element is true.
            Value* e = Emit(*c.element);
            b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, n), b_.CreateZExt(e, i64_)), n);
          } else {
            b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, n), b_.getInt64(1)), n);
          }
        });
      }, nullptr, nullptr);
      return b_.CreateLoad(i64_, n);
    }
    case ast::Aggregate::Any:
    case ast::Aggregate::All: {
      bool any = c.aggregate == ast::Aggregate::Any;
      Value* acc = Alloca(i1_);
      b_.CreateStore(b_.getInt1(!any), acc);
      BasicBlock* brk = nullptr;
      EmitIterate(*c.source, [&](Value* a, Value* b) {
        bind(a, b);
        filtered([&] {
          Value* e = Emit(*c.element);
          EmitIfElse(any ? e : b_.CreateNot(e), [&] {
            b_.CreateStore(b_.getInt1(any), acc);
            b_.CreateBr(brk);
          }, {});
        });
      }, nullptr, &brk);
      return b_.CreateLoad(i1_, acc);
    }
    case ast::Aggregate::Sum: {
      const Type* rt = c.type;
      Value* acc = Alloca(Ty(rt));
      b_.CreateStore(IsKind(rt, TypeKind::Resource) ? CallRt("kiln_rt_res_new", ptr_, {}, true)
                                                    : ZeroOf(rt),
                     acc);
      EmitIterate(*c.source, [&](Value* a, Value* b) {
        bind(a, b);
        filtered([&] {
          Value* e = Coerce(Emit(*c.element), c.element->type, rt);
          Value* old = b_.CreateLoad(Ty(rt), acc);
          if (IsKind(rt, TypeKind::Resource)) {
            // The accumulator is this sum's own fresh Resource, invisible to anything else
            // until the sum returns: add in place instead of allocating a Resource per element.
            CallRt("kiln_rt_res_add_into", b_.getVoidTy(), {old, e});
          } else {
            b_.CreateStore(Arith(ast::BinaryOp::Add, old, rt, e, rt, rt, &c), acc);
          }
        });
      }, nullptr, nullptr);
      return b_.CreateLoad(Ty(rt), acc);
    }
    case ast::Aggregate::Max:
    case ast::Aggregate::Min: {
      bool is_max = c.aggregate == ast::Aggregate::Max;
      const Type* rt = c.type;
      Value* acc = Alloca(Ty(rt));
      Value* seen = Alloca(i1_);
      b_.CreateStore(ZeroOf(rt), acc);
      b_.CreateStore(b_.getFalse(), seen);
      EmitIterate(*c.source, [&](Value* a, Value* b) {
        bind(a, b);
        filtered([&] {
          Value* e = Coerce(Emit(*c.element), c.element->type, rt);
          Value* old = b_.CreateLoad(Ty(rt), acc);
          Value* better = Compare(is_max ? ast::BinaryOp::Gt : ast::BinaryOp::Lt, e, rt, old, rt, &c);
          Value* take = b_.CreateOr(b_.CreateNot(b_.CreateLoad(i1_, seen)), better);
          b_.CreateStore(b_.CreateSelect(take, e, old), acc);
          b_.CreateStore(b_.getTrue(), seen);
        });
      }, nullptr, nullptr);
      return b_.CreateLoad(Ty(rt), acc);
    }
  }
  Fail(&c, "unknown aggregate");
}

Value* Lowering::ToSortKey(Value* k, const Type* t) {
  if (k->getType() == f64_) return k;
  if (k->getType() == i1_ || k->getType() == i32_) return b_.CreateUIToFP(k, f64_);
  return b_.CreateSIToFP(k, f64_);
}

Value* Lowering::SourceSize(const ast::Expr& source) {
  if (const ast::Call* call = RangeCall(source)) return RangeBounds(*call).second;
  if (const AbiFieldInfo* f = StringMapField(source)) {
    Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
    return CallRt(std::string(f->host) + "_size", i64_, {obj});
  }
  if (const AbiFieldInfo* f = ViewListField(source)) {
    Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
    return CallRt(std::string(f->host) + "_size", i64_, {obj});
  }
  if (IsKind(source.type, TypeKind::Map)) return MapSize(Emit(source));
  return b_.CreateExtractValue(Emit(source), {1});
}

}  // namespace kiln::codegen
