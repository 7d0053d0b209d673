// Containment of misbehaving policies (issue #16): a call over its loop budget is abandoned and
// counted as a budget fault, other faults (allocation over the memory budget, a host error) are
// contained the same way with their own kind, and the session's watchdog disables a plugin that
// keeps faulting.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <vector>

#include "stdlib/runtime_support.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/host/compiled_policy_provider.h"
#include "compiler/passes/cost.h"
#include "runtime/abi.h"
#include "runtime/session.h"
#include "tests/unit/compiler/compiled_plugin_fixture.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/temp_dir.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The processor time this process spent since `start`. The bounds below say a budget stopped the
// work early; wall time would also count the other jobs of a shared, loaded machine.
double ProcessorSecondsSince(std::clock_t start) {
  return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

using ::kiln::testing::PolicyDir;

using LimitsGuard = ::kiln::testing::PolicyLimitsGuard;

// OnePolicySession, which must prepare.
struct PolicySession : testing::OnePolicySession {
  explicit PolicySession(const std::string& name, const std::string& text,
                         const std::string& entry = "")
      : OnePolicySession(name, text, entry) {
    EXPECT_FALSE(plugin->error.has_value()) << plugin->error->Format();
  }
  // node_order's answer for the task on the node; NaN, with a test failure, when it failed.
  double Score() {
    auto score = ssn->NodeOrderFn(task, node);
    EXPECT_TRUE(score.ok()) << (score.ok() ? "" : score.error().Format());
    return score.ok() ? *score : std::numeric_limits<double>::quiet_NaN();
  }
};

// Every test may change the process-wide limits: they are restored after it.
class PolicyContainment : public ::testing::Test {
 protected:
  LimitsGuard limits_;
};

// Calls `call` until the plugin of `ssn` is disabled, `most` times at the most; returns how many
// calls ran.
template <typename Call>
int CallUntilDisabled(const Session& ssn, int most, Call call) {
  int calls = 0;
  while (!ssn.plugin_disabled(0) && calls < most) {
    call();
    ++calls;
  }
  return calls;
}

// The only plugin of `ssn`, `name`, is disabled for the rest of the session by one fault of `kind`
// whose text (the last fault's) holds `why`.
void ExpectDisabledByOneFault(const Session& ssn, const std::string& name, FaultKind kind,
                              const std::string& why) {
  EXPECT_TRUE(ssn.plugin_disabled(0));
  EXPECT_EQ(ssn.plugins()[0].faults_by_kind[static_cast<size_t>(kind)], 1u);
  ASSERT_FALSE(ssn.decisions().faults.empty());
  EXPECT_NE(ssn.decisions().faults.back().find(why), std::string::npos)
      << ssn.decisions().faults.back();
  EXPECT_EQ(ssn.decisions().disabled_plugins, std::vector<std::string>{name});
}

// A node_order of `outer` × `inner` multiply-and-modulo steps: a few tens of milliseconds a call
// for the wall-time budgets below.
std::string BusyPolicy(const std::string& name, int outer, int inner) {
  return fmt::format(R"(policy {};
on node_order(task: Task, node: Node) -> float {{
  var total = 0;
  for i in range({}) {{
    for j in range({}) {{ total += (i * j) % 7; }}
  }}
  return float(total % 5) + 1.0;
}}
)",
                     name, outer, inner);
}

// 9 million iterations: within the static cost budget, over the small run-time budgets below.
constexpr const char* kSpin = R"(policy spin;
on node_order(task: Task, node: Node) -> float {
  var total = 0;
  if task.priority > 100 {
    for i in range(3000) {
      for j in range(3000) { total += (i + j) % 3; }
    }
  }
  return float(total) + 5.0;
}
)";

