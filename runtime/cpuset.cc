#include "runtime/cpuset.h"

#include "runtime/text_util.h"

namespace kiln {

std::optional<int64_t> ParseCpuId(std::string_view t) { return ParseDigits(t, 6); }

std::optional<std::set<int64_t>> ParseCpuSet(std::string_view text, std::string_view* bad_part) {
  std::set<int64_t> cpus;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    size_t dash = part.find('-');
    auto lo = ParseCpuId(part.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : ParseCpuId(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi - *lo > 4096) {
      *bad_part = part;
      return std::nullopt;
    }
    for (int64_t c = *lo; c <= *hi; ++c) cpus.insert(c);
  }
  return cpus;
}

}  // namespace kiln
