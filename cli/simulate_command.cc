// `kiln simulate FILE [--output table|json] [--check] [--conf F] [--cycles N] [--period D]
//                     [--policy-dir DIR]... [--allow-builtin-override] [--compile-cache DIR]
//                     [--pack NAME.kpack]... [--trust PUB.pem]... [--watch] [--until T]
//                     [--every-period] [--report FILE.html]`
// `kiln simulate --compare-conf A B FILE [--cycles N | --until T] [--report diff.html]`
//
// --until T (an RFC 3339 time, or a Go duration after the scenario's `now`) and --cycles N > 1
// replay the scenario as a trace (simulator/simulator.h): arrivals, completions, per-session
// metrics and a summary; --report writes the run as an HTML page (report_html.h).
//
// --compare-conf runs two configurations (scheduler.conf, .kpack or pack directory each) on the
// same scenario and prints what differs (cli/compare_conf.h).
//
// --watch runs the cycles in real time, one per --period, with `kiln serve`'s live reload
// (server/): the conf and policy directories are watched, and a change that compiles is in effect
// from the next cycle on; a broken one is logged with file:line and the last good one keeps
// running. Each cycle prints one line to stderr as it ends.
//
// Exit codes: 0 ok, 1 the first session differs from the scenario's `expect` (--check),
// 2 bad input (scenario, conf, arguments, or a plugin that cannot be provided).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <memory>
#include <optional>

#include "cli/errors.h"
#include "cli/commands.h"
#include "cli/compare_conf.h"
#include "cli/output_format.h"
#include "cli/shared_options.h"
#include "cli/report_html.h"
#include "runtime/invariants.h"
#include "runtime/quantity.h"
#include "runtime/score_cache.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "server/config_watcher.h"
#include "server/policy_set.h"
#include "server/scheduler_loop.h"
#include "server/server.h"
#include "packs/scenario_check.h"

#include <chrono>
#include <thread>

#include "compiler/host/jit_tiers.h"

namespace kiln::cli {

namespace {

// How many policies were compiled as tier-0 code (each queued an O2 compile).
int64_t Tier0Policies() { return static_cast<int64_t>(JitTierZeroCompiles()); }

struct SimulateOptions {
  std::string file;
  std::string output = "table";
  bool check = false;
  PolicyOptions policy;  // --conf, --policy-dir, --pack, --trust, ...
  int cycles = 1;
  std::string period = "1s";
  bool watch = false;
  std::string until;
  bool every_period = false;
  std::string report;
  int report_explain = 5;
  bool cycles_given = false;
  bool period_given = false;
  bool timings = false;
  bool check_invariants = false;
  std::vector<std::string> compare_conf;  // --compare-conf A B
};

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Peak resident set size of this process in MiB (Linux: VmHWM), 0 when unknown.
double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

// --timings: where a run's time went, on stderr (stdout stays the result). One `name value` row
// per phase so that scripts/bench can read it; a session's rate is its binds over its own time
// (open, actions, close), the figure the scale benchmarks compare.
struct RunTimings {
  double load_ms = 0, compile_ms = 0, output_ms = 0;
  // Policies that missed every compile cache and run tier-0 code while O2 compiles in the
  // background (jit_tiers.h); -1: unknown (no policy host).
  int64_t tier0_policies = -1;

