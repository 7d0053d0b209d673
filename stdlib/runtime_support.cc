// The policy value runtime JIT'd code calls (stdlib/runtime_support.h): arenas and memory
// budgets, handler entry and faults, list appends and the session clock; the string,
// map and resource functions and sorting are in runtime_values.cc.
#include "stdlib/runtime_support.h"

#include "runtime/fit_error.h"
#include "runtime/score_cache.h"
#include "runtime/session.h"
#include "stdlib/runtime_internal.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
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

namespace detail {
constinit thread_local Arena* t_current_arena = nullptr;
}  // namespace detail
using detail::t_current_arena;

namespace {

constexpr size_t kBlockSize = 64 * 1024;
constexpr size_t kRetainedBytes = 4 * 1024 * 1024;
constexpr size_t kRetainWindow = 256;  // resets per retention window (Arena::Reset)
thread_local int64_t t_now = 0;
// The buffer kiln_rt_list_append last grew: items, bytes used, bytes of capacity.
struct AppendBuffer {
  const void* items = nullptr;
  int64_t used = 0;
  int64_t capacity = 0;
};
thread_local AppendBuffer t_append;

using rt::Charge;

// `n` items and then `elem` copied into a new buffer of the current arena with room for
// `*capacity` (set here) items: at least 8, else twice the new length. Throws when the arena
// cannot grow (the callers' Guard turns that into a fault).
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

}  // namespace

namespace rt {

void AbandonHandlerIfArmed() {
  if (t_fault_jmp_armed) AbandonHandler();
}

}  // namespace rt

Arena::~Arena() { Release(); }

void Arena::Release() {
  for (Block& b : blocks_) std::free(b.data);
  blocks_.clear();
  block_bytes_ = 0;
  block_index_ = 0;
  offset_ = 0;
  used_total_ = 0;
  window_blocks_ = 0;
  window_resets_ = 0;
  keep_blocks_ = SIZE_MAX;
}

void* Arena::AllocateSlow(size_t size, size_t align) {
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

size_t Arena::BytesInUseOffset() { return offsetof(Arena, used_total_); }

KMap* Arena::NewMap(int32_t key_kind, int32_t value_size) {
  auto* m = new (Allocate(sizeof(KMap), alignof(KMap))) KMap();
  m->arena = this;
  m->key_kind = static_cast<MapKeyKind>(key_kind);
  m->value_size = value_size;
  return m;
}

void Arena::Reset() {
  // Keep the blocks up to kRetainedBytes that the calls of the last window needed: a handler
  // that builds a few lists over the candidate nodes on every call (batch_node_order over 10k
  // nodes) then reuses the same memory instead of going to malloc (and, for blocks past malloc's
  // mmap threshold, to the kernel) per call, while the blocks of one large call (a session_open
  // that copies a Resource per job) go back once a whole window of calls after it did without
  // them, that is after one to two windows.
  // Calls fill the blocks in order, so a call that needed k blocks used the first k. O(1)
  // unless there is excess: this runs before every handler call.
  if (used_total_ > 0) window_blocks_ = std::max(window_blocks_, block_index_ + 1);
  if (++window_resets_ == kRetainWindow) {
    keep_blocks_ = window_blocks_;
    window_blocks_ = 0;
    window_resets_ = 0;
  }
  const size_t keep = std::max(keep_blocks_, window_blocks_);
  while (blocks_.size() > 1 && (block_bytes_ > kRetainedBytes || blocks_.size() > keep)) {
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

Arena* detail::CurrentArenaSlow() {
  t_current_arena = &ThreadCallArena();
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
      KILN_SYM(kiln_rt_loop_mark),      KILN_SYM(kiln_rt_loop_rewind),
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
      KILN_SYM(kiln_rt_map_key_i),
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

namespace {
struct LoopMark {
  kiln::Arena* arena;
  kiln::Arena::Mark at;
};
// Codegen allocates it as [4 x i64] and reads `at.used_total` as its second word.
static_assert(sizeof(LoopMark) == 4 * sizeof(int64_t));
static_assert(offsetof(LoopMark, at) == sizeof(int64_t) && offsetof(kiln::Arena::Mark, used_total) == 0);
}  // namespace

void kiln_rt_loop_mark(void* mark) {
  auto* m = static_cast<LoopMark*>(mark);
  kiln::Arena* current = kiln::CurrentArena();
  const bool call_arena = kiln::t_nesting == 0
                              ? current == &kiln::ThreadCallArena()
                              : current == &kiln::t_nested[kiln::t_nesting - 1]->arena;
  m->arena = call_arena ? current : nullptr;
  if (call_arena) m->at = current->MarkHere();
}

void kiln_rt_loop_rewind(const void* mark) {
  const auto* m = static_cast<const LoopMark*>(mark);
  if (m->arena == nullptr || m->arena != kiln::CurrentArena()) return;
  m->arena->RewindTo(m->at);
  // The buffer the last append grew may be gone: the next append copies.
  kiln::t_append = {};
}

void* kiln_rt_set_arena(void* arena) {
  kiln::t_append = {};
  return kiln::SetCurrentArena(static_cast<Arena*>(arena));
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

int64_t kiln_rt_now() { return kiln::t_now; }

void kiln_rt_set_now(int64_t ns) { kiln::t_now = ns; }

// The session attributes the fault to the plugin and point running on this thread, counts it
// and treats the answer as that point's abstain/failure (runtime/session.h).
void kiln_rt_fault(const char* message, int64_t len) {
  kiln_policy_fault(message, len > 0 ? static_cast<size_t>(len) : 0);
}

}  // extern "C"
