#include "runtime/reason_codes.h"

#include <algorithm>
#include <array>

#include "runtime/fit_error.h"
#include "runtime/model.h"

namespace kiln {

namespace {

// The one list of codes; docs/reasons.md documents each (tests/unit/runtime/reason_codes_test.cc
// keeps the two equal).
constexpr ReasonCodeInfo kCodes[] = {
    // ---- a node cannot take the pod (predicates and the actions' resource check) ----
    {"InsufficientResource", "allocate (the actions' resource check)",
     "the node's idle (or future idle) resources cannot hold the pod's request"},
    {"TooManyPods", "predicates", "the node already runs as many pods as it allows"},
    {"NodeUnschedulable", "predicates", "the node is cordoned and the pod does not tolerate it"},
    {"NodeAffinityMismatch", "predicates",
     "the node does not match the pod's nodeSelector or required node affinity"},
    {"TaintNotTolerated", "predicates", "the node has a NoSchedule/NoExecute taint the pod does not tolerate"},
    {"NodePortsUnavailable", "predicates", "a host port the pod asks for is taken on the node"},
    {"PodAffinityMismatch", "predicates", "the pod's required pod affinity is not met on the node"},
    {"PodAntiAffinityConflict", "predicates",
     "the pod's required anti-affinity forbids the node (pods it avoids run in its domain)"},
    {"ExistingPodsAntiAffinity", "predicates",
     "a pod on the node's domain has an anti-affinity term that rejects this pod"},
    {"TopologySpreadViolation", "predicates",
     "placing the pod there breaks a DoNotSchedule topology spread constraint, or the node lacks "
     "its topology key"},
    {"InsufficientGpuMemory", "deviceshare", "no GPU of the node has the GPU memory the pod asks"},
    {"InsufficientGpuNumber", "deviceshare", "the node has fewer free GPUs than the pod asks"},
    {"VgpuUnavailable", "deviceshare", "the node's vGPUs cannot hold the pod's vGPU request"},
    {"NodeGroupMismatch", "nodegroup",
     "the node's group is not one the queue's node-group affinity allows (or it has no group)"},
    {"NodeGroupLimitExceeded", "nodegroup", "the queue's resource limit in that node group is reached"},
    {"NodeGroupLimitsInvalid", "nodegroup", "the queue's node-group resource limits cannot be read"},
    {"NumaTopologyMismatch", "numa-aware",
     "the node's NUMA topology policy cannot align the pod's CPUs (or its topology is unknown)"},
    {"ResourceProportionViolated", "resource-strategy-fit",
     "placing the pod would leave less of a resource than the configured proportion keeps"},
    {"RevocableZoneClosed", "tdm", "the revocable node's zone is unknown, malformed or closed now"},
    {"RevocableNodeNotAllowed", "tdm", "the pod may not use revocable nodes"},
    {"NodeCpuOverloaded", "usage", "the node's CPU load is above the threshold"},
    {"NodeMemoryOverloaded", "usage", "the node's memory load is above the threshold"},
    {"ExtenderFailed", "extender", "the scheduler extender could not be asked or its answer was bad"},
    {"ExtenderRejected", "extender", "the scheduler extender refused the node or the PodGroup"},
    {"PluginFailed", "session", "a plugin's handler faulted; its answer counts as a failure"},
    {"Unspecified", "any plugin",
     "a plugin gave a reason without a code (a policy that does not use `coded`)"},
    {"PredicateError", "backfill", "a predicate answered with an error for a best-effort pod"},
    // ---- the pod was not tried on nodes ----
    {"RoleAlreadyFailed", "allocate",
     "a pod of the same role failed its predicates in this session, so this one is skipped"},
    {"QueueNotAllocatable", "allocate", "the pod's queue cannot take more (allocatable)"},
    {"NoNodeSelected", "allocate", "nodes passed, but none scored high enough to be selected"},
    // ---- the job ----
    {"GangNotReady", "gang",
     "fewer than minAvailable pods of the PodGroup could be placed, so none is bound"},
    {"WaitingForRelease", "allocate",
     "the pod is pipelined: it fits once releasing pods are gone (and minAvailable is met)"},
    {"NotEnoughTasks", "gang", "the PodGroup has fewer valid pods than minAvailable (job invalid)"},
    {"NotEnoughPodsOfTask", "gang",
     "a task role has fewer pods than its minTaskMember (job invalid)"},
    {"TopologyConstraint", "allocate (network topology)",
     "no HyperNode allowed by the job's network topology could hold the gang"},
    {"TopologyTierNotAllowed", "allocate (network topology)",
     "the HyperNode's tier is above the job's highestTierAllowed"},
    {"TopologyInsufficientResource", "allocate (network topology)",
     "the HyperNode's nodes lack the resources the job needs"},
    {"TopologyOutsideDomain", "allocate (network topology)",
     "the HyperNode is outside the domain the job already runs in"},
    {"TopologyGangNotSatisfiable", "allocate (network topology)",
     "a dry run could not make the gang ready or pipelined inside the HyperNode"},
    {"TopologyNominated", "allocate (network topology)",
     "the job is nominated to another HyperNode by gang eviction"},
    {"EvictionNoNodes", "gangpreempt, gangreclaim", "the domain has no nodes"},
    {"EvictionNoVictims", "gangpreempt, gangreclaim", "the domain has no evictable pods"},
    {"EvictionVictimsInsufficient", "gangpreempt, gangreclaim",
     "evicting every candidate in the domain would still not free enough"},
    {"EvictionGangNotPlaceable", "gangpreempt, gangreclaim",
     "no eviction plan in the domain placed the whole gang"},
    // ---- enqueue did not admit the PodGroup ----
    {"QueueOverCapability", "capacity, proportion",
     "admitting the PodGroup's minResources would take its queue (or an ancestor) over capability"},
    {"QueueNotOpen", "capacity, proportion", "the PodGroup's queue is closed or closing"},
    {"QueueNotLeaf", "capacity", "with hierarchy on, PodGroups may only be submitted to leaf queues"},
    {"QueueCapacityNotReady", "capacity", "the capacity plugin could not compute queue capacities"},
    {"EnqueueRejectedOvercommit", "overcommit",
     "the cluster's idle resources (times the overcommit factor) cannot hold the PodGroup's "
     "minResources beside those already admitted"},
    {"ResourceQuotaExceeded", "resourcequota",
     "the namespace's ResourceQuota cannot hold the PodGroup's minResources"},
    {"EnqueueRejected", "enqueue",
     "a plugin refused to admit the PodGroup without saying why (a bare `reject`)"},
};

thread_local AdmissionRefusal stated_reason;
thread_local AdmissionRefusal last_refusal;
thread_local std::map<std::string, AdmissionRefusal>* admission_sink = nullptr;

}  // namespace

std::span<const ReasonCodeInfo> ReasonCodes() { return kCodes; }

bool IsReasonCode(std::string_view code) {
  return std::any_of(std::begin(kCodes), std::end(kCodes),
                     [&](const ReasonCodeInfo& c) { return c.code == code; });
}

std::string CodedReason(std::string_view code, std::string_view text) {
  if (code.empty()) return std::string(text);
  std::string out;
  out.reserve(code.size() + text.size() + 2);
  out += kReasonCodeMark;
  out += code;
  out += kReasonCodeMark;
  out += text;
  return out;
}

SplitReason SplitCodedReason(std::string_view reason) {
  if (reason.empty() || reason.front() != kReasonCodeMark) return {{}, reason};
  size_t end = reason.find(kReasonCodeMark, 1);
  if (end == std::string_view::npos) return {{}, reason.substr(1)};
  return {reason.substr(1, end - 1), reason.substr(end + 1)};
}

std::vector<std::string> CodesOf(const PluginStatus& status) {
  std::vector<std::string> out;
  out.reserve(status.reasons.size());
  for (const std::string& r : status.reasons) {
    std::string_view code = SplitCodedReason(r).code;
    out.emplace_back(code.empty() ? std::string_view("Unspecified") : code);
  }
  return out;
}

std::vector<std::string> CodesOf(const FitErrors& errors) {
  std::vector<std::string> out;
  auto add = [&](std::string_view code) {
    if (!code.empty() && std::find(out.begin(), out.end(), code) == out.end())
      out.emplace_back(code);
  };
  if (!errors.error().empty()) {
    std::string_view code = SplitCodedReason(errors.error()).code;
    add(code.empty() ? std::string_view("Unspecified") : code);
  }
  // Codes by how many nodes gave them, then by name (a stable order for the same errors).
  std::map<std::string, int> count;
  for (const FitError& e : errors.errors()) {
    std::vector<std::string> codes;
    for (const PluginStatus& s : e.statuses)
      for (const std::string& r : s.reasons)
        if (std::string_view c = SplitCodedReason(r).code; !c.empty()) codes.emplace_back(c);
        else codes.emplace_back("Unspecified");
    std::sort(codes.begin(), codes.end());
    codes.erase(std::unique(codes.begin(), codes.end()), codes.end());
    for (const std::string& c : codes) ++count[c];
  }
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [code, n] : count) sorted.emplace_back(n, code);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [n, code] : sorted) add(code);
  return out;
}

