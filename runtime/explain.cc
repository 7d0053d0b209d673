// kiln explain's evaluation (explain.h): per-node answers of every plugin through the session's
// own dispatchers, the job and queue answers, and the recorder the actions report to.

#include "runtime/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "runtime/actions/helpers.h"
#include "runtime/cluster.h"
#include "runtime/session.h"

namespace kiln {

namespace {

std::string JoinReasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (size_t i = 0; i < reasons.size(); ++i) out += (i ? ", " : "") + reasons[i];
  return out;
}

PluginAnswer AnswerOf(const PluginStatus& st) {
  return PluginAnswer{st.plugin, st.code, JoinReasons(st.reasons)};
}

}  // namespace

TaskExplain ExplainTask(const Session& ssn, const Task* t) {
  TaskExplain out;
  out.key = t->Key();
  out.job = t->job ? t->job->uid : "";
  // As the actions do: pre_predicate once per task before any node (it also prepares the
  // per-task state some predicates read).
  if (std::optional<PluginStatus> pre = ssn.PrePredicateFn(t)) out.pre_predicate = AnswerOf(*pre);

  const std::vector<Node*>& nodes = ssn.cluster().nodes();
  out.nodes.resize(nodes.size());
  std::vector<Node*> idle_group, future_group;
  std::vector<size_t> idle_pos, future_pos;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    NodeExplain& ne = out.nodes[i];
    ne.node = n->name;
    for (const PluginStatus& st : ssn.PredicateEach(t, n)) ne.predicates.push_back(AnswerOf(st));
    // Exactly ssn.PredicateFn (a failed pre_predicate is reported once, on the pod).
    if (std::optional<FitError> e = ssn.PredicateFn(t, n)) {
      ne.code = e->statuses.front().code;
      ne.reason = JoinReasons(e->statuses.front().reasons);
    }
    ResourceIdList insufficient;
    if (t->init_resreq.LessEqual(n->idle, DimensionDefault::Zero)) {
      ne.fits = "idle";
    } else if (actions::FitsFutureIdle(t->init_resreq, n, &insufficient)) {
      ne.fits = "futureIdle";
    } else {
      ne.fits = "none";
      for (ResourceId id : insufficient)
        ne.insufficient.emplace_back(ResourceRegistry::Name(id));
    }
    if (ne.code != StatusCode::Success) continue;
    ne.scored = true;
    ne.scores = ssn.NodeOrderEach(t, n, &ne.score_error);
    Result<double> sum = ssn.NodeOrderFn(t, n);
    ne.node_order = sum ? *sum : 0;
    ne.total = ne.node_order;
    if (ne.fits == "idle") {
      idle_group.push_back(nodes[i]);
      idle_pos.push_back(i);
    } else if (ne.fits == "futureIdle") {
      future_group.push_back(nodes[i]);
      future_pos.push_back(i);
    }
  }
  // Batch scores over the group allocate would score together.
  const bool idle = !idle_group.empty();
  const std::vector<Node*>& group = idle ? idle_group : future_group;
  const std::vector<size_t>& pos = idle ? idle_pos : future_pos;
  if (!group.empty()) {
    std::string error;
    auto batch = ssn.BatchNodeOrderEach(t, group, &error);
    for (const auto& [plugin, scores] : batch) {
      for (size_t k = 0; k < group.size(); ++k) {
        NodeExplain& ne = out.nodes[pos[k]];
        ne.batch_scores.emplace_back(plugin, scores[k]);
        ne.total += scores[k];
      }
    }
    if (!error.empty())
      for (size_t p : pos) out.nodes[p].score_error = error;
  }
  return out;
}

