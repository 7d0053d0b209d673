#pragma once
// The cluster that off-path sessions (POST /whatif, GET /explain; server/whatif.h) run on, kept
// ready between requests so that a request neither copies the informer cache nor completes the
// whole cluster again.
//
//   1. after each live session the loop calls SessionDone(): a flag and a notify, nothing more;
//   2. the publisher's own thread (nice 10) then takes the copy GET /snapshot would write
//      (ServeHooks::snapshot_spec: the binding's lock is held for that copy only, the same as
//      one GET /snapshot), normalises it as a scenario file is read back
//      (NormaliseLikeScenario) and completes it (CompleteCluster), and publishes it;
//   3. a request takes the latest copy: the one taken after the last live session. When that
//      copy is still being taken, the request waits for it (at most one copy); when there is
//      none, the thread has not started it yet, or it is older than `max_age` (no session ran
//      since: a standby replica, a loop that has not started), the request takes one itself, on
//      its own thread.
// Copies are taken only while someone asks: after `demand` without a request the publisher stops
// copying, and the next request takes its own copy first. A server nobody asks pays nothing.
//
// A published copy is shared, never copied again. Once it is published the publisher builds its
// session models ahead of the requests (OffPathCluster::spares, two by default,
// runtime/cluster_extend.h): a what-if takes one, adds only its job's objects and links it,
// instead of building every task again, and after the what-if (Replenish) the publisher builds
// another. A request never waits for a model: when none is ready it builds its own from the copy.
// Two are kept because requests often come one right after another (a client asking about
// several jobs): with one, each request found the publisher still building the model the last
// one had used up, and built its own beside it. When a what-if needs
// the copy itself with its job's objects in it (a session run again to explain), it appends them,
// runs, and removes them (OffPathExtension), which is safe because one off-path session runs at a
// time (OffPathRunner's gate) and the publisher reads a published copy only under its `mu`.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "runtime/cluster_extend.h"
#include "runtime/cluster_spec.h"

namespace kiln::server {

// Normalises a snapshot ClusterSpec the way writing it as a scenario and loading it back does
// (kubernetes/scenario_writer.h): the scheduler's pods answer to `volcano`, one-pod PodGroups
// and PodGroup conditions are left for CompleteCluster to make afresh.
void NormaliseLikeScenario(ClusterSpec& cluster);

// One copy of the cluster, normalised and completed at `now`.
struct OffPathCluster {
  ClusterSpec spec;
  std::vector<ClusterWarning> warnings;  // CompleteCluster's, for the whole cluster
  TimeNs now = 0;
  uint64_t sequence = 0;        // 1, 2, ... in the order the copies were taken
  int64_t after_session = -1;   // the live sessions done when it was taken (-1: none counted)
  std::chrono::steady_clock::time_point taken;
  // The evictions of a session without any job added, for the configuration `baseline_hash`
  // (server/whatif.h, "evictions"): computed by the first what-if that needs it, reused by the
  // next ones on this copy. Only the holder of the off-path gate reads or writes it.
  std::optional<std::set<std::string>> baseline_evictions;
  std::string baseline_hash;
  // The keys of its pods and PodGroups, which a what-if's objects must not reuse: built by the
  // first what-if on this copy (the holder of the gate), read by the next ones.
  std::optional<std::unordered_set<std::string>> pod_keys, group_uids;
  // `mu` is held while the publisher builds a session model from `spec` and while a what-if's
  // objects are in `spec`, so that the two never overlap.
  std::mutex mu;
  // Session models of `spec` built ahead by the publisher, up to Options::spare_models (none on a
  // copy a request took itself, until Replenish); a what-if takes one. Under `spare_mu`, held only
  // to put one in or take one out: a request never waits for a build. With two, requests that
  // come one right after another each find one while the publisher builds the next.
  std::mutex spare_mu;
  std::vector<PartialCluster> spares;

  // A model built ahead, used up; none when there is none ready.
  std::optional<PartialCluster> TakeSpare();
  size_t spare_count();
};

// Completed objects appended to a completed cluster for the length of one session, and removed
// again (by the destructor), so that the cluster is left exactly as it was.
class OffPathExtension {
 public:
  OffPathExtension(ClusterSpec& cluster, std::vector<PodGroupSpec> groups, std::vector<PodSpec> pods);
  ~OffPathExtension();
  OffPathExtension(const OffPathExtension&) = delete;
  OffPathExtension& operator=(const OffPathExtension&) = delete;

 private:
  ClusterSpec& cluster_;
  size_t group_at_ = 0, groups_ = 0, made_at_ = 0, pods_at_ = 0;
};

// The objects `groups` and `pods` would be once in `cluster` (already completed) and completed
// with it at `now`: defaults, priorities, one-pod PodGroups for pods without one; in the order
// CompleteCluster of the whole would list them. Only the added objects are visited (and the
// cluster's queues, classes and the PodGroups the pods name). `warnings`: those about them.
void CompleteAdded(const ClusterSpec& cluster, std::vector<PodGroupSpec>& groups,
                   std::vector<PodSpec>& pods, TimeNs now, std::vector<ClusterWarning>* warnings);

class OffPathSnapshots {
 public:
  struct Options {
    std::chrono::nanoseconds max_age = std::chrono::seconds(3);
    std::chrono::nanoseconds demand = std::chrono::minutes(5);
    int nice = 10;  // the publisher thread's niceness
    bool spare = true;  // build each copy's session models ahead (OffPathCluster::spares)
    // How many are kept ready per copy. Each costs the memory of one session model (about the
    // size of the cluster's tasks); 2 keeps one ready for a request that follows another at once.
    int spare_models = 2;
  };
  OffPathSnapshots(std::function<ClusterSpec(TimeNs)> spec_at, std::function<TimeNs()> clock,
                   Options options);
  ~OffPathSnapshots();  // stops the thread
  OffPathSnapshots(const OffPathSnapshots&) = delete;
  OffPathSnapshots& operator=(const OffPathSnapshots&) = delete;

  // Loop thread, after a live session: asks for a new copy when someone asked recently.
  void SessionDone();
  // A request: the copy to run on (see the header). `copy_seconds`: time this call spent taking
  // or waiting for a copy (0 when the published one was current).
  std::shared_ptr<OffPathCluster> Current(double* copy_seconds);
  // A request, after its what-if: the publisher builds the latest copy's model again when it was
  // taken (or the copy was the request's own), off the request's path.
  void Replenish();
  uint64_t copies() const;
  uint64_t spares() const;  // session models built ahead so far

 private:
  std::shared_ptr<OffPathCluster> Take(int64_t after_session);
  void BuildSpare(OffPathCluster& copy);
  void ThreadMain();

  std::function<ClusterSpec(TimeNs)> spec_at_;
  std::function<TimeNs()> clock_;
  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<OffPathCluster> latest_;
  int64_t sessions_ = 0;       // SessionDone calls
  bool wanted_ = false;        // a copy is asked for and not yet taken
  bool copying_ = false;       // the thread is taking one
  bool replenish_ = false;     // a request took the latest copy's model
  uint64_t spares_ = 0;
  bool stop_ = false;
  uint64_t sequence_ = 0;
  std::chrono::steady_clock::time_point last_request_{};
  std::thread thread_;
};

}  // namespace kiln::server
