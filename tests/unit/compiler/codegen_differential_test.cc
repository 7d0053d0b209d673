// Differential tests: the JIT-compiled gang, priority and cdp policies against the hand-written
// C++ oracles in tests/oracles/, on randomized jobs and tasks. Every handler answer is compared
// call by call through the session's C ABI; a mismatch prints the seed so it can be replayed.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"
#include "tests/oracles/cdp_oracle.h"
#include "tests/oracles/gang_oracle.h"
#include "tests/oracles/priority_oracle.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

using Loaded = testing::LoadedPolicy;

std::unique_ptr<Loaded> LoadBuiltin(std::string_view name, TimeNs now = 0) {
  const BuiltinPolicy* b = FindBuiltinPolicy(name);
  EXPECT_NE(b, nullptr);
  if (b == nullptr) return nullptr;
  return testing::LoadSource(SourceFile{std::string(b->path), std::string(b->text)}, now);
}

constexpr TaskStatus kStatuses[] = {
    TaskStatus::Pending,   TaskStatus::Allocated, TaskStatus::Pipelined, TaskStatus::Binding,
    TaskStatus::Bound,     TaskStatus::Running,   TaskStatus::Releasing, TaskStatus::Succeeded,
    TaskStatus::Failed,    TaskStatus::Unknown,
};

// A random little world of jobs and tasks with consistent counters (Job::AddTask).
struct World {
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<const Task*> all_tasks;

  explicit World(uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    const char* roles[] = {"", "ps", "worker"};
    const char* cooldowns[] = {"", "1m", "10m", "90s", "bad", "1h"};
    int njobs = 1 + pick(4);
    for (int j = 0; j < njobs; ++j) {
      auto job = std::make_unique<Job>();
      job->uid = "c1/job" + std::to_string(j);
      job->name = "job" + std::to_string(j);
      job->priority = pick(4);
      job->min_available = pick(5);
      // minTaskMember first: the job's role slots read it (as Cluster::Link does).
      if (pick(2)) {
        for (const char* role : {"ps", "worker"})
          if (pick(2)) job->task_min_available[role] = pick(3);
        for (const auto& [r, m] : job->task_min_available) {
          job->task_min_available_total += m;
          job->RoleSlot(r);
        }
      }
      int ntasks = pick(7);
      for (int t = 0; t < ntasks; ++t) {
        auto task = std::make_unique<Task>();
        task->name = job->name + "-" + std::to_string(t);
        task->uid = "c1-" + task->name;
        task->status = kStatuses[pick(10)];
        task->role = roles[pick(3)];
        task->priority = pick(4);
        if (pick(3) != 0) {
          task->mutable_resreq().Set(kCpu, 1000);
        }
        task->best_effort = task->init_resreq().IsEmpty();
        const char* cd = cooldowns[pick(6)];
        if (*cd) (pick(2) ? task->mutable_shape().labels : task->mutable_shape().annotations)["volcano.sh/cooldown-time"] = cd;
        task->scheduled_at = pick(3) == 0 ? 0 : 1'000'000'000LL * (100 + pick(900));
        job->AddTask(task.get());
        all_tasks.push_back(task.get());
        tasks.push_back(std::move(task));
      }
      jobs.push_back(std::move(job));
    }
    std::shuffle(all_tasks.begin(), all_tasks.end(), rng);
  }
};

std::vector<const Task*> Selected(const std::vector<const Task*>& cands,
                                  const std::vector<uint8_t>& mask) {
  std::vector<const Task*> out;
  for (size_t i = 0; i < cands.size(); ++i)
    if (mask[i]) out.push_back(cands[i]);
  return out;
}

template <ExtensionPoint P>
std::vector<const Task*> JitVictims(const Loaded& l, const Task* preemptor,
                                    const std::vector<const Task*>& cands, int32_t* decided) {
  std::vector<uint8_t> mask(cands.size(), 0);
  *decided = l.Fn<P>()(const_cast<PolicyContext*>(&l.ctx), preemptor, cands.data(), cands.size(),
                       mask.data());
  return Selected(cands, mask);
}

constexpr uint32_t kSeeds = 400;

