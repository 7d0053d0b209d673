#pragma once
// HyperNodes (topology.volcano.sh/v1alpha1): the cluster's network topology as a tree of
// domains, resolved against the cluster's nodes the way Volcano's HyperNodesInfo does
// (pkg/scheduler/api/hyper_node_info.go at ed72c7c8), plus the virtual top HyperNode Volcano's
// session adds (framework.ClusterTopHyperNode).
//
// Resolution (HyperNodeTree::Resolve):
//   * a HyperNode's tier and tier name are its spec's; HyperNodes are grouped by tier;
//   * members of type Node select nodes by exactMatch (a name), regexMatch (a pattern matched
//     anywhere in the node name, as Go's MatchString) or labelMatch (a label selector; one with
//     neither matchLabels nor matchExpressions selects nothing);
//   * members of type HyperNode name a child by exactMatch only (Volcano ignores the other
//     selectors there); a child has one parent;
//   * a HyperNode's real nodes are the nodes its Node members select and the real nodes of its
//     children; they are kept in cluster node order (Volcano's are a set: Kiln's order makes
//     every search that walks them reproducible);
//   * the virtual top `<cluster-top-hypernode>` contains every node and is the parent of every
//     HyperNode without one; its tier is one above the highest real tier, at least 1.
// What does not resolve is a warning with the member's location, never a load error (one bad
// HyperNode must not stop the cluster; volcano-semantics.md §7):
//   * a member that selects nothing (a node or HyperNode that does not exist, a pattern or
//     label selector no node matches, a pattern that does not compile, a HyperNode member
//     selected other than by exactMatch);
//   * a HyperNode claimed by a second parent, or a cycle: Volcano's cache fails to build and
//     marks the HyperNodes not ready, so jobs with a network topology wait (allocate skips them)
//     until the topology is fixed; the claim or the edge closing the cycle is dropped.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/model.h"
#include "runtime/resource.h"
#include "runtime/status.h"

namespace kiln {

inline constexpr std::string_view kClusterTopHyperNode = "<cluster-top-hypernode>";

// One entry of a HyperNode's spec.members.
struct HyperNodeMemberSpec {
  enum class Type : uint8_t { Node, HyperNode };
  enum class Selector : uint8_t { Exact, Regex, Label };
  Type type = Type::Node;
  Selector selector = Selector::Exact;
  std::string name;     // exactMatch.name
  std::string pattern;  // regexMatch.pattern
  LabelSelector labels; // labelMatch
  SourceLocation where;
};

// A HyperNode object: metadata.name and spec.
struct HyperNodeSpec {
  std::string name;
  int64_t tier = 0;
  std::string tier_name;
  std::vector<HyperNodeMemberSpec> members;
  SourceLocation where;
};

// A resolved HyperNode (Volcano's HyperNodeInfo with its RealNodesList).
struct HyperNode {
  int32_t index = -1;  // dense, in spec order; the top HyperNode is last
  int64_t tier = 0;
  bool top = false;  // the virtual <cluster-top-hypernode>
  std::string name;
  std::string tier_name;
  HyperNode* parent = nullptr;
  std::vector<HyperNode*> children;  // in the order the members name them
  std::vector<HyperNode*> ancestors;  // itself, its parent, ..., the top (Volcano's GetAncestors)
  std::vector<Node*> nodes;          // real nodes, in cluster node order
  std::vector<uint64_t> node_bits;   // by node index: whether the node is a real node

  // Sums over the real nodes as the session opened (network-topology-aware's resource cache:
  // Volcano takes allocatable, idle and future idle once per session). Filled by
  // HyperNodeTree::SnapshotResources.
  Resource allocatable;
  Resource idle;
  Resource future_idle;

  // Σ used + pipelined over the real nodes now (the policy view's `used`). Summed afresh in node
  // order on every read this is quadratic (binpack scorers read it per node and tier), so while
  // `used_exact` holds it is kept as a running sum by NoteNodeUsage. A running sum of doubles
  // (add on place, subtract on evict) rounds differently from a fresh sum and would move ties, so
  // it is kept only while every addend is an integer and, per dimension, the addends' magnitudes
  // add up to at most 2^52 (used_magnitude): then every partial sum, in any order, is an integer
  // below 2^53, so both sums are exact and equal bit for bit. Otherwise (fractional quantities,
  // huge values) Used() sums afresh.
  Resource used_sum;
  std::array<double, kMaxResources> used_magnitude{};
  bool used_exact = false;

  Resource Used() const;