std::vector<std::string> UnschedulableCodes(const Task& t) {
  std::vector<std::string> out;
  const Job* job = t.job;
  if (job == nullptr) return out;
  // The same status Job::TaskSchedulingReason reads.
  TaskStatus status = t.TransactionStatus();
  if (status == TaskStatus::Allocated) {
    out.emplace_back("GangNotReady");
  } else if (status == TaskStatus::Pipelined) {
    out.emplace_back("WaitingForRelease");
  } else if (status == TaskStatus::Pending) {
    if (auto it = job->nodes_fit_errors.find(t.index); it != job->nodes_fit_errors.end())
      out = CodesOf(it->second);
  }
  // Otherwise the text is the job's fit error: gang's "x/y tasks in gang unschedulable: ...".
  if (out.empty() && !job->job_fit_error.empty()) out.emplace_back("GangNotReady");
  if (!job->topology_reason.empty() &&
      std::find(out.begin(), out.end(), "TopologyConstraint") == out.end())
    out.emplace_back("TopologyConstraint");
  return out;
}

void StateVoteReason(std::string code, std::string message) {
  stated_reason.code = std::move(code);
  stated_reason.message = std::move(message);
}

void ClearStatedVoteReason() {
  if (!stated_reason.code.empty()) stated_reason.code.clear();
  if (!stated_reason.message.empty()) stated_reason.message.clear();
}

AdmissionRefusal TakeStatedVoteReason() {
  AdmissionRefusal out = std::move(stated_reason);
  stated_reason = {};
  return out;
}

void SetLastVoteRefusal(AdmissionRefusal refusal) { last_refusal = std::move(refusal); }

const AdmissionRefusal& LastVoteRefusal() { return last_refusal; }

AdmissionSink::AdmissionSink(std::map<std::string, AdmissionRefusal>* out)
    : previous_(admission_sink) {
  admission_sink = out;
}

AdmissionSink::~AdmissionSink() { admission_sink = previous_; }

void NoteAdmissionRefusal(const std::string& job_uid, const AdmissionRefusal& refusal) {
  if (admission_sink != nullptr) (*admission_sink)[job_uid] = refusal;
}

}  // namespace kiln
