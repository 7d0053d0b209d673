// Direct extension-point calls (calls.h): shapes derived from the extension-point table, dispatch
// through the session's own combinators, result comparison for `expect.calls`.

#include "runtime/calls.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "runtime/call_inputs.h"
#include "runtime/fit_error.h"
#include "runtime/reason_codes.h"
#include "runtime/session.h"

namespace kiln {

namespace {

CallValue::Kind ResultKindOf(AbiKind k) {
  switch (k) {
    case AbiKind::Void: return CallValue::Kind::Null;
    case AbiKind::Int: return CallValue::Kind::Int;
    case AbiKind::Float: return CallValue::Kind::Number;
    case AbiKind::Bool:
    case AbiKind::Vote:
    case AbiKind::Validation: return CallValue::Kind::Bool;
    case AbiKind::Status: return CallValue::Kind::Status;
    case AbiKind::Victims:
    case AbiKind::TaskList: return CallValue::Kind::Tasks;
    case AbiKind::FloatList: return CallValue::Kind::NodeScores;
    case AbiKind::NodeOrNone: return CallValue::Kind::Node;
    default: return CallValue::Kind::Null;
  }
}

int Sign(int v) { return v < 0 ? -1 : (v > 0 ? 1 : 0); }

CallValue Bool(bool b) {
  CallValue v;
  v.kind = CallValue::Kind::Bool;
  v.boolean = b;
  return v;
}
CallValue Int(int i) {
  CallValue v;
  v.kind = CallValue::Kind::Int;
  v.integer = Sign(i);
  return v;
}
CallValue Fail(std::string message) {
  CallValue v;
  v.kind = CallValue::Kind::Error;
  v.text = std::move(message);
  return v;
}
CallValue StatusValue(const std::optional<PluginStatus>& st) {
  CallValue v;
  v.kind = CallValue::Kind::Status;
  if (!st) {
    v.code = std::string(ToString(StatusCode::Success));
    return v;
  }
  v.code = std::string(ToString(st->code));
  // The texts only: the codes (reason_codes.h) are not part of a call's result.
  for (size_t i = 0; i < st->reasons.size(); ++i)
    v.text += (i ? ", " : "") + ReasonText(st->reasons[i]);
  return v;
}
CallValue TaskNames(const std::vector<Task*>& tasks) {
  CallValue v;
  v.kind = CallValue::Kind::Tasks;
  for (const Task* t : tasks) v.names.push_back(t->Key());
  return v;
}

// Resolves the names of one call against the session.
class Resolver {
 public:
  Resolver(Session& ssn, const std::vector<Task*>& detached) : ssn_(ssn) {
    for (Task* t : ssn.cluster().tasks()) tasks_.emplace(t->Key(), t);
    for (Task* t : ssn.cluster().orphan_tasks()) tasks_.emplace(t->Key(), t);
    for (Task* t : detached) tasks_.emplace(t->Key(), t);
  }

  Task* FindTask(const std::string& key, std::string& err) {
    auto it = tasks_.find(key);
    return Found(it != tasks_.end() ? it->second : nullptr, "pod", key, err);
  }
  Node* FindNode(const std::string& name, std::string& err) {
    return Found(ssn_.cluster().FindNode(name), "node", name, err);
  }
  Job* FindJob(const std::string& uid, std::string& err) {
    return Found(ssn_.cluster().FindJob(uid), "job", uid, err);
  }
  SubJob* FindSubJob(const std::string& uid, std::string& err) {
    for (Job* j : ssn_.cluster().jobs())
      for (const auto& s : j->sub_jobs)
        if (s->uid == uid) return s.get();
    return Found<SubJob>(nullptr, "sub-job", uid, err);
  }
  Queue* FindQueue(const std::string& name, std::string& err) {
    return Found(ssn_.cluster().FindQueue(name), "queue", name, err);
  }
  // `found`, or nullptr with `err` saying which object the session lacks.
  template <typename T>
  static T* Found(T* found, std::string_view kind, const std::string& key, std::string& err) {
    if (found == nullptr) err = fmt::format("{} `{}` is not in the session", kind, key);
    return found;
  }

