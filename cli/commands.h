#pragma once
// Each `kiln` subcommand lives in its own file and adds itself to the app here. Heavy headers
// (CLI11, JSON, LLVM) stay in those files.

#include <string>

namespace CLI {
class App;
}

namespace kiln {
struct Explanation;
}

namespace kiln::cli {

void AddSimulateCommand(CLI::App& app);  // simulate_command.cc
// --policy-max-cost, --policy-cost-size, --policy-loop-budget, --policy-memory-budget,
// --plugin-fault-limit on the top-level app (policy_limits.cc).
void AddPolicyLimitOptions(CLI::App& app);
void AddCheckCommand(CLI::App& app);     // check_command.cc
void AddCompileCommand(CLI::App& app);   // compile_command.cc
void AddExportManifestsCommand(CLI::App& app);  // export_manifests_command.cc
void AddServeCommand(CLI::App& app);     // serve_command.cc
void AddSnapshotCommand(CLI::App& app);  // snapshot_command.cc
void AddExplainCommand(CLI::App& app);   // explain_command.cc
void AddWhatIfCommand(CLI::App& app);    // whatif_command.cc
// `kiln explain -o json`'s document (explain_command.cc), for kiln serve's GET /explain.
std::string ExplainJsonText(const std::string& scenario, const Explanation& e);
void AddTestCommand(CLI::App& app);      // test_command.cc
void AddPackCommand(CLI::App& app);      // pack_command.cc
void AddWarmCacheCommand(CLI::App& app);  // warm_cache_command.cc
void AddLspCommand(CLI::App& app);       // lsp_command.cc

}  // namespace kiln::cli
