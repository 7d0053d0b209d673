// The readable form of a simulation: one block per session.
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string_view>

#include "cli/output_format.h"
#include "simulator/testing.h"

namespace kiln::cli {

std::string FormatTime(TimeNs t) {
  std::time_t secs = static_cast<std::time_t>(t >= 0 ? t / 1'000'000'000 : (t - 999'999'999) / 1'000'000'000);
  int64_t nanos = t - static_cast<int64_t>(secs) * 1'000'000'000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", tm.tm_year + 1900,
                                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (nanos != 0) {
    std::string frac = fmt::format("{:09}", nanos);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out + "Z";
}

namespace {

// A YAML double-quoted scalar.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatWarnings(const std::vector<ClusterWarning>& warnings) {
  std::string out;
  for (const ClusterWarning& w : warnings) {
    std::string at = w.where.file;
    if (w.where.line > 0) at += fmt::format(":{}", w.where.line);
    out += fmt::format("warning: {}{}\n", at.empty() ? "" : at + ": ", w.message);
  }
  return out;
}

std::string FormatWarningsBlock(const std::vector<ClusterWarning>& warnings) {
  if (warnings.empty()) return "  warnings: []\n";
  std::string out = "  warnings:\n";
  for (const ClusterWarning& w : warnings) out += fmt::format("  - {}\n", Quote(w.message));
  return out;
}

namespace {

// A trace replay's summary for people: the run, mean utilisation, waiting time per queue.
std::string FormatTraceSummary(const TraceSummary& t) {
  std::string out = fmt::format(
      "\nsummary: {} to {}, {} sessions run, {} idle periods skipped, stopped by {}\n",
      FormatTime(t.start), FormatTime(t.end), t.sessions_run, t.sessions_skipped, t.stopped);
  out += "  mean utilisation:";
  for (const auto& [name, u] : t.mean_utilisation) out += fmt::format(" {} {:.1f}%", name, 100 * u);
  out += "\n  waiting time per queue (seconds; nearest-rank percentiles):\n";
  for (const auto& [queue, w] : t.queues)
    out += fmt::format("    {:<24} {} started, {} not started; mean {:.2f}, p50 {:.2f}, p95 {:.2f}, "
                       "max {:.2f}\n",
                       queue, w.jobs, w.not_started, w.mean, w.p50, w.p95, w.max);
  return out;
}

}  // namespace

std::string FormatTable(const SimulationResult& result) {
  std::string out = fmt::format("scenario: {}\n", result.scenario);
  out += FormatWarnings(result.warnings);
  for (const SessionResult& s : result.sessions) {
    // One column width per session, so pods line up across the sections.
    size_t width = 24;
    auto widen = [&width](const std::string& key) { width = std::max(width, key.size()); };
    for (const auto& [pod, node] : s.binds) widen(pod);
    for (const auto& [pod, node] : s.pipelined) widen(pod);
    for (const auto& [job, phase] : s.pod_group_phases) widen(job);
    width = std::min<size_t>(width, 56);

    out += fmt::format("\nsession {} at {} ({} µs): {} bound, {} pipelined, {} evicted, {} unschedulable\n",
                       s.index, FormatTime(s.time), s.duration_micros, s.binds.size(),
                       s.pipelined.size(), s.evictions.size(), s.unschedulable.size());
    out += fmt::format("  binds: {}\n", s.binds.size());
    for (const std::string& pod : s.bind_order)
      out += fmt::format("    {:<{}} -> {}\n", pod, width, s.binds.at(pod));
    // Pipelined pods hold resources that are still being released; a later session binds them.
    // The ones that evicted pods for their place keep the node as their nominated node.
    out += fmt::format("  pipelined: {}\n", s.pipelined.size());
    for (const auto& [pod, node] : s.pipelined) {
      out += fmt::format("    {:<{}} -> {}", pod, width, node);
      if (s.nominated.count(pod)) out += "  (nominated after evictions)";
      out += "\n";
    }
    out += fmt::format("  evictions: {}\n", s.evictions.size());
    for (const auto& pod : s.evictions) out += fmt::format("    {}\n", pod);
    out += fmt::format("  unschedulable: {}\n", s.unschedulable.size());
    for (const auto& [pod, reason] : s.unschedulable) out += fmt::format("    {}: {}\n", pod, reason);
    // Under each PodGroup, the Unschedulable condition this session gave it: gang's count of the
    // tasks still missing. Its "Origin reason" tail repeats a pod's reason listed above.
    out += fmt::format("  podGroup phases: {}\n", s.pod_group_phases.size());
    for (const auto& [job, phase] : s.pod_group_phases) {
      out += fmt::format("    {:<{}} {}\n", job, width, phase);
      auto it = s.conditions.find(job);
      if (it == s.conditions.end()) continue;
      for (const PodGroupCondition& c : it->second) {
        if (c.type != "Unschedulable" || c.status != "True" || c.last_transition_time != s.time)
          continue;
        std::string_view message = c.message.empty() ? c.reason : c.message;
        message = message.substr(0, message.find(". Origin reason is"));
        out += fmt::format("      {}\n", message);
      }
    }
    if (!s.allocated_hyper_nodes.empty()) {
      out += fmt::format("  allocated hyperNodes: {}\n", s.allocated_hyper_nodes.size());
      for (const auto& [job, hn] : s.allocated_hyper_nodes)
        out += fmt::format("    {:<{}} {}\n", job, width, hn);
    }
    if (!s.pod_annotations.empty()) {
      out += fmt::format("  pod annotations: {}\n", s.pod_annotations.size());
      for (const auto& [pod, annotations] : s.pod_annotations)
        for (const auto& [k, v] : annotations)
          out += fmt::format("    {:<{}} {}={}\n", pod, width, k, v);
    }
    if (!s.faults.empty()) {
      out += fmt::format("  policy faults: {}\n", s.faults.size());
      for (const auto& f : s.faults) out += fmt::format("    {}\n", f);
    }
  }
  if (result.trace) out += FormatTraceSummary(result.summary);
  // The scenario's direct extension-point calls with what each answered, as `expect.calls`
  // would hold them.
  if (!result.calls.empty()) out += FormatCallsBlock(result.calls);
  return out;
}

std::string FormatExpectBlock(const SessionResult& s) {
  auto flow_map = [](const std::map<std::string, std::string>& m) {
    std::string out = "{";
    for (const auto& [k, v] : m) out += fmt::format("{}{}: {}", out.size() > 1 ? ", " : "", k, v);
    return out + "}";
  };
  // binds, evictions, pipelined: the block `kiln test --compare` writes, then what else --check
  // can compare.
  std::string out = DecisionsExpectBlock(s);
  out += "  podGroupPhases: " + flow_map(s.pod_group_phases) + "\n";
  if (s.unschedulable.empty()) {
    out += "  unschedulable: {}\n";
  } else {
    out += "  unschedulable:\n";
    for (const auto& [pod, reason] : s.unschedulable)
      out += fmt::format("    {}: {}\n", pod, Quote(reason));
  }
  return out;
}

}  // namespace kiln::cli
