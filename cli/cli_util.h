#pragma once
// Pieces every command that runs a scenario shares (defined in simulate_command.cc).

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
};

// The policies a scenario's conf can name: the built-in ones, --policy-dir directories and the
// plugins of --pack packs (named pack/plugin; verified, and with --trust signed by a trusted key).
Result<std::unique_ptr<PolicyProvider>> MakeProvider(const ProviderOptions& opts);

}  // namespace kiln::cli
