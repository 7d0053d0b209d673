#include "compiler/codegen/loop_budget.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <vector>

#include "runtime/env_flag.h"

namespace kiln {

bool LoopBudgetDisabledForMeasurement() {
  static const bool disabled = EnvFlagOn("KILN_MEASURE_NO_LOOP_BUDGET");
  return disabled;
}

llvm::Value* LoopBudget::FuelPointer(llvm::Function* fn) {
  // One call per function, at the top of its entry block. Looked up rather than remembered:
  // codegen may erase a function it started (the victim filter fast path) and reuse its address.
  for (llvm::Instruction& inst : fn->getEntryBlock())
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
      if (call->getCalledFunction() && call->getCalledFunction()->getName() == "kiln_policy_fuel")
        return call;
  llvm::LLVMContext& ctx = module_.getContext();
  auto* ptr = llvm::PointerType::get(ctx, 0);
  llvm::FunctionCallee get = module_.getOrInsertFunction("kiln_policy_fuel", ptr);
  if (auto* f = llvm::dyn_cast<llvm::Function>(get.getCallee())) {
    // The thread's counter: the same address for the whole call. Not `noalias`: the counter
    // outlives the function (its callers and the session read it), and a noalias result would
    // let LLVM drop the last store to it as dead.
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();
    f->setWillReturn();
    f->addRetAttr(llvm::Attribute::NonNull);
  }
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().getFirstInsertionPt());
  return entry.CreateCall(get, {}, "fuel");
}

llvm::Value* LoopBudget::LocalCounter(llvm::Function* fn) {
  for (llvm::Instruction& inst : fn->getEntryBlock())
    if (auto* slot = llvm::dyn_cast<llvm::AllocaInst>(&inst); slot && slot->getName() == "fuel.local")
      return slot;
  auto* fuel = llvm::cast<llvm::Instruction>(FuelPointer(fn));
  llvm::LLVMContext& ctx = module_.getContext();
  llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().getFirstInsertionPt());
  llvm::AllocaInst* slot = entry.CreateAlloca(llvm::Type::getInt64Ty(ctx), nullptr, "fuel.local");
  // The entry block may still be under construction (a loop in it): then the fetch is its last
  // instruction so far.
  llvm::IRBuilder<> init(fuel->getParent(), std::next(fuel->getIterator()));
  init.CreateStore(init.CreateLoad(init.getInt64Ty(), fuel), slot);
  return slot;
}

void LoopBudget::Finish() {
  for (llvm::Function& fn : module_) {
    if (fn.isDeclaration()) continue;
    llvm::AllocaInst* slot = nullptr;
    for (llvm::Instruction& inst : fn.getEntryBlock())
      if (auto* a = llvm::dyn_cast<llvm::AllocaInst>(&inst); a && a->getName() == "fuel.local") slot = a;
    if (!slot) continue;
    llvm::Value* fuel = FuelPointer(&fn);
    std::vector<llvm::Instruction*> flush_before, reload_after;
    for (llvm::BasicBlock& bb : fn)
      for (llvm::Instruction& inst : bb) {
        if (llvm::isa<llvm::ReturnInst>(&inst)) {
          flush_before.push_back(&inst);
        } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
          llvm::Function* callee = call->getCalledFunction();
          if (!callee || callee->isIntrinsic()) continue;
          llvm::StringRef name = callee->getName();
          // Policy functions count on the thread's counter; so does the runtime when it reports
          // the budget spent. The compiler's own helpers (kiln.*) and host functions do not.
          bool counts = (!callee->isDeclaration() && !name.startswith("kiln.")) ||
                        name == "kiln_policy_out_of_fuel";
          if (counts) {
            flush_before.push_back(call);
            reload_after.push_back(call);
          }
        }
      }
    for (llvm::Instruction* at : flush_before) {
      llvm::IRBuilder<> b(at);
      b.CreateStore(b.CreateLoad(b.getInt64Ty(), slot), fuel);
    }
    for (llvm::Instruction* at : reload_after) {
      llvm::IRBuilder<> b(at->getNextNode());
      b.CreateStore(b.CreateLoad(b.getInt64Ty(), fuel), slot);
    }
  }
}

llvm::Value* LoopBudget::Reserve(llvm::IRBuilder<>& b, llvm::Value* trip_count) {
  if (LoopBudgetDisabledForMeasurement()) return trip_count;
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::Value* fuel = LocalCounter(fn);
  llvm::LLVMContext& ctx = module_.getContext();
  // The common case is a subtraction and a sign test: the loop fits what is left.
  llvm::Value* left = b.CreateLoad(b.getInt64Ty(), fuel);
  llvm::Value* after = b.CreateSub(left, trip_count);
  b.CreateStore(after, fuel);
  llvm::BasicBlock* fits = b.GetInsertBlock();
  auto* short_of = llvm::BasicBlock::Create(ctx, "budget.short", fn);
  auto* reserved = llvm::BasicBlock::Create(ctx, "budget.reserved", fn);
  llvm::MDBuilder md(ctx);
  b.CreateCondBr(b.CreateICmpSLT(after, b.getInt64(0)), short_of, reserved,
                 md.createBranchWeights(1, 1u << 20));
  // Short: run what is left plus one (the iteration after which per-iteration counting faults),
  // none once the counter is negative (a spent call). `left + 1` cannot overflow: left <
  // trip_count.
  b.SetInsertPoint(short_of);
  llvm::Value* last_chance = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                                     b.CreateAdd(left, b.getInt64(1)), b.getInt64(0));
  b.CreateStore(b.CreateSub(left, last_chance), fuel);
  b.CreateBr(reserved);
  b.SetInsertPoint(reserved);
  llvm::PHINode* count = b.CreatePHI(b.getInt64Ty(), 2, "budget.reserved");
  count->addIncoming(trip_count, fits);
  count->addIncoming(last_chance, short_of);
  return count;
}

void LoopBudget::AfterLoop(llvm::IRBuilder<>& b, llvm::BasicBlock* done) {
  if (LoopBudgetDisabledForMeasurement()) {
    b.CreateBr(done);
    return;
  }
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::Value* left = b.CreateLoad(b.getInt64Ty(), LocalCounter(fn));
  llvm::LLVMContext& ctx = module_.getContext();
  auto* spent = llvm::BasicBlock::Create(ctx, "budget.spent", fn);
  llvm::MDBuilder md(ctx);
  b.CreateCondBr(b.CreateICmpSLT(left, b.getInt64(0)), spent, done,
                 md.createBranchWeights(1, 1u << 20));
  b.SetInsertPoint(spent);
  llvm::FunctionCallee out = module_.getOrInsertFunction("kiln_policy_out_of_fuel",
                                                         b.getVoidTy());
  if (auto* f = llvm::dyn_cast<llvm::Function>(out.getCallee())) f->addFnAttr(llvm::Attribute::Cold);
  b.CreateCall(out);
  b.CreateBr(done);
}

void LoopBudget::Refund(llvm::IRBuilder<>& b, llvm::Value* reserved, llvm::Value* index) {
  if (LoopBudgetDisabledForMeasurement()) return;
  llvm::Value* fuel = LocalCounter(b.GetInsertBlock()->getParent());
  llvm::Value* left = b.CreateLoad(b.getInt64Ty(), fuel);
  b.CreateStore(b.CreateAdd(left, b.CreateSub(reserved, index)), fuel);
}

}  // namespace kiln
