// The hot handlers of the built-in policies, JIT-compiled vs the same algorithm hand-written in
// C++ (issue #15's goal: JIT/C++ ≤ 1.05 on every built-in handler).
//
// Pairs are named BM_Jit<X> / BM_Native<X>; tests/bench/handler_ratios.py runs them and prints
// `handler | jit ns | native ns | ratio` (ns per handler call: the benchmarks that loop over a
// node or job list report the number of calls per iteration in the `calls` counter).
//
// What is compared — like-for-like, as in jit_bench.cc:
//  * Both sides live in one open session (bench_session.h: PairSession) on the fixed cluster
//    (300 nodes, 6000 placed pods, 600 jobs, 4 queues), registered side by side in one tier; the
//    JIT side is the built-in policy with the arguments of the benchmark's conf, the native side
//    a C++ plugin reading the same runtime objects and doing the policy's algorithm with the same
//    arithmetic (float/int conversions, summation order, Volcano's Resource methods behind the
//    stdlib's resource natives, the stdlib's Kubernetes matchers where the policy calls them).
//  * The timed loop calls each side's raw handler through a volatile function pointer with its
//    context, exactly as the session's dispatchers do; the session's CallScope is not included.
//  * Natural C++ data structures: per-object state in arrays indexed by the objects' dense
//    indexes (the runtime gives every object one for this), string-keyed state in std::map, ids
//    of resource names looked up once at open. Where the JIT does more work for the same answer
//    (a map lookup, a host call per field), the ratio shows it: that is what it is for.
//  * Before any timing, Check* runs both sides on every input of the benchmark and aborts the
//    process on the first difference (the ctest smoke run relies on this), so the ratio compares
//    equal work.
//
// nodeorder's leastrequested/mostrequested: the C++ side reads the per-node Σ of the placed pods'
// non-zero cpu/memory requests from an array computed once at open (Kubernetes' NonZeroRequested,
// which the runtime is to maintain as `node.nonzero_requested`); the policy on this branch still
// sums node.tasks per call, so that pair's ratio measures the loop the new field removes.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "stdlib/k8s_natives.h"
#include "stdlib/natives.h"
#include "tests/bench/bench_session.h"

