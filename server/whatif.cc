#include "server/whatif.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_set>

#include "kubernetes/decode.h"
#include "kubernetes/volcano_job.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "runtime/yaml_util.h"
#include "server/scheduler_loop.h"

namespace kiln::server {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// ---- the request body -----------------------------------------------------------------------

// A YAML document as the JSON the API server would take for it (what kubectl sends): quoted
// scalars are strings, plain ones null, booleans (YAML 1.1 spellings, as sigs.k8s.io/yaml reads
// them), integers and floats when they read as such, strings otherwise. Quantities such as `500m`
// stay strings; the decoders read numbers and strings alike.
Json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : n) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.Scalar()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (yaml::IsQuoted(n)) return s;
      if (s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
      if (auto b = yaml::ParseBoolText(s)) return *b;
      if (auto i = yaml::ParseIntText(s)) return *i;
      if (auto d = yaml::ParseFloatText(s)) return *d;
      return s;
    }
  }
  return nullptr;
}

Result<std::vector<Json>> ReadDocuments(std::string_view body, bool json) {
  std::vector<Json> docs;
  if (json) {
    try {
      docs.push_back(Json::parse(body));
    } catch (const Json::parse_error& e) {
      return Error{fmt::format("the body is not JSON: {}", e.what()), {"request body", 0, 0}};
    }
    return docs;
  }
  try {
    for (const YAML::Node& d : YAML::LoadAll(std::string(body))) {
      if (!d.IsNull()) docs.push_back(YamlToJson(d));
    }
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("the body is not YAML: {}", e.msg),
                 {"request body", e.mark.line + 1, e.mark.column + 1}};
  }
  return docs;
}

std::string Describe(const Json& obj, size_t index) {
  std::string kind = obj.is_object() && obj.contains("kind") && obj["kind"].is_string()
                         ? obj["kind"].get<std::string>()
                         : std::string("?");
  std::string name;
  if (obj.is_object() && obj.contains("metadata") && obj["metadata"].is_object()) {
    const Json& m = obj["metadata"];
    if (m.contains("name") && m["name"].is_string()) name = m["name"].get<std::string>();
    if (m.contains("namespace") && m["namespace"].is_string())
      name = m["namespace"].get<std::string>() + "/" + name;
  }
  return fmt::format("object {} ({}{})", index + 1, kind, name.empty() ? "" : " " + name);
}

// ---- the session ------------------------------------------------------------------------------

// Which plugins refused `job` at enqueue. The session's vote combines every plugin's; each plugin
// that registered a job_enqueueable handler is asked alone (the others' enqueue flags off) in a
// session that runs enqueue only: those that still keep the job out are the ones that refused it.
// Only run for a job that was not admitted, so an admitted job costs nothing more.
std::vector<std::string> RefusingPlugins(const ClusterSpec& cluster, const PolicySet& set,
                                         TimeNs now, const std::string& job,
                                         const std::vector<std::string>& voters) {
  std::vector<std::string> out;
  const auto flag = static_cast<size_t>(PluginFlag::enableJobEnqueued);
  for (const std::string& voter : voters) {
    // A fresh parse of the same text (a SchedulerConf is not copied: its arguments are recursive).
    auto parsed = ParseSchedulerConf(set.conf_text, set.conf.source_file);
    if (!parsed) continue;
    SchedulerConf conf = std::move(*parsed);
    conf.actions = {"enqueue"};
    for (Tier& t : conf.tiers)
      for (PluginOption& p : t.plugins)
        if (p.name != voter) p.flags[flag] = false;
    auto built = BuildCluster(cluster);
    if (!built) continue;
    auto r = RunSession(std::move(*built), conf, set.registry, now, 0);
    if (!r) continue;
    auto phase = r->pod_group_phases.find(job);
    if (phase != r->pod_group_phases.end() && phase->second == "Pending") out.push_back(voter);
  }
  return out;
}

std::string JoinResources(const std::vector<std::string>& dims) {
  return fmt::format("{}", fmt::join(dims, ", "));
}

