// Handlers and ABI: the C-ABI thunk around each handler body (runtime/session.h's HandlerFn<P>),
// the victim-filter fast path, state initialisation and argument defaults.
#include <fmt/format.h>
#include <llvm/IR/MDBuilder.h>

#include "compiler/codegen/lowering.h"
#include "compiler/codegen/fault_frame.h"

namespace kiln::codegen {

// The common victim rule `return victims([c for c in candidates where COND]);` marks the
// session's selection mask directly: no list is built, so no arena and no fault frame are
// needed unless COND itself allocates (then the generic thunk is used). Returns false when
// the handler does not have exactly that shape.
bool Lowering::EmitFilterVictimsThunk(const ast::HandlerDecl& h, const ExtensionPointInfo& info) {
  if (info.result != AbiKind::Victims || h.params.size() != 2 || !h.body ||
      h.body->stmts.empty())
    return false;
  // Leading `let`s (e.g. `let pj = preemptor.job;`) are evaluated once before the loop.
  for (size_t i = 0; i + 1 < h.body->stmts.size(); ++i)
    if (!ast::As<ast::Let>(h.body->stmts[i].get())) return false;
  const auto* ret = ast::As<ast::Return>(h.body->stmts.back().get());
  const auto* call = ret ? ast::As<ast::Call>(ret->value.get()) : nullptr;
  if (!call || call->callee != "victims" || call->receiver || call->args.size() != 1 ||
      call->call == ast::CallKind::Function)
    return false;
  const auto* comp = ast::As<ast::Comprehension>(call->args[0].get());
  if (!comp || comp->aggregate != ast::Aggregate::List || comp->second || comp->order_key)
    return false;
  const auto* src = ast::As<ast::NameRef>(comp->source.get());
  const auto* elem = ast::As<ast::NameRef>(comp->element.get());
  if (!src || src->ref != ast::NameKind::Local || src->local != h.params[1].local.get() ||
      !elem || elem->ref != ast::NameKind::Local || elem->local != comp->first.get())
    return false;

  std::string name = std::string(kThunkPrefix) + std::string(info.handler);
  auto* fn = Function::Create(
      llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_, i64_, ptr_}, false),
      Function::ExternalLinkage, name, m_);
  BeginBody(fn, &h);
  b_.CreateStore(fn->getArg(1), LocalSlot(h.params[0].local.get()));
  {
    // The candidate list parameter, in case a leading `let` reads it.
    Value* l = llvm::UndefValue::get(list_);
    l = b_.CreateInsertValue(l, fn->getArg(2), {0});
    b_.CreateStore(b_.CreateInsertValue(l, fn->getArg(3), {1}), LocalSlot(h.params[1].local.get()));
  }
  for (size_t i = 0; i + 1 < h.body->stmts.size(); ++i) EmitStmt(*h.body->stmts[i]);
  Value* items = fn->getArg(2);
  Value* n = fn->getArg(3);
  Value* selected = fn->getArg(4);
  // The session's mask is its own buffer, never a view's memory: stores to it do not clobber
  // the fields the filter reads, so loop-invariant loads (the preemptor's fields) are hoisted.
  fn->getArg(4)->addAttr(llvm::Attribute::NoAlias);
  ForRange(n, [&](Value* i) {
    Value* c = b_.CreateLoad(ptr_, b_.CreateGEP(ptr_, items, i));
    b_.CreateStore(c, LocalSlot(comp->first.get()));
    Value* keep = comp->filter ? Emit(*comp->filter) : static_cast<Value*>(b_.getTrue());
    // The session zeroes the mask, so only victims are written: no store per spared candidate.
    EmitIfElse(keep, [&] { b_.CreateStore(b_.getInt8(1), b_.CreateGEP(i8_, selected, i)); }, {});
  });
  b_.CreateRet(b_.getInt32(1));
  bool calls_allocating = false;
  for (Function* callee : callees_[fn]) calls_allocating |= allocates_fn_[callee];
  if (allocates_ || calls_allocating) {
    fn->eraseFromParent();
    callees_.erase(fn);
    return false;
  }
  return true;
}

