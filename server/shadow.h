#pragma once
// A shadow candidate (`kiln serve --shadow PACK_OR_CONF`): a configuration that decides beside
// the live one on every live session's snapshot and writes nothing, so that a platform team sees
// what a new pack or conf would do to its cluster before it decides for real.
//
// Off the scheduling path, always:
//   1. right after the live snapshot, when the shadow thread is idle, the shadow gets the
//      cluster's objects at the same session time: on the Kubernetes API the very ClusterSpec the
//      live snapshot was built from, handed over without a copy; elsewhere a copy that
//      ShadowTapBinding's copier thread takes while the live session runs (the ClusterSpec GET
//      /snapshot serves); when the shadow is still busy with the previous session, this session
//      is skipped and counted, and the loop pays nothing more;
//   2. after the live session, the loop hands over what it decided (binds, evictions, pipelined
//      pods): a copy of three maps;
//   3. the shadow thread (SCHED_IDLE, or nice 10 where refused; loops on pools of its own) builds
//      the snapshot into a session model, runs the candidate's session on it, compares the
//      decisions pod by pod and counts what differs (kiln_shadow_decisions_differ_total{kind});
//      while a live session runs it waits (runtime/pause_gate.h), so it works in the gaps
//      between live sessions and never beside one: idle priority alone still let it share the
//      caches and memory bus with the live session, which ran 17% slower for it;
//   4. for the first few differing pods of the session it explains both sides (runtime/explain.h)
//      by running each configuration once more on the same snapshot with an ExplainRecorder for
//      those pods only. Those reruns use configurations of their own, loaded without a kept-state
//      store (as `kiln simulate` does), so they never advance any `state ... across sessions`;
//      the live one is never the live PolicySet.
//
// The candidate's faults are contained as a live policy's are (budgets, disabling) and counted
// in kiln_shadow_policy_faults_total, never in the live families. A candidate that fails to load
// is logged, counted and shown on /shadow; the live scheduler does not notice.
//
// Live reload: the candidate is whatever is at its path. Writing the file (or the pack) replaces
// it, deleting it removes the shadow (sessions are no longer mirrored), creating it again adds
// it back; its policy directories and trust keys are the live configuration's and are watched
// too.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/pause_gate.h"
#include "runtime/status.h"
#include "server/policy_set.h"

namespace kiln::server {

class ServerMetrics;
class ConfigWatcher;

// What a candidate at `path` is built from. A scheduler.conf: that conf with the live
// configuration's plugin sources (policy directories, packs directory, packs, trust keys). A
// .kpack or a pack directory: the pack's own `conf`, with the built-ins, the live policy
// directories and trust keys, and that pack alone (it replaces a live pack of the same name).
PolicySources ShadowSources(const std::string& path, const PolicySources& live);

// One pod the two sides decided differently.
struct ShadowDecision {
  bool bound = false;
  std::string bind_node;
  bool pipelined = false;
  std::string pipeline_node;
  bool evicted = false;
};
struct ShadowDiff {
  std::string pod;   // <namespace>/<name>
  std::string kind;  // "bind", "evict" or "pipeline"
  ShadowDecision live, shadow;
};

// The decisions of a session that ShadowRunner compares.
struct SessionDecisions {
  std::map<std::string, std::string> binds;
  std::set<std::string> evictions;
  std::map<std::string, std::string> pipelined;
};
SessionDecisions DecisionsOf(const SessionResult& r);

// The pods whose decisions differ, one entry per pod and kind, sorted by pod then kind: "bind" when
// a pod is bound on one side only or to different nodes, "evict" when it is evicted on one side
// only, "pipeline" likewise for pipelining.
std::vector<ShadowDiff> CompareDecisions(const SessionDecisions& live,
                                         const SessionDecisions& shadow);

// One live session handed to the shadow's thread, and what the shadow keeps (ShadowRunner's
// internals, declared here so that the class stays readable).
struct ShadowJob {
  std::shared_ptr<const ClusterSpec> spec;
  std::map<std::string, std::string> nominated;
  TimeNs now = 0;
  int index = 0;
  SessionDecisions live;
  uint64_t live_generation = 0;  // the live configuration the session ran on
  std::string live_hash;
  std::chrono::nanoseconds loop_cost{0};  // what handing it over cost the loop's thread
};
struct ShadowEntry {
  int index = 0;
  TimeNs time = 0;
  ShadowDiff diff;
  std::string live_explain, shadow_explain;  // JSON text; empty: not explained
  std::string explain_note;                   // why a side is not explained
};
struct ShadowExplainSet {
  std::shared_ptr<const PolicySet> set;
  std::string for_hash;  // the hash of the configuration it explains
  std::string error;
};

struct ShadowOptions {
  std::string path;             // --shadow
  PolicySources live_sources;   // the live configuration's (kept_state unset)
  size_t log_capacity = 100;    // differing decisions kept for GET /shadow (oldest dropped)
  size_t explain_per_session = 8;  // differing pods explained per session
  std::chrono::milliseconds reload_quiet{200};
  int nice = 10;                // >0: idle priority (SCHED_IDLE, else this niceness); 0: as the loop
};

class ShadowRunner {
 public:
  // `live` is the live configuration's reloader: read only for its generation and hash.
  ShadowRunner(ShadowOptions options, ProviderFactory factory, const PolicyReloader& live,
               ServerMetrics* metrics);
  ~ShadowRunner();
  ShadowRunner(const ShadowRunner&) = delete;
  ShadowRunner& operator=(const ShadowRunner&) = delete;

