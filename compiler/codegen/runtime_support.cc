#include "compiler/codegen/runtime_support.h"

#include "runtime/score_cache.h"

#include "runtime/fit_error.h"
#include "runtime/session.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <cstdlib>
#include <cstring>
#include <strings.h>  // bcmp
#include <cstddef>
#include <limits>
#include <memory>
#include <type_traits>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

namespace {

constexpr size_t kBlockSize = 64 * 1024;
constexpr size_t kRetainedBytes = 4 * 1024 * 1024;
thread_local Arena* t_current_arena = nullptr;
thread_local int64_t t_now = 0;
// The buffer kiln_rt_list_append last grew: items, bytes used, bytes of capacity.
struct AppendBuffer {
  const void* items = nullptr;
  int64_t used = 0;
  int64_t capacity = 0;
};
thread_local AppendBuffer t_append;

// `n` items and then `elem` copied into a new buffer of the current arena with room for
// `*capacity` (set here) items: at least 8, else twice the new length. Throws when the arena
// cannot grow (the callers' Guard turns that into a fault).
void Charge(int64_t bytes);  // below, with Guard

KList CopyAppend(const void* items, int64_t n, const void* elem, int64_t elem_size,
                 int64_t* capacity) {
  int64_t bytes = n * elem_size;
  Charge(bytes + elem_size);
  *capacity = std::max<int64_t>(8, 2 * (n + 1));
  char* fresh = static_cast<char*>(CurrentArena()->Allocate(static_cast<size_t>(*capacity * elem_size)));
  if (bytes > 0) std::memcpy(fresh, items, static_cast<size_t>(bytes));
  std::memcpy(fresh + bytes, elem, static_cast<size_t>(elem_size));
  return KList{reinterpret_cast<const void* const*>(fresh), static_cast<size_t>(n + 1)};
}

// The handler entry to return to when an intrinsic faults (set by kiln_rt_enter, cleared by
// kiln_rt_leave). JIT'd code after a failed intrinsic would run on a null result, so the fault
// abandons the whole handler call instead: the session then counts the fault and treats the
// answer as the point's abstain/failure. JIT frames hold no C++ objects, so skipping them is safe.
// The target is a __builtin_setjmp buffer (frame pointer, resume address, stack pointer, two
// spare words), not a libc jmp_buf: the thunk fills it with three stores and LLVM's
// eh.sjlj.setjmp, which costs a fraction of _setjmp on every guarded handler call; the
// callee-saved registers are restored by the thunk's own epilogue after the jump.
using FaultJmp = void*[5];
thread_local FaultJmp t_fault_jmp;
thread_local bool t_fault_jmp_armed = false;

// Handler calls nest when a host function runs the session's other handlers on behalf of the
// current one (victim_order runs the session's task, job and queue orders). The inner call gets
// its own call arena and fault target, so it cannot reset the memory the outer handler is still
// using, and kiln_rt_leave (or a fault) hands the outer handler's back.
struct NestedCall {
  FaultJmp fault_jmp;
  Arena arena;
  Arena* outer_arena = nullptr;
  AppendBuffer outer_append;
};
thread_local int t_nesting = 0;  // handler calls in progress beyond the outermost

// The state Resources read this outermost handler call into something that may still hold them
// (kiln_rt_res_pin): stores into their slots copy instead of overwriting them in place. Cleared
// when the next outermost call starts, as nothing of a call outlives it but state. Past
// kMaxPins the set stops tracking and every store copies (the old behaviour), which keeps the
// check a short scan.
struct PinnedResources {
  static constexpr int kMaxPins = 32;
  const Resource* pins[kMaxPins];
  int n = 0;
  bool overflow = false;

