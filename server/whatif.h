#pragma once
// Sessions off the scheduling path (`POST /whatif`, `GET /explain` on kiln serve): what the
// scheduler would decide on the cluster as it stands, without deciding it.
//
// The rules every off-path session follows (they keep it from changing or slowing the live one):
//   * it runs on a PolicySet of its own, built by LoadPolicySet from the live sources through the
//     same ProviderFactory but WITHOUT a KeptStateStore, so each starts its `state ... across
//     sessions` afresh, as `kiln simulate` does; the set is rebuilt when the live generation
//     changes (the process-wide compile cache makes that cheap), and when the files were edited
//     since the live set was loaded (the rebuilt hash differs), the answer is an error saying so
//     instead of an answer for a configuration that does not schedule;
//   * its cluster is the one GET /snapshot writes (ServeHooks::snapshot_spec), normalised the way
//     the scenario writer and loader normalise it, so that `kiln simulate` on `kiln snapshot`
//     output with the same objects added decides the same; taking it is the only moment it holds
//     the binding's lock. The copy is taken after each live session on a thread of its own while
//     requests come, and its session model built ahead there (server/offpath_snapshot.h), so a
//     request usually finds both ready and adds only its job to the model;
//   * it never writes anything: its SessionResult goes to the caller only;
//   * one runs at a time: a second request meanwhile is refused at once (Busy), never queued
//     behind it; inputs are bounded (WhatIfLimits).
// Policy faults are contained as in a live session (budgets, the watchdog) and counted here, apart
// from the live metrics (kiln_whatif_* in /metrics).

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/explain.h"
#include "kubernetes/volcano_job.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"
#include "server/http_endpoints.h"
#include "server/offpath_snapshot.h"
#include "server/policy_set.h"

namespace kiln::server {

struct WhatIfLimits {
  size_t max_body_bytes = size_t{1} << 20;  // the request body (YAML or JSON)
  size_t max_pods = 1000;                   // pods one request may add
};

// The objects a what-if adds: at most one PodGroup and its pods (each pod names the group with
// the `scheduling.k8s.io/group-name` annotation, or has none and gets its own one-pod group).
// A Volcano Job (batch.volcano.sh/v1alpha1) is read as the PodGroup and pods its controller makes
// (kubernetes/volcano_job.h); the PodGroup's minResources then depend on the cluster's
// PriorityClasses and are computed when the what-if runs (`volcano_tasks` not empty).
struct WhatIfObjects {
  std::optional<PodGroupSpec> group;
  std::vector<PodSpec> pods;
  std::vector<kube::VolcanoJobTask> volcano_tasks;
};

// Reads a request body: YAML (one or more documents) or JSON; each document an object, a list of
// objects, or a `kind: List` with `items`. Kinds read: Pod, PodGroup (through the Kubernetes
// decoders, kubernetes/decode.h) and a Volcano Job (expanded, kubernetes/volcano_job.h; it is
// the request's PodGroup and pods, so nothing else may come with it). Error "<where>: <what>" for anything else, nothing half read.
// A pod without spec.schedulerName is taken as the scheduler's own (a what-if asks about pods
// meant for it).
Result<WhatIfObjects> ParseWhatIfObjects(std::string_view body, bool json,
                                         const WhatIfLimits& limits);

// The reasons one pod was not placed, as the JSON contract lists them.
struct WhatIfReason {
  std::string code;  // empty until the runtime's reasons carry codes
  std::string message;
};

struct WhatIfAnswer {
  std::string job;  // job uid <ns>/<podgroup>
  bool admitted = false;
  std::string admission_plugin, admission_code, admission_message;
  std::map<std::string, std::string> placements;  // pod key → node (the added pods)
  std::map<std::string, std::string> pipelined;   // pod key → node (the added pods)
  // The pods the job's admission would evict: those the session with the job evicts and the
  // same session without it (on the same snapshot) does not.
  std::vector<std::string> evictions;
  int queue_position = 0;  // 1-based, among the jobs of the job's queue in the session's order
  std::map<std::string, std::vector<WhatIfReason>> reasons;  // added pods not placed
  SessionResult session;  // the whole session, for tests and logs
  // The session started from the copy's model built ahead (OffPathCluster::spares), not from a
  // build of the whole copy.
  bool prebuilt = false;
};
// The answer as the JSON contract spells it (docs/serve.md, "POST /whatif").
std::string WhatIfJson(const WhatIfAnswer& a);

// Runs the what-if on `base` (a snapshot normalised and completed at base.now, as
// OffPathSnapshots publishes it): adds `objects` (completing only them), runs the session with
// `set`, answers, and leaves base.spec as it was. The session starts from one of base.spares when one
// is ready (and uses it up): only the job's objects are added to that model. Only when some of the
// pods are left unplaced is the same session run again with those pods' explanation recorded (their
// reasons); only when the job is not admitted is each enqueue voter asked alone (an enqueue-only
// session each) to name who refused it; only when the session evicts someone is the session without
// the job run (once per copy and configuration: base.baseline_evictions) to tell the job's
// evictions from those the scheduler makes anyway. Errors: the objects collide with the cluster's
// (a pod or PodGroup that already exists), or a session could not run.
Result<WhatIfAnswer> RunWhatIfOn(OffPathCluster& base, const WhatIfObjects& objects,
                                 const PolicySet& set);
// The same on a snapshot copy (normalised, not yet completed) at `now`.
Result<WhatIfAnswer> RunWhatIf(ClusterSpec cluster, const WhatIfObjects& objects,
                               const PolicySet& set, TimeNs now);

// The explanation `kiln explain` gives (runtime/explain.h) of one session on `cluster` (completed
// at `now`) for `pods` (an empty set explains no pod: the jobs and queues only).
Result<Explanation> ExplainOffPath(const ClusterSpec& cluster, const std::set<std::string>& pods,
                                   const PolicySet& set, TimeNs now);

// The serve side: the off-path PolicySet, the one-at-a-time gate, the HTTP answers.
class OffPathRunner {
 public:
  using Reply = HttpReply;
  struct Deps {
    PolicySources sources;  // the live reloader's (its KeptStateStore is dropped here)
    ProviderFactory factory;
    std::function<std::shared_ptr<const PolicySet>()> live;  // the active set
    std::function<ClusterSpec(TimeNs)> snapshot;             // ServeHooks::snapshot_spec
    std::function<TimeNs()> clock;
    // How the copies of `snapshot` are kept between requests (server/offpath_snapshot.h).
    OffPathSnapshots::Options snapshots;
    // `kiln explain -o json`'s writer (cli/), set by the command that starts the server.
    std::function<std::string(const Explanation&)> explain_json;
  };
  explicit OffPathRunner(Deps deps, WhatIfLimits limits = {});
  ~OffPathRunner();

