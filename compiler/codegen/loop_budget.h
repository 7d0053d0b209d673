#pragma once
// The runtime loop budget of compiled handlers (issue #16). Every loop the language has runs a
// trip count known when it starts (a range, a list, a map, a view's list), so a loop reserves its
// iterations from the calling thread's budget counter (kiln_policy_fuel(), runtime/abi.h) on
// entry instead of counting at every back-edge: a loop that fits costs a subtraction and a
// compare per entry, nothing per iteration. A loop that does not fit runs as many iterations as
// the budget has left plus one, exactly as per-iteration counting would have, then reports a
// budget fault (kiln_policy_out_of_fuel) and leaves. A `break`, or a `return` from inside loops,
// gives back what each loop left it has reserved and not run, so the count stays that of the
// iterations run. Nesting reserves as it goes: an outer loop's reservation is held while its body
// runs inner loops and calls, so a call near the limit may fault slightly earlier than one that
// counted iteration by iteration would have (never later).
//
// A call whose budget is spent is abandoned: each later loop entry finds the counter negative and
// runs no iteration; the session ignores the faulted call's answer.
//
// The counter's address is fetched once per function (in its entry block) and the count kept in a
// function-local copy (see Finish).

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

  // At a loop's entry, before its first test: reserves up to `trip_count` iterations (never
  // negative: every loop's count is a size or a range clamped at zero) and returns how many may
  // run (the trip count itself unless the budget is short, then what is left plus one, never
  // below zero). Leaves the builder in a new block.
  llvm::Value* Reserve(llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>& b,
                       llvm::Value* trip_count);
  // Where the loop's test fails: reports the budget spent if it is, then branches to `done`.
  void AfterLoop(llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>& b,
                 llvm::BasicBlock* done);
  // Leaving the loop early during iteration `index`: gives back the `reserved - index`
  // iterations reserved and not run (the current one counts as not run, as its back-edge
  // never happens).
  void Refund(llvm::IRBuilder<llvm::ConstantFolder, llvm::IRBuilderDefaultInserter>& b,
              llvm::Value* reserved, llvm::Value* index);

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
