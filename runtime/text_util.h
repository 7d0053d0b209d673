#pragma once
// Small text helpers more than one layer needs (the runtime's name and cpu-list parsing, the
// simulator's and the CLI's indented blocks).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// `text` as a non-negative decimal number when it is 1 to `max_digits` ASCII digits and nothing
// else (no sign, no spaces); max_digits ≤ 18 so the value fits int64_t.
std::optional<int64_t> ParseDigits(std::string_view text, size_t max_digits);

// Appends `text` to `out` with every line prefixed by `indent` and ended by a newline.
void AppendIndented(std::string& out, std::string_view text, std::string_view indent);

}  // namespace kiln
