// Maps and victim marking after the call-overhead work (issue #4): arena-resident KMaps, the
// inline scan of small int-keyed maps, the switch to the hashed index past kMapLinearLimit
// entries, one slot lookup for `m[k] op= simple`, and the inline merge that marks victims.
// Each test crosses the boundary its fast path stops at, so a wrong fast path or a wrong
// fallback both fail.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

using Loaded = testing::LoadedPolicy;

std::unique_ptr<Loaded> Load(const std::string& text) {
  return testing::LoadPolicy(text, "test/codegen_maps_");
}

// Runs `on node_order` with `body`; -12345 when the call was abandoned (a fault).
double EvalFloat(const std::string& body, const std::string& prelude = "") {
  return testing::EvalNodeOrder(body, prelude, "test/codegen_maps_eval_");
}

TEST(CodegenMaps, IntKeysAcrossTheLinearLimit) {
  // 100 keys: the first 16 are found by the inline scan, the rest through the hashed index.
  // Σ_{i<100} i = 4950 read back by key; a missing key reads 0 and is not `in` the map.
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "for i in range(0, 100) { m[i * 7] += i; }\n"
                      "var total = 0;\n"
                      "for i in range(0, 100) { total += m[i * 7]; }\n"
                      "if 5 in m or not (693 in m) { return -1.0; }\n"
                      "return float(total * 1000 + len(m) + m[5]);"),
            4950.0 * 1000 + 100);
  // Insertion order survives the index: the first key iterated is the first inserted.
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "for i in range(0, 40) { m[1000 - i] = i; }\n"
                      "for k, v in m { return float(k * 100 + v); }\n"
                      "return -1.0;"),
            100000.0);
}

// Past the linear limit JIT'd code probes KMap's hash index inline (codegen MapFindIntFn): with
// 3000 keys some buckets collide, so present keys are found after stepping over others' entries
// and absent keys stop at the first empty bucket, as KMap::FindInt does.
TEST(CodegenMaps, InlineHashProbeFindsEveryKeyAndNoOther) {
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "for i in range(0, 3000) { m[i * 64] = i + 1; }\n"
                      "var found = 0;\n"
                      "var wrong = 0;\n"
                      "for i in range(0, 3000) {\n"
                      "  if m[i * 64] == i + 1 { found += 1; } else { wrong += 1; }\n"
                      "  if (i * 64 + 1) in m or m.get(i * 64 + 32) != none { wrong += 1; }\n"
                      "}\n"
                      "return float(found * 1000 + wrong);"),
            3000.0 * 1000);
}

TEST(CodegenMaps, StringKeysAcrossTheLinearLimit) {
  EXPECT_EQ(EvalFloat("var m: map<string, int> = {};\n"
                      "for i in range(0, 50) { m[\"k\" + string(i)] += i + 1; }\n"
                      "m[\"k49\"] += 100;\n"
                      "return float(m[\"k0\"] + m[\"k17\"] + m[\"k49\"] + m[\"nope\"] + len(m));"),
            1.0 + 18 + 150 + 0 + 50);
}

TEST(CodegenMaps, CompoundAssignmentWithAPolicyCallLooksTheSlotUpAgain) {
  // bump() inserts 30 keys into the state map while `s[0] += bump()` is evaluated: the slot of
  // key 0 moves when the map grows, so the store must use a fresh lookup.
  EXPECT_EQ(testing::EvalInAllocate("s[0] += 1;\n"
                      "s[0] += bump();\n"
                      "return float(s[0] * 1000 + len(s));",
                      "state s: map<int, int>;\n"
                      "fn bump() -> int {\n"
                      "  for i in range(1, 31) { s[i] = i; }\n"
                      "  return 5;\n"
                      "}\n",
                      "test/codegen_maps_state_"),
            6.0 * 1000 + 31);
}

// The policy `name`: a state map counting each job's allocations; job_order compares the counts.
std::string SeenCounter(const std::string& name) {
  return "policy " + name + R"(;
state seen: map<Job, int>;
on allocate(task: Task) {
  seen[task.job] += 1;
}
on job_order(l: Job, r: Job) -> int {
  return seen[l] - seen[r];
}
)";
}

TEST(CodegenMaps, StateMapPastTheLimitPersistsAcrossCalls) {
  auto l = Load(SeenCounter("persist"));
  ASSERT_TRUE(l);
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::unique_ptr<Task>> tasks;
  for (int j = 0; j < 40; ++j) {
    jobs.push_back(std::make_unique<Job>());
    for (int t = 0; t <= j % 5; ++t) {
      tasks.push_back(std::make_unique<Task>());
      tasks.back()->job = jobs.back().get();
      l->Fn<ExtensionPoint::OnAllocate>()(&l->ctx, tasks.back().get());
    }
  }
  auto order = l->Fn<ExtensionPoint::JobOrder>();
  EXPECT_EQ(order(&l->ctx, jobs[4].get(), jobs[0].get()), 1);   // 5 vs 1
  EXPECT_EQ(order(&l->ctx, jobs[35].get(), jobs[39].get()), -1);  // 1 vs 5
  EXPECT_EQ(order(&l->ctx, jobs[2].get(), jobs[37].get()), 0);   // 3 vs 3
}

