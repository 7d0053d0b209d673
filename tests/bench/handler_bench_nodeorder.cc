// nodeorder's node_order and batch_node_order per scorer, JIT vs C++ (handler_bench.h).

#include "tests/bench/handler_bench.h"

namespace kiln::bench {
namespace {

// ============================================================================================
// nodeorder: node_order (per scorer)

class NativeNodeOrder : public Plugin {
 public:
  explicit NativeNodeOrder(const PluginOption& o)
      : least_(ArgInt(o, "leastrequested.weight", 1)),
        most_(ArgInt(o, "mostrequested.weight", 0)),
        node_affinity_(ArgInt(o, "nodeaffinity.weight", 2)),
        pod_affinity_(ArgInt(o, "podaffinity.weight", 2)),
        balanced_(ArgInt(o, "balancedresource.weight", 1)),
        taint_(ArgInt(o, "tainttoleration.weight", 3)),
        image_(ArgInt(o, "imagelocality.weight", 1)),
        spread_(ArgInt(o, "podtopologyspread.weight", 2)),
        gpu_(Rid("nvidia.com/gpu")) {}

  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    session_ = &ssn;
    const auto& nodes = ssn.cluster().nodes();
    // Kubernetes' NonZeroRequested per node (what node.nonzero_requested will hold).
    nonzero_cpu_.assign(nodes.size(), 0.0);
    nonzero_memory_.assign(nodes.size(), 0.0);
    for (const Node* n : nodes)
      for (const Task* t : n->tasks) {
        nonzero_cpu_[n->index] += NonZero(t->resreq().cpu(), kDefaultMilliCpu);
        nonzero_memory_[n->index] += NonZero(t->resreq().memory(), kDefaultMemory);
      }
    if (image_ != 0) {
      node_total_ = static_cast<int64_t>(nodes.size());
      for (const Node* n : nodes)
        for (const auto& [image, size] : n->images) image_nodes_[image] += 1;
    }
    return RegisterHandlers<ExtensionPoint::NodeOrder, ExtensionPoint::BatchNodeOrder>(
        ssn, self, this, &NodeOrder, &BatchNodeOrder);
  }

  static int32_t NodeOrder(void* ctx, const Task* task, const Node* node, double* out) {
    const auto& self = *static_cast<const NativeNodeOrder*>(ctx);
    int64_t score = 0;
    if (self.least_ != 0 || self.most_ != 0) {
      const double cpu_req =
          NonZero(task->resreq().cpu(), kDefaultMilliCpu) + self.nonzero_cpu_[node->index];
      const double mem_req =
          NonZero(task->resreq().memory(), kDefaultMemory) + self.nonzero_memory_[node->index];
      const int64_t cpu_cap = IntOf(node->allocatable.cpu());
      const int64_t mem_cap = IntOf(node->allocatable.memory());
      if (self.least_ != 0)
        score += FitScore(IntOf(cpu_req), IntOf(mem_req), cpu_cap, mem_cap, false) * self.least_;
      if (self.most_ != 0)
        score += FitScore(IntOf(cpu_req), IntOf(mem_req), cpu_cap, mem_cap, true) * self.most_;
    }
    if (self.balanced_ != 0 &&
        (task->resreq().cpu() != 0.0 || task->resreq().memory() != 0.0 ||
         task->resreq().Get(self.gpu_) != 0.0))
      score += self.BalancedScore(task, node) * self.balanced_;
    if (self.image_ != 0 && !task->images().empty() && !node->images.empty())
      score += self.ImageScore(task, node) * self.image_;
    *out = static_cast<double>(score);
    return 0;
  }

  static int32_t BatchNodeOrder(void* ctx, const Task* task, const Node* const* nodes, size_t n,
                                double* out);

 private:
  static constexpr int64_t kMaxNodeScore = 100;
  static constexpr double kDefaultMilliCpu = 100.0;
  static constexpr double kDefaultMemory = 209715200.0;
  static constexpr int64_t kMinImageThreshold = 24117248;
  static constexpr int64_t kMaxImageThresholdPerContainer = 1048576000;