 private:
  Session& ssn_;
  std::unordered_map<std::string, Task*> tasks_;
};

CallValue RunOne(Session& ssn, Resolver& res, const CallSpec& c, Task* empty_task) {
  std::string err;
  auto task = [&](const std::optional<std::string>& key) -> Task* {
    return key ? res.FindTask(*key, err) : nullptr;
  };
  auto tasks = [&](const std::optional<std::vector<std::string>>& keys) {
    std::vector<Task*> out;
    if (keys)
      for (const auto& k : *keys)
        if (Task* t = res.FindTask(k, err)) out.push_back(t);
    return out;
  };
  auto nodes = [&]() {
    std::vector<Node*> out;
    if (!c.nodes) return std::vector<Node*>(ssn.cluster().nodes());
    for (const auto& n : *c.nodes)
      if (Node* p = res.FindNode(n, err)) out.push_back(p);
    return out;
  };

  switch (c.point) {
    case ExtensionPoint::JobOrder: {
      Job* l = res.FindJob(*c.l, err);
      Job* r = res.FindJob(*c.r, err);
      if (!err.empty()) return Fail(err);
      return Int(ssn.JobCompareFn(l, r));
    }
    case ExtensionPoint::QueueOrder: {
      Queue* l = res.FindQueue(*c.l, err);
      Queue* r = res.FindQueue(*c.r, err);
      if (!err.empty()) return Fail(err);
      return Int(ssn.QueueCompareFn(l, r));
    }
    case ExtensionPoint::VictimQueueOrder: {
      Queue* l = res.FindQueue(*c.l, err);
      Queue* r = res.FindQueue(*c.r, err);
      Queue* q = res.FindQueue(*c.queue, err);
      if (!err.empty()) return Fail(err);
      return Int(ssn.VictimQueueCompareFn(l, r, q));
    }
    case ExtensionPoint::TaskOrder: {
      Task* l = task(c.l);
      Task* r = task(c.r);
      if (!err.empty()) return Fail(err);
      return Int(ssn.TaskCompareFn(l, r));
    }
    case ExtensionPoint::PrePredicate: {
      Task* t = task(c.task);
      if (!err.empty()) return Fail(err);
      return StatusValue(ssn.PrePredicateFn(t));
    }
    case ExtensionPoint::Predicate: {
      Task* t = task(c.task);
      Node* n = res.FindNode(*c.node, err);
      if (!err.empty()) return Fail(err);
      std::optional<FitError> e = ssn.PredicateFn(t, n);
      if (!e) return StatusValue(std::nullopt);
      return StatusValue(e->statuses.front());
    }
    case ExtensionPoint::NodeOrder: {
      Task* t = task(c.task);
      Node* n = res.FindNode(*c.node, err);
      if (!err.empty()) return Fail(err);
      Result<double> s = ssn.NodeOrderFn(t, n);
      if (!s) return Fail(s.error().message);
      CallValue v;
      v.kind = CallValue::Kind::Number;
      v.number = *s;
      return v;
    }
    case ExtensionPoint::BatchNodeOrder: {
      Task* t = task(c.task);
      std::vector<Node*> ns = nodes();
      if (!err.empty()) return Fail(err);
      std::vector<double> scores;
      if (Status s = ssn.BatchNodeOrderFn(t, ns, scores); !s) return Fail(s.error().message);
      CallValue v;
      v.kind = CallValue::Kind::NodeScores;
      for (size_t i = 0; i < ns.size(); ++i) v.scores.emplace_back(ns[i]->name, scores[i]);
      return v;
    }
    case ExtensionPoint::BestNode: {
      Task* t = task(c.task);
      std::vector<Node*> ns = nodes();
      if (!err.empty()) return Fail(err);
      std::vector<double> scores = c.scores ? *c.scores : std::vector<double>(ns.size(), 0.0);
      if (scores.size() != ns.size())
        return Fail(fmt::format("best_node: {} scores for {} nodes", scores.size(), ns.size()));
      CallValue v;
      v.kind = CallValue::Kind::Node;
      if (Node* best = ssn.BestNodeFn(t, ns, scores)) v.text = best->name;
      return v;
    }
    case ExtensionPoint::Preemptable:
    case ExtensionPoint::Reclaimable: {
      Task* p = c.preemptor ? task(c.preemptor) : empty_task;
      std::vector<Task*> cands = tasks(c.candidates);
      if (!err.empty()) return Fail(err);
      return TaskNames(c.point == ExtensionPoint::Preemptable ? ssn.Preemptable(p, cands)
                                                               : ssn.Reclaimable(p, cands));
    }
    case ExtensionPoint::UnifiedEvictable: {
      if (!c.job) return Fail("unified_evictable needs `job`");
      Job* j = res.FindJob(*c.job, err);
      std::vector<Task*> cands = tasks(c.candidates);
      if (!err.empty()) return Fail(err);
      return TaskNames(ssn.UnifiedEvictable(j, cands));
    }
    case ExtensionPoint::VictimTasks: {
      std::vector<Task*> cands = tasks(c.candidates);
      if (!err.empty()) return Fail(err);
      return TaskNames(ssn.VictimTasks(cands));
    }
    case ExtensionPoint::Overused: {
      Queue* q = res.FindQueue(*c.queue, err);
      if (!err.empty()) return Fail(err);
      return Bool(ssn.Overused(q));
    }
    case ExtensionPoint::Allocatable:
    case ExtensionPoint::Preemptive: {
      Queue* q = res.FindQueue(*c.queue, err);
      Task* t = task(c.task);
      if (!err.empty()) return Fail(err);
      return Bool(c.point == ExtensionPoint::Allocatable ? ssn.Allocatable(q, t)
                                                         : ssn.Preemptive(q, t));
    }
    case ExtensionPoint::JobReady:
    case ExtensionPoint::JobPipelined:
    case ExtensionPoint::JobValid:
    case ExtensionPoint::JobEnqueueable:
    case ExtensionPoint::JobEnqueued:
    case ExtensionPoint::JobStarving: {
      Job* j = res.FindJob(*c.job, err);
      if (!err.empty()) return Fail(err);
      switch (c.point) {
        case ExtensionPoint::JobReady: return Bool(ssn.JobReady(j));
        case ExtensionPoint::JobPipelined: return Bool(ssn.JobPipelined(j));
        case ExtensionPoint::JobValid: return Bool(!ssn.JobValid(j).has_value());
        case ExtensionPoint::JobEnqueueable: return Bool(ssn.JobEnqueueable(j));
        case ExtensionPoint::JobStarving: return Bool(ssn.JobStarving(j));
        default: ssn.JobEnqueued(j); return CallValue{};
      }
    }
    case ExtensionPoint::OnAllocate: {
      Task* t = task(c.task);
      Node* n = res.FindNode(*c.node, err);
      if (!err.empty()) return Fail(err);
      if (t->job == nullptr) return Fail(fmt::format("allocate: pod `{}` has no job", *c.task));
      if (Status s = ssn.Allocate(t, n); !s) return Fail(s.error().message);
      return CallValue{};
    }
    case ExtensionPoint::OnDeallocate: {
      Task* t = task(c.task);
      if (!err.empty()) return Fail(err);
      ssn.FireDeallocate(t);
      return CallValue{};
    }
    case ExtensionPoint::ShowQueue: {
      Queue* q = res.FindQueue(*c.queue, err);
      if (!err.empty()) return Fail(err);
      ssn.ShowQueueFn(q);
      return CallValue{};
    }
    case ExtensionPoint::SessionOpen:
    case ExtensionPoint::SessionClose:
    // The dry-run points of topology-aware preemption change what a plugin precomputed for one
    // preemptor; a direct call has no such run to be part of.
    case ExtensionPoint::SimulateRemoveTask:
    case ExtensionPoint::SimulateAddTask:
    case ExtensionPoint::SimulatePredicate:
    case ExtensionPoint::SimulateAllocatable:
    case ExtensionPoint::SubJobReady:
    case ExtensionPoint::SubJobPipelined: {
      SubJob* s = res.FindSubJob(*c.sub_job, err);
      if (!err.empty()) return Fail(err);
      return Bool(c.point == ExtensionPoint::SubJobReady ? ssn.SubJobReady(s->job, s)
                                                         : ssn.SubJobPipelined(s->job, s));
    }
    case ExtensionPoint::SubJobOrder: {
      SubJob* l = res.FindSubJob(*c.l, err);
      SubJob* r = err.empty() ? res.FindSubJob(*c.r, err) : nullptr;
      if (!err.empty()) return Fail(err);
      return Int(ssn.SubJobCompareFn(l, r));
    }
    // The HyperNode points answer for candidates of allocate's search, which scenarios do not
    // spell (not callable yet).
    case ExtensionPoint::HyperNodeOrder:
    case ExtensionPoint::HyperNodeGradientForJob:
    case ExtensionPoint::HyperNodeGradientForSubJob:
      break;
  }
  return Fail(fmt::format("`{}` is not callable", c.fn));
}

bool NearlyEqual(double a, double b) {
  if (a == b) return true;
  double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
  return std::fabs(a - b) <= 1e-9 * scale;
}

bool SameValue(const CallValue& want, const CallValue& got) {
  if (want.kind == CallValue::Kind::Error || got.kind == CallValue::Kind::Error) return false;
  if (want.kind != got.kind) return false;
  switch (want.kind) {
    case CallValue::Kind::Null: return true;
    case CallValue::Kind::Bool: return want.boolean == got.boolean;
    case CallValue::Kind::Int: return want.integer == got.integer;
    case CallValue::Kind::Number: return NearlyEqual(want.number, got.number);
    case CallValue::Kind::Status: return want.code == got.code && want.text == got.text;
    case CallValue::Kind::Tasks:
      return std::set<std::string>(want.names.begin(), want.names.end()) ==
             std::set<std::string>(got.names.begin(), got.names.end());
    case CallValue::Kind::NodeScores: {
      if (want.scores.size() != got.scores.size()) return false;
      std::unordered_map<std::string, double> have(got.scores.begin(), got.scores.end());
      for (const auto& [n, s] : want.scores) {
        auto it = have.find(n);
        if (it == have.end() || !NearlyEqual(s, it->second)) return false;
      }
      return true;
    }
    case CallValue::Kind::Node: return want.text == got.text;
    case CallValue::Kind::Error: return false;
  }
  return false;
}

std::string FormatNumber(double x) {
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15)
    return fmt::format("{}", static_cast<int64_t>(x));
  return fmt::format("{}", x);
}

// The inputs of a call, for messages: "predicate(task: c1/p1, node: n1)".
std::string Describe(const CallSpec& c) {
  std::vector<std::string> parts;
  ForEachNamedInput(c, [&](std::string_view k, const std::string& v) {
    parts.push_back(fmt::format("{}: {}", k, v));
  });
  if (c.has_preemptor) parts.push_back(fmt::format("preemptor: {}", c.preemptor.value_or("null")));
  if (c.candidates) parts.push_back(fmt::format("candidates: [{}]", fmt::join(*c.candidates, ", ")));
  if (c.nodes) parts.push_back(fmt::format("nodes: [{}]", fmt::join(*c.nodes, ", ")));
  return fmt::format("{}({})", c.fn, fmt::join(parts, ", "));
}

bool SameInputs(const CallSpec& a, const CallSpec& b) {
  return a.fn == b.fn && a.task == b.task && a.node == b.node && a.job == b.job &&
         a.queue == b.queue && a.l == b.l && a.r == b.r && a.sub_job == b.sub_job &&
         a.preemptor == b.preemptor &&
         a.candidates == b.candidates && a.nodes == b.nodes && a.scores == b.scores;
}

}  // namespace

