#include "runtime/cluster_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "runtime/cluster_extend.h"
#include "runtime/name_table.h"
#include "runtime/pause_gate.h"
#include "runtime/shared_value.h"
#include "runtime/yaml_util.h"

namespace kiln {

namespace {

// Volcano reads these annotations/labels (§3.1, §3.2; kPreemptableKey is in runtime/model.h).
constexpr std::string_view kTaskSpecKey = "volcano.sh/task-spec";
constexpr std::string_view kTaskPriorityKey = "volcano.sh/task-priority";

// Annotation first, then label (Volcano's GetPodPreemptable and friends).
const std::string* AnnotationOrLabel(const StringMap& annotations, const StringMap& labels,
                                     std::string_view key) {
  if (auto it = annotations.find(key); it != annotations.end()) return &it->second;
  if (auto it = labels.find(key); it != labels.end()) return &it->second;
  return nullptr;
}

// Plugins Volcano registers (volcano-semantics.md §1.2): a conf naming one Kiln has no policy for
// gets its own message, as an action Kiln lacks does.
}  // namespace

std::vector<ClusterWarning> CompleteCluster(ClusterSpec& c, const CompleteOptions& options) {
  std::vector<ClusterWarning> warnings;
  auto warn = [&](std::string object, std::string message, const SourceLocation& where) {
    warnings.push_back(ClusterWarning{std::move(object), std::move(message), where});
  };
  auto names_of = [](const auto& set) {
    return std::vector<std::string_view>(set.begin(), set.end());
  };

  // Volcano's scheduler creates its default queue at start-up when the cluster lacks it.
  if (std::none_of(c.queues.begin(), c.queues.end(),
                   [&](const QueueSpec& q) { return q.name == options.default_queue; })) {
    QueueSpec q;
    q.name = options.default_queue;
    q.implicit = true;
    c.queues.push_back(std::move(q));
  }

  // Pods of other schedulers: no task of any job; those on nodes still use them (§7.4). One
  // warning per scheduler name: a live cluster has many such pods, each one is not news.
  std::map<std::string, std::vector<std::string>, std::less<>> foreign;
  // Pods that share their extras (a job's pods in kiln serve's cache) share the answer.
  const PodExtras* last_extras = nullptr;
  bool last_foreign = false;
  for (PodSpec& pod : c.pods) {
    if (pod.extras.get() != last_extras) {
      last_extras = pod.extras.get();
      last_foreign = std::find(options.scheduler_names.begin(), options.scheduler_names.end(),
                               pod.scheduler_name()) == options.scheduler_names.end();
    }
    pod.foreign = last_foreign;
    if (pod.foreign) foreign[pod.scheduler_name()].push_back(pod.Key());
  }
  for (const auto& [scheduler, pods] : foreign) {
    std::string list;
    for (size_t i = 0; i < pods.size() && i < 5; ++i) list += (i ? ", " : "") + pods[i];
    if (pods.size() > 5) list += fmt::format(", and {} more", pods.size() - 5);
    warn(fmt::format("scheduler {}", scheduler),
         fmt::format("{} pod{} of scheduler `{}` ({}) {} not scheduled by this scheduler; on a node "
                     "{} only count{} as node usage",
                     pods.size(), pods.size() == 1 ? "" : "s", scheduler, list,
                     pods.size() == 1 ? "is" : "are", pods.size() == 1 ? "it" : "they",
                     pods.size() == 1 ? "s" : ""),
         {});
  }

  // A pod of ours without a group gets the PodGroup Volcano's controller creates for a plain pod
  // (name podgroup-<pod uid>, minMember 1, minResources = the pod's requests).
  for (PodSpec& pod : c.pods) {
    if (pod.creation_time == kUnsetTime) pod.creation_time = options.now;
    if (!pod.group.empty() || pod.foreign) continue;
    PodGroupSpec g;
    g.name = "podgroup-" + pod.Uid();
    g.namespace_ = pod.namespace_;
    g.queue = options.default_queue;
    g.min_member = 1;
    g.min_resources = pod.requests;
    g.priority_class_name = pod.priority_class_name();
    g.creation_time = pod.creation_time;
    // A pod already running was scheduled before: its group is Running, as the previous
    // session's close would have left it.
    g.phase = pod.phase == PodPhase::Running ? PodGroupPhase::Running : PodGroupPhase::Pending;
    g.implicit = true;
    g.where = pod.where;
    pod.group = g.name;
    c.pod_groups.push_back(std::move(g));
  }
  // Objects without a creationTimestamp were all created at `now`: ties then fall back to UIDs.
  for (auto& q : c.queues)
    if (q.creation_time == kUnsetTime) q.creation_time = options.now;
  for (auto& n : c.nodes)
    if (n.creation_time == kUnsetTime) n.creation_time = options.now;
  for (auto& g : c.pod_groups)
    if (g.creation_time == kUnsetTime) g.creation_time = options.now;

  // The global default class: Volcano's cache keeps the last one it sees (§7.5).
  const PriorityClassSpec* global_default = nullptr;
  std::unordered_map<std::string_view, const PriorityClassSpec*> classes;
  for (const auto& pc : c.priority_classes) {
    classes[pc.name] = &pc;
    if (!pc.global_default) continue;
    if (global_default)
      warn(fmt::format("priority class {}", pc.name),
           fmt::format("priority classes `{}` and `{}` are both globalDefault; `{}` (the later) is "
                       "the default",
                       global_default->name, pc.name, pc.name),
           pc.where);
    global_default = &pc;
  }
  std::vector<std::string_view> class_names;
  for (const auto& pc : c.priority_classes) class_names.push_back(pc.name);
  // Pod priority and preemption policy, as the Priority admission plugin fills them in.
  for (auto& p : c.pods) {
    const PriorityClassSpec* cls = nullptr;
    if (p.priority_class_name().empty()) {
      cls = global_default;
    } else if (auto it = classes.find(p.priority_class_name()); it != classes.end()) {
      cls = it->second;
    } else {
      warn(fmt::format("pod {}", p.Key()),
           fmt::format("pod `{}` names priority class `{}`, which does not exist, so its priority "
                       "is {}{}",
                       p.Key(), p.priority_class_name(),
                       p.priority ? fmt::format("{} as written", *p.priority)
                                  : std::string("1 (a pod without spec.priority)"),
                       yaml::DidYouMean(p.priority_class_name(), class_names)),
           p.where);
    }
    if (!p.priority && cls) p.priority = cls->value;
    if (!p.preemption_policy && cls) p.preemption_policy = cls->preemption_policy;
  }

  std::unordered_set<std::string> queues, groups;
  for (const auto& q : c.queues) queues.insert(q.name);
  for (const auto& g : c.pod_groups) groups.insert(g.Uid());
  // Every bound pod's node is checked: a compact table (runtime/name_table.h). The warnings'
  // suggestions come from a set built as before, so ties between equally close names resolve
  // as they always did.
  const NameTable nodes(c.nodes, [](const NodeSpec& n) { return std::string_view(n.name); });
  std::optional<std::unordered_set<std::string>> node_set;
  auto node_names = [&]() -> const std::unordered_set<std::string>& {
    if (!node_set) {
      node_set.emplace();
      for (const auto& n : c.nodes) node_set->insert(n.name);
    }
    return *node_set;
  };
  for (auto& q : c.queues) {
    if (q.parent.empty() || q.parent == "root" || queues.count(q.parent)) continue;
    warn(fmt::format("queue {}", q.name),
         fmt::format("queue `{}` names parent `{}`, which does not exist, so it is a root queue{}",
                     q.name, q.parent, yaml::DidYouMean(q.parent, names_of(queues))),
         q.where);
  }
  // A parent cycle would make hierarchical policies loop forever: the first queue found on a
  // cycle loses its parent.
  for (auto& q : c.queues) {
    std::string cur = q.parent;
    for (size_t steps = 0; !cur.empty(); ++steps) {
      if (cur == q.name || steps > c.queues.size()) {
        warn(fmt::format("queue {}", q.name),
             fmt::format("queue `{}` is its own ancestor (parent cycle through `{}`); it is a root "
                         "queue",
                         q.name, q.parent),
             q.where);
        q.parent.clear();
        break;
      }
      std::string next;
      for (const auto& p : c.queues)
        if (p.name == cur) next = p.parent;
      cur = next;
    }
  }
  // A job's pods are next to each other: its PodGroup is looked up once, not once per pod.
  const PodSpec* last_member = nullptr;
  bool last_group_exists = false;
  for (const auto& p : c.pods) {
    if (!p.foreign && (last_member == nullptr || p.group != last_member->group ||
                       p.namespace_ != last_member->namespace_)) {
      last_member = &p;
      last_group_exists = groups.count(p.JobUid()) > 0;
    }
    if (!p.foreign && !last_group_exists) {
      std::vector<std::string_view> same_namespace;
      for (const auto& g : c.pod_groups)
        if (g.namespace_ == p.namespace_) same_namespace.push_back(g.name);
      warn(fmt::format("pod {}", p.Key()),
           fmt::format("pod `{}` names podGroup `{}`, which does not exist in namespace `{}`, "
                       "so it is not scheduled{}{}",
                       p.Key(), p.group, p.namespace_,
                       p.node.empty() ? "" : " (it still uses its node)",
                       yaml::DidYouMean(p.group, same_namespace)),
           p.where);
    }
    if (!p.node.empty() && !nodes.Contains(p.node))
      warn(fmt::format("pod {}", p.Key()),
           fmt::format("pod `{}` is on node `{}`, which does not exist, so it uses no node{}",
                       p.Key(), p.node, yaml::DidYouMean(p.node, names_of(node_names()))),
           p.where);
    if (!p.nominated_node.empty() && !nodes.Contains(p.nominated_node))
      warn(fmt::format("pod {}", p.Key()),
           fmt::format("pod `{}` names nominated node `{}`, which does not exist, so preempt does "
                       "not consider the pod{}",
                       p.Key(), p.nominated_node, yaml::DidYouMean(p.nominated_node, names_of(node_names()))),
           p.where);
  }
  for (const auto& g : c.pod_groups) {
    if (!queues.count(g.queue))
      warn(fmt::format("podGroup {}", g.Uid()),
           fmt::format("podGroup `{}` names queue `{}`, which does not exist, so its pods are not "
                       "scheduled (those on nodes still use them){}",
                       g.Uid(), g.queue, yaml::DidYouMean(g.queue, names_of(queues))),
           g.where);
    // The group made for a plain pod carries the pod's class: the pod's warning says it.
    if (!g.implicit && !g.priority_class_name.empty() && !classes.count(g.priority_class_name))
      warn(fmt::format("podGroup {}", g.Uid()),
           fmt::format("podGroup `{}` names priority class `{}`, which does not exist, so its "
                       "priority is {}{}",
                       g.Uid(), g.priority_class_name,
                       global_default ? fmt::format("{} (global default `{}`)", global_default->value,
                                                    global_default->name)
                                      : std::string("0 (no global default class)"),
                       yaml::DidYouMean(g.priority_class_name, class_names)),
           g.where);
  }
  // HyperNodes: members that select nothing, double claims and cycles (runtime/hyper_node.h),
  // and a PodGroup's highestTierName that no HyperNode carries (Volcano's session then leaves
  // the job without a tier limit: it is placed as a job without topology).
  if (!c.hyper_nodes.empty()) {
    // The labels BuildCluster gives the nodes (the kubelet's hostname label included).
    std::vector<StringMap> labels(c.nodes.size());
    std::vector<HyperNodeTree::NodeRef> refs;
    refs.reserve(c.nodes.size());
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      labels[i] = c.nodes[i].labels;
      labels[i].try_emplace("kubernetes.io/hostname", c.nodes[i].name);
      refs.push_back({c.nodes[i].name, &labels[i], nullptr});
    }
    std::vector<HyperNodeWarning> hn_warnings;
    HyperNodeTree::Resolve(c.hyper_nodes, refs, &hn_warnings);
    for (auto& w : hn_warnings) warn(std::move(w.object), std::move(w.message), w.where);
  }
  std::set<std::string, std::less<>> tier_names;
  for (const auto& h : c.hyper_nodes)
    if (!h.tier_name.empty()) tier_names.insert(h.tier_name);
  auto check_tier_name = [&](const PodGroupSpec& g, const NetworkTopologySpec& nt,
                             std::string_view where_text) {
    if (nt.highest_tier_allowed || nt.highest_tier_name.empty() ||
        tier_names.count(nt.highest_tier_name))
      return;
    warn(fmt::format("podGroup {}", g.Uid()),
         fmt::format("podGroup `{}`{} names highestTierName `{}`, which no HyperNode has, so no "
                     "tier limits it{}",
                     g.Uid(), where_text, nt.highest_tier_name,
                     yaml::DidYouMean(nt.highest_tier_name, names_of(tier_names))),
         g.where);
  };
  for (const auto& g : c.pod_groups) {
    if (g.network_topology) check_tier_name(g, *g.network_topology, "");
    for (const auto& p : g.sub_group_policy)
      if (p.network_topology)
        check_tier_name(g, *p.network_topology, fmt::format(" (subGroupPolicy `{}`)", p.name));
  }
  return warnings;
}