  std::string Format(const SimulationResult& result) const {
    std::string out = "timings (ms)\n";
    auto row = [&out](int indent, std::string_view name, double ms) {
      out += fmt::format("{:{}}{:<{}} {:>10.1f}\n", "", indent, name, 22 - indent, ms);
    };
    row(2, "load", load_ms);
    row(2, "compile", compile_ms);
    if (tier0_policies >= 0)
      out += fmt::format("  {:<20} {:>10}\n", "tier-0 policies", tier0_policies);
    for (const SessionResult& s : result.sessions) {
      const double session_ms = s.duration_micros / 1000.0;
      out += fmt::format("  session {}: pending {} binds {} evictions {} pods/s {:.0f}\n", s.index,
                         s.pending_tasks, s.binds.size(), s.evictions.size(),
                         session_ms > 0 ? s.binds.size() / (session_ms / 1000.0) : 0.0);
      row(4, "snapshot", s.snapshot_micros / 1000.0);
      row(4, "open", s.open_micros / 1000.0);
      for (const auto& p : s.plugin_timings)
        if (p.on_session == "OnSessionOpen" && p.micros >= 1000)
          row(6, p.plugin, p.micros / 1000.0);
      for (const auto& [action, micros] : s.action_micros) row(4, action, micros / 1000.0);
      row(4, "close", s.close_micros / 1000.0);
      row(4, "session", session_ms);
      row(4, "results", s.results_micros / 1000.0);
      if (result.sessions.size() > 8 && s.index == 3) {
        out += fmt::format("  ({} more sessions)\n", result.sessions.size() - 4);
        break;
      }
    }
    row(2, "output", output_ms);
    // Tier-0 handlers compiled on first use, during the sessions (jit_tiers.h).
    if (const LazyHandlerStats lazy = JitLazyHandlerStats(); lazy.compiled > 0) {
      out += fmt::format("  {:<20} {:>10}\n", "tier-0 handlers", lazy.compiled);
      row(2, "handler compiles", lazy.ms);
    }
    out += fmt::format("  {:<20} {:>10.1f}\n", "peak RSS (MiB)", PeakRssMiB());
    // Cached node_order scores (runtime/score_cache.h), over every session of the run.
    const ScoreCacheStats cache = GetScoreCacheStats();
    out += fmt::format("  score cache: {} lookups, {} hits ({:.1f}%){}\n", cache.lookups,
                       cache.hits, cache.lookups ? 100.0 * cache.hits / cache.lookups : 0.0,
                       ScoreCacheEnabled() ? "" : " (off: KILN_SCORE_CACHE=0)");
    return out;
  }
};

// --watch: the cycles of `kiln serve` (server/scheduler_loop) on the simulated cluster, paced by
// the wall clock, with the conf and policies reloaded between cycles.
int RunWatching(const SimulateOptions& opts, const ScenarioSpec& spec, DurationNs period) {
  SetDefaultLazyHandlers(true);  // as `kiln serve` (jit_tiers.h)
  // Reload results go to the log, which must not mix with the decisions on stdout.
  server::ConfigureLogging(0);
  server::PolicySources sources{opts.policy.sources, opts.policy.conf_file, {}};
  server::PolicyReloader reloader(sources, server::CompiledProviderFactory());
  if (Status s = reloader.LoadInitial(); !s) return BadInput(s.error());
  std::unique_ptr<server::ConfigWatcher> watcher_owner =
      server::WatchAndReload(reloader, std::chrono::milliseconds(200));
  server::ConfigWatcher& watcher = *watcher_owner;
  if (Status s = watcher.Start(); !s) return BadInput(s.error());
  SimulatedCluster cluster(spec);
  int index = 0;
  server::LoopOptions loop_options;
  loop_options.clock = [&] { return spec.now + static_cast<TimeNs>(index) * period; };
  server::SchedulerLoop loop(cluster, reloader, nullptr, loop_options);
  SimulationResult result;
  result.scenario = spec.name;
  auto wall = std::chrono::nanoseconds(period);
  for (; index < opts.cycles; ++index) {
    auto started = std::chrono::steady_clock::now();
    // Every change written before this cycle starts is in effect for it.
    watcher.WaitIdle(std::chrono::seconds(30));
    std::shared_ptr<const server::PolicySet> set = reloader.Current();
    auto session = loop.RunOnce();
    if (!session) return BadInput(session.error());
    std::fputs(fmt::format("cycle {}: generation {}: {} binds, {} evictions, {} pipelined\n", index,
                           set->generation, session->binds.size(), session->evictions.size(),
                           session->pipelined.size())
                   .c_str(),
               stderr);
    std::fflush(stderr);
    result.sessions.push_back(std::move(*session));
    if (index + 1 < opts.cycles) std::this_thread::sleep_until(started + wall);
  }
  watcher.Stop();
  std::string out = opts.output == "json" ? FormatJson(result) : FormatTable(result);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int RunSimulate(const SimulateOptions& opts) {
  if (!opts.compare_conf.empty()) {
    if (opts.check || opts.watch)
      return BadInput(Error{"--compare-conf does not go with --check or --watch", {}});
    CompareConfOptions c;
    c.a = opts.compare_conf[0];
    c.b = opts.compare_conf[1];
    c.scenario = opts.file;
    c.policy = opts.policy;
    c.cycles = opts.cycles;
    c.cycles_given = opts.cycles_given;
    c.period = opts.period;
    c.period_given = opts.period_given;
    c.until = opts.until;
    c.output = opts.output;
    c.report = opts.report;
    return RunCompareConf(c);
  }
  if (Status s = CheckChoice("--output", opts.output, {"table", "json"}); !s)
    return BadInput(s.error());
  if (opts.cycles < 1) {
    return BadInput(Error{fmt::format("--cycles must be at least 1, got {}", opts.cycles), {}});
  }
  auto period = ParseGoDuration(opts.period);
  if (!period || *period <= 0) {
    return BadInput(Error{
        fmt::format("--period must be a positive duration like 1s or 500ms, got `{}`", opts.period),
        {}});
  }
  RunTimings timings;
  auto load_start = Clock::now();
  auto spec = LoadScenarioFile(opts.file);
  if (!spec) return BadInput(spec.error());
  timings.load_ms = MillisSince(load_start);
  auto conf = LoadScenarioConf(*spec, opts.policy);
  if (!conf) return BadInput(conf.error());
  if (opts.watch) {
    if (opts.check) return BadInput(Error{"--watch and --check do not go together", {}});
    if (opts.policy.conf_file.empty()) {
      return BadInput(
          Error{"--watch needs --conf FILE: the conf it watches (a scenario's own conf is "
                "part of the scenario, which is not reloaded)",
                {}});
    }
    return RunWatching(opts, *spec, *period);
  }
  std::optional<TimeNs> until;
  if (!opts.until.empty()) {
    if (opts.cycles_given) {
      return BadInput(
          Error{"--until and --cycles do not go together: --until runs until the clock "
                "passes T",
                {}});
    }
    if (auto at = ParseTimestamp(opts.until)) {
      until = *at;
    } else if (auto after = ParseGoDuration(opts.until); after && *after >= 0) {
      until = spec->now + *after;
    } else {
      return BadInput(Error{fmt::format("--until must be an RFC 3339 time or a duration after the "
                                        "scenario's `now` (like 1h), got `{}`",
                                        opts.until),
                            {}});
    }
  }
  if (!opts.report.empty() && until == std::nullopt && opts.cycles < 2) {
    return BadInput(Error{"--report needs a multi-cycle run (--until T or --cycles N > 1)", {}});
  }
  if (opts.check && (!spec->expect || spec->expect->empty())) {
    return BadInput(Error{"--check: the scenario has no `expect` block to check against",
                          SourceLocation{spec->file}});
  }
  auto compile_start = Clock::now();
  auto provider = MakeProvider(
      opts.policy, static_cast<uint64_t>(spec->cluster.pods.size()) * spec->cluster.nodes.size());
  if (!provider) return BadInput(provider.error());
  SimulatorOptions sim_options;
  sim_options.cycles = opts.cycles;
  sim_options.period = *period;
  sim_options.until = until;
  // The scenario's `replay:` says how it runs when the command line does not.
  if (spec->replay && !opts.cycles_given && !until) {
    sim_options.cycles = static_cast<int>(spec->replay->cycles);
    if (!opts.period_given) sim_options.period = spec->replay->period;
  }
  sim_options.every_period = opts.every_period;
  if (!opts.report.empty()) sim_options.explain_pending = std::max(0, opts.report_explain);
  // The simulator takes the cluster (100k pods are a few hundred MiB: no copy); what is read
  // after the run (expect, warnings, name) stays in `spec`.
  ClusterSpec cluster = std::move(spec->cluster);
  spec->cluster = ClusterSpec{};
  ScenarioSpec for_simulator = *spec;  // everything but the cluster
  for_simulator.cluster = std::move(cluster);
  auto sim = Simulator::Create(std::move(for_simulator), std::move(*conf), **provider, sim_options);
  if (!sim) return BadInput(sim.error());
  timings.compile_ms = MillisSince(compile_start);
  timings.tier0_policies = Tier0Policies();
  auto result = (*sim)->Run();
  if (!result) return BadInput(result.error());
  // Violations go to stderr (stdout keeps its format) and make the run fail whatever it prints.
  int done = kExitOk;
  for (const SessionResult& session : result->sessions)
    for (const std::string& v : session.invariant_violations) {
      std::fputs(fmt::format("invariant violated: session {}: {}\n", session.index, v).c_str(), stderr);
      done = kExitFailed;
    }
  if (!opts.report.empty()) {
    auto page = FormatReportHtml(*result, (*sim)->state().cluster);
    if (!page) return BadInput(page.error());
    std::ofstream out(opts.report, std::ios::binary | std::ios::trunc);
    out << *page;
    out.close();
    if (!out) return BadInput(Error{fmt::format("cannot write {}", opts.report), {}});
  }
  if (opts.check) {
    // The same check `kiln pack build` and `kiln test` run on a case.
    std::vector<std::string> diffs = packs::ExpectationDiffs(*spec, *result);
    // The cluster's warnings go to stderr: --check's stdout is the verdict.
    std::fputs(FormatWarnings(spec->warnings).c_str(), stderr);
    if (diffs.empty()) {
      std::fputs(fmt::format("PASS {}\n", spec->name).c_str(), stdout);
      return done;
    }
    std::string out = fmt::format("FAIL {}: the {} differs from `expect`\n", spec->name,
                                  spec->replay && !spec->replay->expect.empty()
                                      ? "run"
                                      : "first session");
    for (const auto& d : diffs) out += "  " + d + "\n";
    out += "actual decisions (paste into the scenario if they are right):\n";
    out += FormatExpectBlock(result->sessions.front());
    if (spec->expect->warnings) out += FormatWarningsBlock(spec->warnings);
    if (!result->calls.empty()) out += FormatCallsBlock(result->calls);
    if (spec->replay)
      for (const SessionResult& session : result->sessions)
        if (spec->replay->expect.count(session.index))
          out += fmt::format("session {} (replay.expect):\n{}", session.index,
                             FormatExpectBlock(session));
    std::fputs(out.c_str(), stdout);
    return kExitFailed;
  }
  auto output_start = Clock::now();
  std::string out = opts.output == "json" ? FormatJson(*result) : FormatTable(*result);
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
  timings.output_ms = MillisSince(output_start);
  if (opts.timings) std::fputs(timings.Format(*result).c_str(), stderr);
  return done;
}

}  // namespace

void AddSimulateCommand(CLI::App& app) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Run scheduling sessions on a simulated cluster described by a scenario file");
  cmd->add_option("scenario", opts->file, "scenario YAML file (see scenario-format.md)")->required();
  cmd->add_option("-o,--output", opts->output, "table (default) or json");
  cmd->add_flag("--check", opts->check,
                "compare the first session with the scenario's `expect` (and later sessions with "
                "its `replay.expect`); exit 1 when they differ");
  cmd->add_option("--cycles", opts->cycles, "number of scheduling cycles to run (default 1)")
      ->each([opts](const std::string&) { opts->cycles_given = true; });
  cmd->add_option("--until", opts->until,
                  "replay the scenario as a trace until the clock passes T (RFC 3339 time, or a "
                  "duration after the scenario's `now` such as 1h) or nothing is left to do");
  cmd->add_flag("--every-period", opts->every_period,
                "run a session every period even when it provably decides nothing (slower; the "
                "decisions are the same)");
  cmd->add_option("--compare-conf", opts->compare_conf,
                  "run two configurations A B (each a scheduler.conf, .kpack or pack directory) on "
                  "the scenario and print what differs: decisions, waiting per queue, utilisation "
                  "and fragmentation")
      ->expected(2)
      ->allow_extra_args(false);
  cmd->add_option("--report", opts->report,
                  "write the multi-cycle run as a self-contained HTML page to FILE");
  cmd->add_option("--report-explain", opts->report_explain,
                  "pending pods per session (one per job) whose rejections the report explains "
                  "(default 5)");
  cmd->add_option("--period", opts->period,
                  "simulated time between cycles, a Go duration (default 1s, Volcano's "
                  "schedule-period)")
      ->each([opts](const std::string&) { opts->period_given = true; });
  AddPolicyOptions(*cmd, opts->policy, kConfFlag | kPolicyDirFlags | kPackFlags);
  cmd->add_flag("--timings", opts->timings,
                "print where the time went (load, compile, each session's snapshot, open, actions "
                "and close, output) and the peak RSS on stderr");
  cmd->add_flag("--watch", opts->watch,
                "run the cycles in real time (one per --period) and reload --conf and the policy "
                "directories when they change, as `kiln serve` does");
  cmd->add_flag("--check-invariants", opts->check_invariants,
                "check the session's invariants after every action, statement discard and "
                "preemption (runtime/invariants.h; slow); print violations on stderr and exit 1 "
                "when there are any (also KILN_CHECK_INVARIANTS=1)");
  cmd->callback([opts] {
    if (opts->check_invariants) SetInvariantChecking(true);
    EndCommand(RunSimulate(*opts));
  });
}

}  // namespace kiln::cli
