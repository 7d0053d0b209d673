// scenario-format.md's Output section, key for key and in that order.
#include <nlohmann/json.hpp>

#include "cli/output_format.h"

namespace kiln::cli {

std::string FormatJson(const SimulationResult& result) {
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["scenario"] = result.scenario;
  Json sessions = Json::array();
  for (const SessionResult& s : result.sessions) {
    Json j;
    j["index"] = s.index;
    Json binds = Json::object();
    for (const std::string& pod : s.bind_order) binds[pod] = s.binds.at(pod);
    j["binds"] = std::move(binds);
    Json evictions = Json::array();
    for (const auto& pod : s.evictions) evictions.push_back(pod);
    j["evictions"] = std::move(evictions);
    Json pipelined = Json::object();
    for (const auto& [pod, node] : s.pipelined) pipelined[pod] = node;
    j["pipelined"] = std::move(pipelined);
    Json phases = Json::object();
    for (const auto& [job, phase] : s.pod_group_phases) phases[job] = phase;
    j["podGroupPhases"] = std::move(phases);
    Json unschedulable = Json::object();
    for (const auto& [pod, reason] : s.unschedulable) unschedulable[pod] = reason;
    j["unschedulable"] = std::move(unschedulable);
    j["durationMicros"] = s.duration_micros;
    // An extension of the contract's shape: only present when a policy faulted.
    if (!s.faults.empty()) j["faults"] = s.faults;
    sessions.push_back(std::move(j));
  }
  doc["sessions"] = std::move(sessions);
  // The scenario's direct extension-point calls (scenario-format.md), when it has any.
  if (!result.calls.empty()) doc["calls"] = CallsJson(result.calls);
  return doc.dump(2) + "\n";
}

}  // namespace kiln::cli
