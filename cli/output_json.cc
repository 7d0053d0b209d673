// scenario-format.md's Output section, key for key and in that order.
#include <nlohmann/json.hpp>

#include "cli/output_format.h"

namespace kiln::cli {

namespace {

using Json = nlohmann::ordered_json;

// An object from keys known to be distinct, in the given order. ordered_json's own insert
// searches the object linearly for the key first, which made the output quadratic in the number
// of decisions (77k binds took ~6 s); appending to the underlying vector keeps it linear.
template <typename Range, typename KeyValue>
Json ObjectOfDistinctKeys(const Range& range, KeyValue key_value) {
  Json obj = Json::object();
  auto& items = static_cast<Json::object_t::Container&>(obj.get_ref<Json::object_t&>());
  items.reserve(std::size(range));
  for (const auto& item : range) {
    auto [key, value] = key_value(item);
    items.emplace_back(std::move(key), Json(std::move(value)));
  }
  return obj;
}

}  // namespace

std::string FormatJson(const SimulationResult& result) {
  Json doc;
  doc["scenario"] = result.scenario;
  Json sessions = Json::array();
  for (const SessionResult& s : result.sessions) {
    Json j;
    j["index"] = s.index;
    j["binds"] = ObjectOfDistinctKeys(
        s.bind_order, [&](const std::string& pod) { return std::pair(pod, s.binds.at(pod)); });
    Json evictions = Json::array();
    for (const auto& pod : s.evictions) evictions.push_back(pod);
    j["evictions"] = std::move(evictions);
    auto same = [](const auto& kv) { return std::pair(kv.first, kv.second); };
    j["pipelined"] = ObjectOfDistinctKeys(s.pipelined, same);
    j["podGroupPhases"] = ObjectOfDistinctKeys(s.pod_group_phases, same);
    j["unschedulable"] = ObjectOfDistinctKeys(s.unschedulable, same);
    j["durationMicros"] = s.duration_micros;
    // An extension of the contract's shape: only present when a policy faulted.
    if (!s.faults.empty()) j["faults"] = s.faults;
    sessions.push_back(std::move(j));
  }
  doc["sessions"] = std::move(sessions);
  // Kiln extension (docs/scenario-extensions.md): references in the cluster that do not resolve.
  Json warnings = Json::array();
  for (const ClusterWarning& w : result.warnings) {
    Json j;
    j["object"] = w.object;
    j["message"] = w.message;
    if (!w.where.file.empty()) j["file"] = w.where.file;
    if (w.where.line > 0) j["line"] = w.where.line;
    warnings.push_back(std::move(j));
  }
  doc["warnings"] = std::move(warnings);
  // The scenario's direct extension-point calls (scenario-format.md), when it has any.
  if (!result.calls.empty()) doc["calls"] = CallsJson(result.calls);
  return doc.dump(2) + "\n";
}

}  // namespace kiln::cli
