#pragma once
// An on-disk cache of compiled policy objects, so a scheduler restart (or another `kiln simulate`)
// reuses the native code of an unchanged policy instead of running O2 and the code generator
// again (compiler-internal; LLVM-free so that compiled_policy.h can expose the stats).
//
// Keys: SHA-256 over the SHA-256 of the policy's source text, the target (triple, CPU name, CPU
// features, and the LLVM options KILN_LLVM_OPTIONS gave), the LLVM version, the compiler
// fingerprint (a hash of every Kiln source that shapes the object — front end, codegen, the JIT's
// pipeline, stdlib, the runtime's layouts, the grammar — and of the build flags, computed at
// build time: CompilerFingerprint()) and
// kCacheFormat: everything the object depends on, so a hit returns exactly what compiling would
// have produced. Lowering is deterministic in those inputs (no addresses or environment reach the
// IR; host symbols are resolved when the object is linked), which is what lets a lookup happen
// before codegen and skip it. No scheduler.conf argument is in the key because none reaches
// codegen: arguments are data the handlers read from the argument block at run time, never
// constants in the code. The fingerprint (rather than the executable's build id) lets the `kiln`
// binary, the tests and the benchmarks share objects, which is what makes a cache shipped with
// the build usable.
//
// A payload is opaque here: the policy compiler stores a description of the object (its
// handlers and argument layout) in front of the relocatable object (compiled_policy.cc).
//
// Two kinds of directory use this format: the read-write cache of --compile-cache, and a
// read-only one generated at build time for the built-in policies (`kiln warm-cache`, shipped
// beside the binary), which is never written, pruned or touched.
//
// The files are code that will be executed, so the cache trusts nothing it reads:
//   <dir>/<64 hex digits of the key>.kobj = header (magic, format, key, payload length,
//   SHA-256 of the payload) + the payload.
// A file whose header, key, length or checksum does not match is a miss (logged at debug level)
// and is overwritten by the next store. Writes go to a unique temporary name and are rename()d
// into place, so concurrent processes and threads never see half a file. The directory is
// created 0700 and is not used when another user owns it or others may write to it. No I/O
// error ever fails a compile: a lookup that cannot read is a miss, a store that cannot write is
// dropped.
//
// The directory does not grow without bound: opening the cache keeps the kCacheMaxEntries most
// recently used objects (a hit refreshes the file's modification time) and removes temporary
// files a crashed writer left behind.

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// Bump when the header layout or the meaning of a key field changes.
inline constexpr uint32_t kCacheFormat = 2;

// SHA-256 (hex) over the sources and build configuration of the policy compiler, generated at
// build time by cmake/CompilerFingerprint.cmake.
std::string_view CompilerFingerprint();

// Objects kept when the cache is opened (least recently used ones beyond this are removed). A
// conf has about a dozen policies and each rebuild of Kiln changes every key, so this holds
// many versions.
inline constexpr size_t kCacheMaxEntries = 256;

struct ObjectCacheKey {
  std::array<uint8_t, 32> bytes{};
  std::string Hex() const;
  bool operator==(const ObjectCacheKey&) const = default;
};

// The target a module is compiled for; part of every key.
struct ObjectCacheTarget {
  std::string triple;
  std::string cpu;
  std::string features;
  std::string llvm_options;  // KILN_LLVM_OPTIONS (LlvmOptionsOfProcess)
};

// `source_sha256`: hex SHA-256 of the policy's source text (Sha256Hex).
ObjectCacheKey MakeObjectCacheKey(std::string_view source_sha256, const ObjectCacheTarget& target);

// Hex SHA-256 of `text`.
std::string Sha256Hex(std::string_view text);

struct ObjectCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;          // includes `rejected`
  uint64_t rejected = 0;        // a file was there but failed verification
  uint64_t stores = 0;          // objects written
  uint64_t store_failures = 0;  // objects that could not be written (dropped)
  uint64_t pruned = 0;          // files removed when the cache was opened
};

class ObjectCache {
 public:
  enum class Mode {
    kReadWrite,  // --compile-cache: created when missing, pruned when opened, written on misses
    kReadOnly,   // the shipped cache: must exist; only read (Store is a no-op)
  };

  // kReadWrite creates `dir` (mode 0700, parents as needed) when missing. Never fails: when the
  // directory cannot be created or is not safe to use, a warning is logged (a debug message for
  // a missing read-only one) and the cache is disabled (every lookup misses, every store is
  // dropped). Safe means owned by us (or, read-only, by root) and not writable by others.
  explicit ObjectCache(std::string dir, Mode mode = Mode::kReadWrite);

  // The verified object stored under `key`; nullopt on a miss.
  std::optional<std::string> Lookup(const ObjectCacheKey& key);

  // Writes `object` under `key` (atomically replacing any previous file).
  void Store(const ObjectCacheKey& key, std::string_view object);

  ObjectCacheStats Stats() const;
  const std::string& dir() const { return dir_; }
  bool enabled() const { return enabled_; }

  // The file a key is stored in (for tests that corrupt it).
  std::string PathFor(const ObjectCacheKey& key) const;

 private:
  std::string dir_;
  Mode mode_;
  bool enabled_ = false;
  void Prune();

  std::atomic<uint64_t> hits_{0}, misses_{0}, rejected_{0}, stores_{0}, store_failures_{0};
  std::atomic<uint64_t> pruned_{0};
  std::atomic<uint64_t> temp_serial_{0};
};

}  // namespace kiln