  bool Has(const Resource* r) const {
    if (overflow) return true;
    for (int i = 0; i < n; ++i)
      if (pins[i] == r) return true;
    return false;
  }
  void Add(const Resource* r) {
    if (overflow || Has(r)) return;
    if (n == kMaxPins) {
      overflow = true;
      return;
    }
    pins[n++] = r;
  }
};
thread_local PinnedResources t_pinned;
thread_local std::vector<std::unique_ptr<NestedCall>> t_nested;

FaultJmp* CurrentFaultTarget() {
  return t_nesting == 0 ? &t_fault_jmp : &t_nested[t_nesting - 1]->fault_jmp;
}

// Ends the innermost nested call: the outer handler's arena and append buffer are current again
// and its fault target is armed.
void PopNestedCall() {
  NestedCall& call = *t_nested[t_nesting - 1];
  SetCurrentArena(call.outer_arena);
  t_append = call.outer_append;
  --t_nesting;
}

[[noreturn]] void AbandonHandler() {
  FaultJmp* target = CurrentFaultTarget();
  if (t_nesting > 0) {
    PopNestedCall();
  } else {
    t_fault_jmp_armed = false;
  }
  __builtin_longjmp(*target, 1);
}

// Thrown inside a Guard when the call's host work is spent (ChargeHostWork recorded the fault):
// the call is abandoned like any other fault.
struct HostWorkSpent {};

// Charges host work inside a Guard: an allocating intrinsic over the budget abandons the call.
void Charge(int64_t bytes) {
  if (!ChargeHostWork(bytes)) throw HostWorkSpent{};
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
  if (faulted && t_fault_jmp_armed) AbandonHandler();
  return zero;
}

std::string_view View(const char* s, int64_t n) {
  return n > 0 ? std::string_view(s, static_cast<size_t>(n)) : std::string_view();
}

KStr CopyToArena(std::string_view s, Arena* arena) {
  if (s.empty()) return KStr{nullptr, 0};
  char* p = static_cast<char*>(arena->Allocate(s.size(), 1));
  std::memcpy(p, s.data(), s.size());
  return KStr{p, s.size()};
}

Resource* NewResource(Arena* arena) {
  return new (arena->Allocate(sizeof(Resource), alignof(Resource))) Resource();
}

}  // namespace

Arena::~Arena() {
  Reset();
  for (Block& b : blocks_) std::free(b.data);
}

void* Arena::Allocate(size_t size, size_t align) {
  if (size == 0) size = 1;
  if (size > limit_ || used_total_ > limit_ - size) {
    if (state_)
      throw StateMemoryExceeded(
          fmt::format("policy state exceeded its memory budget of {} bytes", limit_));
    throw std::length_error(fmt::format("policy call exceeded its memory budget of {} bytes", limit_));
  }
  for (;;) {
    if (block_index_ < blocks_.size()) {
      Block& b = blocks_[block_index_];
      size_t start = (offset_ + align - 1) & ~(align - 1);
      if (start + size <= b.size) {
        offset_ = start + size;
        used_total_ += size;
        return b.data + start;
      }
      ++block_index_;
      offset_ = 0;
      continue;
    }
    size_t block = std::max(kBlockSize, size + align);
    char* data = static_cast<char*>(std::aligned_alloc(16, (block + 15) & ~size_t{15}));
    if (!data) throw std::bad_alloc();
    blocks_.push_back({data, block});
    block_bytes_ += block;
  }
}

bool Arena::TryExtend(const void* p, size_t size, size_t extra) {
  if (block_index_ >= blocks_.size() || p == nullptr) return false;
  Block& b = blocks_[block_index_];
  if (static_cast<const char*>(p) + size != b.data + offset_) return false;
  if (extra > b.size - offset_ || extra > limit_ || used_total_ > limit_ - extra) return false;
  offset_ += extra;
  used_total_ += extra;
  return true;
}

void Arena::ShrinkLast(const void* p, size_t allocated, size_t keep) {
  if (block_index_ >= blocks_.size() || keep > allocated) return;
  Block& b = blocks_[block_index_];
  if (static_cast<const char*>(p) + allocated != b.data + offset_) return;
  offset_ -= allocated - keep;
  used_total_ -= allocated - keep;
}

KMap* Arena::NewMap(int32_t key_kind, int32_t value_size) {
  auto* m = new (Allocate(sizeof(KMap), alignof(KMap))) KMap();
  m->arena = this;
  m->key_kind = static_cast<MapKeyKind>(key_kind);
  m->value_size = value_size;
  return m;
}