void Lowering::EmitThunk(const ast::HandlerDecl& h, Function* body, const ExtensionPointInfo& info) {
  std::vector<llvm::Type*> params{ptr_};
  for (int i = 0; i < info.param_count; ++i) {
    switch (info.params[i]) {
      case AbiKind::TaskList:
      case AbiKind::NodeList:
      case AbiKind::HyperNodeList:
        params.push_back(ptr_);
        params.push_back(i64_);
        break;
      default: params.push_back(ptr_);
    }
  }
  llvm::Type* ret = b_.getVoidTy();
  switch (info.result) {
    case AbiKind::Int:
    case AbiKind::Vote: ret = i32_; break;
    case AbiKind::Float:
    case AbiKind::FloatList: ret = i32_; params.push_back(ptr_); break;
    case AbiKind::Bool: ret = i1_; break;
    case AbiKind::Status: ret = i32_; params.push_back(ptr_); break;
    case AbiKind::Validation: ret = i1_; params.push_back(ptr_); break;
    case AbiKind::NodeOrNone: ret = ptr_; params.push_back(ptr_); break;
    case AbiKind::Victims: ret = i32_; params.push_back(ptr_); break;
    case AbiKind::TaskList:
    case AbiKind::HyperNodeList: params.push_back(ptr_); break;
    case AbiKind::Void: break;
    default: Fail(&h, "unsupported handler result kind");
  }
  auto* fn = Function::Create(llvm::FunctionType::get(ret, params, false),
                              Function::ExternalLinkage,
                              std::string(kThunkPrefix) + std::string(info.handler), m_);
  if (ret == i1_) fn->addRetAttr(llvm::Attribute::ZExt);
  fn_ = fn;
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
  ictx_ = fn->getArg(0);
  // A body that may allocate arms its fault frame itself, just before its first allocating call
  // (fault_frame.h), and reports through `frame` whether it did and whether a fault landed.
  bool guarded = allocates_fn_[body];
  Value* frame = llvm::ConstantPointerNull::get(ptr_);
  if (guarded) {
    frame = Alloca(i8_);
    b_.CreateStore(b_.getInt8(codegen::kFrameIdle), frame);
  }
  std::vector<Value*> args{ictx_};
  unsigned a = 1;
  std::vector<std::pair<Value*, Value*>> lists;  // (items, n) of list params
  for (int i = 0; i < info.param_count; ++i) {
    if (info.params[i] == AbiKind::TaskList || info.params[i] == AbiKind::NodeList ||
        info.params[i] == AbiKind::HyperNodeList) {
      Value* items = fn->getArg(a++);
      Value* n = fn->getArg(a++);
      lists.emplace_back(items, n);
      Value* l = llvm::UndefValue::get(list_);
      l = b_.CreateInsertValue(l, items, {0});
      args.push_back(b_.CreateInsertValue(l, n, {1}));
    } else {
      args.push_back(fn->getArg(a++));
    }
  }
  args.push_back(frame);
  if (args.size() != body->arg_size())
    Fail(&h, fmt::format("handler `{}` has {} parameters, point `{}` passes {}", h.name,
                         body->arg_size() - 2, info.handler, args.size() - 2));
  Value* r = b_.CreateCall(body, args);
  if (guarded) {
    // Fault recovery (stdlib/runtime_support.cc): a faulting intrinsic longjmped into the body, and the
    // handler answers the zero value of its result; the session has recorded the fault.
    Value* state = b_.CreateLoad(i8_, frame);
    BasicBlock* faulted = BasicBlock::Create(ctx_, "faulted", fn);
    BasicBlock* ran = BasicBlock::Create(ctx_, "ran", fn);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(b_.CreateICmpEQ(state, b_.getInt8(codegen::kFrameFaulted)), faulted, ran,
                    md.createBranchWeights(1, 1u << 20));
    b_.SetInsertPoint(faulted);
    if (ret->isVoidTy())
      b_.CreateRetVoid();
    else
      b_.CreateRet(llvm::Constant::getNullValue(ret));
    b_.SetInsertPoint(ran);
    EmitIfElse(b_.CreateICmpEQ(state, b_.getInt8(codegen::kFrameArmed)),
               [&] { CallRt("kiln_rt_leave", b_.getVoidTy(), {}); }, {});
  }
  Value* extra = a < fn->arg_size() ? fn->getArg(a) : nullptr;
  switch (info.result) {
    case AbiKind::Int: {
      // Only the sign matters to the session; clamp the 64-bit answer into -1/0/1.
      Value* neg = b_.CreateICmpSLT(r, b_.getInt64(0));
      Value* pos = b_.CreateICmpSGT(r, b_.getInt64(0));
      b_.CreateRet(b_.CreateSelect(neg, b_.getInt32(-1), b_.CreateZExt(pos, i32_)));
      break;
    }
    case AbiKind::Vote: b_.CreateRet(r); break;
    case AbiKind::Bool: b_.CreateRet(r); break;
    case AbiKind::Float:
      b_.CreateStore(r->getType() == f64_ ? r : b_.CreateSIToFP(r, f64_), extra);
      b_.CreateRet(b_.getInt32(0));
      break;
    case AbiKind::FloatList: {
      // none fails the scoring (return 1); otherwise scores[i] = answer[i] for the nodes
      // passed (extra answers are ignored, missing are 0).
      BasicBlock* failed = BasicBlock::Create(ctx_, "scores.none", fn);
      BasicBlock* present = BasicBlock::Create(ctx_, "scores", fn);
      b_.CreateCondBr(b_.CreateExtractValue(r, {0}), present, failed);
      b_.SetInsertPoint(failed);
      b_.CreateRet(b_.getInt32(1));
      b_.SetInsertPoint(present);
      Value* answer = b_.CreateExtractValue(r, {1});
      Value* items = b_.CreateExtractValue(answer, {0});
      Value* n = b_.CreateExtractValue(answer, {1});
      Value* limit = lists.empty() ? n : b_.CreateSelect(b_.CreateICmpSLT(n, lists.back().second), n,
                                                        lists.back().second);
      ForRange(limit, [&](Value* i) {
        b_.CreateStore(b_.CreateLoad(f64_, b_.CreateGEP(f64_, items, i)),
                       b_.CreateGEP(f64_, extra, i));
      });
      b_.CreateRet(b_.getInt32(0));
      break;
    }
    case AbiKind::Status: {
      Value* code = b_.CreateExtractValue(r, {0});
      Value* reason = b_.CreateExtractValue(r, {1});
      Value* failed = b_.CreateICmpNE(code, b_.getInt32(0));
      EmitIfElse(failed, [&] {
        CallRt("kiln_status_add_reason", b_.getVoidTy(),
               {extra, StrPart(reason, 0), StrPart(reason, 1)});
      }, {});
      b_.CreateRet(code);
      break;
    }
    case AbiKind::Validation: {
      Value* pass = b_.CreateExtractValue(r, {0});
      EmitIfElse(b_.CreateNot(pass), [&] {
        Value* reason = b_.CreateExtractValue(r, {1});
        Value* message = b_.CreateExtractValue(r, {2});
        CallRt("kiln_status_add_reason", b_.getVoidTy(),
               {extra, StrPart(reason, 0), StrPart(reason, 1)});
        CallRt("kiln_status_set_message", b_.getVoidTy(),
               {extra, StrPart(message, 0), StrPart(message, 1)});
      }, {});
      b_.CreateRet(pass);
      break;
    }
    case AbiKind::NodeOrNone: b_.CreateRet(r); break;
    case AbiKind::Victims: {
      Value* decided = b_.CreateExtractValue(r, {0});
      Value* chosen = b_.CreateExtractValue(r, {1});
      EmitIfElse(decided, [&] {
        MarkSelected(lists.back().first, lists.back().second, chosen, extra);
      }, {});
      b_.CreateRet(b_.CreateZExt(decided, i32_));
      break;
    }
    case AbiKind::TaskList:
    case AbiKind::HyperNodeList:
      MarkSelected(lists.back().first, lists.back().second, r, extra);
      b_.CreateRetVoid();
      break;
    case AbiKind::Void: b_.CreateRetVoid(); break;
    default: Fail(&h, "unsupported handler result kind");
  }
}

