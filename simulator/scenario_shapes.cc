// Kubernetes shapes in scenario files: label and node selectors, affinity, tolerations, taints,
// topology spread, host ports, images and nodeGroup affinity, read as the API server reads them.

#include "simulator/scenario_loader.h"

#include <algorithm>

namespace kiln::scenario_loader {

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

}  // namespace kiln::scenario_loader