// The reasons the explanation of one pod gives: its pre-predicate, the action's note, then each
// distinct node rejection once, with how many nodes gave it.
// A reason's stable code (docs/reasons.md): the first of the codes its texts carry.
std::string FirstCode(const std::vector<std::string>& codes) {
  return codes.empty() || codes.front().empty() ? "Unspecified" : codes.front();
}

std::vector<WhatIfReason> ReasonsOf(const TaskExplain& t) {
  std::vector<WhatIfReason> out;
  if (t.pre_predicate)
    out.push_back({FirstCode(t.pre_predicate->codes),
                   fmt::format("{}: {}", t.pre_predicate->plugin, t.pre_predicate->reason)});
  if (!t.note.empty()) out.push_back({t.note_code.empty() ? "Unspecified" : t.note_code, t.note});
  struct Seen {
    std::string code, text;
    int nodes;
  };
  std::vector<Seen> seen;
  auto add = [&](const std::string& code, const std::string& text) {
    for (Seen& s : seen)
      if (s.text == text) {
        ++s.nodes;
        return;
      }
    seen.push_back({code, text, 1});
  };
  for (const NodeExplain& n : t.nodes) {
    if (n.code != StatusCode::Success) add(FirstCode(n.codes), n.reason);
    else if (n.fits == "none")
      add("InsufficientResource", "Insufficient " + JoinResources(n.insufficient));
  }
  for (const Seen& s : seen)
    out.push_back({s.code, fmt::format("{} ({} node{})", s.text, s.nodes, s.nodes == 1 ? "" : "s")});
  return out;
}

}  // namespace

// ---- parsing --------------------------------------------------------------------------------

Result<WhatIfObjects> ParseWhatIfObjects(std::string_view body, bool json,
                                         const WhatIfLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    return Error{fmt::format("the body has {} bytes; at most {} are read", body.size(),
                             limits.max_body_bytes),
                 {}};
  auto docs = ReadDocuments(body, json);
  if (!docs) return docs.error();
  std::vector<Json> items;
  for (Json& d : *docs) {
    if (d.is_array()) {
      for (Json& i : d) items.push_back(std::move(i));
    } else if (d.is_object() && d.value("kind", "") == "List") {
      if (!d.contains("items") || !d["items"].is_array())
        return Error{"a `kind: List` needs an `items` list", {"request body", 0, 0}};
      for (Json& i : d["items"]) items.push_back(std::move(i));
    } else {
      items.push_back(std::move(d));
    }
  }
  WhatIfObjects out;
  std::set<std::string> keys;
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& obj = items[i];
    std::string where = Describe(obj, i);
    if (!obj.is_object())
      return Error{fmt::format("{}: an object was expected, got {}", where, obj.type_name()), {}};
    std::string kind = obj.contains("kind") && obj["kind"].is_string() ? obj["kind"].get<std::string>() : "";
    try {
      if (kube::IsVolcanoJob(obj)) {
        if (out.group || !out.pods.empty() || items.size() > 1)
          return Error{fmt::format("{}: a Job comes alone (its controller makes the PodGroup and "
                                   "pods; send those instead to change them)",
                                   where),
                       {}};
        auto expanded = kube::ExpandVolcanoJob(obj);
        if (!expanded) return Error{fmt::format("{}: {}", where, expanded.error().message), {}};
        if (expanded->pods.size() > limits.max_pods)
          return Error{fmt::format("{}: the Job has {} pods; at most {} are read in one what-if",
                                   where, expanded->pods.size(), limits.max_pods),
                       {}};
        out.group = std::move(expanded->group);
        out.volcano_tasks = std::move(expanded->tasks);
        // Its pods are read as any pod is, after it (`obj` is not used past this point).
        for (Json& pod : expanded->pods) items.push_back(std::move(pod));
        continue;
      }
      if (kind == "PodGroup") {
        if (out.group)
          return Error{fmt::format("{}: one PodGroup per what-if (the request already has {})",
                                   where, out.group->Uid()),
                       {}};
        auto g = kube::DecodePodGroup(obj);
        if (!g) return Error{fmt::format("{}: {}", where, g.error().message), {}};
        out.group = std::move(g->spec);
      } else if (kind == "Pod") {
        auto p = kube::DecodePod(obj);
        if (!p) return Error{fmt::format("{}: {}", where, p.error().message), {}};
        PodSpec pod = std::move(p->spec);
        if (!pod.node.empty())
          return Error{fmt::format("{}: spec.nodeName is set (`{}`): a what-if places new pods",
                                   where, pod.node),
                       {}};
        if (pod.phase != PodPhase::Pending)
          return Error{fmt::format("{}: status.phase is {}: a what-if places Pending pods", where,
                                   ToString(pod.phase)),
                       {}};
        // The question is what this scheduler would do with the pod.
        if (pod.scheduler_name() != kDefaultSchedulerName)
          pod.mutable_extras().scheduler_name = std::string(kDefaultSchedulerName);
        if (!keys.insert(pod.Key()).second)
          return Error{fmt::format("{}: pod {} is given twice", where, pod.Key()), {}};
        out.pods.push_back(std::move(pod));
        if (out.pods.size() > limits.max_pods)
          return Error{fmt::format("more than {} pods in one what-if", limits.max_pods), {}};
      } else {
        return Error{fmt::format("{}: kind `{}` is not read by a what-if (Pod and PodGroup are)",
                                 where, kind.empty() ? "(none)" : kind),
                     {}};
      }
    } catch (const std::exception& e) {
      return Error{fmt::format("{}: {}", where, e.what()), {}};
    }
  }
  if (!out.group && out.pods.empty())
    return Error{"nothing to add: the body has no Pod or PodGroup", {}};
  if (out.group) {
    for (const PodSpec& p : out.pods) {
      if (p.group.empty())
        return Error{fmt::format("pod {} names no PodGroup (annotation {}) while the request has "
                                 "PodGroup {}",
                                 p.Key(), kube::kGroupNameAnnotation, out.group->Uid()),
                     {}};
      if (p.JobUid() != out.group->Uid())
        return Error{fmt::format("pod {} belongs to PodGroup {}, not to the request's {}", p.Key(),
                                 p.JobUid(), out.group->Uid()),
                     {}};
    }
  }
  return out;
}

