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

// `kiln simulate --compare-conf A B --report FILE.html`: the comparison (cli/compare_conf.cc's
// JSON document, as text) as one page: utilisation, fragmentation and pending pods over time for
// both sides, waiting per queue, and the decisions that differ.
Result<std::string> FormatCompareReportHtml(const std::string& comparison_json);

}  // namespace kiln::cli
