#include "packs/scenario_check.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::packs {

Result<ScenarioCheck> CheckScenario(const ScenarioSpec& spec, SchedulerConf conf,
                                    PolicyProvider& provider, SimulatorOptions options) {
  // The scenario's `replay:` says how it runs unless the caller chose a multi-session run.
  if (spec.replay && !options.trace()) {
    options.cycles = static_cast<int>(spec.replay->cycles);
    options.period = spec.replay->period;
  }
  auto sim = Simulator::Create(spec, std::move(conf), provider, options);
  if (!sim) return sim.error();
  auto result = (*sim)->Run();
  if (!result) return result.error();
  ScenarioCheck check;
  check.result = std::move(*result);
  check.diffs = ExpectationDiffs(spec, check.result);
  return check;
}

std::vector<std::string> ExpectationDiffs(const ScenarioSpec& spec, const SimulationResult& result) {
  std::vector<std::string> diffs;
  if (!spec.expect || result.sessions.empty()) return diffs;
  diffs = CheckExpectations(*spec.expect, result.sessions.front());
  for (std::string& d : CheckWarnings(*spec.expect, spec.warnings)) diffs.push_back(std::move(d));
  if (spec.expect->calls)
    for (std::string& d : CheckCalls(*spec.expect->calls, result.calls)) diffs.push_back(std::move(d));
  if (!spec.replay) return diffs;
  // Later sessions by their index (a trace run may skip a session that repeats the one before:
  // then it has no result, and that is a difference too).
  for (const auto& [index, expect] : spec.replay->expect) {
    auto it = std::find_if(result.sessions.begin(), result.sessions.end(),
                           [&](const SessionResult& s) { return s.index == index; });
    if (it == result.sessions.end()) {
      diffs.push_back(fmt::format("session {}: not run (the run had {} session(s))", index,
                                  result.sessions.size()));
      continue;
    }
    for (std::string& d : CheckExpectations(expect, *it))
      diffs.push_back(fmt::format("session {}: {}", index, d));
  }
  return diffs;
}

std::vector<PackTestResult> RunPackTests(const Pack& pack, PolicyProvider& provider) {
  std::vector<PackTestResult> out;
  const std::string* pack_conf = nullptr;
  if (!pack.manifest.conf.empty())
    if (auto it = pack.files.find(pack.manifest.conf); it != pack.files.end()) pack_conf = &it->second;
  for (const std::string& file : pack.manifest.tests) {
    PackTestResult r;
    r.file = file;
    auto run = [&]() -> Status {
      auto text = pack.files.find(file);
      if (text == pack.files.end())
        return Error{fmt::format("{}: no such file in the pack", file), SourceLocation{pack.source}};
      auto spec = ParseScenario(text->second, pack.Where(file));
      if (!spec) return spec.error();
      r.name = spec->name;
      if (!spec->expect || spec->expect->empty())
        return Error{"a pack test needs an `expect` block (binds, evictions, calls, ...) to check",
                     SourceLocation{pack.Where(file)}};
      bool use_pack_conf = !spec->has_conf && pack_conf;
      auto conf = ResolveScenarioConf(*spec, use_pack_conf ? pack_conf : nullptr,
                                      pack.Where(pack.manifest.conf));
      if (!conf) return conf.error();
      auto check = CheckScenario(*spec, std::move(*conf), provider);
      if (!check) return check.error();
      r.check = std::move(*check);
      return Status::Ok();
    };
    if (Status s = run(); !s) r.error = s.error();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kiln::packs