// ---- answers --------------------------------------------------------------------------------

std::string WhatIfJson(const WhatIfAnswer& a) {
  OrderedJson j;
  j["admitted"] = a.admitted;
  j["admission"] = OrderedJson{{"plugin", a.admission_plugin},
                               {"code", a.admission_code},
                               {"message", a.admission_message}};
  j["placements"] = OrderedJson::object();
  for (const auto& [pod, node] : a.placements) j["placements"][pod] = node;
  j["pipelined"] = OrderedJson::object();
  for (const auto& [pod, node] : a.pipelined) j["pipelined"][pod] = node;
  j["evictions"] = a.evictions;
  j["queuePosition"] = a.queue_position;
  j["reasons"] = OrderedJson::object();
  for (const auto& [pod, reasons] : a.reasons) {
    OrderedJson list = OrderedJson::array();
    for (const WhatIfReason& r : reasons)
      list.push_back(OrderedJson{{"code", r.code}, {"message", r.message}});
    j["reasons"][pod] = std::move(list);
  }
  j["job"] = a.job;
  return j.dump(2) + "\n";
}

namespace {

Status CheckNoCollision(OffPathCluster& base, const WhatIfObjects& objects) {
  if (!base.pod_keys) {
    base.pod_keys.emplace();
    base.group_uids.emplace();
    for (const PodSpec& p : base.spec.pods) base.pod_keys->insert(p.Key());
    for (const PodGroupSpec& g : base.spec.pod_groups) base.group_uids->insert(g.Uid());
  }
  for (const PodSpec& p : objects.pods)
    if (base.pod_keys->count(p.Key()))
      return Error{fmt::format("pod {} already exists in the cluster: a what-if adds new pods "
                               "(rename it)",
                               p.Key()),
                   {}};
  if (objects.group && base.group_uids->count(objects.group->Uid()))
    return Error{fmt::format("PodGroup {} already exists in the cluster: a what-if adds a new "
                             "one (rename it, or send only pods that name the existing one)",
                             objects.group->Uid()),
                 {}};
  if (!objects.group) {
    for (const PodSpec& p : objects.pods)
      if (!p.group.empty() && !base.group_uids->count(p.JobUid()))
        return Error{fmt::format("pod {} names PodGroup {}, which neither the cluster nor the "
                                 "request has",
                                 p.Key(), p.JobUid()),
                     {}};
  }
  return Status::Ok();
}

struct Explained {
  SessionResult result;
  Explanation explanation;                  // when recorded
  std::vector<std::string> enqueue_voters;  // plugins with a job_enqueueable handler
  int queue_position = 0;                   // of `job`, when given
};

// One session on `cluster`. With `record`, the explanation of `pods` as the actions decided them
// (and of every job and queue); `job`: the job whose place in its queue's order is wanted.
Result<Explained> RunExplained(Cluster built, std::set<std::string> pods, const PolicySet& set,
                               TimeNs now, bool record, const std::string& job = {}) {
  // An empty set would record every pod: a key no pod has records none.
  if (pods.empty()) pods.insert(std::string(1, '\0'));
  ExplainRecorder recorder(std::move(pods));
  Explained out;
  SessionHooks hooks = record ? RecordingHooks(recorder) : SessionHooks{};
  hooks.before_close = [&, finish = std::move(hooks.before_close)](Session& ssn) {
    if (finish) finish(ssn);
    for (const Session::HandlerUse& u : ssn.HandlerCoverage())
      if (u.point == ExtensionPoint::JobEnqueueable &&
          std::find(out.enqueue_voters.begin(), out.enqueue_voters.end(), u.plugin) ==
              out.enqueue_voters.end())
        out.enqueue_voters.push_back(u.plugin);
    // The job's place among its queue's jobs in the session's job order (as explain's `order`).
    const Job* mine = nullptr;
    for (const Job* j : ssn.cluster().jobs())
      if (j->uid == job) mine = j;
    if (mine != nullptr) {
      out.queue_position = 1;
      for (const Job* j : ssn.cluster().jobs())
        if (j != mine && j->queue == mine->queue && ssn.JobLess(j, mine)) ++out.queue_position;
    }
  };
  auto result = RunSession(std::move(built), set.conf, set.registry, now, 0, &hooks);
  if (!result) return result.error();
  if (record) recorder.ApplyResults(*result);
  out.result = std::move(*result);
  if (record) out.explanation = std::move(recorder.explanation());
  return out;
}

Result<Explained> RunExplained(const ClusterSpec& cluster, std::set<std::string> pods,
                               const PolicySet& set, TimeNs now, bool record,
                               const std::string& job = {}) {
  auto built = BuildCluster(cluster);
  if (!built) return built.error();
  return RunExplained(std::move(*built), std::move(pods), set, now, record, job);
}

// The session model of the copy with the job's objects added: one the publisher built ahead
// (OffPathCluster::spares) when one is ready, which is used up (Replenish has the next one
// built), else one built now from the copy, without waiting for the publisher (it runs at a lower
// priority, and the request would wait on it behind everything else the machine runs). None when
// the model cannot take the objects (PartialCluster::CanAdd): the caller builds the copy with them.
std::optional<Cluster> ModelWithJob(OffPathCluster& base, const std::vector<PodGroupSpec>& groups,
                                    const std::vector<PodSpec>& pods, bool* prebuilt) {
  std::optional<PartialCluster> part = base.TakeSpare();
  *prebuilt = part.has_value();
  if (!part) part.emplace(base.spec);  // a read, as the publisher's: no lock needed
  if (!part->CanAdd(groups)) return std::nullopt;
  auto built = std::move(*part).Finish(groups, pods);
  // Finish fails where BuildCluster would (a duplicate name): the build from the copy says why.
  if (!built) return std::nullopt;
  return std::move(*built);
}

}  // namespace

