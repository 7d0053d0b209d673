#pragma once
// How `kiln simulate` prints a simulation: a readable table (default), the JSON document of
// scenario-format.md's Output section, and an `expect:` block for pasting into a scenario when a
// --check fails. nlohmann/json stays inside output_json.cc.

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "runtime/calls.h"
#include "simulator/simulator.h"

namespace kiln::cli {

std::string FormatTable(const SimulationResult& result);
std::string FormatJson(const SimulationResult& result);
// The session's decisions as a scenario `expect:` block (binds, evictions, pipelined, phases).
std::string FormatExpectBlock(const SessionResult& session);
// One line per cluster warning: "warning: FILE:LINE: message".
std::string FormatWarnings(const std::vector<ClusterWarning>& warnings);
// The warnings as the `warnings:` entry of an `expect:` block.
std::string FormatWarningsBlock(const std::vector<ClusterWarning>& warnings);
// The scenario's `calls` with their results: the JSON list of the output's top-level `calls`
// (output_calls.cc), and a YAML `expect.calls` block for pasting into a scenario.
nlohmann::ordered_json CallsJson(const std::vector<CallSpec>& calls);
std::string FormatCallsBlock(const std::vector<CallSpec>& calls);
// Trace replay (scenario-format.md): one session's `metrics` and the run's `summary`.
nlohmann::ordered_json MetricsJson(const SessionMetrics& m);
nlohmann::ordered_json SummaryJson(const TraceSummary& s);
// RFC 3339 in UTC with second precision ("2025-01-01T00:00:00Z"); sub-second parts are kept
// when present ("...00.5Z").
std::string FormatTime(TimeNs t);

}  // namespace kiln::cli
