// The session's combination rules (volcano-semantics.md §2.1–2.3), driven by C++ test plugins.

#include "runtime/session.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "runtime/statement.h"
#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

using testing::AddPlugin;
using testing::ClusterBuilder;
using testing::MakeConf;
using testing::Res;
using EP = ExtensionPoint;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b.AddQueue("default");
    b.AddQueue("other");
    b.AddNode("n1", Res(4000, 8192, {{"pods", 110}}));
    b.AddNode("n2", Res(4000, 8192, {{"pods", 110}}));
    b.AddNode("n3", Res(4000, 8192, {{"pods", 110}}));
    Job& a = b.AddJob("ns", "a", "default", 1);
    Job& c = b.AddJob("ns", "c", "default", 1);
    b.AddTask(a, "a-0", Res(1000, 0));
    b.AddTask(a, "a-1", Res(1000, 0));
    b.AddTask(c, "c-0", Res(1000, 0), TaskStatus::Running, "n1");
    b.AddTask(c, "c-1", Res(1000, 0), TaskStatus::Running, "n1");
    b.AddTask(c, "c-2", Res(1000, 0), TaskStatus::Running, "n2");
  }

  // Opens a session whose tiers list the given plugin names.
  void Open(std::vector<std::vector<std::string>> tiers) {
    conf = MakeConf(std::move(tiers));
    ASSERT_TRUE(b.cluster.Link().ok());
    ssn = std::make_unique<Session>(std::move(b.cluster), conf, 1000, "s1");
    Status s = ssn->Open(reg);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  // Opens a session (at time 0) of the one plugin `name`, its `flag` set to `on`.
  void OpenWithFlag(const std::string& name, PluginFlag flag, bool on) {
    conf = MakeConf({{name}});
    conf.tiers[0].plugins[0].flags[static_cast<int>(flag)] = on;
    ASSERT_TRUE(b.cluster.Link().ok());
    ssn = std::make_unique<Session>(std::move(b.cluster), conf, 0);
    ASSERT_TRUE(ssn->Open(reg).ok());
  }

  Job* J(std::string_view uid) { return ssn->cluster().FindJob(uid); }
  Task* T(std::string_view uid) { return ssn->cluster().FindTask(uid); }
  Node* N(std::string_view name) { return ssn->cluster().FindNode(name); }
  std::vector<Task*> Running() { return {T("ns-c-0"), T("ns-c-1"), T("ns-c-2")}; }
  static std::vector<std::string> Names(const std::vector<Task*>& ts) {
    std::vector<std::string> out;
    for (auto* t : ts) out.push_back(t->name);
    return out;
  }

  ClusterBuilder b;
  SchedulerConf conf;
  PluginRegistry reg;
  std::unique_ptr<Session> ssn;
};

// A Preemptable/Reclaimable handler that selects the named candidates (or abstains).
auto Select(std::vector<std::string> names, int32_t verdict = 1) {
  return [names, verdict](const Task*, const Task* const* c, size_t n, uint8_t* sel) -> int32_t {
    for (size_t i = 0; i < n; ++i)
      for (const auto& name : names)
        if (c[i]->name == name) sel[i] = 1;
    return verdict;
  };
}

TEST(PluginRegistry, RejectsDuplicateNames) {
  PluginRegistry reg;
  AddPlugin(reg, "gang", nullptr);
  Status s = reg.Register("gang", [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
    return Error{"unused", {}};
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "plugin \"gang\" is already registered");
  EXPECT_NE(reg.Find("gang"), nullptr);
  EXPECT_EQ(reg.Find("drf"), nullptr);
}

TEST_F(SessionTest, BuilderErrorNamesThePlugin) {
  reg.Register("broken", [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
    return Error{"argument binpack.weight must be a number", {}};
  }).ok();
  conf = MakeConf({{"broken"}});
  ASSERT_TRUE(b.cluster.Link().ok());
  Session s(std::move(b.cluster), conf, 0);
  Status st = s.Open(reg);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "plugin broken: argument binpack.weight must be a number");
}

TEST_F(SessionTest, UnknownPluginIsSkipped) {
  AddPlugin(reg, "known", [](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [](const Job*, const Job*) { return 1; });
  });
  Open({{"unknown", "known"}});
  ASSERT_EQ(ssn->plugins().size(), 1u);
  EXPECT_EQ(ssn->plugins()[0].name, "known");
  EXPECT_EQ(ssn->JobOrderFn(J("ns/a"), J("ns/c")), 1);
}

TEST_F(SessionTest, FlagsGateRegistration) {
  bool registered_order = true, registered_valid = false;
  AddPlugin(reg, "p", [&](Session& s, PluginHandle h) {
    registered_order = s.On<EP::JobOrder>(h, [](const Job*, const Job*) { return 1; });
    // JobValid has no flag: always on.
    registered_valid = s.On<EP::JobValid>(h, [](const Job*, KStatusOut*) { return true; });
  });
  ASSERT_NO_FATAL_FAILURE(OpenWithFlag("p", PluginFlag::enableJobOrder, false));
  EXPECT_FALSE(registered_order);
  EXPECT_TRUE(registered_valid);
  EXPECT_EQ(ssn->JobCompareFn(J("ns/a"), J("ns/c")), 0);
}

TEST_F(SessionTest, UnsetFlagIsOffOutsideTheLoader) {
  // §0: tiers built without the YAML loader leave flags nil, i.e. disabled.
  bool registered = true;
  AddPlugin(reg, "p", [&](Session& s, PluginHandle h) {
    registered = s.On<EP::Predicate>(h, [](const Task*, const Node*, KStatusOut*) { return 2; });
  });
  conf = SchedulerConf{};
  conf.tiers.push_back(Tier{{PluginOption{}}});
  conf.tiers[0].plugins[0].name = "p";
  ASSERT_TRUE(b.cluster.Link().ok());
  ssn = std::make_unique<Session>(std::move(b.cluster), conf, 0);
  ASSERT_TRUE(ssn->Open(reg).ok());
  EXPECT_FALSE(registered);
}

TEST_F(SessionTest, JobOrderFirstNonZeroAcrossTiers) {
  std::vector<std::string> calls;
  AddPlugin(reg, "zero", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [&](const Job*, const Job*) {
      calls.push_back("zero");
      return 0;
    });
  });
  AddPlugin(reg, "later", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [&](const Job*, const Job*) {
      calls.push_back("later");
      return 1;
    });
  });
  AddPlugin(reg, "never", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [&](const Job*, const Job*) {
      calls.push_back("never");
      return -1;
    });
  });
  Open({{"zero"}, {"later", "never"}});
  EXPECT_EQ(ssn->JobOrderFn(J("ns/a"), J("ns/c")), 1);
  EXPECT_EQ(calls, (std::vector<std::string>{"zero", "later"}));
}

