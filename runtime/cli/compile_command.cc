// `kiln compile` (being written: see the issue that owns this command).
#include <CLI/CLI.hpp>

#include "runtime/cli/commands.h"

namespace kiln::cli {

void AddCompileCommand(CLI::App& app) { app.add_subcommand("compile", "not available yet"); }

}  // namespace kiln::cli
