// Sub-jobs (runtime/sub_job.h): how a PodGroup's subGroupPolicy sorts its tasks into sub-jobs,
// as Volcano's JobInfo.getOrCreateSubJob / getSubJobMatchValues do, and how session open
// normalises their network topology (convertSoftToHardTopology).
#include <gtest/gtest.h>

#include "runtime/cluster_spec.h"
#include "runtime/hyper_node.h"
#include "runtime/sub_job.h"
#include "tests/unit/scenario_test_util.h"

namespace kiln::testing {
namespace {

Cluster MustBuild(const ScenarioSpec& spec) {
  auto c = BuildCluster(spec.cluster);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().Format());
  return c.ok() ? std::move(*c) : Cluster{};
}

// uid → task names, in cluster order.
std::map<std::string, std::vector<std::string>> Members(const Job* job) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& s : job->sub_jobs) {
    auto& names = out[s->uid];
    for (const Task* t : s->tasks) names.push_back(t->name);
  }
  return out;
}

const SubJob* Find(const Job* job, std::string_view uid) {
  for (const auto& s : job->sub_jobs)
    if (s->uid == uid) return s.get();
  return nullptr;
}

TEST(SubJobTest, PoliciesSortTasksByTheirMatchLabelValues) {
  ScenarioSpec spec = MustParse(R"(name: sj
cluster:
  nodes: [{name: n1, allocatable: {cpu: "8"}}]
  podGroups:
  - name: pg1
    namespace: c1
    minMember: 3
    subGroupPolicy:
    - {name: nokeys, labelSelector: {matchLabels: {role: ps}}}
    - name: w
      subGroupSize: 2
      minSubGroups: 1
      matchLabelKeys: [rack, slot]
      labelSelector: {matchLabels: {role: worker}}
    - {name: any, matchLabelKeys: [rack]}
  pods:
  - {name: a, namespace: c1, group: pg1, labels: {role: worker, rack: "7", slot: x}}
  - {name: b, namespace: c1, group: pg1, labels: {role: worker, rack: "7", slot: x}}
  - {name: c, namespace: c1, group: pg1, labels: {role: worker, rack: r2, slot: y}}
  - {name: d, namespace: c1, group: pg1, labels: {role: worker, rack: "7", slot: ""}}
  - {name: e, namespace: c1, group: pg1, labels: {role: ps, rack: "3"}}
  - {name: f, namespace: c1, group: pg1, labels: {role: ps}}
)");
  Cluster c = MustBuild(spec);
  BuildSubJobs(c);
  const Job* job = c.FindJob("c1/pg1");
  ASSERT_NE(job, nullptr);
  // a, b: both keys match in `w`; c: other values; d: an empty value fails `w` but `any` takes
  // it by rack; e: `nokeys` has no matchLabelKeys so matches nothing, the selector of `w`
  // rejects it, `any` takes it; f: nothing matches: the default sub-job.
  EXPECT_EQ(Members(job), (std::map<std::string, std::vector<std::string>>{
                              {"c1/pg1", {"f"}},
                              {"c1/pg1/any-3", {"e"}},
                              {"c1/pg1/any-7", {"d"}},
                              {"c1/pg1/w-7-x", {"a", "b"}},
                              {"c1/pg1/w-r2-y", {"c"}},
                          }));
  const SubJob* w7 = Find(job, "c1/pg1/w-7-x");
  ASSERT_NE(w7, nullptr);
  EXPECT_EQ(w7->group, "w");
  EXPECT_EQ(w7->min_available, 2);
  EXPECT_EQ(w7->match_index, 7);  // the first value, when it is a number
  EXPECT_EQ(Find(job, "c1/pg1/w-r2-y")->match_index, 0);
  EXPECT_EQ(Find(job, "c1/pg1/any-3")->min_available, 1);  // subGroupSize unset
  const SubJob* def = Find(job, "c1/pg1");
  EXPECT_TRUE(def->IsDefault());
  EXPECT_EQ(def->min_available, 1);  // a job with a policy: one task
  EXPECT_EQ(job->tasks[0]->sub_job, w7);
}

