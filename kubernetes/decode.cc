#include "kubernetes/decode.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <type_traits>

#include "kubernetes/decode_shared.h"
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

// The member `key` of object `o` (nullptr when absent or null), failing unless `(v->*is)()`: it
// must be `what`.
const json* Typed(const json& o, std::string_view key, const std::string& path,
                  bool (json::*is)() const noexcept, std::string_view what) {
  const json* v = Member(o, key);
  if (v && !(v->*is)())
    Fail(path + "." + std::string(key), fmt::format("must be {}, got {}", what, TypeName(*v)));
  return v;
}

const json& Object(const json& o, std::string_view key, const std::string& path) {
  static const json kEmpty = json::object();
  const json* v = Typed(o, key, path, &json::is_object, "an object");
  return v ? *v : kEmpty;
}

const json& Array(const json& o, std::string_view key, const std::string& path) {
  static const json kEmpty = json::array();
  const json* v = Typed(o, key, path, &json::is_array, "a list");
  return v ? *v : kEmpty;
}

// Calls `f(element, its path)` for each element of the list `o.key` (none when absent).
template <typename F>
void Each(const json& o, std::string_view key, const std::string& path, F&& f) {
  const json& list = Array(o, key, path);
  for (size_t i = 0; i < list.size(); ++i) f(list[i], fmt::format("{}.{}[{}]", path, key, i));
}

// The list `o.key`, each element decoded by `decode(element, its path)`.
template <typename F>
auto List(const json& o, std::string_view key, const std::string& path, F&& decode) {
  std::vector<std::invoke_result_t<F&, const json&, const std::string&>> out;
  Each(o, key, path, [&](const json& e, const std::string& p) { out.push_back(decode(e, p)); });
  return out;
}

std::string Str(const json& o, std::string_view key, const std::string& path, std::string def = "") {
  const json* v = Typed(o, key, path, &json::is_string, "a string");
  return v ? v->get<std::string>() : def;
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
  const json* v = Typed(o, key, path, &json::is_boolean, "a boolean");
  return v ? v->get<bool>() : def;
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
  return List(o, key, path, [](const json& e, const std::string& p) {
    if (!e.is_string()) Fail(p, "must be a string");
    return e.get<std::string>();
  });
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
  return SelectorRequirement{Str(e, "key", path), Str(e, "operator", path), StrList(e, "values", path)};
}

LabelSelector Selector(const json& s, const std::string& path) {
  LabelSelector sel;
  sel.match_labels = Map(s, "matchLabels", path);
  sel.match_expressions = List(s, "matchExpressions", path, Requirement);
  return sel;
}

std::optional<LabelSelector> OptSelector(const json& o, std::string_view key, const std::string& path) {
  if (!Member(o, key)) return std::nullopt;
  return Selector(Object(o, key, path), path + "." + std::string(key));
}

NodeSelectorTerm Term(const json& t, const std::string& path) {
  NodeSelectorTerm term;
  term.match_expressions = List(t, "matchExpressions", path, Requirement);
  term.match_fields = List(t, "matchFields", path, Requirement);
  return term;
}

// A decoder for one entry of a preferred-affinity list: {weight, <field>: a term `decode` reads}.
template <typename W, typename T>
auto Weighted(T W::*term, T (*decode)(const json&, const std::string&), std::string_view field) {
  return [=](const json& e, const std::string& p) {
    W w;
    w.weight = Int32(e, "weight", p, 0);
    w.*term = decode(Object(e, field, p), p + "." + std::string(field));
    return w;
  };
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
  out.required = List(a, kRequired, path, AffinityTerm);
  out.preferred = List(a, kPreferred, path,
                       Weighted(&WeightedPodAffinityTerm::term, AffinityTerm, "podAffinityTerm"));
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
      n.required = List(*req, "nodeSelectorTerms", rp, Term);
    }
    n.preferred =
        List(*na, kPreferred, p, Weighted(&PreferredSchedulingTerm::preference, Term, "preference"));
    out.node_affinity = std::move(n);
  }
  if (Member(a, "podAffinity"))
    out.pod_affinity = PodAffinityOf(Object(a, "podAffinity", path), path + ".podAffinity");
  if (Member(a, "podAntiAffinity"))
    out.pod_anti_affinity = PodAffinityOf(Object(a, "podAntiAffinity", path), path + ".podAntiAffinity");
  return out;
}

