#pragma once
// The runtime value model of policy values in native code, and the host intrinsics JIT'd code
// calls for everything that is not a direct load (compiler/codegen/value_model.md-style summary):
//
//   language type            native representation (LLVM)
//   int, duration, time      i64 (durations/times in nanoseconds)
//   float, quantity          double
//   bool                     i1
//   string                   KStr {ptr data, i64 size}; never NUL-terminated; immutable
//   Resource                 ptr to kiln::Resource; values are immutable once built, so views'
//                            embedded Resources are used in place and temporaries are arena copies
//   Task/Job/Node/Queue      ptr to the runtime object (runtime/model.h); optional views: null=none
//   TaskStatus, Missing      i32 (TaskStatus bit flag; Missing: 0 Zero, 1 Infinity)
//   Vote                     i32: -1 reject, 0 abstain, 1 permit
//   Fit                      {i32 code, KStr reason}
//   Validation               {i1 pass, KStr reason, KStr message}
//   Victims                  {i1 decided, KList tasks}
//   list<T>                  KList-shaped {ptr items, i64 size}; items contiguous in T's layout
//   map<K, V>                ptr to a KMap (insertion-ordered hash map, values as raw bytes)
//   T? (non-view)            {i1 present, T}
//   record                   an LLVM struct of its fields
//
// Memory: temporaries live in the thread's call arena, reset when a handler is entered; per-session
// state lives in the session arena of the policy instance and is freed at session close. Values
// stored into state are copied into the session arena (kiln_rt_persist_*), so a handler's
// temporaries never leak into the next call.
//
// Every intrinsic is extern "C", never throws (host exceptions are caught and reported through
// kiln_policy_fault, returning the zero value) and is registered with the JIT by name.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/jit/host_symbol.h"
#include "runtime/abi.h"

namespace kiln {

struct KMap;

// A bump allocator with destructors for host objects (maps) allocated in it.
class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Throws std::length_error beyond the limit (set_limit), std::bad_alloc when malloc fails.
  // The common case (room in the current block, within the limit) is inline: the builtins that
  // allocate a value per call live in other files than this class (stdlib/runtime_values.cc).
  void* Allocate(size_t size, size_t align = 16) {
    if (size != 0 && size <= limit_ && used_total_ <= limit_ - size &&
        block_index_ < blocks_.size()) {
      const Block& b = blocks_[block_index_];
      const size_t start = (offset_ + align - 1) & ~(align - 1);
      if (start + size <= b.size) {
        offset_ = start + size;
        used_total_ += size;
        return b.data + start;
      }
    }
    return AllocateSlow(size, align);
  }
  void set_limit(size_t bytes) { limit_ = bytes; }
  // A policy instance's state arena: going past its limit throws StateMemoryExceeded, which
  // disables the plugin for the rest of the session (its state is incomplete from then on).
  void set_state(bool state) { state_ = state; }
  size_t limit() const { return limit_; }
  // Extends the allocation of `size` bytes at `p` by `extra` bytes in place when it is the last
  // allocation of the current block and the block has room (false otherwise, nothing changed).
  bool TryExtend(const void* p, size_t size, size_t extra);
  // Gives back the tail of the last allocation (`p`, `allocated` bytes) past `keep` bytes, so
  // that TryExtend can grow it again in place.
  void ShrinkLast(const void* p, size_t allocated, size_t keep);
  // A map whose keys, values and index live in this arena (and grow in it).
  KMap* NewMap(int32_t key_kind, int32_t value_size);
  // Frees everything (keeps the first block for reuse).
  void Reset();
  // Frees every block (Reset keeps some for the next call). The arena stays usable.
  void Release();
  // Where the next allocation goes, to come back to (RewindTo): what was allocated after it is
  // given back, and the blocks stay for what comes next. A loop whose iterations leave nothing
  // behind rewinds the call arena after each one (kiln_rt_loop_rewind).
  struct Mark {
    size_t used_total;
    size_t block_index;
    size_t offset;
  };
  Mark MarkHere() const { return {used_total_, block_index_, offset_}; }
  void RewindTo(const Mark& m) {
    used_total_ = m.used_total;
    block_index_ = m.block_index;
    offset_ = m.offset;
  }
  // Where BytesInUse lives in the object: JIT'd code compares it with a mark's to skip the rewind
  // of an iteration that allocated nothing.
  static size_t BytesInUseOffset();
  size_t BytesInUse() const { return used_total_; }
  // Bytes of the blocks the arena holds, in use or kept for the next call (Reset).
  size_t BytesHeld() const { return block_bytes_; }

