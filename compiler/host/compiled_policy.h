#pragma once
// A policy compiled to native code, and the process-wide compiler that produces and caches them.
// LLVM-free: the CLI, the simulator hook and tests include this.
//
// One JIT serves the whole process. Each compiled policy version is one JIT unit (its own dylib
// and resource tracker); dropping the last reference to a CompiledPolicy removes its code, which
// is how a reloaded policy's old version goes away. Compiles are cached by (path, source text),
// so a conf that names the same policy in several sessions, cycles or plugin entries compiles it
// once.
//
// A policy's native code (PolicyCode) is separate from the policy: in two-tier mode
// (jit_tiers.h) the compiler first installs tier-0 code and later replaces it with O2 code.
// Whoever runs handlers takes a reference to one PolicyCode and uses only it — its argument block
// (BoundArgs), state initialiser and handlers — so the code of one plugin instance never changes
// during a session, and old code is removed when its last holder lets go.

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ast.h"
#include "compiler/codegen/policy_context.h"
#include "stdlib/runtime_support.h"
#include "compiler/host/jit_tiers.h"
#include "compiler/jit/object_cache.h"
#include "compiler/source.h"
#include "compiler/timings.h"
#include "runtime/conf.h"
#include "runtime/extension_points.h"
#include "runtime/plugin.h"
#include "runtime/score_cache.h"
#include "runtime/status.h"

namespace kiln {

// One compiled policy version's native code at one tier (one JIT unit). Tiers of a policy come
// from the same lowered module: the argument block and state have one layout, but a state object
// or argument block holds pointers into the code that built it (string literals), so it is only
// ever used with that code.
struct PolicyCode final : HandlerSource {
  int tier = 2;  // 0: O0 + FastISel; 2: O2 (JitTier)
  using RawHandler = void (*)();
  // The points the policy serves (HandlerFn<point>, runtime/session.h), in the module's order.
  std::vector<ExtensionPoint> points;
  // The handler for `point` (cast it to HandlerFn<point>), or null when the policy has none.
  // Tier-0 code compiles a handler the first time it is asked for, on the asking thread, which
  // waits (only what a session calls is compiled); null too if that compile failed (logged).
  RawHandler Handler(ExtensionPoint point) const override;
  // Whether Handler(point) returns without compiling anything.
  bool HandlerReady(ExtensionPoint point) const {
    return handlers_[static_cast<size_t>(point)].load(std::memory_order_acquire) != nullptr ||
           !compile_handler;
  }
  void (*state_init)(PolicyContext*) = nullptr;
  void (*args_default)(void* args, PolicyContext*) = nullptr;

  PolicyCode() = default;
  ~PolicyCode();
  PolicyCode(const PolicyCode&) = delete;
  PolicyCode& operator=(const PolicyCode&) = delete;

  // Set by the compiler: a compiled handler, or (tier 0) how to compile one on first use.
  void SetHandler(ExtensionPoint point, RawHandler fn) {
    handlers_[static_cast<size_t>(point)].store(fn, std::memory_order_release);
  }
  std::function<RawHandler(ExtensionPoint)> compile_handler;
  // Removes the JIT unit (set by the compiler).
  std::function<void()> release;
  // Marks `point` as queued for PolicyCompiler::WarmHandlers; false if it was already.
  bool MarkWarmQueued(ExtensionPoint point) const {
    const uint64_t bit = uint64_t{1} << static_cast<int>(point);
    return (warm_queued_.fetch_or(bit, std::memory_order_relaxed) & bit) == 0;
  }

 private:
  mutable std::array<std::atomic<RawHandler>, kExtensionPointCount> handlers_{};
  mutable std::mutex compile_mu_;  // one handler compile at a time per code
  mutable uint64_t failed_ = 0;    // points whose compile failed (under compile_mu_)
  mutable std::atomic<uint64_t> warm_queued_{0};
};

struct CompiledPolicy {
  std::string name;  // `policy gang;`
  std::string path;
  uint64_t version = 0;  // hash of the source text
  std::unique_ptr<ast::Policy> ast;  // kept for the argument schema

