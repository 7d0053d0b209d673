#pragma once
// A Volcano Job (batch.volcano.sh/v1alpha1 `Job`) as the objects Volcano's job controller and
// its admission webhook make of it (volcano-sh/volcano at ed72c7c8: pkg/controllers/job,
// job_controller_util.go createJobPod, job_controller_actions.go createOrUpdatePodGroup and
// calcPGMinResources; pkg/webhooks/admission/jobs/mutate): the pods of every task and the
// PodGroup that gangs them. `POST /whatif` (server/whatif.h) asks about a Job through this.
//
//   * webhook defaults first: queue `default`, schedulerName `volcano`, a task without a name is
//     `default<index>`, a task's minAvailable its replicas, the job's minAvailable the sum of its
//     tasks' minAvailable;
//   * pods `<job>-<task>-<index>`, index 0 .. replicas-1, from the task's template: its labels
//     and annotations plus those the controller sets (volcano.sh/task-index, task-spec, job-name,
//     queue-name, job-version, template-uid, job-retry-count; labels task-index, job-name,
//     task-spec, job-namespace, queue-name; the job's preemptable / cooldown-time /
//     revocable-zone / jdb-* annotations and preemptable / cooldown-time labels; the task's
//     topologyPolicy as volcano.sh/numa-topology-policy), the job's schedulerName and
//     priorityClassName where the template names none;
//   * the PodGroup `<job>-<metadata.uid>` (the controller's name). A Job not yet created has no
//     uid: the PodGroup is then named `<job>`, the legacy name the controller still looks a
//     Job's PodGroup up by. Its minMember is spec.minAvailable, minTaskMember each task's
//     minAvailable, queue and priorityClassName the job's, labels and annotations the job's,
//     networkTopology the job's, minResources as calcPGMinResources (VolcanoJobMinResources).
//
// Not expanded (an Error naming the field, so a what-if never answers for another job): tasks
// with dependsOn (the controller creates them later) or a partitionPolicy (sub-group policies),
// and a Job whose spec.minAvailable exceeds its pods. Volumes, policies, plugins (svc, ssh, env)
// and maxRetry change nothing the scheduler reads and are ignored.

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cluster_spec.h"
#include "runtime/resource.h"
#include "runtime/status.h"

namespace kiln::kube {

inline constexpr std::string_view kVolcanoJobApiVersion = "batch.volcano.sh/v1alpha1";

// True for an object of kind `Job` in batch.volcano.sh (any version: the caller checks it).
bool IsVolcanoJob(const nlohmann::json& obj);

// What calcPGMinResources reads of one task (after the webhook's defaults).
struct VolcanoJobTask {
  std::string name;
  std::string priority_class_name;  // the template's own (the job's is not used for the order)
  int32_t replicas = 0;
  int32_t min_available = 0;
  Resource pod_usage;  // one pod's requests, with pods: 1 (Volcano's GetPodQuotaUsage)
};

// The Job's pods (as API objects, for the pod decoder) and the PodGroup, its minResources left
// unset (it depends on the cluster's PriorityClasses: VolcanoJobMinResources). Errors name the
// field: "spec.tasks[1].replicas: ...".
struct VolcanoJobObjects {
  std::vector<nlohmann::json> pods;
  PodGroupSpec group;
  std::vector<VolcanoJobTask> tasks;
};
Result<VolcanoJobObjects> ExpandVolcanoJob(const nlohmann::json& job);

// calcPGMinResources: tasks ordered by their priority class's value (highest first; a class the
// cluster does not have counts 0; equal values keep the Job's order, where Go's unstable sort
// leaves it open). When `min_available` < Σ task minAvailable: the requests of the first
// `min_available` pods in that order. Otherwise each task's minAvailable pods (up to
// `min_available` in all), then pods beyond the tasks' minAvailable, highest priority first,
// until `min_available` pods are counted.
Resource VolcanoJobMinResources(const std::vector<VolcanoJobTask>& tasks, int32_t min_available,
                                const std::vector<PriorityClassSpec>& classes);

}  // namespace kiln::kube
