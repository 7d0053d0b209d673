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
#include "runtime/extension_points.h"
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
  // The last call: the session dispatches none of the plugin's handlers after it.
  virtual void OnSessionClose(Session& ssn) {}
};

// Whether the conf entry `option` lets its plugin serve `point`: the point's enableXxx flag (or
// its alternative flag) is on, or the point has none.
bool PointEnabledBy(const PluginOption& option, ExtensionPoint point);

// Native handler code that is compiled when first asked for (a tier-0 policy's,
// compiler/host/compiled_policy.h): what Session::RegisterLazy registers.
class HandlerSource {
 public:
  // The handler for `point` (HandlerFn<point>), compiled now if it was not yet; null when it
  // cannot be (the source logs why).
  virtual void (*Handler(ExtensionPoint point) const)() = 0;

 protected:
  ~HandlerSource() = default;
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
