// kiln explain's evaluation (explain.h): per-node answers of every plugin through the session's
// own dispatchers, the job and queue answers, and the recorder the actions report to.

#include "runtime/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <numeric>

#include "runtime/actions/helpers.h"
#include "runtime/cluster.h"
#include "runtime/hyper_node.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"

namespace kiln {

namespace {

// The texts, without their codes (reason_codes.h), as Volcano's Status.Message() joins them.
std::string JoinReasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (i) out += ", ";
    out += SplitCodedReason(reasons[i]).text;
  }
  return out;
}

PluginAnswer AnswerOf(const PluginStatus& st) {
  return PluginAnswer{st.plugin, st.code, JoinReasons(st.reasons), CodesOf(st)};
}

// A list of codes stored as one string (the compact form keeps strings once).
std::string JoinCodes(const std::vector<std::string>& codes) {
  std::string out;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (i) out += kReasonCodeMark;
    out += codes[i];
  }
  return out;
}

std::vector<std::string> SplitCodes(const std::string& joined) {
  std::vector<std::string> out;
  if (joined.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t end = joined.find(kReasonCodeMark, start);
    out.push_back(joined.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
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
      ne.codes = CodesOf(e->statuses.front());
    }
    ResourceIdList insufficient;
    if (t->init_resreq().LessEqual(n->idle, DimensionDefault::Zero)) {
      ne.fits = "idle";
    } else if (actions::FitsFutureIdle(t->init_resreq(), n, &insufficient)) {
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

std::vector<std::pair<std::string, std::vector<Figure>>> ShowQueueFigures(Session& ssn,
                                                                         const Queue* q) {
  std::vector<std::pair<std::string, std::vector<Figure>>> figures;
  // The show handlers report to the session's recorder; borrow one when it has none.
  ExplainRecorder scratch;
  ExplainRecorder* recorder = ssn.explain();
  if (recorder == nullptr) ssn.set_explain(&scratch);
  ExplainRecorder* sink = recorder ? recorder : &scratch;
  sink->BeginFigures(&figures);
  ssn.ShowQueueFn(q);
  sink->BeginFigures(nullptr);
  if (recorder == nullptr) ssn.set_explain(nullptr);
  return figures;
}

std::optional<Resource> ShownDeserved(Session& ssn, const Queue* q) {
  for (const auto& [plugin, figures] : ShowQueueFigures(ssn, q))
    for (const Figure& f : figures)
      if (f.name == "deserved" && std::holds_alternative<Resource>(f.value))
        return std::get<Resource>(f.value);
  return std::nullopt;
}

namespace {

// `items` in the session's order (`order(l, r) < 0`: l first; ties keep the snapshot's order),
// each made into an entry numbered from 1 by `fill`; then the entries sorted by `key` for output.
template <typename Entry, typename T, typename Order, typename Fill, typename Key>
void ExplainRanked(std::vector<T*> items, Order order, Fill fill, Key key,
                   std::vector<Entry>& out) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T* l, const T* r) { return order(l, r) < 0; });
  out.clear();
  for (size_t i = 0; i < items.size(); ++i) {
    Entry e;
    e.order = static_cast<int>(i) + 1;
    fill(items[i], e);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(),
            [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
}

}  // namespace

void ExplainJobsAndQueues(Session& ssn, Explanation& out) {
  // The show handlers report to the session's recorder; at open there is none yet.
  ExplainRecorder scratch;
  ExplainRecorder* recorder = ssn.explain();
  if (recorder == nullptr) {
    recorder = &scratch;
    ssn.set_explain(&scratch);
  }

  ExplainRanked(
      ssn.cluster().jobs(), [&](const Job* l, const Job* r) { return ssn.JobOrderFn(l, r); },
      [&](const Job* j, JobExplain& je) {
        je.uid = j->uid;
        je.queue = j->queue ? j->queue->name : "";
        je.ready = ssn.JobReady(j);
        je.pipelined = ssn.JobPipelined(j);
        if (std::optional<ValidateResult> v = ssn.JobValid(j)) {
          je.valid = false;
          je.invalid_reason = fmt::format("{}: {}", v->plugin, v->reason);
          je.invalid_code = v->reason;  // Volcano's reasons are stable codes already
          if (!v->message.empty()) je.invalid_reason += ": " + v->message;
        }
        je.starving = ssn.JobStarving(j);
        je.phase = std::string(ToString(j->phase));
      },
      [](const JobExplain& je) -> const std::string& { return je.uid; }, out.jobs);
  ExplainRanked(
      ssn.cluster().queues(),
      [&](const Queue* l, const Queue* r) { return ssn.QueueOrderFn(l, r); },
      [&](const Queue* q, QueueExplain& qe) {
        qe.name = q->name;
        qe.overused = ssn.Overused(q);
        qe.plugins = ShowQueueFigures(ssn, q);
      },
      [](const QueueExplain& qe) -> const std::string& { return qe.name; }, out.queues);
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
                             std::string_view note, std::string_view note_code) {
  if (!pods_.empty() && !pods_.count(t->Key())) return;
  TaskExplain te = ExplainTask(ssn, t);
  te.action = std::string(action);
  te.note = std::string(note);
  te.note_code = std::string(note_code);
  auto [it, inserted] = position_.try_emplace(te.key, explanation_.tasks.size());
  if (!inserted) {
    explanation_.tasks.Replace(it->second, te);
    return;
  }
  explanation_.tasks.push_back(te);
}

void ExplainRecorder::Finish(Session& ssn) {
  ExplainJobsAndQueues(ssn, explanation_);
  for (JobExplain& j : explanation_.jobs)
    if (auto it = gang_eviction_.find(j.uid); it != gang_eviction_.end()) j.gang_eviction = it->second;
  for (JobExplain& j : explanation_.jobs)
    if (auto it = admission_.find(j.uid); it != admission_.end()) j.admission = it->second;
  for (JobExplain& j : explanation_.jobs) {
    auto it = topology_.find(j.uid);
    if (it == topology_.end()) continue;
    j.topology = it->second;
    const Job* job = ssn.cluster().FindJob(j.uid);
    if (job != nullptr && job->allocated_hyper_node != nullptr)
      j.topology->allocated_hyper_node = job->allocated_hyper_node->name;
  }
}

void ExplainRecorder::ApplyResults(const SessionResult& result) {
  ExplainedTasks& tasks = explanation_.tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string& key = tasks.key(i);
    if (auto it = result.binds.find(key); it != result.binds.end()) {
      tasks.SetResult(i, "bound", it->second);
    } else if (auto p = result.pipelined.find(key); p != result.pipelined.end()) {
      tasks.SetResult(i, "pipelined", p->second);
    } else {
      auto u = result.unschedulable.find(key);
      auto c = result.unschedulable_codes.find(key);
      tasks.SetResult(i, "unschedulable", u != result.unschedulable.end() ? u->second : "",
                      c != result.unschedulable_codes.end() ? c->second
                                                            : std::vector<std::string>{});
    }
  }
}

// ---- ExplainedTasks ------------------------------------------------------------------------

// Each distinct string once; ids are indexes. A deque keeps the strings where they are, so the
// index can key on views of them.
struct ExplainedTasks::Strings {
  std::deque<std::string> values;
  std::unordered_map<std::string_view, uint32_t> ids;
  size_t bytes = 0;

  uint32_t Intern(std::string_view s) {
    if (auto it = ids.find(s); it != ids.end()) return it->second;
    values.emplace_back(s);
    auto id = static_cast<uint32_t>(values.size() - 1);
    ids.emplace(values.back(), id);
    bytes += sizeof(std::string) + s.size() + 48;  // the string, its text, its index entry
    return id;
  }
  const std::string& at(uint32_t id) const { return values[id]; }
};

namespace {

// The text fields of a pod's explanation that ExplainedTasks keeps as interned strings, as
// (TaskExplain member, compact member) pairs, so that compacting and expanding walk one list.
template <typename CompactTask>
constexpr auto InternedTaskFields() {
  using E = TaskExplain;
  using Field = std::pair<std::string E::*, uint32_t CompactTask::*>;
  return std::array<Field, 7>{{{&E::key, &CompactTask::key},
                               {&E::job, &CompactTask::job},
                               {&E::action, &CompactTask::action},
                               {&E::note, &CompactTask::note},
                               {&E::note_code, &CompactTask::note_code},
                               {&E::result_kind, &CompactTask::result_kind},
                               {&E::result_value, &CompactTask::result_value}}};
}

}  // namespace

ExplainedTasks::ExplainedTasks() : strings_(std::make_unique<Strings>()) { strings_->Intern(""); }
ExplainedTasks::~ExplainedTasks() = default;
ExplainedTasks::ExplainedTasks(ExplainedTasks&&) noexcept = default;
ExplainedTasks& ExplainedTasks::operator=(ExplainedTasks&&) noexcept = default;

ExplainedTasks::Task ExplainedTasks::Compact(const TaskExplain& t) {
  Strings& s = *strings_;
  Task out;
  for (const auto& [text, id] : InternedTaskFields<Task>()) out.*id = s.Intern(t.*text);
  out.result_codes = s.Intern(JoinCodes(t.result_codes));
  if (t.pre_predicate) {
    out.has_pre = true;
    out.pre = Pred{s.Intern(t.pre_predicate->plugin), s.Intern(t.pre_predicate->reason),
                   s.Intern(JoinCodes(t.pre_predicate->codes)), t.pre_predicate->code};
  }
  out.rows.reserve(t.nodes.size());
  for (const NodeExplain& n : t.nodes) {
    Row r{};
    r.node_order = n.node_order;
    r.total = n.total;
    r.node = s.Intern(n.node);
    r.reason = s.Intern(n.reason);
    r.codes = s.Intern(JoinCodes(n.codes));
    r.fits = s.Intern(n.fits);
    r.score_error = s.Intern(n.score_error);
    for (const std::string& dim : n.insufficient)
      if (auto id = ResourceRegistry::Find(dim)) r.insufficient |= 1u << *id;
    r.preds = static_cast<uint16_t>(n.predicates.size());
    r.scores = static_cast<uint16_t>(n.scores.size());
    r.batch = static_cast<uint16_t>(n.batch_scores.size());
    r.code = n.code;
    r.scored = n.scored;
    for (const PluginAnswer& a : n.predicates)
      out.preds.push_back(
          Pred{s.Intern(a.plugin), s.Intern(a.reason), s.Intern(JoinCodes(a.codes)), a.code});
    for (const auto& [plugin, v] : n.scores) out.scores.push_back(Score{v, s.Intern(plugin)});
    for (const auto& [plugin, v] : n.batch_scores) out.scores.push_back(Score{v, s.Intern(plugin)});
    out.rows.push_back(r);
  }
  out.preds.shrink_to_fit();
  out.scores.shrink_to_fit();
  return out;
}

void ExplainedTasks::push_back(const TaskExplain& t) { tasks_.push_back(Compact(t)); }

void ExplainedTasks::Replace(size_t i, const TaskExplain& t) { tasks_[i] = Compact(t); }

const std::string& ExplainedTasks::key(size_t i) const { return strings_->at(tasks_[i].key); }

void ExplainedTasks::SetResult(size_t i, std::string_view kind, std::string_view value,
                               const std::vector<std::string>& codes) {
  tasks_[i].result_kind = strings_->Intern(kind);
  tasks_[i].result_value = strings_->Intern(value);
  tasks_[i].result_codes = strings_->Intern(JoinCodes(codes));
}

TaskExplain ExplainedTasks::operator[](size_t i) const {
  const Strings& s = *strings_;
  const Task& c = tasks_[i];
  TaskExplain t;
  for (const auto& [text, id] : InternedTaskFields<Task>()) t.*text = s.at(c.*id);
  t.result_codes = SplitCodes(s.at(c.result_codes));
  if (c.has_pre)
    t.pre_predicate = PluginAnswer{s.at(c.pre.plugin), c.pre.code, s.at(c.pre.reason),
                                   SplitCodes(s.at(c.pre.codes))};
  t.nodes.resize(c.rows.size());
  size_t p = 0, k = 0;
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const Row& row = c.rows[r];
    NodeExplain& n = t.nodes[r];
    n.node = s.at(row.node);
    n.code = row.code;
    n.reason = s.at(row.reason);
    n.codes = SplitCodes(s.at(row.codes));
    n.fits = s.at(row.fits);
    n.score_error = s.at(row.score_error);
    ForEachBit(row.insufficient,
               [&](ResourceId id) { n.insufficient.emplace_back(ResourceRegistry::Name(id)); });
    n.scored = row.scored;
    n.node_order = row.node_order;
    n.total = row.total;
    for (uint16_t j = 0; j < row.preds; ++j, ++p)
      n.predicates.push_back(PluginAnswer{s.at(c.preds[p].plugin), c.preds[p].code,
                                          s.at(c.preds[p].reason),
                                          SplitCodes(s.at(c.preds[p].codes))});
    for (uint16_t j = 0; j < row.scores; ++j, ++k)
      n.scores.emplace_back(s.at(c.scores[k].plugin), c.scores[k].value);
    for (uint16_t j = 0; j < row.batch; ++j, ++k)
      n.batch_scores.emplace_back(s.at(c.scores[k].plugin), c.scores[k].value);
  }
  return t;
}

size_t ExplainedTasks::MemoryBytes() const {
  size_t bytes = strings_->bytes + tasks_.capacity() * sizeof(Task);
  for (const Task& t : tasks_)
    bytes += t.rows.capacity() * sizeof(Row) + t.preds.capacity() * sizeof(Pred) +
             t.scores.capacity() * sizeof(Score);
  return bytes;
}

void ExplainRecorder::AddFigure(std::string_view plugin, Figure f) {
  if (sink_ == nullptr) return;
  if (sink_->empty() || sink_->back().first != plugin) sink_->emplace_back(std::string(plugin), std::vector<Figure>{});
  sink_->back().second.push_back(std::move(f));
}

SessionHooks RecordingHooks(ExplainRecorder& recorder) {
  SessionHooks hooks;
  hooks.after_open = [&recorder](Session& ssn) { ssn.set_explain(&recorder); };
  hooks.before_close = [&recorder](Session& ssn) {
    recorder.Finish(ssn);
    ssn.set_explain(nullptr);
  };
  return hooks;
}

}  // namespace kiln
