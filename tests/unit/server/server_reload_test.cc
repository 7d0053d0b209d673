// Live reload (server/policy_set, server/config_watcher) and the serve loop
// (server/scheduler_loop): a rewritten conf changes the next session's decisions, a broken one
// is rejected whole with file:line and changes nothing, a ConfigMap-style `..data` swap is seen,
// bursts are coalesced, and sessions keep their period and their configuration.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/cluster_spec.h"
#include "runtime/scheduler.h"
#include "server/config_watcher.h"
#include "server/metrics.h"
#include "server/policy_set.h"
#include "server/scheduler_loop.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/server/server_fixtures.h"
#include "tests/unit/source_dir.h"
#include "tests/unit/temp_dir.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::string_view kBinpackConf = R"(actions: "enqueue, allocate"
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
)";

constexpr std::string_view kNodeorderConf = R"(actions: "enqueue, allocate"
tiers:
- plugins:
  - name: nodeorder
)";

using ::kiln::testing::TempDir;
using ::kiln::testing::WriteFileWhole;
using fixtures::FixedBinding;
using fixtures::WaitFor;

std::string BindOf(const SessionResult& r) {
  auto it = r.binds.find("c1/p1");
  return it == r.binds.end() ? "" : it->second;
}

struct Fixture {
  TempDir dir;
  fs::path conf = dir.path() / "scheduler.conf";
  fs::path policies = dir.path() / "policies";
  FixedBinding binding;
  ServerMetrics metrics;
  std::unique_ptr<PolicyReloader> reloader;
  std::unique_ptr<SchedulerLoop> loop;

  explicit Fixture(std::string_view initial = kBinpackConf) {
    fs::create_directories(policies);
    WriteFileWhole(conf, initial);
    PolicySources sources;
    sources.conf_file = conf.string();
    sources.policy_dirs = {policies.string()};
    reloader = std::make_unique<PolicyReloader>(sources, CompiledProviderFactory());
    reloader->AddObserver(
        [this](const ReloadOutcome& o, const PolicySet* active) { metrics.ObserveReload(o, active); });
    Status s = reloader->LoadInitial();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().Format());
    loop = std::make_unique<SchedulerLoop>(binding, *reloader, &metrics);
  }
  std::string Session() {
    auto r = loop->RunOnce();
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
    return r.ok() ? BindOf(*r) : "<error>";
  }
};

