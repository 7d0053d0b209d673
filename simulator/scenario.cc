// Strict scenario loader (scenario-format.md). Every object is a map whose keys are checked
// against the contract; each value is read through yaml::Reader so errors carry file:line:col.
// Cross references (pod → group/node, group → queue, queue → parent, expect → pods/nodes/groups)
// are checked after everything is read, so the order objects are listed in does not matter.

#include "simulator/scenario.h"

#include <sys/mman.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "runtime/cpuset.h"
#include "runtime/quantity.h"
#include "runtime/yaml_util.h"

namespace kiln {

namespace {

#define KILN_CAT_(a, b) a##b
#define KILN_CAT(a, b) KILN_CAT_(a, b)
// Returns the error of a failed Status from the enclosing Status-returning function.
#define TRY(expr)                                      \
  do {                                                 \
    if (::kiln::Status s_ = (expr); !s_) return s_;    \
  } while (0)
// `lhs = *expr` or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr)                                        \
  auto KILN_CAT(r_, __LINE__) = (expr);                                    \
  if (!KILN_CAT(r_, __LINE__)) return KILN_CAT(r_, __LINE__).error();      \
  lhs = std::move(*KILN_CAT(r_, __LINE__))

constexpr std::string_view kDefaultNow = "2025-01-01T00:00:00Z";
constexpr double kDefaultMaxPods = 110;  // kubelet's default --max-pods

template <typename Out>
struct Field;

class Loader {
 public:
  explicit Loader(std::string file) : r_(std::move(file)) {}

  // Reads the document into `spec`; Finish then applies defaults and checks references, which
  // needs no document (the caller frees it first: it is the larger of the two).
  Status Load(const yaml::Node& root, std::string_view text, ScenarioSpec& spec);
  Status Finish(ScenarioSpec& spec);

 private:
  // ---- generic values ----
  Result<std::string> Str(const yaml::Node& n, std::string_view what) { return r_.String(n, what); }

  Result<StringMap> ReadStringMap(const yaml::Node& n, std::string_view what) {
    if (Status s = r_.ExpectAnyMap(n, what); !s) return s.error();
    StringMap out;
    if (n.IsNull()) return out;
    for (const auto& kv : n) {
      if (!kv.second.IsScalar() && !kv.second.IsNull())
        return r_.Fail(kv.second, fmt::format("value of `{}` in {} must be a string, got {}",
                                              kv.first.Scalar(), what, yaml::KindName(kv.second)));
      out[std::string(kv.first.Scalar())] = kv.second.IsNull() ? std::string() : kv.second.Scalar();
    }
    return out;
  }

  Result<std::vector<std::string>> ReadStringList(const yaml::Node& n, std::string_view what) {
    if (Status s = r_.ExpectList(n, what); !s) return s.error();
    std::vector<std::string> out;
    for (const auto& item : n) {
      auto v = r_.String(item, fmt::format("an entry of {}", what));
      if (!v) return v.error();
      out.push_back(*v);
    }
    return out;
  }

  // A time; Go's zero time (an unset time.Time as Kubernetes writes it) reads as `unset`, which
  // each field chooses as Volcano reads that field unset.
  Result<TimeNs> ReadTime(const yaml::Node& n, std::string_view what, TimeNs unset) {
    auto text = r_.String(n, what);
    if (!text) return text.error();
    if (IsZeroTimestamp(*text)) return unset;
    auto t = ParseTimestamp(*text);
    if (!t) return r_.Fail(n, fmt::format("{}: {}", what, t.error().message));
    return *t;
  }

  Result<int32_t> ReadInt32(const yaml::Node& n, std::string_view what, int64_t min = INT32_MIN) {
    auto v = r_.Int(n, what);
    if (!v) return v.error();
    if (*v < min || *v > INT32_MAX)
      return r_.Fail(n, fmt::format("{} must be between {} and {}, got {}", what, min, INT32_MAX, *v));
    return static_cast<int32_t>(*v);
  }

  // A resource list ({cpu: "1", memory: 1Gi, nvidia.com/gpu: 1}) in Volcano's units.
  Result<Resource> ReadResources(const yaml::Node& n, std::string_view what) {
    if (Status s = r_.ExpectAnyMap(n, what); !s) return s.error();
    Resource res;
    if (n.IsNull()) return res;
    for (const auto& kv : n) {
      std::string_view name = kv.first.Scalar();
      if (!kv.second.IsScalar())
        return r_.Fail(kv.second, fmt::format("quantity of `{}` in {} must be a string like \"1\" "
                                              "or \"500m\", got {}",
                                              name, what, yaml::KindName(kv.second)));
      std::string_view text = kv.second.Scalar();
      auto q = ParseResourceQuantity(name, text);
      if (!q)
        return r_.Fail(kv.second, fmt::format("bad quantity `{}` for `{}` in {}: {}", text, name,
                                              what, q.error().message));
      if (*q < 0)
        return r_.Fail(kv.second, fmt::format("quantity `{}` for `{}` in {} must not be negative",
                                              text, name, what));
      auto id = ResourceNames::Intern(name);
      if (!id) return r_.Fail(kv.first, fmt::format("{}: {}", what, id.error().message));
      res.Set(*id, *q);
    }
    return res;
  }

  Result<PreemptionPolicy> ReadPreemptionPolicy(const yaml::Node& n, std::string_view what) {
    auto s = Str(n, what);
    if (!s) return s.error();
    if (*s == "PreemptLowerPriority") return PreemptionPolicy::PreemptLowerPriority;
    if (*s == "Never") return PreemptionPolicy::Never;
    return r_.Fail(n, fmt::format("{} must be PreemptLowerPriority or Never, got `{}`", what, *s));
  }

  // ---- Kubernetes shapes ----
  Result<SelectorRequirement> ReadRequirement(const yaml::Node& n, std::string_view what,
                                              bool node_selector);
  Result<LabelSelector> ReadLabelSelector(const yaml::Node& n, std::string_view what);
  Result<NodeSelectorTerm> ReadNodeSelectorTerm(const yaml::Node& n, std::string_view what);
  Result<PodAffinityTerm> ReadPodAffinityTerm(const yaml::Node& n, std::string_view what);
  Result<PodAffinity> ReadPodAffinity(const yaml::Node& n, std::string_view what);
  Result<Affinity> ReadAffinity(const yaml::Node& n, std::string_view what);
  Result<std::vector<Toleration>> ReadTolerations(const yaml::Node& n, std::string_view what);
  Result<std::vector<Taint>> ReadTaints(const yaml::Node& n, std::string_view what);
  Result<std::vector<TopologySpreadConstraint>> ReadSpread(const yaml::Node& n,
                                                           std::string_view what);
  Result<std::vector<HostPort>> ReadHostPorts(const yaml::Node& n, std::string_view what);
  Status ReadNodeImages(const yaml::Node& n, std::string_view what,
                        std::map<std::string, int64_t, std::less<>>& out);
  Result<NodeGroupAffinity> ReadNodeGroupAffinity(const yaml::Node& n, std::string_view what);
  // Reads a named object whose keys are `fields` (plus `name`); returns "<kind> `<name>`".
  template <typename Out>
  Result<std::string> ReadFields(const yaml::Node& n, std::string_view kind,
                                 const std::vector<Field<Out>>& fields, Out& out);

  // ---- scenario objects ----
  Status ReadPriorityClass(const yaml::Node& n, PriorityClassSpec& out);
  Status ReadQueue(const yaml::Node& n, QueueSpec& out);
  Status ReadNode(const yaml::Node& n, NodeSpec& out);
  Status ReadPodGroup(const yaml::Node& n, PodGroupSpec& out);
  Status ReadPod(const yaml::Node& n, PodSpec& out);
  Status ReadPdb(const yaml::Node& n, PodDisruptionBudget& out);
  Status ReadResourceQuota(const yaml::Node& n, ResourceQuota& out);
  // Topology (scenario-format.md "Topology, devices and today's Volcano objects").
  Status ReadHyperNode(const yaml::Node& n, HyperNodeSpec& out);
  Result<HyperNodeMemberSpec> ReadHyperNodeMember(const yaml::Node& n, std::string_view what);
  Status ReadNumatopology(const yaml::Node& n, NumatopologySpec& out);
  Result<std::set<int64_t>> ReadCpuSet(const yaml::Node& n, std::string_view what);
  Result<NetworkTopologySpec> ReadNetworkTopology(const yaml::Node& n, std::string_view what);
  Result<std::vector<SubGroupPolicySpec>> ReadSubGroupPolicy(const yaml::Node& n,
                                                             std::string_view what);
  Status ReadCluster(const yaml::Node& n, ClusterSpec& out);
  Status ReadExpect(const yaml::Node& n, ExpectSpec& out);
  Status ReadCalls(const yaml::Node& n, std::string_view what, bool with_results,
                   std::vector<CallSpec>& out);
  Status ReadCall(const yaml::Node& n, std::string_view what, bool with_results, CallSpec& out);
  Result<CallValue> ReadCallResult(const yaml::Node& n, std::string_view what,
                                   CallValue::Kind kind);
  Result<std::map<std::string, std::string>> ReadKeyMap(const yaml::Node& n,
                                                        std::string_view what);

