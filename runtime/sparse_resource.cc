#include "runtime/sparse_resource.h"

#include <algorithm>
#include <cstring>

namespace kiln {

Resource SparseResource::Expand() const {
  Resource r;
  r.present = present_;
  const double* v = values();
  int i = 0;
  ForEachBit(present_, [&](ResourceId id) { r.values[id] = v[i++]; });
  return r;
}

void SparseResource::Assign(const Resource& r) {
  const int n = std::popcount(r.present);
  double* out = inline_;
  if (n > kInline) {
    heap_ = std::make_unique<double[]>(n);
    out = heap_.get();
  } else {
    heap_.reset();
  }
  std::fill(std::begin(inline_), std::end(inline_), 0.0);
  present_ = r.present;
  int i = 0;
  ForEachBit(present_, [&](ResourceId id) { out[i++] = r.values[id]; });
}

void SparseResource::CopyFrom(const SparseResource& o) {
  present_ = o.present_;
  std::memcpy(inline_, o.inline_, sizeof inline_);
  if (o.heap_) {
    const int n = std::popcount(o.present_);
    heap_ = std::make_unique<double[]>(n);
    std::memcpy(heap_.get(), o.heap_.get(), n * sizeof(double));
  } else {
    heap_.reset();
  }
}

void SparseResource::MoveFrom(SparseResource& o) noexcept {
  present_ = o.present_;
  std::memcpy(inline_, o.inline_, sizeof inline_);
  heap_ = std::move(o.heap_);
  o.present_ = Resource::kBaseMask;
  std::fill(std::begin(o.inline_), std::end(o.inline_), 0.0);
}

void SparseResource::Set(ResourceId id, double v) {
  if (Has(id)) {
    const_cast<double*>(values())[Slot(id)] = v;
    return;
  }
  Resource r = Expand();
  r.Set(id, v);
  Assign(r);
}

SparseResource& SparseResource::Add(const Resource& rr) {
  Resource r = Expand();
  r.Add(rr);
  Assign(r);
  return *this;
}

bool operator==(const SparseResource& a, const SparseResource& b) {
  if (a.present_ != b.present_) return false;
  return std::equal(a.values(), a.values() + std::popcount(a.present_), b.values());
}

}  // namespace kiln
