#pragma once
// NameTable: a fixed list of names, asked "is this one of them, and at which position?" — the
// node names a snapshot checks every pod's node against.
//
// Why not std::unordered_set<std::string>: a snapshot of 100k bound pods asks it 100k times per
// step (the copy of the cache, CompleteCluster, PartialCluster), and each answer read a node of
// the set allocated on its own: a cache miss per pod and step, about a fifth of a kiln serve
// snapshot's CPU (docs/performance.md, "Node names in the snapshot"). Here the names sit end to
// end in one buffer and the table is one array of (position, hash) slots, open addressing with
// linear probing at a load of at most one half: at 10k nodes the whole table is a few hundred
// KiB, which stays in the core's caches across the pods. NameIndex (runtime/name_index.h) is the
// same probe over objects that hold their own names; it reads a name from its object, which is
// what these checks must not do (the Node or the cache entry is the cold line).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class NameTable {
 public:
  NameTable() = default;
  // The names of `items` (each `name(item)` a string_view), at their positions in `items`. A
  // name given twice keeps its first position.
  template <typename Items, typename NameOf>
  NameTable(const Items& items, NameOf&& name_of) {
    Reserve(std::size(items));
    for (const auto& item : items) Add(name_of(item));
  }

  // Forgets every name; keeps the memory.
  void Clear() {
    chars_.clear();
    offsets_.assign(1, 0);
    std::fill(slots_.begin(), slots_.end(), Slot{});
    count_ = 0;
  }
  void Reserve(size_t n) {
    const size_t size = std::bit_ceil(std::max<size_t>(16, 2 * n));
    if (size > slots_.size()) Rehash(size);
    offsets_.reserve(n + 1);
  }
  // Adds `name` at the next position (size() before the call); false when it is already here
  // (the position is taken all the same, so positions follow the caller's list).
  bool Add(std::string_view name) {
    if (2 * (count_ + 1) > slots_.size()) Rehash(std::max<size_t>(16, 2 * slots_.size()));
    const uint32_t hash = Hash(name);
    size_t i = hash & mask_;
    bool fresh = true;
    for (; slots_[i].position != kEmpty; i = (i + 1) & mask_) {
      if (slots_[i].hash == hash && NameAt(slots_[i].position) == name) {
        fresh = false;
        break;
      }
    }
    const auto position = static_cast<uint32_t>(size());
    chars_.append(name);
    offsets_.push_back(static_cast<uint32_t>(chars_.size()));
    if (fresh) {
      slots_[i] = Slot{position, hash};
      ++count_;
    }
    return fresh;
  }
  // The position `name` was first added at, or -1.
  int64_t Find(std::string_view name) const {
    if (count_ == 0) return -1;
    const uint32_t hash = Hash(name);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.position == kEmpty) return -1;
      if (s.hash == hash && NameAt(s.position) == name) return s.position;
    }
  }
  bool Contains(std::string_view name) const { return Find(name) >= 0; }
  // The names added, duplicates included.
  size_t size() const { return offsets_.size() - 1; }
  std::string_view NameAt(size_t position) const {
    return std::string_view(chars_).substr(offsets_[position],
                                           offsets_[position + 1] - offsets_[position]);
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  // The hash's low half picks the slot; the slot keeps it, so a probe compares names only
  // when the hashes agree.
  struct Slot {
    uint32_t position = kEmpty;
    uint32_t hash = 0;
  };
  static uint32_t Hash(std::string_view name) {
    const size_t h = std::hash<std::string_view>{}(name);
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  void Rehash(size_t size) {
    std::vector<Slot> old(size);
    old.swap(slots_);
    mask_ = size - 1;
    for (const Slot& s : old) {
      if (s.position == kEmpty) continue;
      for (size_t i = s.hash & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].position == kEmpty) {
          slots_[i] = s;
          break;
        }
      }
    }
  }

  std::string chars_;                    // every name, end to end
  std::vector<uint32_t> offsets_{0};     // name i is chars_[offsets_[i], offsets_[i + 1])
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t count_ = 0;                     // distinct names
};

}  // namespace kiln