namespace kiln::bench {
namespace {

// ---- helpers mirroring the language's conversions and resource operators --------------------

// int(x) on a float: truncates toward zero, NaN → 0, saturates (codegen's fptosi.sat).
int64_t IntOf(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (x <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

// The language's `a - b` on Resources (kiln_rt_res_sub): never below zero per dimension.
Resource LangSub(const Resource& a, const Resource& b) {
  Resource out = a;
  out.SubWithoutAssert(b);
  for (double& v : out.values)
    if (v < 0) v = 0;
  return out;
}

Resource LangAdd(const Resource& a, const Resource& b) {
  Resource out = a;
  out.Add(b);
  return out;
}

const ConfValue* FindArg(const PluginOption& o, std::string_view key) {
  for (const auto& [k, v] : o.arguments)
    if (k == key) return &v;
  return nullptr;
}
int64_t ArgInt(const PluginOption& o, std::string_view key, int64_t def) {
  const ConfValue* v = FindArg(o, key);
  if (!v) return def;
  if (auto* i = std::get_if<int64_t>(&v->value)) return *i;
  Die("argument " + std::string(key) + " is not an int");
}
std::string ArgString(const PluginOption& o, std::string_view key, std::string def) {
  const ConfValue* v = FindArg(o, key);
  if (!v) return def;
  if (auto* s = std::get_if<std::string>(&v->value)) return *s;
  return v->text;
}

ResourceId Rid(std::string_view name) {
  auto id = ResourceRegistry::Intern(name);
  if (!id.ok()) Die("resource registry full");
  return *id;
}

// A label's value, or null when the map has no such key.
const std::string* Label(const StringMap& labels, std::string_view key) {
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

// Topology spread's node inclusion policies (predicates and nodeorder both define it):
// nodeAffinityPolicy Honor (default) keeps nodes the pod's required affinity admits;
// nodeTaintsPolicy Honor keeps nodes whose NoSchedule/NoExecute taints it tolerates.
bool SpreadIncludes(const TopologySpreadConstraint& c, const Task* task, const Node* n) {
  if (c.node_affinity_policy != "Ignore" && !kiln_std_required_node_affinity_matches(task, n))
    return false;
  if (c.node_taints_policy == "Honor")
    for (const Taint& taint : n->taints)
      if ((taint.effect == "NoSchedule" || taint.effect == "NoExecute") &&
          !kiln_std_task_tolerates(task, &taint))
        return false;
  return true;
}

// The timed loops: one handler call per element (per node, per job pair, ...), through a volatile
// function pointer; the `calls` counter (calls per iteration) lets handler_ratios.py report ns
// per call.
template <typename Fn>
void PerNode(benchmark::State& state, Fn fn, void* ctx, const Task* t,
             const std::vector<const Node*>& nodes) {
  Fn volatile target = fn;
  for (auto _ : state)
    for (const Node* n : nodes) {
      if constexpr (std::is_same_v<Fn, HandlerFn<ExtensionPoint::NodeOrder>>) {
        double score = 0;
        benchmark::DoNotOptimize(target(ctx, t, n, &score));
        benchmark::DoNotOptimize(score);
      } else {
        benchmark::DoNotOptimize(target(ctx, t, n, static_cast<KStatusOut*>(nullptr)));
      }
    }
  state.counters["calls"] = static_cast<double>(nodes.size());
}

std::vector<const Node*> AllNodes(PairSession& p) {
  return {p.cluster().nodes().begin(), p.cluster().nodes().end()};
}

// ============================================================================================
// binpack

class NativeBinpack : public Plugin {
 public:
  explicit NativeBinpack(const PluginOption& o)
      : weight_(ArgInt(o, "binpack.weight", 1)),
        cpu_weight_(ArgInt(o, "binpack.cpu", 1)),
        memory_weight_(ArgInt(o, "binpack.memory", 1)) {
    // session_open: the listed resources (weights from binpack.resources.<name>, 1 by default,
    // negative → 1), then cpu and memory, in first-insertion order.
    std::vector<std::pair<std::string, int64_t>> weights;
    auto put = [&](const std::string& name, int64_t w) {
      for (auto& [n, v] : weights)
        if (n == name) {
          v = w;
          return;
        }
      weights.emplace_back(name, w);
    };
    std::string list = ArgString(o, "binpack.resources", "");
    size_t start = 0;
    for (;;) {
      size_t end = list.find(',', start);
      std::string name = list.substr(start, end == std::string::npos ? end : end - start);
      name.erase(0, name.find_first_not_of(" \t\n\r"));
      name.erase(name.find_last_not_of(" \t\n\r") + 1);
      if (!name.empty()) {
        int64_t w = ArgInt(o, "binpack.resources." + name, 1);
        put(name, w < 0 ? 1 : w);
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
    put("cpu", cpu_weight_ < 0 ? 1 : cpu_weight_);
    put("memory", memory_weight_ < 0 ? 1 : memory_weight_);
    for (auto& [n, w] : weights) weighted_.push_back({Rid(n), w});
  }
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.Register<ExtensionPoint::NodeOrder>(self, this, &NodeOrder);
    return Status::Ok();
  }

  static int32_t NodeOrder(void* ctx, const Task* task, const Node* node, double* out) {
    const auto& self = *static_cast<const NativeBinpack*>(ctx);
    if (self.weight_ == 0) {
      *out = 0.0;
      return 0;
    }
    double score = 0.0;
    int64_t weight_sum = 0;
    for (const Weighted& r : self.weighted_) {
      const double request = task->resreq.Get(r.id);
      if (request == 0.0) continue;
      const int64_t w = r.weight;
      const double capacity = node->allocatable.Get(r.id);
      if (capacity != 0.0 && w != 0) {
        const double used_finally = request + node->used.Get(r.id);
        if (used_finally > capacity) {
          *out = 0.0;
          return 0;
        }
        score += used_finally * static_cast<double>(w) / capacity;
      }
      weight_sum += w;
    }
    if (weight_sum > 0) score = score / static_cast<double>(weight_sum);
    *out = score * 100.0 * static_cast<double>(self.weight_);
    return 0;
  }

 private:
  struct Weighted {
    ResourceId id;
    int64_t weight;
  };
  int64_t weight_, cpu_weight_, memory_weight_;
  std::vector<Weighted> weighted_;
};

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
        nonzero_cpu_[n->index] += NonZero(t->resreq.cpu(), kDefaultMilliCpu);
        nonzero_memory_[n->index] += NonZero(t->resreq.memory(), kDefaultMemory);
      }
    if (image_ != 0) {
      node_total_ = static_cast<int64_t>(nodes.size());
      for (const Node* n : nodes)
        for (const auto& [image, size] : n->images) image_nodes_[image] += 1;
    }
    ssn.Register<ExtensionPoint::NodeOrder>(self, this, &NodeOrder);
    ssn.Register<ExtensionPoint::BatchNodeOrder>(self, this, &BatchNodeOrder);
    return Status::Ok();
  }

  static int32_t NodeOrder(void* ctx, const Task* task, const Node* node, double* out) {
    const auto& self = *static_cast<const NativeNodeOrder*>(ctx);
    int64_t score = 0;
    if (self.least_ != 0 || self.most_ != 0) {
      const double cpu_req =
          NonZero(task->resreq.cpu(), kDefaultMilliCpu) + self.nonzero_cpu_[node->index];
      const double mem_req =
          NonZero(task->resreq.memory(), kDefaultMemory) + self.nonzero_memory_[node->index];
      const int64_t cpu_cap = IntOf(node->allocatable.cpu());
      const int64_t mem_cap = IntOf(node->allocatable.memory());
      if (self.least_ != 0)
        score += FitScore(IntOf(cpu_req), IntOf(mem_req), cpu_cap, mem_cap, false) * self.least_;
      if (self.most_ != 0)
        score += FitScore(IntOf(cpu_req), IntOf(mem_req), cpu_cap, mem_cap, true) * self.most_;
    }
    if (self.balanced_ != 0 &&
        (task->resreq.cpu() != 0.0 || task->resreq.memory() != 0.0 ||
         task->resreq.Get(self.gpu_) != 0.0))
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
        has_cpu ? Fraction(node->used.cpu(), node->pipelined.cpu(), task->resreq.cpu(), a.cpu())
                : 0.0;
    const double mem = has_mem ? Fraction(node->used.memory(), node->pipelined.memory(),
                                          task->resreq.memory(), a.memory())
                               : 0.0;
    const double gpu_request = task->resreq.Get(gpu_);
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

// ============================================================================================
// drf: job_order and the share kept by allocate/deallocate

class NativeDrf : public Plugin {
 public:
  explicit NativeDrf(const PluginOption&) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    total_ = ssn.total_resource();
    const auto& jobs = ssn.cluster().jobs();
    alloc_.assign(jobs.size(), Resource{});
    share_.assign(jobs.size(), 0.0);
    for (const Job* job : jobs) {
      Resource a;
      for (const Task* t : job->tasks)
        if (AllocatedStatus(t->status)) a.Add(t->resreq);
      Set(job, a);
    }
    ssn.Register<ExtensionPoint::JobOrder>(self, this, &JobOrder);
    ssn.Register<ExtensionPoint::OnAllocate>(self, this, &Allocate);
    ssn.Register<ExtensionPoint::OnDeallocate>(self, this, &Deallocate);
    return Status::Ok();
  }
  static int32_t JobOrder(void* ctx, const Job* l, const Job* r) {
    const auto& self = *static_cast<const NativeDrf*>(ctx);
    const double ls = self.share_[l->index];
    const double rs = self.share_[r->index];
    if (ls == rs) return 0;
    if (ls < rs) return -1;
    return 1;
  }
  static void Allocate(void* ctx, const Task* task) {
    auto& self = *static_cast<NativeDrf*>(ctx);
    self.Set(task->job, LangAdd(self.alloc_[task->job->index], task->resreq));
  }
  static void Deallocate(void* ctx, const Task* task) {
    auto& self = *static_cast<NativeDrf*>(ctx);
    self.Set(task->job, LangSub(self.alloc_[task->job->index], task->resreq));
  }

 private:
  void Set(const Job* job, const Resource& a) {
    alloc_[job->index] = a;
    share_[job->index] = kiln_std_dominant_share(&a, &total_);
  }
  Resource total_;
  std::vector<Resource> alloc_;
  std::vector<double> share_;
};

// ============================================================================================
// proportion: queue_order, overused, allocatable

class NativeProportion : public Plugin {
 public:
  explicit NativeProportion(const PluginOption&) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    total_ = ssn.total_resource();
    const size_t nq = ssn.cluster().queues().size();
    allocated_.assign(nq, Resource{});
    request_.assign(nq, Resource{});
    guarantee_.assign(nq, Resource{});
    real_capability_.assign(nq, Resource{});
    deserved_.assign(nq, Resource{});
    share_.assign(nq, 0.0);
    std::vector<bool> added(nq, false);
    Resource total_guarantee;
    for (const Queue* q : ssn.cluster().queues())
      if (q->has_guarantee) total_guarantee.Add(q->guarantee);
    for (const Job* job : ssn.cluster().jobs()) {
      const Queue* q = job->queue;
      if (!added[q->index]) {
        added[q->index] = true;
        AddQueue(q, total_guarantee);
      }
      for (const Task* t : job->tasks) {
        if (AllocatedStatus(t->status)) {
          allocated_[q->index] = LangAdd(allocated_[q->index], t->resreq);
          request_[q->index] = LangAdd(request_[q->index], t->resreq);
        } else if (t->status == TaskStatus::Pending) {
          request_[q->index] = LangAdd(request_[q->index], t->resreq);
        }
      }
      // (inqueue/elastic feed only job_enqueueable, which is not benchmarked here.)
    }
    ComputeDeserved();
    ssn.Register<ExtensionPoint::QueueOrder>(self, this, &QueueOrder);
    ssn.Register<ExtensionPoint::Overused>(self, this, &Overused);
    ssn.Register<ExtensionPoint::Allocatable>(self, this, &Allocatable);
    return Status::Ok();
  }
  static int32_t QueueOrder(void* ctx, const Queue* l, const Queue* r) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    if (l->priority != r->priority) return l->priority > r->priority ? -1 : 1;
    const double ls = self.share_[l->index], rs = self.share_[r->index];
    if (ls == rs) return 0;
    return ls < rs ? -1 : 1;
  }
  static bool Overused(void* ctx, const Queue* q) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    return self.deserved_[q->index].LessEqual(self.allocated_[q->index], DimensionDefault::Zero);
  }
  static bool Allocatable(void* ctx, const Queue* q, const Task* task) {
    const auto& self = *static_cast<const NativeProportion*>(ctx);
    if (q->state != QueueState::Open) return false;
    const Resource future = LangAdd(self.allocated_[q->index], task->resreq);
    return future.LessEqualWithDimensionAndResourcesName(self.deserved_[q->index], task->resreq);
  }

