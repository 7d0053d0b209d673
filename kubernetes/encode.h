#pragma once
// The plain cluster structs of runtime/cluster_spec.h as Kubernetes and Volcano manifests: what
// `kiln export-manifests` writes and the emulator tests load. Fields with no slot of their own
// travel in the annotations kubernetes/decode.h names, so DecodeX(EncodeCluster(x)) == x.

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "runtime/cluster_spec.h"

namespace kiln::kube {

struct EncodeOptions {
  // Skip what the cluster adds by itself (the implicit `default` queue, one-pod PodGroups):
  // a decoder's CompleteCluster brings them back.
  bool skip_implicit = true;
  // spec.schedulerName of pods that have the default one (others keep theirs).
  std::string scheduler_name = "volcano";
  TimeNs now = 0;  // deletionTimestamp of pods being deleted
};
// Every object of `cluster` as one manifest each, in dependency order (namespaces, priority
// classes, queues, nodes, HyperNodes, Numatopologies, PodGroups, pods, PDBs, quotas).
std::vector<nlohmann::json> EncodeCluster(const ClusterSpec& cluster, const EncodeOptions& options);
// {"apiVersion": "v1", "kind": "List", "items": [...]} as JSON text.
std::string ManifestsToJson(const std::vector<nlohmann::json>& items);
// Multi-document YAML ("---" between objects).
std::string ManifestsToYaml(const std::vector<nlohmann::json>& items);
// RFC 3339 UTC with nanoseconds when not whole seconds ("2025-01-01T00:00:00Z").
std::string FormatTimestamp(TimeNs t);
// A resource value in Volcano's units as a Kubernetes quantity ("1500m", "1073741824", "4").
std::string FormatQuantity(std::string_view resource, double value);

}  // namespace kiln::kube
