#include "runtime/hyper_node.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <regex>

#include "runtime/sub_job.h"

namespace kiln {

std::string_view ToString(NetworkTopologyMode m) {
  return m == NetworkTopologyMode::Soft ? "soft" : "hard";
}

bool HyperNode::Contains(const Node* n) const {
  if (n == nullptr || n->index < 0) return false;
  const size_t i = static_cast<size_t>(n->index);
  return i / 64 < node_bits.size() && ((node_bits[i / 64] >> (i % 64)) & 1u);
}

namespace {

// At most this much magnitude per dimension keeps a HyperNode's used sum exact (see
// HyperNode::used_sum): 2^52, so that even the check's own rounding cannot hide an overflow.
constexpr double kExactMagnitude = 4503599627370496.0;

// The dimensions Resource::Add sums of `r`: cpu, memory and its scalars.
uint32_t AddedDims(const Resource& r) { return r.scalar_mask() | Resource::kBaseMask; }

// Whether every dimension Add sums of `r` is an integer.
bool Integral(const Resource& r) {
  for (uint32_t m = AddedDims(r); m != 0; m &= m - 1) {
    const double v = r.values[std::countr_zero(m)];
    if (v != std::trunc(v)) return false;  // NaN too
  }
  return true;
}

// magnitude[d] += sign * |r[d]| over the dimensions Add sums of `r`.
void AddMagnitude(std::array<double, kMaxResources>& magnitude, const Resource& r, double sign) {
  for (uint32_t m = AddedDims(r); m != 0; m &= m - 1) {
    const int id = std::countr_zero(m);
    magnitude[id] += sign * std::fabs(r.values[id]);
  }
}

bool WithinExactMagnitude(const std::array<double, kMaxResources>& magnitude) {
  for (double v : magnitude)
    if (!(v <= kExactMagnitude)) return false;
  return true;
}

}  // namespace

Resource HyperNode::Used() const {
  if (used_exact) return used_sum;
  Resource sum;
  for (const Node* n : nodes) {
    sum.Add(n->used);
    sum.Add(n->pipelined);
  }
  return sum;
}

bool HyperNode::Covers(const HyperNode* other) const {
  for (const HyperNode* p = other; p != nullptr; p = p->parent)
    if (p == this) return true;
  return false;
}

bool LabelsMatch(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [k, v] : selector.match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const SelectorRequirement& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in) return false;
    if (r.op == "NotIn" && in) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

namespace {

void SetBit(std::vector<uint64_t>& bits, size_t i) { bits[i / 64] |= uint64_t{1} << (i % 64); }

std::string MemberText(const HyperNodeMemberSpec& m) {
  const char* type = m.type == HyperNodeMemberSpec::Type::Node ? "Node" : "HyperNode";
  switch (m.selector) {
    case HyperNodeMemberSpec::Selector::Exact:
      return fmt::format("member {{type: {}, exactMatch: {}}}", type, m.name);
    case HyperNodeMemberSpec::Selector::Regex:
      return fmt::format("member {{type: {}, regexMatch: \"{}\"}}", type, m.pattern);
    case HyperNodeMemberSpec::Selector::Label:
      return fmt::format("member {{type: {}, labelMatch}}", type);
  }
  return "member";
}

}  // namespace

std::unique_ptr<HyperNodeTree> HyperNodeTree::Resolve(std::span<const HyperNodeSpec> specs,
                                                      std::span<const NodeRef> nodes,
                                                      std::vector<HyperNodeWarning>* warnings) {
  auto tree = std::make_unique<HyperNodeTree>();
  auto warn = [&](const std::string& object, std::string message, const SourceLocation& where) {
    if (warnings) warnings->push_back(HyperNodeWarning{object, std::move(message), where});
  };
  const size_t words = (nodes.size() + 63) / 64;
  std::unordered_map<std::string_view, size_t> node_index;
  node_index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) node_index.emplace(nodes[i].name, i);

  // The HyperNodes themselves; a second object of one name cannot exist in a cluster (the
  // scenario loader refuses it), so it is only skipped here.
  std::vector<const HyperNodeSpec*> spec_of;
  for (const HyperNodeSpec& s : specs) {
    if (tree->by_name_.count(s.name)) {
      warn("hyperNode " + s.name, fmt::format("hyperNode `{}` is defined twice; the second is ignored", s.name),
           s.where);
      continue;
    }
    auto hn = std::make_unique<HyperNode>();
    hn->index = static_cast<int32_t>(tree->hyper_nodes_.size());
    hn->tier = s.tier;
    hn->name = s.name;
    hn->tier_name = s.tier_name;
    hn->node_bits.assign(words, 0);
    tree->by_name_.emplace(hn->name, hn.get());
    tree->ptrs_.push_back(hn.get());
    tree->hyper_nodes_.push_back(std::move(hn));
    spec_of.push_back(&s);
  }

