// The kiln command: simulate, check, compile, serve, explain, test, pack, warm-cache, snapshot,
// whatif.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/huge_page_malloc.h"
#include "compiler/host/jit_tiers.h"
#include "compiler/language_version.h"

namespace kiln {
const char* Version();  // runtime/version.cc
}  // namespace kiln

int main(int argc, char** argv) {
  kiln::cli::RememberCommandLine(argc, argv);  // kiln serve may execute itself again
  // Log messages (warnings about the environment, policy faults, ...) go to stderr: spdlog's
  // default logger writes to stdout, where they would corrupt `-o json` and other results.
  spdlog::set_default_logger(spdlog::stderr_color_mt("kiln"));
  // A policy no cache holds runs at once as tier-0 code while O2 compiles in the background
  // (compiler/host/jit_tiers.h; KILN_JIT_TIERS=0 turns it off). Whatever O2 compile is left at
  // exit is finished when a writable compile cache will keep it, else abandoned.
  kiln::SetDefaultJitTiers(kiln::JitTiers::kTwoTier);
  struct FinishTierUp {
    ~FinishTierUp() { kiln::FinishJitTierUp(); }
  } finish_tier_up;
  CLI::App app{"kiln: a Volcano-compatible batch scheduler with JIT-compiled policies"};
  app.require_subcommand(1);
  // The policy language version is what a pack's `language:` range is checked against.
  app.set_version_flag("--version", std::string("kiln ") + kiln::Version() + " (policy language " +
                                        std::string(kiln::kLanguageVersion) + ")");
  kiln::cli::AddPolicyLimitOptions(app);
  kiln::cli::AddSimulateCommand(app);
  kiln::cli::AddCheckCommand(app);
  kiln::cli::AddLspCommand(app);  // the editors' view of check
  kiln::cli::AddCompileCommand(app);
  kiln::cli::AddExportManifestsCommand(app);
  kiln::cli::AddServeCommand(app);
  kiln::cli::AddExplainCommand(app);
  kiln::cli::AddTestCommand(app);
  kiln::cli::AddPackCommand(app);
  kiln::cli::AddWarmCacheCommand(app);
  kiln::cli::AddSnapshotCommand(app);
  kiln::cli::AddWhatIfCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    // A command's own result (kiln check: 1 on errors; simulate --check: 1 on a mismatch).
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    // --help prints and succeeds; any other argument error is bad input, which every kiln
    // command reports with exit code 2 (CLI11's own codes, 105 and up, would leak otherwise).
    int code = app.exit(e);
    return code == 0 ? kiln::cli::kExitOk : kiln::cli::kExitBadInput;
  }
  return kiln::cli::kExitOk;
}
