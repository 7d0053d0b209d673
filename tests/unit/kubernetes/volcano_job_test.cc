// A Volcano Job expanded as Volcano's job controller does (kubernetes/volcano_job.h): the pods'
// names, annotations and labels, the PodGroup's name, minMember, minTaskMember and minResources
// (calcPGMinResources with tasks of mixed priority), and bad Jobs refused with where and what.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kubernetes/decode.h"
#include "kubernetes/volcano_job.h"

namespace kiln::kube {
namespace {

using Json = nlohmann::json;

Json Task(const std::string& name, int replicas, std::optional<int> min_available,
          const std::string& cpu, const std::string& priority_class = "") {
  Json spec = {{"containers",
                Json::array({{{"name", "main"},
                              {"image", "busybox"},
                              {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}};
  if (!priority_class.empty()) spec["priorityClassName"] = priority_class;
  Json t = {{"name", name},
            {"replicas", replicas},
            {"template", {{"metadata", {{"labels", {{"role", name}}}}}, {"spec", spec}}}};
  if (min_available) t["minAvailable"] = *min_available;
  return t;
}

// ps: 2 replicas of 1 cpu (class `low`, 10), minAvailable 1; worker: 4 replicas of 2 cpu (class
// `high`, 100), minAvailable 2. The Job names the worker task second, so only the classes put
// it first.
Json TwoTaskJob(std::optional<int> min_available) {
  Json job = {{"apiVersion", "batch.volcano.sh/v1alpha1"},
              {"kind", "Job"},
              {"metadata",
               {{"name", "mnist"},
                {"namespace", "ml"},
                {"annotations", {{"volcano.sh/preemptable", "false"}, {"team", "a"}}},
                {"labels", {{"volcano.sh/cooldown-time", "60s"}}}}},
              {"spec",
               {{"queue", "research"},
                {"priorityClassName", "mid"},
                {"tasks", Json::array({Task("ps", 2, 1, "1", "low"),
                                       Task("worker", 4, 2, "2", "high")})}}}};
  if (min_available) job["spec"]["minAvailable"] = *min_available;
  return job;
}

PriorityClassSpec Class(const std::string& name, int32_t value) {
  PriorityClassSpec c;
  c.name = name;
  c.value = value;
  return c;
}
const std::vector<PriorityClassSpec> kClasses = {Class("low", 10), Class("mid", 50),
                                                 Class("high", 100)};

TEST(VolcanoJob, PodsAreNamedAndMarkedAsTheControllerMakesThem) {
  auto e = ExpandVolcanoJob(TwoTaskJob(std::nullopt));
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->pods.size(), 6u);
  std::vector<std::string> names;
  for (const Json& p : e->pods) names.push_back(p["metadata"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"mnist-ps-0", "mnist-ps-1", "mnist-worker-0",
                                             "mnist-worker-1", "mnist-worker-2", "mnist-worker-3"}));
  const Json& w2 = e->pods[4];
  EXPECT_EQ(w2["metadata"]["namespace"], "ml");
  const Json& a = w2["metadata"]["annotations"];
  EXPECT_EQ(a["volcano.sh/task-index"], "2");
  EXPECT_EQ(a["volcano.sh/task-spec"], "worker");
  EXPECT_EQ(a["scheduling.k8s.io/group-name"], "mnist");  // no uid: the legacy name
  EXPECT_EQ(a["volcano.sh/job-name"], "mnist");
  EXPECT_EQ(a["volcano.sh/queue-name"], "research");
  EXPECT_EQ(a["volcano.sh/template-uid"], "mnist-worker");
  EXPECT_EQ(a["volcano.sh/job-version"], "0");
  EXPECT_EQ(a["volcano.sh/preemptable"], "false");  // copied from the Job
  EXPECT_FALSE(a.contains("team")) << "only the keys the controller copies";
  const Json& l = w2["metadata"]["labels"];
  EXPECT_EQ(l["role"], "worker");  // the template's own
  EXPECT_EQ(l["volcano.sh/job-namespace"], "ml");
  EXPECT_EQ(l["volcano.sh/task-index"], "2");
  EXPECT_EQ(l["volcano.sh/cooldown-time"], "60s");
  EXPECT_EQ(w2["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(w2["spec"]["priorityClassName"], "high");  // the template's wins over the Job's

  // Decoded as any pod is: the task and the group come from the annotations.
  auto pod = DecodePod(w2);
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->spec.group, "mnist");
  EXPECT_EQ(pod->spec.task(), "worker");

  const PodGroupSpec& g = e->group;
  EXPECT_EQ(g.Uid(), "ml/mnist");
  EXPECT_EQ(g.queue, "research");
  EXPECT_EQ(g.priority_class_name, "mid");
  EXPECT_EQ(g.min_member, 3);  // the webhook's default: Σ task minAvailable
  EXPECT_EQ(g.min_task_member.at("ps"), 1);
  EXPECT_EQ(g.min_task_member.at("worker"), 2);
  EXPECT_EQ(g.annotations.at("team"), "a");

  Json with_uid = TwoTaskJob(std::nullopt);
  with_uid["metadata"]["uid"] = "1f2e";
  auto u = ExpandVolcanoJob(with_uid);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->group.name, "mnist-1f2e");
  EXPECT_EQ(u->pods[0]["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "mnist-1f2e");
}

TEST(VolcanoJob, DefaultsAreTheWebhooks) {
  Json job = {{"apiVersion", "batch.volcano.sh/v1alpha1"},
              {"kind", "Job"},
              {"metadata", {{"name", "j"}}},
              {"spec", {{"tasks", Json::array({Task("", 3, std::nullopt, "1")})}}}};
  job["spec"]["tasks"][0].erase("name");
  auto e = ExpandVolcanoJob(job);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->pods[2]["metadata"]["name"], "j-default0-2");
  EXPECT_EQ(e->pods[0]["metadata"]["namespace"], "default");
  EXPECT_EQ(e->group.queue, "default");
  EXPECT_EQ(e->group.min_member, 3);
  EXPECT_EQ(e->group.min_task_member.at("default0"), 3);
}

double Cpu(const Resource& r) { return r.Get(kCpu); }

TEST(VolcanoJob, MinResourcesFollowTaskPriorities) {
  auto e = ExpandVolcanoJob(TwoTaskJob(std::nullopt));
  ASSERT_TRUE(e.ok());
  // minAvailable 3 = Σ minAvailable: worker's 2 (high first) + ps's 1.
  Resource r = VolcanoJobMinResources(e->tasks, 3, kClasses);
  EXPECT_DOUBLE_EQ(Cpu(r), 5000);
  EXPECT_DOUBLE_EQ(r.Get(kPods), 3);
  // minAvailable 2 < 3: the first two pods in priority order, both workers.
  EXPECT_DOUBLE_EQ(Cpu(VolcanoJobMinResources(e->tasks, 2, kClasses)), 4000);
  // minAvailable 5 > 3: the tasks' minAvailable, then two spare workers (higher priority first).
  Resource five = VolcanoJobMinResources(e->tasks, 5, kClasses);
  EXPECT_DOUBLE_EQ(Cpu(five), 9000);
  EXPECT_DOUBLE_EQ(five.Get(kPods), 5);
  // Classes the cluster does not have count 0: the Job's order then, ps first.
  EXPECT_DOUBLE_EQ(Cpu(VolcanoJobMinResources(e->tasks, 2, {})), 2000);
  // minAvailable 6 (every pod): spare ps after spare workers.
  EXPECT_DOUBLE_EQ(Cpu(VolcanoJobMinResources(e->tasks, 6, kClasses)), 10000);
}

TEST(VolcanoJob, BadJobsSayWhereAndWhat) {
  struct Case {
    std::function<void(Json&)> edit;
    std::string want;
  };
  std::vector<Case> cases = {
      {[](Json& j) { j["spec"]["tasks"][0]["replicas"] = "two"; },
       "spec.tasks[0].replicas: must be an integer"},
      {[](Json& j) { j["spec"]["tasks"][1]["minAvailable"] = 9; },
       "spec.tasks[1].minAvailable: 9 exceeds the task's replicas (4)"},
      {[](Json& j) { j["spec"]["tasks"] = Json::array(); }, "spec.tasks: a Job needs at least one task"},
      {[](Json& j) { j["spec"]["tasks"][1]["name"] = "ps"; }, "spec.tasks[1].name: task `ps` is given twice"},
      {[](Json& j) { j["spec"]["tasks"][0]["dependsOn"] = {{"name", {"worker"}}}; },
       "spec.tasks[0].dependsOn:"},
      {[](Json& j) { j["spec"]["minAvailable"] = 7; }, "spec.minAvailable: 7 exceeds the Job's 6 pods"},
      {[](Json& j) { j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"; },
       "spec.tasks[0].template:"},
      {[](Json& j) { j["apiVersion"] = "batch.volcano.sh/v1beta9"; }, "apiVersion: `batch.volcano.sh/v1beta9` is not read"},
      {[](Json& j) { j["metadata"].erase("name"); }, "metadata.name: is missing"},
  };
  for (const Case& c : cases) {
    Json job = TwoTaskJob(std::nullopt);
    c.edit(job);
    auto e = ExpandVolcanoJob(job);
    ASSERT_FALSE(e.ok()) << c.want;
    EXPECT_EQ(e.error().message.rfind(c.want, 0), 0u) << e.error().message;
  }
}

}  // namespace
}  // namespace kiln::kube