void Arena::Reset() {
  // Keep the blocks up to kRetainedBytes: a handler that builds a few lists over the candidate
  // nodes on every call (batch_node_order over 10k nodes) then reuses the same memory instead of
  // going to malloc (and, for blocks past malloc's mmap threshold, to the kernel) per call. A
  // rare call that needed more gives the excess back. O(1) unless there is excess: this runs
  // before every handler call.
  while (blocks_.size() > 1 && block_bytes_ > kRetainedBytes) {
    block_bytes_ -= blocks_.back().size;
    std::free(blocks_.back().data);
    blocks_.pop_back();
  }
  block_index_ = 0;
  offset_ = 0;
  used_total_ = 0;
}

Arena* SetCurrentArena(Arena* arena) {
  Arena* prev = t_current_arena;
  t_current_arena = arena;
  return prev;
}

namespace {
std::atomic<size_t> g_call_budget{size_t{1} << 30};
}  // namespace

void SetPolicyCallMemoryBudget(size_t bytes) {
  g_call_budget.store(bytes);
  InvalidateCachedScores();  // a cached score stood for a call under the old budget
}
size_t PolicyCallMemoryBudget() { return g_call_budget.load(); }

namespace {
std::atomic<size_t> g_state_budget{size_t{256} << 20};
}  // namespace

void SetPolicyStateMemoryBudget(size_t bytes) { g_state_budget.store(bytes); }
size_t PolicyStateMemoryBudget() { return g_state_budget.load(); }

Arena& ThreadCallArena() {
  thread_local Arena arena;
  return arena;
}

Arena* CurrentArena() {
  if (!t_current_arena) t_current_arena = &ThreadCallArena();
  return t_current_arena;
}

}  // namespace kiln

// Equality of two strings of the same length n past codegen's inline limit (kInlineStrEqBytes),
// charged n bytes of host work. Only JIT'd code calls it (codegen's `kiln.str_eq`), so it is
// declared here rather than in runtime_support.h.
extern "C" bool kiln_rt_str_eq(const char* a, const char* b, int64_t n);

namespace kiln {

std::vector<HostSymbol> RuntimeSupportSymbols() {
#define KILN_SYM(fn) HostSymbol{#fn, reinterpret_cast<void*>(&fn)}
  return {
      KILN_SYM(kiln_rt_alloc),          KILN_SYM(kiln_rt_enter),
      KILN_SYM(kiln_rt_leave),
      // String equality calls memcmp (or bcmp, which LLVM may turn it into) when it is not
      // expanded inline.
      HostSymbol{"memcmp", reinterpret_cast<void*>(&std::memcmp)},
      HostSymbol{"bcmp", reinterpret_cast<void*>(&bcmp)},
      KILN_SYM(kiln_rt_set_arena),      KILN_SYM(kiln_rt_str_cmp),        KILN_SYM(kiln_rt_fit_combine),
      KILN_SYM(kiln_rt_str_eq),
      KILN_SYM(kiln_rt_str_contains),   KILN_SYM(kiln_rt_str_starts_with),
      KILN_SYM(kiln_rt_str_ends_with),  KILN_SYM(kiln_rt_str_concat),
      KILN_SYM(kiln_rt_str_of_int),     KILN_SYM(kiln_rt_str_of_float),
      KILN_SYM(kiln_rt_str_copy),       KILN_SYM(kiln_rt_str_split),       KILN_SYM(kiln_rt_map_new),
      KILN_SYM(kiln_rt_map_new_view),
      KILN_SYM(kiln_rt_map_find_i),     KILN_SYM(kiln_rt_map_find_s),
      KILN_SYM(kiln_rt_map_slot_i),     KILN_SYM(kiln_rt_map_slot_s),
      KILN_SYM(kiln_rt_map_size),       KILN_SYM(kiln_rt_map_key_i),
      KILN_SYM(kiln_rt_map_key_s),      KILN_SYM(kiln_rt_map_value_at),
      KILN_SYM(kiln_rt_map_copy),       KILN_SYM(kiln_rt_res_new),
      KILN_SYM(kiln_rt_res_copy),       KILN_SYM(kiln_rt_res_store),      KILN_SYM(kiln_rt_res_pin),
      KILN_SYM(kiln_rt_res_add),        KILN_SYM(kiln_rt_res_add_into),
      KILN_SYM(kiln_rt_res_add_to),     KILN_SYM(kiln_rt_res_sub_to),
      KILN_SYM(kiln_rt_res_sub),        KILN_SYM(kiln_rt_res_mul),
      KILN_SYM(kiln_rt_res_set),        KILN_SYM(kiln_rt_res_get),
      KILN_SYM(kiln_rt_res_id),         KILN_SYM(kiln_rt_res_less_equal),
      KILN_SYM(kiln_rt_res_less),       KILN_SYM(kiln_rt_res_equal),
      KILN_SYM(kiln_rt_res_is_empty),   KILN_SYM(kiln_rt_res_names),
      KILN_SYM(kiln_rt_sort),           KILN_SYM(kiln_rt_list_append),  KILN_SYM(kiln_rt_list_grow),           KILN_SYM(kiln_rt_now),
      KILN_SYM(kiln_rt_set_now),        KILN_SYM(kiln_rt_fault),
  };
#undef KILN_SYM
}

}  // namespace kiln