Result<WhatIfAnswer> RunWhatIf(ClusterSpec cluster, const WhatIfObjects& objects,
                               const PolicySet& set, TimeNs now) {
  OffPathCluster base;
  base.now = now;
  CompleteOptions complete;
  complete.now = now;
  base.warnings = CompleteCluster(cluster, complete);
  base.spec = std::move(cluster);
  return RunWhatIfOn(base, objects, set);
}

Result<WhatIfAnswer> RunWhatIfOn(OffPathCluster& base, const WhatIfObjects& objects,
                                 const PolicySet& set) {
  const TimeNs now = base.now;
  if (Status s = CheckNoCollision(base, objects); !s) return s.error();
  std::vector<PodGroupSpec> groups;
  if (objects.group) {
    groups.push_back(*objects.group);
    if (!objects.volcano_tasks.empty())
      groups.back().min_resources = kube::VolcanoJobMinResources(
          objects.volcano_tasks, objects.group->min_member, base.spec.priority_classes);
  }
  std::vector<PodSpec> pods = objects.pods;
  std::vector<ClusterWarning> warnings;
  CompleteAdded(base.spec, groups, pods, now, &warnings);

  WhatIfAnswer a;
  std::set<std::string> added;
  for (const PodSpec& p : pods) added.insert(p.Key());
  a.job = objects.group ? objects.group->Uid() : (pods.empty() ? std::string() : pods.front().JobUid());
  // The copy with the job's objects in it, made when a session needs it as a ClusterSpec: they
  // stay in base.spec (under base.mu, which keeps the publisher from reading it meanwhile) until
  // `extension` ends.
  std::unique_lock<std::mutex> spec_lock(base.mu, std::defer_lock);
  std::optional<OffPathExtension> extension;
  auto with_job = [&]() -> const ClusterSpec& {
    if (!extension) {
      spec_lock.lock();
      extension.emplace(base.spec, groups, pods);
    }
    return base.spec;
  };
  // The session as the scheduler would run it, unobserved but for the job's queue position.
  std::optional<Cluster> model = ModelWithJob(base, groups, pods, &a.prebuilt);
  auto ran = model ? RunExplained(std::move(*model), {}, set, now, /*record=*/false, a.job)
                   : RunExplained(with_job(), {}, set, now, /*record=*/false, a.job);
  model.reset();
  if (!ran) return ran.error();
  a.session = std::move(ran->result);
  a.queue_position = ran->queue_position;
  const SessionResult& r = a.session;

  for (const std::string& pod : added) {
    if (auto b = r.binds.find(pod); b != r.binds.end()) a.placements[pod] = b->second;
    if (auto p = r.pipelined.find(pod); p != r.pipelined.end()) a.pipelined[pod] = p->second;
  }

  // Admission: the job left Pending (enqueue let it in), or it is not scheduled at all.
  auto phase = r.pod_group_phases.find(a.job);
  if (phase == r.pod_group_phases.end()) {
    a.admitted = false;
    a.admission_code = "Unspecified";
    a.admission_message = fmt::format("PodGroup {} is not scheduled", a.job);
    for (const ClusterWarning& w : warnings)
      if (w.message.find(a.job) != std::string::npos) {
        a.admission_message = w.message;
        break;
      }
  } else if (phase->second == "Pending") {
    a.admitted = false;
    // The session's own record of the refusal (the first plugin whose vote rejected it, with the
    // code and message it gave); the probe below names every plugin that refuses it alone.
    if (auto refusal = r.admission_refusals.find(a.job); refusal != r.admission_refusals.end())
      a.admission_code = refusal->second.code;
    if (a.admission_code.empty()) a.admission_code = "EnqueueRejected";
    std::vector<std::string> refusing =
        RefusingPlugins(with_job(), set, now, a.job, ran->enqueue_voters);
    a.admission_plugin = fmt::format("{}", fmt::join(refusing, ","));
    a.admission_message =
        refusing.empty()
            ? std::string("enqueue did not admit the PodGroup (the plugins' votes together "
                          "rejected it; none rejects it alone)")
            : fmt::format("{} rejected the PodGroup at enqueue (job_enqueueable): it stays Pending",
                          fmt::join(refusing, " and "));
    if (auto refusal = r.admission_refusals.find(a.job);
        refusal != r.admission_refusals.end() && !refusal->second.message.empty())
      a.admission_message += fmt::format(" ({}: {})", refusal->second.plugin, refusal->second.message);
  } else {
    a.admitted = true;
  }

  // Each added pod not placed: why. Pods placed need no explanation: only when some were not is the session run again (it
  // decides the same) with the actions' answers for those pods recorded.
  std::set<std::string> unplaced;
  for (const std::string& pod : added)
    if (!a.placements.count(pod) && !a.pipelined.count(pod)) unplaced.insert(pod);
  std::map<std::string, std::vector<WhatIfReason>> explained;
  if (a.admitted && !unplaced.empty()) {
    auto again = RunExplained(with_job(), unplaced, set, now, /*record=*/true);
    if (!again) return again.error();
    for (const TaskExplain& t : again->explanation.tasks) explained[t.key] = ReasonsOf(t);
  }
  for (const std::string& pod : added) {
    if (a.placements.count(pod) || a.pipelined.count(pod)) continue;
    std::vector<WhatIfReason>& out = a.reasons[pod];
    // Not admitted: that is the reason; what gang says of a job allocate never saw follows.
    if (!a.admitted) out.push_back({a.admission_code, "not admitted: " + a.admission_message});
    if (auto u = r.unschedulable.find(pod); u != r.unschedulable.end()) {
      auto codes = r.unschedulable_codes.find(pod);
      out.push_back({codes == r.unschedulable_codes.end() ? "Unspecified" : FirstCode(codes->second),
                     u->second});
    }
    if (auto e = explained.find(pod); e != explained.end())
      for (WhatIfReason& w : e->second) out.push_back(std::move(w));
    if (out.empty()) out.push_back({"Unspecified", "no action considered the pod in this session"});
  }
  extension.reset();
  if (spec_lock.owns_lock()) spec_lock.unlock();

  // The job's evictions: those the same session without it does not make. The session without
  // the job is run only when there is something to tell apart, once per copy and configuration.
  if (!r.evictions.empty()) {
    if (!base.baseline_evictions || base.baseline_hash != set.hash) {
      auto baseline = RunExplained(base.spec, {}, set, now, /*record=*/false);
      if (!baseline) return baseline.error();
      base.baseline_evictions = std::set<std::string>(baseline->result.evictions.begin(),
                                                      baseline->result.evictions.end());
      base.baseline_hash = set.hash;
    }
    for (const std::string& pod : r.evictions)
      if (!base.baseline_evictions->count(pod)) a.evictions.push_back(pod);
    std::sort(a.evictions.begin(), a.evictions.end());
  }
  return a;
}