 private:
  void AddQueue(const Queue* q, const Resource& total_guarantee) {
    queues_.push_back(q);
    guarantee_[q->index] = q->has_guarantee ? q->guarantee : Resource{};
    Resource real = LangAdd(total_.ExceededPart(total_guarantee), guarantee_[q->index]);
    if (q->has_capability) {
      Resource capability = q->capability;
      const Resource unlimited = Resource::Infinite();
      if (capability.cpu() <= 0.0) capability.Set(kCpu, unlimited.cpu());
      if (capability.memory() <= 0.0) capability.Set(kMemory, unlimited.memory());
      real.MinDimensionResource(capability, DimensionDefault::Infinity);
    }
    real_capability_[q->index] = real;
  }
  void UpdateShare(const Queue* q) {
    const Resource& d = deserved_[q->index];
    const Resource& a = allocated_[q->index];
    double s = 0.0;
    for (ResourceId id : d.ResourceNames()) s = std::max(s, kiln_std_share(a.Get(id), d.Get(id)));
    share_[q->index] = s;
  }
  void ComputeDeserved() {
    Resource remaining = total_;
    std::vector<bool> met(deserved_.size(), false);
    for (int round = 0; round < 1000; ++round) {
      int64_t total_weight = 0;
      for (const Queue* q : queues_)
        if (!met[q->index]) total_weight += q->weight;
      if (total_weight == 0) break;
      const Resource old_remaining = remaining;
      Resource increased, decreased;
      for (const Queue* q : queues_) {
        if (met[q->index]) continue;
        const Resource old = deserved_[q->index];
        Resource share = remaining;
        share.Multi(static_cast<double>(q->weight) / static_cast<double>(total_weight));
        Resource d = LangAdd(old, share);
        d.MinDimensionResource(real_capability_[q->index], DimensionDefault::Infinity);
        d.MinDimensionResource(request_[q->index], DimensionDefault::Zero);
        if (request_[q->index].LessEqual(d, DimensionDefault::Zero)) {
          met[q->index] = true;
        } else if (d.Equal(old, DimensionDefault::Zero)) {
          met[q->index] = true;
        }
        d.SetMax(guarantee_[q->index]);
        deserved_[q->index] = d;
        UpdateShare(q);
        increased = LangAdd(increased, d.ExceededPart(old));
        decreased = LangAdd(decreased, old.ExceededPart(d));
      }
      remaining = LangAdd(remaining, decreased).ExceededPart(increased);
      if (remaining.IsEmpty() || remaining.Equal(old_remaining, DimensionDefault::Zero)) break;
    }
  }

  Resource total_;
  std::vector<const Queue*> queues_;
  std::vector<Resource> allocated_, request_, guarantee_, real_capability_, deserved_;
  std::vector<double> share_;
};

// ============================================================================================
// resource-strategy-fit: node_order (strategies with a wildcard, SRA on)

struct RsfStrategy {
  bool most = false;
  int64_t weight = 1;
};

// The benchmark's conf, given to both sides (the YAML below and this table must agree; the check
// would catch it if they did not).
const char* const kRsfArgs =
    "      resourceStrategyFitWeight: 10\n"
    "      resources:\n"
    "        nvidia.com/*:\n"
    "          type: MostAllocated\n"
    "          weight: 3\n"
    "        cpu:\n"
    "          type: LeastAllocated\n"
    "          weight: 1\n"
    "        memory:\n"
    "          type: LeastAllocated\n"
    "          weight: 2\n"
    "      sra:\n"
    "        enable: true\n"
    "        resources: nvidia.com/gpu\n"
    "        weight: 5\n"
    "        resourceWeight:\n"
    "          nvidia.com/gpu: 2\n";

class NativeRsf : public Plugin {
 public:
  explicit NativeRsf(const PluginOption&) {
    strategies_ = {{"nvidia.com/*", {true, 3}}, {"cpu", {false, 1}}, {"memory", {false, 2}}};
    sra_weights_ = {{Rid("nvidia.com/gpu"), 2}};
    sra_weight_sum_ = 2;
    sra_weight_ = 5;
  }
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.Register<ExtensionPoint::NodeOrder>(self, this, &NodeOrder);
    return Status::Ok();
  }
  static int32_t NodeOrder(void* ctx, const Task* task, const Node* node, double* out) {
    const auto& self = *static_cast<const NativeRsf*>(ctx);
    double score = 0.0;
    if (self.weight_ > 0) score += self.StrategyScore(task, node);
    if (self.sra_weight_ > 0) score += self.SraScore(task, node);
    *out = score;
    return 0;
  }

 private:
  using Table = std::vector<std::pair<std::string, RsfStrategy>>;
  // Exact name first; otherwise the wildcard with the longest prefix that matches.
  static const RsfStrategy* Find(std::string_view name, const Table& table) {
    for (const auto& [key, s] : table)
      if (key == name) return &s;
    const RsfStrategy* best = nullptr;
    int64_t best_len = -1;
    for (const auto& [key, s] : table) {
      if (key.empty() || key.back() != '*') continue;
      std::string_view prefix = std::string_view(key).substr(0, key.find('*'));
      if (name.starts_with(prefix) && static_cast<int64_t>(prefix.size()) > best_len) {
        best = &s;
        best_len = static_cast<int64_t>(prefix.size());
      }
    }
    return best;
  }
  double StrategyScore(const Task* task, const Node* node) const {
    // task_strategies: the pod's annotations could bring their own table (none here do; the
    // lookups are made all the same).
    if (task->annotations().count("volcano.sh/resource-strategy-weight") ||
        task->annotations().count("volcano.sh/resource-strategy-scoring-type"))
      Die("rsf benchmark tasks carry no strategy annotations");
    double score = 0.0;
    int64_t weight_sum = 0;
    for (ResourceId id : task->resreq.ResourceNames()) {
      const RsfStrategy* s = Find(ResourceRegistry::Name(id), strategies_);
      if (!s) continue;
      const double request = task->resreq.Get(id);
      const double capacity = node->allocatable.Get(id);
      const double used_finally = request + node->used.Get(id);
      double resource_score = 0.0;
      if (s->weight != 0 && capacity != 0.0) {
        if (used_finally > capacity) return 0.0;
        const double w = static_cast<double>(s->weight);
        resource_score = s->most ? used_finally * w / capacity : (capacity - used_finally) * w / capacity;
      }
      score += resource_score;
      weight_sum += s->weight;
    }
    if (weight_sum > 0) score = score / static_cast<double>(weight_sum);
    return score * 100.0 * static_cast<double>(weight_);
  }
  double SraScore(const Task* task, const Node* node) const {
    for (ResourceId id : task->resreq.ResourceNames())
      if (node->allocatable.Get(id) == 0.0) return 0.0;
    double score = 0.0;
    for (const auto& [id, w] : sra_weights_)
      if (node->allocatable.Get(id) > 0.0) score += static_cast<double>(w);
    if (sra_weight_sum_ > 0) score = 1.0 - score / static_cast<double>(sra_weight_sum_);
    return score * 100.0 * static_cast<double>(sra_weight_);
  }

