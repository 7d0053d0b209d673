#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string_view>

namespace kiln {

// A CPU id as the cpuset format writes it: one to six decimal digits; nullopt otherwise.
std::optional<int64_t> ParseCpuId(std::string_view text);

// A cpuset in the kubelet's list format ("0-3,8,10-11"; "" is the empty set), as Numatopology
// objects write it, read the same way from a scenario and from the API server. A CPU id is at
// most six decimal digits and a range runs forwards over at most 4097 CPUs. On a bad part,
// nullopt, with the part in *bad_part.
std::optional<std::set<int64_t>> ParseCpuSet(std::string_view text, std::string_view* bad_part);

}  // namespace kiln
