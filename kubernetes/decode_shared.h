#pragma once
// What the two decoders of pods and nodes share: decode.cc (nlohmann DOMs, the reference) and
// decode_fast.cc (simdjson on demand, the LIST and watch path). Where a field is computed from
// others rather than read, the computation lives here once, so the two cannot drift.
// Internal to kubernetes/; include only from those two files.

#include <string_view>
#include <vector>

#include "kubernetes/decode.h"

namespace kiln::kube::detail {

// One container's (or the pod-level) resources, as the QoS class reads them.
struct QosResources {
  Resource requests, limits;
  // requests.cpu / requests.memory present (an absent request defaults to the limit).
  bool names_cpu = false, names_memory = false;
};

// Whether a pod of these resources is of QoS class Guaranteed (Kubernetes' ComputePodQOS; see
// PodQosGuaranteed in decode.cc for when status.qosClass decides instead).
bool QosGuaranteed(const std::vector<QosResources>& all);

// status.phase ("" already defaulted to Pending by the caller); anything unknown is Unknown.
PodPhase PodPhaseOf(std::string_view phase);

// Moves the annotations that stand for PodSpec fields (group, task, duration) into those fields.
// False when kiln.sh/duration is not a positive Go duration; it is then left in place, and
// everything before it moved.
bool TakePodAnnotations(PodSpec& p);

}  // namespace kiln::kube::detail