  // Members, in file order: Node members select their nodes directly; HyperNode members link
  // the tree.
  for (size_t h = 0; h < spec_of.size(); ++h) {
    HyperNode* self = tree->ptrs_[h];
    const std::string object = "hyperNode " + self->name;
    for (const HyperNodeMemberSpec& m : spec_of[h]->members) {
      auto member_warning = [&](const std::string& what) {
        warn(object, fmt::format("hyperNode `{}`: {} {}", self->name, MemberText(m), what),
             m.where);
      };
      if (m.type == HyperNodeMemberSpec::Type::HyperNode) {
        if (m.selector != HyperNodeMemberSpec::Selector::Exact) {
          member_warning("selects nothing: HyperNode members are chosen by exactMatch only");
          continue;
        }
        HyperNode* child = tree->Find(m.name);
        if (child == nullptr) {
          member_warning("names no HyperNode; the member is ignored");
          continue;
        }
        if (child->parent == self) continue;  // named twice
        if (child->parent != nullptr) {
          tree->ready_ = false;
          member_warning(fmt::format("is already a member of `{}`; the second claim is ignored and "
                                     "HyperNodes are not ready (jobs with a network topology wait)",
                                     child->parent->name));
          continue;
        }
        bool cycle = false;
        for (const HyperNode* p = self; p != nullptr; p = p->parent) cycle |= p == child;
        if (cycle) {
          tree->ready_ = false;
          member_warning(
              "closes a cycle; the member is ignored and HyperNodes are not ready (jobs with a "
              "network topology wait)");
          continue;
        }
        child->parent = self;
        self->children.push_back(child);
        continue;
      }
      // type Node
      size_t matched = 0;
      switch (m.selector) {
        case HyperNodeMemberSpec::Selector::Exact: {
          auto it = node_index.find(m.name);
          if (it != node_index.end()) SetBit(self->node_bits, it->second), ++matched;
          break;
        }
        case HyperNodeMemberSpec::Selector::Regex: {
          std::optional<std::regex> re;
          try {
            re.emplace(m.pattern, std::regex::ECMAScript);
          } catch (const std::regex_error& e) {
            member_warning(fmt::format("does not compile ({}); it selects nothing", e.what()));
            continue;
          }
          for (size_t i = 0; i < nodes.size(); ++i)
            if (std::regex_search(nodes[i].name.begin(), nodes[i].name.end(), *re))
              SetBit(self->node_bits, i), ++matched;
          break;
        }
        case HyperNodeMemberSpec::Selector::Label: {
          if (m.labels.match_labels.empty() && m.labels.match_expressions.empty()) break;
          static const StringMap kNoLabels;
          for (size_t i = 0; i < nodes.size(); ++i)
            if (LabelsMatch(m.labels, nodes[i].labels ? *nodes[i].labels : kNoLabels))
              SetBit(self->node_bits, i), ++matched;
          break;
        }
      }
      if (matched == 0)
        member_warning("selects no node");
    }
  }

  // Real nodes: a HyperNode's own plus its descendants' (children first; the tree is acyclic).
  std::vector<char> done(tree->ptrs_.size(), 0);
  auto gather = [&](auto&& self_fn, HyperNode* hn) -> void {
    if (done[hn->index]) return;
    for (HyperNode* c : hn->children) {
      self_fn(self_fn, c);
      for (size_t w = 0; w < words; ++w) hn->node_bits[w] |= c->node_bits[w];
    }
    done[hn->index] = 1;
  };
  for (HyperNode* hn : tree->ptrs_) gather(gather, hn);

  // The virtual top: every node, parent of every root, one tier above the highest.
  int64_t top_tier = 1;
  for (HyperNode* hn : tree->ptrs_) top_tier = std::max(top_tier, hn->tier + 1);
  auto top = std::make_unique<HyperNode>();
  top->index = static_cast<int32_t>(tree->hyper_nodes_.size());
  top->tier = top_tier;
  top->top = true;
  top->name = std::string(kClusterTopHyperNode);
  top->node_bits.assign(words, 0);
  for (size_t i = 0; i < nodes.size(); ++i) SetBit(top->node_bits, i);
  for (HyperNode* hn : tree->ptrs_)
    if (hn->parent == nullptr) {
      hn->parent = top.get();
      top->children.push_back(hn);
    }
  tree->by_name_.emplace(top->name, top.get());
  tree->ptrs_.push_back(top.get());
  tree->hyper_nodes_.push_back(std::move(top));

