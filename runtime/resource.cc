#include "runtime/resource.h"

#include <fmt/format.h>
#include <functional>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

namespace kiln {
namespace {

// Names are written once before the count that publishes them, so readers need no lock.
struct Registry {
  std::array<std::string, kMaxResources> names{"cpu", "memory", "pods"};
  std::atomic<int> count{3};
  std::mutex mu;
};

Registry& TheRegistry() {
  static Registry r;
  return r;
}

constexpr uint32_t kPodsBit = 1u << kPods;

// Volcano's lessEqualFunc: l < r || |l − r| < 0.1.
inline bool LessEqualTol(double l, double r) { return l < r || std::abs(l - r) < kMinResource; }

// Volcano's whole comparisons (LessEqual, Less): `cmp` holds for cpu, memory and every scalar of
// `l`. With Infinity a scalar `rr` lacks is skipped (unbounded), and one `rr` has that `l` lacks
// fails.
template <typename Cmp>
bool AllDimensions(const Resource& l, const Resource& rr, DimensionDefault d, Cmp cmp) {
  if (!cmp(l.values[kCpu], rr.values[kCpu])) return false;
  if (!cmp(l.values[kMemory], rr.values[kMemory])) return false;
  const bool inf = d == DimensionDefault::Infinity;
  if (inf && (rr.scalar_mask() & ~l.scalar_mask()) != 0) return false;
  uint32_t mask = l.scalar_mask();
  while (mask) {
    ResourceId id = static_cast<ResourceId>(std::countr_zero(mask));
    mask &= mask - 1;
    if (!rr.Has(id) && inf) continue;
    if (!cmp(l.values[id], rr.values[id])) return false;
  }
  return true;
}

// The partial ones (LessPartly, LessEqualPartly): `cmp` holds for cpu, memory or some scalar of
// `l`. A scalar `rr` has that `l` lacks counts with Zero; one of `l`'s that `rr` lacks with
// Infinity.
template <typename Cmp>
bool AnyDimension(const Resource& l, const Resource& rr, DimensionDefault d, Cmp cmp) {
  if (cmp(l.values[kCpu], rr.values[kCpu]) || cmp(l.values[kMemory], rr.values[kMemory]))
    return true;
  const bool inf = d == DimensionDefault::Infinity;
  if (!inf && (rr.scalar_mask() & ~l.scalar_mask()) != 0) return true;
  uint32_t mask = l.scalar_mask();
  while (mask) {
    ResourceId id = static_cast<ResourceId>(std::countr_zero(mask));
    mask &= mask - 1;
    if (!rr.Has(id) && inf) return true;
    if (cmp(l.values[id], rr.values[id])) return true;
  }
  return false;
}

constexpr auto kLessEqualTol = [](double l, double r) { return LessEqualTol(l, r); };
constexpr auto kLess = [](double l, double r) { return l < r; };

// Volcano's per-dimension checks against a request: they visit cpu, memory and then the request's
// scalars but pods (its loops over ScalarResources skip pods), only where the request asks for
// some (> 0). Pushes each visited dimension where `test` holds onto `out` (when given) and says
// whether there was any; `scalars` false visits cpu and memory only.
template <typename Test>
bool AnyRequested(const Resource& req, bool scalars, ResourceIdList* out, Test test) {
  bool any = false;
  auto visit = [&](ResourceId id) {
    if (!(req.values[id] > 0) || !test(id)) return;
    any = true;
    if (out) out->Push(id);
  };
  visit(kCpu);
  visit(kMemory);
  if (scalars) ForEachBit(req.scalar_mask() & ~kPodsBit, visit);
  return any;
}

// The part of `req` (what it asks for, > 0) in the dimensions the filters keep: `keep_base` for
// cpu and memory, `keep_scalar` for every scalar (pods included).
template <typename KeepBase, typename KeepScalar>
Resource RequestedWhere(const Resource& req, KeepBase keep_base, KeepScalar keep_scalar) {
  Resource filtered;
  for (ResourceId id : {kCpu, kMemory})
    if (req.values[id] > 0 && keep_base(id)) filtered.values[id] = req.values[id];
  ForEachBit(req.scalar_mask(), [&](ResourceId id) {
    if (req.values[id] > 0 && keep_scalar(id)) filtered.Set(id, req.values[id]);
  });
  return filtered;
}

}  // namespace

Result<ResourceId> ResourceRegistry::Intern(std::string_view name) {
  if (auto id = Find(name)) return *id;
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  int n = r.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (r.names[i] == name) return static_cast<ResourceId>(i);
  if (n >= kMaxResources)
    return Error{fmt::format("too many resource names: cannot add \"{}\" (limit {})", name,
                             kMaxResources),
                 {}};
  r.names[n] = std::string(name);
  r.count.store(n + 1, std::memory_order_release);
  return static_cast<ResourceId>(n);
}

std::optional<ResourceId> ResourceRegistry::Find(std::string_view name) {
  Registry& r = TheRegistry();
  int n = r.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (r.names[i] == name) return static_cast<ResourceId>(i);
  return std::nullopt;
}

std::string_view ResourceRegistry::Name(ResourceId id) {
  Registry& r = TheRegistry();
  if (id >= r.count.load(std::memory_order_acquire)) return "<unknown>";
  return r.names[id];
}

int ResourceRegistry::Count() { return TheRegistry().count.load(std::memory_order_acquire); }

std::string ResourceIdList::Join(std::string_view sep) const {
  std::string out;
  for (int i = 0; i < size; ++i) {
    if (i) out += sep;
    out += ResourceRegistry::Name(ids[i]);
  }
  return out;
}

Resource Resource::Infinite() {
  Resource r;
  r.values[kCpu] = std::numeric_limits<double>::max();
  r.values[kMemory] = std::numeric_limits<double>::max();
  return r;
}

Resource Resource::Of(std::initializer_list<std::pair<std::string_view, double>> dims) {
  Resource r;
  for (const auto& [name, v] : dims) {
    auto id = ResourceRegistry::Intern(name);
    assert(id.ok());
    if (id.ok()) r.Set(*id, v);
  }
  return r;
}

void Resource::Unset(ResourceId id) {
  values[id] = 0;
  if (id != kCpu && id != kMemory) present &= ~(1u << id);
}

Resource& Resource::Add(const Resource& rr) {
  values[kCpu] += rr.values[kCpu];
  values[kMemory] += rr.values[kMemory];
  ForEachBit(rr.scalar_mask(), [&](ResourceId id) { values[id] += rr.values[id]; });
  present |= rr.present;
  return *this;
}

namespace {
void SubRaw(Resource& r, const Resource& rr) {
  r.values[kCpu] -= rr.values[kCpu];
  r.values[kMemory] -= rr.values[kMemory];
  // Volcano subtracts scalars only when the left side has a scalar map at all.
  if (!r.HasScalars()) return;
  ForEachBit(rr.scalar_mask(), [&](ResourceId id) { r.values[id] -= rr.values[id]; });
  r.present |= rr.scalar_mask();
}
}  // namespace

Resource& Resource::Sub(const Resource& rr) {
  assert(rr.LessEqual(*this, DimensionDefault::Zero) &&
         "resource is not sufficient to do operation");
  SubRaw(*this, rr);
  return *this;
}

Resource& Resource::SubWithoutAssert(const Resource& rr) {
  ResourceIdList names;
  if (!rr.LessEqualWithResourcesName(*this, DimensionDefault::Zero, &names)) {
    spdlog::debug("resources <{}> are not sufficient to do operation: <{}> sub <{}>",
                  names.Join(), ToString(), rr.ToString());
  }
  SubRaw(*this, rr);
  return *this;
}

Resource& Resource::SubUnchecked(const Resource& rr) {
  SubRaw(*this, rr);
  return *this;
}

Resource& Resource::Multi(double ratio) {
  ForEachBit(present, [&](ResourceId id) { values[id] *= ratio; });
  return *this;
}

Resource& Resource::SetMax(const Resource& rr) {
  values[kCpu] = std::max(values[kCpu], rr.values[kCpu]);
  values[kMemory] = std::max(values[kMemory], rr.values[kMemory]);
  if (!HasScalars()) {
    ForEachBit(rr.scalar_mask(), [&](ResourceId id) { values[id] = rr.values[id]; });
    present |= rr.scalar_mask();
    return *this;
  }
  ForEachBit(rr.scalar_mask(), [&](ResourceId id) {
    if (!Has(id) || rr.values[id] > values[id]) Set(id, rr.values[id]);
  });
  return *this;
}

Resource& Resource::MinDimensionResource(const Resource& rr, DimensionDefault d) {
  values[kCpu] = std::min(values[kCpu], rr.values[kCpu]);
  values[kMemory] = std::min(values[kMemory], rr.values[kMemory]);
  if (!HasScalars()) return *this;
  ForEachBit(scalar_mask(), [&](ResourceId id) {
    if (rr.Has(id)) {
      values[id] = std::min(values[id], rr.values[id]);
    } else if (d == DimensionDefault::Zero) {
      values[id] = 0;
    }
  });
  return *this;
}

Resource& Resource::FitDelta(const Resource& rr) {
  if (rr.values[kCpu] > 0) values[kCpu] -= rr.values[kCpu] + kMinResource;
  if (rr.values[kMemory] > 0) values[kMemory] -= rr.values[kMemory] + kMinResource;
  ForEachBit(rr.scalar_mask(), [&](ResourceId id) {
    if (rr.values[id] > 0) Set(id, values[id] - (rr.values[id] + kMinResource));
  });
  return *this;
}

Resource::DiffResult Resource::Diff(const Resource& rr, DimensionDefault d) const {
  DiffResult out;
  const double def = d == DimensionDefault::Zero ? 0.0 : -1.0;
  if (values[kCpu] > rr.values[kCpu]) {
    out.increased.values[kCpu] = values[kCpu] - rr.values[kCpu];
  } else {
    out.decreased.values[kCpu] = rr.values[kCpu] - values[kCpu];
  }
  if (values[kMemory] > rr.values[kMemory]) {
    out.increased.values[kMemory] = values[kMemory] - rr.values[kMemory];
  } else {
    out.decreased.values[kMemory] = rr.values[kMemory] - values[kMemory];
  }
  // Missing dimensions on either side take the default; -1 marks "infinite" as in Volcano.
  ForEachBit(scalar_mask() | rr.scalar_mask(), [&](ResourceId id) {
    double l = Has(id) ? values[id] : def;
    double r = rr.Has(id) ? rr.values[id] : def;
    if (l == -1) {
      out.increased.Set(id, l);
    } else if (r == -1) {
      out.decreased.Set(id, r);
    } else if (l > r) {
      out.increased.Set(id, l - r);
    } else {
      out.decreased.Set(id, r - l);
    }
  });
  return out;
}

Resource Resource::ExceededPart(const Resource& rr) const {
  return Diff(rr, DimensionDefault::Zero).increased;
}

bool Resource::IsEmpty() const {
  if (!(values[kCpu] < kMinResource && values[kMemory] < kMinResource)) return false;
  bool empty = true;
  ForEachBit(scalar_mask() & ~kPodsBit, [&](ResourceId id) {
    if (values[id] >= kMinResource) empty = false;
  });
  return empty;
}

ResourceIdList Resource::ResourceNames() const {
  ResourceIdList out;
  ForEachBit(present, [&](ResourceId id) {
    if (values[id] >= kMinResource) out.Push(id);
  });
  return out;
}

bool Resource::LessEqual(const Resource& rr, DimensionDefault d) const {
  return AllDimensions(*this, rr, d, kLessEqualTol);
}

bool Resource::Less(const Resource& rr, DimensionDefault d) const {
  return AllDimensions(*this, rr, d, kLess);
}

bool Resource::LessPartly(const Resource& rr, DimensionDefault d) const {
  return AnyDimension(*this, rr, d, kLess);
}

bool Resource::LessEqualPartly(const Resource& rr, DimensionDefault d) const {
  return AnyDimension(*this, rr, d, kLessEqualTol);
}

bool Resource::Equal(const Resource& rr, DimensionDefault) const {
  auto eq = [](double l, double r) { return l == r || std::abs(l - r) < kMinResource; };
  if (!eq(values[kCpu], rr.values[kCpu]) || !eq(values[kMemory], rr.values[kMemory])) return false;
  uint32_t mask = scalar_mask();
  while (mask) {
    ResourceId id = static_cast<ResourceId>(std::countr_zero(mask));
    mask &= mask - 1;
    if (!eq(values[id], rr.values[id])) return false;
  }
  return true;
}

bool Resource::LessEqualWithResourcesName(const Resource& rr, DimensionDefault d,
                                          ResourceIdList* insufficient) const {
  bool ok = true;
  auto fail = [&](ResourceId id) {
    ok = false;
    if (insufficient) insufficient->Push(id);
  };
  if (!LessEqualTol(values[kCpu], rr.values[kCpu])) fail(kCpu);
  if (!LessEqualTol(values[kMemory], rr.values[kMemory])) fail(kMemory);
  const bool inf = d == DimensionDefault::Infinity;
  ForEachBit(scalar_mask(), [&](ResourceId id) {
    if (!rr.Has(id) && inf) return;
    if (!LessEqualTol(values[id], rr.values[id])) fail(id);
  });
  return ok;
}

bool Resource::LessEqualWithDimensionAndResourcesName(const Resource& rr, const Resource& req,
                                                      ResourceIdList* insufficient) const {
  return !AnyRequested(req, HasScalars(), insufficient,
                       [&](ResourceId id) { return values[id] > rr.values[id]; });
}

bool Resource::LessEqualPartlyWithDimension(const Resource& rr, const Resource& req,
                                            ResourceIdList* matched) const {
  return AnyRequested(req, true, matched,
                      [&](ResourceId id) { return LessEqualTol(values[id], rr.values[id]); });
}

bool Resource::LessEqualPartlyWithDimensionZeroFiltered(const Resource& rr, const Resource& req,
                                                        ResourceIdList* matched) const {
  auto not_both_zero = [&](ResourceId id) {
    return !(values[id] < kMinResource && rr.values[id] < kMinResource);
  };
  return LessEqualPartlyWithDimension(rr, RequestedWhere(req, not_both_zero, not_both_zero),
                                      matched);
}

bool Resource::GreaterPartlyWithDimension(const Resource& rr, const Resource& req,
                                          ResourceIdList* greater) const {
  return AnyRequested(req, true, greater,
                      [&](ResourceId id) { return values[id] > rr.values[id]; });
}

bool Resource::GreaterPartlyWithRelevantDimensions(const Resource& rr, const Resource& req,
                                                   ResourceIdList* greater) const {
  // cpu and memory count where `rr` has some; a scalar where `rr` names it at all.
  Resource filtered = RequestedWhere(
      req, [&](ResourceId id) { return !(rr.values[id] < kMinResource); },
      [&](ResourceId id) { return rr.Has(id); });
  return GreaterPartlyWithDimension(rr, filtered, greater);
}

std::string Resource::ToString() const {
  std::string out = fmt::format("cpu {:.2f}, memory {:.2f}", values[kCpu], values[kMemory]);
  std::vector<std::pair<std::string_view, ResourceId>> scalars;
  ForEachBit(scalar_mask(),
             [&](ResourceId id) { scalars.emplace_back(ResourceRegistry::Name(id), id); });
  std::sort(scalars.begin(), scalars.end());
  for (const auto& [name, id] : scalars) out += fmt::format(", {} {:.2f}", name, values[id]);
  return out;
}

size_t ResourceHash::operator()(const Resource& r) const {
  size_t h = std::hash<uint32_t>{}(r.present);
  for (double v : r.values)  // every value, as operator== compares them; 0.0 and -0.0 alike
    h = h * 1000003u ^ std::hash<double>{}(v == 0 ? 0.0 : v);
  return h;
}

bool operator==(const Resource& a, const Resource& b) {
  if (a.present != b.present) return false;
  for (int i = 0; i < kMaxResources; ++i)
    if (a.values[i] != b.values[i]) return false;
  return true;
}

namespace {
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Kubernetes' IsQualifiedName: [prefix/]name, prefix a DNS subdomain (≤ 253), name ≤ 63 of
// [A-Za-z0-9] with '-', '_', '.' inside.
bool IsQualifiedName(std::string_view v) {
  std::string_view name = v;
  size_t slash = v.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = v.substr(0, slash);
    name = v.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return false;
    // DNS-1123 subdomain: labels of [a-z0-9-] separated by '.', alphanumeric at both ends.
    size_t start = 0;
    while (start <= prefix.size()) {
      size_t dot = prefix.find('.', start);
      std::string_view label =
          prefix.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
      if (label.empty() || label.size() > 63) return false;
      for (char c : label)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
      if (label.front() == '-' || label.back() == '-') return false;
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
  }
  if (name.empty() || name.size() > 63) return false;
  if (!IsAlnum(name.front()) || !IsAlnum(name.back())) return false;
  for (char c : name)
    if (!(IsAlnum(c) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}
}  // namespace

bool IsVolcanoResourceName(std::string_view name) {
  if (name == "cpu" || name == "memory" || name == "pods" || name == "ephemeral-storage")
    return true;
  if (name.starts_with("count/")) return false;  // IsCountQuota
  if (name.starts_with("hugepages-") || name.starts_with("attachable-volumes-")) return true;
  if (name.find("kubernetes.io/") != std::string_view::npos) return true;  // prefixed native
  // Extended: not native (a native name has no '/'), not "requests.*", and a qualified name
  // once "requests." is prepended.
  if (name.find('/') == std::string_view::npos || name.starts_with("requests.")) return false;
  return IsQualifiedName(std::string("requests.") + std::string(name));
}

Resource Max(const Resource& l, const Resource& r) {
  Resource res;
  res.values[kCpu] = std::max(l.values[kCpu], r.values[kCpu]);
  res.values[kMemory] = std::max(l.values[kMemory], r.values[kMemory]);
  ForEachBit(l.scalar_mask(), [&](ResourceId id) {
    if (l.values[id] > 0) res.Set(id, l.values[id]);
  });
  ForEachBit(r.scalar_mask(), [&](ResourceId id) {
    if (r.values[id] > 0) res.Set(id, std::max(r.values[id], res.values[id]));
  });
  return res;
}

Resource Min(const Resource& l, const Resource& r) {
  Resource res;
  res.values[kCpu] = std::min(l.values[kCpu], r.values[kCpu]);
  res.values[kMemory] = std::min(l.values[kMemory], r.values[kMemory]);
  if (!l.HasScalars() || !r.HasScalars()) return res;
  ForEachBit(l.scalar_mask(),
             [&](ResourceId id) { res.Set(id, std::min(l.values[id], r.values[id])); });
  return res;
}

}  // namespace kiln
