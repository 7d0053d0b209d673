// scenario-format.md's Output section, key for key and in that order.
#include <nlohmann/json.hpp>

#include "cli/json_util.h"
#include "cli/output_format.h"
#include "runtime/quantity.h"

namespace kiln::cli {

namespace {

using Json = nlohmann::ordered_json;

Json SharesJson(const std::vector<std::pair<std::string, double>>& shares) {
  return ObjectOfDistinctKeys(shares, [](const auto& kv) { return std::pair(kv.first, kv.second); });
}

double Seconds(DurationNs d) { return static_cast<double>(d) / 1e9; }

}  // namespace

Json MetricsJson(const SessionMetrics& m) {
  Json j;
  j["time"] = FormatTime(m.time);
  j["pending"] = m.pending;
  j["running"] = m.running;
  j["utilisation"] = SharesJson(m.utilisation);
  j["fragmentation"] = SharesJson(m.fragmentation);
  Json queues = Json::object();
  for (const auto& [name, q] : m.queues) {
    Json qj;
    qj["allocated"] = ResourceJson(q.allocated, /*with_pods=*/false);
    if (q.deserved) qj["deserved"] = ResourceJson(*q.deserved, /*with_pods=*/false);
    qj["pending"] = q.pending;
    queues[name] = std::move(qj);
  }
  j["queues"] = std::move(queues);
  if (!m.gang_tiers.empty()) {
    Json tiers = Json::object();
    for (const auto& [tier, gangs] : m.gang_tiers) tiers[std::to_string(tier)] = gangs;
    j["gangsByTier"] = std::move(tiers);
  }
  return j;
}

Json SummaryJson(const TraceSummary& s) {
  Json j;
  j["start"] = FormatTime(s.start);
  j["end"] = FormatTime(s.end);
  j["sessionsRun"] = s.sessions_run;
  j["sessionsSkipped"] = s.sessions_skipped;
  j["stopped"] = s.stopped;
  j["jobs"] = ObjectOfDistinctKeys(s.jobs, [](const JobRecord& r) {
    Json job;
    job["queue"] = r.queue;
    job["arrival"] = FormatTime(r.arrival);
    job["firstBind"] = r.first_bind ? Json(FormatTime(*r.first_bind)) : Json(nullptr);
    job["completion"] = r.completion ? Json(FormatTime(*r.completion)) : Json(nullptr);
    job["waitingSeconds"] = r.first_bind ? Json(Seconds(*r.first_bind - r.arrival)) : Json(nullptr);
    job["jctSeconds"] = r.completion ? Json(Seconds(*r.completion - r.arrival)) : Json(nullptr);
    return std::pair(r.uid, std::move(job));
  });
  auto waiting_json = [](const WaitingStats& w) {
    Json q;
    q["jobs"] = w.jobs;
    q["notStarted"] = w.not_started;
    Json waiting;
    waiting["mean"] = w.mean;
    waiting["p50"] = w.p50;
    waiting["p95"] = w.p95;
    waiting["max"] = w.max;
    q["waitingSeconds"] = std::move(waiting);
    return q;
  };
  Json queues = Json::object();
  for (const auto& [name, w] : s.queues) queues[name] = waiting_json(w);
  j["queues"] = std::move(queues);
  if (!s.queues_by_topology.empty()) {
    Json by = Json::object();
    for (const auto& [name, modes] : s.queues_by_topology)
      for (const auto& [mode, w] : modes) by[name][mode] = waiting_json(w);
    j["waitingByTopology"] = std::move(by);
  }
  Json util;
  util["mean"] = SharesJson(s.mean_utilisation);
  j["utilisation"] = std::move(util);
  return j;
}

std::string FormatJson(const SimulationResult& result) {
  // Written session by session (see Nested): a long trace's document as one JSON tree took
  // several times the memory of its text.
  std::string out = "{\n  \"scenario\": " + Json(result.scenario).dump() + ",\n  \"sessions\": ";
  if (result.sessions.empty()) out += "[]";
  else out += "[\n";
  for (size_t i = 0; i < result.sessions.size(); ++i) {
    const SessionResult& s = result.sessions[i];
    // The session's members one by one, each as dump(2) would print it inside the document; the
    // binds (one per pod placed, 77k at 10k × 100k) go straight into the text, without a tree.
    out += "    {";
    bool first_member = true;
    auto member = [&](std::string_view key) {
      out += first_member ? "\n      " : ",\n      ";
      first_member = false;
      out += Json(key).dump();
      out += ": ";
    };
    member("index");
    out += std::to_string(s.index);
    member("binds");
    for (size_t b = 0; b < s.bind_order.size(); ++b) {
      const std::string& pod = s.bind_order[b];
      out += b == 0 ? "{\n        " : ",\n        ";
      out += Json(pod).dump();
      out += ": ";
      out += Json(s.binds.at(pod)).dump();
    }
    out += s.bind_order.empty() ? "{}" : "\n      }";
    Json j;
    Json evictions = Json::array();
    for (const auto& pod : s.evictions) evictions.push_back(pod);
    j["evictions"] = std::move(evictions);
    auto same = [](const auto& kv) { return std::pair(kv.first, kv.second); };
    j["pipelined"] = ObjectOfDistinctKeys(s.pipelined, same);
    j["podGroupPhases"] = ObjectOfDistinctKeys(s.pod_group_phases, same);
    j["unschedulable"] = ObjectOfDistinctKeys(s.unschedulable, same);
    // Kiln extension (docs/reasons.md): each unschedulable reason's stable codes, and the
    // PodGroups enqueue refused with who refused them and why; only where there are some.
    if (!s.unschedulable_codes.empty())
      j["unschedulableCodes"] = ObjectOfDistinctKeys(s.unschedulable_codes, same);
    if (!s.admission_refusals.empty())
      j["admissionRefusals"] = ObjectOfDistinctKeys(s.admission_refusals, [](const auto& kv) {
        return std::pair(kv.first, Json{{"plugin", kv.second.plugin},
                                        {"code", kv.second.code},
                                        {"message", kv.second.message}});
      });
    // The contract's topology extension: only where a job was placed under a HyperNode.
    if (!s.allocated_hyper_nodes.empty())
      j["allocatedHyperNodes"] = ObjectOfDistinctKeys(s.allocated_hyper_nodes, same);
    // The contract's device extension: only where a plugin set annotations for a bind.
    if (!s.pod_annotations.empty())
      j["podAnnotations"] = ObjectOfDistinctKeys(s.pod_annotations, [&](const auto& kv) {
        return std::pair(kv.first, ObjectOfDistinctKeys(kv.second, same));
      });
    j["durationMicros"] = s.duration_micros;
    // An extension of the contract's shape: only present when a policy faulted.
    if (!s.faults.empty()) j["faults"] = s.faults;
    if (result.trace) j["metrics"] = MetricsJson(result.metrics[i]);
    for (const auto& [key, value] : j.items()) {
      member(key);
      out += Nested(value, 3);
    }
    out += "\n    }";
    out += i + 1 < result.sessions.size() ? ",\n" : "\n  ]";
  }
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
  out += ",\n  \"warnings\": " + Nested(warnings, 1);
  // The scenario's direct extension-point calls (scenario-format.md), when it has any.
  if (!result.calls.empty()) out += ",\n  \"calls\": " + Nested(CallsJson(result.calls), 1);
  if (result.trace) {
    Json summary = SummaryJson(result.summary);
    // Utilisation over time: the per-session samples, in one place for plotting.
    Json over_time = Json::array();
    for (const SessionMetrics& m : result.metrics) {
      Json point;
      point["time"] = FormatTime(m.time);
      for (const auto& [name, u] : m.utilisation) point[name] = u;
      over_time.push_back(std::move(point));
    }
    summary["utilisation"]["overTime"] = std::move(over_time);
    out += ",\n  \"summary\": " + Nested(summary, 1);
  }
  out += "\n}\n";
  return out;
}

}  // namespace kiln::cli
