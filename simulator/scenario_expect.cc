// A scenario's `expect` (what the first session must decide) and `calls` (direct extension-point
// calls, with the results `expect.calls` requires).

#include "simulator/scenario_loader.h"

#include <fmt/ranges.h>

#include <algorithm>

namespace kiln::scenario_loader {

Result<std::map<std::string, std::string>> Loader::ReadKeyMap(const yaml::Node& n,
                                                              std::string_view what) {
  if (Status s = r_.ExpectAnyMap(n, what); !s) return s.error();
  std::map<std::string, std::string> out;
  if (n.IsNull()) return out;
  for (const auto& kv : n) {
    auto v = r_.String(kv.second, fmt::format("value of `{}` in {}", kv.first.Scalar(), what));
    if (!v) return v.error();
    out[std::string(kv.first.Scalar())] = *v;
  }
  return out;
}

// `replay: {cycles: 3, period: 1m, expect: {1: {evictions: []}, 2: {...}}}`.
Status Loader::ReadReplay(const yaml::Node& n, ReplaySpec& out) {
  TRY(r_.ExpectMap(n, "`replay`", {"cycles", "period", "expect"}));
  out.where = yaml::Where(n, r_.file());
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    if (k == "cycles") {
      ASSIGN_OR_RETURN(out.cycles, r_.Int(v, "`replay.cycles`"));
      if (out.cycles < 1 || out.cycles > 100000)
        return r_.Fail(v, fmt::format("`replay.cycles` must be between 1 and 100000, got {}",
                                      out.cycles));
    } else if (k == "period") {
      auto text = Str(v, "`replay.period`");
      if (!text) return text.error();
      auto d = ParseGoDuration(*text);
      if (!d || *d <= 0)
        return r_.Fail(v, fmt::format("`replay.period` must be a positive duration like 1s or "
                                      "10m, got `{}`",
                                      *text));
      out.period = *d;
    } else if (k == "expect") {
      TRY(r_.ExpectAnyMap(v, "`replay.expect`"));
      for (const auto& s : v) {
        auto index = r_.Int(s.first, "a session index of `replay.expect`");
        if (!index) return index.error();
        if (*index < 1)
          return r_.Fail(s.first, fmt::format("a session index of `replay.expect` must be 1 or "
                                              "more (session 0 is `expect`), got {}",
                                              *index));
        TRY(ReadExpect(s.second, out.expect[*index]));
        if (out.expect[*index].calls)
          return r_.Fail(s.second, "`calls` run in the first session only: check them in `expect`");
      }
    }
  }
  for (const auto& [index, e] : out.expect)
    if (index >= out.cycles)
      return Error{fmt::format("`replay.expect` checks session {}, but the replay runs {} "
                               "(`replay.cycles`, sessions 0 to {})",
                               index, out.cycles, out.cycles - 1),
                   e.where};
  return Status::Ok();
}

Status Loader::ReadExpect(const yaml::Node& n, ExpectSpec& out) {
  TRY(r_.ExpectMap(n, "`expect`",
                   {"binds", "bindCount", "evictions", "evictionCount", "pipelined",
                    "podGroupPhases", "unschedulable", "warnings",
                    "calls", "bindCountsByLeafHyperNode", "podAnnotations"},
                   true));
  out.where = yaml::Where(n, r_.file());
  if (n.IsNull()) return Status::Ok();
  auto pods_of_map = [&](const yaml::Node& m, bool values_are_nodes) {
    if (!m.IsMap()) return;
    for (const auto& kv : m) {
      expect_pods_.emplace_back(kv.first.Scalar(), yaml::Where(kv.first, r_.file()));
      if (values_are_nodes && kv.second.IsScalar())
        expect_nodes_.emplace_back(kv.second.Scalar(), yaml::Where(kv.second, r_.file()));
    }
  };
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    std::string what = fmt::format("`expect.{}`", k);
    if (k == "binds") {
      ASSIGN_OR_RETURN(out.binds, ReadKeyMap(v, what));
      pods_of_map(v, true);
    } else if (k == "pipelined") {
      ASSIGN_OR_RETURN(out.pipelined, ReadKeyMap(v, what));
      pods_of_map(v, true);
    } else if (k == "unschedulable") {
      ASSIGN_OR_RETURN(out.unschedulable, ReadKeyMap(v, what));
      pods_of_map(v, false);
    } else if (k == "podGroupPhases") {
      ASSIGN_OR_RETURN(out.pod_group_phases, ReadKeyMap(v, what));
      for (const auto& p : v) {
        expect_groups_.emplace_back(p.first.Scalar(), yaml::Where(p.first, r_.file()));
        std::string_view phase = p.second.Scalar();
        if (!ParsePodGroupPhase(phase) || phase.empty())
          return r_.Fail(p.second, fmt::format("{} of `{}` must be Pending, Inqueue, Running, "
                                               "Unknown or Completed, got `{}`",
                                               what, p.first.Scalar(), phase));
      }
    } else if (k == "warnings") {
      ASSIGN_OR_RETURN(out.warnings, ReadStringList(v, what));
    } else if (k == "evictions") {
      ASSIGN_OR_RETURN(auto list, ReadStringList(v, what));
      out.evictions.emplace(list.begin(), list.end());
      for (const auto& item : v) expect_pods_.emplace_back(item.Scalar(), yaml::Where(item, r_.file()));
      if (out.evictions->size() != list.size())
        return r_.Fail(v, fmt::format("{} lists a pod twice", what));
    } else if (k == "calls") {
      out.calls.emplace();
      TRY(ReadCalls(v, what, true, *out.calls));
    } else if (k == "podAnnotations") {
      TRY(r_.ExpectAnyMap(v, what));
      auto& pods = out.pod_annotations.emplace();
      if (!v.IsNull())
        for (const auto& p : v) {
          std::string pod(p.first.Scalar());
          ASSIGN_OR_RETURN(auto annotations,
                           ReadStringMap(p.second, fmt::format("`{}` in {}", pod, what)));
          pods[pod] = std::map<std::string, std::string>(annotations.begin(), annotations.end());
          expect_pods_.emplace_back(pod, yaml::Where(p.first, r_.file()));
        }
    } else if (k == "bindCountsByLeafHyperNode") {
      TRY(r_.ExpectList(v, what));
      std::vector<int64_t> counts;
      for (const auto& item : v) {
        ASSIGN_OR_RETURN(int64_t c, r_.Int(item, fmt::format("an entry of {}", what)));
        if (c <= 0) return r_.Fail(item, fmt::format("an entry of {} must be positive", what));
        counts.push_back(c);
      }
      if (!std::is_sorted(counts.begin(), counts.end()))
        return r_.Fail(v, fmt::format("{} must be sorted ascending", what));
      out.bind_counts_by_leaf_hyper_node = std::move(counts);
    } else if (k == "bindCount" || k == "evictionCount") {
      ASSIGN_OR_RETURN(int64_t c, r_.Int(v, what));
      if (c < 0) return r_.Fail(v, fmt::format("{} must not be negative", what));
      (k == "bindCount" ? out.bind_count : out.eviction_count) = c;
    }
  }
  return Status::Ok();
}