  // Reads the `name` key of an object map first, so later errors can name the object.
  Result<std::string> ObjectName(const yaml::Node& n, std::string_view kind) {
    const yaml::Node name = n["name"];
    if (!name.IsDefined()) return r_.Fail(n, fmt::format("{} has no `name`", kind));
    auto s = Str(name, fmt::format("{} `name`", kind));
    if (!s) return s.error();
    if (s->empty()) return r_.Fail(name, fmt::format("{} `name` is empty", kind));
    return *s;
  }

  Status CrossCheck(ScenarioSpec& spec);
  Status ApplyDefaults(ScenarioSpec& spec);

  yaml::Reader r_;
  // Where each expect key was written, to point at a bad reference.
  std::vector<std::pair<std::string, SourceLocation>> expect_pods_, expect_nodes_, expect_groups_;
  // Names the calls use, checked once the cluster is read. A pod named by a call may lack a
  // defined group (it then becomes a detached task).
  enum class RefKind { Pod, Node, Job, Queue };
  struct CallRef {
    RefKind kind;
    std::string name;
    SourceLocation where;
  };
  std::vector<CallRef> call_refs_;
};

// ------------------------------------------------------------------------------------------
// Kubernetes shapes

Result<SelectorRequirement> Loader::ReadRequirement(const yaml::Node& n, std::string_view what,
                                                    bool node_selector) {
  if (Status s = r_.ExpectMap(n, what, {"key", "operator", "values"}); !s) return s.error();
  SelectorRequirement req;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (k == "key") {
      ASSIGN_OR_RETURN(req.key, Str(kv.second, fmt::format("`key` of {}", what)));
    } else if (k == "operator") {
      ASSIGN_OR_RETURN(req.op, Str(kv.second, fmt::format("`operator` of {}", what)));
    } else if (k == "values") {
      ASSIGN_OR_RETURN(req.values, ReadStringList(kv.second, fmt::format("`values` of {}", what)));
    }
  }
  std::vector<std::string_view> ops = {"In", "NotIn", "Exists", "DoesNotExist"};
  if (node_selector) {
    ops.push_back("Gt");
    ops.push_back("Lt");
  }
  if (std::find(ops.begin(), ops.end(), req.op) == ops.end()) {
    std::string list;
    for (auto o : ops) list += (list.empty() ? "" : ", ") + std::string(o);
    return r_.Fail(n["operator"].IsDefined() ? n["operator"] : n,
                   fmt::format("`operator` of {} must be one of {}, got `{}`{}", what, list, req.op,
                               yaml::DidYouMean(req.op, ops)));
  }
  if (req.key.empty()) return r_.Fail(n, fmt::format("{} has no `key`", what));
  return req;
}

Result<LabelSelector> Loader::ReadLabelSelector(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what, {"matchLabels", "matchExpressions"}); !s) return s.error();
  LabelSelector sel;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (k == "matchLabels") {
      ASSIGN_OR_RETURN(sel.match_labels, ReadStringMap(kv.second, fmt::format("`matchLabels` of {}", what)));
    } else {
      if (Status s = r_.ExpectList(kv.second, "`matchExpressions`"); !s) return s.error();
      for (const auto& e : kv.second) {
        ASSIGN_OR_RETURN(auto req, ReadRequirement(e, "a label selector requirement", false));
        sel.match_expressions.push_back(std::move(req));
      }
    }
  }
  return sel;
}

Result<NodeSelectorTerm> Loader::ReadNodeSelectorTerm(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what, {"matchExpressions", "matchFields"}); !s) return s.error();
  NodeSelectorTerm term;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (Status s = r_.ExpectList(kv.second, fmt::format("`{}`", k)); !s) return s.error();
    for (const auto& e : kv.second) {
      ASSIGN_OR_RETURN(auto req, ReadRequirement(e, "a node selector requirement", true));
      (k == "matchExpressions" ? term.match_expressions : term.match_fields).push_back(std::move(req));
    }
  }
  return term;
}

Result<PodAffinityTerm> Loader::ReadPodAffinityTerm(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what,
                              {"labelSelector", "namespaces", "namespaceSelector", "topologyKey"});
      !s)
    return s.error();
  PodAffinityTerm t;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (k == "labelSelector") {
      ASSIGN_OR_RETURN(t.label_selector, ReadLabelSelector(kv.second, "`labelSelector`"));
    } else if (k == "namespaces") {
      ASSIGN_OR_RETURN(t.namespaces, ReadStringList(kv.second, "`namespaces`"));
    } else if (k == "namespaceSelector") {
      ASSIGN_OR_RETURN(t.namespace_selector, ReadLabelSelector(kv.second, "`namespaceSelector`"));
    } else {
      ASSIGN_OR_RETURN(t.topology_key, Str(kv.second, "`topologyKey`"));
    }
  }
  if (t.topology_key.empty()) return r_.Fail(n, fmt::format("{} has no `topologyKey`", what));
  return t;
}

Result<PodAffinity> Loader::ReadPodAffinity(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what,
                              {"requiredDuringSchedulingIgnoredDuringExecution",
                               "preferredDuringSchedulingIgnoredDuringExecution"});
      !s)
    return s.error();
  PodAffinity a;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (Status s = r_.ExpectList(kv.second, fmt::format("`{}`", k)); !s) return s.error();
    for (const auto& item : kv.second) {
      if (k == "requiredDuringSchedulingIgnoredDuringExecution") {
        ASSIGN_OR_RETURN(auto term, ReadPodAffinityTerm(item, "a pod affinity term"));
        a.required.push_back(std::move(term));
      } else {
        if (Status s = r_.ExpectMap(item, "a weighted pod affinity term", {"weight", "podAffinityTerm"}); !s)
          return s.error();
        WeightedPodAffinityTerm w;
        if (!item["weight"].IsDefined()) return r_.Fail(item, "weighted pod affinity term has no `weight`");
        ASSIGN_OR_RETURN(w.weight, ReadInt32(item["weight"], "`weight`", 1));
        if (!item["podAffinityTerm"].IsDefined())
          return r_.Fail(item, "weighted pod affinity term has no `podAffinityTerm`");
        ASSIGN_OR_RETURN(w.term, ReadPodAffinityTerm(item["podAffinityTerm"], "`podAffinityTerm`"));
        a.preferred.push_back(std::move(w));
      }
    }
  }
  return a;
}

Result<Affinity> Loader::ReadAffinity(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what, {"nodeAffinity", "podAffinity", "podAntiAffinity"}, true); !s)
    return s.error();
  Affinity a;
  if (n.IsNull()) return a;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    if (k == "nodeAffinity") {
      const yaml::Node& na = kv.second;
      if (Status s = r_.ExpectMap(na, "`nodeAffinity`",
                                  {"requiredDuringSchedulingIgnoredDuringExecution",
                                   "preferredDuringSchedulingIgnoredDuringExecution"});
          !s)
        return s.error();
      NodeAffinity node_affinity;
      for (const auto& f : na) {
        if (f.first.Scalar() == "requiredDuringSchedulingIgnoredDuringExecution") {
          if (Status s = r_.ExpectMap(f.second, "`requiredDuringSchedulingIgnoredDuringExecution`",
                                      {"nodeSelectorTerms"});
              !s)
            return s.error();
          std::vector<NodeSelectorTerm> terms;
          const yaml::Node list = f.second["nodeSelectorTerms"];
          if (Status s = r_.ExpectList(list, "`nodeSelectorTerms`"); !s) return s.error();
          for (const auto& t : list) {
            ASSIGN_OR_RETURN(auto term, ReadNodeSelectorTerm(t, "a node selector term"));
            terms.push_back(std::move(term));
          }
          node_affinity.required = std::move(terms);
        } else {
          if (Status s = r_.ExpectList(f.second, "`preferredDuringSchedulingIgnoredDuringExecution`"); !s)
            return s.error();
          for (const auto& item : f.second) {
            if (Status s = r_.ExpectMap(item, "a preferred scheduling term", {"weight", "preference"}); !s)
              return s.error();
            PreferredSchedulingTerm p;
            if (!item["weight"].IsDefined()) return r_.Fail(item, "preferred scheduling term has no `weight`");
            ASSIGN_OR_RETURN(p.weight, ReadInt32(item["weight"], "`weight`", 1));
            if (item["preference"].IsDefined()) {
              ASSIGN_OR_RETURN(p.preference, ReadNodeSelectorTerm(item["preference"], "`preference`"));
            }
            node_affinity.preferred.push_back(std::move(p));
          }
        }
      }
      a.node_affinity = std::move(node_affinity);
    } else if (k == "podAffinity") {
      ASSIGN_OR_RETURN(a.pod_affinity, ReadPodAffinity(kv.second, "`podAffinity`"));
    } else {
      ASSIGN_OR_RETURN(a.pod_anti_affinity, ReadPodAffinity(kv.second, "`podAntiAffinity`"));
    }
  }
  return a;
}