TEST(ServerReloadTest, RewrittenConfDecidesDifferentlyFromTheNextSession) {
  Fixture f;
  EXPECT_EQ(f.Session(), "n1");  // binpack: the fuller node
  EXPECT_EQ(f.reloader->Current()->generation, 1u);

  WriteFileWhole(f.conf, kNodeorderConf);
  ReloadOutcome o = f.reloader->Reload();
  ASSERT_EQ(o.kind, ReloadOutcome::Kind::kOk) << (o.error ? o.error->Format() : "");
  EXPECT_EQ(o.generation, 2u);
  EXPECT_EQ(f.Session(), "n2");  // leastrequested: the emptier node

  // The same files again: nothing to do, the generation stays.
  EXPECT_EQ(f.reloader->Reload().kind, ReloadOutcome::Kind::kUnchanged);
  EXPECT_EQ(f.reloader->Current()->generation, 2u);
  std::string text = f.metrics.Serialize();
  EXPECT_NE(text.find("kiln_config_reloads_total{result=\"ok\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("kiln_config_generation 2"), std::string::npos) << text;
}

struct BrokenCase {
  const char* name;
  std::string conf;                    // the rewritten scheduler.conf
  std::string policy_file;             // written into the policy dir when not empty
  std::string policy_text;
  std::string file_suffix;             // the error names this file ...
  int line;                            // ... at this line (0: not checked)
  std::string message;                 // ... and says this
};

TEST(ServerReloadTest, EachKindOfBrokenConfIsRejectedWholeWithFileAndLine) {
  const std::vector<BrokenCase> cases = {
      {"yaml syntax", "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: [binpack\n", "",
       "", "scheduler.conf", 0, ""},
      {"unknown plugin", "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: binpak\n",
       "", "", "scheduler.conf", 4, "unknown plugin `binpak`"},
      {"bad argument type",
       "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: binpack\n    arguments:\n"
       "      binpack.weight: heavy\n",
       "", "", "scheduler.conf", 6, "binpack.weight"},
      {"action typo", "actions: \"enqueue, alocate\"\ntiers: []\n", "", "", "scheduler.conf", 1,
       "alocate"},
      {"policy compile error",
       "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: mine\n", "mine.policy",
       "policy mine;\n\non node_order(task: Task, node: Node) -> float {\n  return task.nonexistent_field;\n}\n",
       "", 0, "mine"},
  };
  for (const BrokenCase& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    ASSERT_EQ(f.Session(), "n1");
    if (!c.policy_file.empty()) WriteFileWhole(f.policies / c.policy_file, c.policy_text);
    WriteFileWhole(f.conf, c.conf);
    ReloadOutcome o = f.reloader->Reload();
    ASSERT_EQ(o.kind, ReloadOutcome::Kind::kRejected);
    ASSERT_TRUE(o.error.has_value());
    std::string formatted = o.error->Format();
    if (!c.file_suffix.empty()) {
      EXPECT_TRUE(o.error->where.file.str().ends_with(c.file_suffix)) << formatted;
      EXPECT_GT(o.error->where.line, 0) << formatted;
    }
    if (c.line > 0) EXPECT_EQ(o.error->where.line, c.line) << formatted;
    if (!c.message.empty()) EXPECT_NE(formatted.find(c.message), std::string::npos) << formatted;
    // The last good configuration keeps running: same generation, same decision.
    EXPECT_EQ(o.generation, 1u);
    EXPECT_EQ(f.reloader->Current()->generation, 1u);
    EXPECT_EQ(f.Session(), "n1");
    // The same broken files are not reported twice; a fix is taken.
    EXPECT_EQ(f.reloader->Reload().kind, ReloadOutcome::Kind::kUnchanged);
    std::string text = f.metrics.Serialize();
    EXPECT_NE(text.find("kiln_config_reloads_total{result=\"rejected\"} 1"), std::string::npos)
        << text;
    if (!c.policy_file.empty()) fs::remove(f.policies / c.policy_file);
    WriteFileWhole(f.conf, kNodeorderConf);
    EXPECT_EQ(f.reloader->Reload().kind, ReloadOutcome::Kind::kOk);
    EXPECT_EQ(f.Session(), "n2");
  }
}

TEST(ServerReloadTest, UserPolicyEditedInItsDirectoryIsRecompiled) {
  // The same conf names a user policy; editing the policy file alone changes the decision.
  auto prefer = [](const char* node) {
    return "policy prefer;\n\non node_order(task: Task, node: Node) -> float {\n  return node.name == \"" +
           std::string(node) + "\" ? 100.0 : 0.0;\n}\n";
  };
  Fixture f;
  WriteFileWhole(f.policies / "prefer.policy", prefer("n1"));
  WriteFileWhole(f.conf, "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: prefer\n");
  ReloadOutcome o = f.reloader->Reload();
  ASSERT_EQ(o.kind, ReloadOutcome::Kind::kOk) << (o.error ? o.error->Format() : "");
  EXPECT_EQ(f.Session(), "n1");
  WriteFileWhole(f.policies / "prefer.policy", prefer("n2"));
  o = f.reloader->Reload();
  ASSERT_EQ(o.kind, ReloadOutcome::Kind::kOk) << (o.error ? o.error->Format() : "");
  EXPECT_EQ(o.generation, 3u);
  EXPECT_EQ(f.Session(), "n2");
}

TEST(ServerReloadTest, WatcherSeesAnEditAndCoalescesABurst) {
  Fixture f;
  ConfigWatcher watcher(f.reloader->WatchDirectories(), [&] { f.reloader->Reload(); }, 200ms);
  ASSERT_TRUE(watcher.Start().ok());
  // Ten writes in quick succession: one reload (maybe two if the machine stalls > 200 ms).
  for (int i = 0; i < 10; ++i) {
    WriteFileWhole(f.conf, i % 2 == 0 ? kNodeorderConf : kBinpackConf);
    std::this_thread::sleep_for(5ms);
  }
  WriteFileWhole(f.conf, kNodeorderConf);
  ASSERT_TRUE(watcher.WaitIdle(10s));
  EXPECT_GE(watcher.callbacks(), 1u);
  EXPECT_LE(watcher.callbacks(), 3u);
  EXPECT_EQ(f.Session(), "n2");
  watcher.Stop();
}

TEST(ServerReloadTest, ConfigMapDataSymlinkSwapIsPickedUp) {
  // The layout kubelet gives a mounted ConfigMap: scheduler.conf -> ..data/scheduler.conf,
  // ..data -> ..<timestamp>/; an update writes a new timestamp dir and renames a fresh symlink
  // over ..data.
  TempDir mount;
  fs::path m = mount.path();
  fs::create_directories(m / "..2024_01");
  WriteFileWhole(m / "..2024_01" / "scheduler.conf", kBinpackConf);
  fs::create_directory_symlink("..2024_01", m / "..data");
  fs::create_symlink("..data/scheduler.conf", m / "scheduler.conf");

  FixedBinding binding;
  PolicySources sources;
  sources.conf_file = (m / "scheduler.conf").string();
  PolicyReloader reloader(sources, CompiledProviderFactory());
  ASSERT_TRUE(reloader.LoadInitial().ok());
  SchedulerLoop loop(binding, reloader, nullptr);
  auto first = loop.RunOnce();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(BindOf(*first), "n1");

  ConfigWatcher watcher(reloader.WatchDirectories(), [&] { reloader.Reload(); }, 200ms);
  ASSERT_TRUE(watcher.Start().ok());
  fs::create_directories(m / "..2024_02");
  WriteFileWhole(m / "..2024_02" / "scheduler.conf", kNodeorderConf);
  fs::create_directory_symlink("..2024_02", m / "..data_tmp");
  fs::rename(m / "..data_tmp", m / "..data");
  fs::remove_all(m / "..2024_01");
  ASSERT_TRUE(WaitFor([&] { return reloader.Current()->generation == 2; }, 10s));
  ASSERT_TRUE(watcher.WaitIdle(10s));
  auto second = loop.RunOnce();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(BindOf(*second), "n2");
  EXPECT_EQ(reloader.Current()->generation, 2u);
}

TEST(ServerLoopTest, NextSessionStartsAPeriodAfterThePreviousStartedOrAtOnceWhenItOverran) {
  Fixture f;
  std::vector<std::chrono::steady_clock::time_point> starts;
  f.loop = std::make_unique<SchedulerLoop>(
      f.binding, *f.reloader, &f.metrics,
      LoopOptions{std::chrono::milliseconds(200), nullptr, nullptr});
  f.loop->SetObserver([&](const SessionResult&, const PolicySet&) {
    starts.push_back(std::chrono::steady_clock::now());
    if (starts.size() == 2) f.binding.snapshot_delay = 400ms;  // sessions 3.. overrun the period
    if (starts.size() == 5) f.loop->Stop();
  });
  auto t0 = std::chrono::steady_clock::now();
  int64_t ran = f.loop->Run();
  auto total = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(ran, 5);
  ASSERT_EQ(starts.size(), 5u);
  // The observer runs as each session ends. Session 2 ends ~200 ms after session 1 (the period).
  // Session 3 starts a period after session 2 started and takes ~400 ms: it ends ~600 ms after
  // session 2. It overran, so sessions 4 and 5 start at once and end ~400 ms apart; waiting a
  // period after an overrun would put them ~600 ms apart.
  auto gap = [&](int i) { return std::chrono::duration<double, std::milli>(starts[i] - starts[i - 1]).count(); };
  EXPECT_GE(gap(1), 190);
  EXPECT_GE(gap(2), 590);
  for (int i = 3; i < 5; ++i) {
    EXPECT_GE(gap(i), 395) << i;
    EXPECT_LT(gap(i), 550) << i;  // no extra period of waiting after an overrun
  }
  EXPECT_LT(total, 5s);
}

TEST(ServerLoopTest, StopLetsTheSessionInFlightFinishAndStartsNoOther) {
  Fixture f;
  f.binding.snapshot_delay = 300ms;
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);  // inside the first session's snapshot
    f.loop->Stop();
  });
  int64_t ran = f.loop->Run();
  stopper.join();
  EXPECT_EQ(ran, 1);
  std::lock_guard<std::mutex> lock(f.binding.mu);
  EXPECT_EQ(f.binding.applied.size(), 1u);  // the session in flight was applied
}

