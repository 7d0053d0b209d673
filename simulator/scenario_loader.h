#pragma once
// The scenario loader's own header (not for use outside simulator/scenario*.cc): the Loader that
// reads a scenario document into a ScenarioSpec, its generic value readers, and the table that
// names each object's keys. Its members are defined by concern:
//   scenario.cc             the document's top level, ParseScenario, LoadScenarioFile
//   scenario_shapes.cc      Kubernetes shapes (selectors, affinity, tolerations, taints, ...)
//   scenario_objects.cc     the cluster's objects (queues, nodes, podGroups, pods, ...)
//   scenario_expect.cc      `expect` and `calls`
//   scenario_validation.cc  duplicates, defaults and cross references, after everything is read

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/quantity.h"
#include "runtime/yaml_util.h"
#include "simulator/scenario.h"

namespace kiln::scenario_loader {

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

inline constexpr std::string_view kDefaultNow = "2025-01-01T00:00:00Z";
inline constexpr double kDefaultMaxPods = 110;  // kubelet's default --max-pods

// Stores a reader's value into `dst`, or passes its error on.
template <typename T, typename U>
Status Store(T& dst, Result<U> r) {
  if (!r) return r.error();
  dst = std::move(*r);
  return Status::Ok();
}

// Each object is a table of its keys (Loader::ReadFields): the key as the contract spells it and
// how its value is read into the spec. The table is also the list of allowed keys, so the two
// cannot drift apart.
template <typename Out>
struct Field {
  std::string_view key;
  // (value, "`key` of <object>" for messages, the spec being filled)
  std::function<Status(const yaml::Node&, const std::string&, Out&)> read;
};

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
  Status ReadReplay(const yaml::Node& n, ReplaySpec& out);
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

}  // namespace kiln::scenario_loader
