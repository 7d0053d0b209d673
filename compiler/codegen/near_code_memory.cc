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
  llvm::sys::MemoryBlock allocateMappedMemory(llvm::SectionMemoryManager::AllocationPurpose,
                                              size_t bytes, const llvm::sys::MemoryBlock* near,
                                              unsigned flags, std::error_code& ec) override {
    ec = std::error_code();
    if (bytes == 0) return llvm::sys::MemoryBlock();
    size_t page = llvm::sys::Process::getPageSizeEstimate();
    size_t size = (bytes + page - 1) / page * page;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Bump downwards from below the binary; a taken range is skipped. Freed ranges are not
      // reused, which is fine for the ~2 GiB of reach (a policy version needs a few pages).
      for (int attempt = 0; attempt < 64 && next_ > size + kGranule; ++attempt) {
        uintptr_t hint = (next_ - size) & ~(kGranule - 1);
        if (Anchor() - hint > kReach - (uintptr_t{64} << 20)) break;
        void* p = mmap(reinterpret_cast<void*>(hint), size, PosixProtection(flags),
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == reinterpret_cast<void*>(hint)) {
          next_ = hint;
          return llvm::sys::MemoryBlock(p, size);
        }
        if (p != MAP_FAILED) munmap(p, size);  // a kernel that took the flag as a mere hint
        next_ = hint - kGranule * 16;
      }
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

 private:
  std::mutex mu_;
  uintptr_t next_ = Anchor() > kStartBelow ? (Anchor() - kStartBelow) & ~(kGranule - 1) : 0;
};

}  // namespace

llvm::SectionMemoryManager::MemoryMapper& NearHostCodeMapper() {
  static auto* mapper = new NearMapper();
  return *mapper;
}

bool IsNearHostCode(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uintptr_t anchor = Anchor();
  return (a > anchor ? a - anchor : anchor - a) < kReach;
}

}  // namespace kiln
