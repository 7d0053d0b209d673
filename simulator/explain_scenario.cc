#include "simulator/explain_scenario.h"

#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "simulator/simulator.h"

namespace kiln {

Result<Explanation> ExplainScenarioAtOpen(const ScenarioSpec& spec, const SchedulerConf& conf,
                                          PolicyProvider& provider,
                                          const std::set<std::string>& pods) {
  auto registry = ResolvePlugins(conf, provider);
  if (!registry) return registry.error();
  SimulatedCluster cluster(spec);
  auto snapshot = cluster.Snapshot(spec.now);
  if (!snapshot) return snapshot.error();
  Session ssn(std::move(*snapshot), conf, spec.now, "session-0");
  if (Status s = ssn.Open(*registry); !s) return s.error();
  Explanation out = ExplainAtOpen(ssn, pods);
  ssn.Close();
  return out;
}

Result<Explanation> ExplainScenarioSession(const ScenarioSpec& spec, const SchedulerConf& conf,
                                           PolicyProvider& provider,
                                           const std::set<std::string>& pods) {
  auto sim = Simulator::Create(spec, conf, provider);
  if (!sim) return sim.error();
  ExplainRecorder recorder(pods);
  (*sim)->SetFirstSessionHooks(RecordingHooks(recorder));
  auto result = (*sim)->RunCycle();
  if (!result) return result.error();
  recorder.ApplyResults(*result);
  return std::move(recorder.explanation());
}

}  // namespace kiln
