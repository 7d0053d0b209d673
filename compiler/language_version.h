#pragma once
// The version of the Kiln policy language this compiler implements (grammar, types, handlers,
// standard library). A policy pack states the range it was written for (`language:` in
// kiln-pack.yaml) and is refused by a compiler outside it. Bump the minor version when the
// language gains something (a pack using it needs the newer compiler) and the major version when
// a policy that compiled before may no longer compile.
#include <string_view>

namespace kiln {
inline constexpr std::string_view kLanguageVersion = "0.1.0";
}  // namespace kiln
