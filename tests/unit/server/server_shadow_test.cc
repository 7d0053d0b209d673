// The shadow candidate (server/shadow.h): the decisions compared pod by pod, where a candidate's
// configuration comes from, and the live loop and the shadow running at once (the loop on its
// thread with a short period, the shadow on its own, /shadow read from a third).

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "runtime/cluster_spec.h"
#include "server/metrics.h"
#include "server/policy_set.h"
#include "server/scheduler_loop.h"
#include "server/shadow.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/server/server_fixtures.h"
#include "tests/unit/temp_dir.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::kiln::testing::TempDir;
using ::kiln::testing::WriteFileWhole;
using fixtures::FixedBinding;
using fixtures::WaitFor;

constexpr std::string_view kSpreadConf = R"(actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
)";

constexpr std::string_view kBinpackConf = R"(actions: "enqueue, allocate"
tiers:
- plugins:
  - name: predicates
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
)";

TEST(ShadowCompareTest, EachKindOfDifferenceIsOneEntryPerPod) {
  SessionDecisions live, shadow;
  live.binds = {{"a/same", "n1"}, {"a/moved", "n1"}, {"a/live-only", "n2"}};
  shadow.binds = {{"a/same", "n1"}, {"a/moved", "n2"}, {"a/shadow-only", "n3"}};
  live.evictions = {"a/victim", "a/both"};
  shadow.evictions = {"a/both"};
  shadow.pipelined = {{"a/piped", "n4"}};
  auto diffs = CompareDecisions(live, shadow);
  std::vector<std::string> got;
  for (const ShadowDiff& d : diffs) got.push_back(d.pod + " " + d.kind);
  EXPECT_EQ(got, (std::vector<std::string>{"a/live-only bind", "a/moved bind", "a/piped pipeline",
                                           "a/shadow-only bind", "a/victim evict"}));
  EXPECT_EQ(diffs[1].live.bind_node, "n1");
  EXPECT_EQ(diffs[1].shadow.bind_node, "n2");
  EXPECT_TRUE(CompareDecisions(live, live).empty());
}

TEST(ShadowSourcesTest, AConfKeepsTheLivePluginSourcesAPackBringsItsOwnConf) {
  PolicySources live;
  live.conf_file = "/etc/kiln/scheduler.conf";
  live.policy_dirs = {"/etc/kiln/policies"};
  live.packs_dir = "/etc/kiln/packs";
  live.trust_keys = {"/etc/kiln/team.pub"};
  PolicySources conf = ShadowSources("/etc/kiln/candidate.conf", live);
  EXPECT_EQ(conf.conf_file, "/etc/kiln/candidate.conf");
  EXPECT_EQ(conf.policy_dirs, live.policy_dirs);
  EXPECT_EQ(conf.packs_dir, live.packs_dir);
  EXPECT_TRUE(conf.conf_from_pack.empty());
  PolicySources pack = ShadowSources("/tmp/team-fairness-1.0.1.kpack", live);
  EXPECT_TRUE(pack.conf_file.empty());
  EXPECT_EQ(pack.conf_from_pack, "/tmp/team-fairness-1.0.1.kpack");
  EXPECT_EQ(pack.pack_files, std::vector<std::string>{"/tmp/team-fairness-1.0.1.kpack"});
  EXPECT_TRUE(pack.packs_dir.empty());  // the candidate replaces a live pack of its name
  EXPECT_EQ(pack.trust_keys, live.trust_keys);
}

struct Rig {
  TempDir dir;
  fs::path live_conf = dir.path() / "live" / "scheduler.conf";
  fs::path candidate = dir.path() / "candidate" / "scheduler.conf";
  FixedBinding binding;
  ServerMetrics metrics;
  std::unique_ptr<PolicyReloader> reloader;
  std::unique_ptr<ShadowRunner> shadow;
  std::unique_ptr<ShadowTapBinding> tap;
  std::unique_ptr<SchedulerLoop> loop;
  std::thread loop_thread;
  // How often the tap asked for a copy (spec_at) and took the snapshot's own objects (kept).
  std::atomic<int> copies{0}, kept{0};

