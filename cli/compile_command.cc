// `kiln compile --emit=ast|typed-ast|llvm FILE`: dump one compiler stage of a policy. `ast` is
// the tree as parsed, `typed-ast` adds types and name bindings, `llvm` is the optimised IR the
// JIT compiles (one "kiln.on.<point>" C-ABI function per served extension point). Exit 0 on
// success, 1 when the policy has errors (printed like `kiln check`). FILE may also name a
// built-in policy ("gang").
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/builtin_policies.h"
#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "cli/commands.h"

namespace kiln::cli {

namespace {

bool LoadSource(const std::string& path, SourceFile* out) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    *out = SourceFile{path, text.str()};
    return true;
  }
  if (const BuiltinPolicy* b = FindBuiltinPolicy(path)) {
    *out = SourceFile{std::string(b->path), std::string(b->text)};
    return true;
  }
  return false;
}

int Compile(const std::string& emit, const std::string& path) {
  SourceFile source;
  if (!LoadSource(path, &source)) {
    fmt::print(stderr, "{}: error: cannot read the file (and no built-in policy has that name)\n",
               path);
    return 1;
  }
  try {
    FrontendResult result = RunFrontend(source);
    if (!result.ok()) {
      PrintDiagnostics(result.diagnostics, source);
      int n = result.diagnostics.ErrorCount();
      fmt::print(stderr, "{} error{} generated.\n", n, n == 1 ? "" : "s");
      return 1;
    }
    if (emit == "ast" || emit == "typed-ast") {
      fmt::print("{}", DumpAst(*result.policy, emit == "typed-ast"));
      return 0;
    }
    auto ir = PolicyCompiler::EmitIr(source);
    if (!ir.ok()) {
      fmt::print(stderr, "{}\n", ir.error().Format());
      return 1;
    }
    fmt::print("{}", *ir);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: internal compiler error: {}\n", path, e.what());
    return 1;
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
  cmd->callback([emit, file] {
    int code = Compile(*emit, *file);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace kiln::cli
