#pragma once
// The per-instance context every JIT'd handler receives as its `void* ctx` (runtime/session.h).
// Codegen loads these fields at their offsets; the plugin host fills them. LLVM-free.

#include <cstddef>
#include <cstdint>

namespace kiln {

class Session;
namespace ast {
struct ArgDecl;
}

// Where one argument lives in the argument block (offsets from the JIT's DataLayout).
struct ArgSlot {
  const ast::ArgDecl* decl;
  uint64_t offset;
};

struct PolicyContext {
  void* state = nullptr;         // the policy's state struct (session arena); set by state_init
  const void* args = nullptr;    // the bound arguments (owned by the compiled plugin)
  int64_t now = 0;               // the session clock, nanoseconds
  void* session_arena = nullptr;  // kiln::Arena* freed at session close
  Session* session = nullptr;  // handlers read it; only session-mutating host calls write
  // The conf entry's block of `state ... across sessions` (compiler/host/kept_state.h): a word
  // that state_init sets once it has initialised the block, then one 8-byte slot per such state.
  void* kept = nullptr;
};

// PolicyContext's fields in order: the index codegen gives CreateStructGEP for each.
enum PolicyContextField : int {
  kCtxState, kCtxArgs, kCtxNow, kCtxSessionArena, kCtxSession, kCtxKept,
};
static_assert(offsetof(PolicyContext, now) == 16 && offsetof(PolicyContext, session) == 32 &&
              offsetof(PolicyContext, kept) == 40);

// Symbols every lowered policy module defines.
inline constexpr const char* kStateInitSymbol = "kiln.state_init";    // void(ctx*)
inline constexpr const char* kArgsDefaultSymbol = "kiln.args_default";  // void(args*)
// The handler thunk for a point: "kiln.on.<handler>", e.g. "kiln.on.job_order".
inline constexpr const char* kThunkPrefix = "kiln.on.";

}  // namespace kiln
