// What is checked once the whole scenario is read, so the order objects are listed in does not
// matter: names defined twice, the cluster's defaults and references (CompleteCluster), and the
// names `expect` and `calls` refer to.

#include "simulator/scenario_loader.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kiln::scenario_loader {

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
  // What `expect` names, by kind: the names, the defined ones, and how the kind is named.
  struct Named {
    const std::vector<std::pair<std::string, SourceLocation>>& named;
    const std::unordered_set<std::string>& defined;
    std::string_view kind, hint;
  };
  for (const Named& n : {Named{expect_pods_, pods, "pod", " (pods are named <namespace>/<name>)"},
                         Named{expect_nodes_, nodes, "node", ""},
                         Named{expect_groups_, groups, "podGroup",
                               " (podGroups are named <namespace>/<name>)"}})
    for (const auto& [name, where] : n.named)
      if (!n.defined.count(name))
        return Error{fmt::format("expect names {} `{}`, which is not defined{}{}", n.kind, name,
                                 n.hint, yaml::DidYouMean(name, names(n.defined))),
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

}  // namespace kiln::scenario_loader
