#pragma once
// For tests that check a switch changes nothing: a rendered random cluster (simulator/
// random_cluster.h) simulated as `kiln simulate` would, and two sessions compared decision by
// decision.

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "runtime/cluster.h"
#include "runtime/conf.h"
#include "runtime/policy_provider.h"
#include "simulator/random_cluster.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::testing {

// Random clusters of up to `max_nodes` nodes and 40 gangs of up to 6 pods, under the built-in
// confs (Volcano's default, with binpack among them).
inline RandomClusterOptions CompareClusterOptions(int max_nodes) {
  RandomClusterOptions options;
  options.max_nodes = max_nodes;
  options.max_groups = 40;
  options.max_group_size = 6;
  options.confs = DefaultRandomConfs();
  return options;
}

// Every session of the scenario `yaml` under its own conf.
inline Result<SimulationResult> SimulateScenarioText(const std::string& yaml,
                                                     PolicyProvider& provider) {
  auto spec = ParseScenario(yaml, "random.yaml");
  if (!spec.ok()) return spec.error();
  auto conf = ParseSchedulerConf(spec->conf_text, "scheduler.conf");
  if (!conf.ok()) return conf.error();
  auto sim = Simulator::Create(*spec, *conf, provider);
  if (!sim.ok()) return sim.error();
  return (*sim)->Run();
}

// The first session of the scenario `yaml` under its own conf.
inline Result<SessionResult> SimulateFirstSession(const std::string& yaml, PolicyProvider& provider) {
  auto r = SimulateScenarioText(yaml, provider);
  if (!r.ok()) return r.error();
  return r->sessions.at(0);
}

// A session's decisions: binds in their order, binds, pipelined pods, evictions, unschedulable
// reasons, faults (gtest prints each of them when two differ).
inline auto Decisions(const SessionResult& r) {
  return std::tie(r.bind_order, r.binds, r.pipelined, r.evictions, r.unschedulable, r.faults);
}

// `got` decided what `want` did and called the same handlers. Wrap in ASSERT_NO_FATAL_FAILURE.
inline void ExpectSameSession(const SessionResult& got, const SessionResult& want) {
  EXPECT_EQ(Decisions(got), Decisions(want));
  ASSERT_EQ(got.handlers.size(), want.handlers.size());
  for (size_t i = 0; i < got.handlers.size(); ++i)
    EXPECT_EQ(got.handlers[i].called, want.handlers[i].called)
        << want.handlers[i].plugin << "." << want.handlers[i].handler;
}

}  // namespace kiln::testing