TEST_F(PolicyContainment, CallOverItsLoopBudgetIsAbandonedAsABudgetFault) {
  SetPolicyCallIterationBudget(2'000'000);
  SetPluginFaultLimit(0);  // no watchdog here: every call runs
  PolicySession ps("spin", kSpin);
  ASSERT_TRUE(ps.ssn);
  EXPECT_EQ(ps.Score(), 5.0);
  ps.task->priority = 1000;
  std::clock_t start = std::clock();
  auto spun = ps.ssn->NodeOrderFn(ps.task, ps.node);
  double seconds = ProcessorSecondsSince(start);
  ASSERT_TRUE(spun.ok());
  EXPECT_EQ(*spun, 0.0);  // the faulted call's score is ignored
  EXPECT_LT(seconds, 2.0);
  ASSERT_EQ(ps.ssn->fault_count(), 1u);
  EXPECT_EQ(ps.ssn->decisions().faults[0],
            "plugin spin: node_order: exceeded its budget of 2000000 loop iterations");
  const PluginSlot& slot = ps.ssn->plugins()[0];
  EXPECT_EQ(slot.faults_by_kind[static_cast<size_t>(FaultKind::Budget)], 1u);
  EXPECT_EQ(slot.faults_by_kind[static_cast<size_t>(FaultKind::Host)], 0u);
  // The budget is per call: the next call starts afresh.
  ps.task->priority = 1;
  EXPECT_EQ(ps.Score(), 5.0);
  EXPECT_EQ(ps.ssn->fault_count(), 1u);
  ps.ssn->Close();
}

TEST_F(PolicyContainment, LoopsWithinTheBudgetAreNotCut) {
  SetPolicyCallIterationBudget(10'000);
  // 100 × 99 inner + 100 outer iterations = 10,000 back-edges: exactly the budget.
  PolicySession ps("fits", R"(policy fits;
on node_order(task: Task, node: Node) -> float {
  var total = 0;
  for i in range(100) { for j in range(99) { total += 1; } }
  return float(total);
}
)");
  EXPECT_EQ(ps.Score(), 9900.0);
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  SetPolicyCallIterationBudget(9'999);
  (void)ps.ssn->NodeOrderFn(ps.task, ps.node);
  EXPECT_EQ(ps.ssn->fault_count(), 1u);
  ps.ssn->Close();
}

// Loops reserve their trip count on entry (compiler/codegen/loop_budget.h); a break, an early
// exit of any(), and a return from inside a loop give back what was reserved and not run, so
// the count is that of the iterations run: here 9 + 21 + 30 = 60 back-edges, though every range
// is far larger than the budget.
TEST_F(PolicyContainment, EarlyExitsCountOnlyTheIterationsRun) {
  SetPluginFaultLimit(0);
  PolicySession ps("early", R"(policy early;
fn first_at(limit: int) -> int {
  for i in range(0, 1000000) {
    if i == limit { return i; }
  }
  return -1;
}
on node_order(task: Task, node: Node) -> float {
  var total = 0;
  for i in range(0, 1000000) {
    total += 1;
    if total == 10 { break; }
  }
  let found = any(x > 20 for x in range(0, 1000000));
  return float(total + first_at(30) + (found ? 100 : 0));
}
)");
  ASSERT_TRUE(ps.ssn);
  SetPolicyCallIterationBudget(60);
  EXPECT_EQ(ps.Score(), 140.0);
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  SetPolicyCallIterationBudget(59);
  (void)ps.ssn->NodeOrderFn(ps.task, ps.node);
  ASSERT_EQ(ps.ssn->fault_count(), 1u);
  EXPECT_EQ(ps.ssn->decisions().faults[0],
            "plugin early: node_order: exceeded its budget of 59 loop iterations");
  ps.ssn->Close();
}

// A handler that allocates only on some paths arms its fault frame lazily, just before the first
// allocating call (compiler/codegen/fault_frame.h). A fault after that point — here in a helper
// function inlined into the handler, and in the handler's own code — is still recovered: the call
// is abandoned, counted as a memory fault and its answer ignored (the predicate rejects the node as
// "plugin ... failed"), and calls that never reach an allocating site (before and after the faults)
// answer normally.
TEST_F(PolicyContainment, FaultAfterALazilyArmedFrameIsRecovered) {
  SetPolicyCallMemoryBudget(1 << 20);
  PolicySession ps("lazy", R"(policy lazy;
fn blow_up(seed: string) -> string {
  var s = seed;
  for i in range(40) { s = s + s; }
  return s;
}
on predicate(task: Task, node: Node) -> Fit {
  if task.priority < 10 { return fits; }
  if task.priority < 20 { return unschedulable("small: " + task.name); }
  if task.priority < 30 { return unschedulable(blow_up(task.name)); }
  var s = "node " + node.name;
  for i in range(40) { s = s + s; }
  return unschedulable(s);
}
)");
  EXPECT_FALSE(ps.ssn->PredicateFn(ps.task, ps.node).has_value());
  ps.task->priority = 15;
  auto small = ps.ssn->PredicateFn(ps.task, ps.node);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->Reasons(), std::vector<std::string>{"small: t-0"});
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  for (int64_t priority : {25, 35}) {
    SCOPED_TRACE(priority);
    ps.task->priority = priority;
    auto e = ps.ssn->PredicateFn(ps.task, ps.node);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->statuses[0].code, StatusCode::Error);
    EXPECT_EQ(e->Reasons(), std::vector<std::string>{"plugin lazy failed"});
  }
  EXPECT_EQ(ps.ssn->fault_count(), 2u);
  EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Memory)], 2u);
  // The frame was disarmed by the faults: later calls, allocating or not, answer normally.
  ps.task->priority = 15;
  small = ps.ssn->PredicateFn(ps.task, ps.node);
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->Reasons(), std::vector<std::string>{"small: t-0"});
  ps.task->priority = 1;
  EXPECT_FALSE(ps.ssn->PredicateFn(ps.task, ps.node).has_value());
  EXPECT_EQ(ps.ssn->fault_count(), 2u);
  ps.ssn->Close();
}