Toleration TolerationOf(const json& e, const std::string& p) {
  return Toleration{Str(e, "key", p), Str(e, "operator", p, "Equal"), Str(e, "value", p),
                    Str(e, "effect", p), OptInt(e, "tolerationSeconds", p)};
}

TopologySpreadConstraint SpreadOf(const json& e, const std::string& p) {
  TopologySpreadConstraint c;
  c.max_skew = Int32(e, "maxSkew", p, 1);
  c.topology_key = Str(e, "topologyKey", p);
  c.when_unsatisfiable = Str(e, "whenUnsatisfiable", p, "DoNotSchedule");
  c.label_selector = OptSelector(e, "labelSelector", p);
  if (auto m = OptInt(e, "minDomains", p)) c.min_domains = static_cast<int32_t>(*m);
  c.match_label_keys = StrList(e, "matchLabelKeys", p);
  c.node_affinity_policy = Str(e, "nodeAffinityPolicy", p);
  c.node_taints_policy = Str(e, "nodeTaintsPolicy", p);
  return c;
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
  std::vector<detail::QosResources> all;
  // One container's (or the pod's) resources.
  auto add = [&](const json& res, const std::string& p) {
    detail::QosResources c{Resources(res, "requests", p), Resources(res, "limits", p)};
    const json& named = Object(res, "requests", p);
    c.names_cpu = Member(named, "cpu") != nullptr;
    c.names_memory = Member(named, "memory") != nullptr;
    all.push_back(std::move(c));
  };
  if (Member(spec, "resources")) {
    add(Object(spec, "resources", "spec"), "spec.resources");
  } else {
    for (std::string_view list : {"containers", "initContainers"})
      Each(spec, list, "spec",
           [&](const json& c, const std::string& p) { add(Object(c, "resources", p), p + ".resources"); });
  }
  return detail::QosGuaranteed(all);
}

PreemptionPolicy ParsePreemption(const std::string& s, const std::string& path) {
  if (s == "Never") return PreemptionPolicy::Never;
  if (s.empty() || s == "PreemptLowerPriority") return PreemptionPolicy::PreemptLowerPriority;
  Fail(path, fmt::format("must be PreemptLowerPriority or Never, got `{}`", s));
}

// The sum of the containers' resources.`which` ("requests" or "limits").
Resource ContainersSum(const json& spec, const std::string& path, std::string_view which) {
  Resource sum;
  Each(spec, "containers", path, [&](const json& c, const std::string& p) {
    std::string rp = p + ".resources";
    sum.Add(Resources(Object(c, "resources", rp), which, rp));
  });
  return sum;
}