Result<std::vector<Toleration>> Loader::ReadTolerations(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectList(n, what); !s) return s.error();
  std::vector<Toleration> out;
  for (const auto& item : n) {
    if (Status s = r_.ExpectMap(item, "a toleration",
                                {"key", "operator", "value", "effect", "tolerationSeconds"});
        !s)
      return s.error();
    Toleration t;
    for (const auto& kv : item) {
      std::string_view k = kv.first.Scalar();
      if (k == "key") {
        ASSIGN_OR_RETURN(t.key, Str(kv.second, "toleration `key`"));
      } else if (k == "operator") {
        ASSIGN_OR_RETURN(t.op, Str(kv.second, "toleration `operator`"));
        if (t.op != "Equal" && t.op != "Exists")
          return r_.Fail(kv.second, fmt::format("toleration `operator` must be Equal or Exists, got `{}`", t.op));
      } else if (k == "value") {
        ASSIGN_OR_RETURN(t.value, Str(kv.second, "toleration `value`"));
      } else if (k == "effect") {
        ASSIGN_OR_RETURN(t.effect, Str(kv.second, "toleration `effect`"));
        if (!t.effect.empty() && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" &&
            t.effect != "NoExecute")
          return r_.Fail(kv.second, fmt::format("toleration `effect` must be NoSchedule, "
                                                "PreferNoSchedule or NoExecute, got `{}`",
                                                t.effect));
      } else {
        ASSIGN_OR_RETURN(t.toleration_seconds, r_.Int(kv.second, "`tolerationSeconds`"));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<Taint>> Loader::ReadTaints(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectList(n, what); !s) return s.error();
  std::vector<Taint> out;
  for (const auto& item : n) {
    if (Status s = r_.ExpectMap(item, "a taint", {"key", "value", "effect"}); !s) return s.error();
    Taint t;
    for (const auto& kv : item) {
      std::string_view k = kv.first.Scalar();
      if (k == "key") {
        ASSIGN_OR_RETURN(t.key, Str(kv.second, "taint `key`"));
      } else if (k == "value") {
        ASSIGN_OR_RETURN(t.value, Str(kv.second, "taint `value`"));
      } else {
        ASSIGN_OR_RETURN(t.effect, Str(kv.second, "taint `effect`"));
      }
    }
    if (t.key.empty()) return r_.Fail(item, "taint has no `key`");
    if (t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute")
      return r_.Fail(item["effect"].IsDefined() ? item["effect"] : yaml::Node(item),
                     fmt::format("taint `effect` must be NoSchedule, PreferNoSchedule or NoExecute, "
                                 "got `{}`",
                                 t.effect));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<TopologySpreadConstraint>> Loader::ReadSpread(const yaml::Node& n,
                                                                 std::string_view what) {
  if (Status s = r_.ExpectList(n, what); !s) return s.error();
  std::vector<TopologySpreadConstraint> out;
  for (const auto& item : n) {
    if (Status s = r_.ExpectMap(item, "a topology spread constraint",
                                {"maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector",
                                 "minDomains", "matchLabelKeys", "nodeAffinityPolicy",
                                 "nodeTaintsPolicy"});
        !s)
      return s.error();
    TopologySpreadConstraint c;
    for (const auto& kv : item) {
      std::string_view k = kv.first.Scalar();
      if (k == "maxSkew") {
        ASSIGN_OR_RETURN(c.max_skew, ReadInt32(kv.second, "`maxSkew`", 1));
      } else if (k == "topologyKey") {
        ASSIGN_OR_RETURN(c.topology_key, Str(kv.second, "`topologyKey`"));
      } else if (k == "whenUnsatisfiable") {
        ASSIGN_OR_RETURN(c.when_unsatisfiable, Str(kv.second, "`whenUnsatisfiable`"));
        if (c.when_unsatisfiable != "DoNotSchedule" && c.when_unsatisfiable != "ScheduleAnyway")
          return r_.Fail(kv.second, fmt::format("`whenUnsatisfiable` must be DoNotSchedule or "
                                                "ScheduleAnyway, got `{}`",
                                                c.when_unsatisfiable));
      } else if (k == "labelSelector") {
        ASSIGN_OR_RETURN(c.label_selector, ReadLabelSelector(kv.second, "`labelSelector`"));
      } else if (k == "minDomains") {
        ASSIGN_OR_RETURN(c.min_domains, ReadInt32(kv.second, "`minDomains`", 1));
      } else if (k == "matchLabelKeys") {
        ASSIGN_OR_RETURN(c.match_label_keys, ReadStringList(kv.second, "`matchLabelKeys`"));
      } else if (k == "nodeAffinityPolicy") {
        ASSIGN_OR_RETURN(c.node_affinity_policy, Str(kv.second, "`nodeAffinityPolicy`"));
      } else {
        ASSIGN_OR_RETURN(c.node_taints_policy, Str(kv.second, "`nodeTaintsPolicy`"));
      }
    }
    if (c.topology_key.empty()) return r_.Fail(item, "topology spread constraint has no `topologyKey`");
    out.push_back(std::move(c));
  }
  return out;
}

// Kubernetes' NodeStatus.images: [{names: [...], sizeBytes: N}]; every name maps to the size.
Status Loader::ReadNodeImages(const yaml::Node& n, std::string_view what,
                              std::map<std::string, int64_t, std::less<>>& out) {
  TRY(r_.ExpectList(n, what));
  for (const auto& item : n) {
    TRY(r_.ExpectMap(item, "a node image", {"names", "sizeBytes"}));
    if (!item["names"]) return r_.Fail(item, fmt::format("an image in {} has no `names`", what));
    if (!item["sizeBytes"])
      return r_.Fail(item, fmt::format("an image in {} has no `sizeBytes`", what));
    ASSIGN_OR_RETURN(auto names, ReadStringList(item["names"], "`names` of a node image"));
    ASSIGN_OR_RETURN(int64_t size, r_.Int(item["sizeBytes"], "`sizeBytes` of a node image"));
    if (size < 0) return r_.Fail(item["sizeBytes"], "`sizeBytes` of a node image is negative");
    for (auto& name : names) out[std::move(name)] = size;
  }
  return Status::Ok();
}

Result<std::vector<HostPort>> Loader::ReadHostPorts(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectList(n, what); !s) return s.error();
  std::vector<HostPort> out;
  for (const auto& item : n) {
    if (Status s = r_.ExpectMap(item, "a host port", {"hostPort", "containerPort", "protocol", "hostIP"}); !s)
      return s.error();
    HostPort p;
    for (const auto& kv : item) {
      std::string_view k = kv.first.Scalar();
      if (k == "hostPort") {
        ASSIGN_OR_RETURN(p.host_port, ReadInt32(kv.second, "`hostPort`", 0));
      } else if (k == "containerPort") {
        ASSIGN_OR_RETURN(p.container_port, ReadInt32(kv.second, "`containerPort`", 0));
      } else if (k == "protocol") {
        ASSIGN_OR_RETURN(p.protocol, Str(kv.second, "`protocol`"));
      } else {
        ASSIGN_OR_RETURN(p.host_ip, Str(kv.second, "`hostIP`"));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

Result<NodeGroupAffinity> Loader::ReadNodeGroupAffinity(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what,
                              {"requiredDuringSchedulingIgnoredDuringExecution",
                               "preferredDuringSchedulingIgnoredDuringExecution"},
                              true);
      !s)
    return s.error();
  NodeGroupAffinity a;
  if (n.IsNull()) return a;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    ASSIGN_OR_RETURN(auto list, ReadStringList(kv.second, fmt::format("`{}`", k)));
    (k == "requiredDuringSchedulingIgnoredDuringExecution" ? a.required : a.preferred) = std::move(list);
  }
  return a;
}

// ------------------------------------------------------------------------------------------
// Scenario objects

// Each object is a table of its keys: the key as the contract spells it and how its value is
// read into the spec. The table is also the list of allowed keys, so the two cannot drift apart.

// Stores a reader's value into `dst`, or passes its error on.
template <typename T, typename U>
Status Store(T& dst, Result<U> r) {
  if (!r) return r.error();
  dst = std::move(*r);
  return Status::Ok();
}

template <typename Out>
struct Field {
  std::string_view key;
  // (value, "`key` of <object>" for messages, the spec being filled)
  std::function<Status(const yaml::Node&, const std::string&, Out&)> read;
};

template <typename Out>
Result<std::string> Loader::ReadFields(const yaml::Node& n, std::string_view kind,
                                       const std::vector<Field<Out>>& fields, Out& out) {
  std::vector<std::string_view> keys = {"name"};
  for (const Field<Out>& f : fields) keys.push_back(f.key);
  if (Status s = r_.ExpectMap(n, kind, keys); !s) return s.error();
  ASSIGN_OR_RETURN(out.name, ObjectName(n, kind));
  std::string what = fmt::format("{} `{}`", kind, out.name);
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    auto f = std::find_if(fields.begin(), fields.end(), [&](const Field<Out>& x) { return x.key == k; });
    if (f == fields.end()) continue;
    if (Status s = f->read(kv.second, fmt::format("`{}` of {}", k, what), out); !s) return s.error();
  }
  return what;
}

Status Loader::ReadPriorityClass(const yaml::Node& n, PriorityClassSpec& out) {
  using O = PriorityClassSpec;
  out.where = yaml::Where(n, r_.file());
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "priority class", {
      {"value", [&](auto& v, auto& f, O& o) { return Store(o.value, ReadInt32(v, f)); }},
      {"globalDefault", [&](auto& v, auto& f, O& o) { return Store(o.global_default, r_.Bool(v, f)); }},
      {"preemptionPolicy",
       [&](auto& v, auto& f, O& o) { return Store(o.preemption_policy, ReadPreemptionPolicy(v, f)); }},
      {"description", [&](auto& v, auto& f, O&) -> Status {  // accepted, not used
         auto text = Str(v, f);
         return text ? Status::Ok() : Status(text.error());
       }},
  }, out));
  if (!n["value"].IsDefined()) return r_.Fail(n, fmt::format("{} has no `value`", what));
  return Status::Ok();
}

Status Loader::ReadQueue(const yaml::Node& n, QueueSpec& out) {
  using O = QueueSpec;
  out.where = yaml::Where(n, r_.file());
  auto what = ReadFields<O>(n, "queue", {
      {"weight", [&](auto& v, auto& f, O& o) -> Status {
         TRY(Store(o.weight, r_.Int(v, f)));
         // 0 is allowed: proportion gives such a queue nothing beyond its guarantee.
         if (o.weight < 0) return r_.Fail(v, fmt::format("{} must not be negative, got {}", f, o.weight));
         return Status::Ok();
       }},
      {"capability", [&](auto& v, auto& f, O& o) { return Store(o.capability, ReadResources(v, f)); }},
      {"deserved", [&](auto& v, auto& f, O& o) { return Store(o.deserved, ReadResources(v, f)); }},
      {"guarantee", [&](auto& v, auto& f, O& o) { return Store(o.guarantee, ReadResources(v, f)); }},
      {"parent", [&](auto& v, auto& f, O& o) { return Store(o.parent, Str(v, f)); }},
      {"priority", [&](auto& v, auto& f, O& o) { return Store(o.priority, r_.Int(v, f)); }},
      {"reclaimable", [&](auto& v, auto& f, O& o) { return Store(o.reclaimable, r_.Bool(v, f)); }},
      {"state", [&](auto& v, auto& f, O& o) -> Status {
         ASSIGN_OR_RETURN(auto s, Str(v, f));
         auto st = ParseQueueState(s);
         if (!st || s.empty())
           return r_.Fail(v, fmt::format("{} must be Open, Closed, Closing or Unknown, got `{}`", f, s));
         o.state = *st;
         return Status::Ok();
       }},
      {"annotations", [&](auto& v, auto& f, O& o) { return Store(o.annotations, ReadStringMap(v, f)); }},
      {"labels", [&](auto& v, auto& f, O& o) { return Store(o.labels, ReadStringMap(v, f)); }},
      {"affinity", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectMap(v, f, {"nodeGroupAffinity", "nodeGroupAntiAffinity"}, true));
         if (v.IsNull()) return Status::Ok();
         o.has_affinity = true;
         for (const auto& a : v) {
           std::string_view k = a.first.Scalar();
           TRY(Store(k == "nodeGroupAffinity" ? o.node_group_affinity : o.node_group_anti_affinity,
                     ReadNodeGroupAffinity(a.second, fmt::format("`{}`", k))));
         }
         return Status::Ok();
       }},
      {"creationTimestamp", [&](auto& v, auto& f, O& o) { return Store(o.creation_time, ReadTime(v, f, kZeroTime)); }},
  }, out);
  return what ? Status::Ok() : Status(what.error());
}