// The watchdog: after PluginFaultLimit() faults the plugin is disabled for the rest of the
// session; its handlers are no longer called and the point answers as if it were absent.
TEST_F(PolicyContainment, WatchdogDisablesAPluginThatKeepsFaulting) {
  SetPolicyCallIterationBudget(100'000);
  SetPluginFaultLimit(3);
  PolicySession ps("spin", kSpin);
  ps.task->priority = 1000;
  for (int i = 0; i < 5; ++i) (void)ps.ssn->NodeOrderFn(ps.task, ps.node);
  EXPECT_EQ(ps.ssn->fault_count(), 3u);
  EXPECT_TRUE(ps.ssn->plugin_disabled(0));
  EXPECT_EQ(ps.ssn->decisions().disabled_plugins, std::vector<std::string>{"spin"});
  EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Budget)], 3u);
  ps.ssn->Close();
}

// A C++ plugin whose handler reports a host error (as a native does when it catches an
// exception): contained like a policy's, kind "host", and the watchdog counts it too.
class FaultingPlugin : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.On<ExtensionPoint::TaskOrder>(self, [](const Task*, const Task*) -> int32_t {
      static constexpr std::string_view kMsg = "host error: boom";
      kiln_policy_fault(kMsg.data(), kMsg.size());
      return -1;
    });
    return Status::Ok();
  }
};

