#pragma once
// `kiln simulate --report FILE.html`: the trace replay as one self-contained HTML page
// (report_html.cc says what it shows and how it stays safe and bounded).

#include <string>

#include "runtime/cluster_spec.h"
#include "runtime/status.h"
#include "simulator/simulator.h"

namespace kiln::cli {

// The page for a trace run. `cluster` is the simulated cluster at the end (its nodes give the
// totals shares are measured against). Error when Chart.js cannot be read.
Result<std::string> FormatReportHtml(const SimulationResult& result, const ClusterSpec& cluster);

}  // namespace kiln::cli