Status Loader::ReadNode(const yaml::Node& n, NodeSpec& out) {
  using O = NodeSpec;
  out.where = yaml::Where(n, r_.file());
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "node", {
      {"allocatable", [&](auto& v, auto& f, O& o) { return Store(o.allocatable, ReadResources(v, f)); }},
      {"capacity", [&](auto& v, auto& f, O& o) { return Store(o.capacity, ReadResources(v, f)); }},
      {"labels", [&](auto& v, auto& f, O& o) { return Store(o.labels, ReadStringMap(v, f)); }},
      {"annotations", [&](auto& v, auto& f, O& o) { return Store(o.annotations, ReadStringMap(v, f)); }},
      {"taints", [&](auto& v, auto& f, O& o) { return Store(o.taints, ReadTaints(v, f)); }},
      {"images", [&](auto& v, auto& f, O& o) { return ReadNodeImages(v, f, o.images); }},
      {"unschedulable", [&](auto& v, auto& f, O& o) { return Store(o.unschedulable, r_.Bool(v, f)); }},
      {"usage", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectMap(v, f, {"cpu", "memory", "metricsTime"}));
         NodeUsageSpec u;
         for (const auto& kv : v) {
           std::string_view k = kv.first.Scalar();
           std::string field = fmt::format("usage `{}` of node `{}`", k, o.name);
           if (k == "metricsTime") {
             TRY(Store(u.metrics_time, ReadTime(kv.second, field, 0)));
             continue;
           }
           ASSIGN_OR_RETURN(double pct, r_.Number(kv.second, field));
           if (pct < 0 || pct > 100)
             return r_.Fail(kv.second, fmt::format("{} is a percentage (0-100), got {}", field,
                                                   kv.second.Scalar()));
           (k == "cpu" ? u.cpu : u.memory) = pct;
         }
         o.usage = u;
         return Status::Ok();
       }},
      {"creationTimestamp", [&](auto& v, auto& f, O& o) { return Store(o.creation_time, ReadTime(v, f, kZeroTime)); }},
  }, out));
  if (!n["allocatable"].IsDefined()) return r_.Fail(n, fmt::format("{} has no `allocatable`", what));
  ResourceId pods = kPods;
  if (!out.allocatable.Has(pods)) out.allocatable.Set(pods, kDefaultMaxPods);
  if (!n["capacity"].IsDefined()) out.capacity = out.allocatable;
  else if (!out.capacity.Has(pods)) out.capacity.Set(pods, out.allocatable.Get(pods));
  return Status::Ok();
}