TEST_F(PolicyContainment, HostErrorsAreContainedWithTheirKind) {
  SetPluginFaultLimit(2);
  auto conf = ParseSchedulerConf("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: faulty\n",
                                 "scheduler.conf");
  ASSERT_TRUE(conf.ok());
  PluginRegistry registry;
  ASSERT_TRUE(registry
                  .Register("faulty",
                            [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
                              return std::unique_ptr<Plugin>(new FaultingPlugin());
                            })
                  .ok());
  Session ssn(testing::OneNodeCluster(2), *conf, 1000, "s1");
  ASSERT_TRUE(ssn.Open(registry).ok());
  const Task* t0 = ssn.cluster().FindTask("ns-t-0");
  const Task* t1 = ssn.cluster().FindTask("ns-t-1");
  // The faulted answer (-1) is ignored: the fallback orders by name (t-0 before t-1 either way,
  // so ask both directions).
  int forward = ssn.TaskOrderFn(t0, t1);
  int backward = ssn.TaskOrderFn(t1, t0);
  EXPECT_EQ(forward, -backward);
  EXPECT_EQ(ssn.fault_count(), 2u);
  EXPECT_EQ(ssn.plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Host)], 2u);
  EXPECT_TRUE(ssn.plugin_disabled(0));
  (void)ssn.TaskOrderFn(t0, t1);
  EXPECT_EQ(ssn.fault_count(), 2u);  // disabled: not called again
  ssn.Close();
}

// ---- issue 28: memory, work and time the per-call loop budget did not see ----

// Issue 28's reproduction, scaled down: every job_order call stores a 1 MiB string (2^20 bytes,
// built by doubling) in a state map. The state grows by 1 MiB a call until its budget (8 MiB
// here) is reached; that store is a memory fault, and the plugin is disabled at once (its state
// would be missing what the store meant to keep), whatever the fault limit. Before the budget the
// same policy grew without bound (3.9 GB on 20 jobs).
constexpr const char* kStateHog = R"(policy keep;
state keep: map<int, string>;
state calls: int;
on job_order(l: Job, r: Job) -> int {
  var s = "x";
  for i in range(20) { s = s + s; }
  keep[calls] = s;
  calls += 1;
  return 0;
}
)";

TEST_F(PolicyContainment, StateOverItsBudgetIsAMemoryFaultThatDisablesThePlugin) {
  SetPluginFaultLimit(100);  // the state budget disables without waiting for the limit
  SetPolicyStateMemoryBudget(8 << 20);
  SetPolicyCallMemoryBudget(128 << 20);
  PolicySession ps("keep", kStateHog);
  ASSERT_TRUE(ps.ssn);
  const Job* j = ps.task->job;
  int calls = CallUntilDisabled(*ps.ssn, 100, [&] { (void)ps.ssn->JobOrderFn(j, j); });
  EXPECT_GE(calls, 5);   // ~7 stores of 1 MiB fit in 8 MiB (map growth takes a little)
  EXPECT_LE(calls, 9);
  EXPECT_EQ(ps.ssn->fault_count(), 1u);
  ASSERT_EQ(ps.ssn->decisions().faults.size(), 1u);
  ExpectDisabledByOneFault(*ps.ssn, "keep", FaultKind::Memory,
                           "policy state exceeded its memory budget of 8388608 bytes; plugin "
                           "disabled for the rest of the session");
  // Disabled: no more calls, no more growth.
  (void)ps.ssn->JobOrderFn(j, j);
  EXPECT_EQ(ps.ssn->fault_count(), 1u);
  ps.ssn->Close();
}

// Long strings still compare right under the charge: equal, differing in the last byte, and a
// short prefix, both ways, within the default budget.
TEST_F(PolicyContainment, LongStringComparisonsAnswerRight) {
  PolicySession ps("equal", R"(policy equal;
on node_order(task: Task, node: Node) -> float {
  var a = "ab";
  var b = "ab";
  for i in range(10) { a = a + a; }
  for i in range(10) { b = b + b; }
  let c = a + "x";
  let d = b + "y";
  var score = 0.0;
  if a == b { score += 1.0; }
  if c != d { score += 10.0; }
  if c == d { score += 1000.0; }
  if a != b { score += 1000.0; }
  if a + "x" == c { score += 100.0; }
  return score;
}
)");
  ASSERT_TRUE(ps.ssn);
  EXPECT_EQ(ps.Score(), 111.0);
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  ps.ssn->Close();
}