std::string_view ToString(PodPhase p) {
  switch (p) {
    case PodPhase::Pending: return "Pending";
    case PodPhase::Running: return "Running";
    case PodPhase::Succeeded: return "Succeeded";
    case PodPhase::Failed: return "Failed";
    case PodPhase::Unknown: return "Unknown";
  }
  return "Unknown";
}

TaskStatus TaskStatusOf(const PodSpec& pod) {
  switch (pod.phase) {
    case PodPhase::Running:
      return pod.deleting ? TaskStatus::Releasing : TaskStatus::Running;
    case PodPhase::Pending:
      if (pod.deleting) return TaskStatus::Releasing;
      return pod.node.empty() ? TaskStatus::Pending : TaskStatus::Bound;
    case PodPhase::Succeeded:
      return TaskStatus::Succeeded;
    case PodPhase::Failed:
      return TaskStatus::Failed;
    case PodPhase::Unknown:
      return TaskStatus::Unknown;
  }
  return TaskStatus::Unknown;
}

bool PodPlacement::empty() const {
  return node_selector.empty() && tolerations.empty() && !affinity.node_affinity &&
         !affinity.pod_affinity && !affinity.pod_anti_affinity &&
         topology_spread_constraints.empty() && host_ports.empty();
}

const std::shared_ptr<const PodPlacement>& PodPlacement::None() {
  return SharedEmpty<PodPlacement>();
}

