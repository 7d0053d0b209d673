#include "cli/shared_options.h"

#include <CLI/CLI.hpp>

#include "compiler/host/jit_tiers.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::cli {

void AddPolicyOptions(CLI::App& cmd, PolicyOptions& opts, unsigned flags) {
  if (flags & kConfFlag)
    cmd.add_option("--conf", opts.conf_file,
                   "scheduler.conf to use instead of the scenario's `conf`");
  if (flags & kPolicyDirFlags) {
    // One directory per --policy-dir, so the paths that follow stay paths.
    cmd.add_option("--policy-dir", opts.sources.policy_dirs,
                   "directory of user policies (repeatable)")
        ->allow_extra_args(false);
    cmd.add_flag("--allow-builtin-override", opts.sources.allow_builtin_override,
                 "let a --policy-dir policy replace the built-in policy of the same name");
    cmd.add_option("--compile-cache", opts.sources.compile_cache_dir,
                   "reuse policies' native code across runs from this directory (created 0700; "
                   "default $KILN_COMPILE_CACHE, unset: no cache)");
  }
  if (flags & kPackFlags)
    cmd.add_option("--pack", opts.sources.pack_files,
                   "policy pack (.kpack or pack directory) whose plugins the conf may name as "
                   "pack/plugin (repeatable; verified before use)")
        ->allow_extra_args(false);
  if (flags & kPacksDirFlags)
    cmd.add_option("--packs", opts.sources.packs_dir,
                   "directory of policy packs (*.kpack, watched: a pack added, replaced or "
                   "removed applies live); their plugins are named pack/plugin in the conf");
  if (flags & (kPackFlags | kPacksDirFlags))
    cmd.add_option("--trust", opts.sources.trust_keys,
                   "public key (PEM) packs must be signed by (repeatable); with any given, "
                   "unsigned or otherwise signed packs are refused")
        ->allow_extra_args(false);
}

Result<std::unique_ptr<PolicyProvider>> MakeProvider(const PolicyOptions& opts,
                                                     uint64_t session_pairs) {
  // One big session would run start to end on tier-0 code (its O2 lands after it): compile O2
  // now. $KILN_JIT_TIERS still wins; the default only decides when it is unset.
  if (session_pairs >= kLargeSessionPairs) SetDefaultJitTiers(JitTiers::kOptimizedOnly);
  return packs::LoadProvider(opts.sources);
}

Result<SchedulerConf> LoadScenarioConf(const ScenarioSpec& spec, const PolicyOptions& opts) {
  if (opts.conf_file.empty()) return ResolveScenarioConf(spec, nullptr, opts.conf_file);
  auto text = ReadTextFile(opts.conf_file);
  if (!text) return text.error();
  return ResolveScenarioConf(spec, &*text, opts.conf_file);
}

}  // namespace kiln::cli