Result<Explanation> ExplainOffPath(const ClusterSpec& cluster, const std::set<std::string>& pods,
                                   const PolicySet& set, TimeNs now) {
  auto ran = RunExplained(cluster, pods, set, now, /*record=*/true);
  if (!ran) return ran.error();
  return std::move(ran->explanation);
}

// ---- the serve side ---------------------------------------------------------------------------

struct OffPathRunner::Stats {
  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("kiln_whatif_requests_total")
          .Help("Off-path requests (POST /whatif, GET /explain) by outcome.")
          .Register(registry);
  prometheus::Counter& faults =
      prometheus::BuildCounter()
          .Name("kiln_whatif_policy_faults_total")
          .Help("Policy faults in off-path sessions (not counted with the live ones).")
          .Register(registry)
          .Add({});
  prometheus::Counter& prebuilt =
      prometheus::BuildCounter()
          .Name("kiln_whatif_prebuilt_sessions_total")
          .Help("What-if sessions that started from a session model built ahead of the request.")
          .Register(registry)
          .Add({});
  // 5 ms to about 20 s, doubling.
  static prometheus::Histogram::BucketBoundaries Buckets() {
    prometheus::Histogram::BucketBoundaries b;
    for (double v = 0.005; v < 25; v *= 2) b.push_back(v);
    return b;
  }
  prometheus::Histogram& session_seconds =
      prometheus::BuildHistogram()
          .Name("kiln_whatif_session_seconds")
          .Help("Time spent in off-path sessions and their answers.")
          .Register(registry)
          .Add({}, Buckets());
  prometheus::Histogram& snapshot_seconds =
      prometheus::BuildHistogram()
          .Name("kiln_whatif_snapshot_seconds")
          .Help("Time spent copying the cluster for off-path sessions.")
          .Register(registry)
          .Add({}, Buckets());
};

