#include "kubernetes/decode.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "runtime/cpuset.h"
#include "runtime/quantity.h"

namespace kiln::kube {

using json = nlohmann::json;

namespace {

// A field of the wrong type: unwinds to the Decode* entry point, which turns it into the
// object's Error. Never leaves this file.
struct BadField {
  std::string message;
};

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw BadField{fmt::format("{}: {}", path, what)};
}

std::string_view TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "a list";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    default: return "a number";
  }
}

// The member `key` of object `o`, or nullptr when absent or null.
const json* Member(const json& o, std::string_view key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& Object(const json& o, std::string_view key, const std::string& path) {
  static const json kEmpty = json::object();
  const json* v = Member(o, key);
  if (!v) return kEmpty;
  if (!v->is_object()) Fail(path + "." + std::string(key), fmt::format("must be an object, got {}", TypeName(*v)));
  return *v;
}

const json& Array(const json& o, std::string_view key, const std::string& path) {
  static const json kEmpty = json::array();
  const json* v = Member(o, key);
  if (!v) return kEmpty;
  if (!v->is_array()) Fail(path + "." + std::string(key), fmt::format("must be a list, got {}", TypeName(*v)));
  return *v;
}

std::string Str(const json& o, std::string_view key, const std::string& path, std::string def = "") {
  const json* v = Member(o, key);
  if (!v) return def;
  if (!v->is_string()) Fail(path + "." + std::string(key), fmt::format("must be a string, got {}", TypeName(*v)));
  return v->get<std::string>();
}

std::optional<int64_t> OptInt(const json& o, std::string_view key, const std::string& path) {
  const json* v = Member(o, key);
  if (!v) return std::nullopt;
  // nlohmann's is_number_integer() is true for unsigned numbers too: ask about those first.
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
  // A whole number past int64 (a huge unsigned, or a float like 1.3e90) is out of range, not
  // wrapped or converted with undefined behaviour (found by the kube fuzzer).
  auto out_of_range = [&] {
    Fail(path + "." + std::string(key), fmt::format("out of range for int64: {}", v->dump()));
  };
  if (v->is_number_unsigned()) {
    if (v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) out_of_range();
    return static_cast<int64_t>(v->get<uint64_t>());
  }
  if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()) {
    // 2^63 is the first double past INT64_MAX; -2^63 is INT64_MIN itself.
    double d = v->get<double>();
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) out_of_range();
    return static_cast<int64_t>(d);
  }
  Fail(path + "." + std::string(key), fmt::format("must be an integer, got {}", v->dump()));
}

int32_t Int32(const json& o, std::string_view key, const std::string& path, int32_t def) {
  auto v = OptInt(o, key, path);
  if (!v) return def;
  if (*v < INT32_MIN || *v > INT32_MAX) Fail(path + "." + std::string(key), "out of range for int32");
  return static_cast<int32_t>(*v);
}

bool Bool(const json& o, std::string_view key, const std::string& path, bool def) {
  const json* v = Member(o, key);
  if (!v) return def;
  if (!v->is_boolean()) Fail(path + "." + std::string(key), fmt::format("must be a boolean, got {}", TypeName(*v)));
  return v->get<bool>();
}

StringMap Map(const json& o, std::string_view key, const std::string& path) {
  StringMap out;
  const json& m = Object(o, key, path);
  for (auto it = m.begin(); it != m.end(); ++it) {
    if (it.value().is_null()) {
      out[it.key()] = "";
    } else if (!it.value().is_string()) {
      Fail(fmt::format("{}.{}.{}", path, key, it.key()), fmt::format("must be a string, got {}", TypeName(it.value())));
    } else {
      out[it.key()] = it.value().get<std::string>();
    }
  }
  return out;
}

std::vector<std::string> StrList(const json& o, std::string_view key, const std::string& path) {
  std::vector<std::string> out;
  const json& a = Array(o, key, path);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) Fail(fmt::format("{}.{}[{}]", path, key, i), "must be a string");
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

// A time; absent gives `def`. Go's zero time (a time.Time nobody set) gives `zero`: the field's
// own meaning of "unset" as Volcano reads it.
TimeNs Time(const json& o, std::string_view key, const std::string& path, TimeNs def,
            TimeNs zero) {
  std::string s = Str(o, key, path);
  if (s.empty()) return def;
  if (IsZeroTimestamp(s)) return zero;
  auto t = ParseTimestamp(s);
  if (!t) Fail(path + "." + std::string(key), t.error().message);
  return *t;
}

// A ResourceList ({"cpu": "500m", "memory": "1Gi"}) in Volcano's units. Names Volcano does not
// keep (api.NewResource) are dropped as it drops them.
Resource Resources(const json& o, std::string_view key, const std::string& path) {
  Resource r;
  const json& m = Object(o, key, path);
  for (auto it = m.begin(); it != m.end(); ++it) {
    std::string text;
    if (it.value().is_string()) {
      text = it.value().get<std::string>();
    } else if (it.value().is_number()) {
      text = it.value().dump();
    } else {
      Fail(fmt::format("{}.{}.{}", path, key, it.key()), fmt::format("must be a quantity, got {}", TypeName(it.value())));
    }
    if (!IsVolcanoResourceName(it.key())) continue;
    auto q = ParseResourceQuantity(it.key(), text);
    if (!q) Fail(fmt::format("{}.{}.{}", path, key, it.key()), q.error().message);
    auto id = ResourceRegistry::Intern(it.key());
    if (!id) Fail(fmt::format("{}.{}", path, key), id.error().message);
    r.Set(*id, *q);
  }
  return r;
}