PodPlacement& PodSpec::mutable_placement() { return MutableShared(placement); }

const std::shared_ptr<const PodExtras>& PodExtras::None() { return SharedEmpty<PodExtras>(); }

PodExtras& PodSpec::mutable_extras() { return MutableShared(extras); }

namespace {

// The pod's placement shape; pods with none share the one empty shape.
std::shared_ptr<const PodShape> ShapeOf(const PodSpec& ps) {
  const PodPlacement& pl = *ps.placement;
  bool no_limits = ps.limits().IsEmpty() && !ps.limits().HasScalars();
  if (ps.labels.empty() && ps.annotations().empty() && ps.image().empty() && pl.empty() && no_limits)
    return PodShape::Empty();
  auto shape = std::make_shared<PodShape>();
  shape->labels = ps.labels;
  shape->annotations = ps.annotations();
  shape->node_selector = pl.node_selector;
  shape->tolerations = pl.tolerations;
  shape->affinity = pl.affinity;
  shape->topology_spread_constraints = pl.topology_spread_constraints;
  shape->host_ports = pl.host_ports;
  if (!ps.image().empty()) shape->images = {ps.image()};
  shape->limits = ps.limits();
  return shape;
}

// v1qos.GetPodQOS for the pod's one container: Guaranteed when it limits cpu and memory and
// requests, where it names them, equal the limits (the API server defaults absent requests to
// the limits).
bool QosGuaranteed(const PodSpec& ps) {
  // cpu and memory are always present in a Resource: an unset one reads 0.
  for (ResourceId id : {kCpu, kMemory}) {
    double limit = ps.limits().Get(id), request = ps.requests.Get(id);
    if (limit <= 0 || (request != 0 && request != limit)) return false;
  }
  return true;
}

std::shared_ptr<const NumaTopology> NumaTopologyOf(const NumatopologySpec& nt) {
  auto topo = std::make_shared<NumaTopology>();
  topo->policies = nt.policies;
  topo->reserved = nt.res_reserved;
  const NumatopologySpec::NumaResource* cpu = nullptr;
  if (auto it = nt.numares.find("cpu"); it != nt.numares.end()) cpu = &it->second;
  for (const auto& [id, info] : nt.cpu_detail)
    topo->cpus.push_back(NumaCpu{id, info.numa, info.socket, info.core,
                                 cpu && cpu->allocatable.count(id) > 0});
  return topo;
}

// A PodGroup's job, as Link will resolve it.
void FillJob(Job& j, const PodGroupSpec& gs) {
  j.uid = gs.Uid();
  j.name = gs.name;
  j.namespace_ = gs.namespace_;
  j.queue_name = gs.queue;
  j.priority_class_name = gs.priority_class_name;
  j.min_available = gs.min_member;
  j.phase = gs.phase;
  j.annotations = gs.annotations;
  j.labels = gs.labels;
  j.creation_time = gs.creation_time;
  j.conditions = gs.conditions;
  j.has_min_resources = gs.min_resources.has_value();
  if (gs.min_resources) j.min_resources = *gs.min_resources;
  for (const auto& [role, min] : gs.min_task_member) {
    j.task_min_available[role] = min;
    j.task_min_available_total += min;
  }
  // PodGroup preemptable: annotation then label, default false (§3.2).
  if (const std::string* v = AnnotationOrLabel(gs.annotations, gs.labels, kPreemptableKey))
    j.preemptable = yaml::ParseGoBool(*v).value_or(false);
  j.network_topology = gs.network_topology;
  j.sub_group_policy = gs.sub_group_policy;
}

}  // namespace