Status Loader::ReadPodGroup(const yaml::Node& n, PodGroupSpec& out) {
  using O = PodGroupSpec;
  out.where = yaml::Where(n, r_.file());
  auto what = ReadFields<O>(n, "podGroup", {
      {"namespace", [&](auto& v, auto& f, O& o) { return Store(o.namespace_, Str(v, f)); }},
      {"queue", [&](auto& v, auto& f, O& o) { return Store(o.queue, Str(v, f)); }},
      {"minMember", [&](auto& v, auto& f, O& o) { return Store(o.min_member, ReadInt32(v, f, 0)); }},
      {"minTaskMember", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectAnyMap(v, f));
         if (v.IsNull()) return Status::Ok();
         for (const auto& t : v) {
           std::string field = fmt::format("minTaskMember `{}` of podGroup `{}`", t.first.Scalar(), o.name);
           TRY(Store(o.min_task_member[std::string(t.first.Scalar())], ReadInt32(t.second, field, 0)));
         }
         return Status::Ok();
       }},
      {"minResources", [&](auto& v, auto& f, O& o) { return Store(o.min_resources, ReadResources(v, f)); }},
      {"priorityClassName", [&](auto& v, auto& f, O& o) { return Store(o.priority_class_name, Str(v, f)); }},
      {"phase", [&](auto& v, auto& f, O& o) -> Status {
         ASSIGN_OR_RETURN(auto s, Str(v, f));
         auto p = ParsePodGroupPhase(s);
         if (!p)
           return r_.Fail(v, fmt::format("{} must be Pending, Inqueue, Running, Unknown or Completed, "
                                         "got `{}`",
                                         f, s));
         o.phase = *p;
         return Status::Ok();
       }},
      {"annotations", [&](auto& v, auto& f, O& o) { return Store(o.annotations, ReadStringMap(v, f)); }},
      {"labels", [&](auto& v, auto& f, O& o) { return Store(o.labels, ReadStringMap(v, f)); }},
      {"creationTimestamp", [&](auto& v, auto& f, O& o) { return Store(o.creation_time, ReadTime(v, f, kZeroTime)); }},
      {"networkTopology", [&](auto& v, auto& f, O& o) -> Status {
         if (v.IsNull()) return Status::Ok();
         return Store(o.network_topology, ReadNetworkTopology(v, f));
       }},
      {"subGroupPolicy", [&](auto& v, auto& f, O& o) { return Store(o.sub_group_policy, ReadSubGroupPolicy(v, f)); }},
  }, out);
  return what ? Status::Ok() : Status(what.error());
}

// PodGroup spec.networkTopology. The PodGroup webhook refuses a tier and a tier name together.
Result<NetworkTopologySpec> Loader::ReadNetworkTopology(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what, {"mode", "highestTierAllowed", "highestTierName"}); !s)
    return s.error();
  NetworkTopologySpec out;
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    std::string field = fmt::format("`{}` of {}", k, what);
    if (k == "mode") {
      ASSIGN_OR_RETURN(std::string mode, Str(kv.second, field));
      if (mode == "hard") out.mode = NetworkTopologyMode::Hard;
      else if (mode == "soft") out.mode = NetworkTopologyMode::Soft;
      else
        return r_.Fail(kv.second, fmt::format("{} must be hard or soft, got `{}`{}", field, mode,
                                              yaml::DidYouMean(mode, {"hard", "soft"})));
    } else if (k == "highestTierAllowed") {
      ASSIGN_OR_RETURN(int32_t tier, ReadInt32(kv.second, field, 0));
      out.highest_tier_allowed = tier;
    } else if (k == "highestTierName") {
      ASSIGN_OR_RETURN(out.highest_tier_name, Str(kv.second, field));
    }
  }
  if (out.highest_tier_allowed && !out.highest_tier_name.empty())
    return r_.Fail(n, fmt::format("{} must not set both `highestTierAllowed` and `highestTierName` "
                                  "(the PodGroup webhook refuses it)",
                                  what));
  return out;
}

// PodGroup spec.subGroupPolicy, validated as the CRD and the PodGroup webhook do.
Result<std::vector<SubGroupPolicySpec>> Loader::ReadSubGroupPolicy(const yaml::Node& n,
                                                                   std::string_view what) {
  if (Status s = r_.ExpectList(n, what); !s) return s.error();
  std::vector<SubGroupPolicySpec> out;
  for (const auto& item : n) {
    std::string entry = fmt::format("entry {} of {}", out.size() + 1, what);
    if (Status s = r_.ExpectMap(item, entry,
                                {"name", "networkTopology", "subGroupSize", "minSubGroups",
                                 "labelSelector", "matchLabelKeys"});
        !s)
      return s.error();
    SubGroupPolicySpec p;
    if (item["name"].IsDefined()) {
      ASSIGN_OR_RETURN(p.name, Str(item["name"], fmt::format("`name` of {}", entry)));
      entry = fmt::format("subGroupPolicy `{}` of {}", p.name, what);
    }
    for (const auto& kv : item) {
      std::string_view k = kv.first.Scalar();
      std::string field = fmt::format("`{}` of {}", k, entry);
      if (k == "networkTopology") {
        if (!kv.second.IsNull()) {
          ASSIGN_OR_RETURN(p.network_topology, ReadNetworkTopology(kv.second, field));
        }
      } else if (k == "subGroupSize") {
        ASSIGN_OR_RETURN(p.sub_group_size, ReadInt32(kv.second, field, 1));
      } else if (k == "minSubGroups") {
        ASSIGN_OR_RETURN(p.min_sub_groups, ReadInt32(kv.second, field, 0));
      } else if (k == "labelSelector") {
        if (!kv.second.IsNull()) {
          ASSIGN_OR_RETURN(p.label_selector, ReadLabelSelector(kv.second, field));
        }
      } else if (k == "matchLabelKeys") {
        ASSIGN_OR_RETURN(p.match_label_keys, ReadStringList(kv.second, field));
      }
    }
    if (p.name.size() > 253)
      return r_.Fail(item["name"], fmt::format("`name` of {} is longer than 253 characters", entry));
    out.push_back(std::move(p));
  }
  return out;
}

// A HyperNode: metadata.name and the spec's tier, tierName and members.
Status Loader::ReadHyperNode(const yaml::Node& n, HyperNodeSpec& out) {
  using O = HyperNodeSpec;
  out.where = yaml::Where(n, r_.file());
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "hyperNode", {
      {"tier", [&](auto& v, auto& f, O& o) -> Status {
         ASSIGN_OR_RETURN(int32_t tier, ReadInt32(v, f, 0));
         o.tier = tier;
         return Status::Ok();
       }},
      {"tierName", [&](auto& v, auto& f, O& o) { return Store(o.tier_name, Str(v, f)); }},
      {"members", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectList(v, f));
         for (const auto& m : v) {
           ASSIGN_OR_RETURN(HyperNodeMemberSpec member,
                            ReadHyperNodeMember(m, fmt::format("member {} of {}", o.members.size() + 1, f)));
           o.members.push_back(std::move(member));
         }
         return Status::Ok();
       }},
  }, out));
  if (!n["tier"].IsDefined()) return r_.Fail(n, fmt::format("{} has no `tier`", what));
  return Status::Ok();
}

// {type: Node|HyperNode, selector: {exactMatch: {name}} | {regexMatch: {pattern}} |
// {labelMatch: <LabelSelector>}}: exactly one selector, as the CRD's validation rules demand.
Result<HyperNodeMemberSpec> Loader::ReadHyperNodeMember(const yaml::Node& n, std::string_view what) {
  if (Status s = r_.ExpectMap(n, what, {"type", "selector"}); !s) return s.error();
  HyperNodeMemberSpec m;
  m.where = yaml::Where(n, r_.file());
  if (!n["type"].IsDefined()) return r_.Fail(n, fmt::format("{} has no `type`", what));
  ASSIGN_OR_RETURN(std::string type, Str(n["type"], fmt::format("`type` of {}", what)));
  if (type == "Node") m.type = HyperNodeMemberSpec::Type::Node;
  else if (type == "HyperNode") m.type = HyperNodeMemberSpec::Type::HyperNode;
  else
    return r_.Fail(n["type"], fmt::format("`type` of {} must be Node or HyperNode, got `{}`{}", what,
                                          type, yaml::DidYouMean(type, {"Node", "HyperNode"})));
  const yaml::Node sel = n["selector"];
  std::string sel_what = fmt::format("`selector` of {}", what);
  if (!sel.IsDefined()) return r_.Fail(n, fmt::format("{} has no `selector`", what));
  if (Status s = r_.ExpectMap(sel, sel_what, {"exactMatch", "regexMatch", "labelMatch"}); !s)
    return s.error();
  if (sel.size() != 1)
    return r_.Fail(sel, fmt::format("{} must give exactly one of exactMatch, regexMatch and "
                                    "labelMatch",
                                    sel_what));
  for (const auto& kv : sel) {
    std::string_view k = kv.first.Scalar();
    std::string field = fmt::format("`{}` of {}", k, sel_what);
    if (k == "exactMatch") {
      if (Status st = r_.ExpectMap(kv.second, field, {"name"}); !st) return st.error();
      if (!kv.second["name"].IsDefined()) return r_.Fail(kv.second, fmt::format("{} has no `name`", field));
      m.selector = HyperNodeMemberSpec::Selector::Exact;
      ASSIGN_OR_RETURN(m.name, Str(kv.second["name"], fmt::format("`name` of {}", field)));
      if (m.name.empty()) return r_.Fail(kv.second["name"], fmt::format("`name` of {} is empty", field));
    } else if (k == "regexMatch") {
      if (Status st = r_.ExpectMap(kv.second, field, {"pattern"}); !st) return st.error();
      if (!kv.second["pattern"].IsDefined())
        return r_.Fail(kv.second, fmt::format("{} has no `pattern`", field));
      m.selector = HyperNodeMemberSpec::Selector::Regex;
      ASSIGN_OR_RETURN(m.pattern, Str(kv.second["pattern"], fmt::format("`pattern` of {}", field)));
      if (m.pattern.empty())
        return r_.Fail(kv.second["pattern"], fmt::format("`pattern` of {} is empty", field));
    } else if (k == "labelMatch") {
      m.selector = HyperNodeMemberSpec::Selector::Label;
      ASSIGN_OR_RETURN(m.labels, ReadLabelSelector(kv.second, field));
    }
  }
  return m;
}