using kiln::Arena;
using kiln::CurrentArena;
using kiln::Guard;
using kiln::KMap;
using kiln::MapKeyKind;
using kiln::Resource;
using kiln::View;

extern "C" {

void* kiln_rt_alloc(int64_t size) {
  return Guard<void*>(nullptr, [&]() -> void* {
    void* p = CurrentArena()->Allocate(static_cast<size_t>(std::max<int64_t>(size, 1)));
    std::memset(p, 0, static_cast<size_t>(std::max<int64_t>(size, 1)));
    return p;
  });
}

void* kiln_rt_enter() {
  if (kiln::t_fault_jmp_armed) {
    // A handler running inside another one's host call (see NestedCall).
    if (static_cast<size_t>(kiln::t_nesting) == kiln::t_nested.size())
      kiln::t_nested.push_back(std::make_unique<kiln::NestedCall>());
    kiln::NestedCall& call = *kiln::t_nested[kiln::t_nesting++];
    call.outer_arena = kiln::CurrentArena();
    call.outer_append = kiln::t_append;
    kiln::t_append = {};
    call.arena.Reset();
    call.arena.set_limit(kiln::PolicyCallMemoryBudget());
    kiln::SetCurrentArena(&call.arena);
    return &call.fault_jmp;
  }
  kiln::t_append = {};
  kiln::t_pinned.n = 0;
  kiln::t_pinned.overflow = false;
  Arena& arena = kiln::ThreadCallArena();
  arena.Reset();
  arena.set_limit(kiln::PolicyCallMemoryBudget());
  kiln::SetCurrentArena(&arena);
  kiln::t_fault_jmp_armed = true;
  return &kiln::t_fault_jmp;
}

void kiln_rt_leave() {
  if (kiln::t_nesting > 0) {
    kiln::PopNestedCall();
    return;
  }
  kiln::t_fault_jmp_armed = false;
}

void* kiln_rt_set_arena(void* arena) {
  kiln::t_append = {};
  return kiln::SetCurrentArena(static_cast<Arena*>(arena));
}

int32_t kiln_rt_fit_combine(int32_t code_a, const char* a, int64_t an, int32_t code_b,
                            const char* b, int64_t bn, KStr* out_reason) {
  auto rank = [](int32_t code) {
    switch (static_cast<kiln::StatusCode>(code)) {
      case kiln::StatusCode::Success: return 0;
      case kiln::StatusCode::Unschedulable: return 1;
      case kiln::StatusCode::Wait:
      case kiln::StatusCode::Skip: return 2;
      case kiln::StatusCode::Error: return 3;
      case kiln::StatusCode::UnschedulableAndUnresolvable: return 4;
    }
    return 3;  // an unknown code blocks like an error
  };
  if (code_a == 0) {
    *out_reason = KStr{b, static_cast<size_t>(bn > 0 ? bn : 0)};
    return code_b;
  }
  if (code_b == 0) {
    *out_reason = KStr{a, static_cast<size_t>(an > 0 ? an : 0)};
    return code_a;
  }
  *out_reason = Guard<KStr>(KStr{nullptr, 0}, [&] {
    std::string_view va = View(a, an), vb = View(b, bn);
    kiln::Charge(static_cast<int64_t>(va.size() + vb.size()));
    char* p = static_cast<char*>(kiln::CurrentArena()->Allocate(va.size() + vb.size() + 1, 1));
    if (!va.empty()) std::memcpy(p, va.data(), va.size());
    p[va.size()] = kiln::kFitReasonSeparator;
    if (!vb.empty()) std::memcpy(p + va.size() + 1, vb.data(), vb.size());
    return KStr{p, va.size() + vb.size() + 1};
  });
  return rank(code_b) > rank(code_a) ? code_b : code_a;
}

int32_t kiln_rt_str_cmp(const char* a, int64_t an, const char* b, int64_t bn) {
  // A comparison walks at most the shorter string. Over budget: "equal" (the call is faulted).
  if (!kiln::ChargeHostWork(std::min(an, bn))) return 0;
  int c = View(a, an).compare(View(b, bn));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool kiln_rt_str_eq(const char* a, const char* b, int64_t n) {
  // Equal lengths past the inline limit (codegen's kInlineStrEqBytes): the comparison may walk
  // all n bytes. Over budget: "differ" (the call is faulted, its answer ignored).
  if (!kiln::ChargeHostWork(std::max<int64_t>(n, 0))) return false;
  return n <= 0 || std::memcmp(a, b, static_cast<size_t>(n)) == 0;
}

bool kiln_rt_str_contains(const char* s, int64_t n, const char* sub, int64_t subn) {
  // The search walks the haystack (memchr-style, about once).
  if (!kiln::ChargeHostWork(std::max<int64_t>(n, 0))) return false;
  return View(s, n).find(View(sub, subn)) != std::string_view::npos;
}

bool kiln_rt_str_starts_with(const char* s, int64_t n, const char* p, int64_t pn) {
  if (!kiln::ChargeHostWork(std::min(n, pn))) return false;
  return View(s, n).starts_with(View(p, pn));
}

bool kiln_rt_str_ends_with(const char* s, int64_t n, const char* p, int64_t pn) {
  if (!kiln::ChargeHostWork(std::min(n, pn))) return false;
  return View(s, n).ends_with(View(p, pn));
}

void kiln_rt_str_concat(const char* a, int64_t an, const char* b, int64_t bn, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0}, [&] {
    // Built in the arena directly: no host copy the call's memory budget would not see.
    std::string_view va = View(a, an), vb = View(b, bn);
    const size_t total = va.size() + vb.size();
    if (total == 0) return KStr{nullptr, 0};
    Arena* arena = CurrentArena();
    // `s = s + part` in a loop: when `s` ends where the arena's next allocation would start,
    // the part is appended in place, Go-slice style. Nothing can see the bytes past a string's
    // end (every other string ends at or before that point), so no value changes, and building
    // a string of N parts costs N appends instead of N copies of a growing prefix.
    if (!va.empty() && !vb.empty() && arena->TryExtend(va.data(), va.size(), vb.size())) {
      kiln::Charge(static_cast<int64_t>(vb.size()));
      std::memcpy(const_cast<char*>(va.data()) + va.size(), vb.data(), vb.size());
      return KStr{va.data(), total};
    }
    kiln::Charge(static_cast<int64_t>(total));
    // A longer result gets room to grow in place (given back to the arena, so it costs only
    // what the next allocations do not reuse).
    size_t room = total >= 256 ? 2 * total : total;
    char* p = nullptr;
    try {
      p = static_cast<char*>(arena->Allocate(room, 1));
    } catch (const std::length_error&) {
      if (room == total) throw;
      room = total;
      p = static_cast<char*>(arena->Allocate(room, 1));
    }
    if (!va.empty()) std::memcpy(p, va.data(), va.size());
    if (!vb.empty()) std::memcpy(p + va.size(), vb.data(), vb.size());
    if (room != total) arena->ShrinkLast(p, room, total);
    return KStr{p, total};
  });
}