  // The code a session opening now should run: tier 0 until the background O2 compile lands in
  // two-tier mode, else O2. Hold the result for as long as its handlers may be called.
  std::shared_ptr<const PolicyCode> Code() const {
    std::lock_guard<std::mutex> lock(code_mu_);
    return code_;
  }
  // Installs `code` for sessions that open from now on (the compiler's tier-up).
  void SetCode(std::shared_ptr<const PolicyCode> code) {
    std::lock_guard<std::mutex> lock(code_mu_);
    code_.swap(code);
    // The old code leaves with `code` after the lock; its unit goes when its last holder does.
  }

  uint64_t args_size = 0;
  uint64_t args_align = 8;
  std::vector<ArgSlot> args;
  // Some handler, function or state initialiser reads the session clock (`now()`). A session
  // whose plugins never read it decides the same at any time, which lets a multi-cycle
  // simulation skip sessions that provably decide nothing (simulator/simulator.h).
  bool reads_clock = false;
  // node_order's scores may be cached per (task shape, node): the handler reads only these task
  // fields (compiler/passes/analyze_score_cache.cc, runtime/score_cache.h).
  bool node_order_cacheable = false;
  std::vector<ScoreKeyField> node_order_key;
  // Tier-0 code split into this many modules, each handler compiled on first use
  // (compiler/jit/handler_partitions.h); 0 when the policy was compiled whole.
  size_t partitions = 0;
  double compile_ms = 0;  // front end + codegen + JIT, for the benchmark and logs
  PhaseTimings timings;   // its phases (compiler/timings.h): front end, codegen, o2, machine-code

  CompiledPolicy() = default;
  CompiledPolicy(const CompiledPolicy&) = delete;
  CompiledPolicy& operator=(const CompiledPolicy&) = delete;

 private:
  mutable std::mutex code_mu_;
  std::shared_ptr<const PolicyCode> code_;
};

// Arguments of one scheduler.conf plugin entry, bound to a policy's schema: the native argument
// block the handlers read through PolicyContext::args, built by `code`'s args_default. Sessions
// with these arguments run `code`'s handlers.
struct BoundArgs {
  std::shared_ptr<const CompiledPolicy> policy;
  std::shared_ptr<const PolicyCode> code;
  std::unique_ptr<Arena> arena;  // strings, lists and maps of the values
  void* data = nullptr;          // args_size bytes
};

// Validates `option.arguments` against the policy's `arg` declarations and builds the block with
// the policy's current code (or `code`): defaults first, then every key the conf sets. Errors
// name the plugin, the argument and the conf line:
// "plugin `binpack`: argument `binpack.weight`: expected float, got \"abc\"".
Result<std::shared_ptr<const BoundArgs>> BindArguments(
    std::shared_ptr<const CompiledPolicy> policy, const PluginOption& option,
    std::shared_ptr<const PolicyCode> code = nullptr);

class PolicyCompiler {
 public:
  // The process-wide compiler (creates the JIT on first use). Its compile cache starts in
  // $KILN_COMPILE_CACHE when that is set and not empty.
  static Result<PolicyCompiler*> Global();

  // Native code of later compiles is cached on disk in `dir` (compiler/jit/object_cache.h) and
  // reused across processes when the policy, the target and the Kiln binary are unchanged; an
  // empty `dir` turns the cache off. A directory that cannot be used only logs a warning: the
  // cache never makes a compile fail.
  void SetCompileCacheDir(const std::string& dir);

  // Hits, misses and stores of the compile cache since it was last set (zeros when it is off).
  ObjectCacheStats CompileCacheStats();