TEST_F(SessionTest, JobOrderDefaultsToCreationThenUid) {
  b.cluster.jobs();  // nothing registered
  Open({});
  Job* a = J("ns/a");
  Job* c = J("ns/c");
  EXPECT_LT(ssn->JobOrderFn(a, c), 0) << "equal creation time: UID ns/a < ns/c";
  a->creation_time = 5;
  EXPECT_GT(ssn->JobOrderFn(a, c), 0) << "later creation goes after";
  EXPECT_EQ(ssn->JobCompareFn(a, c), 0) << "the compare form has no default";
}

TEST_F(SessionTest, QueueOrderDefaultsAndVictimQueueOrder) {
  Open({});
  Queue* d = ssn->cluster().FindQueue("default");
  Queue* o = ssn->cluster().FindQueue("other");
  EXPECT_LT(ssn->QueueOrderFn(d, o), 0);
  d->creation_time = 10;
  EXPECT_GT(ssn->QueueOrderFn(d, o), 0);
  // Default victim order is !QueueOrderFn: the queue that orders later is evicted first.
  EXPECT_LT(ssn->VictimQueueOrderFn(d, o, o), 0);
  EXPECT_GT(ssn->VictimQueueOrderFn(o, d, o), 0);
}

TEST_F(SessionTest, TaskOrderDefaultCompareTask) {
  Open({});
  Task x, y;
  x.name = "job-worker-10";
  y.name = "job-worker-9";
  x.uid = "a";
  y.uid = "b";
  EXPECT_GT(ssn->TaskOrderFn(&x, &y), 0) << "numeric suffix 9 < 10";
  x.name = "ab-10";  // only two parts: no index, falls back to creation time then UID
  y.name = "ab-9";
  EXPECT_LT(ssn->TaskOrderFn(&x, &y), 0);
  x.creation_time = 2;
  EXPECT_GT(ssn->TaskOrderFn(&x, &y), 0);
  x.name = "a-b-c-x";  // unparsable suffix
  x.creation_time = 0;
  y.name = "a-b-c-1";
  EXPECT_LT(ssn->TaskOrderFn(&x, &y), 0) << "falls back to UID a < b";
}

TEST_F(SessionTest, PredicateFirstErrorWithPluginName) {
  std::vector<std::string> calls;
  AddPlugin(reg, "ok", [&](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [&](const Task*, const Node*, KStatusOut*) {
      calls.push_back("ok");
      return 0;
    });
  });
  AddPlugin(reg, "taints", [&](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [&](const Task*, const Node* n, KStatusOut* out) -> int32_t {
      calls.push_back("taints");
      if (n->name != "n2") return 0;
      std::string r = "node(s) had untolerated taint {k: v}";
      kiln_status_add_reason(out, r.data(), r.size());
      return static_cast<int32_t>(StatusCode::UnschedulableAndUnresolvable);
    });
  });
  AddPlugin(reg, "after", [&](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [&](const Task*, const Node*, KStatusOut*) {
      calls.push_back("after");
      return 2;
    });
  });
  Open({{"ok", "taints"}, {"after"}});
  auto e = ssn->PredicateFn(T("ns-a-0"), N("n2"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(calls, (std::vector<std::string>{"ok", "taints"}));
  EXPECT_EQ(e->statuses[0].plugin, "taints");
  EXPECT_EQ(e->Reasons(), std::vector<std::string>{"node(s) had untolerated taint {k: v}"});
  EXPECT_TRUE(ssn->PredicateForPreemptAction(T("ns-a-0"), N("n2")).has_value());
  // On n1 the `after` plugin says plain Unschedulable: allocate fails, preempt may try.
  EXPECT_TRUE(ssn->PredicateForAllocateAction(T("ns-a-0"), N("n1")).has_value());
  EXPECT_FALSE(ssn->PredicateForPreemptAction(T("ns-a-0"), N("n1")).has_value());
}

TEST_F(SessionTest, PrePredicateSharesThePredicateFlag) {
  AddPlugin(reg, "pp", [&](Session& s, PluginHandle h) {
    s.On<EP::PrePredicate>(h, [](const Task* t, KStatusOut*) -> int32_t {
      return t->name == "a-1" ? 3 : 0;
    });
  });
  ASSERT_NO_FATAL_FAILURE(OpenWithFlag("pp", PluginFlag::enablePredicate, true));
  EXPECT_FALSE(ssn->PrePredicateFn(T("ns-a-0")).has_value());
  auto st = ssn->PrePredicateFn(T("ns-a-1"));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->code, StatusCode::UnschedulableAndUnresolvable);
}

TEST_F(SessionTest, PrePredicateIsOffWithEnablePredicateFalse) {
  // Volcano gates PrePredicateFn with the plugin's enablePredicate, like PredicateFn.
  AddPlugin(reg, "pp", [&](Session& s, PluginHandle h) {
    s.On<EP::PrePredicate>(h, [](const Task*, KStatusOut*) -> int32_t { return 3; });
  });
  ASSERT_NO_FATAL_FAILURE(OpenWithFlag("pp", PluginFlag::enablePredicate, false));
  EXPECT_FALSE(ssn->PrePredicateFn(T("ns-a-1")).has_value());
}

// Volcano gates SimulateAddTask/SimulateRemoveTask by enablePreemptable OR enabledAllocatable,
// and SimulatePredicate by enablePredicate.
TEST_F(SessionTest, SimulatePointsFollowVolcanosGates) {
  std::vector<std::string> calls;
  AddPlugin(reg, "sim", [&](Session& s, PluginHandle h) {
    s.On<EP::SimulateRemoveTask>(h, [&calls](const Task*, const Task* v, const Node* n) {
      calls.push_back("-" + v->name + "@" + n->name);
    });
    s.On<EP::SimulateAddTask>(h, [&calls](const Task*, const Task* v, const Node* n) {
      calls.push_back("+" + v->name + "@" + n->name);
    });
    s.On<EP::SimulatePredicate>(h, [](const Task*, const Node* n, KStatusOut*) -> int32_t {
      return n->name == "n1" ? 2 : 0;
    });
  });
  auto open = [&](bool preemptable, bool allocatable, bool predicate) {
    ClusterBuilder copy;
    copy.AddQueue("default");
    copy.AddNode("n1", Res(4000, 8192, {{"pods", 110}}));
    Job& c = copy.AddJob("ns", "c", "default", 1);
    copy.AddTask(c, "c-0", Res(1000, 0), TaskStatus::Running, "n1");
    copy.AddTask(c, "c-1", Res(1000, 0));
    conf = MakeConf({{"sim"}});
    auto& flags = conf.tiers[0].plugins[0].flags;
    flags[static_cast<int>(PluginFlag::enablePreemptable)] = preemptable;
    flags[static_cast<int>(PluginFlag::enabledAllocatable)] = allocatable;
    flags[static_cast<int>(PluginFlag::enablePredicate)] = predicate;
    EXPECT_TRUE(copy.cluster.Link().ok());
    ssn = std::make_unique<Session>(std::move(copy.cluster), conf, 0);
    EXPECT_TRUE(ssn->Open(reg).ok());
  };
  auto run = [&] {
    calls.clear();
    ssn->SimulateRemoveTask(T("ns-c-1"), T("ns-c-0"), N("n1"));
    ssn->SimulateAddTask(T("ns-c-1"), T("ns-c-0"), N("n1"));
    return calls;
  };
  const std::vector<std::string> both = {"-c-0@n1", "+c-0@n1"};
  open(true, false, true);
  EXPECT_EQ(run(), both);
  auto fit = ssn->SimulatePredicateFn(T("ns-c-1"), N("n1"));
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->statuses[0].code, StatusCode::Unschedulable);
  open(false, true, false);
  EXPECT_EQ(run(), both);
  EXPECT_FALSE(ssn->SimulatePredicateFn(T("ns-c-1"), N("n1")).has_value());
  open(false, false, true);
  EXPECT_TRUE(run().empty());
}

