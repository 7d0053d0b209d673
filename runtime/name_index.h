#pragma once
// NameIndex<T, &T::name>: the objects of a snapshot by name, rebuilt by every Cluster::Link.
//
// Why not std::unordered_map<string_view, T*>: at 100k tasks it allocated a node per task and
// its buckets apart, ~6 MB of fresh memory per snapshot, and was a fifth of the model build
// (docs/performance-history.md, "The task index without nodes"). Here the table is one array
// of (object pointer, name hash) slots, open addressing with linear probing at a load of at most
// one half; the name is read from the object itself, and only when the hashes agree. Built once,
// then only read: erasing leaves a tombstone that lookups step over, and nothing is inserted
// after an erase in Link.
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
    slots_.assign(size, Slot{});
    mask_ = size - 1;
    count_ = 0;
  }
  // Adds `t` under its name; false (and nothing added) when an object of that name is there.
  bool Insert(T* t) { return Insert(t, Hash(t->*kName)); }
  // Insert with the name's Hash computed beforehand. Cluster::Link hashes every task's uid in
  // one pass, then inserts with the slot of a later insert requested ahead (Prefetch): the
  // probe's line and the uid's were each a cache miss apiece, one after the other.
  bool Insert(T* t, size_t hash) {
    if (2 * (count_ + 1) > slots_.size()) Grow();
    const std::string_view name = t->*kName;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.object == nullptr) {
        s = Slot{t, hash};
        ++count_;
        return true;
      }
      if (Holds(s, hash, name)) return false;
    }
  }
  // Asks for the line where a probe for `hash` starts.
  void Prefetch(size_t hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[hash & mask_], 1);
  }
  static size_t Hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
  T* Find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const size_t hash = Hash(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.object == nullptr) return nullptr;
      if (Holds(s, hash, name)) return s.object;
    }
  }
  void Erase(std::string_view name) {
    if (slots_.empty()) return;
    const size_t hash = Hash(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.object == nullptr) return;
      if (Holds(s, hash, name)) {
        s.object = Tombstone();
        return;
      }
    }
  }

 private:
  // The name's whole hash is kept beside the object, so a probe reads another object's name
  // only when the hashes agree: at 100k tasks, reading the name of each object a probe passed
  // was a cache miss apiece and most of an insert's time.
  struct Slot {
    T* object = nullptr;
    size_t hash = 0;
  };

  static bool Holds(const Slot& s, size_t hash, std::string_view name) {
    return s.hash == hash && s.object != Tombstone() && s.object->*kName == name;
  }
  // Never an object's address: a static of this class.
  static T* Tombstone() {
    static char marker;
    return reinterpret_cast<T*>(&marker);
  }
  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    Reset(old.empty() ? 16 : old.size());
    for (const Slot& s : old)
      if (s.object != nullptr && s.object != Tombstone()) Insert(s.object);
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace kiln