PartialCluster::PartialCluster(const ClusterSpec& c) {
  Cluster& cluster = cluster_;
  for (const auto& pc : c.priority_classes) {
    PriorityClass& p = cluster.NewPriorityClass();
    p.name = pc.name;
    p.value = pc.value;
    p.global_default = pc.global_default;
    p.preemption_policy = pc.preemption_policy;
  }
  for (const auto& qs : c.queues) {
    Queue& q = cluster.NewQueue();
    q.name = qs.name;
    q.weight = qs.weight;
    q.priority = qs.priority;
    q.reclaimable = qs.reclaimable;
    q.state = qs.state;
    q.creation_time = qs.creation_time;
    q.has_capability = qs.capability.has_value();
    if (qs.capability) q.capability = *qs.capability;
    q.has_deserved = qs.deserved.has_value();
    if (qs.deserved) q.deserved = *qs.deserved;
    q.has_guarantee = qs.guarantee.has_value();
    if (qs.guarantee) q.guarantee = *qs.guarantee;
    q.parent_name = qs.parent;
    q.annotations = qs.annotations;
    if (auto it = qs.annotations.find("volcano.sh/hierarchy"); it != qs.annotations.end())
      q.hierarchy = it->second;
    if (auto it = qs.annotations.find("volcano.sh/hierarchy-weights"); it != qs.annotations.end())
      q.hierarchy_weights = it->second;
    q.has_affinity = qs.has_affinity;
    q.node_group_affinity = qs.node_group_affinity;
    q.node_group_anti_affinity = qs.node_group_anti_affinity;
  }
  for (const auto& ns : c.nodes) {
    PauseGate::Checkpoint();  // a shadow's model waits while a live session runs
    Node& n = cluster.NewNode();
    n.name = ns.name;
    n.allocatable = ns.allocatable;
    n.capacity = ns.capacity;
    n.labels = ns.labels;
    // The kubelet always labels its node with the hostname; topology keys rely on it.
    n.labels.try_emplace("kubernetes.io/hostname", ns.name);
    n.annotations = ns.annotations;
    n.taints = ns.taints;
    n.images = ns.images;
    n.unschedulable = ns.unschedulable;
    if (ns.usage) {
      n.has_usage = true;
      n.cpu_usage = ns.usage->cpu;
      n.memory_usage = ns.usage->memory;
      n.metrics_time = ns.usage->metrics_time;
    }
  }
  // The PodGroups before the first implicit one are jobs of the model now; the rest wait in
  // later_jobs_ so that Finish can put added PodGroups between them as BuildCluster would.
  groups_.reserve(c.pod_groups.size());
  nodes_.Reserve(c.nodes.size());
  for (const auto& gs : c.pod_groups) {
    groups_.insert(gs.Uid());
    const bool later = gs.implicit || !later_jobs_.empty();
    Job& j = later ? later_jobs_.emplace_back() : cluster.NewJob();
    FillJob(j, gs);
  }
  made_jobs_ = later_jobs_.size();
  for (const auto& ns : c.nodes) nodes_.Add(ns.name);
  for (const auto& ps : c.pods) {
    PauseGate::Checkpoint();
    AddTask(ps);
  }
  // PDBs and ResourceQuotas are plain cluster facts the pdb and resourcequota policies read.
  for (const auto& p : c.pdbs) cluster.NewPdb() = p;
  for (const auto& q : c.resource_quotas) cluster.NewResourceQuota() = q;
  // Numatopologies by node name; one naming no node is ignored, as Volcano's cache keeps it
  // aside until the node appears.
  for (const auto& nt : c.numatopologies)
    if (nodes_.Contains(nt.name)) numa_.emplace_back(nt.name, NumaTopologyOf(nt));
  hyper_nodes_ = c.hyper_nodes;
}