std::optional<Resource> OptResources(const json& o, std::string_view key, const std::string& path) {
  if (!Member(o, key)) return std::nullopt;
  return Resources(o, key, path);
}

ObjectMeta Meta(const json& obj, const std::string& path) {
  const json& m = Object(obj, "metadata", path);
  ObjectMeta meta;
  meta.namespace_ = Str(m, "namespace", path + ".metadata");
  meta.name = Str(m, "name", path + ".metadata");
  meta.uid = Str(m, "uid", path + ".metadata");
  meta.resource_version = Str(m, "resourceVersion", path + ".metadata");
  if (meta.name.empty()) Fail(path, "has no metadata.name");
  return meta;
}

std::string Describe(std::string_view kind, const json& obj) {
  const json* m = Member(obj, "metadata");
  std::string ns, name;
  if (m && m->is_object()) {
    if (const json* n = Member(*m, "namespace"); n && n->is_string()) ns = n->get<std::string>();
    if (const json* n = Member(*m, "name"); n && n->is_string()) name = n->get<std::string>();
  }
  return ns.empty() ? fmt::format("{} {}", kind, name) : fmt::format("{} {}/{}", kind, ns, name);
}

// ---- Kubernetes shapes ----

SelectorRequirement Requirement(const json& e, const std::string& path) {
  SelectorRequirement r;
  r.key = Str(e, "key", path);
  r.op = Str(e, "operator", path);
  r.values = StrList(e, "values", path);
  return r;
}

LabelSelector Selector(const json& s, const std::string& path) {
  LabelSelector sel;
  sel.match_labels = Map(s, "matchLabels", path);
  const json& exprs = Array(s, "matchExpressions", path);
  for (size_t i = 0; i < exprs.size(); ++i)
    sel.match_expressions.push_back(Requirement(exprs[i], fmt::format("{}.matchExpressions[{}]", path, i)));
  return sel;
}

std::optional<LabelSelector> OptSelector(const json& o, std::string_view key, const std::string& path) {
  if (!Member(o, key)) return std::nullopt;
  return Selector(Object(o, key, path), path + "." + std::string(key));
}

NodeSelectorTerm Term(const json& t, const std::string& path) {
  NodeSelectorTerm term;
  const json& e = Array(t, "matchExpressions", path);
  for (size_t i = 0; i < e.size(); ++i)
    term.match_expressions.push_back(Requirement(e[i], fmt::format("{}.matchExpressions[{}]", path, i)));
  const json& f = Array(t, "matchFields", path);
  for (size_t i = 0; i < f.size(); ++i)
    term.match_fields.push_back(Requirement(f[i], fmt::format("{}.matchFields[{}]", path, i)));
  return term;
}

PodAffinityTerm AffinityTerm(const json& t, const std::string& path) {
  PodAffinityTerm term;
  term.label_selector = OptSelector(t, "labelSelector", path);
  term.namespaces = StrList(t, "namespaces", path);
  term.namespace_selector = OptSelector(t, "namespaceSelector", path);
  term.topology_key = Str(t, "topologyKey", path);
  return term;
}

PodAffinity PodAffinityOf(const json& a, const std::string& path) {
  PodAffinity out;
  const json& req = Array(a, kRequired, path);
  for (size_t i = 0; i < req.size(); ++i)
    out.required.push_back(AffinityTerm(req[i], fmt::format("{}.{}[{}]", path, kRequired, i)));
  const json& pref = Array(a, kPreferred, path);
  for (size_t i = 0; i < pref.size(); ++i) {
    std::string p = fmt::format("{}.{}[{}]", path, kPreferred, i);
    WeightedPodAffinityTerm w;
    w.weight = Int32(pref[i], "weight", p, 0);
    w.term = AffinityTerm(Object(pref[i], "podAffinityTerm", p), p + ".podAffinityTerm");
    out.preferred.push_back(std::move(w));
  }
  return out;
}

Affinity AffinityOf(const json& a, const std::string& path) {
  Affinity out;
  if (const json* na = Member(a, "nodeAffinity")) {
    std::string p = path + ".nodeAffinity";
    if (!na->is_object()) Fail(p, "must be an object");
    NodeAffinity n;
    if (const json* req = Member(*na, kRequired)) {
      std::string rp = fmt::format("{}.{}", p, kRequired);
      if (!req->is_object()) Fail(rp, "must be an object");
      std::vector<NodeSelectorTerm> terms;
      const json& list = Array(*req, "nodeSelectorTerms", rp);
      for (size_t i = 0; i < list.size(); ++i)
        terms.push_back(Term(list[i], fmt::format("{}.nodeSelectorTerms[{}]", rp, i)));
      n.required = std::move(terms);
    }
    const json& pref = Array(*na, kPreferred, p);
    for (size_t i = 0; i < pref.size(); ++i) {
      std::string pp = fmt::format("{}.{}[{}]", p, kPreferred, i);
      PreferredSchedulingTerm t;
      t.weight = Int32(pref[i], "weight", pp, 0);
      t.preference = Term(Object(pref[i], "preference", pp), pp + ".preference");
      n.preferred.push_back(std::move(t));
    }
    out.node_affinity = std::move(n);
  }
  if (Member(a, "podAffinity"))
    out.pod_affinity = PodAffinityOf(Object(a, "podAffinity", path), path + ".podAffinity");
  if (Member(a, "podAntiAffinity"))
    out.pod_anti_affinity = PodAffinityOf(Object(a, "podAntiAffinity", path), path + ".podAntiAffinity");
  return out;
}

