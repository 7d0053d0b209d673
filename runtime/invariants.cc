#include "runtime/invariants.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <variant>

#include "runtime/env_flag.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/session.h"

namespace kiln {

namespace {

std::atomic<int> g_forced{-1};  // -1: follow the environment

bool EnvEnabled() { return EnvFlagOn("KILN_CHECK_INVARIANTS"); }

// Sums of whole millicores and bytes are exact in doubles, but plugins and Volcano's own
// arithmetic may go through fractions (shares, ratios): compare with a tolerance relative to the
// magnitude.
bool Near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

bool SameResource(const Resource& a, const Resource& b) {
  for (int id = 0; id < kMaxResources; ++id)
    if (!Near(a.values[id], b.values[id])) return false;
  return true;
}

// The dimensions where `a` exceeds `b`, named ("cpu 5000 > 4000").
std::string Excess(const Resource& a, const Resource& b) {
  std::string out;
  for (int id = 0; id < ResourceRegistry::Count(); ++id) {
    if (a.values[id] <= b.values[id] + 1e-6 * std::max(1.0, std::fabs(b.values[id]))) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {} > {}", ResourceRegistry::Name(static_cast<ResourceId>(id)),
                       a.values[id], b.values[id]);
  }
  return out;
}

std::string Values(const Resource& r) {
  std::string out;
  for (int id = 0; id < ResourceRegistry::Count(); ++id)
    if (r.values[id] != 0) out += fmt::format("{}={} ", ResourceRegistry::Name(static_cast<ResourceId>(id)), r.values[id]);
  return out;
}

// Volcano's unevict returns a victim to Running even when it was Bound: a discard may turn Bound
// into Running, so the snapshot does not tell them apart.
TaskStatus Comparable(TaskStatus s) { return s == TaskStatus::Bound ? TaskStatus::Running : s; }

}  // namespace

bool InvariantCheckingEnabled() {
  int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return forced == 1;
  static const bool env = EnvEnabled();
  return env;
}

void SetInvariantChecking(bool on) { g_forced.store(on ? 1 : 0, std::memory_order_relaxed); }

InvariantChecker::InvariantChecker(Session& ssn) : ssn_(ssn) {
  const Cluster& c = ssn.cluster();
  over_at_open_.assign(c.nodes().size(), false);
  for (const Node* n : c.nodes())
    over_at_open_[static_cast<size_t>(n->index)] =
        !n->used.LessEqual(n->allocatable, DimensionDefault::Zero);
  binds_checked_ = ssn.decisions().binds.size();

  // Preempt's victims are bounded by priority's rule only when its Preemptable answer is the last
  // word: victims are intersected plugin by plugin within a tier, but an empty intersection lets
  // the next plugin of the tier start over, and an empty answer hands the choice to the next
  // tier (volcano-semantics.md §2.2).
  std::set<int> tiers;
  std::string last;
  for (const Session::HandlerUse& h : ssn.HandlerCoverage()) {
    if (h.point != ExtensionPoint::Preemptable) continue;
    for (const PluginSlot& slot : ssn.plugins())
      if (slot.name == h.plugin) tiers.insert(slot.tier);
    last = h.plugin;
  }
  priority_decides_preempt_ = tiers.size() == 1 && last == "priority";
}

void InvariantChecker::Violation(std::string what) {
  std::string v = fmt::format("{}: {}", action_, what);
  spdlog::debug("invariant violated in {}: {}", ssn_.uid(), v);
  violations_.push_back(std::move(v));
}

void InvariantChecker::BeginAction(std::string_view action) { action_ = std::string(action); }

void InvariantChecker::AfterAction() {
  CheckNodes();
  CheckHyperNodes();
  CheckJobs();
  CheckBinds();
  CheckQueueFigures();
}