TEST_F(SessionTest, NodeOrderSumsAndErrorsAbort) {
  AddPlugin(reg, "s1", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* out) -> int32_t {
      *out = n->name == "n1" ? 10 : 1;
      return 0;
    });
  });
  AddPlugin(reg, "s2", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [](const Task*, const Node* n, double* out) -> int32_t {
      *out = 2.5;
      return n->name == "n3" ? 1 : 0;
    });
  });
  Open({{"s1"}, {"s2"}});
  EXPECT_EQ(*ssn->NodeOrderFn(T("ns-a-0"), N("n1")), 12.5);
  EXPECT_EQ(*ssn->NodeOrderFn(T("ns-a-0"), N("n2")), 3.5);
  auto bad = ssn->NodeOrderFn(T("ns-a-0"), N("n3"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "plugin s2: node_order failed for task ns-a-0 on node n3");
}

// A cached node_order score is reused for a task of the same shape on an unchanged node, and
// recomputed once the node changed: placing a task there, or a status change of a task on it,
// bumps Node::version. Without the bump the stale score would be answered.
TEST_F(SessionTest, CachedNodeOrderScoreFollowsNodeMutations) {
  ASSERT_TRUE(ScoreCacheEnabled());
  int calls = 0;
  AddPlugin(reg, "used", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [&calls](const Task* t, const Node* n, double* out) -> int32_t {
      ++calls;
      *out = n->used.cpu() + t->resreq().cpu() / 1000;
      return 0;
    });
    s.EnableScoreCache(h, {ScoreKeyField::Resreq});
  });
  Open({{"used"}});
  Node* n2 = N("n2");
  Task* a0 = T("ns-a-0");
  Task* a1 = T("ns-a-1");  // same request as a-0: same shape
  for (bool speculative : {false, true}) {
    SCOPED_TRACE(speculative ? "NodeOrderSpeculative" : "NodeOrderFn");
    auto score = [&](const Task* t) {
      if (!speculative) return *ssn->NodeOrderFn(t, n2);
      double s = 0;
      uint64_t called = 0;
      EXPECT_EQ(ssn->NodeOrderSpeculative(t, n2, &s, &called), Session::SpeculativeScore::Ok);
      EXPECT_EQ(called, 1u);
      return s;
    };
    calls = 0;
    const double before = n2->used.cpu();
    EXPECT_EQ(score(a0), before + 1);
    EXPECT_EQ(score(a1), before + 1);
    EXPECT_EQ(calls, speculative ? 0 : 1);  // the first round's entry is still valid

    // Placing a task on the node.
    ASSERT_TRUE(ssn->UpdateTaskStatus(a0, TaskStatus::Allocated).ok());
    ASSERT_TRUE(ssn->PlaceTask(a0, n2).ok());
    const int after_place = calls;
    EXPECT_EQ(score(a1), before + 1000 + 1);
    EXPECT_EQ(calls, after_place + 1);
    EXPECT_EQ(score(a1), before + 1000 + 1);
    EXPECT_EQ(calls, after_place + 1);

    // A status change of a task on the node (re-accounted there by the session).
    ASSERT_TRUE(ssn->UpdateTaskStatus(a0, TaskStatus::Pipelined).ok());
    EXPECT_EQ(score(a1), before + 1);
    EXPECT_EQ(calls, after_place + 2);

    // And off the node again.
    ssn->UnplaceTask(a0);
    ASSERT_TRUE(ssn->UpdateTaskStatus(a0, TaskStatus::Pending).ok());
    EXPECT_EQ(score(a1), before + 1);
    EXPECT_EQ(calls, after_place + 3);
  }

  // A call's budget decides whether it faults: setting it again (even to the same value) drops
  // every cached score.
  calls = 0;
  ASSERT_TRUE(ssn->NodeOrderFn(a1, n2).ok());
  EXPECT_EQ(calls, 0);
  SetPolicyCallIterationBudget(PolicyCallIterationBudget());
  ASSERT_TRUE(ssn->NodeOrderFn(a1, n2).ok());
  ASSERT_TRUE(ssn->NodeOrderFn(a1, n2).ok());
  EXPECT_EQ(calls, 1);

  // With the cache off every call reaches the handler.
  SetScoreCacheEnabled(false);
  calls = 0;
  ASSERT_TRUE(ssn->NodeOrderFn(a1, n2).ok());
  ASSERT_TRUE(ssn->NodeOrderFn(a1, n2).ok());
  EXPECT_EQ(calls, 2);
  SetScoreCacheEnabled(true);
}

