// `kiln simulate` (being written: see the issue that owns this command).
#include <CLI/CLI.hpp>

#include "runtime/cli/commands.h"

namespace kiln::cli {

void AddSimulateCommand(CLI::App& app) { app.add_subcommand("simulate", "not available yet"); }

}  // namespace kiln::cli
