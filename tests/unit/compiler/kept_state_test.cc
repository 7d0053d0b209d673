// `state NAME: T across sessions`: the checker's rule (scalars only, located error), values that
// survive from one session to the next of the same scheduler.conf entry, a fresh start when the
// entry's arguments or policy text change, and the state memory budget left untouched.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/host/compiled_policy.h"
#include "compiler/host/kept_state.h"
#include "compiler/host/compiled_policy_provider.h"
#include "runtime/scheduler.h"
#include "runtime/session.h"
#include "server/metrics.h"
#include "server/policy_set.h"
#include "server/scheduler_loop.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "stdlib/runtime_support.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

TEST(KeptStateCheck, ScalarsAreAccepted) {
  EXPECT_EQ(testing::Diagnose("policy p;\n"
                              "state a: int across sessions;\n"
                              "state b: float across sessions = 1.5;\n"
                              "state c: bool across sessions = true;\n"
                              "state d: duration across sessions = 5m;\n"
                              "state e: time across sessions;\n"
                              "state f: quantity across sessions;\n"
                              "on session_open() { a += 1; e = now(); }\n"),
            "");
}

TEST(KeptStateCheck, OtherTypesAreRejectedAtTheType) {
  for (const char* type : {"string", "list<int>", "map<string, int>", "Resource", "int?"}) {
    SCOPED_TRACE(type);
    std::string out = testing::Diagnose(fmt::format("policy p;\nstate s: {} across sessions;\n", type));
    EXPECT_THAT(out, HasSubstr("test.policy:2:10: error: state `s` is kept across sessions, so its "
                               "type must be `int`, `float`, `bool`, `duration`, `time` or "
                               "`quantity`, not `"));
  }
}

TEST(KeptStateCheck, TheWordsAreContextual) {
  EXPECT_THAT(testing::Diagnose("policy p;\nstate s: int across session;\n"),
              HasSubstr("test.policy:2:14: error: expected `across sessions` after the state's "
                        "type, not `across session`"));
  // Elsewhere they are ordinary names.
  EXPECT_EQ(testing::Diagnose("policy p;\nstate across: int;\n"
                              "on session_open() { let sessions = 2; across = sessions; }\n"),
            "");
}

TEST(KeptStateCheck, TheClauseGoesBeforeTheInitialValue) {
  std::string out = testing::Diagnose("policy p;\nstate s: int = 0 across sessions;\n");
  EXPECT_THAT(out, HasSubstr("test.policy:2:"));
  EXPECT_THAT(out, HasSubstr("error"));
}

// `opened` counts the sessions of its conf entry, `per_session` is reset at each open; node_order
// answers both (and the first session's time) so a session shows them.
constexpr const char* kCounter = R"(policy counter;
arg step: int = 1;
state opened: int across sessions = 10;
state first_open: time across sessions = now();
state per_session: int;
on session_open() {
  opened += step;
  per_session += 1;
}
on node_order(task: Task, node: Node) -> float {
  return float(opened * 100 + per_session + int(first_open.unix_seconds) * 1000000);
}
)";

class KeptStateSessions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("kiln_kept_state_{}_{}", ::getpid(), counter_++);
    std::filesystem::create_directories(dir_);
    Write(kCounter);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& text) { std::ofstream(dir_ / "counter.policy") << text; }

  std::unique_ptr<PolicyProvider> Provider(std::shared_ptr<KeptStateStore> store = nullptr) {
    CompiledPolicyOptions options;
    options.policy_dirs = {dir_.string()};
    options.kept_state = std::move(store);
    auto p = MakeCompiledPolicyProvider(options);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().Format());
    return p.ok() ? std::move(*p) : nullptr;
  }

  static SchedulerConf Conf(int step) {
    auto conf = ParseSchedulerConf(fmt::format("actions: \"allocate\"\ntiers:\n- plugins:\n"
                                               "  - name: counter\n    arguments:\n      step: {}\n",
                                               step),
                                   "scheduler.conf");
    EXPECT_TRUE(conf.ok()) << conf.error().Format();
    return *conf;
  }

  // A conf load: the provider prepares the entry into a registry.
  static PluginRegistry Load(PolicyProvider& provider, const SchedulerConf& conf) {
    PluginRegistry reg;
    auto builder = provider.Prepare(conf.tiers[0].plugins[0]);
    EXPECT_TRUE(builder.ok() && *builder) << (builder.ok() ? "" : builder.error().Format());
    if (builder.ok() && *builder) EXPECT_TRUE(reg.Register("counter", **builder).ok());
    return reg;
  }

  // Opens a session at `now_seconds` and returns node_order's answer.
  static int64_t Session(const PluginRegistry& reg, const SchedulerConf& conf,
                         int64_t now_seconds) {
    testing::ClusterBuilder b;
    b.AddQueue("default");
    b.AddNode("n1", testing::Res(4000, 8e9));
    const Job& job = b.AddJob("ns", "a", "default", 1);
    b.AddTask(job, "a-0", testing::Res(1000, 1e9));
    EXPECT_TRUE(b.cluster.Link().ok());
    kiln::Session ssn(std::move(b.cluster), conf, now_seconds * 1'000'000'000, "s");
    EXPECT_TRUE(ssn.Open(reg).ok());
    auto score = ssn.NodeOrderFn(ssn.cluster().tasks().front(), ssn.cluster().nodes().front());
    EXPECT_TRUE(score.ok());
    ssn.Close();
    return score.ok() ? static_cast<int64_t>(*score) : -1;
  }

  std::filesystem::path dir_;
  static inline int counter_ = 0;
};