std::optional<CallShape> ShapeOfCall(std::string_view fn) {
  const ExtensionPointInfo* info = FindExtensionPoint(fn);
  if (info == nullptr || info->param_count == 0) return std::nullopt;
  for (int i = 0; i < info->param_count; ++i)
    if (info->params[i] == AbiKind::HyperNodeList) return std::nullopt;  // not callable yet
  CallShape shape{info->id, {}, {}, ResultKindOf(info->result)};
  if (info->id == ExtensionPoint::OnAllocate) {
    // The contract's allocate is ssn.Allocate(task, node), not the bare event.
    shape.required = {"task", "node"};
    return shape;
  }
  auto p = [&](int i) { return i < info->param_count ? info->params[i] : AbiKind::Void; };
  const bool pair = info->param_count >= 2 && p(0) == p(1) &&
                    (p(0) == AbiKind::Job || p(0) == AbiKind::Queue || p(0) == AbiKind::Task ||
                     p(0) == AbiKind::SubJob);
  if (pair) {
    shape.required = {"l", "r"};
    if (info->param_count == 3) shape.required.push_back("queue");  // the preemptor's queue
    return shape;
  }
  for (int i = 0; i < info->param_count; ++i) {
    switch (p(i)) {
      case AbiKind::Task:
        // A Task followed by candidates is the one asking for victims: it may be empty.
        if (p(i + 1) == AbiKind::TaskList) shape.optional.push_back("preemptor");
        else shape.required.push_back("task");
        break;
      case AbiKind::Job: shape.required.push_back("job"); break;
      case AbiKind::SubJob: shape.required.push_back("subJob"); break;
      case AbiKind::Node: shape.required.push_back("node"); break;
      case AbiKind::Queue: shape.required.push_back("queue"); break;
      case AbiKind::TaskList: shape.required.push_back("candidates"); break;
      case AbiKind::NodeList: shape.optional.push_back("nodes"); break;
      default: break;
    }
  }
  if (info->result == AbiKind::NodeOrNone) shape.optional.push_back("scores");
  return shape;
}