void kiln_rt_str_of_int(int64_t v, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0},
                     [&] { return kiln::CopyToArena(fmt::format("{}", v), CurrentArena()); });
}

void kiln_rt_str_of_float(double v, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0},
                     [&] { return kiln::CopyToArena(fmt::format("{}", v), CurrentArena()); });
}

void kiln_rt_str_copy(const char* s, int64_t n, void* arena, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0}, [&] {
    kiln::Charge(std::max<int64_t>(n, 0));
    return kiln::CopyToArena(View(s, n), arena ? static_cast<Arena*>(arena) : CurrentArena());
  });
}

void kiln_rt_str_split(const char* s, int64_t n, const char* sep, int64_t sepn, KList* out) {
  *out = Guard<KList>(KList{nullptr, 0}, [&] {
    std::string_view str = View(s, n), separator = View(sep, sepn);
    // Walks the string once; builds a part per separator found (charged as they are found, so
    // a split into bytes of a huge string stops at the budget, not after building every part).
    kiln::Charge(static_cast<int64_t>(str.size()));
    std::vector<std::string_view> parts;
    auto part = [&](std::string_view p) {
      kiln::Charge(static_cast<int64_t>(sizeof(KStr)));
      parts.push_back(p);
    };
    if (separator.empty()) {
      for (size_t i = 0; i < str.size(); ++i) part(str.substr(i, 1));
    } else {
      size_t start = 0;
      for (;;) {
        size_t pos = str.find(separator, start);
        if (pos == std::string_view::npos) break;
        part(str.substr(start, pos - start));
        start = pos + separator.size();
      }
      part(str.substr(start));
    }
    auto* items = static_cast<KStr*>(CurrentArena()->Allocate(sizeof(KStr) * (parts.size() + 1)));
    // Parts point into `s`, which outlives the call (a view field or an arena string).
    for (size_t i = 0; i < parts.size(); ++i) items[i] = KStr{parts[i].data(), parts[i].size()};
    return KList{reinterpret_cast<const void* const*>(items), parts.size()};
  });
}