void Lowering::MarkSelected(Value* items, Value* n, Value* chosen, Value* selected) {
  b_.CreateCall(MarkSelectedFn(), {items, n, b_.CreateExtractValue(chosen, {0}),
                                   b_.CreateExtractValue(chosen, {1}), selected});
}

// `kiln.mark_selected(items, n, chosen, m, selected)`: selected[i] = 1 for every candidate in
// the chosen list. Chosen lists are almost always built in candidate order (a filter, or an
// append loop over the candidates), so one merge pass marks them without a host call or a hash
// set; when the list is not an ordered subsequence, the host marks the rest (marking twice is
// harmless).
Function* Lowering::MarkSelectedFn() {
  if (mark_selected_) return mark_selected_;
  auto* fn = Function::Create(
      llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, ptr_, i64_, ptr_}, false),
      Function::InternalLinkage, "kiln.mark_selected", m_);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(ctx_);
  Value* items = fn->getArg(0);
  Value* n = fn->getArg(1);
  Value* chosen = fn->getArg(2);
  Value* m = fn->getArg(3);
  Value* selected = fn->getArg(4);
  auto [entry, loop, check, mark, next, done, rest, out] =
      Blocks(fn, {"entry", "loop", "check", "mark", "next", "done", "rest", "out"});
  b.SetInsertPoint(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(i64_, 2);
  llvm::PHINode* j = b.CreatePHI(i64_, 2);
  i->addIncoming(b.getInt64(0), entry);
  j->addIncoming(b.getInt64(0), entry);
  b.CreateCondBr(b.CreateAnd(b.CreateICmpSLT(i, n), b.CreateICmpSLT(j, m)), check, done);
  b.SetInsertPoint(check);
  Value* c = b.CreateLoad(ptr_, b.CreateGEP(ptr_, items, i));
  Value* want = b.CreateLoad(ptr_, b.CreateGEP(ptr_, chosen, j));
  b.CreateCondBr(b.CreateICmpEQ(c, want), mark, next);
  b.SetInsertPoint(mark);
  b.CreateStore(b.getInt8(1), b.CreateGEP(i8_, selected, i));
  Value* j_marked = b.CreateAdd(j, b.getInt64(1));
  b.CreateBr(next);
  b.SetInsertPoint(next);
  llvm::PHINode* j2 = b.CreatePHI(i64_, 2);
  j2->addIncoming(j, check);
  j2->addIncoming(j_marked, mark);
  i->addIncoming(b.CreateAdd(i, b.getInt64(1)), next);
  j->addIncoming(j2, next);
  b.CreateBr(loop);
  b.SetInsertPoint(done);
  b.CreateCondBr(b.CreateICmpSLT(j, m), rest, out);
  b.SetInsertPoint(rest);
  llvm::FunctionCallee host = m_.getOrInsertFunction(
      "kiln_host_mark_selected",
      llvm::FunctionType::get(b.getVoidTy(), {ptr_, i64_, ptr_, i64_, ptr_}, false));
  b.CreateCall(host, {items, n, chosen, m, selected});
  b.CreateBr(out);
  b.SetInsertPoint(out);
  b.CreateRetVoid();
  mark_selected_ = fn;
  return fn;
}