// A cpuset in the kubelet's list format: "0-3,8,10-11" ("" is the empty set).
Result<std::set<int64_t>> Loader::ReadCpuSet(const yaml::Node& n, std::string_view what) {
  ASSIGN_OR_RETURN(std::string text, Str(n, what));
  std::string_view part;
  std::optional<std::set<int64_t>> cpus = ParseCpuSet(text, &part);
  if (!cpus)
    return r_.Fail(n, fmt::format("{} is not a cpuset (`0-3,8`): bad part `{}`", what, part));
  return std::move(*cpus);
}

// A Numatopology: metadata.name (its node) and the spec's policies, resReserved, numares and
// cpuDetail, in the CRD's own spelling.
Status Loader::ReadNumatopology(const yaml::Node& n, NumatopologySpec& out) {
  using O = NumatopologySpec;
  out.where = yaml::Where(n, r_.file());
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "numatopology", {
      {"policies", [&](auto& v, auto& f, O& o) { return Store(o.policies, ReadStringMap(v, f)); }},
      {"resReserved", [&](auto& v, auto& f, O& o) { return Store(o.res_reserved, ReadResources(v, f)); }},
      {"numares", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectAnyMap(v, f));
         if (v.IsNull()) return Status::Ok();
         for (const auto& kv : v) {
           std::string res(kv.first.Scalar());
           std::string field = fmt::format("`{}` of {}", res, f);
           TRY(r_.ExpectMap(kv.second, field, {"allocatable", "capacity"}));
           NumatopologySpec::NumaResource r;
           if (kv.second["allocatable"].IsDefined()) {
             ASSIGN_OR_RETURN(r.allocatable,
                              ReadCpuSet(kv.second["allocatable"], fmt::format("`allocatable` of {}", field)));
           }
           if (kv.second["capacity"].IsDefined()) {
             ASSIGN_OR_RETURN(int32_t cap, ReadInt32(kv.second["capacity"], fmt::format("`capacity` of {}", field), 0));
             r.capacity = cap;
           }
           o.numares[res] = std::move(r);
         }
         return Status::Ok();
       }},
      {"cpuDetail", [&](auto& v, auto& f, O& o) -> Status {
         TRY(r_.ExpectAnyMap(v, f));
         if (v.IsNull()) return Status::Ok();
         for (const auto& kv : v) {
           std::string id_text(kv.first.Scalar());
           std::string field = fmt::format("CPU `{}` of {}", id_text, f);
           auto id = yaml::ParseIntText(id_text);
           if (!id || *id < 0 || *id > 1000000)
             return r_.Fail(kv.first, fmt::format("{}: a CPU id must be a non-negative integer", field));
           TRY(r_.ExpectMap(kv.second, field, {"numa", "socket", "core"}));
           NumatopologySpec::CpuInfo info;
           for (auto [key, slot] : {std::pair{"numa", &info.numa}, std::pair{"socket", &info.socket},
                                    std::pair{"core", &info.core}}) {
             if (!kv.second[key].IsDefined()) continue;
             ASSIGN_OR_RETURN(int32_t x, ReadInt32(kv.second[key], fmt::format("`{}` of {}", key, field), 0));
             *slot = x;
           }
           o.cpu_detail[*id] = info;
         }
         return Status::Ok();
       }},
  }, out));
  (void)what;
  return Status::Ok();
}

Status Loader::ReadPod(const yaml::Node& n, PodSpec& out) {
  using O = PodSpec;
  out.where = yaml::Where(n, r_.file());
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "pod", {
      {"namespace", [&](auto& v, auto& f, O& o) { return Store(o.namespace_, Str(v, f)); }},
      {"group", [&](auto& v, auto& f, O& o) { return Store(o.group, Str(v, f)); }},
      {"task", [&](auto& v, auto& f, O& o) { return Store(o.task, Str(v, f)); }},
      {"requests", [&](auto& v, auto& f, O& o) { return Store(o.requests, ReadResources(v, f)); }},
      {"limits", [&](auto& v, auto& f, O& o) { return Store(o.limits, ReadResources(v, f)); }},
      {"priorityClassName", [&](auto& v, auto& f, O& o) { return Store(o.priority_class_name, Str(v, f)); }},
      {"priority", [&](auto& v, auto& f, O& o) { return Store(o.priority, ReadInt32(v, f)); }},
      {"phase", [&](auto& v, auto& f, O& o) -> Status {
         static constexpr std::pair<std::string_view, PodPhase> kPhases[] = {
             {"Pending", PodPhase::Pending}, {"Running", PodPhase::Running},
             {"Succeeded", PodPhase::Succeeded}, {"Failed", PodPhase::Failed},
             {"Unknown", PodPhase::Unknown}};
         ASSIGN_OR_RETURN(auto s, Str(v, f));
         for (const auto& [name, phase] : kPhases)
           if (s == name) {
             o.phase = phase;
             return Status::Ok();
           }
         return r_.Fail(v, fmt::format("{} must be Pending, Running, Succeeded, Failed or Unknown, "
                                       "got `{}`{}",
                                       f, s,
                                       yaml::DidYouMean(s, {"Pending", "Running", "Succeeded",
                                                            "Failed", "Unknown"})));
       }},
      {"node", [&](auto& v, auto& f, O& o) { return Store(o.node, Str(v, f)); }},
      {"nominatedNodeName", [&](auto& v, auto& f, O& o) { return Store(o.nominated_node, Str(v, f)); }},
      {"labels", [&](auto& v, auto& f, O& o) { return Store(o.labels, ReadStringMap(v, f)); }},
      {"annotations", [&](auto& v, auto& f, O& o) { return Store(o.annotations, ReadStringMap(v, f)); }},
      {"nodeSelector", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().node_selector, ReadStringMap(v, f)); }},
      {"tolerations", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().tolerations, ReadTolerations(v, f)); }},
      {"affinity", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().affinity, ReadAffinity(v, f)); }},
      {"topologySpreadConstraints",
       [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().topology_spread_constraints, ReadSpread(v, f)); }},
      {"hostPorts", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().host_ports, ReadHostPorts(v, f)); }},
      {"image", [&](auto& v, auto& f, O& o) { return Store(o.image, Str(v, f)); }},
      {"schedulerName", [&](auto& v, auto& f, O& o) { return Store(o.scheduler_name, Str(v, f)); }},
      {"schedulingGates", [&](auto& v, auto& f, O& o) -> Status {
         // Kubernetes' shape: [{name: example.com/gate}, ...]
         TRY(r_.ExpectList(v, f));
         for (const auto& gate : v) {
           TRY(r_.ExpectMap(gate, "a scheduling gate", {"name"}));
           if (!gate["name"]) return r_.Fail(gate, fmt::format("a gate in {} has no `name`", f));
           ASSIGN_OR_RETURN(std::string name, Str(gate["name"], "`name` of a scheduling gate"));
           o.scheduling_gates.push_back(std::move(name));
         }
         return Status::Ok();
       }},
      {"preemptionPolicy",
       [&](auto& v, auto& f, O& o) { return Store(o.preemption_policy, ReadPreemptionPolicy(v, f)); }},
      {"creationTimestamp", [&](auto& v, auto& f, O& o) { return Store(o.creation_time, ReadTime(v, f, kZeroTime)); }},
      {"scheduledAt", [&](auto& v, auto& f, O& o) { return Store(o.scheduled_at, ReadTime(v, f, 0)); }},
      {"deleting", [&](auto& v, auto& f, O& o) { return Store(o.deleting, r_.Bool(v, f)); }},
      {"duration", [&](auto& v, auto& f, O& o) -> Status {
         ASSIGN_OR_RETURN(auto text, Str(v, f));
         auto d = ParseGoDuration(text);
         if (!d) return r_.Fail(v, fmt::format("{}: {}", f, d.error().message));
         if (*d <= 0) return r_.Fail(v, fmt::format("{} must be positive, got `{}`", f, text));
         o.duration = *d;
         return Status::Ok();
       }},
  }, out));
  if (out.phase == PodPhase::Running && out.node.empty())
    return r_.Fail(n, fmt::format("{} is Running but has no `node`", what));
  return Status::Ok();
}