// Calls `check` on the world of every seed from 1 to kSeeds.
template <typename Check>
void ForEachWorld(const Check& check) {
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    World w(seed);
    check(w);
  }
}

// job_order answers as `oracle(l, r)` does on every pair of `w`'s jobs.
template <typename Oracle>
void ExpectJobOrders(Loaded& l, const World& w, const Oracle& oracle) {
  for (const auto& j : w.jobs)
    for (const auto& k : w.jobs)
      EXPECT_EQ(l.Fn<ExtensionPoint::JobOrder>()(&l.ctx, j.get(), k.get()), oracle(*j, *k));
}

// The victims of `w`'s first task among all its tasks, asked through preemptable (which must
// decide) and through reclaimable, are the ones `oracle(preemptor, candidates)` picks.
template <typename Oracle>
void ExpectFirstTasksVictims(const Loaded& l, const World& w, const Oracle& oracle) {
  if (w.all_tasks.empty()) return;
  int32_t decided = 0;
  auto jit = JitVictims<ExtensionPoint::Preemptable>(l, w.all_tasks[0], w.all_tasks, &decided);
  EXPECT_EQ(decided, 1);
  EXPECT_EQ(jit, oracle(*w.all_tasks[0], w.all_tasks));
  jit = JitVictims<ExtensionPoint::Reclaimable>(l, w.all_tasks[0], w.all_tasks, &decided);
  EXPECT_EQ(jit, oracle(*w.all_tasks[0], w.all_tasks));
}

TEST(CodegenDifferential, GangMatchesOracle) {
  auto l = LoadBuiltin("gang");
  ASSERT_TRUE(l);
  auto* ctx = &l->ctx;
  ForEachWorld([&](const World& w) {
    for (const auto& j : w.jobs) {
      EXPECT_EQ(l->Fn<ExtensionPoint::JobValid>()(ctx, j.get(), nullptr),
                oracles::gang::JobValid(*j).pass);
      EXPECT_EQ(l->Fn<ExtensionPoint::JobReady>()(ctx, j.get()), oracles::gang::JobReady(*j));
      EXPECT_EQ(l->Fn<ExtensionPoint::JobPipelined>()(ctx, j.get()),
                oracles::gang::JobPipelined(*j));
      EXPECT_EQ(l->Fn<ExtensionPoint::JobStarving>()(ctx, j.get()),
                oracles::gang::JobStarving(*j));
    }
    ExpectJobOrders(*l, w, oracles::gang::JobOrder);
    ExpectFirstTasksVictims(*l, w, oracles::gang::Victims);
  });
}

TEST(CodegenDifferential, PriorityMatchesOracle) {
  auto l = LoadBuiltin("priority");
  ASSERT_TRUE(l);
  auto* ctx = &l->ctx;
  ForEachWorld([&](const World& w) {
    for (const auto& j : w.jobs)
      EXPECT_EQ(l->Fn<ExtensionPoint::JobStarving>()(ctx, j.get()),
                oracles::priority::JobStarving(*j));
    ExpectJobOrders(*l, w, oracles::priority::JobOrder);
    for (const Task* a : w.all_tasks) {
      for (const Task* b : w.all_tasks)
        EXPECT_EQ(l->Fn<ExtensionPoint::TaskOrder>()(ctx, a, b),
                  oracles::priority::TaskOrder(*a, *b));
      int32_t decided = 0;
      auto jit = JitVictims<ExtensionPoint::Preemptable>(*l, a, w.all_tasks, &decided);
      EXPECT_EQ(decided, 1);
      EXPECT_EQ(jit, oracles::priority::Victims(*a, w.all_tasks));
    }
  });
}

TEST(CodegenDifferential, CdpMatchesOracle) {
  for (TimeNs now : {TimeNs{0}, TimeNs{500'000'000'000}, TimeNs{1'200'000'000'000}}) {
    SCOPED_TRACE(::testing::Message() << "now " << now);
    auto l = LoadBuiltin("cdp", now);
    ASSERT_TRUE(l);
    ForEachWorld([&](const World& w) {
      ExpectFirstTasksVictims(*l, w, [now](const Task& preemptor, const auto& candidates) {
        return oracles::cdp::Victims(preemptor, candidates, now);
      });
    });
  }
}

}  // namespace
}  // namespace kiln
