#pragma once
// The policy value runtime's internals shared by its two files (runtime_support.cc: arenas,
// handler entry and faults, lists; runtime_values.cc: strings, maps, resources). Nothing else
// includes it: the contract is stdlib/runtime_support.h.

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "runtime/host_work.h"
#include "runtime/session.h"
#include "stdlib/runtime_support.h"

namespace kiln {

// Insertion-ordered map from int or string keys to fixed-size value slots, living entirely in
// the arena it was created in (keys, values and index are arena memory: no malloc per call, no
// destructor, and a call's maps count against its memory budget). The returned slot pointer is
// valid until the next insertion. Policy maps are usually tiny (one entry per job or queue a call
// touches), so lookups scan the keys until the map outgrows kLinearLimit and only then build an
// open-addressing index.
//
// JIT'd code scans small int-keyed maps inline (codegen's `kiln.map.find_i`): it reads `size`,
// `int_keys` and `values` at the offsets asserted below, and calls kiln_rt_map_find_i only when
// size > kLinearLimit.
struct KMap {
  static constexpr int64_t kLinearLimit = kMapLinearLimit;

  int64_t size = 0;
  int64_t* int_keys = nullptr;  // Int maps
  char* values = nullptr;       // size * value_size bytes
  KStr* str_keys = nullptr;     // String maps: copies in `arena`
  int64_t capacity = 0;
  int32_t* index = nullptr;     // entry + 1 per bucket (0 = empty); null while size ≤ kLinearLimit
  int64_t index_mask = 0;
  Arena* arena = nullptr;
  MapKeyKind key_kind = MapKeyKind::Int;
  int32_t value_size = 0;
  // View-keyed maps past kLinearLimit (state maps from the first entry): entry + 1 per view
  // index (0 = none), so that JIT'd code finds a job's entry with one load, not a hash probe. A hint only: a lookup takes the
  // entry when its key is the key looked up and asks the hash index otherwise, so keys whose
  // index is negative, shared with another key, or far beyond the map's size (no table is grown
  // for those) are still found.
  int32_t* dense = nullptr;
  int64_t dense_size = 0;
  int32_t view_index_offset = -1;  // of the key's `index` (runtime/abi.h); -1: not view-keyed
  // A state map keeps its table from the first entry (a few queues are read through it on every
  // queue_order call); other maps only past kLinearLimit, where the inline scan stops.
  bool dense_eager = false;

  void* slot(int64_t i) { return values + i * value_size; }

  static uint64_t HashInt(int64_t key) {
    // Keys are often pointers (views): multiply-shift spreads their aligned low bits.
    uint64_t x = static_cast<uint64_t>(key) * kMapHashMultiplier;
    return x ^ (x >> kMapHashShift);
  }
  static uint64_t HashStr(std::string_view key) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key) {
      h ^= c;
      h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
  }
  uint64_t HashOf(int64_t i) const {
    return key_kind == MapKeyKind::Int
               ? HashInt(int_keys[i])
               : HashStr(std::string_view(str_keys[i].data, str_keys[i].size));
  }

  int64_t FindInt(int64_t key) const {
    if (!index) {
      for (int64_t i = 0; i < size; ++i)
        if (int_keys[i] == key) return i;
      return -1;
    }
    for (uint64_t b = HashInt(key) & index_mask;; b = (b + 1) & index_mask) {
      int32_t e = index[b];
      if (e == 0) return -1;
      if (int_keys[e - 1] == key) return e - 1;
    }
  }
  int64_t FindStr(std::string_view key) const {
    auto eq = [&](int64_t i) {
      return str_keys[i].size == key.size() &&
             (key.empty() || std::memcmp(str_keys[i].data, key.data(), key.size()) == 0);
    };
    if (!index) {
      for (int64_t i = 0; i < size; ++i)
        if (eq(i)) return i;
      return -1;
    }
    for (uint64_t b = HashStr(key) & index_mask;; b = (b + 1) & index_mask) {
      int32_t e = index[b];
      if (e == 0) return -1;
      if (eq(e - 1)) return e - 1;
    }
  }

