#pragma once
// The ORC JIT that turns a lowered policy module into native code (compiler-internal: this
// header pulls in LLVM, so only compiler/*.cc files include it).
//
// Modelled on LLVM's KaleidoscopeJIT: one LLJIT; the O2 pipeline runs as an IRTransformLayer so
// every module is optimised exactly once, on its way to the compile layer; every loaded policy
// version gets its own JITDylib and ResourceTracker, so a reload can drop the old code without
// touching other policies. Host intrinsics live in a dedicated "kiln.host" JITDylib defined with
// absoluteSymbols: JIT'd code sees exactly the symbols we registered and nothing from the process.

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include "compiler/jit/host_symbol.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

class ObjectCache;
struct ObjectCacheHooks;

// One policy version's code: its own dylib and tracker.
struct JitUnit {
  std::string name;
  llvm::orc::JITDylib* dylib = nullptr;
  llvm::orc::ResourceTrackerSP tracker;
};

class KilnJit {
 public:
  // `host_symbols` are the only external symbols JIT'd code may reference (plus the few libc
  // routines LLVM itself emits calls to, such as memcpy/memset, which Create() adds).
  static llvm::Expected<std::unique_ptr<KilnJit>> Create(std::vector<HostSymbol> host_symbols);

  ~KilnJit();
  KilnJit(const KilnJit&) = delete;
  KilnJit& operator=(const KilnJit&) = delete;

  // Adds `module` as a new unit named `unit_name` (must be unique among live units).
  // The module is optimised (O2) when its symbols are first looked up. `source_sha256` (hex
  // SHA-256 of the policy source) joins the compile-cache key when given.
  llvm::Expected<JitUnit> AddModule(llvm::orc::ThreadSafeModule module, std::string unit_name,
                                    std::string source_sha256 = {});

  // Address of `symbol` defined in `unit`; compiles the unit on first use.
  llvm::Expected<void*> Lookup(const JitUnit& unit, llvm::StringRef symbol);

  // Drops the unit's code and its dylib. `unit` is empty afterwards.
  llvm::Error Remove(JitUnit& unit);

  const llvm::DataLayout& DataLayout() const;
  const llvm::Triple& TargetTriple() const;

  // Units materialised from now on look their object up in `cache` (keyed by the unoptimised
  // module, so a hit skips both O2 and machine code) and store it there after a miss; null turns
  // the cache off. Thread-safe; a unit being materialised keeps the cache it started with.
  void SetObjectCache(std::shared_ptr<ObjectCache> cache);
  std::shared_ptr<ObjectCache> GetObjectCache() const;

  // The read-only cache shipped with the binary (ObjectCache::Mode::kReadOnly), asked before
  // the writable one; null turns it off. Same threading rules as SetObjectCache.
  void SetShippedCache(std::shared_ptr<ObjectCache> cache);
  std::shared_ptr<ObjectCache> GetShippedCache() const;

  // Runs the same O2 pipeline the JIT uses on `module` (for `kiln compile --emit=llvm`).
  static llvm::Error Optimize(llvm::Module& module);

  // Milliseconds the O2 pipeline has run on the calling thread so far. Units materialise on the
  // thread that looks them up, so the difference around a first Lookup is that unit's O2 time.
  static double OptimizeMsOnThisThread();

 private:
  KilnJit(std::unique_ptr<llvm::orc::LLJIT> jit, std::shared_ptr<ObjectCacheHooks> cache_hooks);

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::shared_ptr<ObjectCacheHooks> cache_hooks_;  // shared with the transform and the compiler
  llvm::orc::JITDylib* host_ = nullptr;
};

// Initialises LLVM's native target once per process (safe to call repeatedly).
void InitializeNativeTargetOnce();

}  // namespace kiln
