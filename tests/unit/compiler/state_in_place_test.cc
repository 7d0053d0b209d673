// Resources stored into state in place (compiler/codegen/state_in_place.h): a store reuses the
// slot's Resource unless a value read from it earlier in the handler call may still be held.
// Each test compiles a policy for real and checks what its handlers answer after the stores,
// and, where the point is the memory, that the session arena stops growing.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/state_in_place.h"
#include "compiler/frontend.h"
#include "runtime/session.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

using Loaded = testing::LoadedPolicy;

std::unique_ptr<Loaded> Load(const std::string& text) {
  return testing::LoadPolicy(text, "test/state_in_place_");
}

Task TaskOf(Job* job, double cpu) {
  Task t;
  t.job = job;
  t.resreq.Set(kCpu, cpu);
  return t;
}

// node_order reports alloc[task.job].cpu * 1000 + note[task.job].
double Score(Loaded& l, const Task& t) {
  Node node;
  double score = -1;
  EXPECT_EQ(l.Fn<ExtensionPoint::NodeOrder>()(&l.ctx, &t, &node, &score), 0);
  return score;
}

constexpr const char* kReport = R"(
on node_order(task: Task, node: Node) -> float {
  return alloc[task.job]["cpu"] * 1000.0 + note[task.job];
}
)";

