// `kiln simulate --compare-conf A B SCENARIO`: the offline half of rolling out a policy pack
// (docs/shadow.md is the live half). Each side runs the scenario (or the trace, with --cycles or
// --until) on its own simulated cluster, so after the first difference the two clusters differ
// too: the decisions are listed session by session as each side made them, and the summaries
// (waiting per queue, mean utilisation and fragmentation) say where that led.
#include "cli/compare_conf.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "cli/errors.h"
#include "cli/report_html.h"
#include "packs/pack.h"
#include "runtime/quantity.h"
#include "server/shadow.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr size_t kDecisionLines = 40;  // differing decisions printed in the table

struct Side {
  std::string name;  // A or B
  std::string path;
  SimulationResult result;
  ClusterSpec end;  // the simulated cluster after the run
};

bool IsPack(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ||
         (path.size() > 6 && path.compare(path.size() - 6, 6, ".kpack") == 0);
}

// One side's run: a scheduler.conf with the shared plugin sources, or a pack's own conf with the
// pack added to them.
Result<Side> RunSide(const CompareConfOptions& opts, const std::string& name,
                     const std::string& path, const ScenarioSpec& spec,
                     const SimulatorOptions& sim_options) {
  PolicyOptions policy = opts.policy;
  std::string conf_text, conf_file;
  if (IsPack(path)) {
    auto pack = packs::ReadPack(path);
    if (!pack) return pack.error();
    auto conf = pack->files.find(pack->manifest.conf);
    if (pack->manifest.conf.empty() || conf == pack->files.end())
      return Error{fmt::format("{}: the pack has no `conf` to compare; give a scheduler.conf "
                               "that uses its plugins (and --pack {})",
                               path, path),
                   SourceLocation{path}};
    conf_text = conf->second;
    conf_file = pack->Where(pack->manifest.conf);
    policy.sources.pack_files.push_back(path);
  } else {
    auto text = ReadTextFile(path);
    if (!text) return text.error();
    conf_text = *text;
    conf_file = path;
  }
  auto conf = ResolveScenarioConf(spec, &conf_text, conf_file);
  if (!conf) return conf.error();
  auto provider = MakeProvider(policy, static_cast<uint64_t>(spec.cluster.pods.size()) *
                                           spec.cluster.nodes.size());
  if (!provider) return provider.error();
  auto sim = Simulator::Create(spec, std::move(*conf), **provider, sim_options);
  if (!sim) return sim.error();
  auto result = (*sim)->Run();
  if (!result) return result.error();
  Side side;
  side.name = name;
  side.path = path;
  side.result = std::move(*result);
  side.end = (*sim)->state().cluster;
  return side;
}

struct SessionDiff {
  DurationNs at = 0;  // the sessions' time, after the scenario's `now`
  std::vector<server::ShadowDiff> diffs;
};

// Sessions are matched by their time, not their index: a trace skips the periods that provably
// decide nothing, and the two sides skip different ones once they differ. A time only one side
// ran a session at compares that session with deciding nothing.
std::vector<SessionDiff> DiffSessions(const Side& a, const Side& b, TimeNs start) {
  std::map<TimeNs, std::pair<const SessionResult*, const SessionResult*>> by_time;
  for (const SessionResult& s : a.result.sessions) by_time[s.time].first = &s;
  for (const SessionResult& s : b.result.sessions) by_time[s.time].second = &s;
  std::vector<SessionDiff> out;
  for (const auto& [time, pair] : by_time) {
    server::SessionDecisions da, db;
    if (pair.first) da = server::DecisionsOf(*pair.first);
    if (pair.second) db = server::DecisionsOf(*pair.second);
    auto diffs = server::CompareDecisions(da, db);
    if (!diffs.empty()) out.push_back({time - start, std::move(diffs)});
  }
  return out;
}