Status Loader::ReadPdb(const yaml::Node& n, PodDisruptionBudget& out) {
  using O = PodDisruptionBudget;
  out.namespace_ = "default";
  ASSIGN_OR_RETURN(std::string what, ReadFields<O>(n, "pdb", {
      {"namespace", [&](auto& v, auto& f, O& o) { return Store(o.namespace_, Str(v, f)); }},
      {"minAvailable", [&](auto& v, auto& f, O& o) { return Store(o.min_available, Str(v, f)); }},
      {"maxUnavailable", [&](auto& v, auto& f, O& o) { return Store(o.max_unavailable, Str(v, f)); }},
      {"selector", [&](auto& v, auto& f, O& o) -> Status {
         // Either a LabelSelector or, as the contract's short form, a plain matchLabels map.
         TRY(r_.ExpectAnyMap(v, f));
         bool full = !v.IsNull() && (v["matchLabels"].IsDefined() || v["matchExpressions"].IsDefined());
         if (full) return Store(o.selector, ReadLabelSelector(v, f));
         return Store(o.selector.match_labels, ReadStringMap(v, f));
       }},
      {"disruptionsAllowed",
       [&](auto& v, auto& f, O& o) { return Store(o.disruptions_allowed, ReadInt32(v, f, 0)); }},
      {"disruptedPods", [&](auto& v, auto& f, O& o) { return Store(o.disrupted_pods, ReadStringList(v, f)); }},
  }, out));
  if (out.min_available && out.max_unavailable)
    return r_.Fail(n, fmt::format("{} sets both `minAvailable` and `maxUnavailable`", what));
  return Status::Ok();
}

Status Loader::ReadResourceQuota(const yaml::Node& n, ResourceQuota& out) {
  using O = ResourceQuota;
  out.namespace_ = "default";
  auto what = ReadFields<O>(n, "resource quota", {
      {"namespace", [&](auto& v, auto& f, O& o) { return Store(o.namespace_, Str(v, f)); }},
      {"hard", [&](auto& v, auto& f, O& o) {
         if (v.IsMap())
           for (const auto& kv : v) o.hard_names.emplace_back(kv.first.Scalar());
         return Store(o.hard, ReadResources(v, f));
       }},
      {"used", [&](auto& v, auto& f, O& o) { return Store(o.used, ReadResources(v, f)); }},
  }, out);
  return what ? Status::Ok() : Status(what.error());
}

// 100k pods are 100 MiB of PodSpec, written once in order: first-touch page faults on 4 KiB
// pages were a fifth of the load time. Advises the 2 MiB-aligned part of a fresh, large array as
// transparent huge pages (only advice: without THP nothing changes).
void AdviseHugePages(void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

template <typename T, typename F>
Status ReadList(const yaml::Reader& r, const yaml::Node& n, std::string_view what,
                std::vector<T>& out, F&& read) {
  if (Status s = r.ExpectList(n, what); !s) return s;
  out.reserve(n.size());
  AdviseHugePages(out.data(), out.capacity() * sizeof(T));
  for (const auto& item : n) {
    out.emplace_back();
    if (Status s = read(item, out.back()); !s) return s;
  }
  return Status::Ok();
}

Status Loader::ReadCluster(const yaml::Node& n, ClusterSpec& out) {
  TRY(r_.ExpectMap(n, "`cluster`",
                   {"priorityClasses", "queues", "nodes", "podGroups", "pods", "pdbs",
                    "resourceQuotas", "hyperNodes", "numatopologies"},
                   true));
  if (n.IsNull()) return Status::Ok();
  for (const auto& kv : n) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    std::string what = fmt::format("`{}`", k);
    if (k == "priorityClasses") {
      TRY(ReadList(r_, v, what, out.priority_classes,
                   [&](const yaml::Node& x, PriorityClassSpec& o) { return ReadPriorityClass(x, o); }));
    } else if (k == "queues") {
      TRY(ReadList(r_, v, what, out.queues, [&](const yaml::Node& x, QueueSpec& o) { return ReadQueue(x, o); }));
    } else if (k == "nodes") {
      TRY(ReadList(r_, v, what, out.nodes, [&](const yaml::Node& x, NodeSpec& o) { return ReadNode(x, o); }));
    } else if (k == "podGroups") {
      TRY(ReadList(r_, v, what, out.pod_groups,
                   [&](const yaml::Node& x, PodGroupSpec& o) { return ReadPodGroup(x, o); }));
    } else if (k == "pods") {
      TRY(ReadList(r_, v, what, out.pods, [&](const yaml::Node& x, PodSpec& o) { return ReadPod(x, o); }));
    } else if (k == "pdbs") {
      TRY(ReadList(r_, v, what, out.pdbs,
                   [&](const yaml::Node& x, PodDisruptionBudget& o) { return ReadPdb(x, o); }));
    } else if (k == "resourceQuotas") {
      TRY(ReadList(r_, v, what, out.resource_quotas,
                   [&](const yaml::Node& x, ResourceQuota& o) { return ReadResourceQuota(x, o); }));
    } else if (k == "hyperNodes") {
      TRY(ReadList(r_, v, what, out.hyper_nodes,
                   [&](const yaml::Node& x, HyperNodeSpec& o) { return ReadHyperNode(x, o); }));
    } else if (k == "numatopologies") {
      TRY(ReadList(r_, v, what, out.numatopologies,
                   [&](const yaml::Node& x, NumatopologySpec& o) { return ReadNumatopology(x, o); }));
    }
  }
  return Status::Ok();
}

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

// ------------------------------------------------------------------------------------------
// Defaults and cross references

template <typename T>
Status CheckUnique(const yaml::Reader& r, const std::vector<T>& objects, std::string_view kind,
                   std::string (*key)(const T&)) {
  std::unordered_map<std::string, int> seen;
  seen.reserve(objects.size());
  for (const T& o : objects) {
    auto [it, inserted] = seen.emplace(key(o), o.where.line);
    if (!inserted)
      return Error{fmt::format("{} `{}` is defined twice (first at line {})", kind, key(o), it->second),
                   o.where};
  }
  return Status::Ok();
}

Status Loader::ApplyDefaults(ScenarioSpec& spec) {
  ClusterSpec& c = spec.cluster;
  // Duplicates first: the defaults below derive objects (a pod's own group) from these names. Two
  // objects with one name is a mistake in the file (a cluster cannot hold them).
  TRY(CheckUnique<PriorityClassSpec>(r_, c.priority_classes, "priority class",
                                     [](const PriorityClassSpec& o) { return o.name; }));
  TRY(CheckUnique<QueueSpec>(r_, c.queues, "queue", [](const QueueSpec& o) { return o.name; }));
  TRY(CheckUnique<NodeSpec>(r_, c.nodes, "node", [](const NodeSpec& o) { return o.name; }));
  TRY(CheckUnique<PodSpec>(r_, c.pods, "pod", [](const PodSpec& o) { return o.Key(); }));
  TRY(CheckUnique<HyperNodeSpec>(r_, c.hyper_nodes, "hyperNode",
                                 [](const HyperNodeSpec& o) { return o.name; }));
  TRY(CheckUnique<NumatopologySpec>(r_, c.numatopologies, "numatopology",
                                    [](const NumatopologySpec& o) { return o.name; }));
  // Defaults and references: the one path every cluster source shares. A reference that does not
  // resolve is a fact about the cluster, reported as a warning (volcano-semantics.md §7).
  CompleteOptions options;
  options.now = spec.now;
  spec.warnings = CompleteCluster(c, options);
  for (ClusterWarning& w : spec.warnings)
    if (w.where.file.empty() && w.where.line == 0) w.where.file = r_.file();
  return Status::Ok();
}

