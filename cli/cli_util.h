#pragma once
// Pieces every command that runs a scenario shares (defined in simulate_command.cc).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln::cli {

// "file:line:col: error: message" on stderr, then the offending source line with a caret under
// the column.
void PrintError(const Error& e);
// The same text as a string (ends with a newline).
std::string FormatError(const Error& e);

struct ProviderOptions {
  std::vector<std::string> policy_dirs;
  bool allow_builtin_override = false;
  std::string compile_cache;  // empty: $KILN_COMPILE_CACHE, or no cache
  std::vector<std::string> packs;  // --pack: .kpack files or pack directories
  std::vector<std::string> trust;  // --trust: PEM public keys packs must be signed by
  // Pods × nodes of the scenario a one-shot command (simulate, explain) runs; 0 when unknown.
  // From kLargeSessionPairs up, policies no cache holds are compiled at O2 before the run
  // instead of as tier-0 code (MakeProvider).
  uint64_t session_pairs = 0;
};

// Above this many pods × nodes a session's handlers run long enough that tier-0 code (2-3×
// slower handlers) costs more than waiting for the O2 compile: measured 1k × 10k (1e7) faster
// with two tiers, 3k × 30k (9e7) faster with O2 at once (docs/performance.md, "Two tiers").
inline constexpr uint64_t kLargeSessionPairs = 30'000'000;

// The policies a scenario's conf can name: the built-in ones, --policy-dir directories and the
// plugins of --pack packs (named pack/plugin; verified, and with --trust signed by a trusted key).
Result<std::unique_ptr<PolicyProvider>> MakeProvider(const ProviderOptions& opts);

}  // namespace kiln::cli
