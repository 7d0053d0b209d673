// The plugin host: plugin names → policies (built-in or --policy-dir), argument binding from
// scheduler.conf with located errors, enableXxx gating through the session, the compile cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/host/compiled_policy_provider.h"
#include "runtime/session.h"
#include "tests/unit/compiler/compiled_plugin_fixture.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/temp_dir.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using ::kiln::testing::PolicyDir;

constexpr const char* kWeighted = R"(policy weighted;
record Strategy {
  kind: string = "LeastAllocated" from "type";
  weight: float = 1.0;
}
arg weight: float = 1.5 from "weighted.weight";
arg bonus: int = 7;
arg label: string = "none";
arg zones: list<string> = [];
arg strategies: map<string, Strategy> = {};
on node_order(task: Task, node: Node) -> float {
  var total = weight * 100.0 + float(bonus);
  if label == "gold" { total += 1000.0; }
  total += float(len(zones)) * 10000.0;
  for name, s in strategies {
    if s.kind == "MostAllocated" { total += s.weight * 100000.0; }
  }
  return total;
}
)";

Result<SchedulerConf> Conf(const std::string& plugin_yaml) {
  return ParseSchedulerConf("actions: \"allocate\"\ntiers:\n- plugins:\n" + plugin_yaml,
                            "scheduler.conf");
}

std::unique_ptr<PolicyProvider> Provider(const std::string& dir, bool allow_override = false) {
  auto p = MakeCompiledPolicyProvider(CompiledPolicyOptions{{dir}, allow_override});
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().Format());
  return p.ok() ? std::move(*p) : nullptr;
}

// What calling a bound policy's handlers needs: its arguments and a session arena in a context,
// its state initialised.
struct BoundCall {
  PolicyContext ctx;
  Arena arena;
  const PolicyCode& code;

  explicit BoundCall(const BoundArgs& bound) : code(*bound.code) {
    ctx.args = bound.data;
    ctx.session_arena = &arena;
    code.state_init(&ctx);
  }
  BoundCall(const BoundCall&) = delete;
  BoundCall& operator=(const BoundCall&) = delete;
};

// Binds `option` against a compiled policy, initialises its state and evaluates node_order.
Result<double> NodeOrderScore(const std::shared_ptr<const CompiledPolicy>& compiled,
                              const PluginOption& option) {
  auto bound = BindArguments(compiled, option);
  if (!bound.ok()) return bound.error();
  BoundCall call(**bound);
  const PolicyCode& code = call.code;
  auto node_order = reinterpret_cast<HandlerFn<ExtensionPoint::NodeOrder>>(
      code.Handler(ExtensionPoint::NodeOrder));
  if (!node_order) return Error{"no node_order", {}};
  Task task;
  Node node;
  double score = -1;
  node_order(&call.ctx, &task, &node, &score);
  return score;
}

// Compiles `source`, binds its arguments to the conf entry `plugin_yaml` and evaluates node_order.
Result<double> ConfScore(const SourceFile& source, const std::string& plugin_yaml) {
  auto compiled = (*PolicyCompiler::Global())->Compile(source);
  if (!compiled.ok()) return compiled.error();
  auto conf = Conf(plugin_yaml);
  if (!conf.ok()) return conf.error();
  return NodeOrderScore(*compiled, conf->tiers[0].plugins[0]);
}

// The `weighted` policy's node_order under the conf entry `plugin_yaml`.
Result<double> WeightedScore(const std::string& plugin_yaml) {
  PolicyDir dir;
  return ConfScore(SourceFile{dir.path() + "/weighted.policy", kWeighted}, plugin_yaml);
}

TEST(HostArguments, DefaultsApplyWhenTheConfSetsNothing) {
  auto score = WeightedScore("  - name: weighted\n");
  ASSERT_TRUE(score.ok()) << score.error().Format();
  EXPECT_EQ(*score, 157.0);  // 1.5 * 100 + 7
}

TEST(HostArguments, ConfValuesOfEveryKindAreBound) {
  auto score = WeightedScore(
      "  - name: weighted\n"
      "    arguments:\n"
      "      weighted.weight: 2\n"
      "      bonus: 3\n"
      "      label: gold\n"
      "      zones: [a, b]\n"
      "      strategies:\n"
      "        nvidia.com/gpu: {type: MostAllocated, weight: 2}\n"
      "        cpu: {weight: 5}\n");
  ASSERT_TRUE(score.ok()) << score.error().Format();
  // 2*100 + 3 + 1000 (label) + 2 zones * 10000 + MostAllocated weight 2 * 100000; the cpu entry
  // keeps the default kind LeastAllocated and adds nothing.
  EXPECT_EQ(*score, 200.0 + 3 + 1000 + 20000 + 200000);
}