// Pods that are no task of the session still use their nodes (§7.2-7.4). Link drops a job whose
// queue does not exist together with its tasks but keeps those tasks on their nodes, so such
// pods hang off a job with no queue: their own missing PodGroup's uid (Volcano's cache keeps a
// job without a PodGroup, the snapshot skips it), or one shared job for other schedulers' pods.
void PartialCluster::AddTask(const PodSpec& ps) {
  // A job's pods are next to each other in the spec: the previous pod's answer for its job
  // holds for this one unless the PodGroup differs.
  if (!ps.foreign && !(last_job_.known && ps.group == last_job_.group &&
                       ps.namespace_ == last_job_.namespace_)) {
    last_job_.namespace_ = ps.namespace_;
    last_job_.group = ps.group;
    last_job_.uid = ps.JobUid();
    last_job_.no_group = !groups_.count(last_job_.uid);
    if (last_job_.no_group) missing_groups_.insert(last_job_.uid);
    last_job_.known = true;
  }
  const bool no_group = !ps.foreign && last_job_.no_group;
  const bool node_exists = !ps.node.empty() && nodes_.Contains(ps.node);
  if ((ps.foreign || no_group) &&
      (ps.node.empty() || CompletedStatus(TaskStatusOf(ps)) || !node_exists))
    return;  // not in the session and on no node: nothing to see
  Task& t = cluster_.NewTask();
  t.uid = ps.Uid();
  t.name = ps.name;
  t.namespace_ = ps.namespace_;
  if (!ps.foreign) t.job_uid = last_job_.uid;
  if ((ps.foreign || no_group) && dropped_jobs_.insert(t.job_uid).second) {
    Job& j = later_jobs_.emplace_back();
    j.uid = t.job_uid;
    j.queue_name.clear();  // no queue: Link drops the job
  }
  t.status = TaskStatusOf(ps);
  // Terminated pods hold no node resources: Volcano's cache adds only non-terminated tasks to
  // their node. A node that does not exist is not in the snapshot: the pod uses nothing.
  if (!CompletedStatus(t.status) && node_exists) t.node_name = ps.node;
  t.role = ps.task();
  if (t.role.empty())
    if (const std::string* v = AnnotationOrLabel(ps.annotations(), ps.labels, kTaskSpecKey))
      t.role = *v;
  // pod.spec.priority, or 1 when nil; the task-priority annotation overrides it.
  t.priority = ps.priority.value_or(1);
  if (auto it = ps.annotations().find(kTaskPriorityKey); it != ps.annotations().end())
    if (auto p = yaml::ParseIntText(it->second)) t.priority = *p;
  t.preemption_policy = ps.preemption_policy.value_or(PreemptionPolicy::PreemptLowerPriority);
  if (const std::string* v = AnnotationOrLabel(ps.annotations(), ps.labels, kPreemptableKey))
    t.preemptable = yaml::ParseGoBool(*v).value_or(true);
  t.deleting = ps.deleting;
  t.nominated_node_name = ps.nominated_node;
  t.creation_time = ps.creation_time;
  t.scheduled_at = ps.scheduled_at;
  t.priority_class_name = ps.priority_class_name();
  t.shape = ShapeFor(ps);
  // A gated pod waits outside scheduling until its gates are removed (Volcano's SchGated).
  t.sch_gated = !ps.scheduling_gates().empty() && ps.phase == PodPhase::Pending;
  // The previous pod's resreq, when equal, spares hashing this one's 264 bytes.
  const Resource resreq = Task::ResreqOf(ps.requests);
  if (last_resreq_ == nullptr || !(*last_resreq_ == resreq)) {
    auto [shared, fresh] = resreqs_.try_emplace(resreq);
    if (fresh) shared->second = std::make_shared<const Resource>(resreq);
    last_resreq_ = shared->second;
  }
  t.SetResreq(last_resreq_);
  t.qos_guaranteed = ps.qos_guaranteed ? *ps.qos_guaranteed : QosGuaranteed(ps);
}

