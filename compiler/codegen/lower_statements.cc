// Statements: blocks, let, if / if let, return, break / continue, assignments (with in-place
// list appends and state updates), and the counted loops `for` lowers to.
#include <fmt/format.h>

#include "compiler/codegen/iteration_scratch.h"
#include "compiler/codegen/lowering.h"
#include "compiler/passes/walk.h"
#include "stdlib/runtime_support.h"

namespace kiln::codegen {

void Lowering::EmitBlock(const ast::Block& block) {
  for (const ast::StmtPtr& s : block.stmts) {
    if (b_.GetInsertBlock()->getTerminator()) break;  // code after return/break (checker rejects)
    EmitStmt(*s);
  }
}

void Lowering::EmitStmt(const ast::Stmt& s) {
  switch (s.kind) {
    case ast::NodeKind::Block: EmitBlock(static_cast<const ast::Block&>(s)); return;
    case ast::NodeKind::Let: {
      const auto& let = static_cast<const ast::Let&>(s);
      Value* v = Coerce(Emit(*let.value), let.value->type, let.local->type);
      if (let.local->is_mutable) v = OwnedMap(v, let.local->type, *let.value);
      b_.CreateStore(v, LocalSlot(let.local.get()));
      return;
    }
    case ast::NodeKind::Assign: EmitAssign(static_cast<const ast::Assign&>(s)); return;
    case ast::NodeKind::If: {
      const auto& st = static_cast<const ast::If&>(s);
      Value* cond = Emit(*st.cond);
      EmitIfElse(cond, [&] { EmitBlock(*st.then); },
                 st.otherwise ? std::function<void()>([&] { EmitStmt(*st.otherwise); })
                              : std::function<void()>());
      return;
    }
    case ast::NodeKind::IfLet: {
      const auto& st = static_cast<const ast::IfLet&>(s);
      Value* opt = Emit(*st.value);
      const Type* ot = st.value->type;
      EmitIfElse(
          IsPresent(ot, opt),
          [&] {
            b_.CreateStore(Coerce(Payload(ot, opt), ot->elem, st.local->type),
                           LocalSlot(st.local.get()));
            EmitBlock(*st.then);
          },
          st.otherwise ? std::function<void()>([&] { EmitStmt(*st.otherwise); })
                       : std::function<void()>());
      return;
    }
    case ast::NodeKind::For: EmitFor(static_cast<const ast::For&>(s)); return;
    case ast::NodeKind::Return: {
      const auto& r = static_cast<const ast::Return&>(s);
      Value* value =
          r.value ? Coerce(Emit(*r.value), r.value->type, current_->result_type) : nullptr;
      // Leaving every enclosing loop: give back what each reserved and did not run.
      for (auto [reserved, index] : budget_loops_) budget_.Refund(b_, reserved, index);
      if (value)
        b_.CreateRet(value);
      else
        b_.CreateRetVoid();
      return;
    }
    case ast::NodeKind::Break:
      if (loops_.empty()) Fail(&s, "break outside a loop");
      b_.CreateBr(loops_.back().second);
      return;
    case ast::NodeKind::Continue:
      if (loops_.empty()) Fail(&s, "continue outside a loop");
      b_.CreateBr(loops_.back().first);
      return;
    case ast::NodeKind::ExprStmt:
      Emit(*static_cast<const ast::ExprStmt&>(s).value);
      return;
    default: Fail(&s, fmt::format("cannot lower statement {}", ast::KindName(s.kind)));
  }
}

void Lowering::EmitIfElse(Value* cond, const std::function<void()>& then,
                          const std::function<void()>& otherwise) {
  BasicBlock* tb = BasicBlock::Create(ctx_, "then", fn_);
  BasicBlock* eb = otherwise ? BasicBlock::Create(ctx_, "else", fn_) : nullptr;
  BasicBlock* done = BasicBlock::Create(ctx_, "endif", fn_);
  b_.CreateCondBr(cond, tb, eb ? eb : done);
  b_.SetInsertPoint(tb);
  then();
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
  if (eb) {
    b_.SetInsertPoint(eb);
    otherwise();
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
}

void Lowering::EmitAssign(const ast::Assign& a) {
  const ast::Expr& target = *a.target;
  auto combine = [&](Value* old, const Type* t) -> Value* {
    Value* rhs = Emit(*a.value);
    if (a.op == ast::AssignOp::Set) return Coerce(rhs, a.value->type, t);
    ast::BinaryOp op = a.op == ast::AssignOp::Add   ? ast::BinaryOp::Add
                       : a.op == ast::AssignOp::Sub ? ast::BinaryOp::Sub
                       : a.op == ast::AssignOp::Mul ? ast::BinaryOp::Mul
                                                    : ast::BinaryOp::Div;
    return Arith(op, old, t, rhs, a.value->type, t, &a);
  };
  if (const auto* name = ast::As<ast::NameRef>(&target)) {
    const Type* t = target.type;
    if (name->ref == ast::NameKind::Local) {
      if (const ast::Expr* elem = AppendedElement(a, name->local)) {
        EmitLocalAppend(name->local, *elem);
        return;
      }
      Value* slot = LocalSlot(name->local);
      Value* old = a.op == ast::AssignOp::Set ? nullptr : b_.CreateLoad(Ty(t), slot);
      Value* nv = combine(old, t);
      if (a.op == ast::AssignOp::Set) nv = OwnedMap(nv, t, *a.value);
      b_.CreateStore(nv, slot);
      return;
    }
    if (name->ref == ast::NameKind::State) {
      Value* slot = StatePtr(name->state_decl);
      Value* old = a.op == ast::AssignOp::Set ? nullptr : b_.CreateLoad(Ty(t), slot);
      Value* nv = combine(old, t);
      if (IsKind(t, TypeKind::Resource) && in_place_.vars.count(name->state_decl)) {
        // Loaded again: the right-hand side may have stored into this state.
        b_.CreateStore(StoreResourceInPlace(b_.CreateLoad(ptr_, slot), nv), slot);
        return;
      }
      b_.CreateStore(Persist(nv, t), slot);
      return;
    }
    Fail(&a, "assignment to something that is not a variable or state");
  }
  if (const auto* index = ast::As<ast::Index>(&target);
      index && IsKind(index->operand->type, TypeKind::Resource)) {
    // Resources are immutable values that may be shared (a view's field, a state entry), so a
    // dimension assignment copies, sets, and stores the copy back where the resource was: a
    // variable, or a record field held in one (`r.req["cpu"] = 2`).
    const ast::Expr& holder = *index->operand;
    Value* old = Emit(holder);
    Value* name = Emit(*index->index);
    Value* id = ResourceIdOf(name);
    Value* arena = RootIsState(holder)
                       ? CtxField(kCtxSessionArena, ptr_)
                       : static_cast<Value*>(llvm::ConstantPointerNull::get(ptr_));
    const Type* ft = FloatType();
    Value* cur = ResourceDimAt(old, id);
    Value* nv = combine(cur, ft);
    Value* copy = CallRt("kiln_rt_res_copy", ptr_, {old, arena}, true);
    CallRt("kiln_rt_res_set", b_.getVoidTy(), {copy, id, nv});
    StoreToPlace(a, holder, copy);
    return;
  }
  if (const auto* index = ast::As<ast::Index>(&target)) {
    const Type* mt = index->operand->type;
    if (!IsKind(mt, TypeKind::Map)) Fail(&a, "indexed assignment into a non-map");
    Value* map = EmitMapForWrite(*index->operand);
    Value* key = Emit(*index->index);
    const Type* vt = mt->elem;
    llvm::Type* vty = Ty(vt);
    Value* old = nullptr;
    Value* slot = nullptr;
    if (a.op != ast::AssignOp::Set) {
      slot = MapSlot(mt, map, key, index->index->type, /*insert=*/true, vt);
      old = b_.CreateLoad(vty, slot);
    }
    Value* nv = combine(old, vt);
    // A slot pointer moves when its map grows, and evaluating the right-hand side may grow this
    // map (a policy function writing state inserts). Then the slot is looked up again after the
    // right-hand side, right before the store; otherwise the first lookup is still valid.
    if (!slot || CallsPolicyFunction(*a.value))
      slot = MapSlot(mt, map, key, index->index->type, /*insert=*/true, vt);
    bool into_state = RootIsState(*index->operand);
    if (const auto* m = ast::As<ast::NameRef>(index->operand.get());
        m && m->ref == ast::NameKind::State && in_place_.vars.count(m->state_decl)) {
      b_.CreateStore(StoreResourceInPlace(b_.CreateLoad(ptr_, slot), nv), slot);
      return;
    }
    // A map stored into an entry is the entry's own, as one bound to a `var` is.
    nv = into_state                    ? Persist(nv, vt)
         : a.op == ast::AssignOp::Set ? OwnedMap(nv, vt, *a.value)
                                      : nv;
    b_.CreateStore(nv, slot);
    return;
  }
  if (ast::As<ast::Select>(&target)) {
    const Type* t = target.type;
    Value* old = a.op == ast::AssignOp::Set ? nullptr : Emit(target);
    Value* nv = combine(old, t);
    nv = RootIsState(target) ? Persist(nv, t)
         : a.op == ast::AssignOp::Set ? OwnedMap(nv, t, *a.value)
                                      : nv;
    StoreToPlace(a, target, nv);
    return;
  }
  Fail(&a, "unsupported assignment target");
}

// Stores `v` into a variable (`x`) or into a record field held in one (`r.f`, `r.a.b`): a record
// is a value held in its variable, so the variable gets the record with the field replaced. The
// record is loaded here, after the right-hand side, which may have stored into the variable.
// `v` is already what the place keeps (persisted for state).
void Lowering::StoreToPlace(const ast::Assign& a, const ast::Expr& place, Value* v) {
  std::vector<unsigned> path;
  const ast::Expr* root = &place;
  while (const auto* sel = ast::As<ast::Select>(root)) {
    const Type* rt = sel->operand->type;
    int idx = !IsKind(rt, TypeKind::Record) ? -1
              : sel->record_field >= 0       ? sel->record_field
                                             : rt->record->FieldIndex(sel->field);
    if (idx < 0) Fail(&a, fmt::format("cannot assign to `.{}`", sel->field));
    path.insert(path.begin(), static_cast<unsigned>(idx));
    root = sel->operand.get();
  }
  const auto* var = ast::As<ast::NameRef>(root);
  if (!var || (var->ref != ast::NameKind::Local && var->ref != ast::NameKind::State))
    Fail(&a, "only a variable or a record field held in one can be assigned here");
  Value* slot = var->ref == ast::NameKind::State ? StatePtr(var->state_decl) : LocalSlot(var->local);
  if (path.empty()) {
    b_.CreateStore(v, slot);
    return;
  }
  Value* record = b_.CreateLoad(Ty(root->type), slot);
  b_.CreateStore(b_.CreateInsertValue(record, v, path), slot);
}

// Maps are values (docs/language.md, "Values have value semantics"), but a map value is a
// pointer, and so is every map inside a record or a list: `var m2 = m; m2[k] = v;` wrote into
// `m`, and `var r2 = r; r2.m[k] = v;` into `r.m`. A `var` bound or assigned to a value a write
// could reach a map through gets a copy of every such map, at every depth (a write into
// `m2[a][b]` goes into the inner map). An empty literal and a `{...}` literal whose values hold
// no map are fresh already; a `let` cannot be written through, so it is not copied either.
Value* Lowering::OwnedMap(Value* v, const Type* t, const ast::Expr& source) {
  if (!ReachesMap(t)) return v;
  if (const auto* lit = ast::As<ast::MapLit>(&source);
      lit && (lit->entries.empty() || !ReachesMap(t->elem)))
    return v;
  if (const auto* lit = ast::As<ast::ListLit>(&source); lit && lit->elements.empty()) return v;
  return CopyMapsDeep(v, t);
}

// Whether a write through a variable of type t can land in a map: `x[k] = v` on a map,
// `x.f[k] = v` on a record, `x[i][k] = v` on a list.
bool Lowering::ReachesMap(const Type* t) {
  if (!t) return false;
  switch (t->kind) {
    case TypeKind::Map: return true;
    case TypeKind::List: return ReachesMap(t->elem);
    case TypeKind::Record:
      for (const ast::RecordField& f : t->record->fields)
        if (ReachesMap(f.declared.resolved)) return true;
      return false;
    default: return false;
  }
}

Value* Lowering::CopyMapsDeep(Value* v, const Type* t) {
  switch (t->kind) {
    case TypeKind::Map:
      return EmitChoice(b_.CreateIsNotNull(v), t, [&]() -> Value* {
        Value* copy = CallRt("kiln_rt_map_copy", ptr_, {v, llvm::ConstantPointerNull::get(ptr_)},
                             true);
        if (ReachesMap(t->elem)) {
          llvm::Type* vt = Ty(t->elem);
          ForRange(MapSize(copy), [&](Value* i) {
            Value* at = CallRt("kiln_rt_map_value_at", ptr_, {copy, i});
            b_.CreateStore(CopyMapsDeep(b_.CreateLoad(vt, at), t->elem), at);
          });
        }
        return copy;
      }, [&]() -> Value* { return v; });
    case TypeKind::Record: {
      const auto& fields = t->record->fields;
      for (unsigned i = 0; i < fields.size(); ++i) {
        const Type* ft = fields[i].declared.resolved;
        if (ReachesMap(ft))
          v = b_.CreateInsertValue(v, CopyMapsDeep(b_.CreateExtractValue(v, {i}), ft), {i});
      }
      return v;
    }
    case TypeKind::List: {
      // A new buffer of the same elements, each copied.
      llvm::Type* et = Ty(t->elem);
      Value* n = b_.CreateExtractValue(v, {1});
      Value* bytes = b_.CreateMul(n, b_.getInt64(SizeOf(et)));
      Value* items = CallRt("kiln_rt_alloc", ptr_, {bytes}, true);
      Value* from = b_.CreateExtractValue(v, {0});
      ForRange(n, [&](Value* i) {
        Value* e = b_.CreateLoad(et, b_.CreateGEP(et, from, i));
        b_.CreateStore(CopyMapsDeep(e, t->elem), b_.CreateGEP(et, items, i));
      });
      return b_.CreateInsertValue(v, items, {0});
    }
    default: return v;
  }
}

// The element `e` of `x = x + [e]`, `x += [e]` or `x = append(x, e)` when `x` is the local list
// `local`, else null.
const ast::Expr* Lowering::AppendedElement(const ast::Assign& a, const ast::Local* local) {
  if (!IsKind(a.target->type, TypeKind::List)) return nullptr;
  const ast::Expr* list = a.value.get();
  auto is_self = [&](const ast::Expr* e) {
    const auto* self = ast::As<ast::NameRef>(e);
    return self && self->ref == ast::NameKind::Local && self->local == local;
  };
  if (const auto* call = ast::As<ast::Call>(list); call && a.op == ast::AssignOp::Set) {
    // `x = append(x, e)` and `x = x.append(e)`: the same append as `x = x + [e]`.
    const stdlib::Function* row = StdRow(*call);
    if (!row || row->name != "append") return nullptr;
    std::vector<const ast::Expr*> args;
    if (call->receiver) args.push_back(call->receiver.get());
    for (const auto& arg : call->args) args.push_back(arg.get());
    return args.size() == 2 && is_self(args[0]) ? args[1] : nullptr;
  }
  if (a.op == ast::AssignOp::Set) {
    const auto* bin = ast::As<ast::Binary>(list);
    if (!bin || bin->op != ast::BinaryOp::Add) return nullptr;
    const auto* self = ast::As<ast::NameRef>(bin->left.get());
    if (!self || self->ref != ast::NameKind::Local || self->local != local) return nullptr;
    list = bin->right.get();
  } else if (a.op != ast::AssignOp::Add) {
    return nullptr;
  }
  const auto* one = ast::As<ast::ListLit>(list);
  return one && one->elements.size() == 1 ? one->elements[0].get() : nullptr;
}

// `x = x + [e]` on a local list: x's builder (items, length, capacity — the buffer x last grew
// into and how far) lets the append store in place, without a call, while x still holds exactly
// what its last append made of that buffer. Any other list value sharing the buffer is a shorter
// prefix of it, so writing past the builder's length changes nothing anyone can see; a local
// assigned anything else no longer matches its builder and grows into a fresh buffer.
void Lowering::EmitLocalAppend(const ast::Local* local, const ast::Expr& elem) {
  const Type* lt = local->type;
  llvm::Type* et = Ty(lt->elem);
  Value* slot = LocalSlot(local);
  Value* builder = ListBuilder(local);
  Value* cur = b_.CreateLoad(list_, slot);
  Value* items = b_.CreateExtractValue(cur, {0});
  Value* n = b_.CreateExtractValue(cur, {1});
  Value* e = OwnedMap(Coerce(Emit(elem), elem.type, lt->elem), lt->elem, elem);
  Value* own_items = b_.CreateLoad(ptr_, b_.CreateStructGEP(builder_ty_, builder, 0));
  Value* own_n = b_.CreateLoad(i64_, b_.CreateStructGEP(builder_ty_, builder, 1));
  Value* cap = b_.CreateLoad(i64_, b_.CreateStructGEP(builder_ty_, builder, 2));
  Value* in_place = b_.CreateAnd(b_.CreateAnd(b_.CreateICmpEQ(items, own_items), b_.CreateICmpEQ(n, own_n)),
                                 b_.CreateICmpSLT(n, cap));
  Value* n1 = b_.CreateAdd(n, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
  EmitIfElse(
      in_place,
      [&] {
        b_.CreateStore(e, b_.CreateGEP(et, items, n));
        b_.CreateStore(n1, b_.CreateStructGEP(builder_ty_, builder, 1));
        b_.CreateStore(b_.CreateInsertValue(cur, n1, {1}), slot);
      },
      [&] {
        Value* tmp = Alloca(et);
        b_.CreateStore(e, tmp);
        Value* out = Alloca(list_);
        CallRt("kiln_rt_list_grow", b_.getVoidTy(),
               {items, n, tmp, b_.getInt64(SizeOf(et)), builder, out}, true);
        b_.CreateStore(b_.CreateLoad(list_, out), slot);
      });
}

// The builder of a local list in this function: zeroed at entry, so it matches no list.
Value* Lowering::ListBuilder(const ast::Local* local) {
  Value*& b = list_builders_[{fn_, local}];
  if (b) return b;
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  b = entry.CreateAlloca(builder_ty_);
  entry.CreateStore(llvm::Constant::getNullValue(builder_ty_), b);
  return b;
}

bool Lowering::RootIsState(const ast::Expr& e) {
  if (const auto* n = ast::As<ast::NameRef>(&e)) return n->ref == ast::NameKind::State;
  if (const auto* i = ast::As<ast::Index>(&e)) return RootIsState(*i->operand);
  return false;
}

// Whether evaluating `e` may call a policy function (which may insert into a state map and so
// move the slots of that map). Standard-library natives never write policy maps.
bool Lowering::CallsPolicyFunction(const ast::Expr& e) {
  bool calls = false;
  passes::Walker w;
  w.on_expr = [&](ast::Expr* x) {
    if (const auto* c = ast::As<ast::Call>(x); c && c->call == ast::CallKind::Function)
      calls = true;
  };
  w.Expr(const_cast<ast::Expr*>(&e));
  return calls;
}

// A counted loop with break/continue targets exposed to the body. It reserves its iterations
// from the loop budget on entry (LoopBudget::Reserve: at most `n`, fewer when the budget is
// short) and gives back the rest when the body leaves early (a break here, a return in
// EmitStmt through budget_loops_).
void Lowering::LoopN(Value* n, const std::function<void(Value*)>& body, BasicBlock** continue_to,
                     BasicBlock** break_to) {
  Value* reserved = budget_.Reserve(b_, n);
  auto [head, bodyb, step, exit, brk, done] =
      Blocks(fn_, {"for", "for.body", "for.step", "for.exit", "for.break", "for.done"});
  llvm::PHINode* i = EnterCountedLoop(b_, head, bodyb, exit, reserved);
  if (continue_to) *continue_to = step;
  if (break_to) *break_to = brk;
  budget_loops_.emplace_back(reserved, i);
  body(i);
  budget_loops_.pop_back();
  if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(step);
  b_.SetInsertPoint(step);
  i->addIncoming(b_.CreateAdd(i, b_.getInt64(1)), step);
  b_.CreateBr(head);
  b_.SetInsertPoint(exit);
  budget_.AfterLoop(b_, done);  // reports the budget spent when this loop was cut short
  if (llvm::pred_empty(brk)) {
    brk->eraseFromParent();
  } else {
    b_.SetInsertPoint(brk);
    budget_.Refund(b_, reserved, i);
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
}

void Lowering::EmitFor(const ast::For& f) {
  // A view's own list or map (node.taints, task.images, labels) is short, so what its iterations
  // leave behind is bounded by it; such loops run per examined node in predicates and scorers,
  // where marking the arena would cost more than it gives back.
  const bool view_source = ViewListField(*f.source) || StringMapField(*f.source);
  if (view_source || !IterationsLeaveNothing(f, &Lowering::NeedsPersist)) {
    EmitIterateWithLoops(*f.source, [&](Value* first, Value* second) {
      b_.CreateStore(first, LocalSlot(f.first.get()));
      if (f.second) b_.CreateStore(second, LocalSlot(f.second.get()));
      EmitBlock(*f.body);
    });
    return;
  }
  // Nothing an iteration builds outlives it (iteration_scratch.h): the first iteration marks the
  // call arena, after the source was built, and each iteration rewinds to that mark at its end or
  // `continue`. {Arena*, Arena::Mark}; the arena stays null until marked, and when the arena is
  // not a call's (kiln_rt_loop_mark).
  llvm::Type* mark_ty = llvm::ArrayType::get(i64_, 4);
  Value* mark = Alloca(mark_ty);
  b_.CreateStore(llvm::ConstantPointerNull::get(ptr_), mark);
  BasicBlock* cont = nullptr;
  BasicBlock* brk = nullptr;
  EmitIterate(
      *f.source,
      [&](Value* first, Value* second) {
        b_.CreateStore(first, LocalSlot(f.first.get()));
        if (f.second) b_.CreateStore(second, LocalSlot(f.second.get()));
        auto [top, marking, body, rewind] =
            Blocks(fn_, {"iter.top", "iter.mark", "iter.body", "iter.rewind"});
        b_.CreateBr(top);
        b_.SetInsertPoint(body);
        const uint64_t sites_before = allocating_sites_;
        loops_.emplace_back(rewind, brk);
        EmitBlock(*f.body);
        loops_.pop_back();
        if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(rewind);
        const bool allocates = allocating_sites_ != sites_before;
        b_.SetInsertPoint(top);
        if (allocates) {
          Value* unmarked = b_.CreateIsNull(b_.CreateLoad(ptr_, mark));
          b_.CreateCondBr(unmarked, marking, body);
          b_.SetInsertPoint(marking);
          CallRt("kiln_rt_loop_mark", b_.getVoidTy(), {mark});
        }
        b_.CreateBr(body);
        if (!allocates || llvm::pred_empty(marking)) marking->eraseFromParent();
        b_.SetInsertPoint(rewind);
        if (allocates) {
          // Only an iteration that allocated calls out: the arena's bytes in use differ from the
          // mark's.
          auto [rewinding, next] = Blocks(fn_, {"iter.rewinding", "iter.next"});
          Value* arena = b_.CreateLoad(ptr_, mark);
          Value* marked = b_.CreateLoad(i64_, b_.CreateConstGEP2_32(mark_ty, mark, 0, 1));
          BasicBlock* check = BasicBlock::Create(ctx_, "iter.check", fn_);
          b_.CreateCondBr(b_.CreateIsNull(arena), next, check);
          b_.SetInsertPoint(check);
          Value* used = b_.CreateLoad(
              i64_, b_.CreateConstGEP1_64(i8_, arena, Arena::BytesInUseOffset()));
          b_.CreateCondBr(b_.CreateICmpEQ(used, marked), next, rewinding);
          b_.SetInsertPoint(rewinding);
          CallRt("kiln_rt_loop_rewind", b_.getVoidTy(), {mark});
          b_.CreateBr(next);
          b_.SetInsertPoint(next);
        }
      },
      &cont, &brk);
}

void Lowering::EmitIterateWithLoops(const ast::Expr& source,
                                    const std::function<void(Value*, Value*)>& body) {
  BasicBlock* cont = nullptr;
  BasicBlock* brk = nullptr;
  EmitIterate(
      source,
      [&](Value* a, Value* b) {
        loops_.emplace_back(cont, brk);
        body(a, b);
        loops_.pop_back();
      },
      &cont, &brk);
}

}  // namespace kiln::codegen
