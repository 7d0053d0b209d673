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
// Plugins: the conf names plugins; the simulator asks a PolicyProvider for each one before the
// first session. A name the provider does not know is an error ("unknown plugin `x`", or for a
// plugin Volcano has but Kiln has no policy for, "is a Volcano plugin that Kiln does not
// provide") reported at the conf line that names it. Volcano would skip it with a log line; Kiln
// refuses to run a conf that silently lacks a plugin.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/conf.h"
#include "runtime/model.h"
#include "runtime/plugin.h"
#include "runtime/scenario.h"
#include "runtime/status.h"

namespace kiln {

// Resolves plugin names of a conf into plugin builders. The policy host (compiler/host)
// implements it over compiled policies; tests implement it over C++ test plugins.
class PolicyProvider {
 public:
  virtual ~PolicyProvider() = default;
  // Every plugin name this provider can build (for "did you mean" in errors).
  virtual std::vector<std::string> Names() const = 0;
  // The builder for `option.name`; nullptr when this provider has no plugin of that name.
  // An Error when the plugin exists but cannot serve this entry (e.g. a compile error in its
  // policy, or `arguments` its schema rejects); it should name `option.where`.
  virtual Result<const PluginBuilder*> Prepare(const PluginOption& option) = 0;
  // A hint that Prepare will be asked for each of `names`: a provider may get them ready together
  // (the policy host compiles them concurrently). Errors are left for Prepare to report.
  virtual void Prefetch(const std::vector<std::string>& names) { (void)names; }
};

// What `kiln simulate` passes to the policy host when it asks for a provider.
struct PolicyProviderOptions {
  std::vector<std::string> policy_dirs;  // --policy-dir: user policies beside the built-ins
  bool allow_builtin_override = false;   // a user policy may replace the built-in of its name
};

// The hook for the policy host (compiler/host). It implements
//
//   Result<std::unique_ptr<PolicyProvider>> MakeCompiledPolicyProvider(
//       const PolicyProviderOptions& options);   // in namespace kiln
//
// declared in `compiler/host/policy_provider.h`; `kiln simulate` uses it as soon as that header
// exists (until then it runs with no plugins, so a conf naming one fails with "unknown plugin").

// A provider over a fixed registry (C++ test plugins; an empty registry for plugin-free runs).
class RegistryPolicyProvider : public PolicyProvider {
 public:
  RegistryPolicyProvider() = default;
  explicit RegistryPolicyProvider(PluginRegistry registry) : registry_(std::move(registry)) {}
  PluginRegistry& registry() { return registry_; }
  std::vector<std::string> Names() const override { return registry_.Names(); }
  Result<const PluginBuilder*> Prepare(const PluginOption& option) override {
    return registry_.Find(option.name);
  }

 private:
  PluginRegistry registry_;
};

// What one session decided, keyed the way the scenario format prints it.
struct SessionResult {
  int index = 0;
  TimeNs time = 0;
  std::map<std::string, std::string> binds;            // pod <ns>/<name> → node
  std::vector<std::string> bind_order;                 // pod keys in the order they were bound
  std::set<std::string> evictions;                     // pod keys
  std::map<std::string, std::string> pipelined;        // pod key → node
  std::map<std::string, std::string> pod_group_phases; // job <ns>/<podgroup> → phase
  std::map<std::string, std::string> unschedulable;    // pod key → reason
  std::vector<std::string> faults;                     // policy faults, as the session logged
  // Written back to the simulated cluster (not printed): pods pipelined after evicting others
  // get status.nominatedNodeName; PodGroups keep the conditions the session set.
  std::map<std::string, std::string> nominated;                        // pod key → node
  std::map<std::string, std::vector<PodGroupCondition>> conditions;    // job uid → conditions
  int64_t duration_micros = 0;
};

struct SimulationResult {
  std::string scenario;
  std::vector<SessionResult> sessions;
};

struct SimulatorOptions {
  int cycles = 1;
  DurationNs period = 1'000'000'000;  // 1s
};

// The session snapshot of `spec` at time `now` (§1.3, §3.1): task status from pod phase, node and
// deletion; running pods occupy their nodes; terminated pods occupy nothing.
Result<Cluster> BuildCluster(const ScenarioSpec& spec);

// Volcano's task status for a pod (§3.1).
TaskStatus TaskStatusOf(const PodSpec& pod);

class Simulator {
 public:
  // Checks that every plugin the conf names resolves through `provider` (Error: "unknown plugin
  // `x`" at the conf's line; for a scenario's embedded conf, mapped to the scenario's lines by
  // the caller). `provider` must outlive the simulator.
  static Result<std::unique_ptr<Simulator>> Create(ScenarioSpec spec, SchedulerConf conf,
                                                   PolicyProvider& provider,
                                                   SimulatorOptions options = {});

  // Runs the next cycle and applies its decisions to the simulated cluster.
  Result<SessionResult> RunCycle();
  // Runs options.cycles cycles.
  Result<SimulationResult> Run();

  // The simulated cluster as it stands (after the cycles run so far).
  const ScenarioSpec& state() const { return spec_; }
  const SchedulerConf& conf() const { return conf_; }
  int cycles_run() const { return next_index_; }

 private:
  Simulator(ScenarioSpec spec, SchedulerConf conf, SimulatorOptions options)
      : spec_(std::move(spec)), conf_(std::move(conf)), options_(options) {}

  void CompleteFinishedPods(TimeNs now);
  void Apply(const SessionResult& result);

  ScenarioSpec spec_;
  SchedulerConf conf_;
  SimulatorOptions options_;
  PluginRegistry registry_;
  int next_index_ = 0;
};

// Differences between `expect` and the first session's decisions, one line each
// ("binds: c1/p1: expected n1, got n2"); empty when they match.
std::vector<std::string> CheckExpectations(const ExpectSpec& expect, const SessionResult& got);

// The conf a scenario runs with: `conf_override_text` (from --conf) when given, else the
// scenario's `conf`, else Volcano's default conf. Errors in the scenario's own conf are reported
// at the scenario's lines.
Result<SchedulerConf> ResolveScenarioConf(const ScenarioSpec& spec,
                                          const std::string* conf_override_text,
                                          const std::string& conf_override_file);

}  // namespace kiln
