#pragma once
// Splits a lowered policy module into modules that compile on their own, so that tier 0 compiles
// only the handlers a session calls (compiler-internal: pulls in LLVM).
//
// A policy module has external entries — one thunk "kiln.on.<point>" per handler, plus
// "kiln.state_init" and "kiln.args_default" — and internal functions they reach. The split:
//   * the two set-up entries share one partition, and each handler thunk has its own;
//   * every other function goes with the set of entries that reach it: reached from one entry,
//     it simply lives in that entry's partition; reached from several,
//     it lives in a partition of its own for exactly that set, made external (hidden) so the
//     others link to it;
//   * constants (string literals, the empty resource) live once, in the set-up partition, which
//     is compiled with the policy: the runtime tells some of them apart by address;
//   * a function that may allocate is marked so (codegen::MarkAllocatingFunctions) before the
//     split, for the fault frames each partition gets when it is compiled.
// Before: one module, `kiln.on.predicate` and `kiln.on.node_order` both calling `@fit`.
// After: {state_init, args_default, constants}, {kiln.on.predicate}, {kiln.on.node_order},
// {fit (hidden)}.
//
// Added to one JITDylib as separate modules, a partition is compiled when one of its symbols is
// first looked up, together with the partitions it links to; looking up nothing else compiles
// nothing else. The calls between partitions stay direct (hidden symbols are dso_local), which
// the near-code mapper keeps within rel32 reach (near_code_memory.h).

#include <llvm/IR/Module.h>

#include <memory>
#include <optional>
#include <vector>

namespace kiln {

// The partitions of `module`, which they take apart: on success `module` is null, its functions
// and constants moved into the partitions (same context). nullopt when the module holds what the
// split does not handle — a global that is not a local constant, a constant that points at a
// function or another global, an alias — and must be compiled whole; `module` is then still
// there, possibly changed (functions shared by several entries made hidden external definitions).
std::optional<std::vector<std::unique_ptr<llvm::Module>>> SplitHandlerPartitions(
    std::unique_ptr<llvm::Module>& module);

}  // namespace kiln
