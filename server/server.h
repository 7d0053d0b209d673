#pragma once
// `kiln serve` put together: live-reloaded configuration, the session loop, metrics and HTTP
// endpoints, optional leader election, clean shutdown on SIGTERM/SIGINT. The command line
// (cli/serve_command.cc) chooses the cluster; everything after that is here.
//
// Shutdown order: stop the loop (the session in flight finishes), stop the config watcher,
// let the binding flush its writes for at most `shutdown_grace` (its own business: see
// ServeHooks::flush), release the lease, stop the HTTP server.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/status.h"
#include "server/http_endpoints.h"
#include "server/policy_set.h"

namespace kiln {
struct Explanation;
}
namespace kiln::kube {
class LeaseStore;
}

namespace kiln::server {

class ServerMetrics;

struct ServeOptions {
  PolicySources sources;
  std::chrono::nanoseconds schedule_period = std::chrono::seconds(1);
  std::string listen = "127.0.0.1:8080";  // empty: no HTTP endpoints
  HttpLimits http_limits;
  bool dry_run = false;                   // decide and log; never hand decisions to the binding
  // Leader election: when `lease_store` is set, sessions run only while this replica leads.
  kube::LeaseStore* lease_store = nullptr;
  std::string identity;
  std::chrono::nanoseconds shutdown_grace = std::chrono::seconds(5);
  // The session clock; default: the wall clock.
  std::function<TimeNs()> clock;
  std::chrono::milliseconds reload_quiet{200};
  // --shadow: a candidate scheduler.conf, .kpack or pack directory that decides beside the live
  // configuration on every session's snapshot and writes nothing (server/shadow.h); empty: none.
  std::string shadow;
};

// What the cluster side tells the server, all optional.
struct ServeHooks {
  std::function<bool()> caches_synced;  // /readyz; default: synced
  // Carry out or drop queued writes, waiting at most `grace`; called once at shutdown.
  std::function<void(std::chrono::nanoseconds grace)> flush;
  // Called when leadership starts/ends (the binding must stop writing at once on false).
  std::function<void(bool leading)> on_leadership;
  // Called once the metrics exist, so the binding can report bind latency and relists.
  std::function<void(ServerMetrics&)> attach_metrics;
  // Called after each session with its result (tests, logs).
  std::function<void(const SessionResult&)> on_session;
  // Called after every reload that changed something or was rejected (not the initial load).
  std::function<void(const ReloadOutcome&)> on_reload;
  // Called once everything runs (the port actually bound, for tests with --listen :0).
  std::function<void(int port)> on_started;
  // The cluster's objects as the next session at `now` would see them (CompleteCluster's
  // output), for GET /snapshot; unset: the binding has none to give.
  std::function<ClusterSpec(TimeNs now)> snapshot_spec;
  // `kiln explain -o json`'s document for an explanation, for GET /explain (which also needs
  // snapshot_spec); unset: GET /explain answers 404. POST /whatif needs only snapshot_spec.
  std::function<std::string(const Explanation&)> explain_json;
  // The cluster's objects as the snapshot the loop just took at `now` saw them, called on the
  // loop thread right after it (the shadow's copy of the live session's state); unset:
  // snapshot_spec.
  std::function<ClusterSpec(TimeNs now)> session_spec;
  // The objects the snapshot the loop just took at `now` was built from, kept by the binding and
  // handed over without a copy (null when it kept none); when set, the shadow takes them instead
  // of calling session_spec (ShadowTapBinding).
  std::function<std::shared_ptr<const ClusterSpec>(TimeNs now)> kept_session_spec;
};

// Runs until SIGTERM/SIGINT (or `stop` becomes true, polled each period, for tests). Returns the
// process exit code: 0 after a clean stop, 2 when the configuration or the listen address is bad.
// Call it from the main thread before any other thread exists (signals are blocked here and
// waited for on a thread of its own).
int Serve(ClusterBinding& binding, const ServeOptions& options, const ServeHooks& hooks,
          const std::function<bool()>& stop = nullptr);

class ConfigWatcher;
// The watcher `kiln serve` and `kiln simulate --watch` reload with (not started): it reacts
// only to the files `reloader` reads (PolicyReloader::IsRelevant) and runs each reload on its
// worker thread; a load in flight is abandoned at Stop(), and for a newer change while no other
// abandoned load still runs (so at most two compiles run at once).
std::unique_ptr<ConfigWatcher> WatchAndReload(PolicyReloader& reloader,
                                              std::chrono::milliseconds quiet);

// klog-style verbosity on spdlog: 0 info (default), 1-3 debug, 4+ trace; klog's line header
// ("I1125 04:44:28.123456 1234] message").
void ConfigureLogging(int verbosity);

}  // namespace kiln::server