  int64_t weight_ = 10;
  Table strategies_;
  std::vector<std::pair<ResourceId, int64_t>> sra_weights_;
  int64_t sra_weight_sum_ = 0;
  int64_t sra_weight_ = 0;
};

// ============================================================================================
// predicates: pre_predicate (counts per task) and predicate (per node)

// A Fit: the most blocking code of the failed checks and their reasons, in order
// (kiln_rt_fit_combine's ranking).
struct NativeFit {
  int32_t code = 0;
  std::string_view reasons[8];
  int n = 0;
  std::string taint_reason;  // the one reason built at run time

  static int Rank(int32_t code) {
    switch (static_cast<StatusCode>(code)) {
      case StatusCode::Success: return 0;
      case StatusCode::Unschedulable: return 1;
      case StatusCode::Wait:
      case StatusCode::Skip: return 2;
      case StatusCode::Error: return 3;
      case StatusCode::UnschedulableAndUnresolvable: return 4;
    }
    return 3;
  }
  void Add(int32_t c, std::string_view reason) {
    if (c == 0) return;
    if (Rank(c) > Rank(code)) code = c;
    if (n < 8) reasons[n++] = reason;
  }
  int32_t Report(KStatusOut* out) const {
    if (code != 0)
      for (int i = 0; i < n; ++i) kiln_status_add_reason(out, reasons[i].data(), reasons[i].size());
    return code;
  }
};
constexpr int32_t kUnschedulable = 2;
constexpr int32_t kUnresolvable = 3;

const std::vector<PodAffinityTerm>& NoTerms() {
  static const std::vector<PodAffinityTerm> none;
  return none;
}
const std::vector<PodAffinityTerm>& RequiredAffinity(const Task* t) {
  return t->affinity().pod_affinity ? t->affinity().pod_affinity->required : NoTerms();
}
const std::vector<PodAffinityTerm>& RequiredAntiAffinity(const Task* t) {
  return t->affinity().pod_anti_affinity ? t->affinity().pod_anti_affinity->required : NoTerms();
}