  static double NonZero(double request, double def) { return request > 0.0 ? request : def; }
  static int64_t LeastRequested(int64_t requested, int64_t capacity) {
    if (capacity == 0 || requested > capacity) return 0;
    return (capacity - requested) * kMaxNodeScore / capacity;
  }
  static int64_t MostRequested(int64_t requested, int64_t capacity) {
    if (capacity == 0) return 0;
    const int64_t r = requested > capacity ? capacity : requested;
    return r * kMaxNodeScore / capacity;
  }
  static int64_t FitScore(int64_t cpu_req, int64_t mem_req, int64_t cpu_cap, int64_t mem_cap,
                          bool most) {
    int64_t score = 0, weights = 0;
    if (cpu_cap != 0) {
      score += most ? MostRequested(cpu_req, cpu_cap) : LeastRequested(cpu_req, cpu_cap);
      weights += 1;
    }
    if (mem_cap != 0) {
      score += most ? MostRequested(mem_req, mem_cap) : LeastRequested(mem_req, mem_cap);
      weights += 1;
    }
    return weights == 0 ? 0 : score / weights;
  }
  static double Fraction(double used, double pipelined, double request, double capacity) {
    return std::min(1.0, (used + pipelined + request) / capacity);
  }
  int64_t BalancedScore(const Task* task, const Node* node) const {
    const Resource& a = node->allocatable;
    const bool has_cpu = a.cpu() != 0.0;
    const bool has_mem = a.memory() != 0.0;
    const double cpu =
        has_cpu ? Fraction(node->used.cpu(), node->pipelined.cpu(), task->resreq().cpu(), a.cpu())
                : 0.0;
    const double mem = has_mem ? Fraction(node->used.memory(), node->pipelined.memory(),
                                          task->resreq().memory(), a.memory())
                               : 0.0;
    const double gpu_request = task->resreq().Get(gpu_);
    if (gpu_request == 0.0 || a.Get(gpu_) == 0.0) {
      if (has_cpu && has_mem)
        return IntOf((1.0 - std::fabs((cpu - mem) / 2.0)) * static_cast<double>(kMaxNodeScore));
      return kMaxNodeScore;
    }
    const double gpu =
        Fraction(node->used.Get(gpu_), node->pipelined.Get(gpu_), gpu_request, a.Get(gpu_));
    double std_dev = 0.0;
    if (has_cpu && has_mem) {
      const double mean = (cpu + mem + gpu) / 3.0;
      std_dev = kiln_std_sqrt(((cpu - mean) * (cpu - mean) + (mem - mean) * (mem - mean) +
                               (gpu - mean) * (gpu - mean)) /
                              3.0);
    } else if (has_cpu) {
      std_dev = std::fabs((cpu - gpu) / 2.0);
    } else if (has_mem) {
      std_dev = std::fabs((mem - gpu) / 2.0);
    }
    return IntOf((1.0 - std_dev) * static_cast<double>(kMaxNodeScore));
  }
  int64_t ImageScore(const Task* task, const Node* node) const {
    int64_t sum_scores = 0;
    std::string name;
    for (const std::string& image : task->images()) {
      // Kubernetes names an untagged image `name:latest`.
      size_t slash = image.rfind('/');
      std::string_view last = std::string_view(image).substr(slash == std::string::npos ? 0 : slash + 1);
      name = image;
      if (last.find(':') == std::string_view::npos) name += ":latest";
      auto it = node->images.find(name);
      if (it == node->images.end()) continue;
      auto spread = image_nodes_.find(name);
      const int64_t holders = spread == image_nodes_.end() ? 0 : spread->second;
      sum_scores += IntOf(static_cast<double>(it->second) * static_cast<double>(holders) /
                          static_cast<double>(node_total_));
    }
    const int64_t max_threshold =
        kMaxImageThresholdPerContainer * static_cast<int64_t>(task->images().size());
    if (sum_scores < kMinImageThreshold) sum_scores = kMinImageThreshold;
    else if (sum_scores > max_threshold) sum_scores = max_threshold;
    return kMaxNodeScore * (sum_scores - kMinImageThreshold) / (max_threshold - kMinImageThreshold);
  }

  int64_t least_, most_, node_affinity_, pod_affinity_, balanced_, taint_, image_, spread_;
  ResourceId gpu_;
  const Session* session_ = nullptr;
  std::vector<double> nonzero_cpu_, nonzero_memory_;
  std::map<std::string, int64_t, std::less<>> image_nodes_;
  int64_t node_total_ = 0;
};

namespace nodeorder_batch {

constexpr int64_t kMax = 100;
constexpr std::string_view kHostname = "kubernetes.io/hostname";

// Kubernetes' DefaultNormalizeScore: the highest raw score maps to 100 (reversed: to 0).
void DefaultNormalize(std::vector<int64_t>& raw, bool reverse) {
  int64_t top = 0;
  bool first = true;
  for (int64_t s : raw) {
    if (first || s > top) top = s;
    first = false;
  }
  for (int64_t& s : raw) {
    if (top == 0) s = reverse ? kMax : 0;
    else s = reverse ? kMax - kMax * s / top : kMax * s / top;
  }
}

bool HasAllKeys(const Node* n, const std::vector<const std::string*>& keys) {
  for (const std::string* k : keys)
    if (!n->labels.count(*k)) return false;
  return true;
}

int64_t MatchingPods(const Node* n, const std::optional<LabelSelector>& sel, const std::string& ns) {
  if (!sel) return 0;
  int64_t c = 0;
  for (const Task* p : n->tasks)
    if (p->namespace_ == ns && !p->deleting && kiln_std_selector_matches_task(&*sel, p)) ++c;
  return c;
}


// InterPodAffinity's PreScore table, keyed "topology key\nvalue", and the keys in first-use order.
struct Topo {
  std::unordered_map<std::string, int64_t> table;
  std::vector<std::string> keys;
  std::string buf;