TEST(HostArguments, FromFlagReadsThePluginEntrysFlag) {
  auto* compiler = *PolicyCompiler::Global();
  auto compiled = compiler->Compile(SourceFile{"test/flagged.policy", R"(policy flagged;
arg hier: bool = false from flag "enableHierarchy";
on node_order(task: Task, node: Node) -> float {
  if hier { return 1.0; }
  return 0.0;
}
)"});
  ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
  for (auto [yaml, want] : {std::pair{"  - name: flagged\n", 0.0},
                            std::pair{"  - name: flagged\n    enableHierarchy: true\n", 1.0},
                            std::pair{"  - name: flagged\n    enableHierarchy: false\n", 0.0}}) {
    SCOPED_TRACE(yaml);
    auto conf = Conf(yaml);
    ASSERT_TRUE(conf.ok()) << conf.error().Format();
    auto score = NodeOrderScore(*compiled, conf->tiers[0].plugins[0]);
    ASSERT_TRUE(score.ok()) << score.error().Format();
    EXPECT_EQ(*score, want);
  }
}

// `from prefix`: every key under the prefix is one map entry, keyed by the rest of the key.
// The score encodes which entries arrived: exact keys win over the prefix, the longest prefix
// collects a key, declared default entries survive.
constexpr const char* kPrefixed = R"(policy prefixed;
arg base: int = 0 from "w.base";
arg weights: map<string, int> = {"keep": 7} from prefix "w.";
arg deep: map<string, int> from prefix "w.deep.";
on node_order(task: Task, node: Node) -> float {
  var total = float(base);
  for name, w in weights {
    if name == "nvidia.com/gpu" { total += float(w) * 10.0; }
    else if name == "keep" { total += float(w) * 100.0; }
    else { total += 1000000.0; }
  }
  for name, w in deep {
    if name == "x" { total += float(w) * 1000.0; } else { total += 1000000.0; }
  }
  return total;
}
)";

Result<double> PrefixedScore(const std::string& plugin_yaml) {
  return ConfScore(SourceFile{"test/prefixed.policy", kPrefixed}, plugin_yaml);
}

TEST(HostArguments, FromPrefixCollectsEveryKeyUnderThePrefix) {
  auto none = PrefixedScore("  - name: prefixed\n");
  ASSERT_TRUE(none.ok()) << none.error().Format();
  EXPECT_EQ(*none, 700.0);  // only the default entry keep: 7

  auto score = PrefixedScore(
      "  - name: prefixed\n"
      "    arguments:\n"
      "      w.base: 3\n"
      "      w.nvidia.com/gpu: 5\n"
      "      w.deep.x: 2\n"
      "      w.keep: 1\n");
  ASSERT_TRUE(score.ok()) << score.error().Format();
  // base 3 (the exact key, not a `base` entry) + gpu 5*10 + keep overridden to 1 * 100 + deep x
  // 2 * 1000 (collected by the longer prefix only).
  EXPECT_EQ(*score, 3.0 + 50 + 100 + 2000);
}

// A conf argument the policy cannot take: the error names the plugin, the argument and the conf
// line.
struct BadArgumentCase {
  const char* name;
  Result<double> (*score)(const std::string& plugin_yaml);  // WeightedScore or PrefixedScore
  const char* plugin;
  const char* arguments;  // the lines under `arguments:`
  const char* message;
  std::optional<int> line;     // in scheduler.conf; none: not checked
  bool checks_file = false;    // the error's file is checked to be scheduler.conf
};

class HostBadArguments : public ::testing::TestWithParam<BadArgumentCase> {};

