#include "compiler/codegen/fault_frame.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <map>

namespace kiln::codegen {
namespace {

class MayAllocate {
 public:
  bool operator()(llvm::Function& f) {
    if (f.isIntrinsic()) return false;
    if (f.hasFnAttribute(kAllocatesAttr)) return true;
    if (f.isDeclaration()) return false;
    if (auto it = memo_.find(&f); it != memo_.end()) return it->second;
    memo_[&f] = false;  // a function reaching itself does not allocate through that call
    bool allocates = false;
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
          if (llvm::Function* g = call->getCalledFunction(); g && (*this)(*g)) allocates = true;
    memo_[&f] = allocates;
    return allocates;
  }

 private:
  std::map<llvm::Function*, bool> memo_;
};

void Arm(llvm::Function& fn, llvm::Value* frame, MayAllocate& may_allocate) {
  std::vector<llvm::CallInst*> sites;
  for (llvm::BasicBlock& bb : fn)
    for (llvm::Instruction& inst : bb)
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
        // A sibling call would leave this frame before the callee could fault back into it.
        call->setTailCallKind(llvm::CallInst::TCK_None);
        if (llvm::Function* callee = call->getCalledFunction(); callee && may_allocate(*callee))
          sites.push_back(call);
      }
  fn.addFnAttr("disable-tail-calls", "true");
  if (sites.empty()) return;

  llvm::Module& m = *fn.getParent();
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::FunctionCallee enter =
      m.getOrInsertFunction("kiln_rt_enter", llvm::FunctionType::get(ptr, {}, false));
  llvm::Function* frame_address =
      llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::frameaddress, {ptr});
  llvm::Function* stack_save = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::stacksave);
  llvm::Function* set_jmp = llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::eh_sjlj_setjmp);
  llvm::MDBuilder md(ctx);

  // One landing block for every arming point: the fault is recorded (the session reads it); the
  // thunk answers the zero value and does not look at what this function returns.
  auto* faulted = llvm::BasicBlock::Create(ctx, "fault.landed", &fn);
  b.SetInsertPoint(faulted);
  b.CreateStore(b.getInt8(kFrameFaulted), frame);
  if (fn.getReturnType()->isVoidTy())
    b.CreateRetVoid();
  else
    b.CreateRet(llvm::Constant::getNullValue(fn.getReturnType()));

  for (llvm::CallInst* call : sites) {
    llvm::BasicBlock* head = call->getParent();
    llvm::BasicBlock* at_call = head->splitBasicBlock(call, "fault.armed");
    head->getTerminator()->eraseFromParent();
    auto* arm = llvm::BasicBlock::Create(ctx, "fault.arm", &fn, at_call);
    auto* armed = llvm::BasicBlock::Create(ctx, "fault.now_armed", &fn, at_call);
    b.SetInsertPoint(head);
    llvm::Value* state = b.CreateLoad(b.getInt8Ty(), frame);
    b.CreateCondBr(b.CreateICmpNE(state, b.getInt8(kFrameIdle)), at_call, arm);
    // The buffer is __builtin_setjmp's: the frame address, the resume address (stored by
    // eh.sjlj.setjmp) and the stack pointer; the host's __builtin_longjmp jumps back.
    b.SetInsertPoint(arm);
    llvm::Value* buf = b.CreateCall(enter);
    b.CreateStore(b.CreateCall(frame_address, {b.getInt32(0)}), buf);
    b.CreateStore(b.CreateCall(stack_save), b.CreateConstGEP1_64(ptr, buf, 2));
    llvm::Value* jumped = b.CreateCall(set_jmp, {buf});
    b.CreateCondBr(b.CreateICmpNE(jumped, b.getInt32(0)), faulted, armed,
                   md.createBranchWeights(1, 1u << 20));
    b.SetInsertPoint(armed);
    b.CreateStore(b.getInt8(kFrameArmed), frame);
    b.CreateBr(at_call);
  }
}

}  // namespace

std::vector<llvm::Function*> ArmFaultFrames(llvm::Module& module) {
  std::vector<llvm::Function*> changed;
  llvm::Function* marker = module.getFunction(kFaultFrameMarker);
  if (!marker) return changed;
  std::map<llvm::Function*, std::vector<llvm::CallInst*>> marks;
  for (llvm::User* u : marker->users())
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) marks[call->getFunction()].push_back(call);
  MayAllocate may_allocate;
  for (auto& [fn, calls] : marks) {
    // A thunk calls its body once, so a function holds one body's code and one marker.
    llvm::Value* frame = calls.front()->getArgOperand(0);
    for (llvm::CallInst* call : calls) call->eraseFromParent();
    Arm(*fn, frame, may_allocate);
    changed.push_back(fn);
  }
  marker->eraseFromParent();
  return changed;
}

void MarkAllocatingFunctions(llvm::Module& module) {
  MayAllocate may_allocate;
  for (llvm::Function& f : module)
    if (!f.isDeclaration() && may_allocate(f)) f.addFnAttr(kAllocatesAttr);
}

}  // namespace kiln::codegen
