#include "server/metrics.h"

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "server/policy_set.h"

namespace kiln::server {

namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// prometheus.ExponentialBuckets(start, factor, count), as Volcano declares its histograms.
Histogram::BucketBoundaries Exponential(double start, double factor, int count) {
  Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i) b.push_back(start * std::pow(factor, i));
  return b;
}

Family<Histogram>& HistogramFamily(prometheus::Registry& r, const std::string& name,
                                   const std::string& help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}
Family<Gauge>& GaugeFamily(prometheus::Registry& r, const std::string& name,
                           const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
Family<Counter>& CounterFamily(prometheus::Registry& r, const std::string& name,
                               const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

using Usage = SessionResult::QueueUsage;

// Volcano's per-queue gauges (queue.go): volcano_queue_<name>_milli_cpu ("<help> CPU count for
// one queue") and volcano_queue_<name>_memory_bytes ("<help> memory for one queue") of four
// figures, then volcano_queue_weight.
struct QueueFigure {
  const char* name;
  const char* help;
  double Usage::*milli_cpu;
  double Usage::*memory;
  bool deserved;  // set only when a plugin computed it at open; else the last value stays
};
constexpr QueueFigure kQueueFigures[] = {
    {"allocated", "Allocated", &Usage::allocated_milli_cpu, &Usage::allocated_memory, false},
    {"request", "Request", &Usage::request_milli_cpu, &Usage::request_memory, false},
    {"deserved", "Deserved", &Usage::deserved_milli_cpu, &Usage::deserved_memory, true},
    {"capacity", "Capacity", &Usage::capability_milli_cpu, &Usage::capability_memory, false},
};

std::vector<Family<Gauge>*> QueueGaugeFamilies(prometheus::Registry& r) {
  std::vector<Family<Gauge>*> out;
  for (const QueueFigure& f : kQueueFigures) {
    out.push_back(&GaugeFamily(r, fmt::format("volcano_queue_{}_milli_cpu", f.name),
                               fmt::format("{} CPU count for one queue", f.help)));
    out.push_back(&GaugeFamily(r, fmt::format("volcano_queue_{}_memory_bytes", f.name),
                               fmt::format("{} memory for one queue", f.help)));
  }
  out.push_back(&GaugeFamily(r, "volcano_queue_weight", "Weight for one queue"));
  return out;
}

// Whether a reload of `kind` is counted: one that changed nothing is not.
bool CountedReload(ReloadOutcome::Kind kind) { return kind != ReloadOutcome::Kind::kUnchanged; }

}  // namespace

struct ServerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Registry& r = *registry;

  // Volcano's scheduler families (pkg/scheduler/metrics/metrics.go, queue.go).
  Histogram& e2e = HistogramFamily(r, "volcano_e2e_scheduling_latency_milliseconds",
                                   "E2e scheduling latency in milliseconds (scheduling algorithm "
                                   "+ binding)")
                       .Add({}, Exponential(5, 2, 15));
  Histogram& open_session =
      HistogramFamily(r, "volcano_open_session_duration_milliseconds",
                      "Duration of opening a scheduling session in milliseconds")
          .Add({}, Exponential(5, 2, 15));
  Family<Histogram>& action = HistogramFamily(r, "volcano_action_scheduling_latency_milliseconds",
                                              "Action scheduling latency in milliseconds");
  Family<Histogram>& plugin = HistogramFamily(r, "volcano_plugin_scheduling_latency_milliseconds",
                                              "Plugin scheduling latency in milliseconds");
  Histogram& task = HistogramFamily(r, "volcano_task_scheduling_latency_milliseconds",
                                    "Task scheduling latency in milliseconds (task create to task "
                                    "bound to a node)")
                        .Add({}, Exponential(5, 2, 15));
  Family<Counter>& attempts = CounterFamily(
      r, "volcano_schedule_attempts_total",
      "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not "
      "be scheduled, while 'error' means an internal scheduler problem.");
  Gauge& victims = GaugeFamily(r, "volcano_pod_preemption_victims",
                               "Number of selected preemption victims")
                       .Add({});
  Counter& preemption_attempts = CounterFamily(r, "volcano_total_preemption_attempts",
                                               "Total preemption attempts in the cluster till now")
                                     .Add({});
  Family<Gauge>& unschedule_task = GaugeFamily(r, "volcano_unschedule_task_count",
                                               "Number of tasks could not be scheduled");
  Gauge& unschedule_job = GaugeFamily(r, "volcano_unschedule_job_count",
                                      "Number of jobs could not be scheduled")
                              .Add({});
  // Per queue: kQueueFigures' CPU and memory gauges in order, then the weight.
  std::vector<Family<Gauge>*> queue_gauges = QueueGaugeFamilies(r);

  // Kiln's own.
  Family<Counter>& faults = CounterFamily(
      r, "kiln_policy_faults_total",
      "Policy faults at run time (the plugin abstained for that call), by plugin, handler and "
      "kind (host, memory, budget, time)");
  Family<Counter>& reloads = CounterFamily(r, "kiln_config_reloads_total",
                                           "Configuration reload attempts, by result");
  Gauge& generation = GaugeFamily(r, "kiln_config_generation",
                                  "Generation of the active configuration (1 = as started)")
                          .Add({});
  // Kiln's own families follow Prometheus' conventions (base unit seconds); Volcano's keep
  // Volcano's names and milliseconds, which is what its dashboards query.
  Family<Histogram>& bind = HistogramFamily(r, "kiln_bind_latency_seconds",
                                            "Round trip of a bind write to the API server");
  Family<Counter>& relists = CounterFamily(
      r, "kiln_watch_relists_total", "Full LISTs of a resource after its watch could not resume");
  Gauge& leader = GaugeFamily(r, "kiln_leader", "1 while this replica holds the leader lease")
                      .Add({});
  Counter& sessions = CounterFamily(r, "kiln_sessions_total", "Scheduling sessions run").Add({});

  // The shadow candidate's (server/shadow.h).
  Counter& shadow_sessions =
      CounterFamily(r, "kiln_shadow_sessions_total",
                    "Sessions the shadow candidate ran on a live session's snapshot")
          .Add({});
  Family<Counter>& shadow_differ = CounterFamily(
      r, "kiln_shadow_decisions_differ_total",
      "Pods the shadow candidate decided otherwise than the live session, by kind (bind: bound "
      "elsewhere or only on one side; evict: evicted on one side only; pipeline: pipelined "
      "elsewhere or only on one side)");
  Family<Counter>& shadow_skipped = CounterFamily(
      r, "kiln_shadow_sessions_skipped_total",
      "Live sessions the shadow candidate did not mirror, by reason (busy: the previous shadow "
      "session still ran; late: the copy of the cluster had not started when the live session "
      "ended; error: the shadow session failed)");
  Family<Counter>& shadow_faults = CounterFamily(
      r, "kiln_shadow_policy_faults_total",
      "The shadow candidate's policy faults, by plugin, handler and kind (never counted in "
      "kiln_policy_faults_total)");
  Histogram& shadow_duration =
      HistogramFamily(r, "kiln_shadow_session_duration_seconds",
                      "Time of one shadow session (building its snapshot, the session, the "
                      "comparison), on the shadow's thread")
          .Add({}, Exponential(0.001, 2, 15));
  Histogram& shadow_loop_cost =
      HistogramFamily(r, "kiln_shadow_loop_cost_seconds",
                      "Time the loop's thread spent handing one session to the shadow (copying "
                      "the cluster's objects and the decisions); the rest runs on the shadow's thread")
          .Add({}, Exponential(0.0001, 2, 15));
  Family<Counter>& shadow_reloads = CounterFamily(
      r, "kiln_shadow_config_reloads_total", "Shadow candidate load attempts, by result");
  Gauge& shadow_generation = GaugeFamily(r, "kiln_shadow_config_generation",
                                         "Generation of the shadow candidate's configuration")
                                 .Add({});
  Gauge& shadow_active = GaugeFamily(r, "kiln_shadow_active",
                                     "1 while a shadow candidate is loaded and mirrors sessions")
                             .Add({});

  std::mutex mu;  // the maps below (families themselves are thread-safe)
  std::map<std::string, Gauge*> unschedulable_jobs;
  std::set<std::string> queues;
};