  for (HyperNode* hn : tree->ptrs_) {
    for (HyperNode* p = hn; p != nullptr; p = p->parent) hn->ancestors.push_back(p);
    for (size_t i = 0; i < nodes.size(); ++i)
      if ((hn->node_bits[i / 64] >> (i % 64)) & 1u)
        if (nodes[i].node != nullptr) hn->nodes.push_back(nodes[i].node);
    tree->by_tier_[hn->tier].push_back(hn);
    if (!hn->tier_name.empty()) tree->tier_names_[hn->tier_name] = hn->tier;
  }
  for (const auto& [tier, _] : tree->by_tier_) tree->tiers_.push_back(tier);

  // LeafOf: per node, the first HyperNode of the lowest tier holding it.
  tree->leaf_of_node_.assign(nodes.size(), nullptr);
  for (HyperNode* hn : tree->AtTier(tree->tiers_.front()))
    for (size_t i = 0; i < nodes.size(); ++i)
      if (tree->leaf_of_node_[i] == nullptr && ((hn->node_bits[i / 64] >> (i % 64)) & 1u))
        tree->leaf_of_node_[i] = hn;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].node != nullptr) nodes[i].node->hyper_node = tree->leaf_of_node_[i];
  return tree;
}

HyperNode* HyperNodeTree::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::span<HyperNode* const> HyperNodeTree::AtTier(int64_t tier) const {
  auto it = by_tier_.find(tier);
  if (it == by_tier_.end()) return {};
  return it->second;
}

std::optional<int64_t> HyperNodeTree::TierOfName(std::string_view tier_name) const {
  auto it = tier_names_.find(tier_name);
  if (it == tier_names_.end()) return std::nullopt;
  return it->second;
}

HyperNode* HyperNodeTree::Lca(HyperNode* a, HyperNode* b) const {
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  for (HyperNode* p = b; p != nullptr; p = p->parent)
    if (p->Covers(a)) return p;
  return nullptr;
}

HyperNode* HyperNodeTree::LeafOf(const Node* n) const {
  if (n == nullptr || n->index < 0 || static_cast<size_t>(n->index) >= leaf_of_node_.size())
    return nullptr;
  return leaf_of_node_[static_cast<size_t>(n->index)];
}

HyperNode* HyperNodeTree::LowestCovering(std::span<Node* const> nodes) const {
  if (nodes.empty()) return nullptr;
  HyperNode* best = nullptr;
  for (HyperNode* hn : ptrs_) {
    if (best != nullptr && hn->tier >= best->tier) continue;
    bool all = true;
    for (const Node* n : nodes) {
      if (!hn->Contains(n)) {
        all = false;
        break;
      }
    }
    if (all) best = hn;
  }
  return best;
}

void HyperNodeTree::SnapshotResources() {
  for (auto& domains : domains_of_node_) domains.clear();
  for (HyperNode* hn : ptrs_) {
    hn->allocatable = Resource{};
    hn->idle = Resource{};
    hn->future_idle = Resource{};
    hn->used_sum = Resource{};
    hn->used_magnitude.fill(0.0);
    hn->used_exact = true;
    for (const Node* n : hn->nodes) {
      hn->allocatable.Add(n->allocatable);
      hn->idle.Add(n->idle);
      hn->future_idle.Add(n->FutureIdle());
      hn->used_sum.Add(n->used);
      hn->used_sum.Add(n->pipelined);
      hn->used_exact = hn->used_exact && Integral(n->used) && Integral(n->pipelined);
      AddMagnitude(hn->used_magnitude, n->used, 1.0);
      AddMagnitude(hn->used_magnitude, n->pipelined, 1.0);
    }
    hn->used_exact = hn->used_exact && WithinExactMagnitude(hn->used_magnitude);
    if (!hn->used_exact) continue;
    for (const Node* n : hn->nodes) {
      const auto i = static_cast<size_t>(n->index);
      if (i >= domains_of_node_.size()) domains_of_node_.resize(i + 1);
      domains_of_node_[i].push_back(hn);
    }
  }
}

