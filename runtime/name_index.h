#pragma once
// NameIndex<T, &T::name>: the objects of a snapshot by name, rebuilt by every Cluster::Link.
//
// Why not std::unordered_map<string_view, T*>: at 100k tasks it allocated a node per task and
// its buckets apart, ~6 MB of fresh memory per snapshot, and was a fifth of the model build
// (docs/performance-history.md, "The task index without nodes"). Here the table is one array
// of object pointers, open addressing with linear probing at a load of at most one half; the
// name is read from the object itself. Built once, then only read: erasing leaves a tombstone
// that lookups step over, and nothing is inserted after an erase in Link.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

template <typename T, std::string T::*kName>
class NameIndex {
 public:
  // Empties the index and sizes it for `n` objects.
  void Reset(size_t n) {
    const size_t size = std::bit_ceil(std::max<size_t>(16, 2 * n));
    slots_.assign(size, nullptr);
    mask_ = size - 1;
    count_ = 0;
  }
  // Adds `t` under its name; false (and nothing added) when an object of that name is there.
  bool Insert(T* t) {
    if (2 * (count_ + 1) > slots_.size()) Grow();
    const std::string_view name = t->*kName;
    for (size_t i = Hash(name) & mask_;; i = (i + 1) & mask_) {
      T* s = slots_[i];
      if (s == nullptr) {
        slots_[i] = t;
        ++count_;
        return true;
      }
      if (s != Tombstone() && s->*kName == name) return false;
    }
  }
  T* Find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = Hash(name) & mask_;; i = (i + 1) & mask_) {
      T* s = slots_[i];
      if (s == nullptr) return nullptr;
      if (s != Tombstone() && s->*kName == name) return s;
    }
  }
  void Erase(std::string_view name) {
    if (slots_.empty()) return;
    for (size_t i = Hash(name) & mask_;; i = (i + 1) & mask_) {
      T* s = slots_[i];
      if (s == nullptr) return;
      if (s != Tombstone() && s->*kName == name) {
        slots_[i] = Tombstone();
        return;
      }
    }
  }

 private:
  static size_t Hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
  // Never an object's address: a static of this class.
  static T* Tombstone() {
    static char marker;
    return reinterpret_cast<T*>(&marker);
  }
  void Grow() {
    std::vector<T*> old;
    old.swap(slots_);
    Reset(old.empty() ? 16 : old.size());
    for (T* s : old)
      if (s != nullptr && s != Tombstone()) Insert(s);
  }

  std::vector<T*> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace kiln