TEST_P(HostBadArguments, AreLocatedErrors) {
  const BadArgumentCase& c = GetParam();
  auto score = c.score(fmt::format("  - name: {}\n    arguments:\n{}", c.plugin, c.arguments));
  ASSERT_FALSE(score.ok());
  EXPECT_EQ(score.error().message, c.message);
  if (c.checks_file) EXPECT_EQ(score.error().where.file, "scheduler.conf");
  if (c.line) EXPECT_EQ(score.error().where.line, *c.line);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HostBadArguments,
    ::testing::Values(
        BadArgumentCase{"UnknownArgumentNamesPluginArgumentAndLine", WeightedScore, "weighted",
                        "      bonus: 3\n      wieght: 2\n",
                        "plugin `weighted`: unknown argument `wieght`", 7, true},
        BadArgumentCase{"WrongTypeNamesPluginArgumentAndLine_Float", WeightedScore, "weighted",
                        "      weighted.weight: heavy\n",
                        "plugin `weighted`: argument `weighted.weight`: expected float, got "
                        "\"heavy\"",
                        6},
        BadArgumentCase{"WrongTypeNamesPluginArgumentAndLine_Int", WeightedScore, "weighted",
                        "      bonus: 2.5\n",
                        "plugin `weighted`: argument `bonus`: expected int, got \"2.5\"",
                        std::nullopt},
        BadArgumentCase{"UnknownRecordFieldIsAnError", WeightedScore, "weighted",
                        "      strategies:\n        cpu: {kind: MostAllocated}\n",
                        "plugin `weighted`: argument `strategies`: unknown field `kind` of "
                        "Strategy",
                        7},
        BadArgumentCase{"FromPrefixValueOfWrongTypeNamesPluginArgumentAndLine", PrefixedScore,
                        "prefixed", "      w.nvidia.com/gpu: 5\n      w.example.com/foo: heavy\n",
                        "plugin `prefixed`: argument `w.example.com/foo`: expected int, got "
                        "\"heavy\"",
                        7, true}),
    [](const ::testing::TestParamInfo<BadArgumentCase>& info) { return info.param.name; });

TEST(HostArguments, KeysOutsideEveryPrefixAreStillUnknown) {
  for (auto [key, line] : {std::pair{"x.gpu", 7}, std::pair{"w.", 7}, std::pair{"w", 7}}) {
    SCOPED_TRACE(key);
    auto score = PrefixedScore(fmt::format(
        "  - name: prefixed\n"
        "    arguments:\n"
        "      w.gpu: 1\n"
        "      {}: 2\n",
        key));
    ASSERT_FALSE(score.ok());
    EXPECT_EQ(score.error().message.rfind(fmt::format("plugin `prefixed`: unknown argument `{}`", key), 0), 0u)
        << score.error().message;
    EXPECT_EQ(score.error().where.line, line);
  }
}

TEST(HostArguments, BinpackBindsPerResourceWeights) {
  auto conf = Conf(
      "  - name: binpack\n"
      "    arguments:\n"
      "      binpack.weight: 10\n"
      "      binpack.resources: nvidia.com/gpu\n"
      "      binpack.resources.nvidia.com/gpu: 5\n");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  const BuiltinPolicy* binpack = FindBuiltinPolicy("binpack");
  ASSERT_NE(binpack, nullptr);
  auto compiled = (*PolicyCompiler::Global())
                      ->Compile(SourceFile{std::string(binpack->path), std::string(binpack->text)});
  ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
  auto bound = BindArguments(*compiled, conf->tiers[0].plugins[0]);
  ASSERT_TRUE(bound.ok()) << bound.error().Format();

  auto bad = Conf(
      "  - name: binpack\n"
      "    arguments:\n"
      "      binpack.resources.nvidia.com/gpu: \"5x\"\n");
  ASSERT_TRUE(bad.ok());
  auto bad_bound = BindArguments(*compiled, bad->tiers[0].plugins[0]);
  ASSERT_FALSE(bad_bound.ok());
  EXPECT_EQ(bad_bound.error().message,
            "plugin `binpack`: argument `binpack.resources.nvidia.com/gpu`: expected int, got \"5x\"");
  EXPECT_EQ(bad_bound.error().where.line, 6);
}