 private:
  struct Block {
    char* data;
    size_t size;
  };
  // Allocate's other cases: a zero size, the limit, the next or a new block.
  void* AllocateSlow(size_t size, size_t align);

  std::vector<Block> blocks_;
  size_t block_index_ = 0;
  size_t offset_ = 0;
  size_t used_total_ = 0;
  size_t block_bytes_ = 0;  // Σ blocks_[i].size
  // Reset's retention window: the most blocks one call used over the window's resets so far,
  // how many resets the window has seen, and how many blocks the last full window needed.
  size_t window_blocks_ = 0;
  size_t window_resets_ = 0;
  size_t keep_blocks_ = SIZE_MAX;
  size_t limit_ = SIZE_MAX;
  bool state_ = false;
};

// Thrown by a state arena past its limit (a std::length_error, so code that only knows the call
// budget's error still treats it as memory).
struct StateMemoryExceeded : std::length_error {
  using std::length_error::length_error;
};

// Memory one handler call may allocate in its call arena (default 1 GiB). A call that needs more
// faults (kiln_policy_fault) instead of exhausting the scheduler's memory.
void SetPolicyCallMemoryBudget(size_t bytes);
size_t PolicyCallMemoryBudget();
// Memory one policy instance's `state` may hold in a session (default 256 MiB). A store past it
// faults (kind memory) and disables the plugin for the rest of the session.
void SetPolicyStateMemoryBudget(size_t bytes);
size_t PolicyStateMemoryBudget();

// The arena new temporaries go to on this thread (the call arena during a handler, the session
// arena while state is initialised). Returns the previous one.
Arena* SetCurrentArena(Arena* arena);
namespace detail {
// The arena of the policy call running on this thread; null until the first call.
extern constinit thread_local Arena* t_current_arena;
Arena* CurrentArenaSlow();
}  // namespace detail
// The current call's arena (the thread's call arena when no call set one). Inline: every
// builtin that returns a value allocates in it.
inline Arena* CurrentArena() {
  Arena* a = detail::t_current_arena;
  return a != nullptr ? a : detail::CurrentArenaSlow();
}
// This thread's call arena (reset by kiln_rt_enter).
Arena& ThreadCallArena();

// Key kinds of KMap.
enum class MapKeyKind : int32_t { Int = 0, String = 1 };

// The KMap header fields JIT'd code reads to scan a small int-keyed map inline
// (runtime_internal.h asserts them): i64 size, i64* keys, char* values (value_size per entry).
inline constexpr int64_t kMapLinearLimit = 16;
inline constexpr int kMapSizeOffset = 0;
inline constexpr int kMapIntKeysOffset = 8;
inline constexpr int kMapValuesOffset = 16;
// Past kMapLinearLimit entries JIT'd code probes the hash index inline (KMap::FindInt): int32
// entry+1 per bucket at kMapIndexOffset, the mask at kMapIndexMaskOffset, and KMap::HashInt.
inline constexpr int kMapIndexOffset = 40;
inline constexpr int kMapIndexMaskOffset = 48;
// A map keyed by a view (task, job, node, queue) also keeps, once past kMapLinearLimit (a state
// map: from its first entry), a dense table: int32 entry+1 per view index at kMapDenseOffset,
// its length at kMapDenseSizeOffset. JIT'd code reads the key's index at the view's index offset (runtime/abi.h), then the table,
// and takes the entry only when the key stored there is the key looked up: the table is a hint,
// and anything it misses goes to the hash index.
inline constexpr int kMapDenseOffset = 72;
inline constexpr int kMapDenseSizeOffset = 80;
inline constexpr uint64_t kMapHashMultiplier = 0x9E3779B97F4A7C15ull;
inline constexpr int kMapHashShift = 29;