  // `keep`: the binding hands over the objects of each snapshot (as kiln serve on the
  // Kubernetes API does) instead of the tap's copier thread taking a copy.
  // `loop`: false leaves the loop's side to the test (no loop thread).
  explicit Rig(std::optional<std::string_view> candidate_conf, bool keep = false,
               bool loop_runs = true) {
    fs::create_directories(live_conf.parent_path());
    fs::create_directories(candidate.parent_path());
    WriteFileWhole(live_conf, kSpreadConf);
    if (candidate_conf) WriteFileWhole(candidate, *candidate_conf);
    PolicySources sources;
    sources.conf_file = live_conf.string();
    reloader = std::make_unique<PolicyReloader>(sources, CompiledProviderFactory());
    Status s = reloader->LoadInitial();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().Format());
    ShadowOptions options;
    options.path = candidate.string();
    options.live_sources = sources;
    options.reload_quiet = 50ms;
    shadow = std::make_unique<ShadowRunner>(options, CompiledProviderFactory(), *reloader, &metrics);
    Status started = shadow->Start();
    EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().Format());
    std::function<std::shared_ptr<const ClusterSpec>(TimeNs)> kept_spec;
    if (keep)
      kept_spec = [this](TimeNs now) {
        ++kept;
        return std::make_shared<const ClusterSpec>(binding.Spec(now));
      };
    tap = std::make_unique<ShadowTapBinding>(
        binding, *shadow,
        [this](TimeNs now) {
          ++copies;
          return binding.Spec(now);
        },
        kept_spec);
    LoopOptions lo;
    lo.period = 10ms;
    lo.session_starts = [this] { shadow->LiveSessionStarts(); };
    lo.session_ends = [this] { shadow->LiveSessionEnds(); };
    loop = std::make_unique<SchedulerLoop>(*tap, *reloader, &metrics, lo);
    loop->SetObserver([this](const SessionResult& r, const PolicySet&) { shadow->LiveDone(&r); });
    if (loop_runs) loop_thread = std::thread([this] { loop->Run(); });
  }
  ~Rig() {
    loop->Stop();
    if (loop_thread.joinable()) loop_thread.join();
    shadow->Stop();
  }
  nlohmann::json State() { return nlohmann::json::parse(shadow->StatusJson()); }
};

TEST(ShadowRunnerTest, ABinpackCandidateDiffersWhileTheLiveLoopRuns) {
  Rig rig(kBinpackConf);
  // /shadow is read from this thread while the loop and the shadow run on theirs.
  ASSERT_TRUE(WaitFor([&] { return rig.State()["decisions"].size() >= 2; }))
      << rig.shadow->StatusJson();
  nlohmann::json st = rig.State();
  EXPECT_TRUE(st["active"].get<bool>());
  const nlohmann::json& d = st["decisions"][0];
  EXPECT_EQ(d["pod"], "c1/p1");
  EXPECT_EQ(d["kind"], "bind");
  EXPECT_EQ(d["live"]["bind"], "n2");    // spread: the emptier node
  EXPECT_EQ(d["shadow"]["bind"], "n1");  // binpack: the fuller one
  ASSERT_FALSE(d["liveExplain"].is_null()) << d.dump(2);
  ASSERT_FALSE(d["shadowExplain"].is_null()) << d.dump(2);
  EXPECT_EQ(d["liveExplain"]["result"]["bound"], "n2") << d.dump(2);
  EXPECT_EQ(d["shadowExplain"]["result"]["bound"], "n1") << d.dump(2);
  // Both chosen nodes are in each side's explanation, with their scores.
  EXPECT_TRUE(d["shadowExplain"]["nodes"].contains("n2")) << d.dump(2);
  EXPECT_GT(d["shadowExplain"]["nodes"]["n1"]["scores"]["binpack"].get<double>(), 0) << d.dump(2);
  std::string metrics = rig.metrics.Serialize();
  EXPECT_EQ(metrics.find("kiln_shadow_decisions_differ_total{kind=\"bind\"} 0\n"),
            std::string::npos)
      << metrics;
  // The live side decided as its own conf says, every session.
  EXPECT_GT(rig.binding.applied_count.load(), 0);
}

TEST(ShadowRunnerTest, AnIdenticalCandidateNeverDiffers) {
  Rig rig(kSpreadConf);
  ASSERT_TRUE(WaitFor([&] { return rig.shadow->sessions() >= 5; })) << rig.shadow->StatusJson();
  nlohmann::json st = rig.State();
  EXPECT_TRUE(st["decisions"].empty()) << st.dump(2);
  EXPECT_EQ(st["differ"]["bind"], 0);
  std::string metrics = rig.metrics.Serialize();
  EXPECT_NE(metrics.find("kiln_shadow_decisions_differ_total{kind=\"bind\"} 0\n"),
            std::string::npos)
      << metrics;
}

TEST(ShadowRunnerTest, TheSnapshotsOwnObjectsAreMirroredWithoutACopy) {
  Rig rig(kBinpackConf, /*keep=*/true);
  ASSERT_TRUE(WaitFor([&] { return rig.State()["decisions"].size() >= 2; }))
      << rig.shadow->StatusJson();
  const nlohmann::json d = rig.State()["decisions"][0];
  EXPECT_EQ(d["live"]["bind"], "n2");
  EXPECT_EQ(d["shadow"]["bind"], "n1");
  EXPECT_GE(rig.kept.load(), 2);
  EXPECT_EQ(rig.copies.load(), 0);  // the copier thread never ran
  EXPECT_EQ(rig.tap->late_copies(), 0);
}

