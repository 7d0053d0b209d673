#include "compiler/codegen/loop_budget.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <cstdlib>
#include <string_view>
#include <vector>

namespace kiln {

bool LoopBudgetDisabledForMeasurement() {
  static const bool disabled = [] {
    const char* v = std::getenv("KILN_MEASURE_NO_LOOP_BUDGET");
    return v && *v && std::string_view(v) != "0";
  }();
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
  llvm::IRBuilder<> init(fuel->getNextNode());
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

void LoopBudget::BackEdge(llvm::IRBuilder<>& b, llvm::BasicBlock* head, llvm::BasicBlock* exit) {
  if (LoopBudgetDisabledForMeasurement()) {
    b.CreateBr(head);
    return;
  }
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::Value* fuel = LocalCounter(fn);
  llvm::Value* left = b.CreateSub(b.CreateLoad(b.getInt64Ty(), fuel), b.getInt64(1));
  b.CreateStore(left, fuel);
  llvm::LLVMContext& ctx = module_.getContext();
  auto* spent = llvm::BasicBlock::Create(ctx, "budget.spent", fn);
  llvm::MDBuilder md(ctx);
  b.CreateCondBr(b.CreateICmpSLT(left, b.getInt64(0)), spent, head,
                 md.createBranchWeights(1, 1u << 20));
  b.SetInsertPoint(spent);
  llvm::FunctionCallee out = module_.getOrInsertFunction("kiln_policy_out_of_fuel",
                                                         b.getVoidTy());
  if (auto* f = llvm::dyn_cast<llvm::Function>(out.getCallee())) f->addFnAttr(llvm::Attribute::Cold);
  b.CreateCall(out);
  b.CreateBr(exit);
}

}  // namespace kiln
