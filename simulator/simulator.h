#pragma once
// The embedded simulator: a scenario's cluster stands in for the Kubernetes API server and the
// scheduler cache. Each cycle takes a session snapshot of it (Volcano's OpenSession rules,
// volcano-semantics.md §1.3), runs the conf's actions, closes the session, and applies the
// decisions back to the simulated cluster the way kubelet and a job controller would:
//
//   * a bound pod starts Running on its node at the session's time (PodScheduled at that time);
//   * an evicted pod is deleted before the next cycle; a pod of a PodGroup the scenario defines is
//     recreated Pending under the same name (a job controller's replacement), a plain pod (the
//     loader's `podgroup-<uid>` group) is gone together with its group;
//   * a pod that was already terminating (`deleting: true`) finishes terminating before the next
//     cycle and is gone (its Releasing resources become idle);
//   * each PodGroup's phase and conditions at close are written back as its status;
//   * a pod pipelined onto a node after evicting others keeps that node as its
//     nominatedNodeName (allocate tries it first next cycle) until it is bound;
//   * a Running pod with a `duration` Succeeds once that long has passed since it started (since
//     `scheduledAt`, or the scenario's `now`, for pods that were already running).
//
// Cycle i runs at `now + i × period`; the period defaults to 1s, Volcano's default
// schedule-period, and `kiln simulate --period` overrides it.
//
// Trace replay (multi-cycle runs: more than one cycle, or --until; scenario-format.md "Trace
// replay and the simulation report"):
//   * a pod or PodGroup whose creationTimestamp is later than the first session's time is not in
//     the cluster until the first session at or after it;
//   * a job whose pods have all Succeeded is deleted after the session that saw it finish (as a
//     job with ttlSecondsAfterFinished: 0 would be), so long runs do not carry finished work;
//   * after each session the cluster is measured (trace.h) and the run ends with a summary.
// Skipping: Volcano runs a session every period whatever happens. A session can only decide
// differently from the one before it when its snapshot differs or when something in it reads the
// clock (a policy calling `now()`, preempt's start time of a pod never scheduled). So when a
// session changed nothing in the cluster (no bind, eviction, nomination, deletion, PodGroup phase
// or condition change) and nothing in it read the clock, every following period repeats it
// exactly until the next arrival or completion; those periods are skipped and the clock jumps to
// the first period at or after that event (`--every-period` runs them all; a test checks both
// give the same decisions). With no event left, the cluster is idle and the run ends: --until
// and --cycles are upper bounds.
//
// Plugins: the conf names plugins; the simulator asks a PolicyProvider for each one before the
// first session. A name the provider does not know is an error ("unknown plugin `x`", or for a
// plugin Volcano has but Kiln has no policy for, "is a Volcano plugin that Kiln does not
// provide") reported at the conf line that names it. Volcano would skip it with a log line; Kiln
// refuses to run a conf that silently lacks a plugin.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/conf.h"
#include "runtime/model.h"
#include "runtime/plugin.h"
#include "runtime/policy_provider.h"
#include "runtime/scheduler.h"
#include "simulator/scenario.h"
#include "simulator/trace.h"
#include "runtime/status.h"

namespace kiln {

class Session;
struct TaskExplain;

struct SimulationResult {
  std::string scenario;
  std::vector<SessionResult> sessions;
  // The scenario's cluster warnings (references that do not resolve; ScenarioSpec::warnings).
  std::vector<ClusterWarning> warnings;
  // The scenario's `calls`, run in the first session, each with its result.
  std::vector<CallSpec> calls;
  // Trace replay (multi-cycle runs): one sample per session in `sessions`, and the summary.
  bool trace = false;
  std::vector<SessionMetrics> metrics;
  TraceSummary summary;
};

struct SimulatorOptions {
  int cycles = 1;
  DurationNs period = 1'000'000'000;  // 1s
  // --until: run the sessions at times up to and including this one (instead of `cycles`).
  std::optional<TimeNs> until;
  // Run every period, even those that provably decide nothing (for checking the skipping).
  bool every_period = false;
  // --report: digest up to this many pending pods per session (one per job) for the decisions
  // table. 0: none.
  int explain_pending = 0;

  bool trace() const { return cycles > 1 || until.has_value(); }
};

// The scenario's cluster as a ClusterBinding: snapshots are built from the scenario objects as
// they stand, and each session's decisions are applied back the way kubelet and a job controller
// would (the rules at the top of this file).
class SimulatedCluster : public ClusterBinding {
 public:
  // `trace`: hold back objects created after the scenario's `now` until they arrive, delete
  // finished jobs, and keep the job records of the summary.
  explicit SimulatedCluster(ScenarioSpec spec, bool trace = false);
  // Pods whose `duration` has passed by `now` Succeed first, then (trace) arrivals come in.
  Result<Cluster> Snapshot(TimeNs now) override;
  void Apply(const SessionResult& result) override;
  const ScenarioSpec& state() const { return spec_; }