// Every intrinsic below, by name, for the JIT's host dylib.
std::vector<HostSymbol> RuntimeSupportSymbols();

}  // namespace kiln

extern "C" {

// ---- arena ----
void* kiln_rt_alloc(int64_t size);
// Handler entry: resets this thread's call arena, makes it current, and arms fault recovery;
// returns the five-word __builtin_setjmp buffer the thunk fills (frame address, eh.sjlj.setjmp's
// resume address, stack pointer); an intrinsic that faults __builtin_longjmps back there.
void* kiln_rt_enter();
// Handler exit: disarms fault recovery.
void kiln_rt_leave();
// Makes `arena` (a kiln::Arena*) current; returns the previous one.
void* kiln_rt_set_arena(void* arena);
// A loop's iteration scratch (codegen: EmitFor). `mark` is {Arena*, Arena::Mark}: loop_mark
// fills it with the current arena and its position when that arena is a handler call's (it
// leaves the arena null otherwise: state initialisers allocate into the session arena, whose
// memory must stay); loop_rewind gives back what the arena allocated since.
void kiln_rt_loop_mark(void* mark);
void kiln_rt_loop_rewind(const void* mark);

// ---- predicate results ----
// The language's combine(a, b) on Fit values: fits when both fit; otherwise the failing reasons
// of both, in order, joined by kFitReasonSeparator (the session splits them back into separate
// reasons), with the more blocking code: UnschedulableAndUnresolvable > Error > Wait, Skip >
// Unschedulable. That ranking keeps what allocate and preempt look for (is any status
// unresolvable? is any an error/wait/skip?) true of the single combined code.
int32_t kiln_rt_fit_combine(int32_t code_a, const char* a, int64_t an, int32_t code_b,
                            const char* b, int64_t bn, KStr* out_reason);

// ---- strings ----
int32_t kiln_rt_str_cmp(const char* a, int64_t an, const char* b, int64_t bn);
bool kiln_rt_str_contains(const char* s, int64_t n, const char* sub, int64_t subn);
bool kiln_rt_str_starts_with(const char* s, int64_t n, const char* p, int64_t pn);
bool kiln_rt_str_ends_with(const char* s, int64_t n, const char* p, int64_t pn);
void kiln_rt_str_concat(const char* a, int64_t an, const char* b, int64_t bn, KStr* out);
void kiln_rt_str_of_int(int64_t v, KStr* out);
void kiln_rt_str_of_float(double v, KStr* out);
void kiln_rt_str_copy(const char* s, int64_t n, void* arena, KStr* out);
// Go's strings.Split: split("", "/") == [""]; an empty separator splits into bytes.
void kiln_rt_str_split(const char* s, int64_t n, const char* sep, int64_t sepn, KList* out);

// ---- maps ----
void* kiln_rt_map_new(int32_t key_kind, int32_t value_size);
// An int-keyed map whose keys are views with their dense index at `index_offset` (KMap::dense);
// `eager` (state maps): the table is kept from the first entry, not only past kMapLinearLimit.
void* kiln_rt_map_new_view(int32_t value_size, int32_t index_offset, int32_t eager);
// Value slot of `key`, or null when absent.
void* kiln_rt_map_find_i(void* map, int64_t key);
void* kiln_rt_map_find_s(void* map, const char* key, int64_t len);
// Value slot of `key`, inserted zero-filled when absent (*inserted tells which).
void* kiln_rt_map_slot_i(void* map, int64_t key, bool* inserted);
void* kiln_rt_map_slot_s(void* map, const char* key, int64_t len, bool* inserted);
int64_t kiln_rt_map_key_i(const void* map, int64_t index);
void kiln_rt_map_key_s(const void* map, int64_t index, KStr* out);
void* kiln_rt_map_value_at(void* map, int64_t index);
// Copies `map` (keys and value bytes) into `arena` (null: the current one, as kiln_rt_res_copy);
// values are copied shallowly.
void* kiln_rt_map_copy(const void* map, void* arena);

// ---- resources ----
kiln::Resource* kiln_rt_res_new();  // empty, in the current arena
kiln::Resource* kiln_rt_res_copy(const kiln::Resource* r, void* arena);
// A store of `v` into a state slot holding `old` (state_in_place.h): overwrites *old and returns
// it when `old` is a Resource of that slot (not null, not the module's shared `empty` resource)
// that no read of this outermost handler call pinned; otherwise copies `v` into `arena` (the
// session arena) as kiln_rt_res_copy does.
kiln::Resource* kiln_rt_res_store(kiln::Resource* old, const kiln::Resource* v,
                                  const kiln::Resource* empty, void* arena);
// Pins `r` until the next outermost handler call: a store must not overwrite it in place.
void kiln_rt_res_pin(const kiln::Resource* r);
kiln::Resource* kiln_rt_res_add(const kiln::Resource* a, const kiln::Resource* b);
// *acc += *b in place: only for an accumulator no other value can see (a `sum` over resources).
void kiln_rt_res_add_into(kiln::Resource* acc, const kiln::Resource* b);
// `a + b` / `a - b` (never below zero) built in `out`, a Resource-sized slot of the caller's
// stack: for a sum consumed by a native at once (EmitStdNative). Never allocates.
void kiln_rt_res_add_to(kiln::Resource* out, const kiln::Resource* a, const kiln::Resource* b);
void kiln_rt_res_sub_to(kiln::Resource* out, const kiln::Resource* a, const kiln::Resource* b);
kiln::Resource* kiln_rt_res_sub(const kiln::Resource* a, const kiln::Resource* b);
kiln::Resource* kiln_rt_res_mul(const kiln::Resource* a, double f);
void kiln_rt_res_set(kiln::Resource* r, int32_t id, double v);  // while building a literal
double kiln_rt_res_get(const kiln::Resource* r, int32_t id);
int32_t kiln_rt_res_id(const char* name, int64_t len);  // -1 when unknown and registry full
bool kiln_rt_res_less_equal(const kiln::Resource* a, const kiln::Resource* b, int32_t missing);
bool kiln_rt_res_less(const kiln::Resource* a, const kiln::Resource* b, int32_t missing);
bool kiln_rt_res_equal(const kiln::Resource* a, const kiln::Resource* b);
bool kiln_rt_res_is_empty(const kiln::Resource* r);
void kiln_rt_res_names(const kiln::Resource* r, KList* out);  // list<string>: items are KStr

// ---- lists ----
// `xs + [e]`: appends in place when `xs` is the most recent append buffer of this thread and no
// other list has extended it (Go-slice style: an alias that appended first forces a copy), else
// copies into a new buffer with room to grow. Amortised O(1) for the `v = v + [e]` loop idiom.
void kiln_rt_list_append(const void* items, int64_t n, const void* elem, int64_t elem_size,
                         KList* out);
// The growth state of one local list variable (codegen's EmitLocalAppend): the buffer the
// variable last grew into, how many elements of it the variable holds, and the buffer's capacity.
typedef struct KListBuilder {
  const void* items;
  int64_t size;
  int64_t capacity;
} KListBuilder;
// `x = x + [e]` when x's builder cannot append in place: copies x's `n` items and `elem` into a
// new buffer (of the current arena) with room to grow, and makes it the builder's buffer.
void kiln_rt_list_grow(const void* items, int64_t n, const void* elem, int64_t elem_size,
                       KListBuilder* builder, KList* out);
// Stable sort of `n` elements of `elem_size` bytes by parallel keys. key_kind 0: double keys,
// 1: KStr keys. `keys` is permuted along.
void kiln_rt_sort(void* elems, int64_t n, int64_t elem_size, void* keys, int32_t key_kind,
                  bool descending);

// ---- time ----
int64_t kiln_rt_now();  // the session clock of the handler being run (0 outside a session)
void kiln_rt_set_now(int64_t ns);

// ---- faults ----
void kiln_rt_fault(const char* message, int64_t len);

}  // extern "C"