TEST(ServerLoopTest, ASessionKeepsTheConfigurationItOpenedWith) {
  Fixture f;
  f.binding.snapshot_delay = 300ms;
  std::atomic<bool> swapped{false};
  std::thread reloader([&] {
    std::this_thread::sleep_for(100ms);  // while the session is in its snapshot
    WriteFileWhole(f.conf, kNodeorderConf);
    swapped = f.reloader->Reload().kind == ReloadOutcome::Kind::kOk;
  });
  std::string first = f.Session();
  reloader.join();
  ASSERT_TRUE(swapped.load());
  EXPECT_EQ(first, "n1");       // opened on binpack, finished on binpack
  EXPECT_EQ(f.Session(), "n2");  // the next one runs on the new set
}

TEST(ServerLoopTest, SessionTimeWithAndWithoutAConcurrentReload) {
  // Reload compiles off the session thread; a session only takes a pointer. Sessions of the
  // example training cluster (Volcano's default conf) back to back for a while, then again while
  // another thread reloads changed confs as fast as it can (each one parsed, resolved, checked).
  auto spec = LoadScenarioFile(KilnSourceDir().string() + "/examples/scenarios/training-cluster.yaml");
  ASSERT_TRUE(spec.ok());
  auto conf_text = ReadTextFile(KilnSourceDir().string() + "/examples/conf/volcano-default.conf");
  ASSERT_TRUE(conf_text.ok());
  Fixture f(*conf_text);
  f.binding.Use(std::move(*spec));
  auto measure = [&](std::chrono::milliseconds how_long) {
    std::vector<double> ms;
    auto end = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < end) {
      auto t = std::chrono::steady_clock::now();
      auto r = f.loop->RunOnce();
      EXPECT_TRUE(r.ok());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
    std::sort(ms.begin(), ms.end());
    return std::make_pair(ms[ms.size() / 2], ms.size());
  };
  measure(300ms);  // warm up
  auto [quiet, quiet_n] = measure(1500ms);
  std::atomic<bool> stop{false};
  std::atomic<int> reloads{0};
  std::thread reloader([&] {
    for (int i = 0; !stop; ++i) {
      // Distinct texts (a comment changes the hash) so each one is really loaded.
      WriteFileWhole(f.conf, *conf_text + "# " + std::to_string(i) + "\n");
      if (f.reloader->Reload().kind == ReloadOutcome::Kind::kOk) ++reloads;
    }
  });
  auto [busy, busy_n] = measure(1500ms);
  stop = true;
  reloader.join();
  std::printf("[ measured ] median session %.3f ms over %zu sessions without reload, %.3f ms over %zu "
              "sessions during %d reloads\n",
              quiet, quiet_n, busy, busy_n, reloads.load());
  EXPECT_GT(reloads.load(), 0);
  // On a loaded 2-core machine the reload thread competes for the CPU, so only a gross stall
  // (a session waiting for a compile or a lock) would fail this.
  EXPECT_LT(busy, quiet * 3 + 5);
}

