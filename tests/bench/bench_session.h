#pragma once
// Shared by kiln_bench's JIT-vs-C++ benchmarks (jit_bench.cc, handler_bench.cc):
//  * Run: the per-call path shape every pair is measured through;
//  * BenchCluster: a fixed, realistic cluster (labels, taints, GPU nodes, pods already placed,
//    affinity terms, several queues and jobs) built the same way every time;
//  * PairSession: one open session whose tier holds a JIT-compiled built-in policy beside a
//    hand-written C++ plugin, so both see the same session and answer the same calls, and the
//    benchmark can take each side's raw handler and context out of it.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "tests/bench/bench_policy_text.h"
#include "runtime/conf.h"
#include "runtime/model.h"
#include "runtime/plugin.h"
#include "runtime/session.h"

namespace kiln::bench {

// Calls through a volatile function pointer so neither side is inlined into the loop: exactly as
// the session's dispatchers call a registered handler (`Fn<P>(r.fn)(r.ctx, args...)`).
template <typename Fn, typename... A>
void Run(benchmark::State& state, Fn fn, void* ctx, A... args) {
  Fn volatile target = fn;
  for (auto _ : state) benchmark::DoNotOptimize(target(ctx, args...));
}

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "kiln_bench: %s\n", what.c_str());
  std::abort();
}

// ---- the fixed cluster ---------------------------------------------------------------------
// 300 nodes in 3 zones and 10 racks; every 10th node has 8 GPUs and a NoSchedule GPU taint; some
// nodes carry PreferNoSchedule or NoExecute taints; one is cordoned; 18 are full by pod count. 20 running pods per node
// (600 jobs of 10 in 4 queues), some with required anti-affinity, preferred affinity or host
// ports. One pending job holds the tasks the benchmarks ask about (BenchTask below).
inline constexpr int kBenchNodes = 300;
inline constexpr int kPodsPerNode = 20;
inline constexpr int kTasksPerJob = 10;
inline constexpr double kGi = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMi = 1024.0 * 1024.0;

// The pending tasks, by what they exercise.
enum class BenchTask {
  Plain,       // cpu + memory, nothing else
  Selector,    // nodeSelector, required/preferred node affinity, tolerations
  Gpu,         // a GPU, tolerating the GPU taint, a large image
  Affinity,    // pod (anti-)affinity, required and preferred; topology spread (both kinds)
  BestEffort,  // no requests; images
  Ports,       // a host port
};
inline constexpr BenchTask kBenchTasks[] = {BenchTask::Plain,    BenchTask::Selector,
                                            BenchTask::Gpu,      BenchTask::Affinity,
                                            BenchTask::BestEffort, BenchTask::Ports};
inline const char* BenchTaskUid(BenchTask t) {
  switch (t) {
    case BenchTask::Plain: return "bench-p-plain";
    case BenchTask::Selector: return "bench-p-selector";
    case BenchTask::Gpu: return "bench-p-gpu";
    case BenchTask::Affinity: return "bench-p-affinity";
    case BenchTask::BestEffort: return "bench-p-besteffort";
    case BenchTask::Ports: return "bench-p-ports";
  }
  return "";
}

inline Resource Req(double cpu, double memory, double gpu = 0) {
  Resource r;
  r.Set(kCpu, cpu);
  r.Set(kMemory, memory);
  if (gpu > 0) r.Set(*ResourceRegistry::Intern("nvidia.com/gpu"), gpu);
  return r;
}

inline LabelSelector AppSelector(const std::string& app) {
  LabelSelector s;
  s.match_labels["app"] = app;
  return s;
}

inline PodAffinityTerm AppTerm(const std::string& app, const std::string& key) {
  PodAffinityTerm t;
  t.label_selector = AppSelector(app);
  t.topology_key = key;
  return t;
}