// binpack's own formula with prefixed weights, through its session_open (which builds the weight
// table from `binpack.resources` and the `from prefix` map) and node_order. The node has none of
// the weighted foo: it adds 0 to the score, but its weight still counts in Σw (Volcano's
// ResourceBinPackingScore returns 0 for capacity 0 and BinPackingScore adds the weight anyway) —
// a case no scenario can reach, since a node without foo never fits a task requesting it.
TEST(HostArguments, BinpackCountsTheWeightOfAResourceTheNodeLacks) {
  const BuiltinPolicy* binpack = FindBuiltinPolicy("binpack");
  ASSERT_NE(binpack, nullptr);
  auto compiled = (*PolicyCompiler::Global())
                      ->Compile(SourceFile{std::string(binpack->path), std::string(binpack->text)});
  ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
  auto conf = Conf(
      "  - name: binpack\n"
      "    arguments:\n"
      "      binpack.resources: example.com/foo\n"
      "      binpack.resources.example.com/foo: 2\n");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  auto bound = BindArguments(*compiled, conf->tiers[0].plugins[0]);
  ASSERT_TRUE(bound.ok()) << bound.error().Format();
  auto foo = ResourceRegistry::Intern("example.com/foo");
  ASSERT_TRUE(foo.ok());

  BoundCall call(**bound);
  const PolicyCode& code = call.code;
  auto open = code.Handler(ExtensionPoint::SessionOpen);
  auto order = code.Handler(ExtensionPoint::NodeOrder);
  ASSERT_NE(open, nullptr);
  ASSERT_NE(order, nullptr);
  reinterpret_cast<HandlerFn<ExtensionPoint::SessionOpen>>(open)(&call.ctx);

  constexpr double kGi = 1024.0 * 1024 * 1024;
  Task task;
  task.mutable_resreq().Set(kCpu, 1000);
  task.mutable_resreq().Set(kMemory, kGi);
  task.mutable_resreq().Set(*foo, 1000);
  Node lacking;
  lacking.allocatable.Set(kCpu, 4000);
  lacking.allocatable.Set(kMemory, 8 * kGi);
  lacking.used.Set(kCpu, 2000);
  lacking.used.Set(kMemory, kGi);
  double score = -1;
  auto node_order = reinterpret_cast<HandlerFn<ExtensionPoint::NodeOrder>>(order);
  node_order(&call.ctx, &task, &lacking, &score);
  // cpu 3/4 · 1 + memory 2/8 · 1 + foo 0 · 2, Σw = 1 + 1 + 2 = 4 → 1.0 / 4 · 100 = 25.
  EXPECT_DOUBLE_EQ(score, 25.0);

  Node having = lacking;
  having.allocatable.Set(*foo, 4000);
  having.used.Set(*foo, 1000);
  node_order(&call.ctx, &task, &having, &score);
  // foo (1 + 1)/4 · 2 = 1.0 more: (0.75 + 0.25 + 1.0) / 4 · 100 = 50.
  EXPECT_DOUBLE_EQ(score, 50.0);
}

TEST(HostProvider, ResolvesBuiltinsAndUserPolicies) {
  PolicyDir dir;
  dir.Write("weighted.policy", kWeighted);
  auto provider = Provider(dir.path());
  ASSERT_TRUE(provider);
  auto names = provider->Names();
  EXPECT_NE(std::find(names.begin(), names.end(), "gang"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "weighted"), names.end());

  auto conf = Conf("  - name: weighted\n  - name: priority\n  - name: nosuch\n");
  ASSERT_TRUE(conf.ok());
  auto weighted = provider->Prepare(conf->tiers[0].plugins[0]);
  ASSERT_TRUE(weighted.ok()) << weighted.error().Format();
  EXPECT_NE(*weighted, nullptr);
  auto priority = provider->Prepare(conf->tiers[0].plugins[1]);
  ASSERT_TRUE(priority.ok());
  EXPECT_NE(*priority, nullptr);
  auto none = provider->Prepare(conf->tiers[0].plugins[2]);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);
}

TEST(HostProvider, UserPolicyWithABuiltinNameIsRejectedUnlessAllowed) {
  PolicyDir dir;
  dir.Write("gang.policy", "policy gang;\non job_order(l: Job, r: Job) -> int { return 0; }\n");
  auto rejected = MakeCompiledPolicyProvider(CompiledPolicyOptions{{dir.path()}, false});
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error().Format(),
            dir.path() + "/gang.policy: error: user policy `gang` has the name of a built-in "
                         "policy; rename it or allow overriding built-ins explicitly "
                         "(--allow-builtin-override)");
  auto allowed = MakeCompiledPolicyProvider(CompiledPolicyOptions{{dir.path()}, true});
  ASSERT_TRUE(allowed.ok());
}

