// Pass: declare the policy's top-level names and reject duplicates and unknown capabilities.
//
//   before: `state x: int; const x = 1;`
//   after:  error "`x` is already declared" at the const, with a note at the state.
#include <fmt/format.h>

#include "compiler/passes/passes.h"

namespace kiln::passes {

std::vector<std::string> Globals::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, decl] : by_name) out.push_back(name);
  return out;
}

void DeclareGlobals(PassContext& ctx) {
  for (auto& decl : ctx.policy.decls) {
    switch (decl->kind) {
      case ast::NodeKind::Uses:
        if (decl->name != "http")
          ctx.diags.Error(decl->name_range,
                          fmt::format("unknown capability `{}` (the only capability is `http`)",
                                      decl->name));
        continue;
      case ast::NodeKind::Handler:
        continue;  // handlers are named by their points (check_handlers.cc)
      default:
        break;
    }
    auto [it, inserted] = ctx.globals.by_name.emplace(decl->name, decl.get());
    if (!inserted) {
      auto& d = ctx.diags.Error(decl->name_range,
                                fmt::format("`{}` is already declared", decl->name));
      d.notes.push_back({it->second->name_range, "previously declared here"});
    }
  }
}

}  // namespace kiln::passes