std::vector<Toleration> Tolerations(const json& spec, const std::string& path) {
  std::vector<Toleration> out;
  const json& list = Array(spec, "tolerations", path);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = fmt::format("{}.tolerations[{}]", path, i);
    Toleration t;
    t.key = Str(list[i], "key", p);
    t.op = Str(list[i], "operator", p, "Equal");
    t.value = Str(list[i], "value", p);
    t.effect = Str(list[i], "effect", p);
    t.toleration_seconds = OptInt(list[i], "tolerationSeconds", p);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<TopologySpreadConstraint> Spread(const json& spec, const std::string& path) {
  std::vector<TopologySpreadConstraint> out;
  const json& list = Array(spec, "topologySpreadConstraints", path);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = fmt::format("{}.topologySpreadConstraints[{}]", path, i);
    TopologySpreadConstraint c;
    c.max_skew = Int32(list[i], "maxSkew", p, 1);
    c.topology_key = Str(list[i], "topologyKey", p);
    c.when_unsatisfiable = Str(list[i], "whenUnsatisfiable", p, "DoNotSchedule");
    c.label_selector = OptSelector(list[i], "labelSelector", p);
    if (auto m = OptInt(list[i], "minDomains", p)) c.min_domains = static_cast<int32_t>(*m);
    c.match_label_keys = StrList(list[i], "matchLabelKeys", p);
    c.node_affinity_policy = Str(list[i], "nodeAffinityPolicy", p);
    c.node_taints_policy = Str(list[i], "nodeTaintsPolicy", p);
    out.push_back(std::move(c));
  }
  return out;
}

// Whether the pod is of QoS class Guaranteed, as Volcano asks (v1qos.GetPodQOS): status.qosClass
// when the API server has set it; otherwise computed as Kubernetes does (ComputePodQOS): from the
// pod-level resources when the pod has them, else over the containers and init containers. Each of
// those must limit cpu and memory, and the summed non-zero cpu and memory requests must equal the
// summed limits. An absent request is what the API server's defaulting makes it: the limit (for
// cpu and memory also at pod level, where only hugepages default from the containers).
bool PodQosGuaranteed(const json& spec, const json& status) {
  std::string cls = Str(status, "qosClass", "status");
  if (!cls.empty()) return cls == "Guaranteed";
  bool any = false, guaranteed = true;
  Resource requests, limits;
  // One container's (or the pod's) resources.
  auto add = [&](const json& res, const std::string& p) {
    Resource req = Resources(res, "requests", p), lim = Resources(res, "limits", p);
    const json& named = Object(res, "requests", p);
    any = true;
    for (auto [id, name] : {std::pair{kCpu, "cpu"}, std::pair{kMemory, "memory"}}) {
      double l = lim.Get(id), r = Member(named, name) ? req.Get(id) : l;
      if (l <= 0) guaranteed = false;
      if (l > 0) limits.Set(id, limits.Get(id) + l);
      if (r > 0) requests.Set(id, requests.Get(id) + r);
    }
  };
  if (Member(spec, "resources")) {
    add(Object(spec, "resources", "spec"), "spec.resources");
  } else {
    for (std::string_view list : {"containers", "initContainers"}) {
      const json& all = Array(spec, list, "spec");
      for (size_t i = 0; i < all.size(); ++i) {
        std::string p = fmt::format("spec.{}[{}]", list, i);
        add(Object(all[i], "resources", p), p + ".resources");
      }
    }
  }
  return any && guaranteed && requests.Get(kCpu) == limits.Get(kCpu) &&
         requests.Get(kMemory) == limits.Get(kMemory);
}

PreemptionPolicy ParsePreemption(const std::string& s, const std::string& path) {
  if (s == "Never") return PreemptionPolicy::Never;
  if (s.empty() || s == "PreemptLowerPriority") return PreemptionPolicy::PreemptLowerPriority;
  Fail(path, fmt::format("must be PreemptLowerPriority or Never, got `{}`", s));
}

