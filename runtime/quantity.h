#pragma once
// Kubernetes quantities ("500m", "1.5", "2k", "1Gi", "1e3") and Go durations ("10m", "1h30m").
//
// A quantity is parsed to an exact count of nano-units held in 128 bits, so every suffix Kubernetes
// accepts (n … E, Ki … Ei, decimal exponents) round-trips without floating-point error. Volcano then
// reads `MilliValue()` for cpu and extended resources and `Value()` for memory and pods; both round
// up like Kubernetes' resource.Quantity does.

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace kiln {

struct Quantity {
  __int128 nanos = 0;  // value × 10^9

  // ceil(value × 1000), saturated to int64 (Kubernetes' MilliValue).
  int64_t MilliValue() const;
  // ceil(value), saturated to int64 (Kubernetes' Value).
  int64_t Value() const;
  double ToDouble() const { return static_cast<double>(nanos) / 1e9; }
};

// Parses Kubernetes quantity notation. Error: `invalid quantity "abc"`.
Result<Quantity> ParseQuantity(std::string_view text);

// The value Volcano stores for resource `name` (api.NewResource): cpu → milli-units, memory →
// bytes, pods → whole units, every other (extended) resource → milli-units.
Result<double> ParseResourceQuantity(std::string_view name, std::string_view text);

// A resource value in Volcano's units (cpu and extended resources milli, memory bytes, pods
// whole) in Kubernetes notation, for people: "4", "500m", "1Gi", "110".
std::string FormatResourceQuantity(std::string_view name, double v);

// Go time.ParseDuration ("300ms", "-1.5h", "2h45m", "0"). Result in nanoseconds.
// Error: `invalid duration "x"`.
Result<int64_t> ParseGoDuration(std::string_view text);

// RFC 3339 timestamp ("2025-01-01T00:00:00Z", "2025-01-01T08:00:00+08:00", fractional seconds
// allowed) to nanoseconds since the Unix epoch. Error: `invalid timestamp "x"`.
Result<int64_t> ParseTimestamp(std::string_view text);

// Go's zero time.Time as Kubernetes writes a time that was never set: "0001-01-01T00:00:00Z"
// (also with a zero fraction or a +00:00/-00:00 offset). ParseTimestamp refuses it, as it lies
// before what nanoseconds since 1970 hold; each reader decides what "unset" means for its field.
bool IsZeroTimestamp(std::string_view text);

}  // namespace kiln
