#pragma once
// `kiln explain` over a scenario (runtime/explain.h): the session at open, or the first session
// as `kiln simulate` runs it, recorded as its actions place or give up each pod.

#include <set>
#include <string>

#include "runtime/conf.h"
#include "runtime/explain.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"
#include "simulator/scenario.h"

namespace kiln {

// Opens the first session (plugins' session_open run) and explains every pending pod (only
// `pods` when not empty), every job and queue, with no action run.
Result<Explanation> ExplainScenarioAtOpen(const ScenarioSpec& spec, const SchedulerConf& conf,
                                          PolicyProvider& provider,
                                          const std::set<std::string>& pods = {});

// Runs the first session as the simulator does, recording each pod an action considered at the
// moment it was placed or given up, then the jobs and queues before the session closes, and
// each recorded pod's outcome.
Result<Explanation> ExplainScenarioSession(const ScenarioSpec& spec, const SchedulerConf& conf,
                                           PolicyProvider& provider,
                                           const std::set<std::string>& pods = {});

}  // namespace kiln
