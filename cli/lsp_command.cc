// `kiln lsp`: the policy language server on stdin/stdout (lsp/server.h), for editors. Nothing
// else may write to stdout while it runs: logs already go to stderr (cli/main.cc).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/errors.h"
#include "lsp/server.h"

namespace kiln::cli {

void AddLspCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lsp", "run the policy language server over stdio (diagnostics, hover, definition, "
             "completion, document symbols)");
  cmd->callback([] {
    std::ios::sync_with_stdio(false);
    int code = lsp::Serve(std::cin, std::cout);
    // The protocol's exit code: 0 after shutdown, 1 otherwise.
    EndCommand(code);
  });
}

}  // namespace kiln::cli
