// kiln explain (runtime/explain.h) and direct calls (runtime/calls.h) with the built-in policies:
// hand-derived per-plugin scores and statuses, the two modes agreeing on the first pod placed,
// the figures policies show for queues, and recording staying off by default.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <tuple>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/calls.h"
#include "runtime/explain.h"
#include "runtime/session.h"
#include "simulator/explain_scenario.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

struct Loaded {
  ScenarioSpec spec;
  SchedulerConf conf;
  std::unique_ptr<PolicyProvider> provider;
};

Loaded Load(const std::string& path) {
  auto spec = LoadScenarioFile(KilnSourceDir().string() + "/" + path);
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().Format());
  auto conf = ResolveScenarioConf(*spec, nullptr, "");
  EXPECT_TRUE(conf.ok()) << (conf.ok() ? "" : conf.error().Format());
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  EXPECT_TRUE(provider.ok());
  return Loaded{std::move(*spec), std::move(*conf), std::move(*provider)};
}

// Explanations are stored compactly and expanded on reading: the pod is a copy.
std::unique_ptr<TaskExplain> FindTask(const Explanation& e, const std::string& key) {
  for (size_t i = 0; i < e.tasks.size(); ++i)
    if (e.tasks.key(i) == key) return std::make_unique<TaskExplain>(e.tasks[i]);
  return nullptr;
}

const NodeExplain* FindNode(const TaskExplain& t, const std::string& node) {
  for (const auto& n : t.nodes)
    if (n.node == node) return &n;
  return nullptr;
}

double Score(const std::vector<std::pair<std::string, double>>& scores, const std::string& p) {
  for (const auto& [name, s] : scores)
    if (name == p) return s;
  ADD_FAILURE() << "no score from " << p;
  return -1;
}

constexpr const char* kScoring = "tests/cli/explain/data/scoring.yaml";

TEST(Explain, AtOpenScoresAndStatusesOfEveryScoringAndPredicatePolicy) {
  Loaded l = Load(kScoring);
  auto e = ExplainScenarioAtOpen(l.spec, l.conf, *l.provider);
  ASSERT_TRUE(e.ok()) << e.error().Format();
  EXPECT_TRUE(e->at_open);
  auto p0 = FindTask(*e, "c1/p-0");
  ASSERT_NE(p0, nullptr);
  EXPECT_TRUE(p0->result_kind.empty());  // no result at open

  const NodeExplain* n3 = FindNode(*p0, "n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->code, StatusCode::UnschedulableAndUnresolvable);
  EXPECT_EQ(n3->reason, "node(s) had untolerated taint {k: v}");
  EXPECT_FALSE(n3->scored);
  // Each predicate plugin answers on its own: predicates rejects, resource-strategy-fit passes.
  ASSERT_EQ(n3->predicates.size(), 2u);
  EXPECT_EQ(n3->predicates[0].plugin, "predicates");
  EXPECT_EQ(n3->predicates[0].code, StatusCode::UnschedulableAndUnresolvable);
  EXPECT_EQ(n3->predicates[1].plugin, "resource-strategy-fit");
  EXPECT_EQ(n3->predicates[1].code, StatusCode::Success);

  struct Want {
    const char* node;
    double nodeorder, binpack, rsf, batch;
  };
  for (const Want& w : {Want{"n1", 175, 25, 750, 300}, Want{"n2", 125, 75, 250, 300},
                        Want{"n4", 99, 62.5, 375, 300}}) {
    SCOPED_TRACE(w.node);
    const NodeExplain* n = FindNode(*p0, w.node);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->code, StatusCode::Success);
    ASSERT_TRUE(n->scored);
    EXPECT_DOUBLE_EQ(Score(n->scores, "nodeorder"), w.nodeorder);
    EXPECT_DOUBLE_EQ(Score(n->scores, "binpack"), w.binpack);
    EXPECT_DOUBLE_EQ(Score(n->scores, "resource-strategy-fit"), w.rsf);
    EXPECT_DOUBLE_EQ(n->node_order, w.nodeorder + w.binpack + w.rsf);
    EXPECT_DOUBLE_EQ(Score(n->batch_scores, "nodeorder"), w.batch);
    EXPECT_DOUBLE_EQ(n->total, n->node_order + w.batch);
    EXPECT_EQ(n->fits, "idle");
  }

  // big asks for cpu 8: the predicates pass on n1 but the action's resource check does not.
  auto big = FindTask(*e, "c1/big");
  ASSERT_NE(big, nullptr);
  const NodeExplain* n1 = FindNode(*big, "n1");
  EXPECT_EQ(n1->code, StatusCode::Success);
  EXPECT_EQ(n1->fits, "none");
  EXPECT_EQ(n1->insufficient, std::vector<std::string>{"cpu"});
}

