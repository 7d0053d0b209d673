#pragma once
// A Resource as a spec keeps it: the present bits and the values of the present dimensions only.
//
// Why: a Resource is 264 bytes (32 dimensions inline), the shape the session's arithmetic and
// the JIT'd policies want. A pod's spec holds two (requests and limits) and a cluster holds one
// spec per pod, yet a pod names three or four dimensions. At 100k pods the two dense vectors were
// half of the pod specs' memory (docs/performance-history.md, "Sparse pod specs and shared
// resreqs"). This one is 56 bytes for up to kInline dimensions and goes to the heap only beyond
// them.
//
// It converts to and from Resource both ways, so a spec's reader writes `Resource r = pod.requests`
// and a loader `pod.requests = parsed`; the round trip keeps every present bit and value, a
// present dimension at 0 included.

#include <bit>
#include <cstdint>
#include <memory>

#include "runtime/resource.h"

namespace kiln {

class SparseResource {
 public:
  // Dimensions kept inline: cpu, memory and three more (a GPU, ephemeral storage, ...).
  static constexpr int kInline = 5;

  // cpu and memory present at 0, like Resource{}.
  SparseResource() = default;
  SparseResource(const Resource& r) { Assign(r); }  // NOLINT: converts implicitly by design
  SparseResource(const SparseResource& o) { CopyFrom(o); }
  SparseResource(SparseResource&& o) noexcept { MoveFrom(o); }
  SparseResource& operator=(const SparseResource& o) {
    if (this != &o) CopyFrom(o);
    return *this;
  }
  SparseResource& operator=(SparseResource&& o) noexcept {
    if (this != &o) MoveFrom(o);
    return *this;
  }
  SparseResource& operator=(const Resource& r) {
    Assign(r);
    return *this;
  }

  // The dense form, as the session and the policies read it.
  Resource Expand() const;
  operator Resource() const { return Expand(); }  // NOLINT: converts implicitly by design

  uint32_t present() const { return present_; }
  bool Has(ResourceId id) const { return (present_ >> id) & 1u; }
  double Get(ResourceId id) const { return Has(id) ? values()[Slot(id)] : 0; }
  double cpu() const { return Get(kCpu); }
  double memory() const { return Get(kMemory); }
  bool HasScalars() const { return (present_ & ~Resource::kBaseMask) != 0; }
  bool IsEmpty() const { return Expand().IsEmpty(); }

  // Writes go through the dense form: specs are written once, when they are read or decoded.
  void Set(ResourceId id, double v);
  SparseResource& Add(const Resource& rr);

  friend bool operator==(const SparseResource& a, const SparseResource& b);

 private:
  // Index of id's value among the present dimensions (ids below it that are present).
  int Slot(ResourceId id) const { return std::popcount(present_ & ((1u << id) - 1u)); }
  const double* values() const { return heap_ ? heap_.get() : inline_; }
  void Assign(const Resource& r);
  void CopyFrom(const SparseResource& o);
  // Takes o's values and leaves o empty (a moved-from spec stays valid).
  void MoveFrom(SparseResource& o) noexcept;

  uint32_t present_ = Resource::kBaseMask;
  double inline_[kInline] = {};
  std::unique_ptr<double[]> heap_;  // all values when more than kInline are present
};

}  // namespace kiln
