#pragma once
// Kubernetes and Volcano objects (JSON as the API server sends them) to the plain cluster structs
// of runtime/cluster_spec.h; kubernetes/encode.h writes them back (`kiln export-manifests`).
//
// Decoding is tolerant the way client-go's is: unknown fields are ignored and missing ones take
// Kubernetes' defaults; but a field of the wrong type or a quantity that does not parse makes the
// whole object an Error (the caller logs it and skips that one object).
//
// Fields with no slot of their own in the plain structs travel in annotations and are moved into
// their fields when decoded (and back when encoded), so decode(encode(x)) == x:
//   scheduling.k8s.io/group-name → PodSpec.group      (Volcano's own pod annotation)
//   volcano.sh/task-spec         → PodSpec.task       (Volcano's own pod annotation)
//   kiln.sh/duration             → PodSpec.duration   (the emulator's kubelet runs the pod that long)
//   kiln.sh/usage (JSON {cpu, memory, metricsTime}) → NodeSpec.usage
// (kubernetes/encode.h writes them; `kiln export-manifests`). A scenario pod without an
// image is written with the pause image, which Kubernetes requires; no scenario node lists it, so
// image locality scores it as the simulator scores an imageless pod.
//
// The cluster's own defaults (queue `default`, one-pod PodGroups for pods without a group,
// priorities from classes) and dangling references are NOT handled here: CompleteCluster
// (runtime/cluster_spec.h) does that for every cluster source.

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "runtime/cluster_spec.h"
#include "runtime/status.h"

namespace kiln::kube {

inline constexpr std::string_view kGroupNameAnnotation = "scheduling.k8s.io/group-name";
inline constexpr std::string_view kTaskSpecAnnotation = "volcano.sh/task-spec";
inline constexpr std::string_view kDurationAnnotation = "kiln.sh/duration";
inline constexpr std::string_view kUsageAnnotation = "kiln.sh/usage";
inline constexpr std::string_view kDefaultImage = "registry.k8s.io/pause:3.9";
// The keys of an affinity's hard and soft halves (nodeAffinity, podAffinity, podAntiAffinity).
inline constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
inline constexpr std::string_view kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";

// What the cache keeps of an object besides its plain struct.
struct ObjectMeta {
  std::string namespace_;  // "" for cluster-scoped objects
  std::string name;
  std::string uid;  // metadata.uid
  std::string resource_version;
};

struct DecodedPod {
  ObjectMeta meta;
  PodSpec spec;
  std::string scheduler_name;  // spec.schedulerName ("default-scheduler" when unset)
  // QoS class Guaranteed as Volcano reads it (v1qos.GetPodQOS): status.qosClass, else computed
  // over every container. A PodSpec holds one container's worth of requests and limits, too
  // little to judge a pod of several containers, so the snapshot hands this to the model
  // (PodSpec::qos_guaranteed).
  bool qos_guaranteed = false;
  // status.conditions[type=PodScheduled] as the API server has it (so a writer can skip writing
  // the same condition again).
  std::string scheduled_status;   // "True" | "False" | ""
  std::string scheduled_reason;
  std::string scheduled_message;
};

struct DecodedPodGroup {
  ObjectMeta meta;
  PodGroupSpec spec;
  int32_t running = 0, succeeded = 0, failed = 0;  // status counters
};

struct DecodedNamespace {
  ObjectMeta meta;
  StringMap labels;
};

// Each decoder reads one object (an item of a LIST or the object of a watch event).
Result<DecodedPod> DecodePod(const nlohmann::json& obj);
Result<NodeSpec> DecodeNode(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
Result<DecodedPodGroup> DecodePodGroup(const nlohmann::json& obj);
Result<QueueSpec> DecodeQueue(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
Result<PriorityClassSpec> DecodePriorityClass(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
Result<PodDisruptionBudget> DecodePdb(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
Result<ResourceQuota> DecodeResourceQuota(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
Result<DecodedNamespace> DecodeNamespace(const nlohmann::json& obj);
// topology.volcano.sh/v1alpha1 HyperNode (cluster-scoped). The CRD's schema and the scenario
// loader's rules hold: spec.tier (≥ 0) is required, each member has a type (Node or HyperNode)
// and exactly one selector. Members that select nothing are not decode errors: CompleteCluster
// reports them, as it does for a scenario.
Result<HyperNodeSpec> DecodeHyperNode(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
// nodeinfo.volcano.sh/v1alpha1 Numatopology (cluster-scoped), named after its node. Checked as
// the scenario loader checks it: numares allocatable must be a cpuset in the kubelet's list
// format ("0-3,8"), cpuDetail keys CPU ids, capacities and ids non-negative, resReserved
// quantities.
Result<NumatopologySpec> DecodeNumatopology(const nlohmann::json& obj, ObjectMeta* meta = nullptr);
// metadata only (for DELETED events of any kind).
ObjectMeta DecodeMeta(const nlohmann::json& obj);

}  // namespace kiln::kube