void InvariantChecker::CheckNodes() {
  const Cluster& c = ssn_.cluster();
  std::vector<int> on_nodes(c.tasks().size(), 0);
  for (const Node* n : c.nodes()) {
    Resource used, releasing, pipelined, nonzero;
    for (size_t i = 0; i < n->tasks.size(); ++i) {
      const Task* t = n->tasks[i];
      ++on_nodes[static_cast<size_t>(t->index)];
      if (t->node != n || t->node_pos != static_cast<int32_t>(i))
        Violation(fmt::format("node {} lists task {} whose node is {} at position {}", n->name,
                              t->Key(), t->node ? t->node->name : "none", t->node_pos));
      switch (t->node_status) {
        case TaskStatus::Pipelined:
          pipelined.Add(t->resreq());
          break;
        case TaskStatus::Releasing:
          releasing.Add(t->resreq());
          used.Add(t->resreq());
          break;
        default:
          used.Add(t->resreq());
          break;
      }
      AddNonZeroRequest(nonzero, t->resreq(), 1.0);
    }
    if (!SameResource(used, n->used))
      Violation(fmt::format("node {} used is {}but its tasks add up to {}", n->name, Values(n->used), Values(used)));
    if (!SameResource(releasing, n->releasing))
      Violation(fmt::format("node {} releasing is {}but its tasks add up to {}", n->name,
                            Values(n->releasing), Values(releasing)));
    if (!SameResource(pipelined, n->pipelined))
      Violation(fmt::format("node {} pipelined is {}but its pipelined tasks add up to {}", n->name,
                            Values(n->pipelined), Values(pipelined)));
    if (!Near(nonzero.cpu(), n->nonzero_requested.cpu()) || !Near(nonzero.memory(), n->nonzero_requested.memory()))
      Violation(fmt::format("node {} non-zero requests are {}but its tasks add up to {}", n->name,
                            Values(n->nonzero_requested), Values(nonzero)));
    Resource idle_plus_used = n->idle;
    idle_plus_used.Add(n->used);
    for (int id = 0; id < ResourceRegistry::Count(); ++id)
      if (n->allocatable.Has(static_cast<ResourceId>(id)) &&
          !Near(idle_plus_used.values[id], n->allocatable.values[id]))
        Violation(fmt::format("node {} idle + used is not its allocatable in {}", n->name,
                              ResourceRegistry::Name(static_cast<ResourceId>(id))));
    Node expected;
    expected.idle = n->idle;
    expected.releasing = n->releasing;
    expected.pipelined = n->pipelined;
    expected.RefreshFitFuture();
    for (int id = 0; id < kMaxResources; ++id)
      if (!Near(expected.fit_future[id], n->fit_future[id])) {
        Violation(fmt::format("node {} fit cache is stale", n->name));
        break;
      }
    if (over_at_open_[static_cast<size_t>(n->index)]) continue;
    if (std::string e = Excess(n->used, n->allocatable); !e.empty())
      Violation(fmt::format("node {} over its allocatable: {}", n->name, e));
    Resource future = n->idle;
    future.Add(n->releasing);
    if (std::string e = Excess(n->pipelined, future); !e.empty())
      Violation(fmt::format("node {}: its pipelined pods exceed idle + releasing: {}", n->name, e));
  }
  for (const Task* t : c.tasks()) {
    int on = on_nodes[static_cast<size_t>(t->index)];
    if (on > 1) Violation(fmt::format("task {} is on {} nodes", t->Key(), on));
    if (t->node != nullptr && on == 0)
      Violation(fmt::format("task {} names node {} but no node lists it", t->Key(), t->node->name));
    if (t->node == nullptr && (AllocatedStatus(t->status) || t->status == TaskStatus::Pipelined ||
                               t->status == TaskStatus::Releasing))
      Violation(fmt::format("task {} is {} but on no node", t->Key(), ToString(t->status)));
    if (t->node != nullptr && t->status == TaskStatus::Pending)
      Violation(fmt::format("task {} is Pending but on node {}", t->Key(), t->node->name));
  }
}

void InvariantChecker::CheckHyperNodes() {
  const HyperNodeTree* tree = ssn_.cluster().hyper_nodes();
  if (tree == nullptr) return;
  for (const HyperNode* h : tree->all()) {
    if (!h->used_exact) continue;
    Resource fresh;
    for (const Node* n : h->nodes) {
      fresh.Add(n->used);
      fresh.Add(n->pipelined);
    }
    if (fresh.present != h->used_sum.present ||
        std::memcmp(fresh.values, h->used_sum.values, sizeof fresh.values) != 0)
      Violation(fmt::format("hyperNode {} used is {}but its nodes add up to {}", h->name,
                            Values(h->used_sum), Values(fresh)));
  }
}