  // Starts the shadow thread (which loads the candidate first) and the watcher of its files.
  // Error only when a directory cannot be watched; a candidate that does not load is not one.
  Status Start();
  // Stops the watcher and the thread (a shadow session in flight finishes first). Idempotent.
  void Stop();

  // Loop thread, after the live snapshot at `now`: true when the shadow takes this session (a
  // candidate is loaded and the shadow thread idle). A candidate still busy with the previous
  // session counts this one as skipped.
  bool Wants();
  // After Wants() (ShadowTapBinding's copier thread): the cluster as the live session sees it.
  // `cost`: the loop's time spent on it so far (counted with LiveDone's).
  void Offer(std::shared_ptr<const ClusterSpec> spec,
             std::map<std::string, std::string> nominated_hyper_nodes, TimeNs now,
             std::chrono::nanoseconds cost);
  // Loop thread: the copy for this session had not started when the session ended.
  void CountLate();
  // Loop thread: time it spent for the offered copy (waiting for it to end).
  void AddLoopCost(std::chrono::nanoseconds cost);
  // Loop thread, after the live session: what it decided. Starts the shadow session when a
  // snapshot was offered for this session; drops the offer when the live session failed.
  void LiveDone(const SessionResult* live);

  // Loop thread, right before each live session's snapshot and right after the session ended
  // (LoopOptions::session_starts and session_ends): in between, the shadow thread waits at its
  // next checkpoint.
  void LiveSessionStarts() { gate_.Close(); }
  void LiveSessionEnds() { gate_.Open(); }

  // GET /shadow.
  std::string StatusJson() const;

  // Tests: shadow sessions finished, and waiting until the thread is idle.
  int64_t sessions() const { return sessions_.load(); }
  // Tests: the shadow thread waits for a live session to end.
  bool paused() const { return gate_.waiting() > 0; }
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  using Job = ShadowJob;
  void ThreadMain();
  void LoadCandidate(const std::function<bool()>& abandon);
  std::shared_ptr<PolicyReloader> NewCandidateReloader();
  std::shared_ptr<PolicyReloader> CandidateReloader() const;
  std::shared_ptr<const PolicySet> Candidate() const;
  void RunJob(Job job);
  // A configuration of our own for `sources` matching `want` (generation and hash), loaded
  // without kept state; reloaded when `want` changes.
  void EnsureExplainSet(ShadowExplainSet& slot, const PolicySources& sources, uint64_t generation,
                        const std::string& hash);
  // Runs `set` on the job's snapshot with an ExplainRecorder for `pods`: pod → explain JSON.
  Result<std::map<std::string, std::string>> Explain(const PolicySet& set, const Job& job,
                                                    const std::set<std::string>& pods);