class NativePredicates : public Plugin {
 public:
  explicit NativePredicates(const PluginOption&) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    session_ = &ssn;
    evicted_.assign(ssn.cluster().tasks().size(), 0);
    evicted_on_.assign(ssn.cluster().nodes().size(), 0);
    ssn.Register<ExtensionPoint::PrePredicate>(self, this, &PrePredicate);
    ssn.Register<ExtensionPoint::Predicate>(self, this, &Predicate);
    return Status::Ok();
  }

  static int32_t PrePredicate(void* ctx, const Task* task, KStatusOut*) {
    auto& self = *static_cast<NativePredicates*>(ctx);
    self.prepared_uid_ = task->uid;
    self.prepared_task_ = task;
    self.affinity_needed_ =
        task->has_pod_affinity_terms || !self.session_->cluster().affinity_nodes().empty();
    if (self.affinity_needed_) {
      self.existing_anti_ = self.ExistingAntiCounts(task);
      self.affinity_counts_ = self.AffinityCountsOf(task);
      self.anti_counts_ = self.AntiCountsOf(task);
    }
    auto cs = SpreadConstraints(task);
    self.spread_needed_ = !cs.empty();
    if (self.spread_needed_) {
      self.spread_counts_.clear();
      self.spread_min_.clear();
      self.spread_domains_.clear();
      int64_t i = 0;
      for (const TopologySpreadConstraint* c : cs) {
        auto counts = self.SpreadDomainCounts(task, *c, cs);
        for (const auto& [value, n] : counts)
          self.spread_counts_[std::to_string(i) + "/" + value] = n;
        self.spread_domains_.push_back(static_cast<int64_t>(counts.size()));
        int64_t lo = 0;
        bool first = true;
        for (const auto& [value, n] : counts) {
          if (first || n < lo) lo = n;
          first = false;
        }
        self.spread_min_.push_back(lo);
        ++i;
      }
    }
    return 0;
  }

  static int32_t Predicate(void* ctx, const Task* task, const Node* node, KStatusOut* out) {
    const auto& self = *static_cast<const NativePredicates*>(ctx);
    NativeFit result;
    self.PodCountFit(node, result);
    if (node->unschedulable &&
        !kiln_std_task_tolerates_taint(task, kUnschedulableTaint.data(), kUnschedulableTaint.size(),
                                       "", 0, "NoSchedule", 10))
      result.Add(kUnresolvable, "node(s) were unschedulable");
    if (result.code == kUnresolvable) return result.Report(out);
    if (!kiln_std_required_node_affinity_matches(task, node))
      result.Add(kUnresolvable, "node(s) didn't match Pod's node affinity/selector");
    if (result.code == kUnresolvable) return result.Report(out);
    for (const Taint& taint : node->taints) {
      if (taint.effect != "NoSchedule" && taint.effect != "NoExecute") continue;
      if (!kiln_std_task_tolerates(task, &taint)) {
        result.taint_reason = "node(s) had untolerated taint {" + taint.key + ": " + taint.value + "}";
        result.Add(kUnresolvable, result.taint_reason);
        break;
      }
    }
    if (result.code == kUnresolvable) return result.Report(out);
    self.NodePortsFit(task, node, result);
    const bool prepared = task->uid == self.prepared_uid_;
    if (prepared) {
      if (self.affinity_needed_)
        PodAffinityFit(task, node, self.existing_anti_, self.affinity_counts_, self.anti_counts_,
                       result);
    } else {
      PodAffinityFit(task, node, self.ExistingAntiCounts(task), self.AffinityCountsOf(task),
                     self.AntiCountsOf(task), result);
    }
    if (result.code == kUnresolvable) return result.Report(out);
    if (prepared ? self.spread_needed_ : !task->topology_spread_constraints().empty())
      self.TopologySpreadFit(task, node, prepared, result);
    return result.Report(out);
  }

 private:
  // Topology key → label value → pods, as the policy keeps them.
  using Counts = std::unordered_map<std::string, std::unordered_map<std::string, int64_t>>;
  static constexpr std::string_view kUnschedulableTaint = "node.kubernetes.io/unschedulable";

  static int64_t Get(const Counts& m, const std::string& key, const std::string& value) {
    auto it = m.find(key);
    if (it == m.end()) return 0;
    auto v = it->second.find(value);
    return v == it->second.end() ? 0 : v->second;
  }
  bool Present(const Task* p) const { return !evicted_[p->index]; }

  Counts ExistingAntiCounts(const Task* task) const {
    Counts counts;
    for (const Node* n : session_->cluster().affinity_nodes())
      for (const Task* other : n->affinity_tasks) {
        if (!Present(other)) continue;
        for (const PodAffinityTerm& term : RequiredAntiAffinity(other))
          if (const std::string* value = Label(n->labels, term.topology_key))
            if (kiln_std_term_matches_pod(&term, other, task))
              counts[term.topology_key][*value] += 1;
      }
    return counts;
  }
  Counts AffinityCountsOf(const Task* task) const {
    Counts counts;
    const auto& terms = RequiredAffinity(task);
    if (terms.empty()) return counts;
    for (const Node* n : session_->cluster().nodes())
      for (const Task* p : n->tasks) {
        if (!Present(p)) continue;
        bool all = true;
        for (const PodAffinityTerm& t : terms)
          if (!kiln_std_term_matches_pod(&t, task, p)) {
            all = false;
            break;
          }
        if (!all) continue;
        for (const PodAffinityTerm& t : terms)
          if (const std::string* value = Label(n->labels, t.topology_key))
            counts[t.topology_key][*value] += 1;
      }
    return counts;
  }
  Counts AntiCountsOf(const Task* task) const {
    Counts counts;
    const auto& terms = RequiredAntiAffinity(task);
    if (terms.empty()) return counts;
    for (const Node* n : session_->cluster().nodes())
      for (const Task* p : n->tasks) {
        if (!Present(p)) continue;
        for (const PodAffinityTerm& t : terms)
          if (const std::string* value = Label(n->labels, t.topology_key))
            if (kiln_std_term_matches_pod(&t, task, p))
              counts[t.topology_key][*value] += 1;
      }
    return counts;
  }

  static std::vector<const TopologySpreadConstraint*> SpreadConstraints(const Task* task) {
    std::vector<const TopologySpreadConstraint*> cs;
    for (const auto& c : task->topology_spread_constraints())
      if (c.when_unsatisfiable == "DoNotSchedule") cs.push_back(&c);
    return cs;
  }
  static bool SpreadSelects(const TopologySpreadConstraint& c, const Task* owner, const Task* pod) {
    if (!c.label_selector) return false;
    if (!kiln_std_selector_matches_task(&*c.label_selector, pod)) return false;
    for (const std::string& key : c.match_label_keys)
      if (const std::string* want = Label(owner->labels(), key)) {
        const std::string* have = Label(pod->labels(), key);
        if (!have || *have != *want) return false;
      }
    return true;
  }
  static bool SpreadCountsPods(const TopologySpreadConstraint& c, const Task* owner) {
    if (!c.label_selector) return false;
    if (!c.label_selector->match_labels.empty() || !c.label_selector->match_expressions.empty())
      return true;
    for (const std::string& key : c.match_label_keys)
      if (owner->labels().count(key)) return true;
    return false;
  }
  std::map<std::string, int64_t> SpreadDomainCounts(
      const Task* task, const TopologySpreadConstraint& c,
      const std::vector<const TopologySpreadConstraint*>& all) const {
    std::map<std::string, int64_t> counts;
    const bool counted = SpreadCountsPods(c, task);
    for (const Node* n : session_->cluster().nodes()) {
      bool has_all = true;
      for (const auto* k : all)
        if (!n->labels.count(k->topology_key)) {
          has_all = false;
          break;
        }
      if (!has_all || !SpreadIncludes(c, task, n)) continue;
      int64_t matching = 0;
      if (counted)
        for (const Task* p : n->tasks)
          if (p->namespace_ == task->namespace_ && !p->deleting && Present(p) &&
              SpreadSelects(c, task, p))
            ++matching;
      const std::string* value = Label(n->labels, c.topology_key);
      counts[value ? *value : std::string()] += matching;
    }
    return counts;
  }

  void PodCountFit(const Node* node, NativeFit& result) const {
    const int64_t gone = evicted_on_count_ > 0 ? evicted_on_[node->index] : 0;
    if (node->allocatable.Get(kPods) <= static_cast<double>(static_cast<int64_t>(node->tasks.size()) - gone))
      result.Add(kUnschedulable, "node(s) pod number exceeded");
  }
  static bool PortsConflict(const HostPort& a, const HostPort& b) {
    if (a.host_port != b.host_port) return false;
    std::string_view pa = a.protocol.empty() ? std::string_view("TCP") : a.protocol;
    std::string_view pb = b.protocol.empty() ? std::string_view("TCP") : b.protocol;
    if (pa != pb) return false;
    std::string_view ia = a.host_ip.empty() ? std::string_view("0.0.0.0") : a.host_ip;
    std::string_view ib = b.host_ip.empty() ? std::string_view("0.0.0.0") : b.host_ip;
    return ia == "0.0.0.0" || ib == "0.0.0.0" || ia == ib;
  }
  void NodePortsFit(const Task* task, const Node* node, NativeFit& result) const {
    for (const HostPort& want : task->host_ports()) {
      if (want.host_port <= 0) continue;
      for (const Task* other : node->tasks) {
        if (!Present(other)) continue;
        for (const HostPort& used : other->host_ports())
          if (used.host_port > 0 && PortsConflict(want, used)) {
            result.Add(kUnschedulable, "node(s) didn't have free ports for the requested pod ports");
            return;
          }
      }
    }
  }
  static void PodAffinityFit(const Task* task, const Node* node, const Counts& existing,
                             const Counts& affinity, const Counts& anti, NativeFit& result) {
    const auto& terms = RequiredAffinity(task);
    if (!terms.empty()) {
      bool pods_exist = true;
      for (const PodAffinityTerm& t : terms) {
        const std::string* value = Label(node->labels, t.topology_key);
        if (!value) {
          result.Add(kUnresolvable, "node(s) didn't match pod affinity rules");
          return;
        }
        if (Get(affinity, t.topology_key, *value) <= 0) pods_exist = false;
      }
      if (!pods_exist) {
        bool self_start = affinity.empty();
        for (const PodAffinityTerm& t : terms)
          if (self_start && !kiln_std_term_matches_pod(&t, task, task)) self_start = false;
        if (!self_start) {
          result.Add(kUnresolvable, "node(s) didn't match pod affinity rules");
          return;
        }
      }
    }
    if (!anti.empty())
      for (const PodAffinityTerm& t : RequiredAntiAffinity(task))
        if (const std::string* value = Label(node->labels, t.topology_key))
          if (Get(anti, t.topology_key, *value) > 0) {
            result.Add(kUnschedulable, "node(s) didn't match pod anti-affinity rules");
            return;
          }
    for (const auto& [key, values] : existing)
      if (const std::string* value = Label(node->labels, key)) {
        auto v = values.find(*value);
        if (v != values.end() && v->second > 0) {
          result.Add(kUnschedulable, "node(s) didn't satisfy existing pods anti-affinity rules");
          return;
        }
      }
  }
  static int32_t SpreadFit(const Task* task, const TopologySpreadConstraint& c, int64_t match_num,
                           int64_t min_match, int64_t domains) {
    if (domains == 0) return 0;
    int64_t global_min = min_match;
    if (c.min_domains && domains < *c.min_domains) global_min = 0;
    const int64_t self_match = SpreadSelects(c, task, task) ? 1 : 0;
    return match_num + self_match - global_min > c.max_skew ? kUnschedulable : 0;
  }
  void TopologySpreadFit(const Task* task, const Node* node, bool prepared,
                         NativeFit& result) const {
    auto cs = SpreadConstraints(task);
    int64_t i = 0;
    thread_local std::string key;
    for (const TopologySpreadConstraint* c : cs) {
      const std::string* value = Label(node->labels, c->topology_key);
      if (!value) {
        result.Add(kUnresolvable,
                   "node(s) didn't match pod topology spread constraints (missing required label)");
        return;
      }
      int32_t code;
      if (prepared) {
        key = std::to_string(i);
        key += '/';
        key += *value;
        auto found = spread_counts_.find(key);
        code = SpreadFit(task, *c, found == spread_counts_.end() ? 0 : found->second, spread_min_[i],
                         spread_domains_[i]);
      } else {
        auto counts = SpreadDomainCounts(task, *c, cs);
        int64_t lo = 0;
        bool first = true;
        for (const auto& [v, n] : counts) {
          if (first || n < lo) lo = n;
          first = false;
        }
        auto it = counts.find(*value);
        code = SpreadFit(task, *c, it == counts.end() ? 0 : it->second, lo,
                         static_cast<int64_t>(counts.size()));
      }
      if (code != 0) {
        result.Add(code, "node(s) didn't match pod topology spread constraints");
        return;
      }
      ++i;
    }
  }

  Session* session_ = nullptr;
  std::string prepared_uid_;
  const Task* prepared_task_ = nullptr;
  bool affinity_needed_ = false;
  bool spread_needed_ = false;
  Counts existing_anti_, affinity_counts_, anti_counts_;
  std::unordered_map<std::string, int64_t> spread_counts_;  // "i/value" → pods
  std::vector<int64_t> spread_min_, spread_domains_;
  std::vector<uint8_t> evicted_;      // per task index (no evictions in the benchmark)
  std::vector<int64_t> evicted_on_;   // per node index
  int64_t evicted_on_count_ = 0;      // nodes in evicted_on (len(evicted_on))
};

