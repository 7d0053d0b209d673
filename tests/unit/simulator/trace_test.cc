// Trace replay: arrivals, completions, skipped idle periods, metrics and the summary, checked
// against a small trace whose every number is computed by hand below.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/output_format.h"
#include "runtime/session.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "tests/unit/scenario_test_util.h"

namespace kiln {
namespace {

ScenarioSpec Spec(std::string_view text) { return testing::MustParse(text, "trace.yaml"); }

// One node of 4 cpu, plugin-free allocate (a pod fits when the node's idle cpu covers it), a
// 10s period. Four single-pod jobs:
//
//   job  queue  created  cpu  duration
//   a    q1        0s     2     30s
//   b    q1        5s     2     60s
//   c    q2       12s     4     20s
//   d    q2      100s     1     10s
//
// By hand, session by session (t = session time; "after" = the cluster once its decisions are
// applied, which is what the metrics sample):
//   t=0    a arrives, enqueue + allocate bind it (2/4 cpu).                        util 0.5
//   t=10   b arrived at 5: bound (4/4).                                            util 1.0
//   t=20   c arrived at 12: needs 4, 0 free: pending.                              util 1.0
//   t=30   a finished at 0+30 = 30: 2 free, c still does not fit; a's finished job is deleted.
//          fragmentation cpu: the median pending cpu request is 4; all 2 free cpu sit on a node
//          that cannot host 4 → 1.0.                                               util 0.5
//   t=40   nothing changes and nothing reads the clock: quiet. Next event: b ends at 10+60 = 70,
//          so the periods at 50 and 60 are skipped (2).                            util 0.5
//   t=70   b finished: c bound (4/4).                                              util 1.0
//   t=80   c Running (its PodGroup phase moves): a change.                         util 1.0
//   t=90   c finished at 70+20 = 90.                                               util 0
//   t=100  d arrives and is bound (1/4).                                           util 0.25
//   t=110  d finished at 110.                                                      util 0
//   t=120  nothing left, nothing to come: idle, the run stops (before --until 5m). util 0
// Sessions run: 0,10,20,30,40,70,80,90,100,110,120 = 11.
//
// Jobs (arrival, first bind, completion → waiting, JCT):
//   a: 0, 0, 30 → 0, 30      b: 5, 10, 70 → 5, 65
//   c: 12, 70, 90 → 58, 78   d: 100, 100, 110 → 0, 10
// Queues, nearest rank (rank ⌈p/100·n⌉ of the sorted waits):
//   q1 waits [0, 5]:  mean 2.5, p50 = rank 1 = 0, p95 = rank 2 = 5, max 5
//   q2 waits [0, 58]: mean 29,  p50 = 0,          p95 = 58,         max 58
// Mean cpu utilisation, each sample held until the next (the last for one period, 10s):
//   0.5·10 + 1·10 + 1·10 + 0.5·10 + 0.5·30 + 1·10 + 1·10 + 0·10 + 0.25·10 + 0·10 + 0·10
//   = 67.5 over 130s = 0.5192307…
constexpr std::string_view kTrace = R"(
name: hand-trace
conf: |
  actions: "enqueue, allocate"
  tiers: []
now: "2025-01-01T00:00:00Z"
cluster:
  queues: [{name: q1}, {name: q2}]
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi}}
  podGroups:
  - {name: a, namespace: t, queue: q1, creationTimestamp: "2025-01-01T00:00:00Z"}
  - {name: b, namespace: t, queue: q1, creationTimestamp: "2025-01-01T00:00:05Z"}
  - {name: c, namespace: t, queue: q2, creationTimestamp: "2025-01-01T00:00:12Z"}
  - {name: d, namespace: t, queue: q2, creationTimestamp: "2025-01-01T00:01:40Z"}
  pods:
  - {name: a0, namespace: t, group: a, requests: {cpu: "2"}, duration: 30s, creationTimestamp: "2025-01-01T00:00:00Z"}
  - {name: b0, namespace: t, group: b, requests: {cpu: "2"}, duration: 60s, creationTimestamp: "2025-01-01T00:00:05Z"}
  - {name: c0, namespace: t, group: c, requests: {cpu: "4"}, duration: 20s, creationTimestamp: "2025-01-01T00:00:12Z"}
  - {name: d0, namespace: t, group: d, requests: {cpu: "1"}, duration: 10s, creationTimestamp: "2025-01-01T00:01:40Z"}
)";

constexpr TimeNs kSecond = 1'000'000'000;

