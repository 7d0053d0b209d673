#include "runtime/plugin.h"

#include <fmt/format.h>

namespace kiln {

bool PointEnabledBy(const PluginOption& option, ExtensionPoint point) {
  auto flag = GatingFlag(point);
  if (!flag) return true;
  if (auto alt = AlternativeGatingFlag(point); alt && option.Enabled(*alt)) return true;
  return option.Enabled(*flag);
}

Status PluginRegistry::Register(std::string name, PluginBuilder builder) {
  if (builders_.count(name))
    return Error{fmt::format("plugin \"{}\" is already registered", name), {}};
  builders_.emplace(std::move(name), std::move(builder));
  return Status::Ok();
}

const PluginBuilder* PluginRegistry::Find(std::string_view name) const {
  auto it = builders_.find(name);
  return it == builders_.end() ? nullptr : &it->second;
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : builders_) out.push_back(name);
  return out;
}

}  // namespace kiln
