// `kiln compile --emit=ast|typed-ast|llvm FILE`: dump one compiler stage of a policy. `ast` is
// the tree as parsed, `typed-ast` adds types and name bindings, `llvm` is the optimised IR the
// JIT compiles (one "kiln.on.<point>" C-ABI function per served extension point). Exit 0 on
// success, 1 when the policy has errors (printed like `kiln check`). FILE may also name a
// built-in policy ("gang").
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>
#include <string>

#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/policy_source.h"

namespace kiln::cli {

namespace {

int Compile(const std::string& emit, const std::string& path) {
  auto loaded = LoadPolicySource(path);
  if (!loaded) {
    PrintError(loaded.error());
    return kExitFailed;
  }
  const SourceFile& source = *loaded;
  try {
    FrontendResult result = RunFrontend(source);
    if (!result.ok()) {
      PrintDiagnostics(result.diagnostics, source);
      PrintErrorCount(result.diagnostics.ErrorCount());
      return kExitFailed;
    }
    if (emit == "ast" || emit == "typed-ast") {
      fmt::print("{}", DumpAst(*result.policy, emit == "typed-ast"));
      return kExitOk;
    }
    auto ir = PolicyCompiler::EmitIr(source);
    if (!ir.ok()) {
      PrintError(ir.error());
      return kExitFailed;
    }
    fmt::print("{}", *ir);
    return kExitOk;
  } catch (const std::exception& e) {
    PrintError(Error{fmt::format("internal compiler error: {}", e.what()), SourceLocation{path}});
    return kExitFailed;
  }
}

}  // namespace

void AddCompileCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "dump a compiler stage of a policy (ast, typed-ast, llvm)");
  auto emit = std::make_shared<std::string>("llvm");
  auto file = std::make_shared<std::string>();
  cmd->add_option("--emit", *emit, "stage to print")
      ->check(CLI::IsMember({"ast", "typed-ast", "llvm"}))
      ->default_val("llvm");
  cmd->add_option("file", *file, "policy file (or built-in policy name)")->required();
  cmd->callback([emit, file] { EndCommand(Compile(*emit, *file)); });
}

}  // namespace kiln::cli