void HyperNodeTree::NoteNodeUsage(const Node& n, const Resource& old_used,
                                  const Resource& old_pipelined) {
  if (!KeepsUsage(n)) return;
  // A dimension leaving a Resource would leave the fresh sum's present bits too; a node's
  // Resources only gain dimensions, but an exact sum must not rely on that silently.
  const bool exact = Integral(n.used) && Integral(n.pipelined) &&
                     (old_used.present & ~n.used.present) == 0 &&
                     (old_pipelined.present & ~n.pipelined.present) == 0;
  for (HyperNode* h : domains_of_node_[static_cast<size_t>(n.index)]) {
    if (!h->used_exact) continue;
    AddMagnitude(h->used_magnitude, old_used, -1.0);
    AddMagnitude(h->used_magnitude, old_pipelined, -1.0);
    AddMagnitude(h->used_magnitude, n.used, 1.0);
    AddMagnitude(h->used_magnitude, n.pipelined, 1.0);
    if (!exact || !WithinExactMagnitude(h->used_magnitude)) {
      h->used_exact = false;  // Used() sums afresh from now on
      continue;
    }
    // Old addends out first, new ones in after: every intermediate value is a sum of some of
    // the old or of the new addends, so an integer below 2^53, so exact.
    Resource& sum = h->used_sum;
    for (const Resource* r : {&old_used, &old_pipelined})
      for (uint32_t m = AddedDims(*r); m != 0; m &= m - 1) {
        const int id = std::countr_zero(m);
        sum.values[id] -= r->values[id];
      }
    sum.Add(n.used);
    sum.Add(n.pipelined);
  }
}

void OpenTopology(Cluster& cluster) {
  BuildSubJobs(cluster);
  // Jobs with sub-group gangs are placed by allocate's HyperNode search even without a network
  // topology (under the virtual top), as Volcano's allocateForJob places them.
  const bool any_topology =
      std::any_of(cluster.jobs().begin(), cluster.jobs().end(), [](const Job* j) {
        return j->ContainsNetworkTopology() || j->HasSubGroupPolicy();
      });
  if (cluster.hyper_nodes() == nullptr) {
    if (!any_topology) return;
    std::vector<HyperNodeTree::NodeRef> refs;
    refs.reserve(cluster.nodes().size());
    for (Node* n : cluster.nodes()) refs.push_back({n->name, &n->labels, n});
    cluster.set_hyper_nodes(HyperNodeTree::Resolve({}, refs, nullptr));
  }
  HyperNodeTree& tree = *cluster.hyper_nodes();
  tree.SnapshotResources();
  std::vector<Node*> placed;
  // Volcano's adjustNetworkTopologySpec: highestTierName becomes a tier; soft mode becomes hard up
  // to `max_tier`. Returns the tier, or nothing (no tier: not placed by the HyperNode search).
  auto normalise = [&](NetworkTopologySpec nt, int64_t max_tier) -> std::optional<int64_t> {
    if (!nt.highest_tier_allowed && !nt.highest_tier_name.empty())
      if (std::optional<int64_t> tier = tree.TierOfName(nt.highest_tier_name))
        nt.highest_tier_allowed = *tier;
    if (nt.mode == NetworkTopologyMode::Soft) return max_tier;
    return nt.highest_tier_allowed;
  };
  auto covering = [&](const std::vector<Task*>& tasks) {
    placed.clear();
    for (const Task* t : tasks)
      if (AllocatedStatus(t->status) && t->node != nullptr) placed.push_back(t->node);
    return tree.LowestCovering(placed);
  };
  for (Job* job : cluster.jobs()) {
    job->hard_topology = false;
    job->highest_tier_allowed = 0;
    job->allocated_hyper_node = nullptr;
    job->sub_job_allocated_hyper_node = nullptr;
    if (job->HasNetworkTopology()) {
      std::optional<int64_t> tier = normalise(*job->network_topology, tree.top()->tier);
      job->hard_topology = tier.has_value();
      job->highest_tier_allowed = tier.value_or(0);
    }
    // Sub-jobs' soft mode is bounded by the job's tier when it has one (convertSoftToHardTopology).
    const int64_t sub_job_max_tier = job->hard_topology ? job->highest_tier_allowed : tree.top()->tier;
    for (auto& sub : job->sub_jobs) {
      sub->hard_topology = false;
      sub->highest_tier_allowed = 0;
      sub->allocated_hyper_node = nullptr;
      if (!sub->HasNetworkTopology()) continue;
      std::optional<int64_t> tier = normalise(*sub->network_topology, sub_job_max_tier);
      sub->hard_topology = tier.has_value();
      sub->highest_tier_allowed = tier.value_or(0);
      if (tree.ready()) sub->allocated_hyper_node = covering(sub->tasks);
    }
    if (!job->HasNetworkTopology() || !tree.ready()) continue;
    job->allocated_hyper_node = covering(job->tasks);
    // Without a policy the default sub-job holds every task: its HyperNode is the job's at open.
    job->sub_job_allocated_hyper_node = job->allocated_hyper_node;
  }
}

}  // namespace kiln