TEST(HostProvider, CompileErrorsNameThePluginAndItsConfLine) {
  PolicyDir dir;
  dir.Write("broken.policy", "policy broken;\non job_order(l: Job, r: Job) -> int { return l.nope; }\n");
  auto provider = Provider(dir.path());
  ASSERT_TRUE(provider);
  auto conf = Conf("  - name: broken\n");
  ASSERT_TRUE(conf.ok());
  auto b = provider->Prepare(conf->tiers[0].plugins[0]);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().where.line, 4);
  EXPECT_NE(b.error().message.find("plugin `broken`: policy " + dir.path() + "/broken.policy does not compile"),
            std::string::npos)
      << b.error().message;
  EXPECT_NE(b.error().message.find("broken.policy:2:"), std::string::npos) << b.error().message;
}

TEST(HostCompiler, CachesByPathAndTextAndDropsOldVersions) {
  auto* compiler = *PolicyCompiler::Global();
  SourceFile v1{"test/cache.policy", "policy cache;\non job_order(l: Job, r: Job) -> int { return 1; }\n"};
  SourceFile v2{"test/cache.policy", "policy cache;\non job_order(l: Job, r: Job) -> int { return -1; }\n"};
  auto a = compiler->Compile(v1);
  auto b = compiler->Compile(v1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());  // compiled once
  auto c = compiler->Compile(v2);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  Job l, r;
  auto fa = reinterpret_cast<HandlerFn<ExtensionPoint::JobOrder>>((*a)->Code()->Handler((*a)->Code()->points[0]));
  auto fc = reinterpret_cast<HandlerFn<ExtensionPoint::JobOrder>>((*c)->Code()->Handler((*c)->Code()->points[0]));
  EXPECT_EQ(fa(nullptr, &l, &r), 1);  // the old version stays valid while referenced
  EXPECT_EQ(fc(nullptr, &l, &r), -1);
}

// The session applies the entry's enableXxx flags to JIT'd handlers like to any plugin.
TEST(HostSession, EnableFlagsGateCompiledHandlers) {
  for (bool enabled : {true, false}) {
    SCOPED_TRACE(enabled);
    testing::ClusterBuilder b;
    b.AddQueue("default");
    auto& pc_hi = b.cluster.NewPriorityClass();
    pc_hi.name = "high";
    pc_hi.value = 1000;
    Job& early = b.AddJob("ns", "early", "default", 1);
    early.creation_time = 1;
    Job& late = b.AddJob("ns", "late", "default", 1);
    late.creation_time = 2;
    late.priority_class_name = "high";
    ASSERT_TRUE(b.cluster.Link().ok());

    testing::CompiledPlugin plugin(MakeCompiledPolicyProvider(PolicyProviderOptions{}),
                                   std::string("  - name: priority\n") +
                                       (enabled ? "" : "    enableJobOrder: false\n"));
    ASSERT_FALSE(plugin.error.has_value()) << plugin.error->Format();
    auto opened = plugin.Open("s1", std::move(b.cluster));
    Session& ssn = *opened;
    const Job* e = ssn.cluster().FindJob("ns/early");
    const Job* l = ssn.cluster().FindJob("ns/late");
    // With priority's job_order the later, higher-priority job goes first; without it the
    // session's default (creation time) puts `early` first.
    EXPECT_EQ(ssn.JobOrderFn(l, e) < 0, enabled);
    ssn.Close();
  }
}