TEST_F(KeptStateSessions, ValuesSurviveFromOneSessionToTheNext) {
  auto provider = Provider();
  SchedulerConf conf = Conf(1);
  PluginRegistry reg = Load(*provider, conf);
  // Initialised at the entry's first session (now() of that session), then kept; per_session
  // starts again at each open.
  EXPECT_EQ(Session(reg, conf, 7), 7'000'000 + 1100 + 1);
  EXPECT_EQ(Session(reg, conf, 8), 7'000'000 + 1200 + 1);
  EXPECT_EQ(Session(reg, conf, 9), 7'000'000 + 1300 + 1);
}

// A first load to reload: the entry (step 1) loaded on a provider with a kept-state store, its
// first session run at 7 s. The reloads below load while that configuration still runs
// (server/policy_set.cc), on a second provider sharing the store.
class KeptStateReload : public KeptStateSessions {
 protected:
  void SetUp() override {
    KeptStateSessions::SetUp();
    first_ = Provider(store_);
    reg_ = std::make_unique<PluginRegistry>(Load(*first_, conf_));
    EXPECT_EQ(Session(*reg_, conf_, 7), 7'000'000 + 1101);
  }

  std::shared_ptr<KeptStateStore> store_ = std::make_shared<KeptStateStore>();
  std::unique_ptr<PolicyProvider> first_;
  SchedulerConf conf_ = Conf(1);
  std::unique_ptr<PluginRegistry> reg_;
};

TEST_F(KeptStateReload, AReloadThatLeavesTheEntryAsItWasKeepsIt) {
  auto second = Provider(store_);
  PluginRegistry reloaded = Load(*second, Conf(1));
  EXPECT_EQ(Session(reloaded, conf_, 8), 7'000'000 + 1201);
}

TEST_F(KeptStateReload, AChangedArgumentStartsAfresh) {
  auto second = Provider(store_);
  SchedulerConf changed = Conf(5);
  PluginRegistry reloaded = Load(*second, changed);
  EXPECT_EQ(Session(reloaded, changed, 8), 8'000'000 + 1501);
  // The unchanged entry, still loaded, kept its own.
  EXPECT_EQ(Session(*reg_, conf_, 9), 7'000'000 + 1201);
}

TEST_F(KeptStateReload, AChangedPolicyTextStartsAfresh) {
  Write(std::string(kCounter) + "// edited\n");
  auto second = Provider(store_);
  PluginRegistry reloaded = Load(*second, conf_);
  EXPECT_EQ(Session(reloaded, conf_, 8), 8'000'000 + 1101);
}

TEST_F(KeptStateSessions, WithoutAStoreEveryConfLoadStartsAfresh) {
  // `kiln test` runs every case on one provider: a case must not see the one before.
  SchedulerConf conf = Conf(1);
  auto provider = Provider();
  PluginRegistry reg = Load(*provider, conf);
  EXPECT_EQ(Session(reg, conf, 7), 7'000'000 + 1101);
  PluginRegistry other = Load(*provider, conf);
  EXPECT_EQ(Session(other, conf, 8), 8'000'000 + 1101);
  EXPECT_EQ(Session(reg, conf, 9), 7'000'000 + 1201);
}

TEST_F(KeptStateSessions, KeptScalarsAreOutsideTheStateMemoryBudget) {
  // 200 kept ints (1.6 KB) under a 1 KiB state budget: they are a fixed block of the entry, not
  // stores into the session's state arena, so the budget neither counts nor stops them.
  std::string text = "policy counter;\narg step: int = 1;\n";
  for (int i = 0; i < 200; ++i) text += fmt::format("state k{}: int across sessions = {};\n", i, i);
  text += "on session_open() { k199 += step; }\n"
          "on node_order(task: Task, node: Node) -> float { return float(k199 + k0); }\n";
  Write(text);
  size_t budget = PolicyStateMemoryBudget();
  SetPolicyStateMemoryBudget(1024);
  auto provider = Provider();
  SchedulerConf conf = Conf(1);
  PluginRegistry reg = Load(*provider, conf);
  EXPECT_EQ(Session(reg, conf, 7), 200);
  EXPECT_EQ(Session(reg, conf, 8), 201);
  SetPolicyStateMemoryBudget(budget);
}

