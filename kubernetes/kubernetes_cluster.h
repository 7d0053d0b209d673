#pragma once
// A Kubernetes cluster as a ClusterBinding (runtime/cluster.h): reflectors feed an informer-style
// cache of pods, nodes, PodGroups, Queues, PriorityClasses, PDBs, ResourceQuotas, namespaces,
// and Volcano's HyperNodes and Numatopologies (optional: a cluster without their CRDs has none);
// Snapshot() copies it into a ClusterSpec and builds the session model with the same
// BuildCluster the simulator uses; Apply() hands the session's decisions to a bounded pool of
// writers and returns at once. Events (Scheduled, FailedScheduling, reloads) go to a queue of
// their own with one sender (EventQueue, kubernetes/writer.h), so no write waits behind them.
//
// What the cache adds to what the API server says (Volcano's scheduler cache does the same):
//   * a pod we bound is "assumed" on its node (the session sees it Bound) from the moment the
//     bind is queued until a watch event shows spec.nodeName; events that do not show it yet do
//     not undo the assumption; a failed bind does (409/404: the pod is re-read; 5xx: the pod
//     stays pending and a later session retries it after a per-pod backoff). A pod is never
//     sent a second bind while one is assumed or in flight;
//   * a pod we evicted is seen terminating (Releasing) until the watch shows it so, and is never
//     evicted twice; a refused eviction (429) is forgotten so a later session may retry;
//   * the PodGroup status a session wrote is what the next session sees, even before the write
//     lands (and for the one-pod groups the cluster never stores);
//   * defaults and dangling references are resolved by CompleteCluster (runtime/cluster_spec.h),
//     as for a scenario: pods of other schedulers only occupy their nodes, pods whose PodGroup
//     or queue does not exist are not scheduled but still occupy their nodes (§7); another
//     scheduler's pods without a node are not seen at all (Volcano's informer filter).
//
// Writes are gated: SetWritesEnabled(false) (a standby replica, or a leader that lost its lease)
// makes Apply write nothing and drops queued writes' effects.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "kubernetes/client.h"
#include "kubernetes/decode.h"
#include "kubernetes/reflector.h"
#include "kubernetes/writer.h"
#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/env_flag.h"

namespace kiln::kube {

struct KubernetesClusterOptions {
  // Pods whose spec.schedulerName is one of these are ours (Volcano's --scheduler-name).
  std::vector<std::string> scheduler_names = {"volcano"};
  bool dry_run = false;                   // decide and log, never write
  bool evict_with_eviction_api = false;   // POST pods/eviction instead of condition + DELETE
  int write_workers = 8;
  size_t write_queue_capacity = 20000;
  // Per-pod wait before a bind that failed with 5xx/429/network is tried again (doubling, capped).
  std::chrono::milliseconds bind_retry_initial{1000};
  std::chrono::milliseconds bind_retry_max{60000};
  bool write_events = true;        // FailedScheduling / Scheduled Events
  // Events waiting for the Event sender (EventQueue, kubernetes/writer.h): beyond it new Events
  // are dropped and counted, never a bind.
  size_t event_queue_capacity = 10000;
  bool write_queue_status = true;  // queues/{name}/status allocated
  ReflectorOptions reflector;
  // Called on a writer thread after every bind call: latency in seconds and whether it bound.
  std::function<void(double seconds, bool ok)> on_bind;
  // Each snapshot that reads only the changed pods also reads every pod and compares the two
  // (KILN_CHECK_SNAPSHOTS=1; the tests): a difference is logged, counted
  // (KubernetesClusterStats::snapshot_mismatches) and the whole reading used.
  bool check_snapshots = EnvFlagOn("KILN_CHECK_SNAPSHOTS");
};

struct KubernetesClusterStats {
  std::map<std::string, int64_t> relists;  // per resource (kiln_watch_relists_total)
  int64_t binds_ok = 0;
  int64_t binds_conflict = 0;  // 409/404: the pod was re-read
  int64_t binds_retry = 0;     // 5xx/429/network: retried by a later session
  int64_t binds_failed = 0;
  int64_t evictions_ok = 0;
  int64_t evictions_refused = 0;  // 429 (PDB) or other failure: a later session may retry
  int64_t status_writes = 0;      // pod conditions, nominated nodes, PodGroup and Queue status
  int64_t status_write_failures = 0;
  int64_t status_writes_skipped = 0;  // the object already said so
  // Walks over the pod cache for PodGroup and Queue status: again only after a change they see.
  int64_t status_walks = 0;
  int64_t events = 0;          // Events sent (EventQueue)
  int64_t events_dropped = 0;  // the Event queue was full, or stopped first
  int64_t events_folded = 0;   // repeats folded into an Event still queued (its count)
  int64_t events_failed = 0;   // the API server refused or did not answer (not retried)
  int64_t writes_dropped = 0;  // queue full or writes disabled
  int64_t decode_errors = 0;   // objects skipped because they did not decode
  size_t write_queue_depth = 0;
  size_t pods = 0, nodes = 0, pod_groups = 0, queues = 0, hyper_nodes = 0, numatopologies = 0;
  size_t warnings = 0;  // dangling references in the last snapshot (CompleteCluster)
  // Snapshots that read every pod of the cache (the first, and after a LIST or a change to the
  // set of nodes); the pods the last snapshot read (every pod, or only those that changed).
  int64_t snapshots_whole = 0;
  int64_t snapshot_pods_read = 0;
  double snapshot_lock_ms = 0;  // how long the last snapshot held the cache's lock
  int64_t snapshot_mismatches = 0;  // check_snapshots: the changed pods' reading was wrong
};

class KubernetesCluster : public ClusterBinding {
 public:
  KubernetesCluster(std::shared_ptr<KubeClient> client, KubernetesClusterOptions options);
  ~KubernetesCluster() override;
  KubernetesCluster(const KubernetesCluster&) = delete;
  KubernetesCluster& operator=(const KubernetesCluster&) = delete;

