// The plain cluster structs as Kubernetes and Volcano manifests (`kiln export-manifests`), the
// inverse of decode.cc: decode(encode(x)) == x. YAML is written by yaml-cpp's emitter.
#include "kubernetes/encode.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "kubernetes/decode.h"  // the annotations that carry fields with no slot of their own
#include "kubernetes/encode_shapes.h"
#include "runtime/cpuset.h"
#include "runtime/quantity.h"

namespace kiln::kube {

using json = nlohmann::json;

namespace {

// A JSON list of the items, each encoded by `encode`.
template <typename T, typename F>
json JsonList(const std::vector<T>& items, F&& encode) {
  json out = json::array();
  for (const T& item : items) out.push_back(encode(item));
  return out;
}

}  // namespace

std::string FormatTimestamp(TimeNs t) {
  if (t == kZeroTime) return "0001-01-01T00:00:00Z";
  int64_t secs = t / 1'000'000'000;
  int64_t nanos = t % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --secs;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (nanos) {
    std::string frac = fmt::format("{:09d}", nanos);
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out + "Z";
}

std::string FormatQuantity(std::string_view resource, double value) {
  // Volcano's units: memory bytes and pods whole; cpu and scalar resources milli-units.
  if (resource == "memory" || resource == "pods")
    return fmt::format("{}", static_cast<int64_t>(std::llround(value)));
  int64_t milli = static_cast<int64_t>(std::llround(value));
  if (milli % 1000 == 0) return fmt::format("{}", milli / 1000);
  return fmt::format("{}m", milli);
}

json ResourcesJson(const Resource& r) {
  json out = json::object();
  for (int id = 0; id < kMaxResources; ++id) {
    if (!r.Has(static_cast<ResourceId>(id))) continue;
    std::string_view name = ResourceRegistry::Name(static_cast<ResourceId>(id));
    out[std::string(name)] = FormatQuantity(name, r.Get(static_cast<ResourceId>(id)));
  }
  return out;
}

// A container's requests: every present dimension, except cpu/memory written only when non-zero
// (they are always "present" in a Resource, but a scenario that omits them means no request).
json RequestsJson(const Resource& r) {
  json out = ResourcesJson(r);
  if (r.cpu() == 0) out.erase("cpu");
  if (r.memory() == 0) out.erase("memory");
  return out;
}

json MapJson(const StringMap& m) {
  json out = json::object();
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

static json MetaJson(const std::string& name, const std::string& ns, const StringMap& labels,
              const StringMap& annotations, TimeNs created) {
  json m = {{"name", name}};
  if (!ns.empty()) m["namespace"] = ns;
  if (!labels.empty()) m["labels"] = MapJson(labels);
  if (!annotations.empty()) m["annotations"] = MapJson(annotations);
  if (created != kUnsetTime) m["creationTimestamp"] = FormatTimestamp(created);
  return m;
}

static json RequirementJson(const SelectorRequirement& r) {
  json j = {{"key", r.key}, {"operator", r.op}};
  if (!r.values.empty()) j["values"] = r.values;
  return j;
}

json SelectorJson(const LabelSelector& s) {
  json j = json::object();
  if (!s.match_labels.empty()) j["matchLabels"] = MapJson(s.match_labels);
  if (!s.match_expressions.empty()) {
    j["matchExpressions"] = json::array();
    for (const auto& e : s.match_expressions) j["matchExpressions"].push_back(RequirementJson(e));
  }
  return j;
}

static json TermJson(const NodeSelectorTerm& t) {
  json j = json::object();
  if (!t.match_expressions.empty()) {
    j["matchExpressions"] = json::array();
    for (const auto& e : t.match_expressions) j["matchExpressions"].push_back(RequirementJson(e));
  }
  if (!t.match_fields.empty()) {
    j["matchFields"] = json::array();
    for (const auto& e : t.match_fields) j["matchFields"].push_back(RequirementJson(e));
  }
  return j;
}

static json AffinityTermJson(const PodAffinityTerm& t) {
  json j = {{"topologyKey", t.topology_key}};
  if (t.label_selector) j["labelSelector"] = SelectorJson(*t.label_selector);
  if (!t.namespaces.empty()) j["namespaces"] = t.namespaces;
  if (t.namespace_selector) j["namespaceSelector"] = SelectorJson(*t.namespace_selector);
  return j;
}

static json PodAffinityJson(const PodAffinity& a) {
  json j = json::object();
  if (!a.required.empty()) {
    j[std::string(kRequired)] = json::array();
    for (const auto& t : a.required) j[std::string(kRequired)].push_back(AffinityTermJson(t));
  }
  if (!a.preferred.empty()) {
    j[std::string(kPreferred)] = json::array();
    for (const auto& w : a.preferred)
      j[std::string(kPreferred)].push_back({{"weight", w.weight}, {"podAffinityTerm", AffinityTermJson(w.term)}});
  }
  return j;
}

json AffinityJson(const Affinity& a) {
  json j = json::object();
  if (a.node_affinity) {
    json na = json::object();
    if (a.node_affinity->required) {
      json terms = json::array();
      for (const auto& t : *a.node_affinity->required) terms.push_back(TermJson(t));
      na[std::string(kRequired)] = {{"nodeSelectorTerms", terms}};
    }
    if (!a.node_affinity->preferred.empty()) {
      json pref = json::array();
      for (const auto& p : a.node_affinity->preferred)
        pref.push_back({{"weight", p.weight}, {"preference", TermJson(p.preference)}});
      na[std::string(kPreferred)] = pref;
    }
    j["nodeAffinity"] = na;
  }
  if (a.pod_affinity) j["podAffinity"] = PodAffinityJson(*a.pod_affinity);
  if (a.pod_anti_affinity) j["podAntiAffinity"] = PodAffinityJson(*a.pod_anti_affinity);
  return j;
}

json NetworkTopologyJson(const NetworkTopologySpec& nt) {
  json j = {{"mode", nt.mode == NetworkTopologyMode::Soft ? "soft" : "hard"}};
  if (nt.highest_tier_allowed) j["highestTierAllowed"] = *nt.highest_tier_allowed;
  if (!nt.highest_tier_name.empty()) j["highestTierName"] = nt.highest_tier_name;
  return j;
}

json HyperNodeSpecJson(const HyperNodeSpec& hn) {
  json members = json::array();
  for (const auto& m : hn.members) {
    json sel;
    switch (m.selector) {
      case HyperNodeMemberSpec::Selector::Exact: sel = {{"exactMatch", {{"name", m.name}}}}; break;
      case HyperNodeMemberSpec::Selector::Regex: sel = {{"regexMatch", {{"pattern", m.pattern}}}}; break;
      case HyperNodeMemberSpec::Selector::Label: sel = {{"labelMatch", SelectorJson(m.labels)}}; break;
    }
    members.push_back({{"type", m.type == HyperNodeMemberSpec::Type::Node ? "Node" : "HyperNode"}, {"selector", sel}});
  }
  json spec = {{"tier", hn.tier}};
  if (!hn.tier_name.empty()) spec["tierName"] = hn.tier_name;
  spec["members"] = members;
  return spec;
}

// A cpuset back in the kubelet's list format, runs written as ranges ("0-3,8").
static std::string CpuSetText(const std::set<int64_t>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int64_t lo = *it, hi = lo;
    for (++it; it != cpus.end() && *it == hi + 1; ++it) hi = *it;
    if (!out.empty()) out += ",";
    out += lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
  }
  return out;
}

json NumatopologySpecJson(const NumatopologySpec& n) {
  json spec = json::object();
  if (!n.policies.empty()) spec["policies"] = MapJson(n.policies);
  json reserved = ResourcesJson(n.res_reserved);
  if (n.res_reserved.cpu() == 0) reserved.erase("cpu");
  if (n.res_reserved.memory() == 0) reserved.erase("memory");
  if (!reserved.empty()) spec["resReserved"] = reserved;
  if (!n.numares.empty()) {
    json res = json::object();
    for (const auto& [k, r] : n.numares) {
      json rj = json::object();
      if (!r.allocatable.empty()) rj["allocatable"] = CpuSetText(r.allocatable);
      if (r.capacity) rj["capacity"] = r.capacity;
      res[k] = rj;
    }
    spec["numares"] = res;
  }
  if (!n.cpu_detail.empty()) {
    json cpus = json::object();
    for (const auto& [id, c] : n.cpu_detail) {
      // The CRD's fields are omitempty: a zero is left out, as Go writes it.
      json cj = json::object();
      if (c.numa) cj["numa"] = c.numa;
      if (c.socket) cj["socket"] = c.socket;
      if (c.core) cj["core"] = c.core;
      cpus[std::to_string(id)] = cj;
    }
    spec["cpuDetail"] = cpus;
  }
  return spec;
}

std::string GoDuration(DurationNs d) {
  // Whole milliseconds are enough for the durations scenarios write ("30s", "1h30m", "500ms").
  if (d % 1'000'000 == 0) return fmt::format("{}ms", d / 1'000'000);
  return fmt::format("{}ns", d);
}

json TolerationsJson(const std::vector<Toleration>& tolerations) {
  return JsonList(tolerations, [](const auto& t) {
    json tj = json::object();
    if (!t.key.empty()) tj["key"] = t.key;
    tj["operator"] = t.op;
    if (!t.value.empty()) tj["value"] = t.value;
    if (!t.effect.empty()) tj["effect"] = t.effect;
    if (t.toleration_seconds) tj["tolerationSeconds"] = *t.toleration_seconds;
    return tj;
  });
}

json TaintsJson(const std::vector<Taint>& taints) {
  return JsonList(taints, [](const auto& t) {
    json tj = {{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) tj["value"] = t.value;
    return tj;
  });
}

json SpreadJson(const std::vector<TopologySpreadConstraint>& constraints) {
  return JsonList(constraints, [](const auto& s) {
    json sj = {{"maxSkew", s.max_skew}, {"topologyKey", s.topology_key},
               {"whenUnsatisfiable", s.when_unsatisfiable}};
    if (s.label_selector) sj["labelSelector"] = SelectorJson(*s.label_selector);
    if (s.min_domains) sj["minDomains"] = *s.min_domains;
    if (!s.match_label_keys.empty()) sj["matchLabelKeys"] = s.match_label_keys;
    if (!s.node_affinity_policy.empty()) sj["nodeAffinityPolicy"] = s.node_affinity_policy;
    if (!s.node_taints_policy.empty()) sj["nodeTaintsPolicy"] = s.node_taints_policy;
    return sj;
  });
}

json HostPortsJson(const std::vector<HostPort>& ports) {
  return JsonList(ports, [](const auto& hp) {
    json pj = {{"containerPort", hp.container_port}, {"hostPort", hp.host_port}, {"protocol", hp.protocol}};
    if (!hp.host_ip.empty()) pj["hostIP"] = hp.host_ip;
    return pj;
  });
}

json ImagesJson(const std::map<std::string, int64_t, std::less<>>& images) {
  std::map<int64_t, std::vector<std::string>> by_size;
  for (const auto& [name, size] : images) by_size[size].push_back(name);
  json out = json::array();
  for (const auto& [size, names] : by_size) out.push_back({{"names", names}, {"sizeBytes", size}});
  return out;
}

json QueueAffinityJson(const QueueSpec& q) {
  json aff = json::object();
  for (auto [key, a] : {std::pair{"nodeGroupAffinity", &q.node_group_affinity},
                        std::pair{"nodeGroupAntiAffinity", &q.node_group_anti_affinity}}) {
    if (a->required.empty() && a->preferred.empty()) continue;
    json x = json::object();
    if (!a->required.empty()) x[std::string(kRequired)] = a->required;
    if (!a->preferred.empty()) x[std::string(kPreferred)] = a->preferred;
    aff[key] = x;
  }
  return aff;
}

json SubGroupPolicyJson(const std::vector<SubGroupPolicySpec>& policies) {
  return JsonList(policies, [](const auto& sg) {
    json sj = json::object();
    if (!sg.name.empty()) sj["name"] = sg.name;
    if (sg.network_topology) sj["networkTopology"] = NetworkTopologyJson(*sg.network_topology);
    if (sg.sub_group_size) sj["subGroupSize"] = *sg.sub_group_size;
    if (sg.min_sub_groups) sj["minSubGroups"] = *sg.min_sub_groups;
    if (sg.label_selector) sj["labelSelector"] = SelectorJson(*sg.label_selector);
    if (!sg.match_label_keys.empty()) sj["matchLabelKeys"] = sg.match_label_keys;
    return sj;
  });
}

std::vector<json> EncodeCluster(const ClusterSpec& c, const EncodeOptions& options) {
  std::vector<json> out;
  std::set<std::string> namespaces;
  for (const auto& g : c.pod_groups)
    if (!(options.skip_implicit && g.implicit)) namespaces.insert(g.namespace_);
  for (const auto& p : c.pods) namespaces.insert(p.namespace_);
  for (const auto& p : c.pdbs) namespaces.insert(p.namespace_);
  for (const auto& q : c.resource_quotas) namespaces.insert(q.namespace_);
  for (const auto& ns : namespaces)
    out.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});

  for (const auto& pc : c.priority_classes) {
    json j = {{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"},
              {"metadata", {{"name", pc.name}}}, {"value", pc.value}};
    if (pc.global_default) j["globalDefault"] = true;
    j["preemptionPolicy"] = pc.preemption_policy == PreemptionPolicy::Never ? "Never" : "PreemptLowerPriority";
    out.push_back(std::move(j));
  }
  for (const auto& q : c.queues) {
    if (options.skip_implicit && q.implicit) continue;
    json spec = {{"weight", q.weight}};
    if (q.capability) spec["capability"] = ResourcesJson(*q.capability);
    if (q.deserved) spec["deserved"] = ResourcesJson(*q.deserved);
    if (q.guarantee) spec["guarantee"] = {{"resource", ResourcesJson(*q.guarantee)}};
    if (!q.parent.empty()) spec["parent"] = q.parent;
    if (q.priority) spec["priority"] = q.priority;
    spec["reclaimable"] = q.reclaimable;
    json aff = QueueAffinityJson(q);
    if (!aff.empty()) spec["affinity"] = aff;
    out.push_back({{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"},
                   {"metadata", MetaJson(q.name, "", q.labels, q.annotations, q.creation_time)},
                   {"spec", spec},
                   {"status", {{"state", std::string(ToString(q.state))}}}});
  }
  for (const auto& n : c.nodes) {
    StringMap annotations = n.annotations;
    if (n.usage) {
      json u = {{"cpu", n.usage->cpu}, {"memory", n.usage->memory}};
      if (n.usage->metrics_time) u["metricsTime"] = FormatTimestamp(n.usage->metrics_time);
      annotations[std::string(kUsageAnnotation)] = u.dump();
    }
    json spec = json::object();
    if (n.unschedulable) spec["unschedulable"] = true;
    if (!n.taints.empty()) spec["taints"] = TaintsJson(n.taints);
    json status = {{"allocatable", ResourcesJson(n.allocatable)}, {"capacity", ResourcesJson(n.capacity)}};
    if (!n.images.empty()) status["images"] = ImagesJson(n.images);
    status["conditions"] = json::array({{{"type", "Ready"}, {"status", "True"}}});
    out.push_back({{"apiVersion", "v1"}, {"kind", "Node"},
                   {"metadata", MetaJson(n.name, "", n.labels, annotations, n.creation_time)},
                   {"spec", spec}, {"status", status}});
  }
  for (const auto& hn : c.hyper_nodes)
    out.push_back({{"apiVersion", "topology.volcano.sh/v1alpha1"}, {"kind", "HyperNode"},
                   {"metadata", {{"name", hn.name}}}, {"spec", HyperNodeSpecJson(hn)}});
  for (const auto& n : c.numatopologies)
    out.push_back({{"apiVersion", "nodeinfo.volcano.sh/v1alpha1"}, {"kind", "Numatopology"},
                   {"metadata", {{"name", n.name}}}, {"spec", NumatopologySpecJson(n)}});
  for (const auto& g : c.pod_groups) {
    if (options.skip_implicit && g.implicit) continue;
    json spec = {{"minMember", g.min_member}, {"queue", g.queue}};
    if (!g.min_task_member.empty()) {
      spec["minTaskMember"] = json::object();
      for (const auto& [k, v] : g.min_task_member) spec["minTaskMember"][k] = v;
    }
    if (g.min_resources) spec["minResources"] = ResourcesJson(*g.min_resources);
    if (!g.priority_class_name.empty()) spec["priorityClassName"] = g.priority_class_name;
    if (g.network_topology) spec["networkTopology"] = NetworkTopologyJson(*g.network_topology);
    if (!g.sub_group_policy.empty()) spec["subGroupPolicy"] = SubGroupPolicyJson(g.sub_group_policy);
    json status = {{"phase", std::string(ToString(g.phase))}};
    if (!g.conditions.empty()) {
      status["conditions"] = json::array();
      for (const auto& cond : g.conditions) {
        json cj = {{"type", cond.type}, {"status", cond.status}};
        if (!cond.transition_id.empty()) cj["transitionID"] = cond.transition_id;
        if (cond.last_transition_time) cj["lastTransitionTime"] = FormatTimestamp(cond.last_transition_time);
        if (!cond.reason.empty()) cj["reason"] = cond.reason;
        if (!cond.message.empty()) cj["message"] = cond.message;
        status["conditions"].push_back(cj);
      }
    }
    out.push_back({{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"},
                   {"metadata", MetaJson(g.name, g.namespace_, g.labels, g.annotations, g.creation_time)},
                   {"spec", spec}, {"status", status}});
  }
  std::set<std::string> implicit_groups;
  for (const auto& g : c.pod_groups)
    if (g.implicit) implicit_groups.insert(g.Uid());
  for (const auto& p : c.pods) {
    StringMap annotations = p.annotations();
    if (!p.group.empty() && !(options.skip_implicit && implicit_groups.count(p.JobUid())))
      annotations[std::string(kGroupNameAnnotation)] = p.group;
    if (!p.task().empty()) annotations[std::string(kTaskSpecAnnotation)] = p.task();
    if (p.duration) annotations[std::string(kDurationAnnotation)] = GoDuration(*p.duration);
    json meta = MetaJson(p.name, p.namespace_, p.labels, annotations, p.creation_time);
    if (p.deleting) {
      meta["deletionTimestamp"] = FormatTimestamp(options.now);
      meta["deletionGracePeriodSeconds"] = 30;
    }
    // Kubernetes requires an image; a scenario pod without one runs the pause image.
    json container = {{"name", "main"}, {"image", p.image().empty() ? std::string(kDefaultImage) : p.image()}};
    json requests = RequestsJson(p.requests);
    if (!requests.empty()) container["resources"] = {{"requests", requests}};
    if (json limits = RequestsJson(p.limits()); !limits.empty()) container["resources"]["limits"] = limits;
    if (!p.host_ports().empty()) container["ports"] = HostPortsJson(p.host_ports());
    // Pods of the default scheduler name take the one asked for; others keep theirs.
    std::string scheduler = p.scheduler_name() == kDefaultSchedulerName ? options.scheduler_name : p.scheduler_name();
    json spec = {{"schedulerName", scheduler}, {"containers", json::array({container})}};
    if (!p.node.empty()) spec["nodeName"] = p.node;
    if (!p.priority_class_name().empty()) spec["priorityClassName"] = p.priority_class_name();
    if (p.priority) spec["priority"] = *p.priority;
    if (p.preemption_policy)
      spec["preemptionPolicy"] = *p.preemption_policy == PreemptionPolicy::Never ? "Never" : "PreemptLowerPriority";
    if (!p.node_selector().empty()) spec["nodeSelector"] = MapJson(p.node_selector());
    if (!p.tolerations().empty()) spec["tolerations"] = TolerationsJson(p.tolerations());
    json aff = AffinityJson(p.affinity());
    if (!aff.empty()) spec["affinity"] = aff;
    if (!p.topology_spread_constraints().empty())
      spec["topologySpreadConstraints"] = SpreadJson(p.topology_spread_constraints());
    if (!p.scheduling_gates().empty()) {
      spec["schedulingGates"] = json::array();
      for (const auto& g : p.scheduling_gates()) spec["schedulingGates"].push_back({{"name", g}});
    }
    json status = {{"phase", std::string(ToString(p.phase))}};
    if (!p.nominated_node.empty()) status["nominatedNodeName"] = p.nominated_node;
    if (p.scheduled_at)
      status["conditions"] = json::array(
          {{{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", FormatTimestamp(p.scheduled_at)}}});
    out.push_back({{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}, {"status", status}});
  }
  for (const auto& pdb : c.pdbs) {
    json spec = {{"selector", SelectorJson(pdb.selector)}};
    auto int_or_string = [](const std::string& s) -> json {
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return std::stoll(s);
      return s;
    };
    if (pdb.min_available) spec["minAvailable"] = int_or_string(*pdb.min_available);
    if (pdb.max_unavailable) spec["maxUnavailable"] = int_or_string(*pdb.max_unavailable);
    json status = {{"disruptionsAllowed", pdb.disruptions_allowed}};
    if (!pdb.disrupted_pods.empty()) {
      status["disruptedPods"] = json::object();
      for (const auto& p : pdb.disrupted_pods) status["disruptedPods"][p] = FormatTimestamp(options.now);
    }
    out.push_back({{"apiVersion", "policy/v1"}, {"kind", "PodDisruptionBudget"},
                   {"metadata", {{"name", pdb.name}, {"namespace", pdb.namespace_}}},
                   {"spec", spec}, {"status", status}});
  }
  for (const auto& rq : c.resource_quotas) {
    out.push_back({{"apiVersion", "v1"}, {"kind", "ResourceQuota"},
                   {"metadata", {{"name", rq.name}, {"namespace", rq.namespace_}}},
                   {"spec", {{"hard", ResourcesJson(rq.hard)}}},
                   {"status", {{"hard", ResourcesJson(rq.hard)}, {"used", ResourcesJson(rq.used)}}}});
  }
  return out;
}

std::string ManifestsToJson(const std::vector<json>& items) {
  json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  return list.dump(2) + "\n";
}

namespace {

// A string that YAML would read as something else (number, bool, null) is quoted.
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* kWords[] = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"};
  std::string lower;
  for (char c : s) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const char* w : kWords)
    if (lower == w) return true;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  if (end && *end == '\0') return true;
  return s.find_first_of(":#{}[],&*!|>'\"%@`\n") != std::string::npos || s.front() == ' ' ||
         s.back() == ' ' || s.front() == '-' || s.front() == '?';
}

}  // namespace

void EmitJson(YAML::Emitter& e, const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      e << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        e << YAML::Key;
        if (NeedsQuotes(it.key())) e << YAML::DoubleQuoted;
        e << it.key() << YAML::Value;
        EmitJson(e, it.value());
      }
      e << YAML::EndMap;
      break;
    case json::value_t::array:
      if (j.empty()) {
        e << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        break;
      }
      e << YAML::BeginSeq;
      for (const auto& v : j) EmitJson(e, v);
      e << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      if (NeedsQuotes(s)) e << YAML::DoubleQuoted;
      e << s;
      break;
    }
    case json::value_t::boolean: e << j.get<bool>(); break;
    case json::value_t::null: e << YAML::Null; break;
    default: e << j.dump(); break;
  }
}

std::string ManifestsToYaml(const std::vector<json>& items) {
  std::string out;
  for (const auto& item : items) {
    YAML::Emitter e;
    EmitJson(e, item);
    out += "---\n";
    out += e.c_str();
    out += "\n";
  }
  return out;
}

}  // namespace kiln::kube