  // Room for one more entry: arrays double in the arena (the old ones are abandoned there).
  void Reserve() {
    if (size < capacity) return;
    int64_t cap = capacity == 0 ? 4 : capacity * 2;
    if (cap > std::numeric_limits<int32_t>::max() - 1) throw std::length_error("map too large");
    auto grow = [&](auto*& array, size_t elem) {
      using T = std::remove_reference_t<decltype(*array)>;
      auto* fresh = static_cast<T*>(arena->Allocate(static_cast<size_t>(cap) * elem, 16));
      if (size > 0) std::memcpy(fresh, array, static_cast<size_t>(size) * elem);
      array = fresh;
    };
    if (key_kind == MapKeyKind::Int)
      grow(int_keys, sizeof(int64_t));
    else
      grow(str_keys, sizeof(KStr));
    if (value_size > 0) {
      grow(values, static_cast<size_t>(value_size));
    } else if (!values) {
      values = static_cast<char*>(arena->Allocate(1, 16));
    }
    capacity = cap;
  }
  void IndexEntry(int64_t i) {
    uint64_t b = HashOf(i) & index_mask;
    while (index[b] != 0) b = (b + 1) & index_mask;
    index[b] = static_cast<int32_t>(i + 1);
  }
  int64_t ViewIndexOf(int64_t key) const {
    if (key == 0) return -1;
    int64_t v;
    std::memcpy(&v, reinterpret_cast<const char*>(key) + view_index_offset, sizeof v);
    return v;
  }
  // Enters entry i in the dense table unless its slot is taken (the first key of an index keeps
  // it); a view index past the end but within twice the map's size first grows the table and
  // enters every entry again, so a table is at most ~4 × size.
  void DenseEntry(int64_t i) {
    const int64_t v = ViewIndexOf(int_keys[i]);
    if (v < 0) return;
    if (v >= dense_size) {
      if (v >= 2 * size + 64) return;
      int64_t n = 64;
      while (n <= v) n *= 2;
      dense = static_cast<int32_t*>(arena->Allocate(static_cast<size_t>(n) * sizeof(int32_t), 16));
      std::memset(dense, 0, static_cast<size_t>(n) * sizeof(int32_t));
      dense_size = n;
      for (int64_t j = 0; j < size; ++j) DenseEntry(j);
      return;
    }
    if (dense[v] == 0) dense[v] = static_cast<int32_t>(i + 1);
  }
  // Keeps the index at most half full once the map is past the linear limit.
  void MaybeReindex() {
    if (view_index_offset >= 0 && (dense_eager || size > kLinearLimit)) {
      if (!dense_eager && size == kLinearLimit + 1) {  // just past the limit: the earlier ones too
        for (int64_t j = 0; j < size; ++j) DenseEntry(j);
      } else {
        DenseEntry(size - 1);
      }
    }
    if (size <= kLinearLimit) return;
    if (index && size * 2 <= index_mask + 1) {
      IndexEntry(size - 1);
      return;
    }
    int64_t buckets = 64;
    while (buckets < size * 4) buckets *= 2;
    index = static_cast<int32_t*>(arena->Allocate(static_cast<size_t>(buckets) * sizeof(int32_t), 16));
    std::memset(index, 0, static_cast<size_t>(buckets) * sizeof(int32_t));
    index_mask = buckets - 1;
    for (int64_t i = 0; i < size; ++i) IndexEntry(i);
  }
  int64_t InsertInt(int64_t key) {
    Reserve();
    int_keys[size] = key;
    if (value_size > 0) std::memset(slot(size), 0, static_cast<size_t>(value_size));
    ++size;
    MaybeReindex();
    return size - 1;
  }
  int64_t InsertStr(std::string_view key) {
    Reserve();
    KStr copy{nullptr, 0};
    if (!key.empty()) {
      char* p = static_cast<char*>(arena->Allocate(key.size(), 1));
      std::memcpy(p, key.data(), key.size());
      copy = KStr{p, key.size()};
    }
    str_keys[size] = copy;
    if (value_size > 0) std::memset(slot(size), 0, static_cast<size_t>(value_size));
    ++size;
    MaybeReindex();
    return size - 1;
  }
};

