#pragma once
// The scheduler's Prometheus metrics: Volcano's scheduler families under their exact names,
// labels, units (milliseconds) and buckets (pkg/scheduler/metrics), so existing Volcano
// dashboards work against Kiln, plus Kiln's own (policy faults, reloads, binds, watch relists).
// prometheus-cpp stays inside metrics.cc; callers pass plain values.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/cluster.h"

namespace kiln::server {

struct ReloadOutcome;
struct PolicySet;

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // One session: `e2e_ms` is the whole cycle (snapshot, session, handing decisions to the
  // binding), volcano_e2e_scheduling_latency_milliseconds; the rest comes from the result.
  void ObserveSession(const SessionResult& result, double e2e_ms);
  // A cycle that failed before or inside the session (schedule_attempts_total{result="error"}).
  void ObserveSessionError();
  void ObserveReload(const ReloadOutcome& outcome, const PolicySet* active);
  // A bind write's round trip; `result` is "ok", "conflict" or "error".
  void ObserveBind(double latency_ms, std::string_view result);
  void CountRelists(std::string_view resource, int64_t n = 1);
  void SetLeader(bool leader);

  // The shadow candidate (server/shadow.h), in families of its own (kiln_shadow_*): nothing a
  // shadow does moves the live families above.
  struct ShadowDiffer {
    int64_t bind = 0, evict = 0, pipeline = 0;
  };
  // A shadow session that ran: how long it took, what differed from the live session it mirrored
  // and the candidate's policy faults.
  void ObserveShadowSession(const SessionResult& shadow, double seconds, const ShadowDiffer& differ);
  // A live session the candidate did not run: "busy" (the previous shadow session still ran),
  // "late" (the copy of the cluster had not started when the live session ended), "error" (the
  // shadow session failed).
  void CountShadowSkipped(std::string_view reason);
  void ObserveShadowReload(const ReloadOutcome& outcome, const PolicySet* active);
  void SetShadowActive(bool active);
  // What mirroring one session cost the loop's thread: copying the cluster's objects after the
  // snapshot and the decisions after the session.
  void ObserveShadowLoopCost(double seconds);

  // The text exposition format (version 0.0.4) of every family.
  std::string Serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::server