void* kiln_rt_map_new(int32_t key_kind, int32_t value_size) {
  return Guard<void*>(nullptr, [&] { return CurrentArena()->NewMap(key_kind, value_size); });
}

void* kiln_rt_map_new_view(int32_t value_size, int32_t index_offset, int32_t eager) {
  return Guard<void*>(nullptr, [&] {
    KMap* m = CurrentArena()->NewMap(static_cast<int32_t>(MapKeyKind::Int), value_size);
    m->view_index_offset = index_offset;
    m->dense_eager = eager != 0;
    return m;
  });
}

void* kiln_rt_map_find_i(void* map, int64_t key) {
  auto* m = static_cast<KMap*>(map);
  int64_t i = m->FindInt(key);
  return i < 0 ? nullptr : m->slot(i);
}

// A string key's lookup hashes and compares it: charged its length as host work, as `==` on
// long strings is (an absent answer once the budget is spent; the call is faulted).
void* kiln_rt_map_find_s(void* map, const char* key, int64_t len) {
  if (!kiln::ChargeHostWork(std::max<int64_t>(len, 0))) return nullptr;
  auto* m = static_cast<KMap*>(map);
  int64_t i = m->FindStr(View(key, len));
  return i < 0 ? nullptr : m->slot(i);
}

void* kiln_rt_map_slot_i(void* map, int64_t key, bool* inserted) {
  return Guard<void*>(nullptr, [&] {
    auto* m = static_cast<KMap*>(map);
    int64_t i = m->FindInt(key);
    *inserted = i < 0;
    if (i < 0) i = m->InsertInt(key);
    return m->slot(i);
  });
}

void* kiln_rt_map_slot_s(void* map, const char* key, int64_t len, bool* inserted) {
  return Guard<void*>(nullptr, [&] {
    kiln::Charge(std::max<int64_t>(len, 0));
    auto* m = static_cast<KMap*>(map);
    int64_t i = m->FindStr(View(key, len));
    *inserted = i < 0;
    if (i < 0) i = m->InsertStr(View(key, len));
    return m->slot(i);
  });
}

int64_t kiln_rt_map_size(const void* map) { return static_cast<const KMap*>(map)->size; }

int64_t kiln_rt_map_key_i(const void* map, int64_t index) {
  return static_cast<const KMap*>(map)->int_keys[index];
}

void kiln_rt_map_key_s(const void* map, int64_t index, KStr* out) {
  *out = static_cast<const KMap*>(map)->str_keys[index];
}

void* kiln_rt_map_value_at(void* map, int64_t index) {
  return static_cast<KMap*>(map)->slot(index);
}