// The built-in gang policy's JobValid reasons and messages are Volcano's, word for word, and an
// invalid job stays in the session: gang's close marks it Unschedulable (NotEnoughResources) like
// any job that is not ready (Volcano's openSession runs JobValid before plugins register, so it
// drops nothing; the actions skip invalid jobs themselves).
TEST(HostSession, GangJobValidReasonsAndCloseCondition) {
  testing::ClusterBuilder b;
  b.AddQueue("default");
  b.AddNode("n1", testing::Res(4000, 8e9, {{"pods", 110}}));
  Job& few = b.AddJob("ns", "few", "default", 3);
  b.AddTask(few, "few-0", testing::Res(1000, 1e9));
  b.AddTask(few, "few-1", testing::Res(1000, 1e9));
  Job& roles = b.AddJob("ns", "roles", "default", 2);
  roles.task_min_available = {{"ps", 1}, {"worker", 1}};
  roles.task_min_available_total = 2;
  b.AddTask(roles, "worker-0", testing::Res(1000, 1e9), TaskStatus::Pending, "", "worker");
  b.AddTask(roles, "worker-1", testing::Res(1000, 1e9), TaskStatus::Pending, "", "worker");
  Job& fine = b.AddJob("ns", "fine", "default", 1);
  b.AddTask(fine, "fine-0", testing::Res(1000, 1e9), TaskStatus::Running, "n1");
  ASSERT_TRUE(b.cluster.Link().ok());

  testing::CompiledPlugin plugin(MakeCompiledPolicyProvider(PolicyProviderOptions{}),
                                 "  - name: gang\n");
  ASSERT_FALSE(plugin.error.has_value()) << plugin.error->Format();
  auto opened = plugin.Open("s1", std::move(b.cluster));
  Session& ssn = *opened;

  auto v = ssn.JobValid(ssn.cluster().FindJob("ns/few"));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->plugin, "gang");
  EXPECT_EQ(v->reason, "NotEnoughTasks");
  EXPECT_EQ(v->message, "Not enough valid tasks for gang-scheduling, valid: 2, min: 3");
  // Two valid workers reach minMember 2, but the ps role has none of its 1.
  auto r = ssn.JobValid(ssn.cluster().FindJob("ns/roles"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, "NotEnoughPodsOfTask");
  EXPECT_EQ(r->message, "Not enough valid pods of each task for gang-scheduling");
  EXPECT_FALSE(ssn.JobValid(ssn.cluster().FindJob("ns/fine")).has_value());

  ssn.Close();
  const Job* closed_few = ssn.cluster().FindJob("ns/few");
  ASSERT_NE(closed_few, nullptr);
  auto unschedulable = std::find_if(
      closed_few->conditions.begin(), closed_few->conditions.end(),
      [](const PodGroupCondition& c) { return c.type == "Unschedulable"; });
  ASSERT_NE(unschedulable, closed_few->conditions.end());
  EXPECT_EQ(unschedulable->status, "True");
  EXPECT_EQ(unschedulable->reason, "NotEnoughResources");
  // minMember 3 − 0 ready, out of 2 tasks, then the job's fit error.
  EXPECT_EQ(unschedulable->message.rfind("3/2 tasks in gang unschedulable: ", 0), 0u)
      << unschedulable->message;
  const Job* closed_fine = ssn.cluster().FindJob("ns/fine");
  ASSERT_TRUE(std::any_of(closed_fine->conditions.begin(), closed_fine->conditions.end(),
                          [](const PodGroupCondition& c) {
                            return c.type == "Scheduled" &&
                                   c.reason == "tasks in gang are ready to be scheduled";
                          }));
}

// A host failure inside a handler (here: a call over its memory budget) abandons that call only: the session logs and counts a fault naming plugin and point, the answer counts as
// none, and the next call runs normally.
TEST(HostSession, PolicyFaultIsContainedAndCounted) {
  testing::OnePolicySession ps("boom", R"(policy boom;
on node_order(task: Task, node: Node) -> float {
  if task.priority > 100 {
    let huge = [x for x in range(0, 1000000)];
    return float(len(huge));
  }
  return 5.0;
}
)");
  ASSERT_TRUE(ps.ssn);
  Session& ssn = *ps.ssn;
  Task* t = ssn.cluster().FindTask("ns-t-0");
  Node* n = ssn.cluster().FindNode("n1");
  size_t budget = PolicyCallMemoryBudget();
  SetPolicyCallMemoryBudget(1 << 20);  // 1 MiB: the 8 MB list cannot be built
  auto ok = ssn.NodeOrderFn(t, n);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 5.0);
  EXPECT_EQ(ssn.fault_count(), 0u);
  t->priority = 1000;
  (void)ssn.NodeOrderFn(t, n);
  EXPECT_EQ(ssn.fault_count(), 1u);
  ASSERT_EQ(ssn.decisions().faults.size(), 1u);
  EXPECT_EQ(ssn.decisions().faults[0],
            "plugin boom: node_order: host error: policy call exceeded its memory budget of "
            "1048576 bytes");
  SetPolicyCallMemoryBudget(budget);
  t->priority = 1;
  auto again = ssn.NodeOrderFn(t, n);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 5.0);
  EXPECT_EQ(ssn.fault_count(), 1u);
  ssn.Close();
}

}  // namespace
}  // namespace kiln