  bool Contains(const Node* n) const;
  // Whether `other` is this HyperNode or one of its descendants.
  bool Covers(const HyperNode* other) const;
};

// Where a HyperNode or one of its members does not resolve.
struct HyperNodeWarning {
  std::string object;  // "hyperNode s0"
  std::string message;
  SourceLocation where;
};

class HyperNodeTree {
 public:
  // A node the members may select; `node` may be null when only the names matter (resolving
  // for warnings before the cluster is built), and `index` is then the node's position.
  struct NodeRef {
    std::string_view name;
    const StringMap* labels = nullptr;
    Node* node = nullptr;
  };

  // Resolves `specs` against `nodes` (in cluster order; index i is node i). Never fails:
  // what does not resolve is appended to `warnings` (may be null).
  static std::unique_ptr<HyperNodeTree> Resolve(std::span<const HyperNodeSpec> specs,
                                                std::span<const NodeRef> nodes,
                                                std::vector<HyperNodeWarning>* warnings);

  // Volcano's HyperNodesInfo.Ready(): false after a cycle or a HyperNode claimed twice.
  bool ready() const { return ready_; }
  // Whether the cluster defines any HyperNode (besides the virtual top).
  bool has_real() const { return hyper_nodes_.size() > 1; }
  // Every HyperNode, in spec order, the top last.
  const std::vector<HyperNode*>& all() const { return ptrs_; }
  HyperNode* top() const { return ptrs_.back(); }
  HyperNode* Find(std::string_view name) const;
  // The tiers in ascending order, the top's included (Volcano's HyperNodesTiers).
  const std::vector<int64_t>& tiers() const { return tiers_; }
  // The HyperNodes of one tier, in spec order (Volcano's HyperNodesSetByTier).
  std::span<HyperNode* const> AtTier(int64_t tier) const;
  // tierName → tier (Volcano's HyperNodeTierNameMap: the last HyperNode naming it wins).
  std::optional<int64_t> TierOfName(std::string_view tier_name) const;
  // Lowest common ancestor (Volcano's GetLCAHyperNode): null arguments are neutral.
  HyperNode* Lca(HyperNode* a, HyperNode* b) const;
  // Volcano's FindHyperNodeForNode: the HyperNode of the lowest tier that holds the node, or
  // null when no HyperNode of that tier does.
  HyperNode* LeafOf(const Node* n) const;
  // The lowest-tier HyperNode holding every node of `nodes` (the top when they span trees;
  // null for no nodes): how Volcano's session recovers a job's allocated HyperNode.
  HyperNode* LowestCovering(std::span<Node* const> nodes) const;

  // Takes the per-HyperNode resource sums from the nodes as they are now: allocatable, idle and
  // future idle for the session, and `used`, which NoteNodeUsage keeps from then on.
  void SnapshotResources();
  // Keeps the `used` sums of the HyperNodes holding `n` after its used or pipelined resources
  // changed from `old_used` / `old_pipelined`. The session calls it around every change of a
  // node's tasks (Session::PlaceTask, UnplaceTask, UpdateTaskStatus).
  void NoteNodeUsage(const Node& n, const Resource& old_used, const Resource& old_pipelined);
  // Whether `n` is under any HyperNode whose `used` sum is kept (NoteNodeUsage has work to do).
  bool KeepsUsage(const Node& n) const {
    const auto i = static_cast<size_t>(n.index);
    return n.index >= 0 && i < domains_of_node_.size() && !domains_of_node_[i].empty();
  }

 private:
  std::vector<std::unique_ptr<HyperNode>> hyper_nodes_;
  std::vector<HyperNode*> ptrs_;
  std::unordered_map<std::string_view, HyperNode*> by_name_;
  std::vector<int64_t> tiers_;
  std::map<int64_t, std::vector<HyperNode*>> by_tier_;
  std::map<std::string, int64_t, std::less<>> tier_names_;
  std::vector<HyperNode*> leaf_of_node_;  // by node index (LeafOf)
  // By node index: the HyperNodes holding it whose `used` sum is kept as a running sum.
  std::vector<std::vector<HyperNode*>> domains_of_node_;
  bool ready_ = true;
};

// Session open (Volcano's openSession): the jobs' sub-jobs (runtime/sub_job.h), the cluster's
// HyperNodes (made, with only the virtual top, when the cluster has none but a job asks for a
// network topology or has a subGroupPolicy), their resource sums, and each job's and sub-job's
// network topology as Volcano's adjustNetworkTopologySpec leaves it (highestTierName → tier; soft
// → hard up to the top's tier, for a sub-job up to its job's tier when the job has one) with its
// allocated HyperNode recovered from its placed tasks when the HyperNodes are ready
// (recoverAllocatedHyperNode).
void OpenTopology(Cluster& cluster);

// Whether a node's labels satisfy a Kubernetes label selector (matchLabels and the
// In/NotIn/Exists/DoesNotExist expressions; both empty matches everything).
bool LabelsMatch(const LabelSelector& selector, const StringMap& labels);

}  // namespace kiln
