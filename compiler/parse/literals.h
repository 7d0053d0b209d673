#pragma once
// Decoding of literal tokens: strings with escapes, durations (`1h30m`), quantities (`1Gi`).
// Shared by the AST builder and the standard library's parse_duration/quantity natives.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// The body of a "..." token without quotes, escapes decoded; nullopt on an unknown escape.
std::optional<std::string> DecodeStringLiteral(std::string_view token);

// Go-style duration: one or more <number><unit> with unit ns|us|µs|ms|s|m|h (and d in policy
// source). Saturates at the int64 range. nullopt when malformed.
std::optional<int64_t> ParseDurationText(std::string_view text, bool allow_days);

// Kubernetes quantity ("250m", "1Gi", "1.5", "2e3") in base units. nullopt when malformed.
std::optional<double> ParseQuantityText(std::string_view text);

}  // namespace kiln