std::shared_ptr<const PodShape> PartialCluster::ShapeFor(const PodSpec& ps) {
  if (last_shape_ != nullptr && ps.placement.get() == last_placement_) {
    const PodShape& last = *last_shape_;
    // The same extras (a job's pods share them in kiln serve's cache) hold the same image,
    // annotations and limits: only the labels are left to compare.
    const bool same_extras = ps.extras.get() == last_extras_;
    const bool same_image =
        ps.image().empty() ? last.images.empty()
                           : last.images.size() == 1 && last.images[0] == ps.image();
    if (last.labels == ps.labels &&
        (same_extras || (same_image && last.annotations == ps.annotations() &&
                         last.limits == ps.limits().Expand()))) {
      last_extras_ = ps.extras.get();
      return last_shape_;
    }
  }
  last_shape_ = ShapeOf(ps);
  last_placement_ = ps.placement.get();
  last_extras_ = ps.extras.get();
  return last_shape_;
}

bool PartialCluster::CanAdd(const std::vector<PodGroupSpec>& groups) const {
  for (const PodGroupSpec& g : groups)
    if (missing_groups_.count(g.Uid())) return false;
  return true;
}

Result<Cluster> PartialCluster::Finish(const std::vector<PodGroupSpec>& groups,
                                       const std::vector<PodSpec>& pods) && {
  if (!CanAdd(groups))
    return Error{
        "the added PodGroups include one that pods of the cluster name while it lacks "
        "it: build the cluster whole",
        {}};
  // BuildCluster's job order: the named PodGroups (the spec's, then the added), the implicit
  // ones (the same), then the dropped jobs.
  for (const PodGroupSpec& g : groups) {
    if (!g.implicit) FillJob(cluster_.NewJob(), g);
    groups_.insert(g.Uid());
  }
  last_job_.known = false;  // a PodGroup may have been added for it
  for (size_t i = 0; i < made_jobs_; ++i) cluster_.NewJob() = std::move(later_jobs_[i]);
  for (const PodGroupSpec& g : groups)
    if (g.implicit) FillJob(cluster_.NewJob(), g);
  for (size_t i = made_jobs_; i < later_jobs_.size(); ++i)
    cluster_.NewJob() = std::move(later_jobs_[i]);
  later_jobs_.clear();
  for (const PodSpec& p : pods) AddTask(p);
  // AddTask may have made a dropped job for an added pod: it goes last, as in BuildCluster.
  for (Job& j : later_jobs_) cluster_.NewJob() = std::move(j);
  if (Status s = cluster_.Link(); !s) return s.error();
  for (const auto& [name, topo] : numa_)
    if (Node* n = cluster_.FindNode(name)) n->numa = topo;
  // HyperNodes over the linked nodes (CompleteCluster reported what does not resolve).
  if (!hyper_nodes_.empty()) {
    std::vector<HyperNodeTree::NodeRef> refs;
    refs.reserve(cluster_.nodes().size());
    for (Node* n : cluster_.nodes()) refs.push_back({n->name, &n->labels, n});
    cluster_.set_hyper_nodes(HyperNodeTree::Resolve(hyper_nodes_, refs, nullptr));
  }
  return std::move(cluster_);
}

Result<Cluster> BuildCluster(const ClusterSpec& c) { return PartialCluster(c).Finish({}, {}); }

}  // namespace kiln
