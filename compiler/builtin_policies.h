#pragma once
// The built-in policies, embedded at build time from policies/*.policy
// (see cmake/EmbedPolicies.cmake), so the kiln binary works from any directory.

#include <string_view>
#include <vector>

namespace kiln {

struct BuiltinPolicy {
  std::string_view name;  // "gang" for policies/gang.policy
  std::string_view path;  // "policies/gang.policy", used in diagnostics
  std::string_view text;
};

const std::vector<BuiltinPolicy>& BuiltinPolicies();

// nullptr when no built-in policy has that name.
const BuiltinPolicy* FindBuiltinPolicy(std::string_view name);

}  // namespace kiln