  // The read-only cache of built-in policy objects generated at build time (`kiln warm-cache`,
  // see CMakeLists.txt) and shipped beside the binary. It is asked before the --compile-cache
  // one; an object there skips O2 and machine code. Global() opens DefaultShippedCacheDir();
  // an empty `dir` turns it off; a missing directory is simply no cache.
  void SetShippedCacheDir(const std::string& dir);
  ObjectCacheStats ShippedCacheStats();

  // Where Global() looks for the shipped cache: $KILN_BUILTIN_CACHE when set (empty: none),
  // else `kiln-builtins/` beside the running executable, else `../lib/kiln/builtins/` from it
  // (an installed layout); "" when none of those exists.
  static std::string DefaultShippedCacheDir();

  // Compiles `sources` and writes their objects into `dir` as a fresh cache directory (objects
  // already there are removed first): how the build produces the shipped cache. Both caches of
  // the compiler are restored afterwards. Errors name the policy that failed to compile or the
  // object that could not be written.
  Result<size_t> WriteCacheDir(const std::string& dir, const std::vector<SourceFile>& sources);

  using CompileResult = Result<std::shared_ptr<const CompiledPolicy>>;

  // Front end → codegen → JIT, cached by (path, text). Front-end diagnostics come back as one
  // Error whose message holds them formatted (file:line:col, source line, caret). Thread-safe:
  // different policies compile in parallel; a second request for a policy being compiled waits
  // for the first.
  CompileResult Compile(const SourceFile& source);

  // Compile() for each source, several at once on the default thread pool (each policy has its
  // own LLVM context and JIT unit); results in the order of `sources`. A conf's policies compile
  // in about the time of the slowest one instead of the sum.
  std::vector<CompileResult> CompileAll(const std::vector<SourceFile>& sources);

  // How compiles that miss every cache are compiled (jit_tiers.h). A policy compiled already
  // keeps its code; set the mode before compiling.
  void SetJitTiers(JitTiers tiers);
  JitTiers GetJitTiers();

  // Tier-2 (O2) compiles queued or running in the background, and finished ones since start.
  struct TierUpStats {
    uint64_t pending = 0;
    uint64_t installed = 0;  // O2 code installed in a live policy
    uint64_t dropped = 0;    // the policy was gone (replaced, unused) before its O2 was ready
    uint64_t failed = 0;     // O2 compile failed: the policy keeps its tier-0 code
  };
  TierUpStats GetTierUpStats();

  // Compiles `points` of tier-0 code whose handlers compile on first use (PolicyCode::Handler)
  // on a background thread, in the order given, so that a session that registered them finds
  // them ready, or compiles fewer itself. Points compiled or queued already are skipped.
  void WarmHandlers(const std::shared_ptr<const PolicyCode>& code,
                    const std::vector<ExtensionPoint>& points);
  // Blocks until no warm-up is queued or running; while held, queued warm-ups wait (tests).
  void WaitForWarmUp();
  void HoldWarmUpForTesting(bool hold);

  // Blocks until no tier-2 compile is queued or running (tests, benchmarks).
  void WaitForTierUp();
  // While held, queued tier-2 compiles wait (a test's way to observe tier 0 before O2 lands).
  void HoldTierUpForTesting(bool hold);

  // FinishJitTierUp() (jit_tiers.h) for this compiler, which also drops the queued handler
  // warm-ups and waits for the running one. Compiles after it start the threads again.
  void FinishTierUp();

  // Optimised IR of a policy, as the JIT would compile it (`kiln compile --emit=llvm`).
  static Result<std::string> EmitIr(const SourceFile& source);

  // Lowers a policy that passed the front end to LLVM IR as Compile() would (no optimisation,
  // no machine code) and verifies it: `kiln check` runs this so that a policy it accepts is
  // known to load. The error, located at the construct codegen could not lower, is a Kiln bug.
  static std::optional<Error> CheckLowering(const ast::Policy& policy);

  size_t CachedCount();

  struct Impl;
  ~PolicyCompiler();

 private:
  explicit PolicyCompiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
