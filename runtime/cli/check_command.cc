// `kiln check` (being written: see the issue that owns this command).
#include <CLI/CLI.hpp>

#include "runtime/cli/commands.h"

namespace kiln::cli {

void AddCheckCommand(CLI::App& app) { app.add_subcommand("check", "not available yet"); }

}  // namespace kiln::cli
