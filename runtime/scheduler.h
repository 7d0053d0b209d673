#pragma once
// One scheduling cycle, whatever the cluster (volcano-semantics.md §1.3 runOnce): take a snapshot
// from the binding, open a session with the conf's plugins, run the conf's actions in order,
// close the session, and hand its decisions to the binding.

#include <functional>
#include <string>

#include "runtime/cluster.h"
#include "runtime/conf.h"
#include "runtime/plugin.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln {

// The plugins of `conf`, resolved through `provider`. Error "unknown plugin `x`" (or, for a
// plugin Volcano has and no policy provides, "is a Volcano plugin that Kiln does not provide")
// at the conf line that names it, and "unknown action `x`" for an action no runtime has: Volcano
// would skip such a name with a log line; Kiln refuses to run a conf that silently lacks a piece.
Result<PluginRegistry> ResolvePlugins(const SchedulerConf& conf, PolicyProvider& provider);

class Session;

// Optional observers of one session, for tools that look inside it (direct extension-point
// calls, `kiln explain`). Both run on the scheduling thread; a session without hooks pays
// nothing for them.
struct SessionHooks {
  // Right after the plugins opened, before any action.
  std::function<void(Session&)> after_open;
  // After the actions (right after open when there are none), before the session closes.
  std::function<void(Session&)> before_close;
};

// Runs one session on `cluster` at time `now` and returns its decisions (not yet applied).
// `registry` must come from ResolvePlugins for the same conf.
Result<SessionResult> RunSession(Cluster cluster, const SchedulerConf& conf,
                                 const PluginRegistry& registry, TimeNs now, int index,
                                 const SessionHooks* hooks = nullptr);

// Snapshot, RunSession, Apply: one cycle against `binding`.
Result<SessionResult> RunCycle(ClusterBinding& binding, const SchedulerConf& conf,
                               const PluginRegistry& registry, TimeNs now, int index,
                               const SessionHooks* hooks = nullptr);

}  // namespace kiln
