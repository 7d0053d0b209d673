#pragma once
// Where the plugins a conf can name come from, and the one place they become a PolicyProvider:
// the built-in policies, the policies of --policy-dir directories, and the plugins of policy
// packs (named pack/plugin; verified, and with --trust signed by a trusted key). Every `kiln`
// command that runs sessions and `kiln serve`'s configuration loads (server/policy_set.h) build
// their provider here, so a pack is accepted or refused the same way everywhere.

#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "packs/pack.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln::packs {

struct ProviderSources {
  std::vector<std::string> policy_dirs;  // --policy-dir
  bool allow_builtin_override = false;   // a --policy-dir policy may replace a built-in
  std::string compile_cache_dir;         // --compile-cache; empty: the compiler's default
  // The packs: every *.kpack in `packs_dir` (serve --packs) and each of `pack_files` (--pack: a
  // .kpack or a pack directory).
  std::string packs_dir;
  std::vector<std::string> pack_files;
  // --trust: PEM public keys; when any is given, every pack must be signed by one of them.
  std::vector<std::string> trust_keys;
  // Where a reload finds the `state ... across sessions` of the entries it keeps; null: every
  // conf load starts afresh (CompiledPolicyOptions::kept_state).
  std::shared_ptr<KeptStateStore> kept_state;
};

// The packs `sources` uses: each *.kpack of `packs_dir` in name order, then `pack_files`. `ec` is
// set when `packs_dir` cannot be listed.
std::vector<std::string> PackPaths(const ProviderSources& sources, std::error_code& ec);

// Packs that passed VerifyPacks: their policies for the provider, and one line per pack for
// people ("team-fairness 1.0.0 (packs/team.kpack, signed by ed25519:...)").
struct VerifiedPacks {
  std::vector<NamedPolicySource> policies;
  std::vector<std::string> descriptions;
};

// Verifies packs already read (digests, signature, trust, language version); the first that
// fails, or a pack name provided twice, is the error.
Result<VerifiedPacks> VerifyPacks(const std::vector<Result<Pack>>& read,
                                  const std::vector<std::string>& trust_keys);

// The policy host over the built-ins, `sources`' policy directories and `pack_policies`.
Result<std::unique_ptr<PolicyProvider>> MakeProvider(const ProviderSources& sources,
                                                     std::vector<NamedPolicySource> pack_policies);

// Reads and verifies the packs of `sources`, then MakeProvider: what a one-shot command runs.
Result<std::unique_ptr<PolicyProvider>> LoadProvider(const ProviderSources& sources);

// The policy host with the policies of `packs` (read and checked by the caller) added under their
// `pack/plugin` names: `kiln pack build` and `kiln pack conf` on the pack they work on.
Result<std::unique_ptr<PolicyProvider>> MakePackProvider(const ProviderSources& sources,
                                                         const std::vector<Pack>& packs);

}  // namespace kiln::packs
