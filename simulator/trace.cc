#include "simulator/trace.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "runtime/hyper_node.h"

namespace kiln {

namespace {

// gangsByTier: per job with pods on nodes, the tier of the lowest HyperNode holding them all.
std::vector<std::pair<int64_t, int>> GangTiers(
    const ClusterSpec& cluster,
    const std::unordered_map<std::string, std::vector<size_t>>& nodes_of_job) {
  std::vector<HyperNodeTree::NodeRef> refs;
  refs.reserve(cluster.nodes.size());
  for (const NodeSpec& n : cluster.nodes) refs.push_back({n.name, &n.labels, nullptr});
  std::unique_ptr<HyperNodeTree> tree = HyperNodeTree::Resolve(cluster.hyper_nodes, refs, nullptr);
  auto holds = [](const HyperNode* h, size_t i) {
    return i / 64 < h->node_bits.size() && (h->node_bits[i / 64] >> (i % 64) & 1u);
  };
  std::map<int64_t, int> counts;
  for (const auto& [job, idx] : nodes_of_job) {
    const HyperNode* lowest = nullptr;
    for (const HyperNode* h : tree->all())
      if (holds(h, idx.front()) && (lowest == nullptr || h->tier < lowest->tier)) lowest = h;
    const HyperNode* span = tree->top();
    for (const HyperNode* h = lowest; h != nullptr; h = h->parent) {
      if (std::all_of(idx.begin(), idx.end(), [&](size_t i) { return holds(h, i); })) {
        span = h;
        break;
      }
    }
    ++counts[span->tier];
  }
  return {counts.begin(), counts.end()};
}

bool OccupiesNode(const PodSpec& pod) {
  if (pod.node.empty()) return false;
  return pod.phase == PodPhase::Running || pod.phase == PodPhase::Pending ||
         pod.phase == PodPhase::Unknown;
}

}  // namespace

SessionMetrics MeasureCluster(const ClusterSpec& cluster, TimeNs time,
                              const std::map<std::string, Resource>& deserved) {
  SessionMetrics m;
  m.time = time;
  std::unordered_map<std::string_view, size_t> node_index;
  node_index.reserve(cluster.nodes.size());
  std::vector<Resource> used(cluster.nodes.size());
  uint32_t dims = 0;
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    node_index.emplace(cluster.nodes[i].name, i);
    dims |= cluster.nodes[i].allocatable.present();
  }
  dims &= ~(1u << kPods);
  // namespace → PodGroup → queue name (views: no string is built per pod).
  std::unordered_map<std::string_view, std::unordered_map<std::string_view, const std::string*>>
      queue_of;
  for (const PodGroupSpec& g : cluster.pod_groups) queue_of[g.namespace_][g.name] = &g.queue;
  for (const QueueSpec& q : cluster.queues) {
    QueueMetrics& qm = m.queues[q.name];
    if (auto it = deserved.find(q.name); it != deserved.end()) qm.deserved = it->second;
  }
  // Pending requests per resource, for the fragmentation's median.
  std::vector<std::vector<double>> pending_requests(kMaxResources);
  // The nodes of each job's pods (gangsByTier; only with HyperNodes).
  const bool topology = !cluster.hyper_nodes.empty();
  std::unordered_map<std::string, std::vector<size_t>> nodes_of_job;
  for (const PodSpec& pod : cluster.pods) {
    const std::string* queue = nullptr;
    if (!pod.foreign)
      if (auto ns = queue_of.find(pod.namespace_); ns != queue_of.end())
        if (auto it = ns->second.find(pod.group); it != ns->second.end()) queue = it->second;
    auto qit = queue ? m.queues.find(*queue) : m.queues.end();
    if (OccupiesNode(pod)) {
      auto n = node_index.find(pod.node);
      if (n == node_index.end()) continue;  // a node that does not exist: occupies nothing
      used[n->second].Add(pod.requests);
      if (topology && !pod.foreign) nodes_of_job[pod.JobUid()].push_back(n->second);
      if (pod.phase == PodPhase::Running) ++m.running;
      if (qit != m.queues.end()) qit->second.allocated.Add(pod.requests);
    } else if (pod.phase == PodPhase::Pending && !pod.foreign) {
      ++m.pending;
      if (qit != m.queues.end()) ++qit->second.pending;
      ForEachBit(pod.requests.present() & dims, [&](ResourceId id) {
        if (double v = pod.requests.Get(id); v > 0) pending_requests[id].push_back(v);
      });
    }
  }
  ForEachBit(dims, [&](ResourceId id) {
    std::string name(ResourceRegistry::Name(id));
    double total = 0, allocated = 0;
    for (size_t i = 0; i < cluster.nodes.size(); ++i) {
      total += cluster.nodes[i].allocatable.Get(id);
      allocated += used[i].Get(id);
    }
    m.utilisation.emplace_back(name, total > 0 ? allocated / total : 0.0);
    std::vector<double>& reqs = pending_requests[id];
    if (reqs.empty()) return;
    std::sort(reqs.begin(), reqs.end());
    double median = reqs[(reqs.size() + 1) / 2 - 1];
    double free_total = 0, stranded = 0;
    for (size_t i = 0; i < cluster.nodes.size(); ++i) {
      double free = std::max(0.0, cluster.nodes[i].allocatable.Get(id) - used[i].Get(id));
      free_total += free;
      if (free < median) stranded += free;
    }
    m.fragmentation.emplace_back(std::move(name), free_total > 0 ? stranded / free_total : 0.0);
  });
  if (topology) m.gang_tiers = GangTiers(cluster, nodes_of_job);
  return m;
}

double NearestRankPercentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

namespace {

void Fill(WaitingStats& s, std::vector<double>& w) {
  std::sort(w.begin(), w.end());
  s.jobs = static_cast<int>(w.size());
  double sum = 0;
  for (double x : w) sum += x;
  s.mean = sum / static_cast<double>(w.size());
  s.p50 = NearestRankPercentile(w, 50);
  s.p95 = NearestRankPercentile(w, 95);
  s.max = w.back();
}

}  // namespace

void Summarize(const std::vector<SessionMetrics>& samples, DurationNs period,
               TraceSummary& summary) {
  std::map<std::string, std::vector<double>> waits;
  std::map<std::pair<std::string, std::string>, std::vector<double>> waits_by_mode;
  const bool any_topology = std::any_of(summary.jobs.begin(), summary.jobs.end(),
                                        [](const JobRecord& j) { return j.topology != "none"; });
  summary.queues_by_topology.clear();
  for (const JobRecord& j : summary.jobs) {
    WaitingStats& s = summary.queues[j.queue];
    WaitingStats* by_mode = any_topology ? &summary.queues_by_topology[j.queue][j.topology] : nullptr;
    if (!j.first_bind) {
      ++s.not_started;
      if (by_mode) ++by_mode->not_started;
      continue;
    }
    double wait = static_cast<double>(*j.first_bind - j.arrival) / 1e9;
    waits[j.queue].push_back(wait);
    if (by_mode) waits_by_mode[{j.queue, j.topology}].push_back(wait);
  }
  for (auto& [queue, w] : waits) Fill(summary.queues[queue], w);
  for (auto& [key, w] : waits_by_mode) Fill(summary.queues_by_topology[key.first][key.second], w);
  // Time-weighted mean utilisation: each sample holds until the next one.
  std::map<std::string, double> weighted;
  std::vector<std::string> order;
  double span = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    DurationNs held =
        i + 1 < samples.size() ? samples[i + 1].time - samples[i].time : period;
    double w = static_cast<double>(held);
    span += w;
    for (const auto& [name, u] : samples[i].utilisation) {
      if (!weighted.count(name)) order.push_back(name);
      weighted[name] += u * w;
    }
  }
  summary.mean_utilisation.clear();
  for (const std::string& name : order)
    summary.mean_utilisation.emplace_back(name, span > 0 ? weighted[name] / span : 0.0);
}

}  // namespace kiln
