#pragma once
// `kiln simulate --compare-conf A B SCENARIO`: two configurations (each a scheduler.conf, a .kpack
// or a pack directory) run on the same scenario or trace, and what differs between them: the
// decisions, session by session; per-queue waiting; mean utilisation and fragmentation.

#include <string>

#include "cli/shared_options.h"

namespace kiln::cli {

struct CompareConfOptions {
  std::string a, b;      // the two configurations
  std::string scenario;  // the scenario file
  PolicyOptions policy;  // --policy-dir, --pack, --trust: the plugin sources both sides share
  int cycles = 1;
  bool cycles_given = false;
  std::string period = "1s";
  bool period_given = false;
  std::string until;
  std::string output = "table";  // table | json
  std::string report;            // --report FILE.html
};

// Runs both sides and prints the comparison; returns the exit code (0, or 2 for bad input).
int RunCompareConf(const CompareConfOptions& opts);

}  // namespace kiln::cli