TEST(SubJobTest, WithoutPolicyTheDefaultSubJobHoldsEveryTaskOfATopologyJob) {
  ScenarioSpec spec = MustParse(R"(name: sj
cluster:
  nodes: [{name: n1, allocatable: {cpu: "8"}}]
  podGroups:
  - {name: topo, namespace: c1, minMember: 2, networkTopology: {mode: hard, highestTierAllowed: 1}}
  - {name: plain, namespace: c1, minMember: 1}
  pods:
  - {name: a, namespace: c1, group: topo}
  - {name: b, namespace: c1, group: topo}
  - {name: c, namespace: c1, group: plain}
)");
  Cluster c = MustBuild(spec);
  BuildSubJobs(c);
  const Job* topo = c.FindJob("c1/topo");
  ASSERT_EQ(topo->sub_jobs.size(), 1u);
  EXPECT_EQ(topo->sub_jobs[0]->uid, "c1/topo");
  EXPECT_EQ(topo->sub_jobs[0]->min_available, 2);  // minMember
  EXPECT_EQ(topo->sub_jobs[0]->tasks.size(), 2u);
  EXPECT_TRUE(c.FindJob("c1/plain")->sub_jobs.empty());
  EXPECT_EQ(c.FindJob("c1/plain")->tasks[0]->sub_job, nullptr);
}

TEST(SubJobTest, SoftSubGroupsAreBoundedByTheJobTier) {
  ScenarioSpec spec = MustParse(R"(name: sj
cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "8"}}
  - {name: n2, allocatable: {cpu: "8"}}
  hyperNodes:
  - {name: s0, tier: 1, members: [{type: Node, selector: {exactMatch: {name: n1}}}]}
  - {name: s1, tier: 1, members: [{type: Node, selector: {exactMatch: {name: n2}}}]}
  - name: s2
    tier: 2
    members:
    - {type: HyperNode, selector: {exactMatch: {name: s0}}}
    - {type: HyperNode, selector: {exactMatch: {name: s1}}}
  podGroups:
  - name: hardjob
    namespace: c1
    networkTopology: {mode: hard, highestTierAllowed: 2}
    subGroupPolicy: [{name: g, matchLabelKeys: [k], networkTopology: {mode: soft}}]
  - name: plainjob
    namespace: c1
    subGroupPolicy: [{name: g, matchLabelKeys: [k], networkTopology: {mode: soft}}]
  pods:
  - {name: a, namespace: c1, group: hardjob, labels: {k: v}, phase: Running, node: n1}
  - {name: b, namespace: c1, group: plainjob, labels: {k: v}}
)");
  Cluster c = MustBuild(spec);
  OpenTopology(c);
  const SubJob* hard_sub = c.FindJob("c1/hardjob")->sub_jobs.at(0).get();
  EXPECT_TRUE(hard_sub->hard_topology);
  EXPECT_EQ(hard_sub->highest_tier_allowed, 2);  // the job's tier, not the top's (3)
  ASSERT_NE(hard_sub->allocated_hyper_node, nullptr);  // recovered from its Running task
  EXPECT_EQ(hard_sub->allocated_hyper_node->name, "s0");
  const SubJob* plain_sub = c.FindJob("c1/plainjob")->sub_jobs.at(0).get();
  EXPECT_TRUE(plain_sub->hard_topology);
  EXPECT_EQ(plain_sub->highest_tier_allowed, 3);  // the virtual top's tier
  EXPECT_TRUE(c.FindJob("c1/plainjob")->ContainsHardTopology());
  EXPECT_FALSE(c.FindJob("c1/plainjob")->hard_topology);
}

}  // namespace
}  // namespace kiln::testing
