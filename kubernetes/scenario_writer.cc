// A ClusterSpec as scenario YAML (scenario_writer.h). Each object's keys are written in the order
// docs/scenario-format.md lists them, and only when they differ from the loader's default, so a
// snapshot reads like a hand-written scenario.
#include "kubernetes/scenario_writer.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "kubernetes/encode.h"
#include "kubernetes/encode_shapes.h"

namespace kiln::kube {

using json = nlohmann::json;

namespace {

// One object's keys, in the order they are added.
class Object {
 public:
  explicit Object(YAML::Emitter& e) : e_(e) { e_ << YAML::BeginMap; }
  ~Object() { e_ << YAML::EndMap; }
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  void Put(std::string_view key, const json& value) {
    e_ << YAML::Key << std::string(key) << YAML::Value;
    EmitJson(e_, value);
  }
  void PutIf(bool cond, std::string_view key, const json& value) {
    if (cond) Put(key, value);
  }
  // A JSON object or array, written when it is not empty.
  void PutNonEmpty(std::string_view key, const json& value) { PutIf(!value.empty(), key, value); }
  void PutTime(std::string_view key, TimeNs t) { PutIf(t != kUnsetTime, key, FormatTimestamp(t)); }

 private:
  YAML::Emitter& e_;
};

StringMap WithoutDropped(const StringMap& annotations) {
  StringMap out = annotations;
  for (std::string_view key : kDroppedAnnotations) out.erase(std::string(key));
  return out;
}

void WritePriorityClass(YAML::Emitter& e, const PriorityClassSpec& pc) {
  Object o(e);
  o.Put("name", pc.name);
  o.Put("value", pc.value);
  o.PutIf(pc.global_default, "globalDefault", true);
  o.PutIf(pc.preemption_policy == PreemptionPolicy::Never, "preemptionPolicy", "Never");
}

void WriteQueue(YAML::Emitter& e, const QueueSpec& q) {
  Object o(e);
  o.Put("name", q.name);
  o.Put("weight", q.weight);
  if (q.capability) o.Put("capability", ResourcesJson(*q.capability));
  if (q.deserved) o.Put("deserved", ResourcesJson(*q.deserved));
  if (q.guarantee) o.Put("guarantee", ResourcesJson(*q.guarantee));
  o.PutIf(!q.parent.empty(), "parent", q.parent);
  o.PutIf(q.priority != 0, "priority", q.priority);
  o.PutIf(!q.reclaimable, "reclaimable", false);
  o.PutIf(q.state != QueueState::Open, "state", std::string(ToString(q.state)));
  o.PutNonEmpty("annotations", MapJson(WithoutDropped(q.annotations)));
  o.PutNonEmpty("labels", MapJson(q.labels));
  o.PutIf(q.has_affinity, "affinity", QueueAffinityJson(q));
  o.PutTime("creationTimestamp", q.creation_time);
}

void WriteNode(YAML::Emitter& e, const NodeSpec& n) {
  Object o(e);
  o.Put("name", n.name);
  o.Put("allocatable", ResourcesJson(n.allocatable));
  o.Put("capacity", ResourcesJson(n.capacity));
  o.PutNonEmpty("labels", MapJson(n.labels));
  o.PutNonEmpty("annotations", MapJson(WithoutDropped(n.annotations)));
  o.PutNonEmpty("taints", TaintsJson(n.taints));
  o.PutNonEmpty("images", ImagesJson(n.images));
  o.PutIf(n.unschedulable, "unschedulable", true);
  if (n.usage) {
    json u = {{"cpu", n.usage->cpu}, {"memory", n.usage->memory}};
    if (n.usage->metrics_time) u["metricsTime"] = FormatTimestamp(n.usage->metrics_time);
    o.Put("usage", u);
  }
  o.PutTime("creationTimestamp", n.creation_time);
}

void WriteHyperNode(YAML::Emitter& e, const HyperNodeSpec& hn) {
  Object o(e);
  o.Put("name", hn.name);
  const json spec = HyperNodeSpecJson(hn);  // named: items() does not keep a temporary alive
  for (const auto& [key, value] : spec.items()) o.Put(key, value);
}

void WriteNumatopology(YAML::Emitter& e, const NumatopologySpec& n) {
  Object o(e);
  o.Put("name", n.name);
  const json spec = NumatopologySpecJson(n);
  for (const auto& [key, value] : spec.items()) o.Put(key, value);
}

void WritePodGroup(YAML::Emitter& e, const PodGroupSpec& g) {
  Object o(e);
  o.Put("name", g.name);
  o.Put("namespace", g.namespace_);
  o.Put("queue", g.queue);
  o.Put("minMember", g.min_member);
  if (!g.min_task_member.empty()) {
    json m = json::object();
    for (const auto& [task, n] : g.min_task_member) m[task] = n;
    o.Put("minTaskMember", m);
  }
  if (g.min_resources) o.Put("minResources", ResourcesJson(*g.min_resources));
  o.PutIf(!g.priority_class_name.empty(), "priorityClassName", g.priority_class_name);
  o.Put("phase", std::string(ToString(g.phase)));
  o.PutNonEmpty("annotations", MapJson(WithoutDropped(g.annotations)));
  o.PutNonEmpty("labels", MapJson(g.labels));
  o.PutTime("creationTimestamp", g.creation_time);
  if (g.network_topology) o.Put("networkTopology", NetworkTopologyJson(*g.network_topology));
  o.PutNonEmpty("subGroupPolicy", SubGroupPolicyJson(g.sub_group_policy));
}

void WritePod(YAML::Emitter& e, const PodSpec& p, bool implicit_group, bool ours) {
  Object o(e);
  o.Put("name", p.name);
  o.Put("namespace", p.namespace_);
  o.PutIf(!p.group.empty() && !implicit_group, "group", p.group);
  o.PutIf(!p.task().empty(), "task", p.task());
  o.PutNonEmpty("requests", RequestsJson(p.requests));
  o.PutNonEmpty("limits", RequestsJson(p.limits()));
  o.PutIf(!p.priority_class_name().empty(), "priorityClassName", p.priority_class_name());
  if (p.priority) o.Put("priority", *p.priority);
  o.Put("phase", std::string(ToString(p.phase)));
  o.PutIf(!p.node.empty(), "node", p.node);
  o.PutIf(!p.nominated_node.empty(), "nominatedNodeName", p.nominated_node);
  o.PutNonEmpty("labels", MapJson(p.labels));
  o.PutNonEmpty("annotations", MapJson(WithoutDropped(p.annotations())));
  o.PutNonEmpty("nodeSelector", MapJson(p.node_selector()));
  o.PutNonEmpty("tolerations", TolerationsJson(p.tolerations()));
  o.PutNonEmpty("affinity", AffinityJson(p.affinity()));
  o.PutNonEmpty("topologySpreadConstraints", SpreadJson(p.topology_spread_constraints()));
  o.PutNonEmpty("hostPorts", HostPortsJson(p.host_ports()));
  o.PutIf(!p.image().empty(), "image", p.image());
  o.PutIf(!ours, "schedulerName", p.scheduler_name());
  if (!p.scheduling_gates().empty()) {
    json gates = json::array();
    for (const auto& g : p.scheduling_gates()) gates.push_back({{"name", g}});
    o.Put("schedulingGates", gates);
  }
  if (p.preemption_policy)
    o.Put("preemptionPolicy", *p.preemption_policy == PreemptionPolicy::Never ? "Never" : "PreemptLowerPriority");
  o.PutTime("creationTimestamp", p.creation_time);
  o.PutIf(p.scheduled_at != 0, "scheduledAt", FormatTimestamp(p.scheduled_at));
  o.PutIf(p.deleting, "deleting", true);
  if (p.duration) o.Put("duration", GoDuration(*p.duration));
}

void WritePdb(YAML::Emitter& e, const PodDisruptionBudget& pdb) {
  Object o(e);
  o.Put("name", pdb.name);
  o.Put("namespace", pdb.namespace_);
  if (pdb.min_available) o.Put("minAvailable", *pdb.min_available);
  if (pdb.max_unavailable) o.Put("maxUnavailable", *pdb.max_unavailable);
  o.Put("selector", SelectorJson(pdb.selector));
  o.Put("disruptionsAllowed", pdb.disruptions_allowed);
  o.PutNonEmpty("disruptedPods", json(pdb.disrupted_pods));
}

void WriteResourceQuota(YAML::Emitter& e, const ResourceQuota& rq) {
  Object o(e);
  o.Put("name", rq.name);
  o.Put("namespace", rq.namespace_);
  // The names `hard` lists, in their order: `cpu: "0"` (nothing allowed) is not the absence of a
  // cpu limit, which the Resource alone cannot tell.
  e << YAML::Key << "hard" << YAML::Value << YAML::BeginMap;
  for (const std::string& name : rq.hard_names) {
    std::optional<ResourceId> id = ResourceNames::Find(name);
    e << YAML::Key << name << YAML::Value << YAML::DoubleQuoted
      << FormatQuantity(name, id ? rq.hard.Get(*id) : 0);
  }
  e << YAML::EndMap;
  o.Put("used", ResourcesJson(rq.used));
}

// A list under `key`, each item written by `write`; nothing when no item is kept.
template <typename T, typename Keep, typename Write>
void WriteList(YAML::Emitter& e, std::string_view key, const std::vector<T>& items, Keep keep,
               Write write) {
  if (std::none_of(items.begin(), items.end(), keep)) return;
  e << YAML::Key << std::string(key) << YAML::Value << YAML::BeginSeq;
  for (const T& item : items)
    if (keep(item)) write(e, item);
  e << YAML::EndSeq;
}

}  // namespace

std::string WriteScenario(const ClusterSpec& c, const ScenarioHeader& header) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "name" << YAML::Value << header.name;
  if (!header.notes.empty()) e << YAML::Key << "notes" << YAML::Value << header.notes;
  if (!header.conf_text.empty()) {
    // A literal block reads back as written; yaml-cpp cannot write one whose first line is
    // indented, which no conf needs but a quoted string still carries.
    e << YAML::Key << "conf" << YAML::Value;
    bool literal = header.conf_text.front() != ' ' &&
                   header.conf_text.find_first_of("\t\r") == std::string::npos;
    e << (literal ? YAML::Literal : YAML::DoubleQuoted) << header.conf_text;
  }
  e << YAML::Key << "now" << YAML::Value << FormatTimestamp(header.now);
  e << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;

  auto all = [](const auto&) { return true; };
  WriteList(e, "priorityClasses", c.priority_classes, all, WritePriorityClass);
  WriteList(e, "queues", c.queues, [](const QueueSpec& q) { return !q.implicit; }, WriteQueue);
  WriteList(e, "nodes", c.nodes, all, WriteNode);
  WriteList(e, "hyperNodes", c.hyper_nodes, all, WriteHyperNode);
  WriteList(e, "numatopologies", c.numatopologies, all, WriteNumatopology);
  WriteList(e, "podGroups", c.pod_groups, [](const PodGroupSpec& g) { return !g.implicit; },
            WritePodGroup);
  std::set<std::string, std::less<>> implicit_groups;
  for (const auto& g : c.pod_groups)
    if (g.implicit) implicit_groups.insert(g.Uid());
  WriteList(e, "pods", c.pods, all, [&](YAML::Emitter& em, const PodSpec& p) {
    WritePod(em, p, implicit_groups.count(p.JobUid()) > 0, !p.foreign);
  });
  WriteList(e, "pdbs", c.pdbs, all, WritePdb);
  WriteList(e, "resourceQuotas", c.resource_quotas, all, WriteResourceQuota);
  e << YAML::EndMap << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace kiln::kube