Status Loader::CrossCheck(ScenarioSpec& spec) {
  TRY(CheckUnique<PodGroupSpec>(r_, spec.cluster.pod_groups, "podGroup",
                                [](const PodGroupSpec& o) { return o.Uid(); }));
  // A pod that a call names and whose group is not defined is a task of no job (the contract's
  // "a candidate need not belong to a job"). One on a node stays in the cluster, as Volcano's
  // cache keeps it (a job without a PodGroup that the snapshot skips, its pods still on their
  // nodes), and the calls find it among the cluster's tasks of no job. One on no node would not
  // be in the cluster at all: it leaves the cluster and is handed to the calls.
  if (!call_refs_.empty()) {
    std::unordered_set<std::string> defined, called, nodes;
    for (const auto& g : spec.cluster.pod_groups) defined.insert(g.Uid());
    for (const auto& n : spec.cluster.nodes) nodes.insert(n.name);
    for (const auto& ref : call_refs_)
      if (ref.kind == RefKind::Pod) called.insert(ref.name);
    std::erase_if(spec.cluster.pods, [&](PodSpec& p) {
      if (defined.count(p.JobUid()) || !called.count(p.Key())) return false;
      if (nodes.count(p.node) && !CompletedStatus(TaskStatusOf(p))) return false;
      spec.detached_pods.push_back(std::move(p));
      return true;
    });
  }
  // `expect.calls` alone: those entries are the calls to run.
  if (spec.calls.empty() && spec.expect && spec.expect->calls) spec.calls = *spec.expect->calls;
  const ClusterSpec& c = spec.cluster;

  // `expect` is part of the file: a name it checks must exist, or the check could never fail.
  std::unordered_set<std::string> nodes, groups, pods, queues;
  for (const auto& n : c.nodes) nodes.insert(n.name);
  for (const auto& q : c.queues) queues.insert(q.name);
  for (const auto& g : c.pod_groups) groups.insert(g.Uid());
  for (const auto& p : c.pods) pods.insert(p.Key());
  auto names = [](const std::unordered_set<std::string>& set) {
    return std::vector<std::string_view>(set.begin(), set.end());
  };
  for (const auto& [key, where] : expect_pods_)
    if (!pods.count(key))
      return Error{fmt::format("expect names pod `{}`, which is not defined (pods are named "
                               "<namespace>/<name>){}",
                               key, yaml::DidYouMean(key, names(pods))),
                   where};
  for (const auto& [name, where] : expect_nodes_)
    if (!nodes.count(name))
      return Error{fmt::format("expect names node `{}`, which is not defined{}", name,
                               yaml::DidYouMean(name, names(nodes))),
                   where};
  for (const auto& [uid, where] : expect_groups_)
    if (!groups.count(uid))
      return Error{fmt::format("expect names podGroup `{}`, which is not defined (podGroups are "
                               "named <namespace>/<name>){}",
                               uid, yaml::DidYouMean(uid, names(groups))),
                   where};
  for (const auto& p : spec.detached_pods) pods.insert(p.Key());
  for (const CallRef& ref : call_refs_) {
    const std::unordered_set<std::string>* known = nullptr;
    std::string_view kind, hint;
    switch (ref.kind) {
      case RefKind::Pod: known = &pods, kind = "pod", hint = " (pods are named <namespace>/<name>)"; break;
      case RefKind::Node: known = &nodes, kind = "node"; break;
      case RefKind::Job:
        known = &groups, kind = "podGroup", hint = " (podGroups are named <namespace>/<name>)";
        break;
      case RefKind::Queue: known = &queues, kind = "queue"; break;
    }
    if (!known->count(ref.name))
      return Error{fmt::format("calls name {} `{}`, which is not defined{}{}", kind, ref.name, hint,
                               yaml::DidYouMean(ref.name, names(*known))),
                   ref.where};
  }
  return Status::Ok();
}

Status Loader::Load(const yaml::Node& root, std::string_view text, ScenarioSpec& spec) {
  if (root.IsNull()) return Error{"scenario is empty", SourceLocation{r_.file(), 1, 0}};
  TRY(r_.ExpectMap(root, "scenario",
                   {"name", "conf", "now", "cluster", "expect", "calls", "notes", "source"}));
  spec.file = r_.file();
  std::string now_text(kDefaultNow);
  yaml::Node now_node;
  for (const auto& kv : root) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    if (k == "name") {
      ASSIGN_OR_RETURN(spec.name, Str(v, "`name`"));
    } else if (k == "conf") {
      ASSIGN_OR_RETURN(spec.conf_text, Str(v, "`conf`"));
      spec.has_conf = true;
      spec.conf_where = yaml::Where(v, r_.file());
      // A block scalar (`conf: |`) starts on the line after its indicator; find its indentation
      // in the source so conf errors can be reported at scenario lines and columns.
      yaml::Mark m = v.GetMark();
      if (m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() &&
          (text[m.pos] == '|' || text[m.pos] == '>')) {
        size_t eol = text.find('\n', m.pos);
        if (eol != std::string_view::npos) {
          size_t line_start = eol + 1;
          // Skip blank lines before the first content line.
          while (line_start < text.size()) {
            size_t end = text.find('\n', line_start);
            std::string_view l = text.substr(line_start, end == std::string_view::npos ? text.npos : end - line_start);
            if (l.find_first_not_of(" \t\r") != std::string_view::npos) {
              spec.conf_indent = static_cast<int>(l.find_first_not_of(' '));
              break;
            }
            if (end == std::string_view::npos) break;
            line_start = end + 1;
          }
          spec.conf_first_line = m.line + 2;
        }
      }
    } else if (k == "now") {
      ASSIGN_OR_RETURN(now_text, Str(v, "`now`"));
      now_node = v;
    } else if (k == "cluster") {
      TRY(ReadCluster(v, spec.cluster));
    } else if (k == "expect") {
      spec.expect.emplace();
      TRY(ReadExpect(v, *spec.expect));
    } else if (k == "calls") {
      TRY(ReadCalls(v, "`calls`", false, spec.calls));
    } else if (k == "notes") {
      ASSIGN_OR_RETURN(spec.notes, Str(v, "`notes`"));
    } else if (k == "source") {
      ASSIGN_OR_RETURN(spec.source, Str(v, "`source`"));
    }
  }
  // A zero `now` is a clock nobody set: the default one.
  if (IsZeroTimestamp(now_text)) now_text = kDefaultNow;
  auto now = ParseTimestamp(now_text);
  if (!now) return r_.Fail(now_node, fmt::format("`now`: {}", now.error().message));
  spec.now = *now;
  if (spec.name.empty()) {
    // Reports name scenarios; fall back to the file's base name.
    std::string base = r_.file().substr(r_.file().find_last_of('/') + 1);
    spec.name = base.substr(0, base.rfind('.'));
  }
  return Status::Ok();
}

Status Loader::Finish(ScenarioSpec& spec) {
  TRY(ApplyDefaults(spec));
  TRY(CrossCheck(spec));
  return Status::Ok();
}

}  // namespace

Result<ScenarioSpec> ParseScenario(std::string_view text, std::string file) {
  ScenarioSpec spec;
  Loader loader(file);
  {
    auto doc = yaml::Document::Parse(text, file);
    if (!doc) return doc.error();
    if (Status s = loader.Load(doc->root(), text, spec); !s) return s.error();
  }
  if (Status s = loader.Finish(spec); !s) return s.error();
  return spec;
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot read {}: {}", path, std::strerror(errno)), SourceLocation{}};
  // A regular file is read at once into a string of its size (a stringstream would copy a 12 MB
  // trace twice); anything else (a pipe) through the stream.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    auto size = std::filesystem::file_size(path, ec);
    if (!ec) {
      std::string text(size, '\0');
      in.read(text.data(), static_cast<std::streamsize>(size));
      text.resize(static_cast<size_t>(in.gcount()));
      if (in) {  // the file grew since it was measured
        std::ostringstream rest;
        rest << in.rdbuf();
        text += rest.str();
      }
      return text;
    }
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<ScenarioSpec> LoadScenarioFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseScenario(*text, path);
}

Error MapConfError(const ScenarioSpec& spec, Error error) {
  error.where.file = spec.file;
  if (spec.conf_first_line > 0 && error.where.line > 0) {
    error.where.line += spec.conf_first_line - 1;
    if (error.where.column > 0) error.where.column += spec.conf_indent;
  } else {
    // A flow or quoted conf string: only the `conf` key's position is meaningful.
    error.where.line = spec.conf_where.line;
    error.where.column = spec.conf_where.column;
  }
  return error;
}

}  // namespace kiln