  Reply WhatIf(std::string_view body, std::string_view content_type);
  // kind "pod" or "podgroup"; name "<ns>/<name>".
  Reply Explain(std::string_view kind, std::string_view name);
  // The live loop, after each session (cheap: OffPathSnapshots::SessionDone).
  void SessionDone();

  // Prometheus text: kiln_whatif_requests_total{endpoint,outcome}, kiln_whatif_policy_faults_total,
  // kiln_whatif_prebuilt_sessions_total (what-ifs that found the copy's model built ahead),
  // kiln_whatif_session_seconds (histogram: the sessions and the answer) and
  // kiln_whatif_snapshot_seconds (histogram: the time a request spent taking or waiting for a
  // snapshot copy; 0 when the copy published after the last live session was current).
  std::string MetricsText() const;
  const WhatIfLimits& limits() const { return limits_; }

  // The set off-path sessions run on for the live generation (built on first use and after each
  // reload). Error when no configuration is loaded or the files changed since the live one was.
  Result<std::shared_ptr<const PolicySet>> Policies();

 private:
  Reply Count(std::string_view endpoint, Reply r);

  Deps deps_;
  WhatIfLimits limits_;
  std::mutex busy_;  // held for the length of one off-path session
  // The session's loops run on these, on the request's thread, while busy_ is held: on the
  // process-wide pools (one loop at a time) the live session's loops would wait behind its own.
  ThreadPool nodes_pool_{1};
  ThreadPool io_pool_{1, /*min_grain=*/1};
  std::mutex set_mu_;
  std::shared_ptr<const PolicySet> set_;
  uint64_t set_generation_ = 0;

  // kiln_whatif_* in a registry of their own (prometheus-cpp), apart from the live families.
  struct Stats;
  std::unique_ptr<Stats> stats_;

  std::unique_ptr<OffPathSnapshots> snapshots_;  // when deps_.snapshot is set
  std::shared_ptr<OffPathCluster> TakeSnapshot();
};

}  // namespace kiln::server
