#pragma once
// Every field of the plain cluster structs as text, so two ClusterSpecs compare field by field
// and a mismatch prints both sides (kubernetes decode and emulator tests).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/cluster_spec.h"

namespace kiln::testing {

inline std::string D(const Resource& r) { return fmt::format("{:#x}:{}", r.present, r.ToString()); }
inline std::string D(const std::optional<Resource>& r) { return r ? D(*r) : "nil"; }
inline std::string D(const SparseResource& r) { return D(r.Expand()); }
inline std::string D(const StringMap& m) {
  std::string s = "{";
  for (const auto& [k, v] : m) s += k + "=" + v + ",";
  return s + "}";
}
inline std::string D(const std::vector<std::string>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }
inline std::string D(const SelectorRequirement& r) { return fmt::format("{} {} {}", r.key, r.op, D(r.values)); }
inline std::string D(const LabelSelector& s) {
  std::string out = D(s.match_labels);
  for (const auto& e : s.match_expressions) out += ";" + D(e);
  return out;
}
inline std::string D(const std::optional<LabelSelector>& s) { return s ? D(*s) : "nil"; }
inline std::string D(const NodeSelectorTerm& t) {
  std::string out = "e:";
  for (const auto& e : t.match_expressions) out += D(e) + ";";
  out += "f:";
  for (const auto& e : t.match_fields) out += D(e) + ";";
  return out;
}
inline std::string D(const PodAffinityTerm& t) {
  return fmt::format("{}|{}|{}|{}", D(t.label_selector), D(t.namespaces), D(t.namespace_selector), t.topology_key);
}
inline std::string D(const std::optional<PodAffinity>& a) {
  if (!a) return "nil";
  std::string out;
  for (const auto& t : a->required) out += "r:" + D(t) + ";";
  for (const auto& w : a->preferred) out += fmt::format("p{}:{};", w.weight, D(w.term));
  return out;
}
inline std::string D(const Affinity& a) {
  std::string out = "na:";
  if (a.node_affinity) {
    if (a.node_affinity->required) {
      out += "req[";
      for (const auto& t : *a.node_affinity->required) out += D(t) + "/";
      out += "]";
    }
    for (const auto& p : a.node_affinity->preferred) out += fmt::format("pref{}:{}", p.weight, D(p.preference));
  } else {
    out += "nil";
  }
  return out + " pa:" + D(a.pod_affinity) + " paa:" + D(a.pod_anti_affinity);
}

inline std::string D(const PriorityClassSpec& p) {
  return fmt::format("pc {} {} {} {}", p.name, p.value, p.global_default, static_cast<int>(p.preemption_policy));
}
inline std::string D(const QueueSpec& q) {
  return fmt::format("queue {} w{} cap{} des{} gua{} parent={} prio{} recl{} state{} ann{} lab{} nga{}/{} ngaa{}/{} t{} impl{}",
                     q.name, q.weight, D(q.capability), D(q.deserved), D(q.guarantee), q.parent, q.priority,
                     q.reclaimable, ToString(q.state), D(q.annotations), D(q.labels),
                     D(q.node_group_affinity.required), D(q.node_group_affinity.preferred),
                     D(q.node_group_anti_affinity.required), D(q.node_group_anti_affinity.preferred),
                     q.creation_time, q.implicit);
}
inline std::string D(const NodeSpec& n) {
  std::string taints, images;
  for (const auto& t : n.taints) taints += fmt::format("{}={}:{};", t.key, t.value, t.effect);
  for (const auto& [k, v] : n.images) images += fmt::format("{}={};", k, v);
  std::string usage = n.usage ? fmt::format("{}/{}/{}", n.usage->cpu, n.usage->memory, n.usage->metrics_time) : "nil";
  return fmt::format("node {} alloc{} cap{} lab{} ann{} taints[{}] images[{}] unsched{} usage{} t{}", n.name,
                     D(n.allocatable), D(n.capacity), D(n.labels), D(n.annotations), taints, images,
                     n.unschedulable, usage, n.creation_time);
}
inline std::string D(const std::optional<NetworkTopologySpec>& nt) {
  if (!nt) return "nil";
  return fmt::format("{}/{}/{}", nt->mode == NetworkTopologyMode::Soft ? "soft" : "hard",
                     nt->highest_tier_allowed ? std::to_string(*nt->highest_tier_allowed) : "nil", nt->highest_tier_name);
}
inline std::string D(const SubGroupPolicySpec& p) {
  auto opt = [](const std::optional<int32_t>& v) { return v ? std::to_string(*v) : "nil"; };
  return fmt::format("sg {} nt{} size{} min{} sel{} keys{}", p.name, D(p.network_topology), opt(p.sub_group_size),
                     opt(p.min_sub_groups), D(p.label_selector), D(p.match_label_keys));
}
inline std::string D(const PodGroupSpec& g) {
  std::string mtm, sgp;
  for (const auto& [k, v] : g.min_task_member) mtm += fmt::format("{}={};", k, v);
  for (const auto& p : g.sub_group_policy) sgp += D(p) + ";";
  return fmt::format("pg {} min{} mtm[{}] minres{} pc={} phase{} ann{} lab{} t{} impl{} conds{}", g.Uid(), g.min_member,
                     mtm, D(g.min_resources), g.priority_class_name, ToString(g.phase), D(g.annotations),
                     D(g.labels), g.creation_time, g.implicit, g.conditions.size()) +
         " queue=" + g.queue + " nt" + D(g.network_topology) + " sgp[" + sgp + "]";
}
inline std::string D(const HyperNodeSpec& h) {
  std::string members;
  for (const auto& m : h.members)
    members += fmt::format("{}:{}:{}|{}|{};", m.type == HyperNodeMemberSpec::Type::Node ? "Node" : "HyperNode",
                           static_cast<int>(m.selector), m.name, m.pattern, D(m.labels));
  return fmt::format("hypernode {} tier{} tierName={} members[{}]", h.name, h.tier, h.tier_name, members);
}
inline std::string D(const NumatopologySpec& n) {
  std::string out = "numatopology " + n.name + " pol" + D(n.policies) + " res" + D(n.res_reserved) + " numares{";
  for (const auto& [k, v] : n.numares) out += fmt::format("{}={}/{},", k, fmt::join(v.allocatable, " "), v.capacity);
  out += "} cpus{";
  for (const auto& [k, v] : n.cpu_detail) out += fmt::format("{}={}/{}/{},", k, v.numa, v.socket, v.core);
  return out + "}";
}inline std::string D(const PodSpec& p) {
  std::string tol, spread, ports, gates;
  for (const auto& t : p.tolerations())
    tol += fmt::format("{} {} {} {} {};", t.key, t.op, t.value, t.effect, t.toleration_seconds.value_or(-1));
  for (const auto& s : p.topology_spread_constraints())
    spread += fmt::format("{} {} {} {} {} {} {} {};", s.max_skew, s.topology_key, s.when_unsatisfiable,
                          D(s.label_selector), s.min_domains.value_or(-1), D(s.match_label_keys),
                          s.node_affinity_policy, s.node_taints_policy);
  for (const auto& h : p.host_ports()) ports += fmt::format("{}:{}/{}@{};", h.host_port, h.container_port, h.protocol, h.host_ip);
  return fmt::format("pod {} group={} task={} req{} pc={} prio{} phase{} node={} nom={} lab{} ann{} sel{} tol[{}] aff[{}] "
                     "spread[{}] ports[{}] image={} gates{} pp{} t{} sched{} del{} dur{} sn={} foreign{}",
                     p.Key(), p.group, p.task(), D(p.requests), p.priority_class_name(), p.priority.value_or(-999),
                     ToString(p.phase), p.node, p.nominated_node, D(p.labels), D(p.annotations()), D(p.node_selector()),
                     tol, D(p.affinity()), spread, ports, p.image(), D(p.scheduling_gates()),
                     p.preemption_policy ? static_cast<int>(*p.preemption_policy) : -1, p.creation_time,
                     p.scheduled_at, p.deleting, p.duration.value_or(-1), p.scheduler_name(), p.foreign);
}
inline std::string D(const PodDisruptionBudget& p) {
  auto pods = p.disrupted_pods;
  std::sort(pods.begin(), pods.end());
  return fmt::format("pdb {}/{} min={} max={} sel{} allowed{} disrupted{}", p.namespace_, p.name,
                     p.min_available.value_or("nil"), p.max_unavailable.value_or("nil"), D(p.selector),
                     p.disruptions_allowed, D(pods));
}
inline std::string D(const ResourceQuota& q) {
  return fmt::format("quota {}/{} hard{} used{}", q.namespace_, q.name, D(q.hard), D(q.used));
}

template <typename T>
inline std::vector<std::string> Dumps(const std::vector<T>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(D(x));
  return out;
}

// Each list of two clusters as dumps, field by field: check(field, got, want) for every one.
template <typename F>
void CompareClusterSpecs(const ClusterSpec& got, const ClusterSpec& want, F&& check) {
  check("priorityClasses", Dumps(got.priority_classes), Dumps(want.priority_classes));
  check("queues", Dumps(got.queues), Dumps(want.queues));
  check("nodes", Dumps(got.nodes), Dumps(want.nodes));
  check("podGroups", Dumps(got.pod_groups), Dumps(want.pod_groups));
  check("pods", Dumps(got.pods), Dumps(want.pods));
  check("pdbs", Dumps(got.pdbs), Dumps(want.pdbs));
  check("resourceQuotas", Dumps(got.resource_quotas), Dumps(want.resource_quotas));
  check("hyperNodes", Dumps(got.hyper_nodes), Dumps(want.hyper_nodes));
  check("numatopologies", Dumps(got.numatopologies), Dumps(want.numatopologies));
}

}  // namespace kiln::testing
