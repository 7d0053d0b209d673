#include "kubernetes/volcano_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kubernetes/decode.h"

namespace kiln::kube {

namespace {

using Json = nlohmann::json;

// A field's problem, carried to ExpandVolcanoJob's one catch as "<path>: <what>".
struct BadField {
  std::string path, what;
};

const Json* Field(const Json& o, const char* key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() || it->is_null() ? nullptr : &*it;
}

const Json& ObjectAt(const Json& o, const char* key, const std::string& path) {
  static const Json kEmpty = Json::object();
  const Json* f = Field(o, key);
  if (f == nullptr) return kEmpty;
  if (!f->is_object()) throw BadField{path + "." + key, "must be an object"};
  return *f;
}

std::string StringAt(const Json& o, const char* key, const std::string& path) {
  const Json* f = Field(o, key);
  if (f == nullptr) return {};
  if (!f->is_string()) throw BadField{path + "." + key, "must be a string"};
  return f->get<std::string>();
}

std::optional<int32_t> IntAt(const Json& o, const char* key, const std::string& path) {
  const Json* f = Field(o, key);
  if (f == nullptr) return std::nullopt;
  if (!f->is_number_integer()) throw BadField{path + "." + key, "must be an integer"};
  int64_t v = f->get<int64_t>();
  if (v < 0 || v > INT32_MAX)
    throw BadField{path + "." + key, fmt::format("must be between 0 and {}, got {}", INT32_MAX, v)};
  return static_cast<int32_t>(v);
}

// A string map (labels, annotations), "" when absent.
std::map<std::string, std::string> StringMapAt(const Json& o, const char* key,
                                               const std::string& path) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : ObjectAt(o, key, path).items()) {
    if (!v.is_string()) throw BadField{fmt::format("{}.{}.{}", path, key, k), "must be a string"};
    out[k] = v.get<std::string>();
  }
  return out;
}

// The pods a Job may add to one what-if (the what-if's own limit is checked afterwards; this
// keeps a Job of a billion replicas from being expanded before it is).
constexpr int64_t kMaxPods = 100000;

// The Job's keys the controller copies onto each pod (createJobPod).
constexpr const char* kJobAnnotationsCopied[] = {"volcano.sh/preemptable", "volcano.sh/cooldown-time",
                                                 "volcano.sh/revocable-zone"};
constexpr const char* kJobLabelsCopied[] = {"volcano.sh/preemptable", "volcano.sh/cooldown-time"};

}  // namespace

bool IsVolcanoJob(const Json& obj) {
  if (!obj.is_object()) return false;
  const Json* kind = Field(obj, "kind");
  const Json* api = Field(obj, "apiVersion");
  return kind != nullptr && kind->is_string() && kind->get<std::string>() == "Job" &&
         api != nullptr && api->is_string() &&
         api->get<std::string>().rfind("batch.volcano.sh/", 0) == 0;
}

