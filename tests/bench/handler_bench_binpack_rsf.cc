// binpack's and resource-strategy-fit's node_order, JIT vs C++ (handler_bench.h).

#include "tests/bench/handler_bench.h"

namespace kiln::bench {
namespace {

// ============================================================================================
// binpack

class NativeBinpack : public Plugin {
 public:
  explicit NativeBinpack(const PluginOption& o) : weight_(ArgInt(o, "binpack.weight", 1)) {
    // session_open: the listed resources (weights from binpack.resources.<name>), then cpu and
    // memory (binpack.cpu, binpack.memory), in first-insertion order; 1 by default, negative → 1.
    std::vector<std::pair<std::string, int64_t>> weights;
    auto put = [&](const std::string& name, int64_t w) {
      if (w < 0) w = 1;
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
      if (!name.empty()) put(name, ArgInt(o, "binpack.resources." + name, 1));
      if (end == std::string::npos) break;
      start = end + 1;
    }
    put("cpu", ArgInt(o, "binpack.cpu", 1));
    put("memory", ArgInt(o, "binpack.memory", 1));
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
      const double request = task->resreq().Get(r.id);
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
  int64_t weight_;
  std::vector<Weighted> weighted_;
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
    for (ResourceId id : task->resreq().ResourceNames()) {
      const RsfStrategy* s = Find(ResourceRegistry::Name(id), strategies_);
      if (!s) continue;
      const double request = task->resreq().Get(id);
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
    for (ResourceId id : task->resreq().ResourceNames())
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

}  // namespace
}  // namespace kiln::bench
