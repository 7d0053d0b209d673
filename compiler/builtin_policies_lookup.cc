// Looks a built-in policy up by name (policies/<name>.policy, embedded at build time).
#include "compiler/builtin_policies.h"

namespace kiln {

const BuiltinPolicy* FindBuiltinPolicy(std::string_view name) {
  for (const auto& p : BuiltinPolicies())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace kiln