Result<VolcanoJobObjects> ExpandVolcanoJob(const Json& job) {
  try {
    if (std::string api = StringAt(job, "apiVersion", ""); api != kVolcanoJobApiVersion)
      throw BadField{"apiVersion", fmt::format("`{}` is not read (only {})", api, kVolcanoJobApiVersion)};
    const Json& meta = ObjectAt(job, "metadata", "");
    const std::string name = StringAt(meta, "name", "metadata");
    if (name.empty()) throw BadField{"metadata.name", "is missing"};
    std::string ns = StringAt(meta, "namespace", "metadata");
    if (ns.empty()) ns = "default";
    const std::string uid = StringAt(meta, "uid", "metadata");
    const auto job_labels = StringMapAt(meta, "labels", "metadata");
    const auto job_annotations = StringMapAt(meta, "annotations", "metadata");
    const Json& spec = ObjectAt(job, "spec", "");

    // 1. The webhook's defaults (mutate_job.go).
    std::string queue = StringAt(spec, "queue", "spec");
    if (queue.empty()) queue = "default";
    std::string scheduler = StringAt(spec, "schedulerName", "spec");
    if (scheduler.empty()) scheduler = std::string(kDefaultSchedulerName);
    const std::string priority_class = StringAt(spec, "priorityClassName", "spec");
    const Json* tasks = Field(spec, "tasks");
    if (tasks == nullptr || !tasks->is_array() || tasks->empty())
      throw BadField{"spec.tasks", "a Job needs at least one task"};

    VolcanoJobObjects out;
    std::set<std::string> task_names;
    int64_t pods = 0, sum_min = 0;
    std::vector<std::pair<Json, const Json*>> templates;  // template, task
    for (size_t i = 0; i < tasks->size(); ++i) {
      const Json& t = (*tasks)[i];
      const std::string path = fmt::format("spec.tasks[{}]", i);
      if (!t.is_object()) throw BadField{path, "must be an object"};
      if (Field(t, "dependsOn") != nullptr)
        throw BadField{path + ".dependsOn", "a task that waits for another is created later by "
                                            "the controller; a what-if does not expand it"};
      if (Field(t, "partitionPolicy") != nullptr)
        throw BadField{path + ".partitionPolicy", "partitioned tasks (sub-group policies) are "
                                                  "not expanded by a what-if"};
      VolcanoJobTask task;
      task.name = StringAt(t, "name", path);
      if (task.name.empty()) task.name = fmt::format("default{}", i);
      if (!task_names.insert(task.name).second)
        throw BadField{path + ".name", fmt::format("task `{}` is given twice", task.name)};
      task.replicas = IntAt(t, "replicas", path).value_or(0);
      task.min_available = IntAt(t, "minAvailable", path).value_or(task.replicas);
      if (task.min_available > task.replicas)
        throw BadField{path + ".minAvailable",
                       fmt::format("{} exceeds the task's replicas ({})", task.min_available,
                                   task.replicas)};
      pods += task.replicas;
      sum_min += task.min_available;
      if (pods > kMaxPods)
        throw BadField{"spec.tasks", fmt::format("more than {} pods", kMaxPods)};
      const Json& tmpl = ObjectAt(t, "template", path);
      task.priority_class_name = StringAt(ObjectAt(tmpl, "spec", path + ".template"),
                                          "priorityClassName", path + ".template.spec");
      out.tasks.push_back(std::move(task));
      templates.emplace_back(tmpl, &t);
    }
    const int32_t min_available =
        IntAt(spec, "minAvailable", "spec").value_or(0) > 0
            ? *IntAt(spec, "minAvailable", "spec")
            : static_cast<int32_t>(std::min<int64_t>(sum_min, INT32_MAX));
    if (min_available > pods)
      throw BadField{"spec.minAvailable", fmt::format("{} exceeds the Job's {} pods",
                                                      min_available, pods)};

    // 2. The PodGroup (createOrUpdatePodGroup); minResources waits for the cluster's classes.
    const std::string group = uid.empty() ? name : name + "-" + uid;
    Json pg = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
               {"kind", "PodGroup"},
               {"metadata", {{"name", group}, {"namespace", ns}}},
               {"spec", {{"minMember", min_available}, {"queue", queue}}}};
    if (!job_labels.empty()) pg["metadata"]["labels"] = job_labels;
    if (!job_annotations.empty()) pg["metadata"]["annotations"] = job_annotations;
    if (!priority_class.empty()) pg["spec"]["priorityClassName"] = priority_class;
    Json min_task = Json::object();
    for (const VolcanoJobTask& t : out.tasks) min_task[t.name] = t.min_available;
    pg["spec"]["minTaskMember"] = std::move(min_task);
    if (const Json* nt = Field(spec, "networkTopology")) pg["spec"]["networkTopology"] = *nt;
    auto decoded_group = DecodePodGroup(pg);
    if (!decoded_group) throw BadField{"spec", decoded_group.error().message};
    out.group = std::move(decoded_group->spec);

    // 3. The pods (createJobPod), each decoded once here so that a bad template is an error
    //    naming its task, and the first of each task gives the task's usage.
    for (size_t i = 0; i < out.tasks.size(); ++i) {
      VolcanoJobTask& task = out.tasks[i];
      const auto& [tmpl, t] = templates[i];
      const std::string path = fmt::format("spec.tasks[{}].template", i);
      const Json& tmeta = ObjectAt(tmpl, "metadata", path);
      auto labels = StringMapAt(tmeta, "labels", path + ".metadata");
      auto annotations = StringMapAt(tmeta, "annotations", path + ".metadata");
      Json pod_spec = ObjectAt(tmpl, "spec", path);
      if (StringAt(pod_spec, "schedulerName", path + ".spec").empty())
        pod_spec["schedulerName"] = scheduler;
      if (StringAt(pod_spec, "priorityClassName", path + ".spec").empty() && !priority_class.empty())
        pod_spec["priorityClassName"] = priority_class;
      const std::string topology = StringAt(*t, "topologyPolicy", fmt::format("spec.tasks[{}]", i));
      for (int32_t ix = 0; ix < task.replicas; ++ix) {
        const std::string index = std::to_string(ix);
        auto a = annotations;
        a["volcano.sh/task-index"] = index;
        a[std::string(kTaskSpecAnnotation)] = task.name;
        a[std::string(kGroupNameAnnotation)] = group;
        a["volcano.sh/job-name"] = name;
        a["volcano.sh/queue-name"] = queue;
        a["volcano.sh/job-version"] = "0";
        a["volcano.sh/template-uid"] = name + "-" + task.name;
        a["volcano.sh/job-retry-count"] = "0";
        if (!topology.empty()) a["volcano.sh/numa-topology-policy"] = topology;
        for (const char* k : kJobAnnotationsCopied)
          if (auto it = job_annotations.find(k); it != job_annotations.end()) a[k] = it->second;
        if (auto it = job_annotations.find("volcano.sh/jdb-min-available"); it != job_annotations.end())
          a[it->first] = it->second;
        else if (auto it2 = job_annotations.find("volcano.sh/jdb-max-unavailable");
                 it2 != job_annotations.end())
          a[it2->first] = it2->second;
        auto l = labels;
        l["volcano.sh/task-index"] = index;
        l["volcano.sh/job-name"] = name;
        l[std::string(kTaskSpecAnnotation)] = task.name;
        l["volcano.sh/job-namespace"] = ns;
        l["volcano.sh/queue-name"] = queue;
        for (const char* k : kJobLabelsCopied)
          if (auto it = job_labels.find(k); it != job_labels.end()) l[k] = it->second;
        Json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", fmt::format("{}-{}-{}", name, task.name, ix)},
                      {"namespace", ns},
                      {"labels", std::move(l)},
                      {"annotations", std::move(a)}}},
                    {"spec", pod_spec}};
        if (ix == 0) {
          auto decoded = DecodePod(pod);
          if (!decoded) throw BadField{path, decoded.error().message};
          task.pod_usage = decoded->spec.requests;
          task.pod_usage.AddScalar(kPods, 1);
        }
        out.pods.push_back(std::move(pod));
      }
    }
    return out;
  } catch (const BadField& b) {
    return Error{b.path.empty() ? b.what : fmt::format("{}: {}", b.path, b.what), {}};
  } catch (const std::exception& e) {
    return Error{e.what(), {}};
  }
}