// `s = s + part` appends in place (the arena's last allocation grows), so building a string of
// 20,000 parts costs about its length in host work, not the 200 MB a copy per append would: it
// fits a 4 MiB budget and answers the right length.
TEST_F(PolicyContainment, AppendingToAStringInALoopIsLinear) {
  SetPolicyCallHostWorkBudget(4 << 20);
  PolicySession ps("joiner", R"(policy joiner;
on node_order(task: Task, node: Node) -> float {
  var out = "";
  var other = "";
  for i in range(20000) {
    if i > 0 { out = out + ","; }
    out = out + node.name;
    if i == 10 { other = out + "!"; }
  }
  return float(len(out) * 100 + len(other));
}
)");
  ASSERT_TRUE(ps.ssn);
  // "n1" × 20000 with 19999 commas; `other` was taken at 11 parts (32 bytes) plus "!" and kept
  // them while `out` went on growing after it.
  EXPECT_EQ(ps.Score(), (2.0 * 20000 + 19999) * 100 + 33);
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  ps.ssn->Close();
}

// Wall time per session: once a plugin's calls together pass PolicySessionTimeBudget(), the
// plugin is disabled for the rest of the session (a time fault), whatever the fault limit.
TEST_F(PolicyContainment, PluginOverItsSessionTimeBudgetIsDisabled) {
  SetPluginFaultLimit(0);
  SetPolicySessionTimeBudget(20'000'000);  // 20 ms
  PolicySession ps("busy", BusyPolicy("busy", 8000, 4000));
  ASSERT_TRUE(ps.ssn);
  CallUntilDisabled(*ps.ssn, 1000, [&] { (void)ps.ssn->NodeOrderFn(ps.task, ps.node); });
  ExpectDisabledByOneFault(*ps.ssn, "busy", FaultKind::Time,
                           "over its wall-time budget of 20ms per session");
  ps.ssn->Close();
}

// ---- one call over one budget: abandoned as a fault of the budget's kind, its answer ignored ----

// The process-wide limits a case sets (the others keep theirs).
struct Limits {
  std::optional<int64_t> iterations, host_work, call_time;  // loop iterations, bytes, ns
  std::optional<int> fault_limit;
  std::optional<size_t> memory;
  std::optional<double> max_cost;  // of a handler, in the static check's steps

  void Apply() const {
    if (iterations) SetPolicyCallIterationBudget(*iterations);
    if (host_work) SetPolicyCallHostWorkBudget(*host_work);
    if (call_time) SetPolicyCallTimeBudget(*call_time);
    if (fault_limit) SetPluginFaultLimit(*fault_limit);
    if (memory) SetPolicyCallMemoryBudget(*memory);
    if (max_cost) SetDefaultMaxHandlerCost(*max_cost);
  }
};

struct OverBudgetCase {
  std::string name;
  Limits limits;
  std::string text;
  bool job_order = false;          // calls job_order (the job against itself), else node_order
  int calls = 1;
  double max_seconds = 0;          // processor time the calls take at most; 0: not bounded
  std::optional<double> score;     // node_order's answer to each call
  size_t faults = 1;               // fault_count() after the calls
  std::optional<FaultKind> kind;   // all the faults are of this kind
  std::string fault;               // the first fault's text ("": not checked)
  bool fault_is_part = false;      // `fault` is a part of the text, not all of it
};

// Issue 28's string comparison: two equal 1 MiB strings compared 100 times with `compare`.
std::string EqualStrings(const char* compare) {
  return fmt::format(R"(policy equal;
on job_order(l: Job, r: Job) -> int {{
  var a = "ab";
  var b = "ab";
  for i in range(19) {{ a = a + a; }}
  for i in range(19) {{ b = b + b; }}
  let keys = [b];
  var m: map<string, int> = {{}};
  m[b] = 1;
  var same = 0;
  for i in range(100) {{ if {} {{ same += 1; }} }}
  return same;
}}
)",
                     compare);
}

