#pragma once
// How the process-wide policy compiler (compiled_policy.h) compiles a policy that no compile
// cache holds. Light on purpose: the command's main() picks its default through this header.
//
// Two tiers: a cold O2 compile costs ~150 ms per built-in policy (~3 s CPU for all 19), so a
// policy nobody has cached — a user's, one just edited under `kiln serve`, any policy of a binary
// on another CPU — would hold up the first session that long. In two-tier mode the compiler
// instead emits tier-0 code at once (O0 and FastISel, ~9× cheaper, slower code) and compiles the
// same module at O2 on a background thread; sessions that open after that pick up the O2 code,
// and only the O2 object is written to the compile cache. Both tiers come from one lowered
// module, so they decide the same (tests/unit/compiler/jit_tiers_test.cc).

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class JitTiers {
  kOptimizedOnly,  // O2 at once, as before tiers existed
  kTwoTier,        // tier 0 at once, O2 in the background for later sessions
  kFastOnly,       // tier 0 only: for measuring tier-0 code and testing it
};

// KILN_JIT_TIERS's values: "0"/"off" (kOptimizedOnly), "1"/"on" (kTwoTier), "tier0" (kFastOnly).
std::optional<JitTiers> ParseJitTiers(std::string_view text);
std::string_view JitTiersName(JitTiers tiers);

// The mode the compiler uses when $KILN_JIT_TIERS does not choose one (it always wins). The
// library's default is kOptimizedOnly, so unit tests and benchmarks exercise and time the code
// the caches hold; `kiln` sets kTwoTier. Applies to a compiler that already exists too.
void SetDefaultJitTiers(JitTiers tiers);

// Before the process exits, with tier-2 compiles possibly queued: with a writable compile cache,
// finishes them all (the point of the cache is that the next process finds O2 code); without
// one, drops those not started and waits for the one running. Tier-0 handlers queued to compile
// ahead of use are dropped. Never creates the compiler. Also
// registered with atexit once a background compile starts, so no LLVM work outlives main().
void FinishJitTierUp();

// Whether tier-0 code compiles each handler the first time a session asks for it (or a
// background thread gets to it first), so that a handler no session calls is never compiled
// (compiler/jit/handler_partitions.h), rather than all of a policy's handlers at once. A policy is
// then ready to call in about a third of the time, but compiling its handlers one by one costs
// more in all, so it pays where something else runs meanwhile: `kiln serve` and `simulate
// --watch` turn it on (their caches sync while handlers compile); one-shot commands keep it off.
// KILN_JIT_LAZY ("0"/"1") always wins over the default; SetLazyHandlers (benchmarks, tests)
// over both. Applies to compiles from then on.
bool LazyHandlersEnabled();
void SetDefaultLazyHandlers(bool on);
void SetLazyHandlers(bool on);

// Tier-0 handlers compiled on first use so far, and the wall time those compiles took.
struct LazyHandlerStats {
  uint64_t compiled = 0;
  double ms = 0;
};
LazyHandlerStats JitLazyHandlerStats();

// How many policy compiles the process has made as tier-0 code so far (each queued an O2
// compile); 0 before the compiler exists, which this never creates.
uint64_t JitTierZeroCompiles();

}  // namespace kiln