void InvariantChecker::CheckJobs() {
  for (const Job* j : ssn_.cluster().jobs()) {
    std::array<int32_t, kTaskStatusCount> counts{};
    int64_t ready = 0, waiting = 0, pending_best_effort = 0;
    Resource allocated;
    for (const Task* t : j->tasks) {
      ++counts[static_cast<size_t>(StatusSlot(t->status))];
      switch (t->status) {
        case TaskStatus::Bound:
        case TaskStatus::Binding:
        case TaskStatus::Running:
        case TaskStatus::Allocated:
        case TaskStatus::Succeeded:
          ++ready;
          break;
        case TaskStatus::Pipelined:
          ++waiting;
          break;
        case TaskStatus::Pending:
          if (t->init_resreq().IsEmpty()) ++pending_best_effort;
          break;
        default:
          break;
      }
      if (AllocatedStatus(t->status)) allocated.Add(t->resreq());
    }
    for (int i = 0; i < kTaskStatusCount; ++i)
      if (counts[static_cast<size_t>(i)] != static_cast<int32_t>(j->by_status[static_cast<size_t>(i)].size())) {
        Violation(fmt::format("job {}: its status index disagrees with its tasks' statuses", j->uid));
        break;
      }
    if (ready != j->ready_num || waiting != j->waiting_num || pending_best_effort != j->pending_best_effort)
      Violation(fmt::format("job {}: counters ready {} waiting {} pending best-effort {}, its tasks say {} {} {}",
                            j->uid, j->ready_num, j->waiting_num, j->pending_best_effort, ready, waiting,
                            pending_best_effort));
    if (!SameResource(allocated, j->allocated))
      Violation(fmt::format("job {}: allocated is {}but its tasks add up to {}", j->uid, Values(j->allocated),
                            Values(allocated)));
  }
}

void InvariantChecker::CheckBinds() {
  const auto& binds = ssn_.decisions().binds;
  std::set<const Job*> jobs;
  std::set<const Task*> seen;
  for (size_t i = 0; i < binds.size(); ++i) {
    if (!seen.insert(binds[i].task).second) Violation(fmt::format("task {} bound twice", binds[i].task->Key()));
    if (i >= binds_checked_ && binds[i].task->job != nullptr) jobs.insert(binds[i].task->job);
  }
  binds_checked_ = binds.size();
  // A committed statement of allocate binds a gang only once it is ready; later operations of
  // the same action must not have undone that (backfill binds one best-effort pod at a time).
  if (action_ != "allocate") return;
  for (const Job* j : jobs)
    if (!ssn_.JobReady(j))
      Violation(fmt::format("job {} got binds but is not ready ({} ready of minMember {})", j->uid,
                            j->ready_num, j->min_available));
}

void InvariantChecker::CheckQueueFigures() {
  for (const Queue* q : ssn_.cluster().queues()) {
    for (const auto& [plugin, figures] : ShowQueueFigures(ssn_, q)) {
      for (const Figure& f : figures) {
        if (const double* d = std::get_if<double>(&f.value)) {
          if (f.name.find("share") != std::string::npos && *d < -1e-9)
            Violation(fmt::format("queue {}: {}'s {} is negative ({})", q->name, plugin, f.name, *d));
        } else if (const Resource* r = std::get_if<Resource>(&f.value)) {
          for (int id = 0; id < ResourceRegistry::Count(); ++id)
            if (r->values[id] < -1e-6 * std::max(1.0, std::fabs(r->values[id]))) {
              Violation(fmt::format("queue {}: {}'s {} is negative in {} ({})", q->name, plugin, f.name,
                                    ResourceRegistry::Name(static_cast<ResourceId>(id)), r->values[id]));
              break;
            }
        }
      }
    }
  }
}