// When the first node_order plugins are all cacheable, one entry holds their sum: a hit calls
// neither, marks both called, and answers the same double as adding their scores from 0 in
// order (0.1 + 0.2 + 0.3 is not 0.1 + (0.2 + 0.3)). A plugin after them is called every time; a
// sum missing a faulted score is not stored; with a plugin of the run disabled, the others are
// called and summed as without the cache.
TEST_F(SessionTest, LeadingCacheableScoresAreCachedAsOneSum) {
  ASSERT_TRUE(ScoreCacheEnabled());
  int calls_a = 0, calls_b = 0, calls_c = 0;
  bool a_faults = false, b_disables = false;
  AddPlugin(reg, "a", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [&](const Task*, const Node*, double* out) -> int32_t {
      ++calls_a;
      if (a_faults) kiln_policy_fault("once", 4);
      *out = 0.1;
      return 0;
    });
    s.EnableScoreCache(h, {ScoreKeyField::Resreq});
  });
  AddPlugin(reg, "b", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [&](const Task*, const Node*, double* out) -> int32_t {
      ++calls_b;
      if (b_disables) FaultAndDisablePlugin(FaultKind::Host, "off");
      *out = 0.2;
      return 0;
    });
    s.EnableScoreCache(h, {ScoreKeyField::Images});
  });
  AddPlugin(reg, "c", [&](Session& s, PluginHandle h) {
    s.On<EP::NodeOrder>(h, [&calls_c](const Task*, const Node*, double* out) -> int32_t {
      ++calls_c;
      *out = 0.3;
      return 0;
    });
  });
  Open({{"a", "b", "c"}});
  Node* n2 = N("n2");
  Task* a0 = T("ns-a-0");
  Task* a1 = T("ns-a-1");  // same request and images as a-0: same shape
  const double expected = ((0.0 + 0.1) + 0.2) + 0.3;
  ASSERT_NE(expected, 0.1 + (0.2 + 0.3)) << "pick values whose sum depends on the order";

  EXPECT_EQ(*ssn->NodeOrderFn(a0, n2), expected);
  EXPECT_EQ(std::make_tuple(calls_a, calls_b, calls_c), std::make_tuple(1, 1, 1));
  EXPECT_EQ(*ssn->NodeOrderFn(a1, n2), expected);
  EXPECT_EQ(std::make_tuple(calls_a, calls_b, calls_c), std::make_tuple(1, 1, 2));
  double s = 0;
  uint64_t called = 0;
  ASSERT_EQ(ssn->NodeOrderSpeculative(a1, n2, &s, &called), Session::SpeculativeScore::Ok);
  EXPECT_EQ(s, expected);
  EXPECT_EQ(called, 0b111u) << "a hit still reports the run's plugins as called";
  EXPECT_EQ(std::make_tuple(calls_a, calls_b, calls_c), std::make_tuple(1, 1, 3));
  for (const auto& u : ssn->HandlerCoverage())
    if (u.point == EP::NodeOrder) EXPECT_TRUE(u.called) << u.plugin;

  // A fault of a leaves its score out of that answer, and out of the cache: the next call asks
  // both again.
  Node* n1 = N("n1");
  a_faults = true;
  EXPECT_EQ(*ssn->NodeOrderFn(a0, n1), (0.0 + 0.2) + 0.3);
  a_faults = false;
  calls_a = calls_b = 0;
  EXPECT_EQ(*ssn->NodeOrderFn(a0, n1), ((0.0 + 0.1) + 0.2) + 0.3);
  EXPECT_EQ(std::make_tuple(calls_a, calls_b), std::make_tuple(1, 1));
  EXPECT_EQ(*ssn->NodeOrderFn(a1, n1), ((0.0 + 0.1) + 0.2) + 0.3);
  EXPECT_EQ(std::make_tuple(calls_a, calls_b), std::make_tuple(1, 1)) << "now cached";

  // b disabled: a is called (its own cache went to the sum) and only a and c are added.
  b_disables = true;
  EXPECT_EQ(*ssn->NodeOrderFn(a0, N("n3")), (0.0 + 0.1) + 0.3);
  ASSERT_EQ(ssn->decisions().disabled_plugins, std::vector<std::string>{"b"});
  calls_a = calls_b = 0;
  EXPECT_EQ(*ssn->NodeOrderFn(a1, n2), (0.0 + 0.1) + 0.3);
  EXPECT_EQ(*ssn->NodeOrderFn(a1, n2), (0.0 + 0.1) + 0.3);
  EXPECT_EQ(std::make_tuple(calls_a, calls_b), std::make_tuple(2, 0));
  s = 0;
  called = 0;
  ASSERT_EQ(ssn->NodeOrderSpeculative(a1, n2, &s, &called), Session::SpeculativeScore::Ok);
  EXPECT_EQ(s, (0.0 + 0.1) + 0.3);
  EXPECT_EQ(called, 0b101u);
}

// A bare Job::UpdateTaskStatus of a task on a node (no re-accounting) still bumps the node.
TEST(NodeVersion, BumpedByEveryMutation) {
  Node n;
  Task t;
  t.index = 0;
  uint32_t v = n.version;
  ASSERT_TRUE(n.AddTask(&t).ok());
  EXPECT_GT(n.version, v);
  v = n.version;
  Job j;
  j.AddTask(&t);
  j.UpdateTaskStatus(&t, TaskStatus::Running);
  EXPECT_GT(n.version, v);
  v = n.version;
  ASSERT_TRUE(n.UpdateTask(&t).ok());
  EXPECT_GT(n.version, v);
  v = n.version;
  n.RemoveTask(&t);
  EXPECT_GT(n.version, v);
}

TEST_F(SessionTest, BatchNodeOrderSumsPerNode) {
  AddPlugin(reg, "b1", [&](Session& s, PluginHandle h) {
    s.On<EP::BatchNodeOrder>(h, [](const Task*, const Node* const*, size_t n, double* sc) {
      for (size_t i = 0; i < n; ++i) sc[i] = static_cast<double>(i);
      return 0;
    });
  });
  AddPlugin(reg, "b2", [&](Session& s, PluginHandle h) {
    s.On<EP::BatchNodeOrder>(h, [](const Task*, const Node* const* nodes, size_t n, double* sc) {
      for (size_t i = 0; i < n; ++i) sc[i] = nodes[i]->name == "n2" ? 100 : 0;
      return 0;
    });
  });
  Open({{"b1", "b2"}});
  std::vector<Node*> nodes{N("n1"), N("n2"), N("n3")};
  std::vector<double> scores;
  ASSERT_TRUE(ssn->BatchNodeOrderFn(T("ns-a-0"), nodes, scores).ok());
  EXPECT_EQ(scores, (std::vector<double>{0, 101, 2}));
}

TEST_F(SessionTest, BestNodeFirstNonNull) {
  AddPlugin(reg, "none", [&](Session& s, PluginHandle h) {
    s.On<EP::BestNode>(h, [](const Task*, const Node* const*, size_t, const double*) {
      return static_cast<const Node*>(nullptr);
    });
  });
  AddPlugin(reg, "max", [&](Session& s, PluginHandle h) {
    s.On<EP::BestNode>(h, [](const Task*, const Node* const* nodes, size_t n, const double* sc) {
      size_t best = 0;
      for (size_t i = 1; i < n; ++i)
        if (sc[i] > sc[best]) best = i;
      return nodes[best];
    });
  });
  Open({{"none"}, {"max"}});
  std::vector<Node*> nodes{N("n1"), N("n2"), N("n3")};
  std::vector<double> scores{1, 5, 3};
  EXPECT_EQ(ssn->BestNodeFn(T("ns-a-0"), nodes, scores), N("n2"));
}