// The shadow never runs beside a live session: a live session that starts before the shadow
// thread took its job holds the shadow session back until it ends. The loop's side is played by
// hand: session 1's snapshot and decisions are handed over, and session 2 has started before the
// shadow thread got to them (calling LiveSessionStarts before LiveDone fixes that interleaving).
TEST(ShadowRunnerTest, AShadowSessionWaitsWhileALiveSessionRuns) {
  Rig rig(kBinpackConf, /*keep=*/false, /*loop_runs=*/false);
  ASSERT_TRUE(WaitFor([&] { return rig.State()["active"].get<bool>(); })) << rig.shadow->StatusJson();
  const TimeNs now = 1'000'000'000;
  rig.shadow->LiveSessionStarts();  // session 1
  ASSERT_TRUE(rig.shadow->Wants());
  rig.shadow->Offer(std::make_shared<const ClusterSpec>(rig.binding.Spec(now)), {}, now, 0ns);
  rig.shadow->LiveSessionEnds();
  rig.shadow->LiveSessionStarts();  // session 2
  SessionResult live;
  live.time = now;
  live.index = 1;
  live.binds["c1/p1"] = "n2";
  rig.shadow->LiveDone(&live);
  ASSERT_TRUE(WaitFor([&] { return rig.shadow->paused(); })) << rig.shadow->StatusJson();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(rig.shadow->sessions(), 0);
  EXPECT_TRUE(rig.shadow->paused());
  EXPECT_FALSE(rig.shadow->Wants());  // still busy with session 1: session 2 is skipped
  rig.shadow->LiveSessionEnds();
  ASSERT_TRUE(rig.shadow->WaitIdle(60s));
  EXPECT_EQ(rig.shadow->sessions(), 1);
  nlohmann::json st = rig.State();
  EXPECT_GE(st["pausedSeconds"].get<double>(), 0.05) << st.dump(2);
  EXPECT_EQ(st["skipped"]["busy"], 1) << st.dump(2);
  ASSERT_EQ(st["decisions"].size(), 1u) << st.dump(2);  // the candidate binpacks: n1, not n2
  EXPECT_EQ(st["decisions"][0]["shadow"]["bind"], "n1") << st.dump(2);
}

// LoopOptions::session_starts and session_ends bracket every session, a failed one too: a
// shadow held back by a live session that failed would otherwise wait for good.
TEST(SchedulerLoopTest, SessionHooksBracketEverySessionAFailedOneToo) {
  Rig rig(std::nullopt, /*keep=*/false, /*loop_runs=*/false);
  struct Failing : ClusterBinding {
    const bool* inside = nullptr;
    bool snapshot_inside = false;
    Result<Cluster> Snapshot(TimeNs) override {
      snapshot_inside = *inside;
      return Error{"the API server is away", {}};
    }
    void Apply(const SessionResult&) override {}
  } failing;
  bool inside = false;
  int starts = 0, ends = 0;
  failing.inside = &inside;
  LoopOptions lo;
  lo.session_starts = [&] {
    ++starts;
    inside = true;
  };
  lo.session_ends = [&] {
    ++ends;
    inside = false;
  };
  SchedulerLoop loop(failing, *rig.reloader, nullptr, lo);
  EXPECT_FALSE(loop.RunOnce().ok());
  EXPECT_TRUE(failing.snapshot_inside);
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(ends, 1);
  SchedulerLoop good(rig.binding, *rig.reloader, nullptr, lo);
  EXPECT_TRUE(good.RunOnce().ok());
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(ends, 2);
  EXPECT_FALSE(inside);
}

TEST(ShadowRunnerTest, TheCandidateIsAddedAndRemovedWithItsFile) {
  Rig rig(std::nullopt);
  nlohmann::json st = rig.State();
  EXPECT_FALSE(st["active"].get<bool>());
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(rig.shadow->sessions(), 0);
  WriteFileWhole(rig.candidate, kBinpackConf);
  ASSERT_TRUE(WaitFor([&] { return rig.shadow->sessions() >= 2; })) << rig.shadow->StatusJson();
  fs::remove(rig.candidate);
  ASSERT_TRUE(WaitFor([&] { return !rig.State()["active"].get<bool>(); }))
      << rig.shadow->StatusJson();
  ASSERT_TRUE(rig.shadow->WaitIdle(10s));
  int64_t n = rig.shadow->sessions();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(rig.shadow->sessions(), n);
  // A candidate that does not load is reported; the live loop goes on.
  WriteFileWhole(rig.candidate, "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: nosuchplugin\n");
  EXPECT_NE(rig.State()["loadError"].get<std::string>().find("does not exist"), std::string::npos);
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json st = rig.State();
    return st.contains("loadError") &&
           st["loadError"].get<std::string>().find("nosuchplugin") != std::string::npos;
  })) << rig.shadow->StatusJson();
  EXPECT_FALSE(rig.State()["active"].get<bool>());  // never the removed candidate
  int live = rig.binding.applied_count.load();
  ASSERT_TRUE(WaitFor([&] { return rig.binding.applied_count.load() >= live + 3; }));
}

}  // namespace
}  // namespace kiln::server