  // Starts the reflectors (one thread each) and the write pool.
  void Start();
  // Every reflector has delivered its first LIST.
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout);
  // Waits up to `drain` for queued writes, then stops writers and reflectors.
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(5000));

  void SetWritesEnabled(bool enabled) { writes_enabled_ = enabled; }
  // Posts an Event through the Event queue, leader or not (each replica reports about itself,
  // e.g. a rejected configuration); nothing in dry-run mode.
  void PostEvent(ObjectReference about, std::string type, std::string reason, std::string action,
                 std::string message);
  bool writes_enabled() const { return writes_enabled_.load(); }
  // Waits until no write or Event is queued or running (tests, shutdown); true when idle.
  bool WaitForWrites(std::chrono::milliseconds timeout);

  Result<Cluster> Snapshot(TimeNs now) override;
  void Apply(const SessionResult& result) override;

  // The plain objects a Snapshot at `now` would build (assumptions and overlays applied).
  ClusterSpec SnapshotSpec(TimeNs now);
  // After KeepSessionSpecs(true), each Snapshot keeps the objects it built its model from, and
  // TakeSessionSpec hands them over once (null for another `now`, or when already taken): a
  // shadow candidate then decides on exactly the live session's input, with no second copy of
  // the cache competing with the live session for the cores and the cache's lock.
  void KeepSessionSpecs(bool keep) { keep_session_specs_ = keep; }
  std::shared_ptr<const ClusterSpec> TakeSessionSpec(TimeNs now);
  KubernetesClusterStats stats() const;
  const KubernetesClusterOptions& options() const { return options_; }

  struct State;  // the cache (defined in kubernetes_cluster.cc)

 private:
  struct PodMirror;   // the pods of the last snapshot (kubernetes_cluster.cc)
  struct PodChanges;  // the pods read again for the next one
  bool Ours(const std::string& scheduler_name) const;
  // SnapshotSpec's part under the cache's lock: every object but the pods copied.
  void CopyObjectsLocked(State& st, ClusterSpec& c) const;
  // Every pod read into `m`, with the assumed binds, evictions and nominations applied, and the
  // bookkeeping of pods gone pruned.
  void ReadAllPodsLocked(State& st, PodMirror& m) const;
  // The pods State::changed_pods names, read the same way.
  void ReadChangedPodsLocked(State& st, PodChanges& out) const;
  // Queues a write. When the queue is full (or the pool stopped) the write is counted, logged and
  // dropped, and `undo` runs under the cache's lock to forget the claim the caller made for it
  // (an assumed bind, an eviction, a status "already written"), so a later session redoes it.
  void SubmitWrite(std::function<void()> work, std::function<void(State&)> undo = {});
  // `retried`: the pod has a retry entry (bind_retry) to clear when this bind succeeds.
  void Bind(const std::string& key, const std::string& uid, const std::string& node,
            const StringMap& annotations, bool retried);
  // Apply, one decision kind each: claim what the cache says is not done yet, queue the write.
  void ApplyBinds(const SessionResult& result);
  void ApplyEvictions(const SessionResult& result);
  void ApplyNominations(const SessionResult& result);
  void ApplyPodGroupStatus(const SessionResult& result);
  void ApplyUnschedulable(const SessionResult& result);
  void ApplyQueueStatus();
  // Each queue's status.allocated from the pods of the cache (one walk), under the cache's lock.
  std::map<std::string, Resource> QueueAllocatedLocked(const State& st) const;

  std::shared_ptr<KubeClient> client_;
  KubernetesClusterOptions options_;
  Writer writer_;
  std::unique_ptr<State> state_;
  std::vector<std::unique_ptr<Reflector>> reflectors_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<EventQueue> events_;
  std::atomic<bool> writes_enabled_{true};
  std::atomic<bool> keep_session_specs_{false};
  std::mutex mirror_mu_;  // taken before the cache's lock, never after
  std::unique_ptr<PodMirror> mirror_;
  std::mutex kept_mu_;
  std::shared_ptr<const ClusterSpec> kept_spec_;  // the last Snapshot's input, until taken
  TimeNs kept_now_ = 0;
};

}  // namespace kiln::kube
