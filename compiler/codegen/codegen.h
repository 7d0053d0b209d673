#pragma once
// Typed AST → LLVM IR (compiler-internal; pulls in LLVM). One module per policy:
//   * each `fn` and handler body becomes an internal function taking the PolicyContext first;
//   * each extension point a handler serves gets an external C-ABI thunk "kiln.on.<point>" with
//     exactly HandlerFn<P>'s signature (runtime/session.h), converting language values to the
//     session's out-parameters;
//   * "kiln.state_init" allocates and initialises per-session state in the session arena;
//   * "kiln.args_default" writes every argument's default into the argument block.
// Semantics follow docs/language.md "Defined results everywhere": div/rem by zero → 0, integer
// overflow saturates, missing keys → zero value or none.

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/ast.h"
#include "compiler/codegen/policy_context.h"
#include "runtime/extension_points.h"
#include "runtime/status.h"

namespace kiln {

struct LoweredPolicy {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::vector<ExtensionPoint> points;  // points with a thunk "kiln.on.<handler>"
  uint64_t args_size = 0;
  uint64_t args_align = 8;
  std::vector<ArgSlot> args;
};

// Lowers a policy that passed the front end. Errors name a construct codegen cannot lower, with
// its location (a front-end/codegen mismatch, not a user error).
Result<LoweredPolicy> LowerPolicy(const ast::Policy& policy, const llvm::DataLayout& layout);

}  // namespace kiln
