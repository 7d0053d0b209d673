#pragma once
// Plugins and their registry. A plugin is built once per session from its scheduler.conf entry;
// OnSessionOpen registers handlers for extension points on the session (Session::Register*), and
// OnSessionClose runs at close. Compiled policies (compiler/) and C++ test plugins (tests/) are
// both plugins: the session does not know the difference.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/conf.h"
#include "runtime/status.h"

namespace kiln {

class Session;

// Identifies one plugin of the open session (its tier, its position, its conf entry). Handlers are
// registered through it so the session knows their order and the plugin's enableXxx flags.
struct PluginHandle {
  int slot = -1;  // index into Session::plugins()
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  // Registers handlers. An Error aborts the session open, naming the plugin.
  virtual Status OnSessionOpen(Session& ssn, PluginHandle self) = 0;
  virtual void OnSessionClose(Session& ssn) {}
};

using PluginBuilder = std::function<Result<std::unique_ptr<Plugin>>(const PluginOption& option)>;

// name → builder. Duplicate names are rejected: `plugin "gang" is already registered`.
class PluginRegistry {
 public:
  Status Register(std::string name, PluginBuilder builder);
  // nullptr when no plugin has that name.
  const PluginBuilder* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginBuilder, std::less<>> builders_;
};

}  // namespace kiln