  // Whether the last Apply changed anything a session reads (see the top of this file).
  bool changed() const { return changed_; }
  // The earliest arrival or completion still to come, if any.
  std::optional<TimeNs> NextEvent() const;
  // Every job seen so far (trace), by uid.
  const std::map<std::string, JobRecord>& jobs() const { return jobs_; }

 private:
  void CompleteFinishedPods(TimeNs now);
  void Arrive(TimeNs now);
  void NoteJob(const PodGroupSpec& g);
  void DeleteFinishedJobs();

  ScenarioSpec spec_;
  bool trace_ = false;
  bool changed_ = true;
  bool completed_ = false;  // a pod Succeeded since the last DeleteFinishedJobs
  // Objects not arrived yet, by creationTimestamp (stable), and how far arrivals have got.
  std::vector<PodSpec> future_pods_;
  std::vector<PodGroupSpec> future_groups_;
  size_t next_pod_ = 0, next_group_ = 0;
  std::map<std::string, int> future_pods_per_job_;
  std::map<std::string, JobRecord> jobs_;
  std::map<std::string, TimeNs> last_finish_;  // job uid → latest finish time of its pods
};

class Simulator {
 public:
  // Checks that every plugin the conf names resolves through `provider` (Error: "unknown plugin
  // `x`" at the conf's line; for a scenario's embedded conf, mapped to the scenario's lines by
  // the caller). `provider` must outlive the simulator.
  static Result<std::unique_ptr<Simulator>> Create(ScenarioSpec spec, SchedulerConf conf,
                                                   PolicyProvider& provider,
                                                   SimulatorOptions options = {});

  // Observers of the first session (kiln explain), run around the scenario's own calls.
  void SetFirstSessionHooks(SessionHooks hooks) { first_hooks_ = std::move(hooks); }

  // Runs the next cycle and applies its decisions to the simulated cluster. The first cycle also
  // runs the scenario's `calls` (before the session closes); calls() holds their results.
  Result<SessionResult> RunCycle();
  // Runs options.cycles cycles.
  Result<SimulationResult> Run();

  // The simulated cluster as it stands (after the cycles run so far).
  const ScenarioSpec& state() const { return cluster_.state(); }
  const SchedulerConf& conf() const { return conf_; }
  int cycles_run() const { return next_index_; }
  const std::vector<CallSpec>& calls() const { return calls_; }

 private:
  Simulator(ScenarioSpec spec, SchedulerConf conf, SimulatorOptions options)
      : cluster_(std::move(spec), options.trace()), conf_(std::move(conf)), options_(options) {}
  Result<SimulationResult> RunTrace();
  // Trace: each queue's shown deserved figure and (--report) digests of pending pods.
  void ObserveSession(Session& ssn);

  SimulatedCluster cluster_;
  SchedulerConf conf_;
  SimulatorOptions options_;
  PluginRegistry registry_;
  int next_index_ = 0;
  SessionHooks first_hooks_;
  std::vector<CallSpec> calls_;
  // Trace: what the last session's before_close hook measured.
  std::map<std::string, Resource> deserved_;
  std::vector<PendingDigest> digests_;
  // The scenario's detached pods as tasks of no job (Link drops their queue-less jobs).
  Cluster detached_;
};

// Why a pending pod's nodes were rejected, grouped by plugin and reason (trace.h).
PendingDigest DigestOf(const TaskExplain& te);

// Differences between `expect` and the first session's decisions, one line each
// ("binds: c1/p1: expected n1, got n2"); empty when they match.
std::vector<std::string> CheckExpectations(const ExpectSpec& expect, const SessionResult& got);

// Differences between `expect.warnings` and the loader's warnings (compared by message, in
// order); empty when they match or `expect` does not list warnings.
std::vector<std::string> CheckWarnings(const ExpectSpec& expect,
                                       const std::vector<ClusterWarning>& got);

// The conf a scenario runs with: `conf_override_text` (from --conf) when given, else the
// scenario's `conf`, else Volcano's default conf. Errors in the scenario's own conf are reported
// at the scenario's lines.
Result<SchedulerConf> ResolveScenarioConf(const ScenarioSpec& spec,
                                          const std::string* conf_override_text,
                                          const std::string& conf_override_file);

}  // namespace kiln