OffPathRunner::~OffPathRunner() = default;

OffPathRunner::OffPathRunner(Deps deps, WhatIfLimits limits)
    : deps_(std::move(deps)), limits_(limits), stats_(std::make_unique<Stats>()) {
  // Off-path sessions keep no state across sessions: never the live store.
  deps_.sources.kept_state = nullptr;
  if (!deps_.clock) deps_.clock = WallClockNs;
  if (deps_.snapshot)
    snapshots_ = std::make_unique<OffPathSnapshots>(deps_.snapshot, deps_.clock, deps_.snapshots);
}

Result<std::shared_ptr<const PolicySet>> OffPathRunner::Policies() {
  std::shared_ptr<const PolicySet> live = deps_.live ? deps_.live() : nullptr;
  if (!live) return Error{"no configuration is loaded yet", {}};
  std::lock_guard<std::mutex> lock(set_mu_);
  if (set_ && set_generation_ == live->generation) return set_;
  auto built = LoadPolicySet(deps_.sources, deps_.factory, live->generation);
  if (!built)
    return Error{fmt::format("the configuration cannot be built for an off-path session: {}",
                             built.error().Format()),
                 {}};
  if ((*built)->hash != live->hash)
    return Error{fmt::format("the policy files changed since the live configuration (generation "
                             "{}, sha256:{}) was loaded; they now hash to sha256:{}. The "
                             "scheduler has not taken the change yet: retry after its reload",
                             live->generation, live->hash.substr(0, 12),
                             (*built)->hash.substr(0, 12)),
                 {}};
  set_ = *built;
  set_generation_ = live->generation;
  return set_;
}