// A pod's requests as Kubernetes computes them (resourcehelper.PodRequests, Volcano's
// GetPodResourceWithoutInitContainers + init max + overhead): the sum over containers, then per
// resource the max with each init container (a sidecar init container, restartPolicy Always,
// runs alongside the containers and adds to the sum instead), then plus the pod overhead.
Resource PodRequests(const json& spec, const std::string& path) {
  Resource sum;
  const json& containers = Array(spec, "containers", path);
  for (size_t i = 0; i < containers.size(); ++i) {
    std::string p = fmt::format("{}.containers[{}].resources", path, i);
    sum.Add(Resources(Object(containers[i], "resources", p), "requests", p));
  }
  const json& inits = Array(spec, "initContainers", path);
  Resource sidecars;
  for (size_t i = 0; i < inits.size(); ++i) {
    std::string p = fmt::format("{}.initContainers[{}]", path, i);
    Resource r = Resources(Object(inits[i], "resources", p), "requests", p + ".resources");
    if (Str(inits[i], "restartPolicy", p) == "Always") {
      sidecars.Add(r);
      continue;
    }
    // An init container runs with the sidecars started before it.
    Resource with = r;
    with.Add(sidecars);
    sum.SetMax(with);
  }
  if (!sidecars.IsEmpty() || sidecars.HasScalars()) {
    Resource total = sum;
    total.Add(sidecars);
    sum = total;
  }
  if (const json* overhead = Member(spec, "overhead"); overhead)
    sum.Add(Resources(spec, "overhead", path));
  return sum;
}

// ---- Volcano's topology shapes, checked as the scenario loader checks them (the CRDs' schemas
// and the PodGroup webhook: simulator/scenario_objects.cc) ----

int32_t NonNegativeInt32(const json& o, std::string_view key, const std::string& path, int32_t min) {
  int32_t v = Int32(o, key, path, min);
  if (v < min) Fail(path + "." + std::string(key), fmt::format("must be at least {}, got {}", min, v));
  return v;
}

// PodGroup spec.networkTopology (and a subGroupPolicy entry's).
NetworkTopologySpec NetworkTopology(const json& o, const std::string& path) {
  NetworkTopologySpec nt;
  std::string mode = Str(o, "mode", path);
  if (mode == "soft") nt.mode = NetworkTopologyMode::Soft;
  else if (mode.empty() || mode == "hard") nt.mode = NetworkTopologyMode::Hard;  // the CRD's default
  else Fail(path + ".mode", fmt::format("must be hard or soft, got `{}`", mode));
  if (Member(o, "highestTierAllowed")) nt.highest_tier_allowed = NonNegativeInt32(o, "highestTierAllowed", path, 0);
  nt.highest_tier_name = Str(o, "highestTierName", path);
  if (nt.highest_tier_allowed && !nt.highest_tier_name.empty())
    Fail(path, "must not set both highestTierAllowed and highestTierName (the PodGroup webhook refuses it)");
  return nt;
}

std::vector<SubGroupPolicySpec> SubGroupPolicies(const json& spec, const std::string& path) {
  std::vector<SubGroupPolicySpec> out;
  const json& list = Array(spec, "subGroupPolicy", path);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string p = fmt::format("{}.subGroupPolicy[{}]", path, i);
    if (!list[i].is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(list[i])));
    SubGroupPolicySpec sg;
    sg.name = Str(list[i], "name", p);
    if (sg.name.size() > 253) Fail(p + ".name", "is longer than 253 characters");
    if (Member(list[i], "networkTopology"))
      sg.network_topology = NetworkTopology(Object(list[i], "networkTopology", p), p + ".networkTopology");
    if (Member(list[i], "subGroupSize")) sg.sub_group_size = NonNegativeInt32(list[i], "subGroupSize", p, 1);
    if (Member(list[i], "minSubGroups")) sg.min_sub_groups = NonNegativeInt32(list[i], "minSubGroups", p, 0);
    sg.label_selector = OptSelector(list[i], "labelSelector", p);
    sg.match_label_keys = StrList(list[i], "matchLabelKeys", p);
    out.push_back(std::move(sg));
  }
  return out;
}

// One entry of a HyperNode's spec.members: a type and exactly one selector.
HyperNodeMemberSpec HyperNodeMember(const json& m, const std::string& path, const std::string& object) {
  if (!m.is_object()) Fail(path, fmt::format("must be an object, got {}", TypeName(m)));
  HyperNodeMemberSpec out;
  out.where = SourceLocation{fmt::format("{} {}", object, path)};
  std::string type = Str(m, "type", path);
  if (type == "Node") out.type = HyperNodeMemberSpec::Type::Node;
  else if (type == "HyperNode") out.type = HyperNodeMemberSpec::Type::HyperNode;
  else if (type.empty()) Fail(path, "has no type");
  else Fail(path + ".type", fmt::format("must be Node or HyperNode, got `{}`", type));
  if (!Member(m, "selector")) Fail(path, "has no selector");
  std::string sp = path + ".selector";
  const json& sel = Object(m, "selector", path);
  int given = 0;
  if (Member(sel, "exactMatch")) {
    ++given;
    out.selector = HyperNodeMemberSpec::Selector::Exact;
    out.name = Str(Object(sel, "exactMatch", sp), "name", sp + ".exactMatch");
    if (out.name.empty()) Fail(sp + ".exactMatch.name", "is empty");
  }
  if (Member(sel, "regexMatch")) {
    ++given;
    out.selector = HyperNodeMemberSpec::Selector::Regex;
    out.pattern = Str(Object(sel, "regexMatch", sp), "pattern", sp + ".regexMatch");
    if (out.pattern.empty()) Fail(sp + ".regexMatch.pattern", "is empty");
  }
  if (Member(sel, "labelMatch")) {
    ++given;
    out.selector = HyperNodeMemberSpec::Selector::Label;
    out.labels = Selector(Object(sel, "labelMatch", sp), sp + ".labelMatch");
  }
  if (given != 1) Fail(sp, "must give exactly one of exactMatch, regexMatch and labelMatch");
  return out;
}