// ============================================================================================
// Sessions, checks and benchmarks

template <typename N>
std::function<std::unique_ptr<Plugin>(const PluginOption&)> Make() {
  return [](const PluginOption& o) { return std::make_unique<N>(o); };
}

// One session per (policy, arguments); opened and checked on first use.
PairSession& Pair(const std::string& key, const std::string& policy, const std::string& args,
                  std::function<std::unique_ptr<Plugin>(const PluginOption&)> make,
                  void (*check)(PairSession&, const std::string&)) {
  static std::map<std::string, std::unique_ptr<PairSession>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto p = OpenPairSession(policy, args, std::move(make));
  check(*p, key);
  return *cache.emplace(key, std::move(p)).first->second;
}

[[noreturn]] void Mismatch(const std::string& key, const std::string& what) {
  Die("JIT and C++ disagree (" + key + "): " + what);
}

// node_order of both sides on every benchmark task × every node, through the session.
void CheckNodeOrder(PairSession& p, const std::string& key) {
  int compared = 0;
  for (BenchTask bt : kBenchTasks) {
    const Task* t = p.task(bt);
    for (const Node* n : p.cluster().nodes()) {
      std::string error;
      auto each = p.session->NodeOrderEach(t, n, &error);
      if (!error.empty() || each.size() != 2)
        Mismatch(key, "node_order failed for " + t->uid + " on " + n->name + ": " + error);
      if (each[0].second != each[1].second)
        Mismatch(key, fmt::format("node_order({}, {}): jit {} native {}", t->uid, n->name,
                                  each[0].second, each[1].second));
      ++compared;
    }
  }
  if (compared == 0) Mismatch(key, "nothing compared");
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

// node_order of one task over every node.
template <typename N>
void NodeOrderBench(benchmark::State& s, PairSession& p, BenchTask bt, bool jit) {
  auto nodes = AllNodes(p);
  if (jit)
    PerNode(s, p.jit->Fn<ExtensionPoint::NodeOrder>(), p.jit->ctx(), p.task(bt), nodes);
  else
    PerNode(s, HandlerFn<ExtensionPoint::NodeOrder>(&N::NodeOrder), static_cast<N*>(p.native),
            p.task(bt), nodes);
}

#define KILN_NODE_ORDER_PAIR(Name, pair_expr, N, task)                                          \
  void BM_Jit##Name(benchmark::State& s) { NodeOrderBench<N>(s, pair_expr, task, true); }       \
  void BM_Native##Name(benchmark::State& s) { NodeOrderBench<N>(s, pair_expr, task, false); }   \
  BENCHMARK(BM_Jit##Name);                                                                       \
  BENCHMARK(BM_Native##Name);

KILN_NODE_ORDER_PAIR(NodeOrderLeastRequested, NodeOrderPair("least", kLeastArgs), NativeNodeOrder,
                     BenchTask::Plain)
KILN_NODE_ORDER_PAIR(NodeOrderMostRequested, NodeOrderPair("most", kMostArgs), NativeNodeOrder,
                     BenchTask::Plain)
KILN_NODE_ORDER_PAIR(NodeOrderBalancedResource, NodeOrderPair("balanced", kBalancedArgs),
                     NativeNodeOrder, BenchTask::Gpu)
KILN_NODE_ORDER_PAIR(NodeOrderImageLocality, NodeOrderPair("image", kImageArgs), NativeNodeOrder,
                     BenchTask::BestEffort)

PairSession& BinpackPair() {
  return Pair("binpack", "binpack",
              "      binpack.weight: 10\n      binpack.cpu: 2\n      binpack.memory: 1\n"
              "      binpack.resources: nvidia.com/gpu\n      binpack.resources.nvidia.com/gpu: 5\n",
              Make<NativeBinpack>(), &CheckNodeOrder);
}
KILN_NODE_ORDER_PAIR(BinpackNodeOrder, BinpackPair(), NativeBinpack, BenchTask::Gpu)

PairSession& RsfPair() {
  return Pair("rsf", "resource-strategy-fit", kRsfArgs, Make<NativeRsf>(), &CheckNodeOrder);
}
KILN_NODE_ORDER_PAIR(RsfNodeOrder, RsfPair(), NativeRsf, BenchTask::Gpu)

// ---- drf ----

std::vector<std::pair<const Job*, const Job*>> JobPairs(PairSession& p) {
  // Consecutive jobs and a stride, so equal and different shares both occur.
  std::vector<std::pair<const Job*, const Job*>> pairs;
  const auto& jobs = p.cluster().jobs();
  for (size_t i = 0; i + 1 < jobs.size(); ++i) {
    pairs.emplace_back(jobs[i], jobs[i + 1]);
    pairs.emplace_back(jobs[i], jobs[(i * 7 + 3) % jobs.size()]);
  }
  return pairs;
}

void CheckDrf(PairSession& p, const std::string& key) {
  auto jit = p.jit->Fn<ExtensionPoint::JobOrder>();
  auto* native = static_cast<NativeDrf*>(p.native);
  auto compare_all = [&](const char* when) {
    int differ = 0;
    for (auto [l, r] : JobPairs(p)) {
      int32_t a = jit(p.jit->ctx(), l, r), b = NativeDrf::JobOrder(native, l, r);
      if (a != b) Mismatch(key, fmt::format("{}: job_order({}, {}): jit {} native {}", when,
                                            l->uid, r->uid, a, b));
      differ += a != 0;
    }
    if (differ == 0) Mismatch(key, "every job pair compares equal: the check proves nothing");
  };
  compare_all("after open");
  // allocate one task of every 3rd job (shares move), then compare; then undo.
  auto alloc = p.jit->Fn<ExtensionPoint::OnAllocate>();
  auto dealloc = p.jit->Fn<ExtensionPoint::OnDeallocate>();
  std::vector<const Task*> moved;
  for (size_t j = 0; j < p.cluster().jobs().size(); j += 3)
    moved.push_back(p.cluster().jobs()[j]->tasks.front());
  for (const Task* t : moved) {
    alloc(p.jit->ctx(), t);
    NativeDrf::Allocate(native, t);
  }
  compare_all("after allocate");
  for (const Task* t : moved) {
    dealloc(p.jit->ctx(), t);
    NativeDrf::Deallocate(native, t);
  }
  compare_all("after deallocate");
}

PairSession& DrfPair() { return Pair("drf", "drf", "", Make<NativeDrf>(), &CheckDrf); }

template <typename Fn>
void PerJobPair(benchmark::State& state, Fn fn, void* ctx,
                const std::vector<std::pair<const Job*, const Job*>>& pairs) {
  Fn volatile target = fn;
  for (auto _ : state)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(ctx, l, r));
  state.counters["calls"] = static_cast<double>(pairs.size());
}
void BM_JitDrfJobOrder(benchmark::State& s) {
  auto& p = DrfPair();
  PerJobPair(s, p.jit->Fn<ExtensionPoint::JobOrder>(), p.jit->ctx(), JobPairs(p));
}
void BM_NativeDrfJobOrder(benchmark::State& s) {
  auto& p = DrfPair();
  PerJobPair(s, HandlerFn<ExtensionPoint::JobOrder>(&NativeDrf::JobOrder),
             static_cast<NativeDrf*>(p.native), JobPairs(p));
}
// The share computation: allocate then deallocate of one task (two calls; the state returns to
// where it was).
template <typename A, typename D>
void AllocDealloc(benchmark::State& state, A alloc, D dealloc, void* ctx, const Task* t) {
  A volatile a = alloc;
  D volatile d = dealloc;
  for (auto _ : state) {
    a(ctx, t);
    d(ctx, t);
  }
  state.counters["calls"] = 2;
}
const Task* DrfTask(PairSession& p) { return p.task(BenchTask::Gpu); }
void BM_JitDrfAllocateShare(benchmark::State& s) {
  auto& p = DrfPair();
  AllocDealloc(s, p.jit->Fn<ExtensionPoint::OnAllocate>(), p.jit->Fn<ExtensionPoint::OnDeallocate>(),
               p.jit->ctx(), DrfTask(p));
}
void BM_NativeDrfAllocateShare(benchmark::State& s) {
  auto& p = DrfPair();
  AllocDealloc(s, HandlerFn<ExtensionPoint::OnAllocate>(&NativeDrf::Allocate),
               HandlerFn<ExtensionPoint::OnDeallocate>(&NativeDrf::Deallocate),
               static_cast<NativeDrf*>(p.native), DrfTask(p));
}
BENCHMARK(BM_JitDrfJobOrder);
BENCHMARK(BM_NativeDrfJobOrder);
// Fixed iterations: every JIT'd allocate stores a fresh Resource copy in the session arena (see
// docs/performance.md), so a time-based run would grow the process by ~0.5 KB per iteration.
BENCHMARK(BM_JitDrfAllocateShare)->Iterations(50'000);
BENCHMARK(BM_NativeDrfAllocateShare)->Iterations(50'000);

// ---- proportion ----

std::vector<std::pair<const Queue*, const Queue*>> QueuePairs(PairSession& p) {
  std::vector<std::pair<const Queue*, const Queue*>> pairs;
  for (const Queue* l : p.cluster().queues())
    for (const Queue* r : p.cluster().queues()) pairs.emplace_back(l, r);
  return pairs;
}
// (queue, task) for allocatable: every benchmark task against every queue.
std::vector<std::pair<const Queue*, const Task*>> QueueTasks(PairSession& p) {
  std::vector<std::pair<const Queue*, const Task*>> out;
  for (const Queue* q : p.cluster().queues())
    for (BenchTask bt : kBenchTasks) out.emplace_back(q, p.task(bt));
  // and a few placed tasks
  for (size_t k = 0; k < p.cluster().tasks().size(); k += 997)
    out.emplace_back(p.cluster().queues()[k % 4], p.cluster().tasks()[k]);
  return out;
}

void CheckProportion(PairSession& p, const std::string& key) {
  auto* native = static_cast<NativeProportion*>(p.native);
  auto qo = p.jit->Fn<ExtensionPoint::QueueOrder>();
  int nonzero = 0;
  for (auto [l, r] : QueuePairs(p)) {
    int32_t a = qo(p.jit->ctx(), l, r), b = NativeProportion::QueueOrder(native, l, r);
    if (a != b) Mismatch(key, fmt::format("queue_order({}, {}): jit {} native {}", l->name,
                                          r->name, a, b));
    nonzero += a != 0;
  }
  if (nonzero == 0) Mismatch(key, "every queue pair compares equal");
  auto ov = p.jit->Fn<ExtensionPoint::Overused>();
  for (const Queue* q : p.cluster().queues()) {
    bool a = ov(p.jit->ctx(), q), b = NativeProportion::Overused(native, q);
    if (a != b) Mismatch(key, fmt::format("overused({}): jit {} native {}", q->name, a, b));
  }
  auto al = p.jit->Fn<ExtensionPoint::Allocatable>();
  int yes = 0, no = 0;
  for (auto [q, t] : QueueTasks(p)) {
    bool a = al(p.jit->ctx(), q, t), b = NativeProportion::Allocatable(native, q, t);
    if (a != b)
      Mismatch(key, fmt::format("allocatable({}, {}): jit {} native {}", q->name, t->uid, a, b));
    (a ? yes : no)++;
  }
  if (yes == 0 || no == 0)
    Mismatch(key, fmt::format("allocatable is {} on every input: the check proves little", yes > 0));
}

PairSession& ProportionPair() {
  return Pair("proportion", "proportion", "", Make<NativeProportion>(), &CheckProportion);
}

void BM_JitProportionQueueOrder(benchmark::State& s) {
  auto& p = ProportionPair();
  auto pairs = QueuePairs(p);
  auto fn = p.jit->Fn<ExtensionPoint::QueueOrder>();
  decltype(fn) volatile target = fn;
  for (auto _ : s)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(p.jit->ctx(), l, r));
  s.counters["calls"] = static_cast<double>(pairs.size());
}
void BM_NativeProportionQueueOrder(benchmark::State& s) {
  auto& p = ProportionPair();
  auto pairs = QueuePairs(p);
  HandlerFn<ExtensionPoint::QueueOrder> volatile target = &NativeProportion::QueueOrder;
  for (auto _ : s)
    for (auto [l, r] : pairs) benchmark::DoNotOptimize(target(p.native, l, r));
  s.counters["calls"] = static_cast<double>(pairs.size());
}
template <typename Fn>
void PerQueue(benchmark::State& s, Fn fn, void* ctx, PairSession& p) {
  Fn volatile target = fn;
  for (auto _ : s)
    for (const Queue* q : p.cluster().queues()) benchmark::DoNotOptimize(target(ctx, q));
  s.counters["calls"] = static_cast<double>(p.cluster().queues().size());
}
void BM_JitProportionOverused(benchmark::State& s) {
  auto& p = ProportionPair();
  PerQueue(s, p.jit->Fn<ExtensionPoint::Overused>(), p.jit->ctx(), p);
}
void BM_NativeProportionOverused(benchmark::State& s) {
  auto& p = ProportionPair();
  PerQueue(s, HandlerFn<ExtensionPoint::Overused>(&NativeProportion::Overused),
           static_cast<NativeProportion*>(p.native), p);
}
template <typename Fn>
void PerQueueTask(benchmark::State& s, Fn fn, void* ctx, PairSession& p) {
  auto items = QueueTasks(p);
  Fn volatile target = fn;
  for (auto _ : s)
    for (auto [q, t] : items) benchmark::DoNotOptimize(target(ctx, q, t));
  s.counters["calls"] = static_cast<double>(items.size());
}
void BM_JitProportionAllocatable(benchmark::State& s) {
  auto& p = ProportionPair();
  PerQueueTask(s, p.jit->Fn<ExtensionPoint::Allocatable>(), p.jit->ctx(), p);
}
void BM_NativeProportionAllocatable(benchmark::State& s) {
  auto& p = ProportionPair();
  PerQueueTask(s, HandlerFn<ExtensionPoint::Allocatable>(&NativeProportion::Allocatable),
               static_cast<NativeProportion*>(p.native), p);
}
BENCHMARK(BM_JitProportionQueueOrder);
BENCHMARK(BM_NativeProportionQueueOrder);
BENCHMARK(BM_JitProportionOverused);
BENCHMARK(BM_NativeProportionOverused);
BENCHMARK(BM_JitProportionAllocatable);
BENCHMARK(BM_NativeProportionAllocatable);

// ---- predicates ----

void Prepare(PairSession& p, const Task* t) {
  p.jit->Fn<ExtensionPoint::PrePredicate>()(p.jit->ctx(), t, nullptr);
  NativePredicates::PrePredicate(p.native, t, nullptr);
}

// Both sides' verdict on every benchmark task × every node, through the session (code and
// every reason); returns per task the nodes it passes and the nodes it fails.
struct PredicateSplit {
  std::map<BenchTask, std::vector<const Node*>> pass, fail;
};
PredicateSplit& Split() {
  static PredicateSplit split;
  return split;
}

void CheckPredicates(PairSession& p, const std::string& key) {
  bool combined = false;
  for (BenchTask bt : kBenchTasks) {
    const Task* t = p.task(bt);
    Prepare(p, t);
    for (const Node* n : p.cluster().nodes()) {
      auto each = p.session->PredicateEach(t, n);
      if (each.size() != 2) Mismatch(key, "predicate handlers missing");
      const PluginStatus &a = each[0], &b = each[1];
      if (a.code != b.code || a.reasons != b.reasons)
        Mismatch(key, fmt::format("predicate({}, {}): jit {} [{}] native {} [{}]", t->uid,
                                  n->name, static_cast<int>(a.code), fmt::join(a.reasons, "; "),
                                  static_cast<int>(b.code), fmt::join(b.reasons, "; ")));
      (a.code == StatusCode::Success ? Split().pass : Split().fail)[bt].push_back(n);
      combined |= a.reasons.size() >= 2;
    }
  }
  // The verdicts must include a combined one (several reasons), and the benchmarks below need
  // both outcomes.
  if (!combined) Mismatch(key, "no node gives a verdict with several reasons");
  if (Split().pass[BenchTask::Plain].empty() || Split().fail[BenchTask::Selector].empty() ||
      Split().pass[BenchTask::Affinity].empty() || Split().fail[BenchTask::Affinity].empty())
    Mismatch(key, "the fixed cluster no longer gives passing and failing nodes");
}

PairSession& PredicatesPair() {
  return Pair("predicates", "predicates", "", Make<NativePredicates>(), &CheckPredicates);
}

void PredicateBench(benchmark::State& s, BenchTask bt, bool pass, bool all, bool jit) {
  auto& p = PredicatesPair();
  const Task* t = p.task(bt);
  Prepare(p, t);
  std::vector<const Node*> nodes = all ? AllNodes(p) : (pass ? Split().pass : Split().fail)[bt];
  if (jit)
    PerNode(s, p.jit->Fn<ExtensionPoint::Predicate>(), p.jit->ctx(), t, nodes);
  else
    PerNode(s, HandlerFn<ExtensionPoint::Predicate>(&NativePredicates::Predicate),
            static_cast<NativePredicates*>(p.native), t, nodes);
}
void BM_JitPredicatesPass(benchmark::State& s) { PredicateBench(s, BenchTask::Plain, true, false, true); }
void BM_NativePredicatesPass(benchmark::State& s) { PredicateBench(s, BenchTask::Plain, true, false, false); }
void BM_JitPredicatesReject(benchmark::State& s) { PredicateBench(s, BenchTask::Selector, false, false, true); }
void BM_NativePredicatesReject(benchmark::State& s) { PredicateBench(s, BenchTask::Selector, false, false, false); }
void BM_JitPredicatesAffinity(benchmark::State& s) { PredicateBench(s, BenchTask::Affinity, true, true, true); }
void BM_NativePredicatesAffinity(benchmark::State& s) { PredicateBench(s, BenchTask::Affinity, true, true, false); }
BENCHMARK(BM_JitPredicatesPass);
BENCHMARK(BM_NativePredicatesPass);
BENCHMARK(BM_JitPredicatesReject);
BENCHMARK(BM_NativePredicatesReject);
BENCHMARK(BM_JitPredicatesAffinity);
BENCHMARK(BM_NativePredicatesAffinity);

// pre_predicate itself (once per task in the actions; the inter-pod counts walk the cluster).
void PrePredicateBench(benchmark::State& s, bool jit) {
  auto& p = PredicatesPair();
  const Task* t = p.task(BenchTask::Affinity);
  if (jit)
    Run(s, p.jit->Fn<ExtensionPoint::PrePredicate>(), p.jit->ctx(), t,
        static_cast<KStatusOut*>(nullptr));
  else
    Run(s, HandlerFn<ExtensionPoint::PrePredicate>(&NativePredicates::PrePredicate),
        static_cast<NativePredicates*>(p.native), t, static_cast<KStatusOut*>(nullptr));
  s.counters["calls"] = 1;
}
void BM_JitPredicatesPrePredicate(benchmark::State& s) { PrePredicateBench(s, true); }
void BM_NativePredicatesPrePredicate(benchmark::State& s) { PrePredicateBench(s, false); }
BENCHMARK(BM_JitPredicatesPrePredicate)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NativePredicatesPrePredicate)->Unit(benchmark::kMicrosecond);

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