std::vector<OverBudgetCase> OverBudgetCases() {
  std::vector<OverBudgetCase> cases = {
      // A loop inside a called `fn` draws on the same per-call budget as its caller's loop.
      {.name = "BudgetSpansCalledFunctions",
       .limits = {.iterations = 100'000},
       .text = R"(policy nested;
fn inner() -> int {
  var s = 0;
  for k in range(3000) { s += k % 7; }
  return s;
}
on node_order(task: Task, node: Node) -> float {
  var total = 0;
  for i in range(3000) { total += inner(); }
  return float(total);
}
)",
       .max_seconds = 2.0,
       .kind = FaultKind::Budget},
      // A range that ends before it starts runs nothing and reserves nothing (it must not add to
      // the budget either).
      {.name = "AnEmptyRangeReservesNothing",
       .limits = {.iterations = 5, .fault_limit = 0},
       .text = R"(policy empty;
on node_order(task: Task, node: Node) -> float {
  var total = 0;
  for i in range(1000000, 0) { total += 1; }
  for i in range(0, 6) { total += 1; }
  return float(total);
}
)",
       .kind = FaultKind::Budget},
      {.name = "AllocationOverTheMemoryBudgetIsAMemoryFault",
       .limits = {.memory = 1 << 20},
       .text = R"(policy hog;
on node_order(task: Task, node: Node) -> float {
  let huge = [x for x in range(0, 1000000)];
  return float(len(huge));
}
)",
       .kind = FaultKind::Memory},
      // Issue 28's CPU reproduction: a 64 MiB string (25 doublings) searched 1,500 times, 96 GB of
      // memchr that ran 9 s a call. The static check now rates it past the budget (the searches
      // cost their haystack's bytes), so it is loaded here with the check raised; at run time the
      // bytes the builtins walk are charged to the call's host-work budget (256 MiB by default),
      // and the call is abandoned as a budget fault within a fraction of a second.
      {.name = "BytesBuiltinsWalkAreChargedToTheHostWorkBudget",
       .limits = {.fault_limit = 0, .max_cost = 1e15},
       .text = R"(policy scan;
on job_order(l: Job, r: Job) -> int {
  var s = "ab";
  for i in range(25) { s = s + s; }
  var hits = 0;
  for i in range(1500) { if contains(s, "zz") { hits += 1; } }
  return hits;
}
)",
       .job_order = true,
       .calls = 2,
       .max_seconds = 3.0,
       .faults = 2,
       .kind = FaultKind::Budget,
       .fault = "plugin scan: job_order: exceeded its budget of 268435456 bytes of host work"},
      // The nested split of issue 28 (rated a few hundred steps, 1.7e10 of work at run time): a
      // string of a million parts split again for every part. Each split charges the string it
      // walks and the parts it builds, so the first few inner splits spend the budget.
      {.name = "NestedSplitsSpendTheHostWorkBudget",
       // The static check rates it 5.8e18 steps.
       .limits = {.host_work = 64 << 20, .fault_limit = 0, .max_cost = 1e20},
       .text = R"(policy splits;
on job_order(l: Job, r: Job) -> int {
  var s = "a,";
  for i in range(20) { s = s + s; }
  var n = 0;
  for a in split(s, ",") {
    for b in split(s, ",") { n += len(b); }
  }
  return n;
}
)",
       .job_order = true,
       .max_seconds = 3.0,
       .fault = "plugin splits: job_order: exceeded its budget of 67108864 bytes of host work"},
      // Wall time per call: a call that runs longer than PolicyCallTimeBudget() is a time fault
      // and its answer is ignored, even when it stays within its loop budget.
      {.name = "CallOverItsWallTimeBudgetIsATimeFault",
       .limits = {.call_time = 1'000'000, .fault_limit = 0},  // 1 ms
       .text = BusyPolicy("slow", 8000, 8000),
       .score = 0.0,
       .kind = FaultKind::Time,
       .fault = "over its wall-time budget of 1ms per call",
       .fault_is_part = true},
  };
  // String equality on long strings is host work too (issue 28): two equal 1 MiB strings compared
  // 100 times walk 100 MiB, which a 16 MiB budget stops after a few comparisons. Before the charge
  // `==` compiled to an inline memcmp that nothing counted: the call answered after walking all of
  // it, with no fault. Lookups in a policy map by a long string key (hashed or compared: the
  // key's bytes) are charged the same way.
  const std::pair<const char*, const char*> comparisons[] = {
      {"Equal", "a == b"},
      {"NotUnequal", "!(a != b)"},
      {"InList", "a in keys"},
      {"MapKey", "m[a] > 0"}};
  for (const auto& [what, compare] : comparisons) {
    cases.push_back(
        {.name = std::string("LongStringComparisonsSpendTheHostWorkBudget_") + what,
         // The static check rates the comparisons at 100*built.
         .limits = {.host_work = 16 << 20, .fault_limit = 0, .max_cost = 1e15},
         .text = EqualStrings(compare),
         .job_order = true,
         .max_seconds = 3.0,
         .fault = "plugin equal: job_order: exceeded its budget of 16777216 bytes of host work"});
  }
  return cases;
}