ServerMetrics::ServerMetrics() : impl_(std::make_unique<Impl>()) {
  // The result labels exist from the start, so a rate() over them is defined before the first
  // failure.
  for (const char* result : {"scheduled", "unschedulable", "error"})
    impl_->attempts.Add({{"result", result}});
  for (const char* result : {"ok", "rejected", "abandoned"}) {
    impl_->reloads.Add({{"result", result}});
    impl_->shadow_reloads.Add({{"result", result}});
  }
  for (const char* kind : {"bind", "evict", "pipeline"}) impl_->shadow_differ.Add({{"kind", kind}});
  for (const char* reason : {"busy", "late", "error"})
    impl_->shadow_skipped.Add({{"reason", reason}});
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::ObserveSession(const SessionResult& s, double e2e_ms) {
  Impl& m = *impl_;
  m.sessions.Increment();
  m.e2e.Observe(e2e_ms);
  m.open_session.Observe(s.open_micros / 1000.0);
  for (const auto& [name, micros] : s.action_micros)
    m.action.Add({{"action", name}}, Exponential(5, 2, 15)).Observe(micros / 1000.0);
  for (const auto& t : s.plugin_timings)
    m.plugin.Add({{"plugin", t.plugin}, {"OnSession", t.on_session}}, Exponential(5, 2, 15))
        .Observe(t.micros / 1000.0);
  for (TimeNs created : s.bound_created)
    if (created > 0 && s.time >= created) m.task.Observe((s.time - created) / 1e6);
  m.attempts.Add({{"result", "scheduled"}}).Increment(static_cast<double>(s.binds.size()));
  m.attempts.Add({{"result", "unschedulable"}})
      .Increment(static_cast<double>(s.unschedulable.size()));
  m.victims.Set(static_cast<double>(s.evictions.size()));
  m.preemption_attempts.Increment(s.preemption_attempts);
  for (const PolicyFaultPoint& f : s.fault_points)
    m.faults.Add({{"plugin", f.plugin}, {"point", f.point}, {"kind", f.kind}}).Increment();

  std::lock_guard<std::mutex> lock(m.mu);
  // volcano_unschedule_task_count{job_id}: jobs that have no unschedulable task any more drop
  // out, so the family lists exactly the jobs blocked now.
  for (auto it = m.unschedulable_jobs.begin(); it != m.unschedulable_jobs.end();) {
    if (s.unschedulable_tasks_per_job.count(it->first) == 0) {
      m.unschedule_task.Remove(it->second);
      it = m.unschedulable_jobs.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [job, count] : s.unschedulable_tasks_per_job) {
    Gauge*& g = m.unschedulable_jobs[job];
    if (g == nullptr) g = &m.unschedule_task.Add({{"job_id", job}});
    g->Set(count);
  }
  m.unschedule_job.Set(static_cast<double>(s.unschedulable_tasks_per_job.size()));
  std::set<std::string> seen;
  for (const auto& q : s.queues) {
    prometheus::Labels l{{"queue_name", q.name}};
    for (size_t i = 0; i < std::size(kQueueFigures); ++i) {
      const QueueFigure& f = kQueueFigures[i];
      if (f.deserved && !q.has_deserved) continue;
      m.queue_gauges[2 * i]->Add(l).Set(q.*f.milli_cpu);
      m.queue_gauges[2 * i + 1]->Add(l).Set(q.*f.memory);
    }
    m.queue_gauges.back()->Add(l).Set(static_cast<double>(q.weight));
    seen.insert(q.name);
  }
  // A deleted queue's series go away (Volcano's DeleteQueueMetrics).
  for (const std::string& name : m.queues) {
    if (seen.count(name)) continue;
    prometheus::Labels l{{"queue_name", name}};
    for (Family<Gauge>* f : m.queue_gauges) f->Remove(&f->Add(l));
  }
  m.queues = std::move(seen);
}

void ServerMetrics::ObserveSessionError() {
  impl_->attempts.Add({{"result", "error"}}).Increment();
}

void ServerMetrics::ObserveReload(const ReloadOutcome& outcome, const PolicySet* active) {
  // The first load is not a reload.
  if (CountedReload(outcome.kind) && !outcome.initial)
    impl_->reloads.Add({{"result", std::string(ToString(outcome.kind))}}).Increment();
  if (active != nullptr) impl_->generation.Set(static_cast<double>(active->generation));
}

void ServerMetrics::ObserveBind(double latency_ms, std::string_view result) {
  impl_->bind.Add({{"result", std::string(result)}}, Exponential(0.001, 2, 15))
      .Observe(latency_ms / 1000.0);
}

void ServerMetrics::CountRelists(std::string_view resource, int64_t n) {
  impl_->relists.Add({{"resource", std::string(resource)}}).Increment(static_cast<double>(n));
}

void ServerMetrics::SetLeader(bool leader) { impl_->leader.Set(leader ? 1 : 0); }

void ServerMetrics::ObserveShadowSession(const SessionResult& shadow, double seconds,
                                         const ShadowDiffer& differ) {
  Impl& m = *impl_;
  m.shadow_sessions.Increment();
  m.shadow_duration.Observe(seconds);
  m.shadow_differ.Add({{"kind", "bind"}}).Increment(static_cast<double>(differ.bind));
  m.shadow_differ.Add({{"kind", "evict"}}).Increment(static_cast<double>(differ.evict));
  m.shadow_differ.Add({{"kind", "pipeline"}}).Increment(static_cast<double>(differ.pipeline));
  for (const PolicyFaultPoint& f : shadow.fault_points)
    m.shadow_faults.Add({{"plugin", f.plugin}, {"point", f.point}, {"kind", f.kind}}).Increment();
}

void ServerMetrics::CountShadowSkipped(std::string_view reason) {
  impl_->shadow_skipped.Add({{"reason", std::string(reason)}}).Increment();
}

void ServerMetrics::ObserveShadowReload(const ReloadOutcome& outcome, const PolicySet* active) {
  // Unlike the live configuration's, the candidate's first load counts too: it happens after
  // serving started, and an operator watching a rollout wants to see it fail.
  if (CountedReload(outcome.kind))
    impl_->shadow_reloads.Add({{"result", std::string(ToString(outcome.kind))}}).Increment();
  if (active != nullptr) impl_->shadow_generation.Set(static_cast<double>(active->generation));
}

void ServerMetrics::ObserveShadowLoopCost(double seconds) { impl_->shadow_loop_cost.Observe(seconds); }

void ServerMetrics::SetShadowActive(bool active) { impl_->shadow_active.Set(active ? 1 : 0); }

std::string ServerMetrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

}  // namespace kiln::server
