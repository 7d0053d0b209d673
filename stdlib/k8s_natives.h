#pragma once
// Kubernetes matching mechanism shared by the placement policies (predicates, nodeorder): label
// selectors, node selector terms, pod (anti-)affinity terms and tolerations, with the exact
// semantics of k8s.io/apimachinery labels and k8s.io/component-helpers nodeaffinity. They are
// natives because every filter and scorer calls them in its innermost loop, and because a view's
// labels can be read in place here instead of being copied into a policy map first.
//
// C ABI as stdlib/library.h: shapes arrive as pointers to the runtime's structs (runtime/model.h),
// views as `const kiln::Task*` / `const kiln::Node*`, `map<string, string>` as the codegen's KMap
// (null is treated as empty), strings as (data, size) pairs.

#include <cstddef>

#include "runtime/abi.h"

extern "C" {

// LabelSelectorRequirement / NodeSelectorRequirement against a label map: In, NotIn (true when
// the label is absent), Exists, DoesNotExist, Gt and Lt (exactly one value; both sides parse as
// base-10 int64). Any other operator matches nothing.
bool kiln_std_requirement_matches(const kiln::SelectorRequirement* req, const void* labels);
// metav1.LabelSelector: every matchLabels pair and every matchExpressions requirement (In, NotIn,
// Exists, DoesNotExist). An empty selector matches everything.
bool kiln_std_selector_matches(const kiln::LabelSelector* sel, const void* labels);
// The same against a pod's own labels (no copy).
bool kiln_std_selector_matches_task(const kiln::LabelSelector* sel, const kiln::Task* task);
// v1.NodeSelectorTerm against a node: every matchExpressions requirement on the node's labels and
// every matchFields requirement on `metadata.name` (In/NotIn with exactly one value). A term with
// neither matches nothing; an unsupported field or operator makes the term match nothing.
bool kiln_std_term_matches_node(const kiln::NodeSelectorTerm* term, const kiln::Node* node);
// The pod's nodeSelector and required node affinity (terms ORed) against a node
// (component-helpers RequiredNodeAffinity.Match).
bool kiln_std_required_node_affinity_matches(const kiln::Task* task, const kiln::Node* node);
// A PodAffinityTerm of `owner` against another pod (framework AffinityTerm.Matches): the pod's
// namespace is in the term's namespaces (the owner's own namespace when none are listed; a
// namespaceSelector, whose namespace labels the model does not carry, admits every namespace) and
// the term's labelSelector matches the pod's labels (a nil selector matches nothing).
bool kiln_std_term_matches_pod(const kiln::PodAffinityTerm* term, const kiln::Task* owner,
                               const kiln::Task* pod);
// v1.Toleration.ToleratesTaint.
bool kiln_std_tolerates(const kiln::Toleration* tol, const kiln::Taint* taint);
// Some toleration of the pod tolerates the taint.
bool kiln_std_task_tolerates(const kiln::Task* task, const kiln::Taint* taint);
// The same for a taint given by its parts (for taints no node carries, such as the one
// NodeUnschedulable checks: node.kubernetes.io/unschedulable:NoSchedule).
bool kiln_std_task_tolerates_taint(const kiln::Task* task, const char* key, size_t key_size,
                                   const char* value, size_t value_size, const char* effect,
                                   size_t effect_size);

}  // extern "C"

namespace kiln::k8s {

// The same rules on plain label maps, for C++ callers and tests.
bool RequirementMatches(const SelectorRequirement& req, const StringMap& labels);
bool SelectorMatches(const LabelSelector& sel, const StringMap& labels);
bool TermMatchesNode(const NodeSelectorTerm& term, const Node& node);
bool ToleratesTaint(const Toleration& tol, std::string_view key, std::string_view value,
                    std::string_view effect);

}  // namespace kiln::k8s
