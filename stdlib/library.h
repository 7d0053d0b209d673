#pragma once
// The standard library of the policy language: ONE table per bundle that both the type checker
// (signatures) and codegen/JIT (symbols and native addresses) read, so a function cannot exist in
// one and not the other (the cel-cpp function-library habit).
//
// Implementations:
//   Native     a pure C-ABI function in stdlib/natives.cc; `native` is its address, `symbol` the
//              name codegen declares and the JIT maps to that address.
//   Host       provided by the policy host (session lists, conditions, JSON, HTTP; declared in
//              stdlib/host_functions.h); `native` is its address, `symbol` its extern "C" name.
//   Intrinsic  lowered inline by codegen (result constructors: fits, victims(...), invalid(...)).
//
// The row is the only place a function is named: the checker reads `signature`, codegen lowers a
// call by `lower` (compiler/codegen/lower_calls.cc), and the JIT's symbol list is every row's
// (`symbol`, `native`) (compiler/host/host_symbols.cc). Adding a function is one row here and its
// C++ function.
//
// Signatures are written in the language's own type syntax: "(Resource, Resource, Missing) ->
// bool". A row may be generic over one type variable `T` ("(list<T>, T) -> list<T>"): the
// checker binds T at each call from the arguments (compiler/sema/signature.h). Helpers whose
// typing one signature cannot state (len, min/max, range, get, keys, string(x), ...) are typed
// by the checker itself and listed in kGenericBuiltins for documentation and name lookup.
//
// C ABI conventions (shared with codegen): int → int64_t, float → double, bool → bool,
// duration/time → int64_t nanoseconds, quantity → double, string parameter → two parameters
// (const char* data, size_t size) — never a KStr by value: the C ABI moves a 16-byte struct to
// the stack when only one register is left, while codegen passes the two halves separately —
// string result → KStr (returned in two registers), list<T> parameter → (const void* items,
// int64_t n), list result → `KList*` out (last parameter), a `T` parameter → (const void*
// value, int64_t size of T), Resource →
// `const kiln::Resource*` in / `kiln::Resource*` out (last parameter), T? result → bool return
// with the payload through a trailing out-pointer. Missing → int32_t (0 Zero, 1 Infinity).

#include <cstdint>
#include <span>
#include <string_view>

namespace kiln::stdlib {

enum class Impl : uint8_t { Native, Host, Intrinsic };

// How codegen lowers a call of the row.
enum class Lower : uint8_t {
  // A call of `symbol` with the C ABI above.
  Call,         // pure: allocates only for map or Resource results
  ArenaCall,    // builds its string, list or map result in the call arena
  ContextCall,  // session-facing: the PolicyContext comes first
  // Inline IR, no call.
  Floor, Ceil, Sqrt, Share,  // the LLVM intrinsic (the native stays for host-side callers)
  Now,                       // the session clock from the PolicyContext
  ResourceId, Dim,           // interned resource ids; `r.dim(id)` loads the dimension
  Unschedulable, Unresolvable, FitError, FitWait, FitSkip, Combine,  // Fit values
  Invalid, Victims, AbstainVictims,                                  // other handler results
  AllocatedStatus, PreemptableStatus, CompletedStatus, ScheduledStatus,  // TaskStatus sets
};

struct Function {
  std::string_view bundle;     // "math", "resource", "strings", "lists", "time", "session", ...
  std::string_view name;       // as called in a policy
  std::string_view receiver;   // "" for free functions; a type name for methods ("string")
  std::string_view signature;  // "(float, float) -> float" (receiver not included)
  Impl impl;
  std::string_view symbol;     // C symbol (Native/Host); "" for Intrinsic
  const void* native;          // its address (Native/Host); null for Intrinsic
  Lower lower;
  std::string_view doc;        // one line for docs/language.md
  std::string_view capability = {};  // "http": only with `uses http;`
  // For a function taking a Task: the Task fields it reads, comma-separated, as the policy
  // language names them. A node_order handler passing its task to a function that does not list
  // them is not cacheable (compiler/passes/analyze_score_cache.cc).
  std::string_view task_fields = {};
};

struct Constant {
  std::string_view name;  // "permit", "Running", "QueueState.Open"
  std::string_view type;  // "Vote"
  int64_t value;          // the ABI value (Volcano's numbers)
  std::string_view doc;
};

// Every function, in bundle order.
std::span<const Function> Functions();
std::span<const Constant> Constants();

// Names the checker types itself (generic), for lookup and suggestions.
inline constexpr std::string_view kGenericBuiltins[] = {
    "len", "range", "min", "max", "compare", "abs", "float", "int", "string", "sum", "count",
    "any", "all",
};

// Fields of the `session` view (Host functions `kiln_session_<name>`, no argument).
struct SessionField {
  std::string_view name;
  std::string_view type;
  std::string_view symbol;  // host function (const void* ctx) → the value (KList / Resource*)
  const void* address;      // of `symbol` (stdlib/host_functions.h)
  std::string_view doc;
};
std::span<const SessionField> SessionFields();

}  // namespace kiln::stdlib
