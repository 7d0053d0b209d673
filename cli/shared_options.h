#pragma once
// The options several commands share, declared once: --conf, and where the plugins a conf names
// come from (--policy-dir, --allow-builtin-override, --compile-cache, --pack, --trust); and what
// they become: a scenario's conf and the policy provider (packs/provider.h, which `kiln serve`'s
// loads use too).

#include <cstdint>
#include <memory>
#include <string>

#include "packs/provider.h"
#include "runtime/conf.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace CLI {
class App;
}

namespace kiln {
struct ScenarioSpec;
}

namespace kiln::cli {

struct PolicyOptions {
  std::string conf_file;  // --conf; empty: the scenario's own conf (or Volcano's default)
  packs::ProviderSources sources;
};

// Which of the shared options a command takes.
enum PolicyFlags : unsigned {
  kConfFlag = 1u << 0,        // --conf FILE
  kPolicyDirFlags = 1u << 1,  // --policy-dir DIR..., --allow-builtin-override, --compile-cache DIR
  kPackFlags = 1u << 2,       // --pack FILE..., --trust PUB.pem...
  kPacksDirFlags = 1u << 3,   // --packs DIR, --trust PUB.pem... (kiln serve)
};

// Declares the options `flags` selects on `cmd`, bound to `opts` (which must outlive parsing).
void AddPolicyOptions(CLI::App& cmd, PolicyOptions& opts, unsigned flags);

// The provider of `opts`' policies. `session_pairs`: pods × nodes of the scenario a one-shot
// command runs (0 when unknown); from kLargeSessionPairs up, policies no cache holds are compiled
// at O2 before the run instead of as tier-0 code.
Result<std::unique_ptr<PolicyProvider>> MakeProvider(const PolicyOptions& opts,
                                                     uint64_t session_pairs = 0);

// Above this many pods × nodes a session's handlers run long enough that tier-0 code (2-3×
// slower handlers) costs more than waiting for the O2 compile: measured 1k × 10k (1e7) faster
// with two tiers, 3k × 30k (9e7) faster with O2 at once (docs/performance.md, "Two tiers").
inline constexpr uint64_t kLargeSessionPairs = 30'000'000;

// The conf a scenario runs with: --conf when given, else the scenario's own, else the default.
Result<SchedulerConf> LoadScenarioConf(const ScenarioSpec& spec, const PolicyOptions& opts);

}  // namespace kiln::cli
