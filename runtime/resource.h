#pragma once
// Volcano's api.Resource (pkg/scheduler/api/resource_info.go, volcano-semantics.md §3.4) as a dense
// vector indexed by interned resource ids.
//
// Layout (ABI, read by JIT code — see runtime/abi.h):
//   offset 0   uint32_t present   bit i set ⇔ dimension i is set. cpu and memory are always set
//                                 (they are plain fields in Volcano); a scalar bit mirrors "the key
//                                 exists in ScalarResources", which Zero/Infinity defaults rely on.
//   offset 8   double values[kMaxResources]   values[i] of dimension i; 0 when not present.
// Units are Volcano's: cpu milli-cores, memory bytes, pods whole pods, extended resources milli.
//
// Comparisons never allocate: they walk the union of the present bits.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/status.h"

namespace kiln {

using ResourceId = uint8_t;
inline constexpr int kMaxResources = 32;
inline constexpr ResourceId kCpu = 0;
inline constexpr ResourceId kMemory = 1;
inline constexpr ResourceId kPods = 2;
// Volcano's minResource: tolerance of LessEqual and the "is zero" threshold.
inline constexpr double kMinResource = 0.1;

// How a scalar dimension missing on one side compares (Volcano's DimensionDefaultValue).
enum class DimensionDefault : uint8_t { Zero, Infinity };

// Process-wide resource name registry: cpu=0, memory=1, pods=2, further names interned on first
// sight. Interning is thread-safe; ids are never reused.
class ResourceRegistry {
 public:
  // The id of `name`, interning it. Error when more than kMaxResources names exist.
  static Result<ResourceId> Intern(std::string_view name);
  // The id of `name` when it was interned before.
  static std::optional<ResourceId> Find(std::string_view name);
  static std::string_view Name(ResourceId id);
  static int Count();
};
// The registry's original name (kept for existing callers).
using ResourceNames = ResourceRegistry;

// A small fixed list of resource ids (no heap), e.g. the insufficient dimensions of a comparison.
struct ResourceIdList {
  std::array<ResourceId, kMaxResources> ids{};
  int size = 0;

  void Push(ResourceId id) { ids[size++] = id; }
  bool empty() const { return size == 0; }
  const ResourceId* begin() const { return ids.data(); }
  const ResourceId* end() const { return ids.data() + size; }
  // "cpu, memory" — names joined by ", ".
  std::string Join(std::string_view sep = ", ") const;
};

struct Resource {
  static constexpr uint32_t kBaseMask = (1u << kCpu) | (1u << kMemory);

  uint32_t present = kBaseMask;
  uint32_t reserved_ = 0;
  double values[kMaxResources] = {};

  // ---- construction and access ----
  static Resource Empty() { return {}; }
  // cpu and memory at +max, no scalars (Volcano's InfiniteResource).
  static Resource Infinite();
  // Builds from (name, value) pairs already in Volcano's units; interns unknown names.
  static Resource Of(std::initializer_list<std::pair<std::string_view, double>> dims);

  bool Has(ResourceId id) const { return (present >> id) & 1u; }
  double Get(ResourceId id) const { return values[id]; }  // 0 when absent
  double cpu() const { return values[kCpu]; }
  double memory() const { return values[kMemory]; }
  void Set(ResourceId id, double v) {
    values[id] = v;
    present |= 1u << id;
  }
  // Removes a scalar dimension (cpu/memory cannot be removed; they are reset to 0).
  void Unset(ResourceId id);
  void AddScalar(ResourceId id, double v) { Set(id, values[id] + v); }
  uint32_t scalar_mask() const { return present & ~kBaseMask; }
  bool HasScalars() const { return scalar_mask() != 0; }

  // ---- arithmetic (in place, returning *this like Volcano) ----
  Resource& Add(const Resource& rr);
  // Debug-asserts rr.LessEqual(*this, Zero). Scalars are subtracted only when *this has scalars.
  Resource& Sub(const Resource& rr);
  // Like Sub, logs instead of asserting.
  Resource& SubWithoutAssert(const Resource& rr);
  // Volcano's unexported sub(): no check, no log (for bookkeeping that is known to balance).
  Resource& SubUnchecked(const Resource& rr);
  Resource& Multi(double ratio);
  // Per-dimension max with rr (Volcano's SetMaxResource).
  Resource& SetMax(const Resource& rr);
  // Per-dimension min with rr; scalars of *this missing in rr → 0 (Zero) or kept (Infinity).
  Resource& MinDimensionResource(const Resource& rr, DimensionDefault d);
  // Volcano's FitDelta.
  Resource& FitDelta(const Resource& rr);

