// The policy value runtime's strings, maps, resources and sorting: the kiln_rt_* functions
// JIT'd code calls for them (stdlib/runtime_support.h), each guarded so that a failure faults
// the handler call instead of unwinding through JIT'd frames.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string_view>
#include <vector>

#include "runtime/fit_error.h"
#include "runtime/host_work.h"
#include "stdlib/runtime_internal.h"

extern "C" {


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
    kiln::rt::Charge(static_cast<int64_t>(va.size() + vb.size()));
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
  if (!kiln::ChargeHostWorkInline(std::min(an, bn))) return 0;
  int c = View(a, an).compare(View(b, bn));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

bool kiln_rt_str_eq(const char* a, const char* b, int64_t n) {
  // Equal lengths past the inline limit (codegen's kInlineStrEqBytes): the comparison may walk
  // all n bytes. Over budget: "differ" (the call is faulted, its answer ignored).
  if (!kiln::ChargeHostWorkInline(std::max<int64_t>(n, 0))) return false;
  return n <= 0 || std::memcmp(a, b, static_cast<size_t>(n)) == 0;
}

bool kiln_rt_str_contains(const char* s, int64_t n, const char* sub, int64_t subn) {
  // The search walks the haystack (memchr-style, about once).
  if (!kiln::ChargeHostWorkInline(std::max<int64_t>(n, 0))) return false;
  return View(s, n).find(View(sub, subn)) != std::string_view::npos;
}

bool kiln_rt_str_starts_with(const char* s, int64_t n, const char* p, int64_t pn) {
  if (!kiln::ChargeHostWorkInline(std::min(n, pn))) return false;
  return View(s, n).starts_with(View(p, pn));
}

bool kiln_rt_str_ends_with(const char* s, int64_t n, const char* p, int64_t pn) {
  if (!kiln::ChargeHostWorkInline(std::min(n, pn))) return false;
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
      kiln::rt::Charge(static_cast<int64_t>(vb.size()));
      std::memcpy(const_cast<char*>(va.data()) + va.size(), vb.data(), vb.size());
      return KStr{va.data(), total};
    }
    kiln::rt::Charge(static_cast<int64_t>(total));
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
                     [&] { return kiln::rt::CopyToArena(fmt::format("{}", v), CurrentArena()); });
}

void kiln_rt_str_of_float(double v, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0},
                     [&] { return kiln::rt::CopyToArena(fmt::format("{}", v), CurrentArena()); });
}

void kiln_rt_str_copy(const char* s, int64_t n, void* arena, KStr* out) {
  *out = Guard<KStr>(KStr{nullptr, 0}, [&] {
    kiln::rt::Charge(std::max<int64_t>(n, 0));
    return kiln::rt::CopyToArena(View(s, n), arena ? static_cast<Arena*>(arena) : CurrentArena());
  });
}

void kiln_rt_str_split(const char* s, int64_t n, const char* sep, int64_t sepn, KList* out) {
  *out = Guard<KList>(KList{nullptr, 0}, [&] {
    std::string_view str = View(s, n), separator = View(sep, sepn);
    // Walks the string once; builds a part per separator found (charged as they are found, so
    // a split into bytes of a huge string stops at the budget, not after building every part).
    kiln::rt::Charge(static_cast<int64_t>(str.size()));
    std::vector<std::string_view> parts;
    auto part = [&](std::string_view p) {
      kiln::rt::Charge(static_cast<int64_t>(sizeof(KStr)));
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
  if (!kiln::ChargeHostWorkInline(std::max<int64_t>(len, 0))) return nullptr;
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
    kiln::rt::Charge(std::max<int64_t>(len, 0));
    auto* m = static_cast<KMap*>(map);
    int64_t i = m->FindStr(View(key, len));
    *inserted = i < 0;
    if (i < 0) i = m->InsertStr(View(key, len));
    return m->slot(i);
  });
}

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
    Arena* into = arena ? static_cast<Arena*>(arena) : CurrentArena();
    KMap* dst = into->NewMap(static_cast<int32_t>(src->key_kind), src->value_size);
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
  return Guard<Resource*>(nullptr, [&] { return kiln::rt::NewResource(CurrentArena()); });
}

Resource* kiln_rt_res_copy(const Resource* r, void* arena) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::rt::NewResource(arena ? static_cast<Arena*>(arena) : CurrentArena());
    *out = *r;
    return out;
  });
}

Resource* kiln_rt_res_add(const Resource* a, const Resource* b) {
  return Guard<Resource*>(nullptr, [&] {
    Resource* out = kiln::rt::NewResource(CurrentArena());
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
    Resource* out = kiln::rt::NewResource(CurrentArena());
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
    Resource* out = kiln::rt::NewResource(CurrentArena());
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

void kiln_rt_sort(void* elems, int64_t n, int64_t elem_size, void* keys, int32_t key_kind,
                  bool descending) {
  Guard<int>(0, [&] {
    kiln::rt::Charge(n * (elem_size + static_cast<int64_t>(sizeof(int64_t))));
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

}  // extern "C"
