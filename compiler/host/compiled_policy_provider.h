#pragma once
// The plugin host: scheduler.conf plugin names → compiled policies → session plugins.
//
// A name resolves to a user policy (`<dir>/<name>.policy` in a --policy-dir) or to a built-in
// (compiler/builtin_policies.h). A user policy that has a built-in's name is an error unless
// `allow_builtin_override` is set. Each plugin entry's `arguments:` are validated against the
// policy's `arg` schema when the conf is prepared (errors name plugin, argument and line), and
// bound once; each session then gets a fresh plugin whose per-session state lives in an arena
// freed with the session, and whose `state ... across sessions` lives in the entry's block of a
// KeptStateStore. Handlers register through Session::RegisterRaw, which honours the
// entry's enableXxx flags.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/source.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln {

class KeptStateStore;

// A policy that is not a file of a --policy-dir: a policy pack's (packs/), named `conf_name` in
// scheduler.conf (`team-fairness/team-share`) while its source declares `policy declared_name;`.
struct NamedPolicySource {
  std::string conf_name;
  std::string declared_name;
  SourceFile source;
  // The capabilities a built pack's manifest lists for the policy (`uses:`, filled by
  // `kiln pack build`); a policy using one it does not list is refused. nullopt: not from a
  // built pack (nothing to hold it to).
  std::optional<std::vector<std::string>> manifest_uses;
};

struct CompiledPolicyOptions {
  std::vector<std::string> policy_dirs;
  bool allow_builtin_override = false;
  // --compile-cache: where the process-wide compiler caches native code (overrides
  // $KILN_COMPILE_CACHE); empty leaves the compiler's cache as it is.
  std::string compile_cache_dir;
  std::vector<NamedPolicySource> named_policies;  // packs' policies, beside the dirs' files
  // Where conf entries keep `state ... across sessions` (compiler/host/kept_state.h). Null: each
  // conf the provider prepares starts afresh (a simulation, each case of `kiln test`); `kiln
  // serve` passes one store to every configuration it loads, so a reload that leaves an entry as
  // it was keeps its state.
  std::shared_ptr<KeptStateStore> kept_state;
};

Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
    const CompiledPolicyOptions& options);
Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
    const PolicyProviderOptions& options);

}  // namespace kiln