  ShadowOptions options_;
  PolicySources sources_;
  ProviderFactory factory_;
  const PolicyReloader& live_;
  ServerMetrics* metrics_;
  // Replaced by a fresh one when the candidate's path disappears, so that a candidate created
  // again is loaded from what it then holds and never falls back on the removed one.
  std::shared_ptr<PolicyReloader> candidate_;
  mutable std::mutex candidate_mu_;  // candidate_ itself
  std::mutex load_mu_;               // one LoadCandidate at a time
  std::unique_ptr<ConfigWatcher> watcher_;
  std::atomic<bool> present_{false};  // the candidate's path exists

  // Only the shadow thread touches these.
  ShadowExplainSet live_explain_, shadow_explain_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool busy_ = false;        // a job is queued or running
  std::optional<Job> offered_;  // the snapshot of the live session in flight
  std::optional<Job> job_;      // the next job for the thread
  std::deque<ShadowEntry> log_;
  std::string load_error_;   // the candidate's last load error ("" after a good load)
  std::string last_error_;   // the last shadow session's error
  int64_t skipped_busy_ = 0, skipped_late_ = 0, skipped_error_ = 0;
  int64_t differ_bind_ = 0, differ_evict_ = 0, differ_pipeline_ = 0;
  std::atomic<int64_t> sessions_{0};
  PauseGate gate_;  // closed while a live session runs
  std::thread thread_;
};

// The binding a live session runs against while a shadow is configured: the live binding
// itself, plus the shadow's copy of each snapshot. The copy is taken on a thread of the tap's own
// (normal priority: it must finish before the live session does), while the live session runs:
// between the live snapshot and the live session's Apply nothing the loop owns changes the
// cluster, so the copy is the state the live session decides on (informer events landing in
// between aside, as for any two reads of a cache). Apply waits for a copy in progress to end
// (the copy takes a fraction of a session) and cancels one not yet started, so the copy never
// sees this session's own decisions. `spec_at` gives the cluster's objects at `now`
// (ServeHooks::session_spec).
//
// A binding that keeps the objects its snapshot was built from (`kept`, ServeHooks::
// kept_session_spec: kiln serve on the Kubernetes API) needs no copy at all: the tap takes them
// right after the live snapshot and offers them as they are, the exact input of the live
// session, and the copier thread stays idle. That copy, a second walk over the whole cache while
// the live session ran, was most of what a shadow cost the live session.
class ShadowTapBinding : public ClusterBinding {
 public:
  ShadowTapBinding(ClusterBinding& inner, ShadowRunner& shadow,
                   std::function<ClusterSpec(TimeNs)> spec_at,
                   std::function<std::shared_ptr<const ClusterSpec>(TimeNs)> kept = nullptr);
  ~ShadowTapBinding() override;
  ShadowTapBinding(const ShadowTapBinding&) = delete;
  ShadowTapBinding& operator=(const ShadowTapBinding&) = delete;
  Result<Cluster> Snapshot(TimeNs now) override;
  void Apply(const SessionResult& r) override;

  // Copies cancelled because the live session finished first (tests).
  int64_t late_copies() const;

 private:
  enum class CopyState { kIdle, kRequested, kCopying };
  void CopierMain();

  ClusterBinding& inner_;
  ShadowRunner& shadow_;
  std::function<ClusterSpec(TimeNs)> spec_at_;
  std::function<std::shared_ptr<const ClusterSpec>(TimeNs)> kept_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  CopyState state_ = CopyState::kIdle;
  TimeNs copy_now_ = 0;
  std::map<std::string, std::string> copy_nominated_;
  bool stop_ = false;
  int64_t late_ = 0;
  std::thread copier_;
};

}  // namespace kiln::server