// "kiln.state_init"(ctx): state in the session arena, initialised in declaration order.
void Lowering::EmitStateInit() {
  auto* fn = Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false),
                              Function::ExternalLinkage, kStateInitSymbol, m_);
  BeginBody(fn, nullptr);
  Value* prev = CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)});
  Value* state = CallRt("kiln_rt_alloc", ptr_, {b_.getInt64(std::max<uint64_t>(SizeOf(state_ty_), 1))}, true);
  b_.CreateStore(state, b_.CreateStructGEP(ctx_ty_, ictx_, kCtxState));
  in_state_init_ = true;  // view-keyed maps made here keep their dense table from the start
  // State kept across sessions is initialised at the conf entry's first session only: the host
  // hands a zeroed block, and its first word says the initialisers have run.
  // A host that keeps no block (a benchmark's or a test's own context) gets one in the session
  // arena: the state then lives one session, like any other.
  Value* kept_fresh = nullptr;
  if (!kept_index_.empty()) {
    Value* slot = b_.CreateStructGEP(ctx_ty_, ictx_, kCtxKept);
    BasicBlock* make = BasicBlock::Create(ctx_, "kept.make", fn);
    BasicBlock* have = BasicBlock::Create(ctx_, "kept.have", fn);
    b_.CreateCondBr(b_.CreateIsNull(b_.CreateLoad(ptr_, slot)), make, have);
    b_.SetInsertPoint(make);
    b_.CreateStore(CallRt("kiln_rt_alloc", ptr_, {b_.getInt64(SizeOf(kept_ty_))}, true), slot);
    b_.CreateBr(have);
    b_.SetInsertPoint(have);
    Value* done = b_.CreateLoad(i64_, b_.CreateStructGEP(kept_ty_, CtxField(kCtxKept, ptr_), 0));
    kept_fresh = b_.CreateICmpEQ(done, b_.getInt64(0));
  }
  for (const ast::StateDecl* s : policy_.All<ast::StateDecl>()) {
    BasicBlock* after = nullptr;
    if (s->across_sessions) {
      BasicBlock* init = BasicBlock::Create(ctx_, "kept.init", fn);
      after = BasicBlock::Create(ctx_, "kept.done", fn);
      b_.CreateCondBr(kept_fresh, init, after);
      b_.SetInsertPoint(init);
    }
    const Type* t = s->declared.resolved;
    Value* v = s->init ? Coerce(Emit(*s->init), s->init->type, t) : ZeroOf(t);
    // A state whose Resources are overwritten in place must own them (state_in_place.h).
    if (s->init && in_place_.vars.count(s)) v = Persist(v, t);
    b_.CreateStore(v, StatePtr(s));
    if (after) {
      b_.CreateBr(after);
      b_.SetInsertPoint(after);
    }
  }
  if (kept_fresh)
    b_.CreateStore(b_.getInt64(1), b_.CreateStructGEP(kept_ty_, CtxField(kCtxKept, ptr_), 0));
  in_state_init_ = false;
  CallRt("kiln_rt_set_arena", ptr_, {prev});
  b_.CreateRetVoid();
}

// "kiln.args_default"(args, ctx): every argument's default; the host then overrides what
// scheduler.conf sets. Runs with the plugin's argument arena current.
void Lowering::EmitArgsDefault() {
  auto* fn = Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_}, false),
                              Function::ExternalLinkage, kArgsDefaultSymbol, m_);
  BeginBody(fn, nullptr, /*ctx_arg=*/1);
  Value* args = fn->getArg(0);
  for (const ast::ArgDecl* a : policy_.All<ast::ArgDecl>()) {
    const Type* t = a->declared.resolved;
    Value* v = a->default_value ? Coerce(Emit(*a->default_value), a->default_value->type, t)
                                : ZeroOf(t);
    b_.CreateStore(v, b_.CreateStructGEP(args_ty_, args, arg_index_.at(a)));
  }
  b_.CreateRetVoid();
}

}  // namespace kiln::codegen