inline Cluster BenchCluster() {
  const ResourceId gpu = *ResourceRegistry::Intern("nvidia.com/gpu");
  Cluster c;
  const int queue_weights[] = {1, 2, 4, 1};
  Queue* queues[4];
  for (int q = 0; q < 4; ++q) {
    Queue& queue = c.NewQueue();
    queues[q] = &queue;
    queue.name = "q-" + std::to_string(q);
    queue.weight = queue_weights[q];
    queue.priority = q == 2 ? 1 : 0;
    queue.creation_time = q;
  }
  // Queue q-3 is capped; q-2 has a guarantee.
  queues[3]->has_capability = true;
  queues[3]->capability = Req(200'000, 800 * kGi);
  queues[2]->has_guarantee = true;
  queues[2]->guarantee = Req(100'000, 400 * kGi);

  std::vector<std::string> node_names;
  for (int i = 0; i < kBenchNodes; ++i) {
    Node& n = c.NewNode();
    char name[16];
    std::snprintf(name, sizeof name, "node-%03d", i);
    n.name = name;
    node_names.push_back(n.name);
    const bool has_gpu = i % 10 == 0;
    n.allocatable = Req(32'000, 128 * kGi);
    // A few nodes are full by pod count (20 pods placed), some of them also NoExecute-tainted,
    // so predicate verdicts with two reasons occur.
    n.allocatable.Set(kPods, i % 25 == 24 || i % 50 == 25 ? kPodsPerNode : 110);
    if (has_gpu) n.allocatable.Set(gpu, 8000);
    n.capacity = n.allocatable;
    n.labels["kubernetes.io/hostname"] = n.name;
    n.labels["topology.kubernetes.io/zone"] = "zone-" + std::to_string(i % 3);
    n.labels["node.kubernetes.io/instance-type"] = has_gpu ? "gpu-8x" : "cpu-32";
    n.labels["disk"] = i % 2 ? "ssd" : "hdd";
    n.labels["rack"] = "rack-" + std::to_string(i % 10);
    if (has_gpu) n.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
    if (i % 7 == 3) n.taints.push_back({"maintenance", "soon", "PreferNoSchedule"});
    if (i % 13 == 5) n.taints.push_back({"dedicated", "batch", "PreferNoSchedule"});
    if (i % 50 == 25) n.taints.push_back({"special", "x", "NoExecute"});
    n.unschedulable = i == 17;
    n.images["registry.io/app-" + std::to_string(i % 5) + ":v1"] = 300 * 1000 * 1000;
    n.images["registry.io/app-" + std::to_string((i + 1) % 5) + ":v1"] = 450 * 1000 * 1000;
    if (i % 3 == 0) n.images["busybox:latest"] = 5 * 1000 * 1000;
    if (has_gpu) n.images["pytorch/pytorch:2.1"] = 2'000'000'000;
  }

  // Placed pods: job j holds pods j*10 .. j*10+9, spread over the nodes.
  const int placed = kBenchNodes * kPodsPerNode;
  const double cpus[] = {250, 500, 1000, 0};
  const double mems[] = {512 * kMi, 1 * kGi, 2 * kGi, 0};
  for (int j = 0; j < placed / kTasksPerJob; ++j) {
    Job& job = c.NewJob();
    job.name = "job-" + std::to_string(j);
    job.namespace_ = "bench";
    job.uid = "bench/" + job.name;
    job.queue_name = "q-" + std::to_string(j % 4);
    job.min_available = 1 + j % 5;
    job.creation_time = j;
    job.phase = PodGroupPhase::Running;
  }
  for (int k = 0; k < placed; ++k) {
    Task& t = c.NewTask();
    const int j = k / kTasksPerJob;
    t.name = "job-" + std::to_string(j) + "-" + std::to_string(k % kTasksPerJob);
    t.namespace_ = "bench";
    t.uid = "bench-" + t.name;
    t.job_uid = "bench/job-" + std::to_string(j);
    t.status = TaskStatus::Running;
    t.node_name = node_names[static_cast<size_t>((k * 7) % kBenchNodes)];
    t.SetRequests(Req(cpus[k % 4], mems[(k / 4) % 4]));
    t.mutable_shape().labels["app"] = "app-" + std::to_string(j % 10);
    t.mutable_shape().labels["tier"] = k % 3 ? "batch" : "web";
    t.creation_time = k;
    if (k % 37 == 0) {
      t.mutable_shape().affinity.pod_anti_affinity.emplace();
      t.mutable_shape().affinity.pod_anti_affinity->required.push_back(
          AppTerm("app-" + std::to_string((j + 5) % 10), "kubernetes.io/hostname"));
    }
    if (k % 41 == 0) {
      t.mutable_shape().affinity.pod_affinity.emplace();
      t.mutable_shape().affinity.pod_affinity->preferred.push_back(
          {10, AppTerm("app-" + std::to_string((j + 3) % 10), "topology.kubernetes.io/zone")});
    }
    if (k % 53 == 0) t.mutable_shape().host_ports.push_back({8080, 80, "TCP", ""});
  }

  // The pending tasks the benchmarks ask about.
  Job& pending = c.NewJob();
  pending.name = "pending";
  pending.namespace_ = "bench";
  pending.uid = "bench/pending";
  pending.queue_name = "q-0";
  pending.min_available = 1;
  pending.creation_time = 100'000;
  for (BenchTask kind : kBenchTasks) {
    Task& t = c.NewTask();
    t.uid = BenchTaskUid(kind);
    t.name = t.uid.substr(6);
    t.namespace_ = "bench";
    t.job_uid = pending.uid;
    t.status = TaskStatus::Pending;
    t.creation_time = 100'000;
    t.mutable_shape().labels["app"] = "app-3";
    switch (kind) {
      case BenchTask::Plain:
        t.SetRequests(Req(1000, 2 * kGi));
        break;
      case BenchTask::Selector: {
        t.SetRequests(Req(2000, 4 * kGi));
        t.mutable_shape().node_selector["disk"] = "ssd";
        NodeAffinity na;
        na.required.emplace();
        na.required->push_back({{{"topology.kubernetes.io/zone", "In", {"zone-0", "zone-1"}}}, {}});
        na.preferred.push_back({5, {{{"node.kubernetes.io/instance-type", "In", {"cpu-32"}}}, {}}});
        na.preferred.push_back({3, {{{"rack", "In", {"rack-1", "rack-3", "rack-5"}}}, {}}});
        t.mutable_shape().affinity.node_affinity = std::move(na);
        t.mutable_shape().tolerations.push_back({"maintenance", "Exists", "", "", std::nullopt});
        t.mutable_shape().tolerations.push_back({"dedicated", "Equal", "batch", "PreferNoSchedule", std::nullopt});
        break;
      }
      case BenchTask::Gpu:
        t.SetRequests(Req(4000, 16 * kGi, 1000));
        t.mutable_shape().tolerations.push_back({"nvidia.com/gpu", "Exists", "", "NoSchedule", std::nullopt});
        t.mutable_shape().images = {"pytorch/pytorch:2.1", "busybox"};
        break;
      case BenchTask::Affinity: {
        t.SetRequests(Req(500, 1 * kGi));
        t.mutable_shape().affinity.pod_anti_affinity.emplace();
        t.mutable_shape().affinity.pod_anti_affinity->required.push_back(
            AppTerm("app-8", "kubernetes.io/hostname"));
        t.mutable_shape().affinity.pod_anti_affinity->preferred.push_back(
            {5, AppTerm("app-2", "kubernetes.io/hostname")});
        t.mutable_shape().affinity.pod_affinity.emplace();
        t.mutable_shape().affinity.pod_affinity->preferred.push_back(
            {10, AppTerm("app-1", "topology.kubernetes.io/zone")});
        TopologySpreadConstraint hard;
        hard.max_skew = 40;
        hard.topology_key = "topology.kubernetes.io/zone";
        hard.label_selector = AppSelector("app-3");
        t.mutable_shape().topology_spread_constraints.push_back(hard);
        TopologySpreadConstraint soft = hard;
        soft.max_skew = 1;
        soft.when_unsatisfiable = "ScheduleAnyway";
        t.mutable_shape().topology_spread_constraints.push_back(soft);
        TopologySpreadConstraint host = soft;
        host.topology_key = "kubernetes.io/hostname";
        t.mutable_shape().topology_spread_constraints.push_back(host);
        break;
      }
      case BenchTask::BestEffort:
        t.SetRequests(Resource{});
        t.mutable_shape().images = {"registry.io/app-1:v1", "registry.io/app-2:v1", "busybox"};
        break;
      case BenchTask::Ports:
        t.SetRequests(Req(250, 256 * kMi));
        t.mutable_shape().host_ports.push_back({8080, 8080, "", ""});
        break;
    }
  }
  if (Status s = c.Link(); !s) Die("cluster: " + s.error().message);
  return c;
}

// ---- a session with a JIT'd policy and its C++ twin ------------------------------------------

// The compiled plugin as compiler/host/compiled_policy_provider.cc builds it for a session, keeping its
// context where the benchmark can reach it.
class JitUnderTest : public Plugin {
 public:
  explicit JitUnderTest(std::shared_ptr<const BoundArgs> args) : args_(std::move(args)) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    const PolicyCode& code = *args_->code;
    ctx_.args = args_->data;
    ctx_.now = ssn.now();
    ctx_.session = &ssn;
    ctx_.session_arena = &arena_;
    code.state_init(&ctx_);
    for (ExtensionPoint point : code.points)
      ssn.RegisterRaw(self, point, &ctx_, code.Handler(point));
    return Status::Ok();
  }
  template <ExtensionPoint P>
  HandlerFn<P> Fn() const {
    auto fn = reinterpret_cast<HandlerFn<P>>(args_->code->Handler(P));
    if (!fn) Die(args_->policy->name + " has no handler " + std::string(Info(P).handler));
    return fn;
  }
  void* ctx() { return &ctx_; }

 private:
  std::shared_ptr<const BoundArgs> args_;
  PolicyContext ctx_;
  Arena arena_;
};

// The session of one comparison: tier 1 = [`policy` with `arguments_yaml`, "native"].
struct PairSession {
  SchedulerConf conf;
  PluginRegistry registry;
  std::unique_ptr<Session> session;
  JitUnderTest* jit = nullptr;
  Plugin* native = nullptr;

  Cluster& cluster() { return session->cluster(); }
  Task* task(BenchTask t) {
    Task* found = cluster().FindTask(BenchTaskUid(t));
    if (!found) Die(std::string("no task ") + BenchTaskUid(t));
    return found;
  }
};

// `arguments_yaml`: the plugin entry's `arguments:` block body, each line indented by 6 spaces
// (or empty). `make_native` builds the C++ plugin from the same PluginOption the JIT side binds.
inline std::unique_ptr<PairSession> OpenPairSession(
    const std::string& policy, const std::string& arguments_yaml,
    std::function<std::unique_ptr<Plugin>(const PluginOption&)> make_native) {
  auto p = std::make_unique<PairSession>();
  std::string text = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: " + policy + "\n";
  if (!arguments_yaml.empty()) text += "    arguments:\n" + arguments_yaml;
  text += "  - name: native\n";
  auto conf = ParseSchedulerConf(text, "bench.conf");
  if (!conf.ok()) Die(conf.error().Format());
  p->conf = std::move(*conf);

  if (!FindBuiltinPolicy(policy)) Die("no built-in policy " + policy);
  auto compiled = (*PolicyCompiler::Global())->Compile(BenchPolicySource(policy));
  if (!compiled.ok()) Die(compiled.error().Format());
  PairSession* raw = p.get();
  std::shared_ptr<const CompiledPolicy> cp = *compiled;
  (void)p->registry.Register(policy, [raw, cp](const PluginOption& option)
                                         -> Result<std::unique_ptr<Plugin>> {
    auto args = BindArguments(cp, option);
    if (!args.ok()) return args.error();
    auto plugin = std::make_unique<JitUnderTest>(*args);
    raw->jit = plugin.get();
    return std::unique_ptr<Plugin>(std::move(plugin));
  });
  (void)p->registry.Register("native", [raw, make_native](const PluginOption&)
                                           -> Result<std::unique_ptr<Plugin>> {
    // The native side reads the policy's entry (tier 0, plugin 0), not its own.
    auto plugin = make_native(raw->conf.tiers[0].plugins[0]);
    raw->native = plugin.get();
    return plugin;
  });
  p->session = std::make_unique<Session>(BenchCluster(), p->conf, 600'000'000'000LL, "bench");
  if (Status s = p->session->Open(p->registry); !s) Die(s.error().Format());
  if (!p->jit || !p->native) Die("plugins of " + policy + " did not open");
  return p;
}

}  // namespace kiln::bench
