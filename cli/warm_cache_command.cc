// `kiln warm-cache DIR [POLICY...]`: compile policies (default: every built-in) and write their
// native code into DIR as a compile-cache directory (compiler/jit/object_cache.h). The build runs
// it once per build to produce `kiln-builtins/` beside the binary, the read-only cache that lets
// a cold `kiln` skip O2 and machine code for the built-ins; pointed at a --compile-cache
// directory it pre-warms that for a deployment's own policies. Objects are only valid for this
// build of Kiln on this CPU: elsewhere they are misses, and the policies compile as usual.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/policy_source.h"
#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"

namespace kiln::cli {

namespace {

int WarmCache(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<SourceFile> sources;
  if (names.empty())
    for (const BuiltinPolicy& b : BuiltinPolicies())
      sources.push_back(SourceFile{std::string(b.path), std::string(b.text)});
  for (const std::string& name : names) {
    auto source = LoadPolicySource(name);
    if (!source) {
      PrintError(source.error());
      return kExitFailed;
    }
    sources.push_back(std::move(*source));
  }
  auto compiler = PolicyCompiler::Global();
  if (!compiler.ok()) {
    PrintError(Error{compiler.error().message, {}});
    return kExitFailed;
  }
  auto written = (*compiler)->WriteCacheDir(dir, sources);
  if (!written.ok()) {
    PrintError(Error{written.error().message, {}});
    return kExitFailed;
  }
  fmt::print("{}: {} policies, {} objects written\n", dir, sources.size(), *written);
  return kExitOk;
}

}  // namespace

void AddWarmCacheCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "warm-cache", "compile policies (default: every built-in) into a compile-cache directory");
  auto dir = std::make_shared<std::string>();
  auto names = std::make_shared<std::vector<std::string>>();
  cmd->add_option("dir", *dir, "cache directory (created; objects already in it are replaced)")
      ->required();
  cmd->add_option("policies", *names, "policy files or built-in policy names");
  cmd->callback([dir, names] { EndCommand(WarmCache(*dir, *names)); });
}

}  // namespace kiln::cli