void* kiln_rt_map_copy(const void* map, void* arena) {
  return Guard<void*>(nullptr, [&] {
    const auto* src = static_cast<const KMap*>(map);
    KMap* dst = static_cast<Arena*>(arena)->NewMap(static_cast<int32_t>(src->key_kind),
                                                   src->value_size);
    dst->view_index_offset = src->view_index_offset;
    dst->dense_eager = src->dense_eager;
    for (int64_t i = 0; i < src->size; ++i) {
      int64_t at = src->key_kind == MapKeyKind::Int
                       ? dst->InsertInt(src->int_keys[i])
                       : dst->InsertStr(std::string_view(src->str_keys[i].data, src->str_keys[i].size));
      if (src->value_size > 0)
        std::memcpy(dst->slot(at), src->values + i * src->value_size,
                    static_cast<size_t>(src->value_size));
    }
    return dst;
  });
}

Resource* kiln_rt_res_new() {
  return Guard<Resource*>(nullptr, [&] { return kiln::NewResource(CurrentArena()); });
}

Resource* kiln_rt_res_copy(const Resource* r, void* arena) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::NewResource(arena ? static_cast<Arena*>(arena) : CurrentArena());
    *out = *r;
    return out;
  });
}

Resource* kiln_rt_res_store(Resource* old, const Resource* v, const Resource* empty, void* arena) {
  if (old && old != empty && !kiln::t_pinned.Has(old)) {
    if (old != v) *old = *v;
    return old;
  }
  return kiln_rt_res_copy(v, arena);
}

void kiln_rt_res_pin(const Resource* r) {
  if (r) kiln::t_pinned.Add(r);
}

Resource* kiln_rt_res_add(const Resource* a, const Resource* b) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::NewResource(CurrentArena());
    *out = *a;
    out->Add(*b);
    return out;
  });
}

void kiln_rt_res_add_into(Resource* acc, const Resource* b) { acc->Add(*b); }

static_assert(std::is_trivially_destructible_v<Resource> && sizeof(Resource) % 8 == 0,
              "kiln_rt_res_add_to/sub_to build Resources in JIT'd stack slots of i64s");

void kiln_rt_res_add_to(Resource* out, const Resource* a, const Resource* b) {
  new (out) Resource(*a);
  out->Add(*b);
}

void kiln_rt_res_sub_to(Resource* out, const Resource* a, const Resource* b) {
  new (out) Resource(*a);
  out->SubWithoutAssert(*b);
  for (int i = 0; i < kiln::kMaxResources; ++i)
    if (out->values[i] < 0) out->values[i] = 0;
}

Resource* kiln_rt_res_sub(const Resource* a, const Resource* b) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::NewResource(CurrentArena());
    *out = *a;
    // The language defines `a - b` as never below zero per dimension.
    out->SubWithoutAssert(*b);
    for (int i = 0; i < kiln::kMaxResources; ++i)
      if (out->values[i] < 0) out->values[i] = 0;
    return out;
  });
}

Resource* kiln_rt_res_mul(const Resource* a, double f) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::NewResource(CurrentArena());
    *out = *a;
    out->Multi(f);
    return out;
  });
}

void kiln_rt_res_set(Resource* r, int32_t id, double v) {
  if (id >= 0 && id < kiln::kMaxResources) r->Set(static_cast<kiln::ResourceId>(id), v);
}

double kiln_rt_res_get(const Resource* r, int32_t id) {
  return id >= 0 && id < kiln::kMaxResources ? r->values[id] : 0.0;
}

int32_t kiln_rt_res_id(const char* name, int64_t len) {
  // Names seen before (every name after the first lookup): the lock-free Find, without the
  // Guard and Result around Intern.
  if (auto known = kiln::ResourceNames::Find(View(name, len))) return *known;
  return Guard<int32_t>(-1, [&]() -> int32_t {
    auto id = kiln::ResourceNames::Intern(View(name, len));
    return id.ok() ? static_cast<int32_t>(*id) : -1;
  });
}

bool kiln_rt_res_less_equal(const Resource* a, const Resource* b, int32_t missing) {
  return a->LessEqual(*b, static_cast<kiln::DimensionDefault>(missing));
}

bool kiln_rt_res_less(const Resource* a, const Resource* b, int32_t missing) {
  return a->Less(*b, static_cast<kiln::DimensionDefault>(missing));
}