Resource VolcanoJobMinResources(const std::vector<VolcanoJobTask>& tasks, int32_t min_available,
                                const std::vector<PriorityClassSpec>& classes) {
  std::map<std::string, int32_t, std::less<>> value;
  for (const PriorityClassSpec& c : classes) value[c.name] = c.value;
  std::vector<const VolcanoJobTask*> order;
  int64_t sum_min = 0;
  for (const VolcanoJobTask& t : tasks) {
    order.push_back(&t);
    sum_min += t.min_available;
  }
  auto priority = [&](const VolcanoJobTask* t) {
    auto it = value.find(t->priority_class_name);
    return it == value.end() ? 0 : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](const VolcanoJobTask* a, const VolcanoJobTask* b) {
    return priority(a) > priority(b);
  });
  Resource out;
  auto add = [&](const VolcanoJobTask* t, int32_t count) {
    Resource r = t->pod_usage;
    r.Multi(count);
    out.Add(r);
  };
  if (min_available < sum_min) {
    // CalcFirstCountResources: the first `min_available` pods, whole tasks first.
    int32_t count = min_available;
    for (const VolcanoJobTask* t : order) {
      if (count <= t->replicas) {
        add(t, count);
        break;
      }
      add(t, t->replicas);
      count -= t->replicas;
    }
    return out;
  }
  // CalcPGMinResources: each task's minAvailable, then replicas beyond it up to min_available.
  int32_t counted = 0;
  for (const VolcanoJobTask* t : order) {
    int32_t n = std::min(t->min_available, min_available - counted);
    add(t, n);
    counted += n;
    if (counted >= min_available) return out;
  }
  int32_t left = min_available - counted;
  for (const VolcanoJobTask* t : order) {
    if (t->min_available == t->replicas) continue;
    int32_t spare = t->replicas - t->min_available;
    int32_t n = std::min(spare, left);
    add(t, n);
    left -= n;
    if (left <= 0) break;
  }
  return out;
}

}  // namespace kiln::kube
