#pragma once
// A cluster the scheduler runs against, and what one session decided.
//
// Kiln schedules two kinds of cluster with the same session code: the embedded simulator
// (simulator/, a scenario file standing in for the API server) and a real Kubernetes cluster
// (kubernetes/, informer caches fed by the API server). Each is a ClusterBinding: a source of
// session snapshots (Volcano's cache Snapshot) and a sink for the decisions a session made
// (Volcano's binder, evictor and status updater). `kiln simulate` and `kiln serve` differ only in
// which binding they hand to the scheduler (runtime/scheduler.h).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/reason_codes.h"
#include "runtime/status.h"

namespace kiln {

// What one session decided, keyed the way the scenario format prints it (pods `<ns>/<name>`,
// jobs `<ns>/<podgroup>`).
struct SessionResult {
  int index = 0;
  TimeNs time = 0;
  std::map<std::string, std::string> binds;            // pod <ns>/<name> → node
  std::vector<std::string> bind_order;                 // pod keys in the order they were bound
  std::set<std::string> evictions;                     // pod keys
  std::map<std::string, std::string> pipelined;        // pod key → node
  std::map<std::string, std::string> pod_group_phases; // job <ns>/<podgroup> → phase
  std::map<std::string, std::string> unschedulable;    // pod key → reason
  // The stable codes (docs/reasons.md) of each unschedulable pod's reason, pod key → codes.
  std::map<std::string, std::vector<std::string>> unschedulable_codes;
  // PodGroups enqueue left Pending this session: job uid → the plugin that refused, code, message.
  std::map<std::string, AdmissionRefusal> admission_refusals;
  // Jobs with a network topology: the HyperNode each is placed under at session close (Volcano's
  // JobInfo.AllocatedHyperNode; runtime/hyper_node.h), job uid → HyperNode name.
  std::map<std::string, std::string> allocated_hyper_nodes;
  // The gang-eviction nominations still standing at session close (sub-job uid → HyperNode
  // name; Cluster::nominated_hyper_nodes), for the next session. Never written to the cluster.
  std::map<std::string, std::string> nominated_hyper_nodes;
  // This session's binds counted per lowest-tier HyperNode holding the bound node, sorted
  // ascending (scenario `expect.bindCountsByLeafHyperNode`); empty without HyperNodes.
  std::vector<int64_t> bind_counts_by_leaf_hyper_node;
  // Bound pods' annotations that plugins set for the bind (Volcano's TaskInfo.PodAnnotations
  // beyond the pod's own, carried by the Binding: deviceshare's device assignment), pod key →
  // annotations; pods without any are absent.
  std::map<std::string, StringMap> pod_annotations;
  std::vector<std::string> faults;                     // policy faults, as the session logged
  // With invariant checking on (runtime/invariants.h): what the checker found, "<action>: what".
  std::vector<std::string> invariant_violations;
  // Every handler the session's plugins registered and whether it ran (kiln test's coverage).
  struct HandlerUse {
    std::string plugin;
    std::string handler;  // the handler's name in the language ("node_order")
    bool called = false;
  };
  std::vector<HandlerUse> handlers;
  // Pods pipelined after evicting others get status.nominatedNodeName; PodGroups keep the
  // conditions the session set.
  std::map<std::string, std::string> nominated;                        // pod key → node
  std::map<std::string, std::vector<PodGroupCondition>> conditions;    // job uid → conditions
  int64_t duration_micros = 0;

  // What the server's metrics read (Volcano's volcano_* families); the simulator ignores them.
  struct PluginTiming {
    std::string plugin;
    std::string on_session;  // "OnSessionOpen" | "OnSessionClose" (Volcano's label values)
    int64_t micros = 0;
  };
  struct QueueUsage {
    std::string name;
    double allocated_milli_cpu = 0, allocated_memory = 0;
    double request_milli_cpu = 0, request_memory = 0;
    // What proportion or capacity computed at open (Volcano's plugins record it there); unset
    // when no plugin computed one, and the exporter then leaves the last value in place.
    bool has_deserved = false;
    double deserved_milli_cpu = 0, deserved_memory = 0;
    double capability_milli_cpu = 0, capability_memory = 0;  // 0 when the queue has none
    int64_t weight = 1;
  };
  int64_t snapshot_micros = 0;                                  // ClusterBinding::Snapshot
  int64_t open_micros = 0;                                      // Session::Open
  int64_t close_micros = 0;                                     // Session::Close
  int64_t results_micros = 0;  // turning the decisions into this result
  int64_t pending_tasks = 0;   // Pending pods in the snapshot the session started from
  std::vector<std::pair<std::string, int64_t>> action_micros;   // per action, in run order
  std::vector<PluginTiming> plugin_timings;
  std::vector<PolicyFaultPoint> fault_points;  // one per fault
  int preemption_attempts = 0;
  std::map<std::string, int> unschedulable_tasks_per_job;  // job uid → pending tasks with reason
  std::vector<TimeNs> bound_created;  // the creation time of each pod in bind_order, in its order
  std::vector<QueueUsage> queues;
};

class ClusterBinding {
 public:
  virtual ~ClusterBinding() = default;
  // The session's view of the cluster at `now`: every object as the binding knows it, built into
  // the session model (runtime/cluster_spec.h BuildCluster). Called once per session, before
  // it opens; the binding must not change the returned model afterwards.
  virtual Result<Cluster> Snapshot(TimeNs now) = 0;
  // Carries out what a session decided: binds, evictions, nominated nodes, PodGroup status and
  // unschedulable reasons. The simulator applies them at once; the Kubernetes binding queues the
  // writes and returns without waiting on the network.
  virtual void Apply(const SessionResult& result) = 0;

  // What the scheduler remembers between sessions without writing it anywhere (Volcano keeps it in
  // its cache's JobInfo/SubJobInfo): gang-eviction nominations, sub-job uid → HyperNode name.
  // RunCycle puts it into each snapshot and takes it back from the session's result, so it lives
  // as long as the binding (a restarted scheduler starts without it, as Volcano's does).
  std::map<std::string, std::string> nominated_hyper_nodes;
};

}  // namespace kiln
