#pragma once
// Sub-jobs (Volcano's SubJobInfo, pkg/scheduler/api/sub_job_info.go at ed72c7c8): a PodGroup's
// spec.subGroupPolicy splits its tasks into sub-group gangs. Each policy entry takes the tasks its
// labelSelector selects and that carry every one of its matchLabelKeys with a non-empty value; the
// tasks with the same values form one sub-job (the sub-job's uid is "<job uid>/<policy>-<values
// joined by '-'>"), which needs subGroupSize of them placed to be ready. A policy without
// matchLabelKeys matches no task (as in Volcano). The first policy that matches a task takes it;
// the tasks no policy takes form the job's default sub-job (uid = the job's uid; it needs one task
// when the job has a policy, minMember otherwise). A job's readiness then also needs minSubGroups
// ready sub-jobs of each policy (gang.policy; Volcano's CheckSubJobReady).
//
// The model is mechanism: which sub-job is ready, pipelined or goes first is answered by the
// policies through sub_job_ready, sub_job_pipelined and sub_job_order (runtime/extension_points.h).

#include "runtime/model.h"

namespace kiln {

// (Re)builds every job's sub-jobs from its subGroupPolicy and its tasks' labels; a job with no
// policy and no network topology gets none. Called at session open (OpenTopology), before the
// topologies are normalised.
void BuildSubJobs(Cluster& cluster);

}  // namespace kiln
