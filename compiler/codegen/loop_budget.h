#pragma once
// The runtime loop budget of compiled handlers (issue #16): every loop back-edge decrements the
// calling thread's budget counter (kiln_policy_fuel(), runtime/abi.h) and, when it goes
// negative, reports a budget fault (kiln_policy_out_of_fuel) and leaves the loop. Enclosing
// loops see the same exhausted counter and leave too, so an abandoned call returns after at most
// one more iteration per loop it is nested in; the session ignores the faulted call's answer.
//
// The counter's address is fetched once per function (in its entry block) and the count kept in a
// function-local copy (see Finish): a back-edge costs a decrement and a rarely-taken branch.

namespace llvm {
class BasicBlock;
class Function;
class Module;
class Value;
template <typename, typename> class IRBuilder;
class ConstantFolder;
class IRBuilderDefaultInserter;
}  // namespace llvm

namespace kiln {

// KILN_MEASURE_NO_LOOP_BUDGET=1 compiles handlers without the counted back-edges, to measure what
// the counters cost (issue #16); never for production: a policy's loops are then unbounded at run
// time. Compile-cache keys differ in this mode, so such objects never meet normal ones.
bool LoopBudgetDisabledForMeasurement();

class LoopBudget {
 public:
  explicit LoopBudget(llvm::Module& module) : module_(module) {}

  // Ends the current block (a loop's step) with the counted back-edge to `head`; `exit` is where
  // the loop goes when the budget is spent.
  void BackEdge(llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>& b,
                llvm::BasicBlock* head, llvm::BasicBlock* exit);

  // Run once every function of the module is complete. Back-edges count in a function-local
  // copy of the thread's counter (a register after mem2reg, where the thread counter in memory
  // had to be loaded and stored around every opaque host call in a loop body); the copy is
  // written back before every return and every call of another JIT'd policy function (which
  // counts on the thread's counter) and read again after it.
  void Finish();

 private:
  llvm::Value* FuelPointer(llvm::Function* fn);
  llvm::Value* LocalCounter(llvm::Function* fn);

  llvm::Module& module_;
};

}  // namespace kiln