// `let old = m[k]; m[k] = old + r;` — old keeps the value it read; a later store through `old`
// restores exactly that value (drf's reclaimable does this per candidate).
TEST(StateInPlace, AValueReadEarlierInTheCallKeepsItsValue) {
  auto l = Load(std::string(R"(policy alias;
state alloc: map<Job, Resource>;
state note: map<Job, float>;
on allocate(task: Task) {
  alloc[task.job] = alloc[task.job] + task.resreq;
}
on deallocate(task: Task) {
  let old = alloc[task.job];
  alloc[task.job] = old - task.resreq;
  let during = alloc[task.job]["cpu"];
  alloc[task.job] = alloc[task.job] - task.resreq;   // the slot's own copy: in place
  note[task.job] = old["cpu"] * 10.0 + during - alloc[task.job]["cpu"];
  alloc[task.job] = old;                             // restores what was read
}
)") + kReport);
  ASSERT_TRUE(l);
  Job j;
  Task t = TaskOf(&j, 3);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  auto deallocate = l->Fn<ExtensionPoint::OnDeallocate>();
  allocate(&l->ctx, &t);
  allocate(&l->ctx, &t);  // alloc = 6
  deallocate(&l->ctx, &t);
  // old = 6 (60), during = 3, after the second subtraction 0: note = 60 + 3 - 0; alloc back at 6.
  EXPECT_EQ(Score(*l, t), 6 * 1000.0 + 63.0);
}

// The value held may be the argument of a policy function that stores into the same slot.
TEST(StateInPlace, AValueHeldAcrossAFunctionThatStoresKeepsItsValue) {
  auto l = Load(std::string(R"(policy alias;
state alloc: map<Job, Resource>;
state note: map<Job, float>;
fn bump(j: Job, r: Resource) {
  alloc[j] = alloc[j] + r;
}
fn keep(r: Resource) -> Resource { return r; }
on allocate(task: Task) {
  let held = keep(alloc[task.job]);
  bump(task.job, task.resreq);
  bump(task.job, task.resreq);
  note[task.job] = held["cpu"];
}
)") + kReport);
  ASSERT_TRUE(l);
  Job j;
  Task t = TaskOf(&j, 2);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  allocate(&l->ctx, &t);  // held 0, alloc 4
  allocate(&l->ctx, &t);  // held 4, alloc 8
  EXPECT_EQ(Score(*l, t), 8 * 1000.0 + 4.0);
}

// A Resource state variable (not a map), read into a local list and through `??`.
TEST(StateInPlace, ResourceStateHeldInAListOrThroughCoalesce) {
  auto l = Load(std::string(R"(policy alias;
state total: Resource;
state alloc: map<Job, Resource>;
state note: map<Job, float>;
on allocate(task: Task) {
  let snapshot = [total];
  let maybe: map<Job, Resource> = {};
  let either = maybe.get(task.job) ?? total;
  total = total + task.resreq;
  total = total + task.resreq;
  alloc[task.job] = total;
  note[task.job] = snapshot[0]["cpu"] * 100.0 + either["cpu"];
}
)") + kReport);
  ASSERT_TRUE(l);
  Job j;
  Task t = TaskOf(&j, 1);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  allocate(&l->ctx, &t);  // before: 0; total 2
  allocate(&l->ctx, &t);  // before: 2; total 4
  EXPECT_EQ(Score(*l, t), 4 * 1000.0 + 2 * 100.0 + 2.0);
}

// Every slot starts as the one shared empty resource: the first store into a slot copies, so
// other jobs' entries (and the empty resource itself) stay empty.
TEST(StateInPlace, FreshSlotsDoNotShareTheEmptyResource) {
  auto l = Load(std::string(R"(policy alias;
state alloc: map<Job, Resource>;
state note: map<Job, float>;
on allocate(task: Task) {
  alloc[task.job] = alloc[task.job] + task.resreq;
}
)") + kReport);
  ASSERT_TRUE(l);
  Job j1, j2, j3;
  Task t1 = TaskOf(&j1, 5), t2 = TaskOf(&j2, 7), t3 = TaskOf(&j3, 0);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  allocate(&l->ctx, &t1);
  allocate(&l->ctx, &t1);
  allocate(&l->ctx, &t2);
  EXPECT_EQ(Score(*l, t1), 10000.0);
  EXPECT_EQ(Score(*l, t2), 7000.0);
  EXPECT_EQ(Score(*l, t3), 0.0);  // never stored: the empty resource
}

// The point of it: once a slot holds its own Resource, allocate/deallocate overwrite it instead
// of copying 264 bytes into the session arena per store.
TEST(StateInPlace, RepeatedStoresDoNotGrowTheSessionArena) {
  auto l = Load(std::string(R"(policy alias;
state total: Resource;
state alloc: map<Job, Resource>;
state note: map<Job, float>;
on allocate(task: Task) {
  alloc[task.job] = alloc[task.job] + task.resreq;
  total = total + task.resreq;
}
on deallocate(task: Task) {
  alloc[task.job] -= task.resreq;
  total -= task.resreq;
}
)") + kReport);
  ASSERT_TRUE(l);
  Job j;
  Task t = TaskOf(&j, 1);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  auto deallocate = l->Fn<ExtensionPoint::OnDeallocate>();
  allocate(&l->ctx, &t);
  size_t after_first = l->arena.BytesInUse();
  for (int i = 0; i < 1000; ++i) {
    allocate(&l->ctx, &t);
    deallocate(&l->ctx, &t);
  }
  allocate(&l->ctx, &t);
  EXPECT_EQ(l->arena.BytesInUse(), after_first);
  EXPECT_EQ(Score(*l, t), 2000.0);
}

// A map handed on whole (here: bound to a local) keeps the copying store, so a local that
// aliases the map still sees each entry's value of the moment it read it.
TEST(StateInPlace, AMapUsedWholeKeepsCopyingStores) {
  const char* text = R"(policy alias;
state alloc: map<Job, Resource>;
state other: map<Job, Resource>;
state note: map<Job, float>;
on allocate(task: Task) {
  let m = other;
  let r = m[task.job];
  other[task.job] = other[task.job] + task.resreq;
  alloc[task.job] = alloc[task.job] + task.resreq;
  note[task.job] = r["cpu"];
}
on node_order(task: Task, node: Node) -> float {
  return alloc[task.job]["cpu"] * 1000.0 + note[task.job];
}
)";
  auto l = Load(text);
  ASSERT_TRUE(l);
  Job j;
  Task t = TaskOf(&j, 1);
  auto allocate = l->Fn<ExtensionPoint::OnAllocate>();
  allocate(&l->ctx, &t);
  allocate(&l->ctx, &t);
  allocate(&l->ctx, &t);
  EXPECT_EQ(Score(*l, t), 3000.0 + 2.0);

  // Which variables and reads the analysis picked.
  FrontendResult front = RunFrontend(SourceFile{"test/state_in_place_analysis.policy", text});
  ASSERT_TRUE(front.policy && !front.diagnostics.HasErrors());
  codegen::InPlaceState st = codegen::AnalyzeInPlaceState(*front.policy);
  std::set<std::string> vars;
  for (const ast::StateDecl* s : st.vars) vars.insert(s->name);
  EXPECT_EQ(vars, (std::set<std::string>{"alloc"}));
  EXPECT_TRUE(st.pinning_reads.empty());  // alloc's reads are all consumed by `+` / `["cpu"]`
}

// drf and proportion, the policies this is for: their Resource state takes part, and the only
// reads that pin are drf's held ones (reclaimable's `let l_alloc`/`let c_alloc`, recompute_tree's
// `let alloc`, show_queue's `sum`).
TEST(StateInPlace, DrfAndProportionStoreInPlace) {
  for (const char* name : {"drf", "proportion"}) {
    const BuiltinPolicy* p = FindBuiltinPolicy(name);
    ASSERT_NE(p, nullptr);
    FrontendResult front = RunFrontend(SourceFile{std::string(p->path), std::string(p->text)});
    ASSERT_TRUE(front.policy && !front.diagnostics.HasErrors()) << name;
    codegen::InPlaceState st = codegen::AnalyzeInPlaceState(*front.policy);
    std::set<std::string> vars;
    for (const ast::StateDecl* s : st.vars) vars.insert(s->name);
    if (std::string(name) == "drf") {
      EXPECT_TRUE(vars.count("job_alloc"));
      EXPECT_TRUE(vars.count("total_allocated"));
      EXPECT_TRUE(vars.count("total"));
      EXPECT_EQ(st.pinning_reads.size(), 4u);
    } else {
      EXPECT_TRUE(vars.count("allocated")) << name;
    }
  }
}

}  // namespace
}  // namespace kiln
