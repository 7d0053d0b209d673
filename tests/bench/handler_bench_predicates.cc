// predicates' pre_predicate and predicate, JIT vs C++ (handler_bench.h).

#include "runtime/reason_codes.h"
#include "tests/bench/handler_bench.h"

namespace kiln::bench {
namespace {

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
    return RegisterHandlers<ExtensionPoint::PrePredicate, ExtensionPoint::Predicate>(
        ssn, self, this, &PrePredicate, &Predicate);
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
    return MatchCounts(task, RequiredAffinity(task), /*all=*/true);
  }
  Counts AntiCountsOf(const Task* task) const {
    return MatchCounts(task, RequiredAntiAffinity(task), /*all=*/false);
  }
  // Per topology key and value, the placed pods (not evicted) that `task`'s `terms` match: with
  // `all`, a pod counts under every term once all of them match it (affinity); without, under
  // each term that matches it (anti-affinity).
  template <typename Terms>
  Counts MatchCounts(const Task* task, const Terms& terms, bool all) const {
    Counts counts;
    if (terms.empty()) return counts;
    auto matches = [&](const PodAffinityTerm& t, const Task* p) {
      return kiln_std_term_matches_pod(&t, task, p);
    };
    for (const Node* n : session_->cluster().nodes())
      for (const Task* p : n->tasks) {
        if (!Present(p)) continue;
        if (all && !std::all_of(terms.begin(), terms.end(),
                                [&](const PodAffinityTerm& t) { return matches(t, p); }))
          continue;
        for (const PodAffinityTerm& t : terms)
          if (const std::string* value = Label(n->labels, t.topology_key))
            if (all || matches(t, p)) counts[t.topology_key][*value] += 1;
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
      // The policy's reasons carry stable codes (runtime/reason_codes.h); the C++ mirror's do
      // not: compare the texts, which are Volcano's on both sides.
      std::vector<std::string> texts;
      for (const std::string& r : a.reasons) texts.push_back(ReasonText(r));
      if (a.code != b.code || texts != b.reasons)
        Mismatch(key, fmt::format("predicate({}, {}): jit {} [{}] native {} [{}]", t->uid,
                                  n->name, static_cast<int>(a.code), fmt::join(texts, "; "),
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

}  // namespace
}  // namespace kiln::bench