TEST(ServerMetricsTest, SessionFamiliesCarryVolcanoNamesAndLabels) {
  Fixture f;
  ASSERT_EQ(f.Session(), "n1");
  std::string text = f.metrics.Serialize();
  for (const char* needle :
       {"# TYPE volcano_e2e_scheduling_latency_milliseconds histogram",
        "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"5\"}",
        "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"81920\"}",
        "# TYPE volcano_open_session_duration_milliseconds histogram",
        "volcano_action_scheduling_latency_milliseconds_count{action=\"allocate\"} 1",
        "volcano_action_scheduling_latency_milliseconds_count{action=\"enqueue\"} 1",
        "volcano_plugin_scheduling_latency_milliseconds_count{OnSession=\"OnSessionOpen\",plugin=\"binpack\"} 1",
        "volcano_plugin_scheduling_latency_milliseconds_count{OnSession=\"OnSessionClose\",plugin=\"binpack\"} 1",
        "volcano_schedule_attempts_total{result=\"scheduled\"} 1",
        "volcano_schedule_attempts_total{result=\"unschedulable\"} 0",
        "volcano_unschedule_job_count 0", "volcano_total_preemption_attempts 0",
        "volcano_queue_allocated_milli_cpu{queue_name=\"default\"}", "kiln_config_generation 1",
        "kiln_sessions_total 1"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
}

}  // namespace
}  // namespace kiln::server