// "+4m30s" after the start; "+0s" for the first session.
std::string After(DurationNs d) {
  int64_t seconds = d / 1'000'000'000;
  std::string out = "+";
  if (seconds >= 3600) out += fmt::format("{}h", seconds / 3600);
  if (seconds >= 60) out += fmt::format("{}m", seconds / 60 % 60);
  if (d % 1'000'000'000 != 0)
    out += fmt::format("{:g}s", static_cast<double>(d % 60'000'000'000) / 1e9);
  else
    out += fmt::format("{}s", seconds % 60);
  return out;
}

std::string DecisionText(const server::ShadowDecision& d, const std::string& kind) {
  if (kind == "bind") return d.bound ? d.bind_node : "-";
  if (kind == "pipeline") return d.pipelined ? d.pipeline_node : "-";
  return d.evicted ? "evicted" : "-";
}

// Mean over the run's samples of each resource's value in `field`, registry order.
std::vector<std::pair<std::string, double>> MeanOf(
    const std::vector<SessionMetrics>& samples,
    std::vector<std::pair<std::string, double>> SessionMetrics::*field) {
  std::vector<std::pair<std::string, double>> out;
  std::map<std::string, std::pair<double, int>> sums;
  for (const SessionMetrics& s : samples)
    for (const auto& [resource, v] : s.*field) {
      if (!sums.count(resource)) out.emplace_back(resource, 0);
      sums[resource].first += v;
      sums[resource].second += 1;
    }
  for (auto& [resource, v] : out) v = sums[resource].first / sums[resource].second;
  return out;
}

// The figures both sides are compared on, side by side.
struct Figures {
  std::map<std::string, WaitingStats> queues;
  std::vector<std::pair<std::string, double>> utilisation, fragmentation;
  size_t binds = 0, evictions = 0, pipelined = 0;
  int pending_at_end = 0;
};

Figures FiguresOf(const Side& s) {
  Figures f;
  const SimulationResult& r = s.result;
  for (const SessionResult& session : r.sessions) {
    f.binds += session.binds.size();
    f.evictions += session.evictions.size();
    f.pipelined += session.pipelined.size();
  }
  if (r.trace) {
    f.queues = r.summary.queues;
    f.utilisation = r.summary.mean_utilisation;
    f.fragmentation = MeanOf(r.metrics, &SessionMetrics::fragmentation);
    if (!r.metrics.empty()) f.pending_at_end = r.metrics.back().pending;
  } else {
    // One session: the cluster as it ended, measured.
    SessionMetrics m = MeasureCluster(s.end, r.sessions.empty() ? 0 : r.sessions.back().time, {});
    f.utilisation = m.utilisation;
    f.fragmentation = m.fragmentation;
    f.pending_at_end = m.pending;
  }
  return f;
}

std::string Percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

std::string FormatTableOutput(const Side& a, const Side& b, const std::vector<SessionDiff>& diffs) {
  std::string out = fmt::format("compare-conf on {} (sessions run: A {}, B {}; times are after the "
                                "first session)\n  A: {}\n  B: {}\n",
                                a.result.scenario, a.result.sessions.size(),
                                b.result.sessions.size(), a.path, b.path);
  size_t total = 0;
  std::map<std::string, size_t> by_kind;
  for (const SessionDiff& s : diffs)
    for (const auto& d : s.diffs) {
      ++total;
      ++by_kind[d.kind];
    }
  out += fmt::format("\ndecisions that differ: {} (bind {}, evict {}, pipeline {}) in {} sessions\n",
                     total, by_kind["bind"], by_kind["evict"], by_kind["pipeline"], diffs.size());
  if (total > 0) {
    out += fmt::format("  {:<10} {:<40} {:<9} {:<20} {}\n", "time", "pod", "kind", "A", "B");
    size_t shown = 0;
    for (const SessionDiff& s : diffs)
      for (const auto& d : s.diffs) {
        if (shown++ == kDecisionLines) break;
        out += fmt::format("  {:<10} {:<40} {:<9} {:<20} {}\n", After(s.at), d.pod, d.kind,
                           DecisionText(d.live, d.kind), DecisionText(d.shadow, d.kind));
      }
    if (total > kDecisionLines) out += fmt::format("  ({} more)\n", total - kDecisionLines);
  }
  Figures fa = FiguresOf(a), fb = FiguresOf(b);
  out += "\ntotals\n";
  out += fmt::format("  {:<26} {:>12} {:>12}\n", "", "A", "B");
  out += fmt::format("  {:<26} {:>12} {:>12}\n", "binds", fa.binds, fb.binds);
  out += fmt::format("  {:<26} {:>12} {:>12}\n", "evictions", fa.evictions, fb.evictions);
  out += fmt::format("  {:<26} {:>12} {:>12}\n", "pipelined", fa.pipelined, fb.pipelined);
  out += fmt::format("  {:<26} {:>12} {:>12}\n", "pending at the end", fa.pending_at_end,
                     fb.pending_at_end);
  auto shares = [&](const char* title, const auto& xa, const auto& xb) {
    std::map<std::string, double> mb(xb.begin(), xb.end());
    for (const auto& [resource, v] : xa)
      out += fmt::format("  {:<26} {:>12} {:>12}\n", fmt::format("{} {}", title, resource),
                         Percent(v), mb.count(resource) ? Percent(mb[resource]) : "-");
  };
  const char* mean = a.result.trace ? "mean " : "";
  shares(a.result.trace ? "mean utilisation" : "utilisation", fa.utilisation, fb.utilisation);
  shares(a.result.trace ? "mean fragmentation" : "fragmentation", fa.fragmentation,
         fb.fragmentation);
  (void)mean;
  if (a.result.trace) {
    std::set<std::string> queues;
    for (const auto& [q, w] : fa.queues) queues.insert(q);
    for (const auto& [q, w] : fb.queues) queues.insert(q);
    out += "\nwaiting per queue (arrival to first bind, seconds)\n";
    out += fmt::format("  {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "queue", "A jobs",
                       "A mean", "A p95", "B jobs", "B mean", "B p95");
    for (const std::string& q : queues) {
      WaitingStats wa = fa.queues.count(q) ? fa.queues.at(q) : WaitingStats{};
      WaitingStats wb = fb.queues.count(q) ? fb.queues.at(q) : WaitingStats{};
      out += fmt::format("  {:<20} {:>10} {:>10.1f} {:>10.1f} {:>10} {:>10.1f} {:>10.1f}\n", q,
                         fmt::format("{}/{}", wa.jobs, wa.jobs + wa.not_started), wa.mean, wa.p95,
                         fmt::format("{}/{}", wb.jobs, wb.jobs + wb.not_started), wb.mean, wb.p95);
    }
  }
  return out;
}

Json SideJson(const Side& s) {
  Figures f = FiguresOf(s);
  Json j;
  j["conf"] = s.path;
  j["sessions"] = s.result.sessions.size();
  j["binds"] = f.binds;
  j["evictions"] = f.evictions;
  j["pipelined"] = f.pipelined;
  j["pendingAtEnd"] = f.pending_at_end;
  Json u = Json::object(), fr = Json::object();
  for (const auto& [r, v] : f.utilisation) u[r] = v;
  for (const auto& [r, v] : f.fragmentation) fr[r] = v;
  j["utilisation"] = u;
  j["fragmentation"] = fr;
  Json q = Json::object();
  for (const auto& [name, w] : f.queues)
    q[name] = Json{{"jobs", w.jobs}, {"notStarted", w.not_started}, {"meanSeconds", w.mean},
                   {"p50Seconds", w.p50}, {"p95Seconds", w.p95}, {"maxSeconds", w.max}};
  j["waiting"] = q;
  // Utilisation per session, for the report's charts.
  Json series = Json::array();
  for (const SessionMetrics& m : s.result.metrics) {
    Json point = Json::object();
    point["time"] = m.time;
    point["pending"] = m.pending;
    point["running"] = m.running;
    for (const auto& [r, v] : m.utilisation) point["utilisation"][r] = v;
    for (const auto& [r, v] : m.fragmentation) point["fragmentation"][r] = v;
    series.push_back(std::move(point));
  }
  j["series"] = std::move(series);
  return j;
}

Json CompareJson(const Side& a, const Side& b, const std::vector<SessionDiff>& diffs) {
  Json j;
  j["scenario"] = a.result.scenario;
  j["a"] = SideJson(a);
  j["b"] = SideJson(b);
  Json d = Json::array();
  for (const SessionDiff& s : diffs)
    for (const auto& x : s.diffs)
      d.push_back(Json{{"after", After(s.at)}, {"afterSeconds", s.at / 1e9}, {"pod", x.pod}, {"kind", x.kind},
                       {"a", DecisionText(x.live, x.kind)}, {"b", DecisionText(x.shadow, x.kind)}});
  j["differences"] = std::move(d);
  return j;
}

}  // namespace

int RunCompareConf(const CompareConfOptions& opts) {
  if (Status s = CheckChoice("--output", opts.output, {"table", "json"}); !s)
    return BadInput(s.error());
  if (opts.cycles < 1)
    return BadInput(Error{fmt::format("--cycles must be at least 1, got {}", opts.cycles), {}});
  if (!opts.policy.conf_file.empty())
    return BadInput(Error{"--compare-conf A B names both configurations: drop --conf", {}});
  auto period = ParseGoDuration(opts.period);
  if (!period || *period <= 0)
    return BadInput(Error{
        fmt::format("--period must be a positive duration like 1s or 500ms, got `{}`", opts.period),
        {}});
  auto spec = LoadScenarioFile(opts.scenario);
  if (!spec) return BadInput(spec.error());
  SimulatorOptions sim_options;
  sim_options.cycles = opts.cycles;
  sim_options.period = *period;
  if (!opts.until.empty()) {
    if (opts.cycles_given)
      return BadInput(Error{"--until and --cycles do not go together", {}});
    if (auto at = ParseTimestamp(opts.until))
      sim_options.until = *at;
    else if (auto after = ParseGoDuration(opts.until); after && *after >= 0)
      sim_options.until = spec->now + *after;
    else
      return BadInput(Error{fmt::format("--until must be an RFC 3339 time or a duration after the "
                                        "scenario's `now` (like 1h), got `{}`",
                                        opts.until),
                            {}});
  }
  if (spec->replay && !opts.cycles_given && !sim_options.until) {
    sim_options.cycles = static_cast<int>(spec->replay->cycles);
    if (!opts.period_given) sim_options.period = spec->replay->period;
  }
  if (!opts.report.empty() && !sim_options.trace())
    return BadInput(Error{"--report needs a multi-cycle run (--until T or --cycles N > 1)", {}});
  auto a = RunSide(opts, "A", opts.a, *spec, sim_options);
  if (!a) return BadInput(a.error());
  auto b = RunSide(opts, "B", opts.b, *spec, sim_options);
  if (!b) return BadInput(b.error());
  std::vector<SessionDiff> diffs = DiffSessions(*a, *b, spec->now);
  if (!opts.report.empty()) {
    auto page = FormatCompareReportHtml(CompareJson(*a, *b, diffs).dump());
    if (!page) return BadInput(page.error());
    std::ofstream out(opts.report, std::ios::binary | std::ios::trunc);
    out << *page;
    out.close();
    if (!out) return BadInput(Error{fmt::format("cannot write {}", opts.report), {}});
  }
  std::string out = opts.output == "json" ? CompareJson(*a, *b, diffs).dump(2) + "\n"
                                          : FormatTableOutput(*a, *b, diffs);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace kiln::cli