namespace {

OffPathRunner::Reply JsonError(int status, const std::string& message, int retry_after = 0) {
  OffPathRunner::Reply r;
  r.status = status;
  r.body = OrderedJson{{"error", message}}.dump() + "\n";
  r.retry_after_s = retry_after;
  return r;
}

std::string Outcome(int status) {
  switch (status) {
    case 200: return "ok";
    case 400: case 413: case 415: return "bad_input";
    case 404: return "not_found";
    case 429: return "busy";
    case 503: return "unavailable";
    default: return "error";
  }
}

}  // namespace

OffPathRunner::Reply OffPathRunner::Count(std::string_view endpoint, Reply r) {
  stats_->requests.Add({{"endpoint", std::string(endpoint)}, {"outcome", Outcome(r.status)}})
      .Increment();
  return r;
}

OffPathRunner::Reply OffPathRunner::WhatIf(std::string_view body, std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  std::transform(type.begin(), type.end(), type.begin(), ::tolower);
  bool json = type == "application/json";
  bool yaml = type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml";
  if (!json && !yaml)
    return Count("whatif", JsonError(415, fmt::format("Content-Type `{}`: send application/yaml "
                                                      "or application/json",
                                                      type)));
  if (body.size() > limits_.max_body_bytes)
    return Count("whatif", JsonError(413, fmt::format("the body has {} bytes; at most {} are read",
                                                      body.size(), limits_.max_body_bytes)));
  auto objects = ParseWhatIfObjects(body, json, limits_);
  if (!objects) return Count("whatif", JsonError(400, objects.error().Format()));

  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock())
    return Count("whatif", JsonError(429, "another what-if or explain session is running", 1));
  ThreadPool::ThreadOverride own_pools(nodes_pool_, io_pool_);
  auto set = Policies();
  if (!set) return Count("whatif", JsonError(503, set.error().message, 5));
  if (!deps_.snapshot) return Count("whatif", JsonError(404, "no snapshot: this server has no cluster to ask"));
  std::shared_ptr<OffPathCluster> base = TakeSnapshot();
  if (Status s = CheckNoCollision(*base, *objects); !s)
    return Count("whatif", JsonError(400, s.error().message));
  auto start = std::chrono::steady_clock::now();
  auto answer = RunWhatIfOn(*base, *objects, **set);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  snapshots_->Replenish();  // the next model, built off this request's path
  if (!answer) return Count("whatif", JsonError(500, answer.error().Format()));
  stats_->faults.Increment(static_cast<double>(answer->session.faults.size()));
  if (answer->prebuilt) stats_->prebuilt.Increment();
  stats_->session_seconds.Observe(secs);
  Reply r;
  r.body = WhatIfJson(*answer);
  return Count("whatif", std::move(r));
}

