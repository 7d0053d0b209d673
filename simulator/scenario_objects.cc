// The cluster's objects in scenario files (priority classes, queues, nodes, podGroups, pods,
// PDBs, resource quotas, HyperNodes, numatopologies), each read through its table of keys.

#include "simulator/scenario_loader.h"

#include <sys/mman.h>

#include <algorithm>
#include <set>

#include "runtime/cpuset.h"

namespace kiln::scenario_loader {

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
      {"task", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().task, Str(v, f)); }},
      {"requests", [&](auto& v, auto& f, O& o) { return Store(o.requests, ReadResources(v, f)); }},
      {"limits", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().limits, ReadResources(v, f)); }},
      {"priorityClassName", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().priority_class_name, Str(v, f)); }},
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
      {"annotations", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().annotations, ReadStringMap(v, f)); }},
      {"nodeSelector", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().node_selector, ReadStringMap(v, f)); }},
      {"tolerations", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().tolerations, ReadTolerations(v, f)); }},
      {"affinity", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().affinity, ReadAffinity(v, f)); }},
      {"topologySpreadConstraints",
       [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().topology_spread_constraints, ReadSpread(v, f)); }},
      {"hostPorts", [&](auto& v, auto& f, O& o) { return Store(o.mutable_placement().host_ports, ReadHostPorts(v, f)); }},
      {"image", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().image, Str(v, f)); }},
      {"schedulerName", [&](auto& v, auto& f, O& o) { return Store(o.mutable_extras().scheduler_name, Str(v, f)); }},
      {"schedulingGates", [&](auto& v, auto& f, O& o) -> Status {
         // Kubernetes' shape: [{name: example.com/gate}, ...]
         TRY(r_.ExpectList(v, f));
         for (const auto& gate : v) {
           TRY(r_.ExpectMap(gate, "a scheduling gate", {"name"}));
           if (!gate["name"]) return r_.Fail(gate, fmt::format("a gate in {} has no `name`", f));
           ASSIGN_OR_RETURN(std::string name, Str(gate["name"], "`name` of a scheduling gate"));
           o.mutable_extras().scheduling_gates.push_back(std::move(name));
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

}  // namespace kiln::scenario_loader