// Past the linear limit a map keyed by a view also keeps a table by the view's dense index
// (KMap::dense), which a lookup takes only when the key stored at that entry is the key looked
// up. Jobs inserted out of index order, jobs sharing an index, with index -1 or far beyond the
// map's size, and absent jobs whose index has an entry: every present job reads its own count,
// every absent one 0 — a lookup that trusted the table without checking the key, or that missed
// keys the table does not hold, fails. A state map keeps its table from the first entry, so a
// dozen jobs go through it too.
void CheckDenseTable(int n) {
  SCOPED_TRACE(n);
  auto l = Load(SeenCounter("dense"));
  ASSERT_TRUE(l);
  auto index_of = [](int j) -> int64_t {
    if (j < 250) return (j * 97) % 250;            // a permutation: inserted out of order
    if (j < 270) return j - 250;                   // shares an index with a job above
    if (j < 285) return -1;                        // outside any cluster
    return int64_t{1'000'000'000} + j;             // far beyond the map's size
  };
  std::vector<std::unique_ptr<Job>> jobs, absent;
  std::vector<std::unique_ptr<Task>> tasks;
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  for (int j = 0; j < n; ++j) {
    jobs.push_back(std::make_unique<Job>());
    jobs.back()->index = index_of(j);
    for (int k = 0; k <= j % 7; ++k) {
      tasks.push_back(std::make_unique<Task>());
      tasks.back()->job = jobs.back().get();
      allocate(&l->ctx, tasks.back().get());
    }
  }
  for (int a = 0; a < 40; ++a) {
    absent.push_back(std::make_unique<Job>());
    absent.back()->index = a < 30 ? (a * 97) % 250 : -1;  // the first 30 collide with present jobs
  }
  // job_order answers a sign: comparing with jobs 0..6 (counts 1..7) and an absent job pins
  // each count exactly.
  auto order = l->Fn<ExtensionPoint::JobOrder>();
  auto sign = [](int v) { return (v > 0) - (v < 0); };
  auto expect_count = [&](const Job* job, int count, const std::string& what) {
    EXPECT_EQ(order(&l->ctx, job, absent.back().get()), sign(count)) << what;
    for (int k = 0; k < 7; ++k)
      EXPECT_EQ(order(&l->ctx, job, jobs[k].get()), sign(count - (k + 1))) << what << " vs " << k;
  };
  for (int j = 0; j < n; ++j) expect_count(jobs[j].get(), j % 7 + 1, "job " + std::to_string(j));
  for (size_t a = 0; a < absent.size(); ++a)
    expect_count(absent[a].get(), 0, "absent job " + std::to_string(a));
}
TEST(CodegenMaps, DenseTableOfAViewKeyedMapIsOnlyAHint) {
  CheckDenseTable(300);  // past the linear limit
  CheckDenseTable(12);   // a state map keeps its table from the first entry
}

// Victims chosen per job like gang's rule (keep 2 per job), over more jobs than the linear limit,
// and the same set returned in reverse order (not a subsequence of the candidates: the host
// marks it).
TEST(CodegenMaps, VictimsFromAPerJobMapAreMarkedInAnyOrder) {
  auto l = Load(R"(policy perjob;
on preemptable(preemptor: Task, candidates: list<Task>) -> Victims {
  var kept: map<Job, int> = {};
  var chosen: list<Task> = [];
  for c in candidates {
    kept[c.job] += 1;
    if kept[c.job] > 2 { chosen = chosen + [c]; }
  }
  return victims(chosen);
}
on reclaimable(reclaimer: Task, candidates: list<Task>) -> Victims {
  var kept: map<Job, int> = {};
  var chosen: list<Task> = [];
  for c in candidates {
    kept[c.job] += 1;
    if kept[c.job] > 2 { chosen = [c] + chosen; }
  }
  return victims(chosen);
}
)");
  ASSERT_TRUE(l);
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::unique_ptr<Task>> tasks;
  for (int j = 0; j < 24; ++j) jobs.push_back(std::make_unique<Job>());
  std::vector<const Task*> candidates;
  // Round-robin over the jobs, 4 tasks each: the 3rd and 4th round are victims.
  for (int round = 0; round < 4; ++round)
    for (auto& job : jobs) {
      tasks.push_back(std::make_unique<Task>());
      tasks.back()->job = job.get();
      candidates.push_back(tasks.back().get());
    }
  for (auto point : {ExtensionPoint::Preemptable, ExtensionPoint::Reclaimable}) {
    auto fn = point == ExtensionPoint::Preemptable ? l->Fn<ExtensionPoint::Preemptable>()
                                                   : l->Fn<ExtensionPoint::Reclaimable>();
    std::vector<uint8_t> selected(candidates.size(), 0);
    EXPECT_EQ(fn(&l->ctx, candidates[0], candidates.data(), candidates.size(), selected.data()), 1);
    for (size_t i = 0; i < candidates.size(); ++i)
      EXPECT_EQ(selected[i], i >= 48 ? 1 : 0) << Info(point).handler << " candidate " << i;
  }
}

TEST(CodegenMaps, MapGrowthCountsAgainstTheCallMemoryBudget) {
  size_t budget = PolicyCallMemoryBudget();
  SetPolicyCallMemoryBudget(256 << 10);
  // 100k int entries need ~2.6 MB of keys, values and index: the call is abandoned.
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "for i in range(0, 100000) { m[i] = i; }\n"
                      "return float(len(m));"),
            -12345.0);
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "for i in range(0, 1000) { m[i] = i; }\n"
                      "return float(len(m));"),
            1000.0);
  SetPolicyCallMemoryBudget(budget);
}

}  // namespace
}  // namespace kiln
