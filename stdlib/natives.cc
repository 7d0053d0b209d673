#include "stdlib/natives.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "compiler/parse/literals.h"
#include "runtime/host_work.h"
#include "runtime/resource.h"
#include "runtime/session.h"
#include "stdlib/runtime_support.h"

namespace {
std::string_view View(const char* data, size_t size) { return {data ? data : "", data ? size : 0}; }
kiln::DimensionDefault Mode(int32_t m) {
  return m == 1 ? kiln::DimensionDefault::Infinity : kiln::DimensionDefault::Zero;
}
}  // namespace

extern "C" {

double kiln_std_share(double a, double b) {
  if (b == 0) return a == 0 ? 0 : 1;
  return a / b;
}
double kiln_std_sqrt(double x) { return x > 0 ? std::sqrt(x) : 0; }
double kiln_std_floor(double x) { return std::floor(x); }
double kiln_std_ceil(double x) { return std::ceil(x); }
double kiln_std_fabs(double x) { return std::fabs(x); }
double kiln_std_log(double x) { return x > 0 ? std::log(x) : 0; }
double kiln_std_pow(double x, double y) { return std::pow(x, y); }
// max(lo, min(x, hi)): defined where std::clamp is not (lo > hi gives lo; a NaN x gives lo).
double kiln_std_clamp(double x, double lo, double hi) { return std::max(lo, std::min(x, hi)); }
double kiln_std_round(double x) { return std::round(x); }  // half away from zero, as Go

double kiln_std_dominant_share(const kiln::Resource* alloc, const kiln::Resource* total) {
  // drf: the max over the total's dimensions (ResourceNames, pods included) of Share.
  double best = 0;
  for (kiln::ResourceId id : total->ResourceNames())
    best = std::max(best, kiln_std_share(alloc->Get(id), total->Get(id)));
  return best;
}
bool kiln_std_less_equal(const kiln::Resource* a, const kiln::Resource* b, int32_t mode) {
  return a->LessEqual(*b, Mode(mode));
}
bool kiln_std_less(const kiln::Resource* a, const kiln::Resource* b, int32_t mode) {
  return a->Less(*b, Mode(mode));
}
bool kiln_std_less_partly(const kiln::Resource* a, const kiln::Resource* b, int32_t mode) {
  return a->LessPartly(*b, Mode(mode));
}
bool kiln_std_less_equal_in(const kiln::Resource* a, const kiln::Resource* b,
                            const kiln::Resource* req) {
  return a->LessEqualWithDimensionAndResourcesName(*b, *req);
}
bool kiln_std_less_equal_partly_in(const kiln::Resource* a, const kiln::Resource* b,
                                   const kiln::Resource* req) {
  return a->LessEqualPartlyWithDimensionZeroFiltered(*b, *req);
}
bool kiln_std_greater_partly_in(const kiln::Resource* a, const kiln::Resource* b,
                                const kiln::Resource* req) {
  return a->GreaterPartlyWithDimension(*b, *req);
}
bool kiln_std_greater_partly_relevant(const kiln::Resource* a, const kiln::Resource* b,
                                      const kiln::Resource* req) {
  return a->GreaterPartlyWithRelevantDimensions(*b, *req);
}
void kiln_std_exceeded(const kiln::Resource* a, const kiln::Resource* b, kiln::Resource* out) {
  *out = a->ExceededPart(*b);
}
void kiln_std_min_dims(const kiln::Resource* a, const kiln::Resource* b, int32_t mode,
                       kiln::Resource* out) {
  kiln::Resource r = *a;
  r.MinDimensionResource(*b, Mode(mode));
  *out = r;
}
void kiln_std_max_dims(const kiln::Resource* a, const kiln::Resource* b, kiln::Resource* out) {
  kiln::Resource r = *a;
  r.SetMax(*b);
  *out = r;
}
void kiln_std_infinite_resource(kiln::Resource* out) { *out = kiln::Resource::Infinite(); }
bool kiln_std_resource_is_empty(const kiln::Resource* r) { return r->IsEmpty(); }
bool kiln_std_resource_has(const kiln::Resource* r, const char* name, size_t name_size) {
  auto id = kiln::ResourceNames::Find(View(name, name_size));
  return id && r->Has(*id);
}
double kiln_std_resource_get(const kiln::Resource* r, const char* name, size_t name_size) {
  auto id = kiln::ResourceNames::Find(View(name, name_size));
  return id ? r->Get(*id) : 0.0;
}

bool kiln_std_parse_duration(const char* s, size_t s_size, int64_t* out) {
  // Go's time.ParseDuration: no `d` unit.
  auto v = kiln::ParseDurationText(View(s, s_size), /*allow_days=*/false);
  if (!v) return false;
  *out = *v;
  return true;
}
double kiln_std_quantity(const char* s, size_t s_size) {
  return kiln::ParseQuantityText(View(s, s_size)).value_or(0.0);
}
bool kiln_std_parse_quantity(const char* s, size_t s_size, double* out) {
  auto v = kiln::ParseQuantityText(View(s, s_size));
  if (!v) return false;
  *out = *v;
  return true;
}
bool kiln_std_parse_int(const char* s, size_t s_size, int64_t* out) {
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(s_size))) return false;
  std::string text(View(s, s_size));
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}
bool kiln_std_parse_float(const char* s, size_t s_size, double* out) {
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(s_size))) return false;
  std::string text(View(s, s_size));
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || std::isnan(v)) return false;
  *out = v;
  return true;
}
bool kiln_std_parse_bool(const char* s, size_t s_size, bool* out) {
  // Go's strconv.ParseBool.
  std::string_view v = View(s, s_size);
  if (v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True") {
    *out = true;
    return true;
  }
  if (v == "0" || v == "f" || v == "F" || v == "false" || v == "FALSE" || v == "False") {
    *out = false;
    return true;
  }
  return false;
}
// The string builtins charge the bytes they walk to the call's host-work budget
// (ChargeHostWork); over it they answer false and the call is faulted.
bool kiln_std_contains(const char* s, size_t s_size, const char* sub, size_t sub_size) {
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(s_size))) return false;
  return View(s, s_size).find(View(sub, sub_size)) != std::string_view::npos;
}
bool kiln_std_starts_with(const char* s, size_t s_size, const char* p, size_t p_size) {
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(std::min(s_size, p_size)))) return false;
  return View(s, s_size).substr(0, View(p, p_size).size()) == View(p, p_size);
}
bool kiln_std_ends_with(const char* s, size_t s_size, const char* p, size_t p_size) {
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(std::min(s_size, p_size)))) return false;
  auto a = View(s, s_size), b = View(p, p_size);
  return a.size() >= b.size() && a.substr(a.size() - b.size()) == b;
}
KStr kiln_std_trim(const char* s, size_t s_size) {
  std::string_view v = View(s, s_size);
  if (!kiln::ChargeHostWorkInline(static_cast<int64_t>(s_size))) return KStr{v.data(), 0};
  size_t b = v.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return KStr{v.data(), 0};
  size_t e = v.find_last_not_of(" \t\r\n");
  return KStr{v.data() + b, e - b + 1};
}

// `xs + [x]`, whose amortised in-place append the runtime already has.
void kiln_std_append(const void* items, int64_t n, const void* elem, int64_t elem_size,
                     KList* out) {
  kiln_rt_list_append(items, n, elem, elem_size, out);
}

}  // extern "C"