// The snapshot is raw bytes, not text: a soak session with thousands of pods takes one per
// statement, and formatting them was most of the soak's time. Tasks, nodes and jobs are
// fixed-size records in cluster order, so a difference is located by its offset and decoded
// only then; the plugins' queue figures (a few queues) follow as text.
namespace {

struct SnapshotLayout {
  size_t resources = 0;  // dimensions stored per Resource
  size_t task_bytes = 0, node_bytes = 0, job_bytes = 0;
  size_t tasks = 0, nodes = 0, jobs = 0;
  size_t TasksEnd() const { return tasks * task_bytes; }
  size_t NodesEnd() const { return TasksEnd() + nodes * node_bytes; }
  size_t JobsEnd() const { return NodesEnd() + jobs * job_bytes; }
};

SnapshotLayout Layout(const Cluster& c) {
  SnapshotLayout l;
  l.resources = static_cast<size_t>(ResourceRegistry::Count());
  l.task_bytes = 3 * sizeof(int32_t);
  l.node_bytes = 5 * l.resources * sizeof(double) + 2 * sizeof(uint64_t);
  l.job_bytes = 9 * sizeof(int64_t) + (kTaskStatusCount - 1) * sizeof(uint64_t) + l.resources * sizeof(double);
  l.tasks = c.tasks().size();
  l.nodes = c.nodes().size();
  l.jobs = c.jobs().size();
  return l;
}

template <typename T>
void Put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void PutResource(std::string& out, const Resource& r, size_t n) {
  out.append(reinterpret_cast<const char*>(r.values), n * sizeof(double));
}

template <typename T>
T Get(const std::string& in, size_t offset) {
  T v;
  std::memcpy(&v, in.data() + offset, sizeof v);
  return v;
}

}  // namespace

std::string InvariantChecker::Snapshot() const {
  // Not compared: what a discard records on purpose (the tasks' last-transaction fields) and the
  // eviction flag a pipelining leaves behind (Volcano's unpipeline does not reset it either).
  const Cluster& c = ssn_.cluster();
  const SnapshotLayout l = Layout(c);
  std::string out;
  out.reserve(l.JobsEnd() + 256);
  // A task's node_status means something only while it is on a node.
  for (const Task* t : c.tasks()) {
    Put(out, static_cast<uint32_t>(Comparable(t->status)));
    Put(out, static_cast<int32_t>(t->node ? t->node->index : -1));
    Put(out, t->node ? static_cast<uint32_t>(Comparable(t->node_status)) : 0u);
  }
  for (const Node* n : c.nodes()) {
    for (const Resource* r : {&n->idle, &n->used, &n->releasing, &n->pipelined, &n->nonzero_requested})
      PutResource(out, *r, l.resources);
    Put(out, static_cast<uint64_t>(n->tasks.size()));
    Put(out, static_cast<uint64_t>(n->affinity_tasks.size()));
  }
  const size_t bound = static_cast<size_t>(StatusSlot(TaskStatus::Bound));
  const size_t running = static_cast<size_t>(StatusSlot(TaskStatus::Running));
  for (const Job* j : c.jobs()) {
    for (int64_t v : {j->task_num, j->ready_num, j->waiting_num, j->valid_num, j->pending_best_effort,
                      j->roles_short_valid, j->roles_short_ready, j->roles_short_pipelined,
                      j->roles_short_starving})
      Put(out, v);
    for (size_t i = 0; i < static_cast<size_t>(kTaskStatusCount); ++i) {
      if (i == running) continue;
      uint64_t count = j->by_status[i].size();
      if (i == bound) count += j->by_status[running].size();
      Put(out, count);
    }
    PutResource(out, j->allocated, l.resources);
  }
  for (const Queue* q : c.queues()) {
    out += fmt::format("q {} {}", q->name, Values(q->allocated));
    for (const auto& [plugin, figures] : ShowQueueFigures(ssn_, q))
      for (const Figure& f : figures) {
        if (const double* d = std::get_if<double>(&f.value))
          out += fmt::format(" {}.{}={}", plugin, f.name, *d);
        else
          out += fmt::format(" {}.{}={}", plugin, f.name, Values(std::get<Resource>(f.value)));
      }
    out += "\n";
  }
  return out;
}

