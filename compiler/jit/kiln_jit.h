#pragma once
// The ORC JIT that turns a lowered policy module into native code (compiler-internal: this
// header pulls in LLVM, so only compiler/*.cc files include it).
//
// Modelled on LLVM's KaleidoscopeJIT: one LLJIT; the O2 pipeline runs as an IRTransformLayer so
// every module is optimised exactly once, on its way to the compile layer (a tier-0 module gets
// the O0 pipeline and FastISel instead, see JitTier); every loaded policy
// version gets its own JITDylib and ResourceTracker, so a reload can drop the old code without
// touching other policies. Host intrinsics live in a dedicated "kiln.host" JITDylib defined with
// absoluteSymbols: JIT'd code sees exactly the symbols we registered and nothing from the process.

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>

#include "compiler/jit/host_symbol.h"
#include "compiler/jit/object_cache.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

struct ObjectCacheHooks;

// How a module is compiled. Tier 2 is what Kiln runs and caches: O2 and CodeGenOpt::Default.
// Tier 0 is for a policy needed now that no cache holds (PolicyCompiler's two-tier mode): the O0
// pipeline (only the always-inliner) and CodeGenOpt::None, whose FastISel selects instructions
// without building a DAG — about 9× cheaper, and its code is never stored in a compile cache.
enum class JitTier { kFast = 0, kOptimized = 2 };

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

  // Where AddModule stores the object it compiles: under `key` in the writable compile cache,
  // after `prefix` (the caller's description of the object, returned with it by LookupCached).
  struct CacheStore {
    ObjectCacheKey key;
    std::string prefix;
  };

  // Adds `module` as a new unit named `unit_name` (must be unique among live units).
  // The module is optimised and compiled for `tier` when its symbols are first looked up; with
  // `store` and a writable cache set, a tier-2 object is then stored there (a tier-0 one never).
  llvm::Expected<JitUnit> AddModule(llvm::orc::ThreadSafeModule module, std::string unit_name,
                                    const std::optional<CacheStore>& store = std::nullopt,
                                    JitTier tier = JitTier::kOptimized);

  // Adds a policy's partitions (handler_partitions.h) as one new unit of tier-0 code: each
  // partition is compiled on the thread that first looks up one of its symbols, together with
  // the partitions it links to, and a partition nobody looks up is never compiled.
  llvm::Expected<JitUnit> AddPartitions(std::vector<llvm::orc::ThreadSafeModule> partitions,
                                        std::string unit_name);

  // Adds a relocatable object (a compile-cache payload's object) as a new unit: no O2, no code
  // generation; it is linked when its symbols are first looked up. `object_name` names the
  // object as a compiled module's name does (the policy name, which perf maps show).
  llvm::Expected<JitUnit> AddObject(std::string_view object, std::string unit_name,
                                    std::string_view object_name);

  // The compile-cache key of a policy whose source text has SHA-256 `source_sha256` (hex) when
  // compiled by this JIT (object_cache.h lists what else the key covers).
  ObjectCacheKey CacheKey(std::string_view source_sha256) const;

  // The payload stored under `key`: the shipped cache first, then the writable one; nullopt on
  // a miss (or with no cache set).
  std::optional<std::string> LookupCached(const ObjectCacheKey& key);

  // Whether a writable cache is set and usable (else AddModule's `store` is pointless).
  bool CacheWritable() const;

  // Address of `symbol` defined in `unit`; compiles the unit on first use.
  llvm::Expected<void*> Lookup(const JitUnit& unit, llvm::StringRef symbol);

  // Addresses of `symbols` in `unit`, in order, with one lookup (materialises the unit once).
  llvm::Expected<std::vector<void*>> LookupAll(const JitUnit& unit,
                                               const std::vector<std::string>& symbols);

  // Drops the unit's code and its dylib. `unit` is empty afterwards.
  llvm::Error Remove(JitUnit& unit);

  const llvm::DataLayout& DataLayout() const;
  const llvm::Triple& TargetTriple() const;

  // The writable compile cache LookupCached reads and AddModule's stores go to; null turns it
  // off. Thread-safe; a unit being materialised stores into the cache set when it finishes.
  void SetObjectCache(std::shared_ptr<ObjectCache> cache);
  std::shared_ptr<ObjectCache> GetObjectCache() const;

  // The read-only cache shipped with the binary (ObjectCache::Mode::kReadOnly), asked before
  // the writable one; null turns it off. Same threading rules as SetObjectCache.
  void SetShippedCache(std::shared_ptr<ObjectCache> cache);
  std::shared_ptr<ObjectCache> GetShippedCache() const;

  // Runs the same O2 pipeline the JIT uses on `module` (for `kiln compile --emit=llvm`).
  static llvm::Error Optimize(llvm::Module& module);

  // Cancellation of the compiles the calling thread materialises (the background tier-up at
  // exit): once `*flag` is set, the O2 pipeline skips its remaining optional passes and the code
  // generator runs as for tier 0, storing nothing. The code that results is only fit to be
  // thrown away. Null turns it off.
  static void SetCancelFlagForThisThread(const std::atomic<bool>* flag);

  // Milliseconds the IR pipeline (O2, or tier 0's O0) has run on the calling thread so far. Units
  // materialise on the thread that looks them up, so the difference around a first Lookup is
  // that unit's IR pipeline time.
  static double OptimizeMsOnThisThread();

 private:
  KilnJit(std::unique_ptr<llvm::orc::LLJIT> jit, std::shared_ptr<ObjectCacheHooks> cache_hooks);
  llvm::Expected<JitUnit> NewUnit(std::string unit_name);

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::shared_ptr<ObjectCacheHooks> cache_hooks_;  // shared with the transform and the compiler
  llvm::orc::JITDylib* host_ = nullptr;
};

// Initialises LLVM's native target once per process (safe to call repeatedly).
void InitializeNativeTargetOnce();

// The KILN_LLVM_OPTIONS this process gave LLVM ("" when none): they can change the code, so the
// object cache's keys include them.
const std::string& LlvmOptionsOfProcess();

}  // namespace kiln
