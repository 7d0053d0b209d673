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

Task TaskOf(Job* job, double cpu) {
  Task t;
  t.job = job;
  t.mutable_resreq().Set(kCpu, cpu);
  return t;
}

// node_order reports alloc[task.job].cpu * 1000 + note[task.job].
constexpr const char* kReport = R"(
on node_order(task: Task, node: Node) -> float {
  return alloc[task.job]["cpu"] * 1000.0 + note[task.job];
}
)";

// Each test loads one policy and calls its handlers.
class StateInPlace : public ::testing::Test {
 protected:
  // Compiles `text` and opens its state; false with a test failure when it does not compile.
  bool Load(const std::string& text) {
    l_ = testing::LoadPolicy(text, "test/state_in_place_");
    return l_ != nullptr;
  }
  // The policy `alias`: the state `state` declares, then alloc and note, then `handlers` and
  // kReport's node_order.
  bool LoadAlias(const std::string& state, const std::string& handlers) {
    return Load("policy alias;\n" + state +
                "state alloc: map<Job, Resource>;\nstate note: map<Job, float>;\n" + handlers +
                kReport);
  }
  void Allocate(Task& t) { l_->Fn<ExtensionPoint::OnAllocate>()(&l_->ctx, &t); }
  void Deallocate(Task& t) { l_->Fn<ExtensionPoint::OnDeallocate>()(&l_->ctx, &t); }
  double Score(const Task& t) {
    Node node;
    double score = -1;
    EXPECT_EQ(l_->Fn<ExtensionPoint::NodeOrder>()(&l_->ctx, &t, &node, &score), 0);
    return score;
  }

  std::unique_ptr<Loaded> l_;
};

// `let old = m[k]; m[k] = old + r;` — old keeps the value it read; a later store through `old`
// restores exactly that value (drf's reclaimable does this per candidate).
TEST_F(StateInPlace, AValueReadEarlierInTheCallKeepsItsValue) {
  ASSERT_TRUE(LoadAlias("", R"(on allocate(task: Task) {
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
)"));
  Job j;
  Task t = TaskOf(&j, 3);
  Allocate(t);
  Allocate(t);  // alloc = 6
  Deallocate(t);
  // old = 6 (60), during = 3, after the second subtraction 0: note = 60 + 3 - 0; alloc back at 6.
  EXPECT_EQ(Score(t), 6 * 1000.0 + 63.0);
}

// The value held may be the argument of a policy function that stores into the same slot.
TEST_F(StateInPlace, AValueHeldAcrossAFunctionThatStoresKeepsItsValue) {
  ASSERT_TRUE(LoadAlias("", R"(fn bump(j: Job, r: Resource) {
  alloc[j] = alloc[j] + r;
}
fn keep(r: Resource) -> Resource { return r; }
on allocate(task: Task) {
  let held = keep(alloc[task.job]);
  bump(task.job, task.resreq);
  bump(task.job, task.resreq);
  note[task.job] = held["cpu"];
}
)"));
  Job j;
  Task t = TaskOf(&j, 2);
  Allocate(t);  // held 0, alloc 4
  Allocate(t);  // held 4, alloc 8
  EXPECT_EQ(Score(t), 8 * 1000.0 + 4.0);
}

// A Resource state variable (not a map), read into a local list and through `??`.
TEST_F(StateInPlace, ResourceStateHeldInAListOrThroughCoalesce) {
  ASSERT_TRUE(LoadAlias("state total: Resource;\n", R"(on allocate(task: Task) {
  let snapshot = [total];
  let maybe: map<Job, Resource> = {};
  let either = maybe.get(task.job) ?? total;
  total = total + task.resreq;
  total = total + task.resreq;
  alloc[task.job] = total;
  note[task.job] = snapshot[0]["cpu"] * 100.0 + either["cpu"];
}
)"));
  Job j;
  Task t = TaskOf(&j, 1);
  Allocate(t);  // before: 0; total 2
  Allocate(t);  // before: 2; total 4
  EXPECT_EQ(Score(t), 4 * 1000.0 + 2 * 100.0 + 2.0);
}

// Every slot starts as the one shared empty resource: the first store into a slot copies, so
// other jobs' entries (and the empty resource itself) stay empty.
TEST_F(StateInPlace, FreshSlotsDoNotShareTheEmptyResource) {
  ASSERT_TRUE(LoadAlias("", R"(on allocate(task: Task) {
  alloc[task.job] = alloc[task.job] + task.resreq;
}
)"));
  Job j1, j2, j3;
  Task t1 = TaskOf(&j1, 5), t2 = TaskOf(&j2, 7), t3 = TaskOf(&j3, 0);
  Allocate(t1);
  Allocate(t1);
  Allocate(t2);
  EXPECT_EQ(Score(t1), 10000.0);
  EXPECT_EQ(Score(t2), 7000.0);
  EXPECT_EQ(Score(t3), 0.0);  // never stored: the empty resource
}

// The point of it: once a slot holds its own Resource, allocate/deallocate overwrite it instead
// of copying 264 bytes into the session arena per store.
TEST_F(StateInPlace, RepeatedStoresDoNotGrowTheSessionArena) {
  ASSERT_TRUE(LoadAlias("state total: Resource;\n", R"(on allocate(task: Task) {
  alloc[task.job] = alloc[task.job] + task.resreq;
  total = total + task.resreq;
}
on deallocate(task: Task) {
  alloc[task.job] -= task.resreq;
  total -= task.resreq;
}
)"));
  Job j;
  Task t = TaskOf(&j, 1);
  Allocate(t);
  size_t after_first = l_->arena.BytesInUse();
  for (int i = 0; i < 1000; ++i) {
    Allocate(t);
    Deallocate(t);
  }
  Allocate(t);
  EXPECT_EQ(l_->arena.BytesInUse(), after_first);
  EXPECT_EQ(Score(t), 2000.0);
}

// A map handed on whole (here: bound to a local) keeps the copying store, so a local that
// aliases the map still sees each entry's value of the moment it read it.
TEST_F(StateInPlace, AMapUsedWholeKeepsCopyingStores) {
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
  ASSERT_TRUE(Load(text));
  Job j;
  Task t = TaskOf(&j, 1);
  Allocate(t);
  Allocate(t);
  Allocate(t);
  EXPECT_EQ(Score(t), 3000.0 + 2.0);

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
TEST_F(StateInPlace, DrfAndProportionStoreInPlace) {
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