// §6 surprise 2 (a): an empty answer discards the tier; the next tier decides.
TEST_F(SessionTest, VictimsEmptyAnswerDiscardsTier) {
  AddPlugin(reg, "all", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({"c-0", "c-1", "c-2"}));
  });
  AddPlugin(reg, "none", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({}));
  });
  AddPlugin(reg, "tier2", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({"c-2"}));
  });
  Open({{"all", "none"}, {"tier2"}});
  auto cands = Running();
  EXPECT_EQ(Names(ssn->Preemptable(T("ns-a-0"), cands)), std::vector<std::string>{"c-2"});
}

// §6 surprise 2 (b): an empty intersection lets the next plugin of the tier start over.
TEST_F(SessionTest, VictimsEmptyIntersectionRestarts) {
  AddPlugin(reg, "first", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({"c-0"}));
  });
  AddPlugin(reg, "disjoint", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({"c-1"}));
  });
  AddPlugin(reg, "restart", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({"c-2", "c-1"}));
  });
  Open({{"first", "disjoint", "restart"}});
  auto cands = Running();
  EXPECT_EQ(Names(ssn->Preemptable(T("ns-a-0"), cands)),
            (std::vector<std::string>{"c-1", "c-2"}));
}

TEST_F(SessionTest, VictimsIntersectAbstainAndRejectCountsAsDecided) {
  AddPlugin(reg, "abstain", [&](Session& s, PluginHandle h) {
    s.On<EP::Reclaimable>(h, Select({"c-0"}, 0));
  });
  AddPlugin(reg, "wide", [&](Session& s, PluginHandle h) {
    s.On<EP::Reclaimable>(h, Select({"c-2", "c-0", "c-1"}));
  });
  AddPlugin(reg, "reject", [&](Session& s, PluginHandle h) {
    s.On<EP::Reclaimable>(h, Select({"c-0", "c-2"}, -1));
  });
  AddPlugin(reg, "ignored", [&](Session& s, PluginHandle h) {
    s.On<EP::Reclaimable>(h, Select({"c-1"}));
  });
  Open({{"abstain", "wide", "reject"}, {"ignored"}});
  auto cands = Running();
  EXPECT_EQ(Names(ssn->Reclaimable(T("ns-a-0"), cands)),
            (std::vector<std::string>{"c-0", "c-2"}));
}

TEST_F(SessionTest, VictimsNoneWhenEveryTierEmpty) {
  AddPlugin(reg, "none", [&](Session& s, PluginHandle h) {
    s.On<EP::Preemptable>(h, Select({}));
  });
  Open({{"none"}, {"none"}});
  auto cands = Running();
  EXPECT_TRUE(ssn->Preemptable(T("ns-a-0"), cands).empty());
}

TEST_F(SessionTest, VictimTasksUnionPerTier) {
  auto pick = [](std::vector<std::string> names) {
    return [names](const Task* const* ts, size_t n, uint8_t* sel) {
      for (size_t i = 0; i < n; ++i)
        for (auto& nm : names)
          if (ts[i]->name == nm) sel[i] = 1;
    };
  };
  AddPlugin(reg, "empty", [&](Session& s, PluginHandle h) { s.On<EP::VictimTasks>(h, pick({})); });
  AddPlugin(reg, "x", [&](Session& s, PluginHandle h) { s.On<EP::VictimTasks>(h, pick({"c-2"})); });
  AddPlugin(reg, "y", [&](Session& s, PluginHandle h) {
    s.On<EP::VictimTasks>(h, pick({"c-0", "c-2"}));
  });
  AddPlugin(reg, "z", [&](Session& s, PluginHandle h) { s.On<EP::VictimTasks>(h, pick({"c-1"})); });
  Open({{"empty"}, {"x", "y"}, {"z"}});
  auto ts = Running();
  EXPECT_EQ(Names(ssn->VictimTasks(ts)), (std::vector<std::string>{"c-0", "c-2"}));
}

TEST_F(SessionTest, OverusedAnyAllocatableAll) {
  Open({});
  Queue* q = ssn->cluster().FindQueue("default");
  EXPECT_FALSE(ssn->Overused(q)) << "default false";
  EXPECT_TRUE(ssn->Allocatable(q, T("ns-a-0"))) << "default true";
  EXPECT_TRUE(ssn->Preemptive(q, T("ns-a-0")));
  EXPECT_TRUE(ssn->JobReady(J("ns/a")));
  EXPECT_TRUE(ssn->JobPipelined(J("ns/a")));
  EXPECT_TRUE(ssn->JobEnqueueable(J("ns/a")));
  EXPECT_FALSE(ssn->JobStarving(J("ns/a"))) << "§6 surprise 3: default false";
  EXPECT_FALSE(ssn->JobValid(J("ns/a")).has_value());
}

TEST_F(SessionTest, BoolCombinations) {
  AddPlugin(reg, "t1", [&](Session& s, PluginHandle h) {
    s.On<EP::Overused>(h, [](const Queue*) { return false; });
    s.On<EP::Allocatable>(h, [](const Queue*, const Task*) { return true; });
    s.On<EP::JobReady>(h, [](const Job*) { return true; });
  });
  AddPlugin(reg, "t2", [&](Session& s, PluginHandle h) {
    s.On<EP::Overused>(h, [](const Queue*) { return true; });
    s.On<EP::Allocatable>(h, [](const Queue*, const Task* t) { return t->name != "a-1"; });
    s.On<EP::JobReady>(h, [](const Job* j) { return j->name == "a"; });
  });
  Open({{"t1"}, {"t2"}});
  Queue* q = ssn->cluster().FindQueue("default");
  EXPECT_TRUE(ssn->Overused(q));
  EXPECT_TRUE(ssn->Allocatable(q, T("ns-a-0")));
  EXPECT_FALSE(ssn->Allocatable(q, T("ns-a-1")));
  EXPECT_TRUE(ssn->JobReady(J("ns/a")));
  EXPECT_FALSE(ssn->JobReady(J("ns/c")));
}

auto Vote(int32_t v) {
  return [v](const Job*) { return v; };
}

// §6 surprise: a Reject after a Permit in the same tier still wins.
TEST_F(SessionTest, VoteRejectAfterPermitInOneTier) {
  AddPlugin(reg, "permit", [&](Session& s, PluginHandle h) { s.On<EP::JobPipelined>(h, Vote(1)); });
  AddPlugin(reg, "reject", [&](Session& s, PluginHandle h) { s.On<EP::JobPipelined>(h, Vote(-1)); });
  Open({{"permit", "reject"}});
  EXPECT_FALSE(ssn->JobPipelined(J("ns/a")));
}

TEST_F(SessionTest, VotePermitEndsTheWalkAtItsTier) {
  AddPlugin(reg, "abstain", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, Vote(0));
  });
  AddPlugin(reg, "permit", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, Vote(1));
  });
  AddPlugin(reg, "reject", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, Vote(-1));
  });
  Open({{"abstain", "permit"}, {"reject"}});
  EXPECT_TRUE(ssn->JobEnqueueable(J("ns/a"))) << "tier 2's reject is never consulted";
}