std::vector<std::string_view> CallableFunctions() {
  std::vector<std::string_view> out;
  for (const auto& info : kExtensionPoints)
    if (ShapeOfCall(info.handler)) out.push_back(info.handler);
  return out;
}

void RunCalls(Session& ssn, std::vector<CallSpec>& calls, const std::vector<Task*>& detached) {
  Resolver res(ssn, detached);
  // `preemptor: null`: a task of no job with no requests, as a unit test's &TaskInfo{} is.
  Task empty;
  empty.uid = "";
  for (CallSpec& c : calls) c.result = RunOne(ssn, res, c, &empty);
}

std::vector<CallCheck> CheckEachCall(const std::vector<CallSpec>& expected,
                                     const std::vector<CallSpec>& got) {
  std::vector<CallCheck> out;
  for (size_t i = 0; i < std::max(expected.size(), got.size()); ++i) {
    CallCheck c;
    c.index = i;
    if (i >= got.size()) {
      c.call = Describe(expected[i]);
      c.diff = fmt::format("calls[{}]: expected {}, the scenario ran only {} calls", i, c.call,
                           got.size());
    } else if (i >= expected.size()) {
      c.call = Describe(got[i]);
      c.diff = fmt::format("calls[{}]: {}: not in `expect.calls`", i, c.call);
    } else if (!SameInputs(expected[i], got[i])) {
      c.call = Describe(got[i]);
      c.diff = fmt::format("calls[{}]: expected {}, the scenario calls {}", i,
                           Describe(expected[i]), c.call);
    } else {
      c.call = Describe(got[i]);
      const CallSpec& w = expected[i];
      c.checked = w.result.has_value();
      if (c.checked) {
        const CallValue none{};
        const CallValue& have = got[i].result ? *got[i].result : none;
        if (!SameValue(*w.result, have))
          c.diff = fmt::format("calls[{}]: {}: expected {}, got {}", i, c.call,
                               FormatCallValue(*w.result), FormatCallValue(have));
      }
    }
    if (!c.diff.empty()) c.checked = true;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::string> CheckCalls(const std::vector<CallSpec>& expected,
                                    const std::vector<CallSpec>& got) {
  std::vector<std::string> diffs;
  if (expected.size() != got.size())
    diffs.push_back(fmt::format("calls: expected {} entries, the scenario ran {}", expected.size(),
                                got.size()));
  // Entries past the shorter list are covered by the count line above.
  for (const CallCheck& c : CheckEachCall(expected, got))
    if (c.index < std::min(expected.size(), got.size()) && !c.diff.empty())
      diffs.push_back(c.diff);
  return diffs;
}

std::string DescribeCall(const CallSpec& c) { return Describe(c); }

std::string FormatCallValue(const CallValue& v) {
  switch (v.kind) {
    case CallValue::Kind::Null: return "null";
    case CallValue::Kind::Bool: return v.boolean ? "true" : "false";
    case CallValue::Kind::Int: return fmt::format("{}", v.integer);
    case CallValue::Kind::Number: return FormatNumber(v.number);
    case CallValue::Kind::Status:
      return fmt::format("{{code: {}, reason: \"{}\"}}", v.code, v.text);
    case CallValue::Kind::Tasks: return fmt::format("[{}]", fmt::join(v.names, ", "));
    case CallValue::Kind::NodeScores: {
      std::vector<std::string> parts;
      for (const auto& [n, s] : v.scores) parts.push_back(fmt::format("{}: {}", n, FormatNumber(s)));
      return fmt::format("{{{}}}", fmt::join(parts, ", "));
    }
    case CallValue::Kind::Node: return v.text.empty() ? "null" : v.text;
    case CallValue::Kind::Error: return fmt::format("error: {}", v.text);
  }
  return "";
}

}  // namespace kiln