static_assert(offsetof(KMap, size) == kMapSizeOffset && offsetof(KMap, int_keys) == kMapIntKeysOffset &&
              offsetof(KMap, values) == kMapValuesOffset && offsetof(KMap, index) == kMapIndexOffset &&
              offsetof(KMap, index_mask) == kMapIndexMaskOffset &&
              offsetof(KMap, dense) == kMapDenseOffset &&
              offsetof(KMap, dense_size) == kMapDenseSizeOffset);
static_assert(std::is_trivially_destructible_v<KMap>);

namespace rt {

// Abandons the handler call after a fault when a thunk armed its fault target (kiln_rt_enter);
// returns otherwise (a host-side caller, which gets the zero value).
void AbandonHandlerIfArmed();

// Thrown inside a Guard when the call's host work is spent (ChargeHostWork recorded the fault):
// the call is abandoned like any other fault.
struct HostWorkSpent {};

// Charges host work inside a Guard: an allocating intrinsic over the budget abandons the call.
inline void Charge(int64_t bytes) {
  if (!ChargeHostWorkInline(bytes)) throw HostWorkSpent{};
}

template <typename R, typename F>
R Guard(R zero, F&& f) {
  bool faulted = false;
  try {
    return static_cast<R>(f());
  } catch (const HostWorkSpent&) {
    faulted = true;  // recorded by ChargeHostWork
  } catch (const StateMemoryExceeded& e) {
    // The state is what outlives the call: over its budget the plugin is disabled for the rest
    // of the session (its state would be missing what this store meant to keep).
    std::string msg = fmt::format("host error: {}; plugin disabled for the rest of the session",
                                  e.what());
    FaultAndDisablePlugin(FaultKind::Memory, msg);
    faulted = true;
  } catch (const std::bad_alloc&) {
    // Only malloc failing: the arena's own limit is a length_error below.
    static constexpr std::string_view kMsg = "host error: out of memory";
    kiln_policy_fault_kind(1, kMsg.data(), kMsg.size());
    faulted = true;
  } catch (const std::length_error& e) {
    // An allocation past the call's memory budget (Arena::Allocate) or a collection too large.
    std::string msg = fmt::format("host error: {}", e.what());
    kiln_policy_fault_kind(1, msg.data(), msg.size());
    faulted = true;
  } catch (const std::exception& e) {
    std::string msg = fmt::format("host error: {}", e.what());
    kiln_rt_fault(msg.data(), static_cast<int64_t>(msg.size()));
    faulted = true;
  } catch (...) {
    kiln_rt_fault("host error", 10);
    faulted = true;
  }
  // Outside the catch blocks: longjmp must not skip the C++ runtime's exception cleanup.
  if (faulted) AbandonHandlerIfArmed();
  return zero;
}

inline std::string_view View(const char* s, int64_t n) {
  return n > 0 ? std::string_view(s, static_cast<size_t>(n)) : std::string_view();
}

inline KStr CopyToArena(std::string_view s, Arena* arena) {
  if (s.empty()) return KStr{nullptr, 0};
  char* p = static_cast<char*>(arena->Allocate(s.size(), 1));
  std::memcpy(p, s.data(), s.size());
  return KStr{p, s.size()};
}

inline Resource* NewResource(Arena* arena) {
  return new (arena->Allocate(sizeof(Resource), alignof(Resource))) Resource();
}


}  // namespace rt

}  // namespace kiln

// For the extern "C" functions of both files.
using kiln::Arena;
using kiln::CurrentArena;
using kiln::rt::Guard;
using kiln::KMap;
using kiln::MapKeyKind;
using kiln::Resource;
using kiln::rt::View;