TEST_F(SessionTest, VoteAllAbstainPermitsAndLaterTierRejects) {
  AddPlugin(reg, "abstain", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, Vote(0));
  });
  AddPlugin(reg, "reject", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueueable>(h, Vote(-1));
  });
  Open({{"abstain"}, {"reject"}});
  EXPECT_FALSE(ssn->JobEnqueueable(J("ns/a")));
}

TEST_F(SessionTest, JobEnqueueableGatedByEnqueuedFlag) {
  bool ok = true;
  AddPlugin(reg, "p", [&](Session& s, PluginHandle h) { ok = s.On<EP::JobEnqueueable>(h, Vote(-1)); });
  ASSERT_NO_FATAL_FAILURE(OpenWithFlag("p", PluginFlag::enableJobEnqueued, false));
  EXPECT_FALSE(ok);
  EXPECT_TRUE(ssn->JobEnqueueable(J("ns/a")));
}

TEST_F(SessionTest, JobEnqueuedCallsEveryPlugin) {
  std::vector<std::string> calls;
  AddPlugin(reg, "p1", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueued>(h, [&](const Job* j) { calls.push_back("p1:" + j->name); });
  });
  AddPlugin(reg, "p2", [&](Session& s, PluginHandle h) {
    s.On<EP::JobEnqueued>(h, [&](const Job* j) { calls.push_back("p2:" + j->name); });
  });
  Open({{"p1"}, {"p2"}});
  ssn->JobEnqueued(J("ns/a"));
  EXPECT_EQ(calls, (std::vector<std::string>{"p1:a", "p2:a"}));
}

TEST_F(SessionTest, VictimQueueOrderHandlerOverridesDefault) {
  AddPlugin(reg, "capacity", [&](Session& s, PluginHandle h) {
    // Evict from the preemptor's own queue last.
    s.On<EP::VictimQueueOrder>(h, [](const Queue* l, const Queue* r, const Queue* p) -> int32_t {
      if (l == p && r != p) return 1;
      if (r == p && l != p) return -1;
      return 0;
    });
  });
  Open({{"capacity"}});
  Queue* d = ssn->cluster().FindQueue("default");
  Queue* o = ssn->cluster().FindQueue("other");
  EXPECT_GT(ssn->VictimQueueOrderFn(d, o, d), 0);
  EXPECT_LT(ssn->VictimQueueOrderFn(d, o, o), 0);
  EXPECT_LT(ssn->VictimQueueOrderFn(o, d, ssn->cluster().FindQueue("default")), 0);
}

TEST_F(SessionTest, JobStarvingFirstTierWithHandlersDecides) {
  AddPlugin(reg, "yes", [&](Session& s, PluginHandle h) {
    s.On<EP::JobStarving>(h, [](const Job*) { return true; });
  });
  AddPlugin(reg, "no", [&](Session& s, PluginHandle h) {
    s.On<EP::JobStarving>(h, [](const Job*) { return false; });
  });
  AddPlugin(reg, "silent", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [](const Job*, const Job*) { return 0; });
  });
  Open({{"silent"}, {"yes"}, {"no"}});
  EXPECT_TRUE(ssn->JobStarving(J("ns/a"))) << "tier 2 decides; tier 3's false is not consulted";
}

TEST_F(SessionTest, JobStarvingAndWithinTier) {
  AddPlugin(reg, "yes", [&](Session& s, PluginHandle h) {
    s.On<EP::JobStarving>(h, [](const Job*) { return true; });
  });
  AddPlugin(reg, "no", [&](Session& s, PluginHandle h) {
    s.On<EP::JobStarving>(h, [](const Job*) { return false; });
  });
  Open({{"yes", "no"}});
  EXPECT_FALSE(ssn->JobStarving(J("ns/a")));
}

TEST_F(SessionTest, JobValidFirstInvalidWithReason) {
  AddPlugin(reg, "gang", [&](Session& s, PluginHandle h) {
    s.On<EP::JobValid>(h, [](const Job* j, KStatusOut* out) {
      if (j->name != "c") return true;
      std::string r = "NotEnoughTasks", m = "job c has 3 tasks, 4 needed";
      kiln_status_add_reason(out, r.data(), r.size());
      kiln_status_set_message(out, m.data(), m.size());
      return false;
    });
  });
  AddPlugin(reg, "other", [&](Session& s, PluginHandle h) {
    s.On<EP::JobValid>(h, [](const Job*, KStatusOut*) { return false; });
  });
  Open({{"gang"}, {"other"}});
  auto v = ssn->JobValid(J("ns/c"));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->plugin, "gang");
  EXPECT_EQ(v->reason, "NotEnoughTasks");
  EXPECT_EQ(v->message, "job c has 3 tasks, 4 needed");
  auto w = ssn->JobValid(J("ns/a"));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->plugin, "other");
}

TEST_F(SessionTest, PolicyFaultIsCountedNamedAndAbstains) {
  AddPlugin(reg, "faulty", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [](const Job*, const Job*) {
      std::string m = "division by zero";
      kiln_policy_fault(m.data(), m.size());
      return -1;
    });
    s.On<EP::Allocatable>(h, [](const Queue*, const Task*) {
      kiln_policy_fault("boom", 4);
      return true;
    });
  });
  AddPlugin(reg, "fine", [&](Session& s, PluginHandle h) {
    s.On<EP::JobOrder>(h, [](const Job*, const Job*) { return 1; });
  });
  Open({{"faulty", "fine"}});
  EXPECT_EQ(ssn->JobOrderFn(J("ns/a"), J("ns/c")), 1) << "the faulted answer is ignored";
  EXPECT_FALSE(ssn->Allocatable(ssn->cluster().FindQueue("default"), T("ns-a-0")))
      << "a faulted gate fails closed";
  EXPECT_EQ(ssn->fault_count(), 2u);
  ASSERT_EQ(ssn->decisions().faults.size(), 2u);
  EXPECT_EQ(ssn->decisions().faults[0], "plugin faulty: job_order: division by zero");
  EXPECT_EQ(ssn->decisions().faults[1], "plugin faulty: allocatable: boom");
  EXPECT_EQ(ssn->plugins()[0].faults, 2u);
}

TEST_F(SessionTest, PredicateFaultRejectsTheNode) {
  AddPlugin(reg, "faulty", [&](Session& s, PluginHandle h) {
    s.On<EP::Predicate>(h, [](const Task*, const Node*, KStatusOut*) {
      kiln_policy_fault("bad", 3);
      return 0;
    });
  });
  Open({{"faulty"}});
  auto e = ssn->PredicateFn(T("ns-a-0"), N("n1"));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->statuses[0].code, StatusCode::Error);
  EXPECT_EQ(e->Reasons(), std::vector<std::string>{"plugin faulty failed"});
}