// kiln serve: the reloader hands one store to every configuration it loads.
class SameCluster : public ClusterBinding {
 public:
  explicit SameCluster(ScenarioSpec spec) : spec_(std::move(spec)) {}
  Result<Cluster> Snapshot(TimeNs now) override { return SimulatedCluster(spec_).Snapshot(now); }
  void Apply(const SessionResult&) override {}

 private:
  ScenarioSpec spec_;
};

TEST(KeptStateServe, AReloadKeepsAnUnchangedEntrysStateAndResetsAChangedOne) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kiln_kept_serve_{}", ::getpid());
  std::filesystem::create_directories(dir / "policies");
  // n1 from the third session of the entry on.
  std::ofstream(dir / "policies" / "third.policy")
      << "policy third;\narg step: int = 1;\nstate opened: int across sessions;\n"
         "on session_open() { opened += step; }\n"
         "on node_order(task: Task, node: Node) -> float {\n"
         "  return (opened >= 3) == (node.name == \"n1\") ? 100.0 : 0.0;\n}\n";
  auto conf = [&](int step, const char* comment) {
    std::ofstream(dir / "scheduler.conf")
        << fmt::format("# {}\nactions: \"allocate\"\ntiers:\n- plugins:\n  - name: third\n"
                       "    arguments: {{step: {}}}\n",
                       comment, step);
  };
  conf(1, "first");
  auto spec = ParseScenario("name: s\ncluster:\n  nodes:\n"
                            "  - {name: n1, allocatable: {cpu: \"4\", memory: 8Gi}}\n"
                            "  - {name: n2, allocatable: {cpu: \"4\", memory: 8Gi}}\n"
                            "  pods:\n  - {name: p1, namespace: c1, requests: {cpu: \"1\"}}\n",
                            "s.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().Format();
  SameCluster binding(std::move(*spec));
  server::PolicySources sources;
  sources.conf_file = (dir / "scheduler.conf").string();
  sources.policy_dirs = {(dir / "policies").string()};
  server::PolicyReloader reloader(sources, server::CompiledProviderFactory());
  ASSERT_TRUE(reloader.LoadInitial().ok());
  server::ServerMetrics metrics;
  server::SchedulerLoop loop(binding, reloader, &metrics);
  auto bind = [&] {
    auto r = loop.RunOnce();
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
    return r.ok() && r->binds.count("c1/p1") ? r->binds.at("c1/p1") : std::string("-");
  };
  EXPECT_EQ(bind(), "n2");  // opened 1
  EXPECT_EQ(bind(), "n2");  // 2
  conf(1, "edited, same entry");
  ASSERT_EQ(reloader.Reload().kind, server::ReloadOutcome::Kind::kOk);
  EXPECT_EQ(bind(), "n1");  // 3: kept through the reload
  conf(2, "step changed");
  ASSERT_EQ(reloader.Reload().kind, server::ReloadOutcome::Kind::kOk);
  EXPECT_EQ(bind(), "n2");  // 2: a changed entry starts afresh (kept, it would be 5)
  std::filesystem::remove_all(dir);
}

TEST(KeptStateStore, KeysDifferWithNameTextAndArguments) {
  auto entry = [](const char* args) {
    auto conf = ParseSchedulerConf(fmt::format("actions: \"allocate\"\ntiers:\n- plugins:\n"
                                               "  - name: a\n    arguments: {}\n",
                                               args),
                                   "scheduler.conf");
    EXPECT_TRUE(conf.ok()) << conf.error().Format();
    return conf.ok() ? conf->tiers[0].plugins[0] : PluginOption{};
  };
  PluginOption a = entry("{x: 1, y: [\"1\", 2]}");
  PluginOption b = entry("{x: \"1\", y: [1, 2]}");
  PluginOption c = entry("{x: 1, y: [\"1\", 2]}");
  EXPECT_EQ(KeptStateStore::Key(a, 1), KeptStateStore::Key(c, 1));
  EXPECT_NE(KeptStateStore::Key(a, 1), KeptStateStore::Key(a, 2));
  EXPECT_NE(KeptStateStore::Key(a, 1), KeptStateStore::Key(b, 1));
}

}  // namespace
}  // namespace kiln