void ExplainJobsAndQueues(Session& ssn, Explanation& out) {
  // The show handlers report to the session's recorder; at open there is none yet.
  ExplainRecorder scratch;
  ExplainRecorder* recorder = ssn.explain();
  if (recorder == nullptr) {
    recorder = &scratch;
    ssn.set_explain(&scratch);
  }

  std::vector<Job*> jobs = ssn.cluster().jobs();
  std::stable_sort(jobs.begin(), jobs.end(),
                   [&](const Job* l, const Job* r) { return ssn.JobOrderFn(l, r) < 0; });
  out.jobs.clear();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job* j = jobs[i];
    JobExplain je;
    je.uid = j->uid;
    je.queue = j->queue ? j->queue->name : "";
    je.order = static_cast<int>(i) + 1;
    je.ready = ssn.JobReady(j);
    je.pipelined = ssn.JobPipelined(j);
    if (std::optional<ValidateResult> v = ssn.JobValid(j)) {
      je.valid = false;
      je.invalid_reason = fmt::format("{}: {}", v->plugin, v->reason);
      if (!v->message.empty()) je.invalid_reason += ": " + v->message;
    }
    je.starving = ssn.JobStarving(j);
    je.phase = std::string(ToString(j->phase));
    out.jobs.push_back(std::move(je));
  }
  std::sort(out.jobs.begin(), out.jobs.end(),
            [](const JobExplain& a, const JobExplain& b) { return a.uid < b.uid; });

  std::vector<Queue*> queues = ssn.cluster().queues();
  std::stable_sort(queues.begin(), queues.end(),
                   [&](const Queue* l, const Queue* r) { return ssn.QueueOrderFn(l, r) < 0; });
  out.queues.clear();
  for (size_t i = 0; i < queues.size(); ++i) {
    const Queue* q = queues[i];
    QueueExplain qe;
    qe.name = q->name;
    qe.order = static_cast<int>(i) + 1;
    qe.overused = ssn.Overused(q);
    recorder->BeginFigures(&qe.plugins);
    ssn.ShowQueueFn(q);
    recorder->BeginFigures(nullptr);
    out.queues.push_back(std::move(qe));
  }
  std::sort(out.queues.begin(), out.queues.end(),
            [](const QueueExplain& a, const QueueExplain& b) { return a.name < b.name; });
  if (recorder == &scratch) ssn.set_explain(nullptr);
}

Explanation ExplainAtOpen(Session& ssn, const std::set<std::string>& pods) {
  Explanation out;
  out.at_open = true;
  for (const Task* t : ssn.cluster().tasks()) {
    if (t->status != TaskStatus::Pending) continue;
    if (!pods.empty() && !pods.count(t->Key())) continue;
    out.tasks.push_back(ExplainTask(ssn, t));
  }
  ExplainJobsAndQueues(ssn, out);
  return out;
}

void ExplainRecorder::Record(const Session& ssn, std::string_view action, const Task* t,
                             std::string_view note) {
  if (!pods_.empty() && !pods_.count(t->Key())) return;
  TaskExplain te = ExplainTask(ssn, t);
  te.action = std::string(action);
  te.note = std::string(note);
  auto [it, inserted] = position_.try_emplace(te.key, explanation_.tasks.size());
  if (!inserted) {
    explanation_.tasks[it->second] = std::move(te);
    return;
  }
  explanation_.tasks.push_back(std::move(te));
}

void ExplainRecorder::Finish(Session& ssn) { ExplainJobsAndQueues(ssn, explanation_); }

void ExplainRecorder::ApplyResults(const SessionResult& result) {
  for (TaskExplain& te : explanation_.tasks) {
    if (auto it = result.binds.find(te.key); it != result.binds.end()) {
      te.result_kind = "bound";
      te.result_value = it->second;
    } else if (auto p = result.pipelined.find(te.key); p != result.pipelined.end()) {
      te.result_kind = "pipelined";
      te.result_value = p->second;
    } else {
      te.result_kind = "unschedulable";
      auto u = result.unschedulable.find(te.key);
      te.result_value = u != result.unschedulable.end() ? u->second : "";
    }
  }
}

void ExplainRecorder::AddFigure(std::string_view plugin, Figure f) {
  if (sink_ == nullptr) return;
  if (sink_->empty() || sink_->back().first != plugin) sink_->emplace_back(std::string(plugin), std::vector<Figure>{});
  sink_->back().second.push_back(std::move(f));
}

}  // namespace kiln