TEST_F(SessionTest, EventHandlersFireInPluginOrder) {
  std::vector<std::string> events;
  auto rec = [&](std::string tag) {
    return [&events, tag](const Task* t) { events.push_back(tag + ":" + t->name); };
  };
  AddPlugin(reg, "p1", [&](Session& s, PluginHandle h) {
    s.On<EP::OnAllocate>(h, rec("alloc1"));
    s.On<EP::OnDeallocate>(h, rec("dealloc1"));
  });
  AddPlugin(reg, "p2", [&](Session& s, PluginHandle h) {
    s.On<EP::OnAllocate>(h, rec("alloc2"));
    s.On<EP::OnDeallocate>(h, rec("dealloc2"));
  });
  Open({{"p1"}, {"p2"}});
  Statement st(*ssn);
  ASSERT_TRUE(st.Allocate(T("ns-a-0"), N("n2")).ok());
  ASSERT_TRUE(st.Evict(T("ns-c-2"), "preempt").ok());
  st.Discard();
  EXPECT_EQ(events, (std::vector<std::string>{"alloc1:a-0", "alloc2:a-0", "dealloc1:c-2",
                                              "dealloc2:c-2", "alloc1:c-2", "alloc2:c-2",
                                              "dealloc1:a-0", "dealloc2:a-0"}));
}

TEST_F(SessionTest, SessionOpenAndCloseHandlersRun) {
  std::vector<std::string> log;
  AddPlugin(
      reg, "p",
      [&](Session& s, PluginHandle h) {
        log.push_back("open");
        s.On<EP::SessionOpen>(h, [&] { log.push_back("session_open"); });
        s.On<EP::SessionClose>(h, [&] { log.push_back("session_close"); });
      },
      [&](Session&) { log.push_back("close"); });
  Open({{"p"}});
  ssn->Close();
  EXPECT_EQ(log, (std::vector<std::string>{"open", "session_open", "session_close", "close"}));
}

TEST_F(SessionTest, BackfillAllocateDispatchesWhenJobReady) {
  // Job a needs 2 members: the first Allocate leaves it Allocated, the second binds both.
  b.cluster.jobs();
  Open({});
  Job* a = J("ns/a");
  a->min_available = 2;
  ASSERT_TRUE(ssn->Allocate(T("ns-a-0"), N("n2")).ok());
  // JobReady defaults to true with no handlers, so Volcano dispatches at once.
  EXPECT_EQ(T("ns-a-0")->status, TaskStatus::Binding);
  ASSERT_EQ(ssn->decisions().binds.size(), 1u);
  EXPECT_EQ(ssn->decisions().binds[0].node, N("n2"));
}

TEST_F(SessionTest, BackfillAllocateWaitsForJobReady) {
  AddPlugin(reg, "gangish", [&](Session& s, PluginHandle h) {
    s.On<EP::JobReady>(h, [](const Job* j) { return j->IsReady(); });
  });
  Open({{"gangish"}});
  J("ns/a")->min_available = 2;
  ASSERT_TRUE(ssn->Allocate(T("ns-a-0"), N("n2")).ok());
  EXPECT_EQ(T("ns-a-0")->status, TaskStatus::Allocated);
  EXPECT_TRUE(ssn->decisions().binds.empty());
  ASSERT_TRUE(ssn->Allocate(T("ns-a-1"), N("n3")).ok());
  EXPECT_EQ(T("ns-a-0")->status, TaskStatus::Binding);
  EXPECT_EQ(T("ns-a-1")->status, TaskStatus::Binding);
  EXPECT_EQ(ssn->decisions().binds.size(), 2u);
  EXPECT_EQ(N("n2")->idle.cpu(), 2000) << "4000 − c-2's 1000 − a-0's 1000";
}

TEST_F(SessionTest, EvictIsImmediate) {
  Open({});
  ASSERT_TRUE(ssn->Evict(T("ns-c-2"), "shuffle").ok());
  EXPECT_EQ(T("ns-c-2")->status, TaskStatus::Releasing);
  EXPECT_EQ(N("n2")->releasing.cpu(), 1000);
  ASSERT_EQ(ssn->decisions().evictions.size(), 1u);
  EXPECT_EQ(ssn->decisions().evictions[0].reason, "shuffle");
}

TEST_F(SessionTest, PipelineUsesFutureIdle) {
  Open({});
  ASSERT_TRUE(ssn->Pipeline(T("ns-a-0"), N("n1")).ok());
  EXPECT_EQ(N("n1")->pipelined.cpu(), 1000);
  EXPECT_EQ(N("n1")->idle.cpu(), 2000) << "pipelining does not touch idle";
  EXPECT_EQ(N("n1")->FutureIdle().cpu(), 1000);
  EXPECT_EQ(J("ns/a")->WaitingTaskNum(), 1);
}

TEST_F(SessionTest, CloseComputesPhasesReasonsAndPipelined) {
  Open({});
  Job* a = J("ns/a");
  Job* c = J("ns/c");
  a->phase = PodGroupPhase::Inqueue;
  c->phase = PodGroupPhase::Pending;
  FitErrors fe;
  fe.SetTotalNodes(3);
  fe.Add(FitError("ns-a-1", "n1", StatusCode::Unschedulable, "Insufficient cpu"));
  fe.Add(FitError("ns-a-1", "n2", StatusCode::Unschedulable, "Insufficient cpu"));
  fe.Add(FitError("ns-a-1", "n3", StatusCode::UnschedulableAndUnresolvable,
                  "node(s) had untolerated taint {k: v}"));
  ssn->RecordFitErrors(T("ns-a-1"), fe);
  EXPECT_TRUE(ssn->NodeUnresolvableFor(T("ns-a-1"), N("n3")));
  EXPECT_FALSE(ssn->NodeUnresolvableFor(T("ns-a-1"), N("n1")));
  ASSERT_TRUE(ssn->Pipeline(T("ns-a-0"), N("n3")).ok());
  ssn->Close();
  const Decisions& d = ssn->decisions();
  ASSERT_EQ(d.unschedulable.size(), 1u);
  EXPECT_EQ(d.unschedulable[0].first, T("ns-a-1"));
  EXPECT_EQ(d.unschedulable[0].second,
            "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}.");
  ASSERT_EQ(d.pipelined.size(), 1u);
  EXPECT_EQ(d.pipelined[0].node, N("n3"));
  // a: nothing scheduled, Inqueue stays Inqueue; c: 3 running ≥ 1 → Running.
  EXPECT_EQ(a->phase, PodGroupPhase::Inqueue);
  EXPECT_EQ(c->phase, PodGroupPhase::Running);
}

