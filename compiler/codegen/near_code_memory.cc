#include "compiler/codegen/near_code_memory.h"

#include <llvm/Support/Process.h>
#include <sys/mman.h>

#include <cstdint>
#include <mutex>

namespace kiln {

namespace {

// Any function of the binary: its code is where the callers and the host functions live.
uintptr_t Anchor() { return reinterpret_cast<uintptr_t>(&IsNearHostCode); }

constexpr uintptr_t kReach = uintptr_t{1} << 31;       // rel32
constexpr uintptr_t kStartBelow = uintptr_t{256} << 20;  // first hint: 256 MiB below the anchor
constexpr uintptr_t kGranule = uintptr_t{64} << 10;

int PosixProtection(unsigned flags) {
  int prot = PROT_NONE;
  if (flags & llvm::sys::Memory::MF_READ) prot |= PROT_READ;
  if (flags & llvm::sys::Memory::MF_WRITE) prot |= PROT_WRITE;
  if (flags & llvm::sys::Memory::MF_EXEC) prot |= PROT_EXEC;
  return prot;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

class NearMapper final : public llvm::SectionMemoryManager::MemoryMapper {
 public:
  explicit NearMapper(bool strict) : strict_(strict) {}

  llvm::sys::MemoryBlock allocateMappedMemory(llvm::SectionMemoryManager::AllocationPurpose,
                                              size_t bytes, const llvm::sys::MemoryBlock* near,
                                              unsigned flags, std::error_code& ec) override {
    ec = std::error_code();
    if (bytes == 0) return llvm::sys::MemoryBlock();
    if (void* p = Bump(bytes, flags)) return llvm::sys::MemoryBlock(p, RoundToPage(bytes));
    if (strict_) {
      // Small-code-model code must not land far: a PC32 relocation would not reach.
      ec = std::make_error_code(std::errc::not_enough_memory);
      return llvm::sys::MemoryBlock();
    }
    // Nothing near is free: LLVM's own placement (far, slower calls, still correct).
    return llvm::sys::Memory::allocateMappedMemory(bytes, near, flags, ec);
  }

  std::error_code protectMappedMemory(const llvm::sys::MemoryBlock& block,
                                      unsigned flags) override {
    return llvm::sys::Memory::protectMappedMemory(block, flags);
  }

  std::error_code releaseMappedMemory(llvm::sys::MemoryBlock& block) override {
    return llvm::sys::Memory::releaseMappedMemory(block);
  }

  static bool HasRoom(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (exhausted_ || next_ < bytes + kGranule) return false;
    return Anchor() - (next_ - bytes) <= kReach - kMargin;
  }

 private:
  static size_t RoundToPage(size_t bytes) {
    size_t page = llvm::sys::Process::getPageSizeEstimate();
    return (bytes + page - 1) / page * page;
  }

  // A fresh mapping below the last one, within reach of the binary; nullptr when none is free.
  // Bumps downwards from below the binary; a taken range is skipped. Freed ranges are not reused,
  // which is fine for the ~2 GiB of reach (a policy version needs a few pages).
  static void* Bump(size_t bytes, unsigned flags) {
    size_t size = RoundToPage(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    for (int attempt = 0; attempt < 64 && next_ > size + kGranule; ++attempt) {
      uintptr_t hint = (next_ - size) & ~(kGranule - 1);
      if (Anchor() - hint > kReach - kMargin) break;
      void* p = mmap(reinterpret_cast<void*>(hint), size, PosixProtection(flags),
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
      if (p == reinterpret_cast<void*>(hint)) {
        next_ = hint;
        return p;
      }
      if (p != MAP_FAILED) munmap(p, size);  // a kernel that took the flag as a mere hint
      next_ = hint - kGranule * 16;
    }
    // An ordinary request that found no room means the region is used up; one larger than the
    // reach (a test's) says nothing about the next.
    if (size <= kMargin) exhausted_ = true;
    return nullptr;
  }

  // The lowest address handed out stays this far inside the reach, so that everything mapped
  // here is within rel32 of the binary and of each other.
  static constexpr uintptr_t kMargin = uintptr_t{64} << 20;

  bool strict_;
  // Shared by both mappers: one region below the binary.
  static inline std::mutex mu_;
  static inline uintptr_t next_ =
      Anchor() > kStartBelow ? (Anchor() - kStartBelow) & ~(kGranule - 1) : 0;
  static inline bool exhausted_ = false;  // a mapping once found no room: never trust HasRoom
};

}  // namespace

llvm::SectionMemoryManager::MemoryMapper& NearHostCodeMapper() {
  static auto* mapper = new NearMapper(/*strict=*/false);
  return *mapper;
}

llvm::SectionMemoryManager::MemoryMapper& StrictNearHostCodeMapper() {
  static auto* mapper = new NearMapper(/*strict=*/true);
  return *mapper;
}

bool NearHostCodeHasRoom(size_t bytes) { return NearMapper::HasRoom(bytes); }

void* MapStrictNearHostCodeForTesting(size_t bytes) {
  std::error_code ec;
  llvm::sys::MemoryBlock block = StrictNearHostCodeMapper().allocateMappedMemory(
      llvm::SectionMemoryManager::AllocationPurpose::Code, bytes, nullptr,
      llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_WRITE, ec);
  return ec ? nullptr : block.base();
}

void ReleaseNearHostCodeForTesting(void* p, size_t bytes) {
  llvm::sys::MemoryBlock block(p, bytes);
  (void)StrictNearHostCodeMapper().releaseMappedMemory(block);
}

bool IsNearHostCode(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uintptr_t anchor = Anchor();
  return (a > anchor ? a - anchor : anchor - a) < kReach;
}

}  // namespace kiln