  void Add(const std::string& key, const std::string& value, int64_t delta) {
    buf.assign(key);
    buf += '\n';
    buf += value;
    table[buf] += delta;
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  int64_t Score(const Node* n) {
    int64_t score = 0;
    for (const std::string& key : keys)
      if (const std::string* v = Label(n->labels, key)) {
        buf.assign(key);
        buf += '\n';
        buf += *v;
        auto it = table.find(buf);
        score += it == table.end() ? 0 : it->second;
      }
    return score;
  }
};

int64_t PodsMatchingTerm(const PodAffinityTerm& term, const Task* owner, const Node* n) {
  int64_t c = 0;
  for (const Task* p : n->tasks)
    if (kiln_std_term_matches_pod(&term, owner, p)) ++c;
  return c;
}

}  // namespace nodeorder_batch

int32_t NativeNodeOrder::BatchNodeOrder(void* ctx, const Task* task, const Node* const* nodes,
                                        size_t n, double* out) {
  using namespace nodeorder_batch;
  const auto& self = *static_cast<const NativeNodeOrder*>(ctx);
  std::vector<int64_t> scores(n, 0);
  const auto& na = task->affinity().node_affinity;
  if (self.node_affinity_ != 0 && na && !na->preferred.empty()) {
    std::vector<int64_t> raw(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (const PreferredSchedulingTerm& p : na->preferred)
        if (p.weight != 0 && kiln_std_term_matches_node(&p.preference, nodes[i])) raw[i] += p.weight;
    DefaultNormalize(raw, false);
    for (size_t i = 0; i < n; ++i) scores[i] += raw[i] * self.node_affinity_;
  }
  if (self.taint_ != 0) {
    std::vector<const Toleration*> tolerations;
    for (const Toleration& t : task->tolerations())
      if (t.effect.empty() || t.effect == "PreferNoSchedule") tolerations.push_back(&t);
    std::vector<int64_t> raw(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (const Taint& taint : nodes[i]->taints) {
        if (taint.effect != "PreferNoSchedule") continue;
        bool tolerated = false;
        for (const Toleration* tol : tolerations)
          if (kiln_std_tolerates(tol, &taint)) {
            tolerated = true;
            break;
          }
        if (!tolerated) ++raw[i];
      }
    DefaultNormalize(raw, true);
    for (size_t i = 0; i < n; ++i) scores[i] += raw[i] * self.taint_;
  }
  if (self.pod_affinity_ != 0) {
    Topo topo;
    const Cluster& cluster = self.session_->cluster();
    auto own = [&](const std::vector<WeightedPodAffinityTerm>& terms, int64_t sign) {
      for (const WeightedPodAffinityTerm& w : terms) {
        const std::string& key = w.term.topology_key;
        for (const Node* node : cluster.nodes())
          if (const std::string* v = Label(node->labels, key)) {
            const int64_t matched = PodsMatchingTerm(w.term, task, node);
            if (matched > 0) topo.Add(key, *v, sign * matched * w.weight);
          }
      }
    };
    if (task->affinity().pod_affinity) own(task->affinity().pod_affinity->preferred, 1);
    if (task->affinity().pod_anti_affinity) own(task->affinity().pod_anti_affinity->preferred, -1);
    for (const Node* node : cluster.affinity_nodes()) {
      if (node->labels.empty()) continue;
      for (const Task* p : node->affinity_tasks) {
        auto theirs = [&](const std::optional<PodAffinity>& a, int64_t sign) {
          if (!a) return;
          for (const WeightedPodAffinityTerm& w : a->preferred)
            if (kiln_std_term_matches_pod(&w.term, p, task))
              if (const std::string* v = Label(node->labels, w.term.topology_key))
                topo.Add(w.term.topology_key, *v, sign * w.weight);
        };
        theirs(p->affinity().pod_affinity, 1);
        theirs(p->affinity().pod_anti_affinity, -1);
      }
    }
    if (!topo.table.empty()) {
      std::vector<int64_t> raw(n);
      for (size_t i = 0; i < n; ++i) raw[i] = topo.Score(nodes[i]);
      const int64_t lo = *std::min_element(raw.begin(), raw.end());
      const int64_t hi = *std::max_element(raw.begin(), raw.end());
      for (size_t i = 0; i < n; ++i) {
        const int64_t norm =
            hi - lo <= 0 ? 0
                         : IntOf(static_cast<double>(kMax) *
                                 (static_cast<double>(raw[i] - lo) / static_cast<double>(hi - lo)));
        scores[i] += norm * self.pod_affinity_;
      }
    }
  }
  std::vector<const TopologySpreadConstraint*> constraints;
  for (const auto& c : task->topology_spread_constraints())
    if (c.when_unsatisfiable == "ScheduleAnyway") constraints.push_back(&c);
  if (self.spread_ != 0 && !constraints.empty()) {
    std::vector<const std::string*> keys;
    for (const auto* c : constraints) keys.push_back(&c->topology_key);
    std::vector<bool> counted(n);
    int64_t counted_nodes = 0;
    for (size_t i = 0; i < n; ++i) counted_nodes += (counted[i] = HasAllKeys(nodes[i], keys));
    std::vector<double> raw(n, 0.0);
    for (const TopologySpreadConstraint* c : constraints) {
      std::map<std::string, int64_t, std::less<>> counts;
      int64_t domains = counted_nodes;
      const bool by_host = c->topology_key == kHostname;
      if (!by_host) {
        for (size_t i = 0; i < n; ++i)
          if (HasAllKeys(nodes[i], keys)) {
            const std::string* v = Label(nodes[i]->labels, c->topology_key);
            counts[v ? *v : std::string()] += 0;
          }
        domains = static_cast<int64_t>(counts.size());
        for (const Node* node : self.session_->cluster().nodes())
          if (const std::string* v = Label(node->labels, c->topology_key)) {
            auto it = counts.find(*v);
            if (it != counts.end() && HasAllKeys(node, keys) && SpreadIncludes(*c, task, node))
              it->second += MatchingPods(node, c->label_selector, task->namespace_);
          }
      }
      const double weight = kiln_std_log(static_cast<double>(domains + 2));
      for (size_t i = 0; i < n; ++i) {
        double added = 0.0;
        if (HasAllKeys(nodes[i], keys)) {
          int64_t count;
          if (by_host) {
            count = MatchingPods(nodes[i], c->label_selector, task->namespace_);
          } else {
            const std::string* v = Label(nodes[i]->labels, c->topology_key);
            auto it = counts.find(v ? std::string_view(*v) : std::string_view());
            count = it == counts.end() ? 0 : it->second;
          }
          added = static_cast<double>(count) * weight + static_cast<double>(c->max_skew - 1);
        }
        raw[i] = raw[i] + added;
      }
    }
    std::vector<int64_t> rounded(n);
    int64_t lo = 0, hi = 0;
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      rounded[i] = IntOf(kiln_std_round(raw[i]));
      if (!counted[i]) continue;
      if (first || rounded[i] < lo) lo = rounded[i];
      if (first || rounded[i] > hi) hi = rounded[i];
      first = false;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!counted[i]) continue;
      scores[i] += hi == 0 ? kMax * self.spread_ : kMax * (hi + lo - rounded[i]) / hi * self.spread_;
    }
  }
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(scores[i]);
  return 0;
}

const char* const kLeastArgs =
    "      leastrequested.weight: 1\n      mostrequested.weight: 0\n"
    "      balancedresource.weight: 0\n      imagelocality.weight: 0\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n";
const char* const kMostArgs =
    "      leastrequested.weight: 0\n      mostrequested.weight: 1\n"
    "      balancedresource.weight: 0\n      imagelocality.weight: 0\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n";
const char* const kBalancedArgs =
    "      leastrequested.weight: 0\n      mostrequested.weight: 0\n"
    "      balancedresource.weight: 1\n      imagelocality.weight: 0\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n";
const char* const kImageArgs =
    "      leastrequested.weight: 0\n      mostrequested.weight: 0\n"
    "      balancedresource.weight: 0\n      imagelocality.weight: 1\n"
    "      nodeaffinity.weight: 0\n      tainttoleration.weight: 0\n"
    "      podaffinity.weight: 0\n      podtopologyspread.weight: 0\n";

PairSession& NodeOrderPair(const char* name, const char* args) {
  return Pair(std::string("nodeorder/") + name, "nodeorder", args, Make<NativeNodeOrder>(),
              &CheckNodeOrder);
}

KILN_NODE_ORDER_PAIR(NodeOrderLeastRequested, NodeOrderPair("least", kLeastArgs), NativeNodeOrder,
                     BenchTask::Plain)
KILN_NODE_ORDER_PAIR(NodeOrderMostRequested, NodeOrderPair("most", kMostArgs), NativeNodeOrder,
                     BenchTask::Plain)
KILN_NODE_ORDER_PAIR(NodeOrderBalancedResource, NodeOrderPair("balanced", kBalancedArgs),
                     NativeNodeOrder, BenchTask::Gpu)
KILN_NODE_ORDER_PAIR(NodeOrderImageLocality, NodeOrderPair("image", kImageArgs), NativeNodeOrder,
                     BenchTask::BestEffort)

// ---- nodeorder: batch_node_order per scorer ----

std::string OnlyWeight(const char* scorer) {
  std::string out;
  for (const char* w : {"leastrequested", "mostrequested", "balancedresource", "imagelocality",
                        "nodeaffinity", "tainttoleration", "podaffinity", "podtopologyspread"})
    out += fmt::format("      {}.weight: {}\n", w, std::string_view(w) == scorer ? 2 : 0);
  return out;
}

void CheckBatchNodeOrder(PairSession& p, const std::string& key) {
  std::vector<Node*> nodes(p.cluster().nodes().begin(), p.cluster().nodes().end());
  int nonzero = 0;
  for (BenchTask bt : kBenchTasks) {
    const Task* t = p.task(bt);
    std::string error;
    auto each = p.session->BatchNodeOrderEach(t, nodes, &error);
    if (!error.empty() || each.size() != 2) Mismatch(key, "batch_node_order failed: " + error);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (each[0].second[i] != each[1].second[i])
        Mismatch(key, fmt::format("batch_node_order({})[{}]: jit {} native {}", t->uid,
                                  nodes[i]->name, each[0].second[i], each[1].second[i]));
      nonzero += each[0].second[i] != 0;
    }
  }
  if (nonzero == 0) Mismatch(key, "every score is 0: the check proves nothing");
}

PairSession& BatchPair(const char* scorer) {
  return Pair(std::string("nodeorder-batch/") + scorer, "nodeorder", OnlyWeight(scorer),
              Make<NativeNodeOrder>(), &CheckBatchNodeOrder);
}

void BatchBench(benchmark::State& s, const char* scorer, BenchTask bt, bool jit) {
  auto& p = BatchPair(scorer);
  auto nodes = AllNodes(p);
  std::vector<double> scores(nodes.size());
  const Task* t = p.task(bt);
  auto fn = jit ? p.jit->Fn<ExtensionPoint::BatchNodeOrder>()
                : HandlerFn<ExtensionPoint::BatchNodeOrder>(&NativeNodeOrder::BatchNodeOrder);
  void* ctx = jit ? p.jit->ctx() : static_cast<void*>(static_cast<NativeNodeOrder*>(p.native));
  decltype(fn) volatile target = fn;
  for (auto _ : s) {
    std::fill(scores.begin(), scores.end(), 0.0);
    benchmark::DoNotOptimize(target(ctx, t, nodes.data(), nodes.size(), scores.data()));
  }
  s.counters["calls"] = 1;
  // A label, not a counter: --benchmark_format=csv aborts when a run has a counter the first
  // run's header lacks.
  s.SetLabel(std::to_string(nodes.size()) + " nodes");
}

#define KILN_BATCH_PAIR(Name, scorer, task)                                                     \
  void BM_Jit##Name(benchmark::State& s) { BatchBench(s, scorer, task, true); }                 \
  void BM_Native##Name(benchmark::State& s) { BatchBench(s, scorer, task, false); }             \
  BENCHMARK(BM_Jit##Name)->Unit(benchmark::kMicrosecond);                                       \
  BENCHMARK(BM_Native##Name)->Unit(benchmark::kMicrosecond);

KILN_BATCH_PAIR(BatchNodeOrderNodeAffinity, "nodeaffinity", BenchTask::Selector)
KILN_BATCH_PAIR(BatchNodeOrderTaintToleration, "tainttoleration", BenchTask::Selector)
KILN_BATCH_PAIR(BatchNodeOrderPodAffinity, "podaffinity", BenchTask::Affinity)
KILN_BATCH_PAIR(BatchNodeOrderPodTopologySpread, "podtopologyspread", BenchTask::Affinity)

}  // namespace
}  // namespace kiln::bench
