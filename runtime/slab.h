#pragma once
// Slab<T>: the objects of one kind that a Cluster owns (its nodes, its tasks), laid out one after
// another in large blocks instead of one heap allocation each, each object on its own cache line.
//
// Why: allocate's search visits a few hundred nodes per task in rotation, so at 10k nodes every
// node it reads has left the caches since the previous visit, and the session is bound by the
// misses. With one malloc per Node (~2.7 KiB) the nodes were scattered over the heap, between
// the strings and maps of other objects; in one slab they are in index order at a fixed stride,
// and a Node whose hottest fields come first has them in one line (model.h). At 10k nodes × 100k
// pods this halved allocate (docs/performance-history.md, "Node layout"). Advising the blocks as
// huge pages was measured too: it did not change allocate, and faulting in 2 MiB pages made the
// snapshot slower.
//
// Small clusters (tests, the simulator's examples) stay small: blocks start at 64 KiB and double
// up to 2 MiB.
//
// Pages are faulted in ahead of the cursor, 256 KiB per madvise(MADV_POPULATE_WRITE), instead of
// one fault per 4 KiB page on first touch (512 per 2 MiB block): in this project's VM each fault
// is an exit, and page faults were 38% of a 10k × 100k snapshot's model build. It took the
// simulator's snapshot from 354–376 to 258–279 ms (docs/performance-history.md, "Faulting the
// slabs in ahead"). The window bounds what is faulted in but not used to 256 KiB per slab.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <sys/mman.h>
#include <utility>
#include <vector>

namespace kiln {

template <typename T>
class Slab {
 public:
  Slab() = default;
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;
  Slab(Slab&& o) noexcept { Swap(o); }
  Slab& operator=(Slab&& o) noexcept {
    if (this != &o) {
      Clear();
      Swap(o);
    }
    return *this;
  }
  ~Slab() { Clear(); }

  // A value-initialised T at a stable address, owned by the slab.
  T& New() {
    // Room first, so that no throw can follow the construction.
    if (items_.size() == items_.capacity()) items_.reserve(std::max<size_t>(64, 2 * items_.size()));
    if (left_ < kStride) Grow();
    if (next_ + kStride > faulted_) FaultAhead();
    T* p = new (next_) T();
    next_ += kStride;
    left_ -= kStride;
    items_.push_back(p);
    return *p;
  }

  size_t size() const { return items_.size(); }
  // In creation order.
  T* const* begin() const { return items_.data(); }
  T* const* end() const { return items_.data() + items_.size(); }

 private:
  static constexpr size_t kLine = 64;
  static constexpr size_t kMaxBlock = size_t{2} << 20;
  static constexpr size_t kFirstBlock = size_t{64} << 10;
  static constexpr uintptr_t kPage = 4096;
  static constexpr uintptr_t kFaultWindow = uintptr_t{256} << 10;
  static constexpr size_t kStride = (sizeof(T) + kLine - 1) / kLine * kLine;
  static_assert(alignof(T) <= kLine);

  struct FreeBlock {
    void operator()(void* p) const { std::free(p); }
  };

  void Grow() {
    size_t size = blocks_.empty() ? kFirstBlock : std::min(2 * last_block_, kMaxBlock);
    while (size < kStride) size *= 2;
    blocks_.reserve(blocks_.size() + 1);
    void* block = std::aligned_alloc(kLine, size);
    if (block == nullptr) throw std::bad_alloc();
    blocks_.emplace_back(block);
    last_block_ = size;
    next_ = static_cast<char*>(block);
    left_ = size;
    faulted_ = next_;
  }

  // Faults in the window of the block from the cursor's page on. Best effort: a kernel before
  // 5.14 (EINVAL) leaves the faults to first touch. The cursor's page is inside the block, so
  // rounding down stays on mapped memory; populating changes no byte.
  void FaultAhead() {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(next_) & ~(kPage - 1);
    const uintptr_t block_end = reinterpret_cast<uintptr_t>(next_ + left_) & ~(kPage - 1);
    const uintptr_t end = std::min(begin + kFaultWindow, block_end);
    if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
    faulted_ = std::max(reinterpret_cast<char*>(end), next_ + kStride);
  }

  void Clear() {
    for (auto it = items_.rbegin(); it != items_.rend(); ++it) (*it)->~T();
    items_.clear();
    blocks_.clear();
    next_ = nullptr;
    left_ = 0;
    last_block_ = 0;
    faulted_ = nullptr;
  }

  void Swap(Slab& o) noexcept {
    std::swap(blocks_, o.blocks_);
    std::swap(items_, o.items_);
    std::swap(next_, o.next_);
    std::swap(left_, o.left_);
    std::swap(last_block_, o.last_block_);
    std::swap(faulted_, o.faulted_);
  }

  std::vector<std::unique_ptr<void, FreeBlock>> blocks_;
  std::vector<T*> items_;
  char* next_ = nullptr;
  size_t left_ = 0;
  size_t last_block_ = 0;
  char* faulted_ = nullptr;  // the current block is faulted in below this
};

}  // namespace kiln