OffPathRunner::Reply OffPathRunner::Explain(std::string_view kind, std::string_view name) {
  if (name.find('/') == std::string_view::npos)
    return Count("explain", JsonError(400, fmt::format("`{}` must be namespace/name", name)));
  if (!deps_.explain_json)
    return Count("explain", JsonError(404, "explanations are not available on this server"));
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock())
    return Count("explain", JsonError(429, "another what-if or explain session is running", 1));
  ThreadPool::ThreadOverride own_pools(nodes_pool_, io_pool_);
  auto set = Policies();
  if (!set) return Count("explain", JsonError(503, set.error().message, 5));
  if (!deps_.snapshot) return Count("explain", JsonError(404, "no snapshot: this server has no cluster to ask"));
  std::shared_ptr<OffPathCluster> base = TakeSnapshot();
  const ClusterSpec& cluster = base->spec;
  // Found in the snapshot as the session sees it (CompleteCluster's: one-pod groups included).
  std::set<std::string> pods;
  std::string job, queue;
  if (kind == "pod") {
    for (const PodSpec& p : cluster.pods)
      if (p.Key() == name && !p.foreign) {
        pods.insert(p.Key());
        job = p.JobUid();
      }
    if (pods.empty())
      return Count("explain", JsonError(404, fmt::format("no pod {} of this scheduler", name)));
  } else {
    for (const PodGroupSpec& g : cluster.pod_groups)
      if (g.Uid() == name) job = g.Uid();
    if (job.empty())
      return Count("explain", JsonError(404, fmt::format("no PodGroup {}", name)));
    for (const PodSpec& p : cluster.pods)
      if (!p.foreign && p.JobUid() == job) pods.insert(p.Key());
  }
  auto start = std::chrono::steady_clock::now();
  auto e = ExplainOffPath(cluster, pods, **set, base->now);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!e) return Count("explain", JsonError(500, e.error().Format()));
  stats_->session_seconds.Observe(secs);
  // Only the job asked about and its queue: the others are another question.
  std::erase_if(e->jobs, [&](const JobExplain& j) { return j.uid != job; });
  if (!e->jobs.empty()) queue = e->jobs.front().queue;
  std::erase_if(e->queues, [&](const QueueExplain& q) { return q.name != queue; });
  Reply r;
  r.body = deps_.explain_json(*e);
  return Count("explain", std::move(r));
}

std::shared_ptr<OffPathCluster> OffPathRunner::TakeSnapshot() {
  double secs = 0;
  std::shared_ptr<OffPathCluster> base = snapshots_->Current(&secs);
  stats_->snapshot_seconds.Observe(secs);
  return base;
}

void OffPathRunner::SessionDone() {
  if (snapshots_) snapshots_->SessionDone();
}

std::string OffPathRunner::MetricsText() const {
  return prometheus::TextSerializer().Serialize(stats_->registry.Collect());
}

}  // namespace kiln::server