// ------------------------------------------------------------------------------------------
// Direct extension-point calls (`calls:` and `expect.calls`)

Status Loader::ReadCalls(const yaml::Node& n, std::string_view what, bool with_results,
                         std::vector<CallSpec>& out) {
  TRY(r_.ExpectList(n, what));
  if (n.IsNull()) return Status::Ok();
  for (size_t i = 0; i < n.size(); ++i) {
    out.emplace_back();
    TRY(ReadCall(n[i], fmt::format("{}[{}]", what, i), with_results, out.back()));
  }
  return Status::Ok();
}

Status Loader::ReadCall(const yaml::Node& n, std::string_view what, bool with_results,
                        CallSpec& out) {
  TRY(r_.ExpectAnyMap(n, what, false));
  out.where = yaml::Where(n, r_.file());
  const yaml::Node fn_node = n["fn"];
  if (!fn_node.IsDefined()) return r_.Fail(n, fmt::format("{} has no `fn`", what));
  ASSIGN_OR_RETURN(out.fn, Str(fn_node, fmt::format("{} `fn`", what)));
  std::optional<CallShape> shape = ShapeOfCall(out.fn);
  if (!shape) {
    std::vector<std::string_view> fns = CallableFunctions();
    return r_.Fail(fn_node, fmt::format("{}: unknown fn `{}` (callable: {}){}", what, out.fn,
                                        fmt::join(fns, ", "), yaml::DidYouMean(out.fn, fns)));
  }
  out.point = shape->point;
  std::vector<std::string_view> allowed = {"fn"};
  allowed.insert(allowed.end(), shape->required.begin(), shape->required.end());
  allowed.insert(allowed.end(), shape->optional.begin(), shape->optional.end());
  if (with_results) allowed.push_back("result");
  TRY(r_.ExpectMap(n, fmt::format("{} (fn `{}`)", what, out.fn), allowed));
  for (std::string_view key : shape->required)
    if (!n[std::string(key)].IsDefined())
      return r_.Fail(n, fmt::format("{}: fn `{}` needs `{}`", what, out.fn, key));

  // What the l/r of an order compare: the kind of the point's first parameter.
  const AbiKind pair_kind = Info(out.point).params[0];
  auto ref = [&](RefKind kind, const yaml::Node& v, const std::string& name) {
    call_refs_.push_back(CallRef{kind, name, yaml::Where(v, r_.file())});
  };
  auto pair_ref = pair_kind == AbiKind::Job     ? RefKind::Job
                  : pair_kind == AbiKind::Queue ? RefKind::Queue
                                                : RefKind::Pod;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    std::string f = fmt::format("{} `{}`", what, k);
    if (k == "fn" || k == "result") continue;
    if (k == "preemptor") {
      out.has_preemptor = true;
      if (v.IsNull()) continue;
      ASSIGN_OR_RETURN(out.preemptor, Str(v, f));
      ref(RefKind::Pod, v, *out.preemptor);
    } else if (k == "candidates" || k == "nodes") {
      ASSIGN_OR_RETURN(auto list, ReadStringList(v, f));
      for (size_t i = 0; i < list.size(); ++i)
        ref(k == "nodes" ? RefKind::Node : RefKind::Pod, v[i], list[i]);
      (k == "nodes" ? out.nodes : out.candidates) = std::move(list);
    } else if (k == "scores") {
      TRY(r_.ExpectList(v, f));
      std::vector<double> scores;
      for (const auto& item : v) {
        ASSIGN_OR_RETURN(double x, r_.Number(item, f));
        scores.push_back(x);
      }
      out.scores = std::move(scores);
    } else {
      ASSIGN_OR_RETURN(std::string name, Str(v, f));
      if (k == "task") out.task = name, ref(RefKind::Pod, v, name);
      else if (k == "node") out.node = name, ref(RefKind::Node, v, name);
      else if (k == "job") out.job = name, ref(RefKind::Job, v, name);
      else if (k == "queue") out.queue = name, ref(RefKind::Queue, v, name);
      // Sub-jobs exist once the session has opened: RunCalls resolves them.
      else if (k == "subJob") out.sub_job = name;
      else if (k == "l") out.l = name, pair_kind == AbiKind::SubJob ? void() : ref(pair_ref, v, name);
      else if (k == "r") out.r = name, pair_kind == AbiKind::SubJob ? void() : ref(pair_ref, v, name);
    }
  }
  if (out.scores && out.nodes && out.scores->size() != out.nodes->size())
    return r_.Fail(n["scores"], fmt::format("{}: {} scores for {} nodes", what,
                                            out.scores->size(), out.nodes->size()));
  if (with_results) {
    const yaml::Node res = n["result"];
    if (res.IsDefined()) {
      ASSIGN_OR_RETURN(out.result, ReadCallResult(res, fmt::format("{} `result`", what), shape->result));
    }
  }
  return Status::Ok();
}