// A cpuset (runtime/cpuset.h) or a located failure.
std::set<int64_t> CpuSet(const std::string& text, const std::string& path) {
  std::string_view part;
  std::optional<std::set<int64_t>> cpus = ParseCpuSet(text, &part);
  if (!cpus) Fail(path, fmt::format("`{}` is not a cpuset (`0-3,8`): bad part `{}`", text, part));
  return std::move(*cpus);
}

template <typename F>
auto Guard(std::string_view kind, const json& obj, F&& f) -> Result<decltype(f())> {
  if (!obj.is_object()) return Error{fmt::format("{}: not a JSON object", kind), {}};
  try {
    return f();
  } catch (const BadField& e) {
    return Error{fmt::format("{}: {}", Describe(kind, obj), e.message), {}};
  }
}

}  // namespace

ObjectMeta DecodeMeta(const json& obj) {
  ObjectMeta meta;
  const json* m = Member(obj, "metadata");
  if (!m || !m->is_object()) return meta;
  auto get = [&](std::string_view k) {
    const json* v = Member(*m, k);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  meta.namespace_ = get("namespace");
  meta.name = get("name");
  meta.uid = get("uid");
  meta.resource_version = get("resourceVersion");
  return meta;
}

Result<DecodedPod> DecodePod(const json& obj) {
  return Guard("pod", obj, [&] {
    DecodedPod out;
    out.meta = Meta(obj, "pod");
    PodSpec& p = out.spec;
    p.name = out.meta.name;
    p.namespace_ = out.meta.namespace_.empty() ? "default" : out.meta.namespace_;
    p.where = SourceLocation{fmt::format("pod {}/{}", p.namespace_, p.name)};
    const json& meta = Object(obj, "metadata", "pod");
    p.labels = Map(meta, "labels", "metadata");
    p.annotations = Map(meta, "annotations", "metadata");
    if (auto it = p.annotations.find(kGroupNameAnnotation); it != p.annotations.end()) {
      p.group = it->second;
      p.annotations.erase(it);
    }
    if (auto it = p.annotations.find(kTaskSpecAnnotation); it != p.annotations.end()) {
      p.task = it->second;
      p.annotations.erase(it);
    }
    if (auto it = p.annotations.find(kDurationAnnotation); it != p.annotations.end()) {
      auto d = ParseGoDuration(it->second);
      if (!d || *d <= 0)
        Fail("metadata.annotations." + std::string(kDurationAnnotation),
             fmt::format("must be a positive Go duration, got `{}`", it->second));
      p.duration = *d;
      p.annotations.erase(it);
    }
    p.creation_time = Time(meta, "creationTimestamp", "metadata", kUnsetTime, kZeroTime);
    p.deleting = Member(meta, "deletionTimestamp") != nullptr;

    const json& spec = Object(obj, "spec", "pod");
    out.scheduler_name = Str(spec, "schedulerName", "spec", "default-scheduler");
    p.scheduler_name = out.scheduler_name;
    p.node = Str(spec, "nodeName", "spec");
    p.priority_class_name = Str(spec, "priorityClassName", "spec");
    if (auto pr = OptInt(spec, "priority", "spec")) p.priority = static_cast<int32_t>(*pr);
    if (const json* pp = Member(spec, "preemptionPolicy"))
      p.preemption_policy = ParsePreemption(pp->is_string() ? pp->get<std::string>() : "?",
                                            "spec.preemptionPolicy");
    p.requests = PodRequests(spec, "spec");
    // The containers' limits, summed (device sharing reads gpu counts and memory there).
    {
      const json& containers = Array(spec, "containers", "spec");
      for (size_t i = 0; i < containers.size(); ++i) {
        std::string cp = fmt::format("spec.containers[{}].resources", i);
        p.limits.Add(Resources(Object(containers[i], "resources", cp), "limits", cp));
      }
    }
    PodPlacement placement;
    placement.node_selector = Map(spec, "nodeSelector", "spec");
    placement.tolerations = Tolerations(spec, "spec");
    if (Member(spec, "affinity")) placement.affinity = AffinityOf(Object(spec, "affinity", "spec"), "spec.affinity");
    placement.topology_spread_constraints = Spread(spec, "spec");
    const json& containers = Array(spec, "containers", "spec");
    for (size_t i = 0; i < containers.size(); ++i) {
      std::string cp = fmt::format("spec.containers[{}]", i);
      if (i == 0) p.image = Str(containers[i], "image", cp);
      const json& ports = Array(containers[i], "ports", cp);
      for (size_t j = 0; j < ports.size(); ++j) {
        std::string pp = fmt::format("{}.ports[{}]", cp, j);
        HostPort hp;
        hp.host_port = Int32(ports[j], "hostPort", pp, 0);
        // Only ports bound on the host constrain placement (NodePorts filter).
        if (hp.host_port == 0) continue;
        hp.container_port = Int32(ports[j], "containerPort", pp, 0);
        hp.protocol = Str(ports[j], "protocol", pp, "TCP");
        hp.host_ip = Str(ports[j], "hostIP", pp);
        placement.host_ports.push_back(std::move(hp));
      }
    }
    if (!placement.empty()) p.placement = std::make_shared<const PodPlacement>(std::move(placement));
    const json& gates = Array(spec, "schedulingGates", "spec");
    for (size_t i = 0; i < gates.size(); ++i)
      p.scheduling_gates.push_back(Str(gates[i], "name", fmt::format("spec.schedulingGates[{}]", i)));

    const json& status = Object(obj, "status", "pod");
    out.qos_guaranteed = PodQosGuaranteed(spec, status);
    std::string phase = Str(status, "phase", "status", "Pending");
    if (phase == "Pending") p.phase = PodPhase::Pending;
    else if (phase == "Running") p.phase = PodPhase::Running;
    else if (phase == "Succeeded") p.phase = PodPhase::Succeeded;
    else if (phase == "Failed") p.phase = PodPhase::Failed;
    else p.phase = PodPhase::Unknown;
    p.nominated_node = Str(status, "nominatedNodeName", "status");
    const json& conds = Array(status, "conditions", "status");
    for (size_t i = 0; i < conds.size(); ++i) {
      std::string cp = fmt::format("status.conditions[{}]", i);
      if (Str(conds[i], "type", cp) != "PodScheduled") continue;
      out.scheduled_status = Str(conds[i], "status", cp);
      out.scheduled_reason = Str(conds[i], "reason", cp);
      out.scheduled_message = Str(conds[i], "message", cp);
      if (out.scheduled_status == "True") p.scheduled_at = Time(conds[i], "lastTransitionTime", cp, 0, 0);
    }
    return out;
  });
}

Result<NodeSpec> DecodeNode(const json& obj, ObjectMeta* meta_out) {
  return Guard("node", obj, [&] {
    ObjectMeta m = Meta(obj, "node");
    NodeSpec n;
    n.name = m.name;
    n.where = SourceLocation{"node " + n.name};
    const json& meta = Object(obj, "metadata", "node");
    n.labels = Map(meta, "labels", "metadata");
    n.annotations = Map(meta, "annotations", "metadata");
    n.creation_time = Time(meta, "creationTimestamp", "metadata", kUnsetTime, kZeroTime);
    const json& spec = Object(obj, "spec", "node");
    n.unschedulable = Bool(spec, "unschedulable", "spec", false);
    const json& taints = Array(spec, "taints", "spec");
    for (size_t i = 0; i < taints.size(); ++i) {
      std::string p = fmt::format("spec.taints[{}]", i);
      n.taints.push_back(Taint{Str(taints[i], "key", p), Str(taints[i], "value", p), Str(taints[i], "effect", p)});
    }
    const json& status = Object(obj, "status", "node");
    n.allocatable = Resources(status, "allocatable", "status");
    n.capacity = Member(status, "capacity") ? Resources(status, "capacity", "status") : n.allocatable;
    const json& images = Array(status, "images", "status");
    for (size_t i = 0; i < images.size(); ++i) {
      std::string p = fmt::format("status.images[{}]", i);
      int64_t size = OptInt(images[i], "sizeBytes", p).value_or(0);
      for (auto& name : StrList(images[i], "names", p)) n.images[name] = size;
    }
    // Kiln's usage annotation (what a metrics source would report to the usage plugin):
    // {"cpu": percent, "memory": percent, "metricsTime": RFC 3339}.
    if (auto it = n.annotations.find(kUsageAnnotation); it != n.annotations.end()) {
      std::string path = "metadata.annotations." + std::string(kUsageAnnotation);
      json u = json::parse(it->second, nullptr, false);
      if (u.is_discarded() || !u.is_object()) Fail(path, "must be a JSON object");
      NodeUsageSpec usage;
      auto pct = [&](const char* key) {
        const json* v = Member(u, key);
        if (!v) return 0.0;
        if (v->is_number()) return v->get<double>();
        if (v->is_string()) {
          char* end = nullptr;
          double d = std::strtod(v->get_ref<const std::string&>().c_str(), &end);
          if (end && *end == '\0') return d;
        }
        Fail(path + "." + key, "must be a number");
      };
      usage.cpu = pct("cpu");
      usage.memory = pct("memory");
      usage.metrics_time = Time(u, "metricsTime", path, 0, 0);
      n.usage = usage;
      n.annotations.erase(it);
    }
    if (meta_out) *meta_out = m;
    return n;
  });
}

Result<DecodedPodGroup> DecodePodGroup(const json& obj) {
  return Guard("podgroup", obj, [&] {
    DecodedPodGroup out;
    out.meta = Meta(obj, "podgroup");
    PodGroupSpec& g = out.spec;
    g.name = out.meta.name;
    g.namespace_ = out.meta.namespace_.empty() ? "default" : out.meta.namespace_;
    g.where = SourceLocation{fmt::format("podgroup {}/{}", g.namespace_, g.name)};
    const json& meta = Object(obj, "metadata", "podgroup");
    g.labels = Map(meta, "labels", "metadata");
    g.annotations = Map(meta, "annotations", "metadata");
    g.creation_time = Time(meta, "creationTimestamp", "metadata", kUnsetTime, kZeroTime);
    const json& spec = Object(obj, "spec", "podgroup");
    g.min_member = Int32(spec, "minMember", "spec", 1);
    const json& mtm = Object(spec, "minTaskMember", "spec");
    for (auto it = mtm.begin(); it != mtm.end(); ++it)
      g.min_task_member[it.key()] = Int32(mtm, it.key(), "spec.minTaskMember", 0);
    g.min_resources = OptResources(spec, "minResources", "spec");
    g.queue = Str(spec, "queue", "spec", "default");
    if (g.queue.empty()) g.queue = "default";
    g.priority_class_name = Str(spec, "priorityClassName", "spec");
    if (Member(spec, "networkTopology"))
      g.network_topology = NetworkTopology(Object(spec, "networkTopology", "spec"), "spec.networkTopology");
    g.sub_group_policy = SubGroupPolicies(spec, "spec");
    const json& status = Object(obj, "status", "podgroup");
    std::string phase = Str(status, "phase", "status");
    g.phase = ParsePodGroupPhase(phase).value_or(PodGroupPhase::Unknown);
    out.running = Int32(status, "running", "status", 0);
    out.succeeded = Int32(status, "succeeded", "status", 0);
    out.failed = Int32(status, "failed", "status", 0);
    const json& conds = Array(status, "conditions", "status");
    for (size_t i = 0; i < conds.size(); ++i) {
      std::string p = fmt::format("status.conditions[{}]", i);
      PodGroupCondition c;
      c.type = Str(conds[i], "type", p);
      c.status = Str(conds[i], "status", p);
      c.transition_id = Str(conds[i], "transitionID", p);
      c.last_transition_time = Time(conds[i], "lastTransitionTime", p, 0, 0);
      c.reason = Str(conds[i], "reason", p);
      c.message = Str(conds[i], "message", p);
      g.conditions.push_back(std::move(c));
    }
    return out;
  });
}

Result<QueueSpec> DecodeQueue(const json& obj, ObjectMeta* meta_out) {
  return Guard("queue", obj, [&] {
    ObjectMeta m = Meta(obj, "queue");
    QueueSpec q;
    q.name = m.name;
    q.where = SourceLocation{"queue " + q.name};
    const json& meta = Object(obj, "metadata", "queue");
    q.labels = Map(meta, "labels", "metadata");
    q.annotations = Map(meta, "annotations", "metadata");
    q.creation_time = Time(meta, "creationTimestamp", "metadata", kUnsetTime, kZeroTime);
    const json& spec = Object(obj, "spec", "queue");
    q.weight = OptInt(spec, "weight", "spec").value_or(1);
    q.capability = OptResources(spec, "capability", "spec");
    q.deserved = OptResources(spec, "deserved", "spec");
    if (Member(spec, "guarantee"))
      q.guarantee = OptResources(Object(spec, "guarantee", "spec"), "resource", "spec.guarantee");
    q.parent = Str(spec, "parent", "spec");
    q.priority = OptInt(spec, "priority", "spec").value_or(0);
    q.reclaimable = Bool(spec, "reclaimable", "spec", true);
    const json& aff = Object(spec, "affinity", "spec");
    for (auto [key, out] : {std::pair{"nodeGroupAffinity", &q.node_group_affinity},
                            std::pair{"nodeGroupAntiAffinity", &q.node_group_anti_affinity}}) {
      const json& a = Object(aff, key, "spec.affinity");
      std::string p = fmt::format("spec.affinity.{}", key);
      out->required = StrList(a, kRequired, p);
      out->preferred = StrList(a, kPreferred, p);
    }
    const json& status = Object(obj, "status", "queue");
    std::string state = Str(status, "state", "status");
    // A queue the controller has not reconciled yet has no state: Volcano treats it as Open.
    q.state = state.empty() ? QueueState::Open : ParseQueueState(state).value_or(QueueState::Unknown);
    if (meta_out) *meta_out = m;
    return q;
  });
}

Result<PriorityClassSpec> DecodePriorityClass(const json& obj, ObjectMeta* meta_out) {
  return Guard("priorityclass", obj, [&] {
    ObjectMeta m = Meta(obj, "priorityclass");
    PriorityClassSpec pc;
    pc.name = m.name;
    pc.where = SourceLocation{"priorityclass " + pc.name};
    pc.value = Int32(obj, "value", "priorityclass", 0);
    pc.global_default = Bool(obj, "globalDefault", "priorityclass", false);
    pc.preemption_policy = ParsePreemption(Str(obj, "preemptionPolicy", "priorityclass"),
                                           "preemptionPolicy");
    if (meta_out) *meta_out = m;
    return pc;
  });
}

Result<PodDisruptionBudget> DecodePdb(const json& obj, ObjectMeta* meta_out) {
  return Guard("poddisruptionbudget", obj, [&] {
    ObjectMeta m = Meta(obj, "poddisruptionbudget");
    PodDisruptionBudget pdb;
    pdb.name = m.name;
    pdb.namespace_ = m.namespace_.empty() ? "default" : m.namespace_;
    const json& spec = Object(obj, "spec", "pdb");
    auto int_or_string = [&](std::string_view key) -> std::optional<std::string> {
      const json* v = Member(spec, key);
      if (!v) return std::nullopt;
      if (v->is_string()) return v->get<std::string>();
      if (v->is_number_integer()) return std::to_string(v->get<int64_t>());
      Fail(fmt::format("spec.{}", key), "must be an integer or a percentage");
    };
    pdb.min_available = int_or_string("minAvailable");
    pdb.max_unavailable = int_or_string("maxUnavailable");
    if (Member(spec, "selector")) pdb.selector = Selector(Object(spec, "selector", "spec"), "spec.selector");
    const json& status = Object(obj, "status", "pdb");
    pdb.disruptions_allowed = Int32(status, "disruptionsAllowed", "status", 0);
    const json& disrupted = Object(status, "disruptedPods", "status");
    for (auto it = disrupted.begin(); it != disrupted.end(); ++it) pdb.disrupted_pods.push_back(it.key());
    if (meta_out) *meta_out = m;
    return pdb;
  });
}

Result<ResourceQuota> DecodeResourceQuota(const json& obj, ObjectMeta* meta_out) {
  return Guard("resourcequota", obj, [&] {
    ObjectMeta m = Meta(obj, "resourcequota");
    ResourceQuota rq;
    rq.name = m.name;
    rq.namespace_ = m.namespace_.empty() ? "default" : m.namespace_;
    const json& spec = Object(obj, "spec", "resourcequota");
    rq.hard = Resources(spec, "hard", "spec");
    if (auto it = spec.find("hard"); it != spec.end() && it->is_object())
      for (const auto& [name, value] : it->items()) rq.hard_names.push_back(name);
    rq.used = Resources(Object(obj, "status", "resourcequota"), "used", "status");
    if (meta_out) *meta_out = m;
    return rq;
  });
}

Result<DecodedNamespace> DecodeNamespace(const json& obj) {
  return Guard("namespace", obj, [&] {
    DecodedNamespace ns;
    ns.meta = Meta(obj, "namespace");
    ns.labels = Map(Object(obj, "metadata", "namespace"), "labels", "metadata");
    return ns;
  });
}

Result<HyperNodeSpec> DecodeHyperNode(const json& obj, ObjectMeta* meta_out) {
  return Guard("hypernode", obj, [&] {
    ObjectMeta m = Meta(obj, "hypernode");
    HyperNodeSpec hn;
    hn.name = m.name;
    std::string object = "hypernode " + hn.name;
    hn.where = SourceLocation{object};
    const json& spec = Object(obj, "spec", "hypernode");
    if (!Member(spec, "tier")) Fail("spec", "has no tier");
    hn.tier = NonNegativeInt32(spec, "tier", "spec", 0);
    hn.tier_name = Str(spec, "tierName", "spec");
    const json& members = Array(spec, "members", "spec");
    for (size_t i = 0; i < members.size(); ++i)
      hn.members.push_back(HyperNodeMember(members[i], fmt::format("spec.members[{}]", i), object));
    if (meta_out) *meta_out = m;
    return hn;
  });
}

Result<NumatopologySpec> DecodeNumatopology(const json& obj, ObjectMeta* meta_out) {
  return Guard("numatopology", obj, [&] {
    ObjectMeta m = Meta(obj, "numatopology");
    NumatopologySpec n;
    n.name = m.name;
    n.where = SourceLocation{"numatopology " + n.name};
    const json& spec = Object(obj, "spec", "numatopology");
    n.policies = Map(spec, "policies", "spec");
    n.res_reserved = Resources(spec, "resReserved", "spec");
    const json& res = Object(spec, "numares", "spec");
    for (auto it = res.begin(); it != res.end(); ++it) {
      std::string p = "spec.numares." + it.key();
      if (!it.value().is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(it.value())));
      NumatopologySpec::NumaResource r;
      r.allocatable = CpuSet(Str(it.value(), "allocatable", p), p + ".allocatable");
      r.capacity = NonNegativeInt32(it.value(), "capacity", p, 0);
      n.numares[it.key()] = std::move(r);
    }
    const json& cpus = Object(spec, "cpuDetail", "spec");
    for (auto it = cpus.begin(); it != cpus.end(); ++it) {
      std::string p = "spec.cpuDetail." + it.key();
      std::optional<int64_t> id = ParseCpuId(it.key());
      if (!id) Fail("spec.cpuDetail", fmt::format("key `{}` is not a CPU id (a non-negative integer)", it.key()));
      if (!it.value().is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(it.value())));
      NumatopologySpec::CpuInfo c;
      c.numa = NonNegativeInt32(it.value(), "numa", p, 0);
      c.socket = NonNegativeInt32(it.value(), "socket", p, 0);
      c.core = NonNegativeInt32(it.value(), "core", p, 0);
      n.cpu_detail[*id] = c;
    }
    if (meta_out) *meta_out = m;
    return n;
  });
}

}  // namespace kiln::kube