Result<SimulationResult> Replay(const ScenarioSpec& spec, bool every_period) {
  auto conf = ResolveScenarioConf(spec, nullptr, "");
  if (!conf) return conf.error();
  static RegistryPolicyProvider none;
  SimulatorOptions options;
  options.period = 10 * kSecond;
  options.until = spec.now + 300 * kSecond;
  options.every_period = every_period;
  auto sim = Simulator::Create(spec, std::move(*conf), none, options);
  if (!sim) return sim.error();
  return (*sim)->Run();
}

double Cpu(const std::vector<std::pair<std::string, double>>& shares) {
  for (const auto& [name, v] : shares)
    if (name == "cpu") return v;
  return -1;
}

TEST(TraceTest, HandComputedSummary) {
  ScenarioSpec spec = Spec(kTrace);
  auto run = Replay(spec, false);
  ASSERT_TRUE(run.ok()) << run.error().Format();
  ASSERT_TRUE(run->trace);

  std::vector<int64_t> times;
  for (const SessionResult& s : run->sessions) times.push_back((s.time - spec.now) / kSecond);
  EXPECT_EQ(times, (std::vector<int64_t>{0, 10, 20, 30, 40, 70, 80, 90, 100, 110, 120}));
  EXPECT_EQ(run->summary.sessions_run, 11);
  EXPECT_EQ(run->summary.sessions_skipped, 2);
  EXPECT_EQ(run->summary.stopped, "idle");
  EXPECT_EQ(run->sessions[0].binds.at("t/a0"), "n1");
  EXPECT_EQ(run->sessions[1].binds.at("t/b0"), "n1");
  EXPECT_TRUE(run->sessions[2].unschedulable.count("t/c0"));
  EXPECT_EQ(run->sessions[5].binds.at("t/c0"), "n1");  // t=70
  EXPECT_EQ(run->sessions[8].binds.at("t/d0"), "n1");  // t=100

  std::vector<double> util;
  for (const SessionMetrics& m : run->metrics) util.push_back(Cpu(m.utilisation));
  EXPECT_EQ(util, (std::vector<double>{0.5, 1, 1, 0.5, 0.5, 1, 1, 0, 0.25, 0, 0}));
  EXPECT_EQ(run->metrics[2].pending, 1);
  EXPECT_EQ(run->metrics[2].running, 2);
  EXPECT_EQ(run->metrics[2].queues.at("q2").pending, 1);
  EXPECT_DOUBLE_EQ(run->metrics[2].queues.at("q1").allocated.cpu(), 4000);
  ASSERT_EQ(run->metrics[3].fragmentation.size(), 1u);
  EXPECT_DOUBLE_EQ(Cpu(run->metrics[3].fragmentation), 1.0);
  EXPECT_TRUE(run->metrics[0].fragmentation.empty());  // nothing pending

  const TraceSummary& s = run->summary;
  ASSERT_EQ(s.jobs.size(), 4u);
  auto secs = [&](std::optional<TimeNs> t) { return t ? (*t - spec.now) / kSecond : -1; };
  struct Want {
    const char* uid;
    int64_t arrival, bind, done;
  };
  for (const Want& w : {Want{"t/a", 0, 0, 30}, Want{"t/b", 5, 10, 70}, Want{"t/c", 12, 70, 90},
                        Want{"t/d", 100, 100, 110}}) {
    auto it = std::find_if(s.jobs.begin(), s.jobs.end(),
                           [&](const JobRecord& j) { return j.uid == w.uid; });
    ASSERT_NE(it, s.jobs.end()) << w.uid;
    EXPECT_EQ(secs(it->arrival), w.arrival) << w.uid;
    EXPECT_EQ(secs(it->first_bind), w.bind) << w.uid;
    EXPECT_EQ(secs(it->completion), w.done) << w.uid;
  }
  const WaitingStats& q1 = s.queues.at("q1");
  EXPECT_EQ(q1.jobs, 2);
  EXPECT_DOUBLE_EQ(q1.mean, 2.5);
  EXPECT_DOUBLE_EQ(q1.p50, 0);
  EXPECT_DOUBLE_EQ(q1.p95, 5);
  EXPECT_DOUBLE_EQ(q1.max, 5);
  const WaitingStats& q2 = s.queues.at("q2");
  EXPECT_DOUBLE_EQ(q2.mean, 29);
  EXPECT_DOUBLE_EQ(q2.p50, 0);
  EXPECT_DOUBLE_EQ(q2.p95, 58);
  EXPECT_DOUBLE_EQ(q2.max, 58);
  EXPECT_NEAR(Cpu(s.mean_utilisation), 67.5 / 130, 1e-12);

  // The JSON the contract names: per-session metrics and the summary.
  auto doc = nlohmann::json::parse(cli::FormatJson(*run));
  const auto& m3 = doc["sessions"][3]["metrics"];
  EXPECT_EQ(m3["time"], "2025-01-01T00:00:30Z");
  EXPECT_EQ(m3["pending"], 1);
  EXPECT_EQ(m3["running"], 1);
  EXPECT_EQ(m3["utilisation"]["cpu"], 0.5);
  EXPECT_EQ(m3["fragmentation"]["cpu"], 1.0);
  EXPECT_EQ(m3["queues"]["q1"]["allocated"]["cpu"], "2");
  EXPECT_EQ(m3["queues"]["q2"]["pending"], 1);
  const auto& sum = doc["summary"];
  EXPECT_EQ(sum["jobs"]["t/c"]["arrival"], "2025-01-01T00:00:12Z");
  EXPECT_EQ(sum["jobs"]["t/c"]["firstBind"], "2025-01-01T00:01:10Z");
  EXPECT_EQ(sum["jobs"]["t/c"]["completion"], "2025-01-01T00:01:30Z");
  EXPECT_EQ(sum["jobs"]["t/c"]["waitingSeconds"], 58.0);
  EXPECT_EQ(sum["jobs"]["t/c"]["jctSeconds"], 78.0);
  EXPECT_EQ(sum["queues"]["q2"]["waitingSeconds"]["p95"], 58.0);
  EXPECT_EQ(sum["utilisation"]["overTime"].size(), 11u);

  // The table ends with the same summary for people.
  std::string table = cli::FormatTable(*run);
  EXPECT_NE(table.find("11 sessions run, 2 idle periods skipped, stopped by idle"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("mean 29.00, p50 0.00, p95 58.00, max 58.00"), std::string::npos) << table;
}

TEST(TraceTest, SkippingDecidesTheSameAsEveryPeriod) {
  ScenarioSpec spec = Spec(kTrace);
  auto fast = Replay(spec, false);
  auto slow = Replay(spec, true);
  ASSERT_TRUE(fast.ok() && slow.ok());
  EXPECT_EQ(slow->summary.sessions_skipped, 0);
  EXPECT_EQ(slow->sessions.size(), fast->sessions.size() + 2);
  size_t k = 0;
  for (const SessionResult& s : slow->sessions) {
    if (k < fast->sessions.size() && fast->sessions[k].time == s.time) {
      EXPECT_EQ(fast->sessions[k].binds, s.binds);
      EXPECT_EQ(fast->sessions[k].evictions, s.evictions);
      EXPECT_EQ(fast->sessions[k].pod_group_phases, s.pod_group_phases);
      ++k;
    } else {
      // A skipped period: it would have decided nothing.
      EXPECT_TRUE(s.binds.empty() && s.evictions.empty()) << "session " << s.index;
    }
  }
  EXPECT_EQ(k, fast->sessions.size());
  EXPECT_EQ(fast->summary.queues.at("q2").mean, slow->summary.queues.at("q2").mean);
  EXPECT_DOUBLE_EQ(Cpu(fast->summary.mean_utilisation), Cpu(slow->summary.mean_utilisation));
}

TEST(TraceTest, NotYetArrivedObjectsAreNotInTheCluster) {
  ScenarioSpec spec = Spec(kTrace);
  SimulatedCluster cluster(spec, /*trace=*/true);
  EXPECT_EQ(cluster.state().cluster.pods.size(), 1u);  // only a0 exists at `now`
  auto next = cluster.NextEvent();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, spec.now + 5 * kSecond);  // b arrives
  auto snap = cluster.Snapshot(spec.now + 12 * kSecond);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(cluster.state().cluster.pods.size(), 3u);  // a0, b0, c0
  // Without trace replay (a single session) every object is there from the start.
  SimulatedCluster single(spec);
  EXPECT_EQ(single.state().cluster.pods.size(), 4u);
}

TEST(TraceTest, NearestRankPercentile) {
  std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRankPercentile(v, 50), 5);   // rank ⌈5⌉ = 5
  EXPECT_EQ(NearestRankPercentile(v, 95), 10);  // rank ⌈9.5⌉ = 10
  EXPECT_EQ(NearestRankPercentile(v, 10), 1);
  EXPECT_EQ(NearestRankPercentile({7}, 95), 7);
}

}  // namespace
}  // namespace kiln
