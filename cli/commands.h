#pragma once
// Each `kiln` subcommand lives in its own file and adds itself to the app here. Heavy headers
// (CLI11, JSON, LLVM) stay in those files.

namespace CLI {
class App;
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
void AddTestCommand(CLI::App& app);      // test_command.cc
void AddPackCommand(CLI::App& app);      // pack_command.cc
void AddWarmCacheCommand(CLI::App& app);  // warm_cache_command.cc
void AddLspCommand(CLI::App& app);       // lsp_command.cc

}  // namespace kiln::cli