TEST_F(SessionTest, ClosePhaseRules) {
  Open({});
  Job* a = J("ns/a");
  Job* c = J("ns/c");
  // Pending job without enough scheduled tasks stays Pending.
  a->phase = PodGroupPhase::Pending;
  // Running tasks + an Unschedulable condition of THIS session → Unknown.
  ssn->UpdatePodGroupCondition(c, {"Unschedulable", "True", "s1", 0, "NotEnoughResources", ""});
  ssn->Close();
  EXPECT_EQ(a->phase, PodGroupPhase::Pending);
  EXPECT_EQ(c->phase, PodGroupPhase::Unknown);
}

TEST(SessionClose, BoundThisSessionStaysInqueueAndCompletedJobs) {
  ClusterBuilder b;
  b.AddQueue("default");
  b.AddNode("n1", Res(4000, 0, {{"pods", 10}}));
  Job& bound = b.AddJob("ns", "bound", "default", 1);
  bound.phase = PodGroupPhase::Inqueue;
  b.AddTask(bound, "x", Res(100, 0));
  Job& done = b.AddJob("ns", "done", "default", 2);
  done.phase = PodGroupPhase::Running;
  b.AddTask(done, "d0", Res(100, 0), TaskStatus::Succeeded, "n1");
  b.AddTask(done, "d1", Res(100, 0), TaskStatus::Succeeded, "n1");
  Job& stale = b.AddJob("ns", "stale", "default", 1);
  stale.phase = PodGroupPhase::Running;
  stale.SetCondition({"Unschedulable", "True", "old-session", 0, "", ""});
  b.AddTask(stale, "s0", Res(100, 0), TaskStatus::Running, "n1");
  ASSERT_TRUE(b.cluster.Link().ok());
  SchedulerConf conf;
  Session ssn(std::move(b.cluster), conf, 0, "s2");
  ASSERT_TRUE(ssn.Open(PluginRegistry{}).ok());
  Statement st(ssn);
  ASSERT_TRUE(st.Allocate(ssn.cluster().FindTask("ns-x"), ssn.cluster().FindNode("n1")).ok());
  st.Commit();
  ssn.Close();
  EXPECT_EQ(ssn.cluster().FindJob("ns/bound")->phase, PodGroupPhase::Inqueue)
      << "Binding is not scheduled (§6 surprise 6)";
  EXPECT_EQ(ssn.cluster().FindJob("ns/done")->phase, PodGroupPhase::Completed);
  EXPECT_EQ(ssn.cluster().FindJob("ns/stale")->phase, PodGroupPhase::Running)
      << "the condition belongs to another session";
  EXPECT_EQ(ssn.decisions().phases.size(), 3u);
}

TEST(SessionClose, QueueAllocatedPropagatesToRoot) {
  ClusterBuilder b;
  b.AddQueue("root");
  b.AddQueue("eng").parent_name = "root";
  b.AddQueue("ml").parent_name = "eng";
  b.AddNode("n1", Res(8000, 0, {{"pods", 10}}));
  Job& j = b.AddJob("ns", "j", "ml", 1);
  b.AddTask(j, "r", Res(1000, 0), TaskStatus::Running, "n1");
  b.AddTask(j, "p", Res(500, 0));
  Job& k = b.AddJob("ns", "k", "eng", 1);
  b.AddTask(k, "rk", Res(2000, 0), TaskStatus::Running, "n1");
  ASSERT_TRUE(b.cluster.Link().ok());
  SchedulerConf conf;
  Session ssn(std::move(b.cluster), conf, 0);
  ASSERT_TRUE(ssn.Open(PluginRegistry{}).ok());
  ssn.Close();
  EXPECT_EQ(ssn.cluster().FindQueue("ml")->allocated.cpu(), 1000);
  EXPECT_EQ(ssn.cluster().FindQueue("eng")->allocated.cpu(), 3000);
  EXPECT_EQ(ssn.cluster().FindQueue("root")->allocated.cpu(), 3000);
  EXPECT_EQ(ssn.cluster().FindQueue("root")->allocated.Get(kPods), 2);
}

TEST(ExtensionTable, FallbacksMatchVolcano) {
  EXPECT_EQ(Info(EP::JobStarving).fallback, Fallback::False) << "§6 surprise 3";
  EXPECT_EQ(Info(EP::JobReady).fallback, Fallback::True);
  EXPECT_EQ(Info(EP::JobPipelined).fallback, Fallback::True);
  EXPECT_EQ(Info(EP::Overused).fallback, Fallback::False);
  EXPECT_EQ(Info(EP::Preemptable).fallback, Fallback::NoVictims);
  EXPECT_EQ(Describe(Info(EP::JobOrder).fallback), "earlier creation time first, then UID");
  for (const auto& p : kExtensionPoints) {
    // Every bool-answering point has a boolean fallback and every notification has none.
    if (p.result == AbiKind::Bool || p.result == AbiKind::Vote)
      EXPECT_TRUE(p.fallback == Fallback::True || p.fallback == Fallback::False) << p.handler;
    if (p.result == AbiKind::Void) EXPECT_EQ(p.fallback, Fallback::Nothing) << p.handler;
  }
}

TEST(HandlerSignatures, DerivedFromTheTable) {
  static_assert(std::is_same_v<HandlerFn<EP::JobOrder>, int32_t (*)(void*, const Job*, const Job*)>);
  static_assert(std::is_same_v<HandlerFn<EP::VictimQueueOrder>,
                               int32_t (*)(void*, const Queue*, const Queue*, const Queue*)>);
  static_assert(std::is_same_v<HandlerFn<EP::Predicate>,
                               int32_t (*)(void*, const Task*, const Node*, KStatusOut*)>);
  static_assert(std::is_same_v<HandlerFn<EP::NodeOrder>,
                               int32_t (*)(void*, const Task*, const Node*, double*)>);
  static_assert(std::is_same_v<HandlerFn<EP::BestNode>,
                               const Node* (*)(void*, const Task*, const Node* const*, size_t,
                                               const double*)>);
  static_assert(std::is_same_v<HandlerFn<EP::Preemptable>,
                               int32_t (*)(void*, const Task*, const Task* const*, size_t, uint8_t*)>);
  static_assert(std::is_same_v<HandlerFn<EP::VictimTasks>,
                               void (*)(void*, const Task* const*, size_t, uint8_t*)>);
  static_assert(std::is_same_v<HandlerFn<EP::JobValid>, bool (*)(void*, const Job*, KStatusOut*)>);
  static_assert(std::is_same_v<HandlerFn<EP::JobPipelined>, int32_t (*)(void*, const Job*)>);
  static_assert(std::is_same_v<HandlerFn<EP::SessionClose>, void (*)(void*)>);
  SUCCEED();
}

}  // namespace
}  // namespace kiln