// A pod's requests as Kubernetes computes them (resourcehelper.PodRequests, Volcano's
// GetPodResourceWithoutInitContainers + init max + overhead): the sum over containers, then per
// resource the max with each init container (a sidecar init container, restartPolicy Always,
// runs alongside the containers and adds to the sum instead), then plus the pod overhead.
Resource PodRequests(const json& spec, const std::string& path) {
  Resource sum = ContainersSum(spec, path, "requests");
  Resource sidecars;
  Each(spec, "initContainers", path, [&](const json& c, const std::string& p) {
    Resource r = Resources(Object(c, "resources", p), "requests", p + ".resources");
    if (Str(c, "restartPolicy", p) == "Always") {
      sidecars.Add(r);
      return;
    }
    // An init container runs with the sidecars started before it.
    Resource with = r;
    with.Add(sidecars);
    sum.SetMax(with);
  });
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
  return List(spec, "subGroupPolicy", path, [](const json& e, const std::string& p) {
    if (!e.is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(e)));
    SubGroupPolicySpec sg;
    sg.name = Str(e, "name", p);
    if (sg.name.size() > 253) Fail(p + ".name", "is longer than 253 characters");
    if (Member(e, "networkTopology"))
      sg.network_topology = NetworkTopology(Object(e, "networkTopology", p), p + ".networkTopology");
    if (Member(e, "subGroupSize")) sg.sub_group_size = NonNegativeInt32(e, "subGroupSize", p, 1);
    if (Member(e, "minSubGroups")) sg.min_sub_groups = NonNegativeInt32(e, "minSubGroups", p, 0);
    sg.label_selector = OptSelector(e, "labelSelector", p);
    sg.match_label_keys = StrList(e, "matchLabelKeys", p);
    return sg;
  });
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
  // The two selectors that name their members by one string.
  struct ByText {
    const char* key;
    const char* field;
    HyperNodeMemberSpec::Selector selector;
    std::string* text;
  };
  const ByText by_text[] = {
      {"exactMatch", "name", HyperNodeMemberSpec::Selector::Exact, &out.name},
      {"regexMatch", "pattern", HyperNodeMemberSpec::Selector::Regex, &out.pattern}};
  for (const ByText& s : by_text) {
    if (!Member(sel, s.key)) continue;
    ++given;
    out.selector = s.selector;
    std::string kp = fmt::format("{}.{}", sp, s.key);
    *s.text = Str(Object(sel, s.key, sp), s.field, kp);
    if (s.text->empty()) Fail(fmt::format("{}.{}", kp, s.field), "is empty");
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

// The labels, annotations and creation time of an object's metadata, into its spec.
template <typename Spec>
void ReadMetadata(const json& obj, const std::string& kind, Spec& s) {
  const json& meta = Object(obj, "metadata", kind);
  s.labels = Map(meta, "labels", "metadata");
  StringMap annotations = Map(meta, "annotations", "metadata");
  if constexpr (std::is_same_v<Spec, PodSpec>) {
    if (!annotations.empty()) s.mutable_extras().annotations = std::move(annotations);
  } else {
    s.annotations = std::move(annotations);
  }
  s.creation_time = Time(meta, "creationTimestamp", "metadata", kUnsetTime, kZeroTime);
}

std::string NamespaceOf(const ObjectMeta& m) { return m.namespace_.empty() ? "default" : m.namespace_; }

// Decodes an object its metadata names (and places, for a namespaced kind, "default" when unset);
// a spec that keeps its location gets "<kind> <name>". `fill(spec)` reads the rest; `meta_out`,
// when given, receives the metadata.
template <typename Spec, typename F>
Result<Spec> DecodeNamed(std::string_view kind, const json& obj, ObjectMeta* meta_out, F&& fill) {
  return Guard(kind, obj, [&] {
    ObjectMeta m = Meta(obj, std::string(kind));
    Spec s;
    s.name = m.name;
    if constexpr (requires { s.namespace_; }) s.namespace_ = NamespaceOf(m);
    if constexpr (requires { s.where; }) s.where = SourceLocation{fmt::format("{} {}", kind, s.name)};
    fill(s);
    if (meta_out) *meta_out = m;
    return s;
  });
}

// Decodes a namespaced workload object (a pod, a podgroup) into `Decoded{meta, spec}`: the spec's
// name, namespace, location and metadata maps first, then `fill(decoded, spec)`.
template <typename Decoded, typename F>
Result<Decoded> DecodeWorkload(std::string_view kind, const json& obj, F&& fill) {
  return Guard(kind, obj, [&] {
    Decoded out;
    out.meta = Meta(obj, std::string(kind));
    auto& s = out.spec;
    s.name = out.meta.name;
    s.namespace_ = NamespaceOf(out.meta);
    s.where = SourceLocation{fmt::format("{} {}/{}", kind, s.namespace_, s.name)};
    ReadMetadata(obj, std::string(kind), s);
    fill(out, s);
    return out;
  });
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
  return DecodeWorkload<DecodedPod>("pod", obj, [&](DecodedPod& out, PodSpec& p) {
    if (!detail::TakePodAnnotations(p))
      Fail("metadata.annotations." + std::string(kDurationAnnotation),
           fmt::format("must be a positive Go duration, got `{}`",
                       p.annotations().find(kDurationAnnotation)->second));
    p.deleting = Member(Object(obj, "metadata", "pod"), "deletionTimestamp") != nullptr;

    const json& spec = Object(obj, "spec", "pod");
    out.scheduler_name = Str(spec, "schedulerName", "spec", "default-scheduler");
    if (out.scheduler_name != p.scheduler_name()) p.mutable_extras().scheduler_name = out.scheduler_name;
    p.node = Str(spec, "nodeName", "spec");
    if (std::string name = Str(spec, "priorityClassName", "spec"); !name.empty())
      p.mutable_extras().priority_class_name = std::move(name);
    if (auto pr = OptInt(spec, "priority", "spec")) p.priority = static_cast<int32_t>(*pr);
    if (const json* pp = Member(spec, "preemptionPolicy"))
      p.preemption_policy = ParsePreemption(pp->is_string() ? pp->get<std::string>() : "?",
                                            "spec.preemptionPolicy");
    p.requests = PodRequests(spec, "spec");
    // The containers' limits, summed (device sharing reads gpu counts and memory there).
    if (SparseResource limits = ContainersSum(spec, "spec", "limits"); !(limits == SparseResource()))
      p.mutable_extras().limits = std::move(limits);
    PodPlacement placement;
    placement.node_selector = Map(spec, "nodeSelector", "spec");
    placement.tolerations = List(spec, "tolerations", "spec", TolerationOf);
    if (Member(spec, "affinity")) placement.affinity = AffinityOf(Object(spec, "affinity", "spec"), "spec.affinity");
    placement.topology_spread_constraints = List(spec, "topologySpreadConstraints", "spec", SpreadOf);
    if (const json& containers = Array(spec, "containers", "spec"); !containers.empty())
      if (std::string image = Str(containers[0], "image", "spec.containers[0]"); !image.empty())
        p.mutable_extras().image = std::move(image);
    Each(spec, "containers", "spec", [&](const json& c, const std::string& cp) {
      Each(c, "ports", cp, [&](const json& port, const std::string& pp) {
        HostPort hp;
        hp.host_port = Int32(port, "hostPort", pp, 0);
        // Only ports bound on the host constrain placement (NodePorts filter).
        if (hp.host_port == 0) return;
        hp.container_port = Int32(port, "containerPort", pp, 0);
        hp.protocol = Str(port, "protocol", pp, "TCP");
        hp.host_ip = Str(port, "hostIP", pp);
        placement.host_ports.push_back(std::move(hp));
      });
    });
    if (!placement.empty()) p.placement = std::make_shared<const PodPlacement>(std::move(placement));
    Each(spec, "schedulingGates", "spec",
         [&](const json& g, const std::string& gp) { p.mutable_extras().scheduling_gates.push_back(Str(g, "name", gp)); });

    const json& status = Object(obj, "status", "pod");
    out.qos_guaranteed = PodQosGuaranteed(spec, status);
    p.phase = detail::PodPhaseOf(Str(status, "phase", "status", "Pending"));
    p.nominated_node = Str(status, "nominatedNodeName", "status");
    Each(status, "conditions", "status", [&](const json& c, const std::string& cp) {
      if (Str(c, "type", cp) != "PodScheduled") return;
      out.scheduled_status = Str(c, "status", cp);
      out.scheduled_reason = Str(c, "reason", cp);
      out.scheduled_message = Str(c, "message", cp);
      if (out.scheduled_status == "True") p.scheduled_at = Time(c, "lastTransitionTime", cp, 0, 0);
    });
  });
}

Result<NodeSpec> DecodeNode(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<NodeSpec>("node", obj, meta_out, [&](NodeSpec& n) {
    ReadMetadata(obj, "node", n);
    const json& spec = Object(obj, "spec", "node");
    n.unschedulable = Bool(spec, "unschedulable", "spec", false);
    n.taints = List(spec, "taints", "spec", [](const json& t, const std::string& p) {
      return Taint{Str(t, "key", p), Str(t, "value", p), Str(t, "effect", p)};
    });
    const json& status = Object(obj, "status", "node");
    n.allocatable = Resources(status, "allocatable", "status");
    n.capacity = Member(status, "capacity") ? SparseResource(Resources(status, "capacity", "status"))
                                            : n.allocatable;
    Each(status, "images", "status", [&](const json& image, const std::string& p) {
      int64_t size = OptInt(image, "sizeBytes", p).value_or(0);
      for (auto& name : StrList(image, "names", p)) n.images[name] = size;
    });
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
  });
}

Result<DecodedPodGroup> DecodePodGroup(const json& obj) {
  return DecodeWorkload<DecodedPodGroup>("podgroup", obj, [&](DecodedPodGroup& out, PodGroupSpec& g) {
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
    g.conditions = List(status, "conditions", "status", [](const json& c, const std::string& p) {
      PodGroupCondition pc;
      pc.type = Str(c, "type", p);
      pc.status = Str(c, "status", p);
      pc.transition_id = Str(c, "transitionID", p);
      pc.last_transition_time = Time(c, "lastTransitionTime", p, 0, 0);
      pc.reason = Str(c, "reason", p);
      pc.message = Str(c, "message", p);
      return pc;
    });
  });
}

Result<QueueSpec> DecodeQueue(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<QueueSpec>("queue", obj, meta_out, [&](QueueSpec& q) {
    ReadMetadata(obj, "queue", q);
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
  });
}

Result<PriorityClassSpec> DecodePriorityClass(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<PriorityClassSpec>("priorityclass", obj, meta_out, [&](PriorityClassSpec& pc) {
    pc.value = Int32(obj, "value", "priorityclass", 0);
    pc.global_default = Bool(obj, "globalDefault", "priorityclass", false);
    pc.preemption_policy = ParsePreemption(Str(obj, "preemptionPolicy", "priorityclass"),
                                           "preemptionPolicy");
  });
}

Result<PodDisruptionBudget> DecodePdb(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<PodDisruptionBudget>("poddisruptionbudget", obj, meta_out,
                                          [&](PodDisruptionBudget& pdb) {
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
  });
}

Result<ResourceQuota> DecodeResourceQuota(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<ResourceQuota>("resourcequota", obj, meta_out, [&](ResourceQuota& rq) {
    const json& spec = Object(obj, "spec", "resourcequota");
    rq.hard = Resources(spec, "hard", "spec");
    if (auto it = spec.find("hard"); it != spec.end() && it->is_object())
      for (const auto& [name, value] : it->items()) rq.hard_names.push_back(name);
    rq.used = Resources(Object(obj, "status", "resourcequota"), "used", "status");
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
  return DecodeNamed<HyperNodeSpec>("hypernode", obj, meta_out, [&](HyperNodeSpec& hn) {
    std::string object = "hypernode " + hn.name;
    const json& spec = Object(obj, "spec", "hypernode");
    if (!Member(spec, "tier")) Fail("spec", "has no tier");
    hn.tier = NonNegativeInt32(spec, "tier", "spec", 0);
    hn.tier_name = Str(spec, "tierName", "spec");
    hn.members = List(spec, "members", "spec",
                      [&](const json& m, const std::string& p) { return HyperNodeMember(m, p, object); });
  });
}

Result<NumatopologySpec> DecodeNumatopology(const json& obj, ObjectMeta* meta_out) {
  return DecodeNamed<NumatopologySpec>("numatopology", obj, meta_out, [&](NumatopologySpec& n) {
    const json& spec = Object(obj, "spec", "numatopology");
    n.policies = Map(spec, "policies", "spec");
    n.res_reserved = Resources(spec, "resReserved", "spec");
    // Each member of spec.<key> (an object per member), with its key and its path.
    auto each_object = [&](std::string_view key, auto&& f) {
      const json& all = Object(spec, key, "spec");
      for (auto it = all.begin(); it != all.end(); ++it) {
        std::string p = fmt::format("spec.{}.{}", key, it.key());
        f(it.key(), it.value(), p);
      }
    };
    each_object("numares", [&](const std::string& key, const json& v, const std::string& p) {
      if (!v.is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(v)));
      NumatopologySpec::NumaResource r;
      r.allocatable = CpuSet(Str(v, "allocatable", p), p + ".allocatable");
      r.capacity = NonNegativeInt32(v, "capacity", p, 0);
      n.numares[key] = std::move(r);
    });
    each_object("cpuDetail", [&](const std::string& key, const json& v, const std::string& p) {
      std::optional<int64_t> id = ParseCpuId(key);
      if (!id) Fail("spec.cpuDetail", fmt::format("key `{}` is not a CPU id (a non-negative integer)", key));
      if (!v.is_object()) Fail(p, fmt::format("must be an object, got {}", TypeName(v)));
      NumatopologySpec::CpuInfo c;
      c.numa = NonNegativeInt32(v, "numa", p, 0);
      c.socket = NonNegativeInt32(v, "socket", p, 0);
      c.core = NonNegativeInt32(v, "core", p, 0);
      n.cpu_detail[*id] = c;
    });
  });
}

namespace detail {

bool QosGuaranteed(const std::vector<QosResources>& all) {
  bool guaranteed = true;
  Resource requests, limits;
  for (const QosResources& c : all) {
    for (auto [id, named] : {std::pair{kCpu, c.names_cpu}, std::pair{kMemory, c.names_memory}}) {
      double l = c.limits.Get(id), r = named ? c.requests.Get(id) : l;
      if (l <= 0) guaranteed = false;
      if (l > 0) limits.Set(id, limits.Get(id) + l);
      if (r > 0) requests.Set(id, requests.Get(id) + r);
    }
  }
  return !all.empty() && guaranteed && requests.Get(kCpu) == limits.Get(kCpu) &&
         requests.Get(kMemory) == limits.Get(kMemory);
}

PodPhase PodPhaseOf(std::string_view phase) {
  if (phase == "Pending") return PodPhase::Pending;
  if (phase == "Running") return PodPhase::Running;
  if (phase == "Succeeded") return PodPhase::Succeeded;
  if (phase == "Failed") return PodPhase::Failed;
  return PodPhase::Unknown;
}

bool TakePodAnnotations(PodSpec& p) {
  const StringMap& annotations = p.annotations();
  if (!annotations.contains(kGroupNameAnnotation) && !annotations.contains(kTaskSpecAnnotation) &&
      !annotations.contains(kDurationAnnotation))
    return true;
  PodExtras& extras = p.mutable_extras();  // before taking iterators: it may copy the map
  if (auto it = extras.annotations.find(kGroupNameAnnotation); it != extras.annotations.end()) {
    p.group = it->second;
    extras.annotations.erase(it);
  }
  if (auto it = extras.annotations.find(kTaskSpecAnnotation); it != extras.annotations.end()) {
    extras.task = it->second;
    extras.annotations.erase(it);
  }
  if (auto it = extras.annotations.find(kDurationAnnotation); it != extras.annotations.end()) {
    auto d = ParseGoDuration(it->second);
    if (!d || *d <= 0) return false;
    p.duration = *d;
    extras.annotations.erase(it);
  }
  return true;
}

}  // namespace detail

}  // namespace kiln::kube