TEST(Explain, AtOpenAndRecordedModesAgreeForTheFirstPodPlaced) {
  Loaded l = Load(kScoring);
  auto at_open = ExplainScenarioAtOpen(l.spec, l.conf, *l.provider);
  auto recorded = ExplainScenarioSession(l.spec, l.conf, *l.provider);
  ASSERT_TRUE(at_open.ok() && recorded.ok());
  ASSERT_FALSE(recorded->tasks.empty());
  // Pods are kept in the order the actions recorded them: the first bound one was placed first
  // (big, recorded before it, was given up).
  auto it = std::find_if(recorded->tasks.begin(), recorded->tasks.end(),
                         [](const TaskExplain& t) { return t.result_kind == "bound"; });
  ASSERT_NE(it, recorded->tasks.end());
  EXPECT_EQ(recorded->tasks.key(0), "c1/big");
  const TaskExplain& first = *it;
  EXPECT_EQ(first.key, "c1/p-0");
  EXPECT_EQ(first.action, "allocate");
  EXPECT_EQ(first.result_kind, "bound");
  EXPECT_EQ(first.result_value, "n1");
  auto open = FindTask(*at_open, first.key);
  ASSERT_NE(open, nullptr);
  ASSERT_EQ(open->nodes.size(), first.nodes.size());
  for (size_t i = 0; i < first.nodes.size(); ++i) {
    const NodeExplain& a = open->nodes[i];
    const NodeExplain& b = first.nodes[i];
    SCOPED_TRACE(a.node);
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.code, b.code);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.scored, b.scored);
    EXPECT_EQ(a.scores, b.scores);
    EXPECT_EQ(a.batch_scores, b.batch_scores);
    EXPECT_DOUBLE_EQ(a.node_order, b.node_order);
    EXPECT_DOUBLE_EQ(a.total, b.total);
  }
  // The second pod was recorded after p-0 took cpu 1 and 2Gi of n1: its scores moved.
  auto p1 = FindTask(*recorded, "c1/p-1");
  ASSERT_NE(p1, nullptr);
  const NodeExplain* n1 = FindNode(*p1, "n1");
  EXPECT_DOUBLE_EQ(Score(n1->scores, "nodeorder"), 150);
  EXPECT_DOUBLE_EQ(Score(n1->scores, "binpack"), 50);
  EXPECT_DOUBLE_EQ(Score(n1->scores, "resource-strategy-fit"), 500);
  EXPECT_EQ(p1->result_kind, "bound");
  auto big = FindTask(*recorded, "c1/big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->result_kind, "unschedulable");
  EXPECT_NE(big->result_value.find("Insufficient cpu"), std::string::npos) << big->result_value;
}

TEST(Explain, JobsAndQueuesShowWhatThePoliciesDeclare) {
  Loaded l = Load(kScoring);
  auto e = ExplainScenarioAtOpen(l.spec, l.conf, *l.provider);
  ASSERT_TRUE(e.ok());
  auto job = std::find_if(e->jobs.begin(), e->jobs.end(),
                          [](const JobExplain& j) { return j.uid == "c1/j1"; });
  ASSERT_NE(job, e->jobs.end());
  EXPECT_EQ(job->queue, "q1");
  EXPECT_FALSE(job->ready);  // gang: 0 of minMember 2 placed
  EXPECT_TRUE(job->valid);
  auto q1 = std::find_if(e->queues.begin(), e->queues.end(),
                         [](const QueueExplain& q) { return q.name == "q1"; });
  ASSERT_NE(q1, e->queues.end());
  EXPECT_FALSE(q1->overused);
  std::vector<std::string> plugins;
  for (const auto& [plugin, figures] : q1->plugins) plugins.push_back(plugin);
  EXPECT_EQ(plugins, (std::vector<std::string>{"drf", "proportion"}));
  for (const auto& [plugin, figures] : q1->plugins) {
    if (plugin != "proportion") continue;
    auto allocated = std::find_if(figures.begin(), figures.end(),
                                  [](const Figure& f) { return f.name == "allocated"; });
    ASSERT_NE(allocated, figures.end());
    // run-0's cpu 2 (milli-units), as the session accounts it.
    EXPECT_DOUBLE_EQ(std::get<Resource>(allocated->value).values[kCpu], 2000);
  }
}

// capacity shows its own view of each queue it manages: deserved and capability as the
// scenario writes them (team-a: deserved 4 cpu, capability 6; team-b: 4 and 8), and the
// requests of the queue's jobs (team-a: a1 and a2, four 1-cpu pods each = 8 cpu).
TEST(Explain, CapacityShowsDeservedAndCapability) {
  Loaded l = Load("tests/cli/simulate/data/helm-capacity.yaml");
  auto e = ExplainScenarioAtOpen(l.spec, l.conf, *l.provider);
  ASSERT_TRUE(e.ok()) << e.error().Format();
  auto figure = [&](const std::string& queue, const std::string& name) -> const Resource* {
    for (const QueueExplain& q : e->queues) {
      if (q.name != queue) continue;
      for (const auto& [plugin, figures] : q.plugins) {
        if (plugin != "capacity") continue;
        for (const Figure& f : figures)
          if (f.name == name) return std::get_if<Resource>(&f.value);
      }
    }
    return nullptr;
  };
  for (const auto& [queue, name, cpu] :
       {std::tuple{"team-a", "deserved", 4000.0}, std::tuple{"team-a", "capability", 6000.0},
        std::tuple{"team-b", "deserved", 4000.0}, std::tuple{"team-b", "capability", 8000.0},
        std::tuple{"team-a", "request", 8000.0}}) {
    const Resource* r = figure(queue, name);
    ASSERT_NE(r, nullptr) << queue << " " << name;
    EXPECT_DOUBLE_EQ(r->cpu(), cpu) << queue << " " << name;
  }
}

TEST(Explain, TheRecorderIsOffUnlessAsked) {
  Loaded l = Load(kScoring);
  auto sim = Simulator::Create(l.spec, l.conf, *l.provider);
  ASSERT_TRUE(sim.ok());
  bool checked = false;
  SessionHooks hooks;
  hooks.before_close = [&](Session& ssn) {
    EXPECT_EQ(ssn.explain(), nullptr);
    checked = true;
  };
  (*sim)->SetFirstSessionHooks(std::move(hooks));
  ASSERT_TRUE((*sim)->RunCycle().ok());
  EXPECT_TRUE(checked);
}

}  // namespace
}  // namespace kiln