void InvariantChecker::CompareDiscard(const std::string& before) {
  std::string after = Snapshot();
  if (after == before) return;
  const Cluster& c = ssn_.cluster();
  const SnapshotLayout l = Layout(c);
  size_t at = 0;
  while (at < before.size() && at < after.size() && before[at] == after[at]) ++at;
  std::string what;
  if (before.size() < l.JobsEnd() || after.size() < l.JobsEnd()) {
    what = "the snapshot changed size";
  } else if (at < l.TasksEnd()) {
    size_t i = at / l.task_bytes, o = i * l.task_bytes;
    const Task* t = c.tasks()[i];
    auto node = [&](const std::string& s) {
      int32_t idx = Get<int32_t>(s, o + 4);
      return idx < 0 ? std::string("no node") : c.nodes()[static_cast<size_t>(idx)]->name;
    };
    what = fmt::format("task {} was {} on {}, is {} on {}", t->Key(),
                       ToString(static_cast<TaskStatus>(Get<uint32_t>(before, o))), node(before),
                       ToString(static_cast<TaskStatus>(Get<uint32_t>(after, o))), node(after));
  } else if (at < l.NodesEnd()) {
    size_t i = (at - l.TasksEnd()) / l.node_bytes;
    size_t field = (at - l.TasksEnd() - i * l.node_bytes) / std::max<size_t>(1, l.resources * sizeof(double));
    static const char* const kFields[] = {"idle", "used", "releasing", "pipelined", "non-zero requests", "task count"};
    what = fmt::format("node {}: its {} changed", c.nodes()[i]->name, kFields[std::min<size_t>(field, 5)]);
  } else if (at < l.JobsEnd()) {
    size_t i = (at - l.NodesEnd()) / l.job_bytes;
    what = fmt::format("job {}: its counters or allocation changed", c.jobs()[i]->uid);
  } else {
    // Queue lines: name the first that differs.
    auto line = [&](const std::string& s) {
      size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
      b = (b == std::string::npos || b < l.JobsEnd()) ? l.JobsEnd() : b + 1;
      size_t e = s.find('\n', b);
      return s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    };
    what = fmt::format("before `{}`, after `{}`", line(before), line(after));
  }
  Violation("a discarded statement did not restore the session: " + what);
}

void InvariantChecker::OnEvict(const Task* victim, std::string_view reason) {
  if (reason != "preempt" && reason != "reclaim") return;
  if (!victim->preemptable) Violation(fmt::format("{} evicts {}, which is not preemptable", reason, victim->Key()));
  bool allowed = reason == "reclaim" ? victim->status == TaskStatus::Running
                                     : victim->status == TaskStatus::Running || victim->status == TaskStatus::Bound;
  if (!allowed)
    Violation(fmt::format("{} evicts {}, which is {}", reason, victim->Key(), ToString(victim->status)));
}

void InvariantChecker::OnPreemption(const Task* preemptor, const std::vector<const Task*>& victims) {
  if (action_ != "preempt" && action_ != "reclaim") return;
  if (preemptor->preemption_policy == PreemptionPolicy::Never)
    Violation(fmt::format("{} evicted for {}, whose preemptionPolicy is Never", action_, preemptor->Key()));
  const Job* pj = preemptor->job;
  if (pj == nullptr) return;
  for (const Task* v : victims) {
    const Job* vj = v->job;
    if (vj == nullptr) continue;
    if (action_ == "preempt") {
      if (vj->queue != pj->queue)
        Violation(fmt::format("preempt took {} from queue {} for {} of queue {}", v->Key(),
                              vj->queue ? vj->queue->name : "?", preemptor->Key(), pj->queue ? pj->queue->name : "?"));
      if (!priority_decides_preempt_) continue;
      if (vj != pj && vj->priority >= pj->priority)
        Violation(fmt::format("preempt took {} (job priority {}) for {} (job priority {})", v->Key(), vj->priority,
                              preemptor->Key(), pj->priority));
      if (vj == pj && v->priority >= preemptor->priority)
        Violation(fmt::format("preempt took {} (task priority {}) for {} of the same job (task priority {})",
                              v->Key(), v->priority, preemptor->Key(), preemptor->priority));
    } else {
      if (vj->queue == pj->queue)
        Violation(fmt::format("reclaim took {} from the reclaimer's own queue", v->Key()));
      else if (vj->queue != nullptr && !vj->queue->reclaimable)
        Violation(fmt::format("reclaim took {} from queue {}, which is not reclaimable", v->Key(), vj->queue->name));
    }
  }
}

}  // namespace kiln