  // (increased, decreased): per dimension the part by which *this exceeds rr / falls short.
  // Under Infinity a scalar missing on one side yields -1 ("infinite") on that side, as Volcano.
  struct DiffResult;
  DiffResult Diff(const Resource& rr, DimensionDefault d) const;
  // Diff(rr, Zero).increased: per-dim max(0, this − rr).
  Resource ExceededPart(const Resource& rr) const;

  // ---- predicates ----
  // cpu < 0.1 && memory < 0.1 && every scalar except pods < 0.1.
  bool IsEmpty() const;
  bool IsZero(ResourceId id) const { return values[id] < kMinResource; }
  // Dimensions with value ≥ 0.1, cpu, memory, then scalars by id (includes pods).
  ResourceIdList ResourceNames() const;

  bool LessEqual(const Resource& rr, DimensionDefault d) const;
  bool Less(const Resource& rr, DimensionDefault d) const;
  bool LessPartly(const Resource& rr, DimensionDefault d) const;
  bool LessEqualPartly(const Resource& rr, DimensionDefault d) const;
  bool Equal(const Resource& rr, DimensionDefault d) const;
  // LessEqual that also reports the failing dimensions.
  bool LessEqualWithResourcesName(const Resource& rr, DimensionDefault d,
                                  ResourceIdList* insufficient = nullptr) const;
  // Only dimensions with req > 0; cpu/memory strict `>` without tolerance; pods ignored; scalars
  // skipped when *this has none.
  bool LessEqualWithDimensionAndResourcesName(const Resource& rr, const Resource& req,
                                              ResourceIdList* insufficient = nullptr) const;
  bool LessEqualWithDimension(const Resource& rr, const Resource& req) const {
    return LessEqualWithDimensionAndResourcesName(rr, req);
  }
  bool LessEqualPartlyWithDimension(const Resource& rr, const Resource& req,
                                    ResourceIdList* matched = nullptr) const;
  bool LessEqualPartlyWithDimensionZeroFiltered(const Resource& rr, const Resource& req,
                                                ResourceIdList* matched = nullptr) const;
  bool GreaterPartlyWithDimension(const Resource& rr, const Resource& req,
                                  ResourceIdList* greater = nullptr) const;
  bool GreaterPartlyWithRelevantDimensions(const Resource& rr, const Resource& req,
                                           ResourceIdList* greater = nullptr) const;
  // !LessEqualWithResourcesName.
  bool GreaterPartly(const Resource& rr, DimensionDefault d,
                     ResourceIdList* greater = nullptr) const {
    return !LessEqualWithResourcesName(rr, d, greater);
  }

  // "cpu 1000.00, memory 0.00, pods 1.00" — scalars sorted by name, as Volcano's String().
  std::string ToString() const;

  friend bool operator==(const Resource& a, const Resource& b);
};

struct Resource::DiffResult {
  Resource increased;
  Resource decreased;
};

// Whether Volcano's api.NewResource keeps a resource-list entry of this name: cpu, memory, pods,
// ephemeral-storage, and Kubernetes scalar resource names (extended `domain/name`, hugepages-*,
// attachable-volumes-*, kubernetes.io/-prefixed). Anything else ("foo", "count/pods") is dropped
// silently by Volcano, so a loader should drop (or reject) it too.
bool IsVolcanoResourceName(std::string_view name);

// A hash consistent with operator== (for sharing one Resource between owners of equal ones).
struct ResourceHash {
  size_t operator()(const Resource& r) const;
};

// helpers.Max: per-dimension max; scalars ≤ 0 are dropped.
Resource Max(const Resource& l, const Resource& r);
// helpers.Min: per-dimension min over cpu, memory and scalars present in both.
Resource Min(const Resource& l, const Resource& r);
// helpers.Share: r == 0 ? (l == 0 ? 0 : 1) : l / r.
inline double Share(double l, double r) { return r == 0 ? (l == 0 ? 0 : 1) : l / r; }

// Calls f(id) for every id whose bit is set in mask, in increasing id order.
template <typename F>
inline void ForEachBit(uint32_t mask, F&& f) {
  while (mask) {
    int id = std::countr_zero(mask);
    f(static_cast<ResourceId>(id));
    mask &= mask - 1;
  }
}

static_assert(offsetof(Resource, present) == 0);
static_assert(offsetof(Resource, values) == 8);

}  // namespace kiln