class PolicyContainmentOverBudget : public ::testing::TestWithParam<OverBudgetCase> {};

TEST_P(PolicyContainmentOverBudget, CallIsAbandonedAsAFaultOfItsKind) {
  const OverBudgetCase& c = GetParam();
  LimitsGuard limits;
  c.limits.Apply();
  // The plugin's name is the policy's: `policy NAME;` begins every text.
  const std::string name = c.text.substr(7, c.text.find(';') - 7);
  PolicySession ps(name, c.text);
  ASSERT_TRUE(ps.ssn);
  std::clock_t start = std::clock();
  for (int i = 0; i < c.calls; ++i) {
    if (c.job_order) {
      (void)ps.ssn->JobOrderFn(ps.task->job, ps.task->job);
      continue;
    }
    if (c.score)
      EXPECT_EQ(ps.Score(), *c.score);
    else
      (void)ps.ssn->NodeOrderFn(ps.task, ps.node);
  }
  if (c.max_seconds > 0) EXPECT_LT(ProcessorSecondsSince(start), c.max_seconds);
  ASSERT_EQ(ps.ssn->fault_count(), c.faults);
  if (c.kind)
    EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(*c.kind)], c.faults);
  if (!c.fault.empty()) {
    const std::string& first = ps.ssn->decisions().faults[0];
    if (c.fault_is_part)
      EXPECT_NE(first.find(c.fault), std::string::npos) << first;
    else
      EXPECT_EQ(first, c.fault);
  }
  ps.ssn->Close();
}

INSTANTIATE_TEST_SUITE_P(Cases, PolicyContainmentOverBudget,
                         ::testing::ValuesIn(OverBudgetCases()),
                         [](const ::testing::TestParamInfo<OverBudgetCase>& info) {
                           return info.param.name;
                         });

// Issue 28: a fit reason of 64 MiB escaped the call's budget (the session keeps every node's
// reasons). A reason is now cut to 4 KiB with a note of how much was cut.
TEST_F(PolicyContainment, LongFitReasonsAreCut) {
  SetPolicyCallMemoryBudget(256 << 20);
  PolicySession ps("wordy", R"(policy wordy;
on predicate(task: Task, node: Node) -> Fit {
  var s = "why";
  for i in range(24) { s = s + s; }
  return unschedulable(s);
}
)");
  ASSERT_TRUE(ps.ssn);
  auto e = ps.ssn->PredicateFn(ps.task, ps.node);
  ASSERT_TRUE(e.has_value());
  std::vector<std::string> reasons = e->Reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_LT(reasons[0].size(), 4200u);
  EXPECT_NE(reasons[0].find("... (50327552 more bytes cut)"), std::string::npos);
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  ps.ssn->Close();
}

}  // namespace
}  // namespace kiln