bool kiln_rt_res_equal(const Resource* a, const Resource* b) {
  return a->Equal(*b, kiln::DimensionDefault::Zero);
}

bool kiln_rt_res_is_empty(const Resource* r) { return r->IsEmpty(); }

void kiln_rt_res_names(const Resource* r, KList* out) {
  *out = Guard<KList>(KList{nullptr, 0}, [&] {
    kiln::ResourceIdList ids = r->ResourceNames();
    auto* items = static_cast<KStr*>(CurrentArena()->Allocate(sizeof(KStr) * (ids.size + 1)));
    for (int i = 0; i < ids.size; ++i) {
      std::string_view n = kiln::ResourceNames::Name(ids.ids[i]);
      items[i] = KStr{n.data(), n.size()};
    }
    return KList{reinterpret_cast<const void* const*>(items), static_cast<size_t>(ids.size)};
  });
}

void kiln_rt_list_append(const void* items, int64_t n, const void* elem, int64_t elem_size,
                         KList* out) {
  auto& buf = kiln::t_append;
  int64_t bytes = n * elem_size;
  if (items != nullptr && items == buf.items && bytes == buf.used &&
      buf.used + elem_size <= buf.capacity) {
    std::memcpy(static_cast<char*>(const_cast<void*>(items)) + bytes, elem,
                static_cast<size_t>(elem_size));
    buf.used += elem_size;
    *out = KList{static_cast<const void* const*>(items), static_cast<size_t>(n + 1)};
    return;
  }
  *out = Guard<KList>(KList{nullptr, 0}, [&] {
    int64_t capacity = 0;
    KList grown = kiln::CopyAppend(items, n, elem, elem_size, &capacity);
    buf = {grown.items, bytes + elem_size, capacity * elem_size};
    return grown;
  });
}

void kiln_rt_list_grow(const void* items, int64_t n, const void* elem, int64_t elem_size,
                       KListBuilder* builder, KList* out) {
  *out = Guard<KList>(KList{nullptr, 0}, [&] {
    int64_t capacity = 0;
    KList grown = kiln::CopyAppend(items, n, elem, elem_size, &capacity);
    *builder = KListBuilder{grown.items, n + 1, capacity};
    return grown;
  });
}

void kiln_rt_sort(void* elems, int64_t n, int64_t elem_size, void* keys, int32_t key_kind,
                  bool descending) {
  Guard<int>(0, [&] {
    kiln::Charge(n * (elem_size + static_cast<int64_t>(sizeof(int64_t))));
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    auto cmp = [&](int64_t a, int64_t b) -> int {
      if (key_kind == 0) {
        double ka = static_cast<double*>(keys)[a], kb = static_cast<double*>(keys)[b];
        return ka < kb ? -1 : (ka > kb ? 1 : 0);
      }
      const KStr& ka = static_cast<KStr*>(keys)[a];
      const KStr& kb = static_cast<KStr*>(keys)[b];
      return kiln_rt_str_cmp(ka.data, static_cast<int64_t>(ka.size), kb.data,
                             static_cast<int64_t>(kb.size));
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      int c = cmp(a, b);
      return descending ? c > 0 : c < 0;
    });
    size_t es = static_cast<size_t>(elem_size);
    size_t ks = key_kind == 0 ? sizeof(double) : sizeof(KStr);
    std::vector<char> e_copy(static_cast<char*>(elems), static_cast<char*>(elems) + es * n);
    std::vector<char> k_copy(static_cast<char*>(keys), static_cast<char*>(keys) + ks * n);
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(static_cast<char*>(elems) + es * i, e_copy.data() + es * order[i], es);
      std::memcpy(static_cast<char*>(keys) + ks * i, k_copy.data() + ks * order[i], ks);
    }
    return 0;
  });
}

int64_t kiln_rt_now() { return kiln::t_now; }

void kiln_rt_set_now(int64_t ns) { kiln::t_now = ns; }

// The session attributes the fault to the plugin and point running on this thread, counts it
// and treats the answer as that point's abstain/failure (runtime/session.h).
void kiln_rt_fault(const char* message, int64_t len) {
  kiln_policy_fault(message, len > 0 ? static_cast<size_t>(len) : 0);
}

}  // extern "C"
