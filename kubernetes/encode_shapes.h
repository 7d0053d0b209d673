#pragma once
// The Kubernetes and Volcano shapes of the plain cluster structs as JSON: label and node
// selectors, affinity, tolerations, taints, topology spread, host ports, images, network
// topology, sub-group policies, HyperNode and Numatopology specs, quantities and times. A
// manifest (encode.cc) and a scenario (scenario_writer.cc) spell these parts the same way, so
// both writers build them here. nlohmann/json.hpp is heavy: include this only from .cc files.

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/cluster_spec.h"

namespace YAML {
class Emitter;
}

namespace kiln::kube {

// Every present dimension as a quantity string ({cpu: "1500m", memory: "1073741824"}).
nlohmann::json ResourcesJson(const Resource& r);
// A container's requests or limits: as ResourcesJson, but cpu and memory only when non-zero (a
// Resource always has them; a scenario that omits them asks for none).
nlohmann::json RequestsJson(const Resource& r);
nlohmann::json MapJson(const StringMap& m);
nlohmann::json SelectorJson(const LabelSelector& s);
nlohmann::json AffinityJson(const Affinity& a);
nlohmann::json TolerationsJson(const std::vector<Toleration>& tolerations);
nlohmann::json TaintsJson(const std::vector<Taint>& taints);
nlohmann::json SpreadJson(const std::vector<TopologySpreadConstraint>& constraints);
// A pod's host ports as container ports ({containerPort, hostPort, protocol, hostIP}).
nlohmann::json HostPortsJson(const std::vector<HostPort>& ports);
// NodeStatus.images: one entry per size, naming every image of that size.
nlohmann::json ImagesJson(const std::map<std::string, int64_t, std::less<>>& images);
// A Volcano Queue's spec.affinity (nodeGroupAffinity / nodeGroupAntiAffinity), {} when empty.
nlohmann::json QueueAffinityJson(const QueueSpec& q);
nlohmann::json NetworkTopologyJson(const NetworkTopologySpec& nt);
nlohmann::json SubGroupPolicyJson(const std::vector<SubGroupPolicySpec>& policies);
// A HyperNode's and a Numatopology's spec, in the CRDs' spelling.
nlohmann::json HyperNodeSpecJson(const HyperNodeSpec& hn);
nlohmann::json NumatopologySpecJson(const NumatopologySpec& n);
// A Go duration ("1500ms").
std::string GoDuration(DurationNs d);
// A JSON value into a YAML emitter as block YAML; strings that YAML would read as another
// type (numbers, booleans, null) are quoted.
void EmitJson(YAML::Emitter& e, const nlohmann::json& j);

}  // namespace kiln::kube
