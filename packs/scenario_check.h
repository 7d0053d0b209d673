#pragma once
// Running a test scenario the way `kiln simulate --check` does: simulate it, then compare the
// first session with `expect` (binds, evictions, pipelined, phases, unschedulable reasons,
// warnings) and the direct `calls` with their expected results. `kiln simulate --check`,
// `kiln pack build` (a pack's tests) and `kiln test` share it, so a case passes or fails the same
// way everywhere.

#include <memory>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "packs/pack.h"
#include "runtime/policy_provider.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::packs {

struct ScenarioCheck {
  SimulationResult result;
  std::vector<std::string> diffs;  // one line per difference; empty: the case passes
  bool passed() const { return diffs.empty(); }
};

// Runs `spec` with `conf` on plugins from `provider` and checks it against `spec.expect` (which
// the caller has made sure is there). An Error is bad input (a plugin that cannot be provided, a
// bad call), not a failing case.
Result<ScenarioCheck> CheckScenario(const ScenarioSpec& spec, SchedulerConf conf,
                                    PolicyProvider& provider, SimulatorOptions options = {});

// How a run differs from the scenario's `expect` (the first session, the warnings, the calls), one
// line per difference; empty when it matches or there is no `expect`.
std::vector<std::string> ExpectationDiffs(const ScenarioSpec& spec, const SimulationResult& result);

struct PackTestResult {
  std::string file;  // as the pack names it (tests/x.yaml)
  std::string name;  // the scenario's name ("" when it did not load)
  std::optional<Error> error;  // bad input: the scenario or its conf did not load or run
  ScenarioCheck check;
  bool passed() const { return !error && check.passed(); }
};

// Runs every test of `pack` on `provider` (which must know the pack's policies). A test scenario
// without its own `conf` runs with the pack's conf.
std::vector<PackTestResult> RunPackTests(const Pack& pack, PolicyProvider& provider);

}  // namespace kiln::packs
