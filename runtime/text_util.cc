#include "runtime/text_util.h"

namespace kiln {

std::optional<int64_t> ParseDigits(std::string_view text, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

void AppendIndented(std::string& out, std::string_view text, std::string_view indent) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.append(indent).append(text.substr(start, end - start)).append("\n");
    start = end + 1;
  }
}

}  // namespace kiln