Result<CallValue> Loader::ReadCallResult(const yaml::Node& n, std::string_view what,
                                         CallValue::Kind kind) {
  CallValue v;
  v.kind = kind;
  switch (kind) {
    case CallValue::Kind::Null:
      if (!n.IsNull()) return r_.Fail(n, fmt::format("{} must be null, got {}", what, yaml::KindName(n)));
      break;
    case CallValue::Kind::Bool: {
      ASSIGN_OR_RETURN(v.boolean, r_.Bool(n, what));
      break;
    }
    case CallValue::Kind::Int: {
      ASSIGN_OR_RETURN(v.integer, r_.Int(n, what));
      if (v.integer < -1 || v.integer > 1)
        return r_.Fail(n, fmt::format("{} must be -1, 0 or 1, got {}", what, v.integer));
      break;
    }
    case CallValue::Kind::Number: {
      ASSIGN_OR_RETURN(v.number, r_.Number(n, what));
      break;
    }
    case CallValue::Kind::Status: {
      if (Status st = r_.ExpectMap(n, what, {"code", "reason"}); !st) return st.error();
      if (!n["code"].IsDefined()) return r_.Fail(n, fmt::format("{} has no `code`", what));
      ASSIGN_OR_RETURN(v.code, Str(n["code"], fmt::format("{} `code`", what)));
      static constexpr std::string_view kCodes[] = {
          "Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip"};
      if (std::find(std::begin(kCodes), std::end(kCodes), v.code) == std::end(kCodes))
        return r_.Fail(n["code"], fmt::format("{} `code` must be one of Success, Error, "
                                              "Unschedulable, UnschedulableAndUnresolvable, Wait, "
                                              "Skip; got `{}`",
                                              what, v.code));
      if (n["reason"].IsDefined() && !n["reason"].IsNull()) {
        ASSIGN_OR_RETURN(v.text, Str(n["reason"], fmt::format("{} `reason`", what)));
      }
      break;
    }
    case CallValue::Kind::Tasks: {
      ASSIGN_OR_RETURN(v.names, ReadStringList(n, what));
      for (size_t i = 0; i < v.names.size(); ++i)
        call_refs_.push_back(CallRef{RefKind::Pod, v.names[i], yaml::Where(n[i], r_.file())});
      break;
    }
    case CallValue::Kind::NodeScores: {
      if (Status st = r_.ExpectAnyMap(n, what); !st) return st.error();
      for (const auto& kv : n) {
        ASSIGN_OR_RETURN(double x, r_.Number(kv.second, fmt::format("{} `{}`", what, kv.first.Scalar())));
        v.scores.emplace_back(kv.first.Scalar(), x);
        call_refs_.push_back(CallRef{RefKind::Node, std::string(kv.first.Scalar()), yaml::Where(kv.first, r_.file())});
      }
      break;
    }
    case CallValue::Kind::Node: {
      if (n.IsNull()) break;
      ASSIGN_OR_RETURN(v.text, Str(n, what));
      call_refs_.push_back(CallRef{RefKind::Node, v.text, yaml::Where(n, r_.file())});
      break;
    }
    case CallValue::Kind::Error:
      break;
  }
  return v;
}

}  // namespace kiln::scenario_loader
