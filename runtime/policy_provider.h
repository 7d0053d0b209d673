#pragma once
// Where plugins come from. A conf names plugins; whoever runs sessions (the simulator, the server)
// asks a PolicyProvider for each name before the first session. The policy host (compiler/host)
// implements it over compiled policies; tests implement it over C++ test plugins.

#include <memory>
#include <string>
#include <vector>

#include "runtime/conf.h"
#include "runtime/plugin.h"
#include "runtime/status.h"

namespace kiln {

// Resolves plugin names of a conf into plugin builders. The policy host (compiler/host)
// implements it over compiled policies; tests implement it over C++ test plugins.
class PolicyProvider {
 public:
  virtual ~PolicyProvider() = default;
  // Every plugin name this provider can build (for "did you mean" in errors).
  virtual std::vector<std::string> Names() const = 0;
  // The builder for `option.name`; nullptr when this provider has no plugin of that name.
  // An Error when the plugin exists but cannot serve this entry (e.g. a compile error in its
  // policy, or `arguments` its schema rejects); it should name `option.where`.
  virtual Result<const PluginBuilder*> Prepare(const PluginOption& option) = 0;
  // A hint that Prepare will be asked for each of `names`: a provider may get them ready together
  // (the policy host compiles them concurrently). Errors are left for Prepare to report.
  virtual void Prefetch(const std::vector<std::string>& names) { (void)names; }
};

// What the command passes to the policy host when it asks for a provider.
struct PolicyProviderOptions {
  std::vector<std::string> policy_dirs;  // --policy-dir: user policies beside the built-ins
  bool allow_builtin_override = false;   // a user policy may replace the built-in of its name
};

// The hook for the policy host (compiler/host). It implements
//
//   Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
//       const PolicyProviderOptions& options);   // in namespace kiln
//
// declared in `compiler/host/compiled_policy_provider.h` (the runtime does not link the compiler;
// packs/provider.cc makes one for every command and for the server).

// A provider over a fixed registry (C++ test plugins; an empty registry for plugin-free runs).
class RegistryPolicyProvider : public PolicyProvider {
 public:
  RegistryPolicyProvider() = default;
  explicit RegistryPolicyProvider(PluginRegistry registry) : registry_(std::move(registry)) {}
  PluginRegistry& registry() { return registry_; }
  std::vector<std::string> Names() const override { return registry_.Names(); }
  Result<const PluginBuilder*> Prepare(const PluginOption& option) override {
    return registry_.Find(option.name);
  }

 private:
  PluginRegistry registry_;
};

}  // namespace kiln
