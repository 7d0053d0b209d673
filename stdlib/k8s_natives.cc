#include "stdlib/k8s_natives.h"

#include <cstdint>
#include <optional>
#include <string_view>

// kiln_rt_map_find_s: a policy map<string, string> is the codegen's KMap.
#include "stdlib/runtime_support.h"

namespace kiln::k8s {

namespace {

using Label = std::optional<std::string_view>;

std::string_view View(KStr s) { return {s.data ? s.data : "", s.data ? s.size : 0}; }

// Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits only, no blanks, no overflow.
std::optional<int64_t> ParseInt64(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
}

bool Contains(const std::vector<std::string>& values, std::string_view v) {
  for (const std::string& x : values)
    if (x == v) return true;
  return false;
}

// labels.Requirement.Matches, after NewRequirement's validation (a requirement that would not
// construct matches nothing). `numeric` admits Gt/Lt, which only node selectors have.
template <typename Lookup>
bool Matches(const SelectorRequirement& req, const Lookup& lookup, bool numeric) {
  const std::string& op = req.op;
  if (op == "In" || op == "NotIn") {
    if (req.values.empty()) return false;
    Label v = lookup(req.key);
    if (op == "In") return v && Contains(req.values, *v);
    return !v || !Contains(req.values, *v);
  }
  if (op == "Exists" || op == "DoesNotExist") {
    if (!req.values.empty()) return false;
    return lookup(req.key).has_value() == (op == "Exists");
  }
  if (numeric && (op == "Gt" || op == "Lt")) {
    if (req.values.size() != 1) return false;
    std::optional<int64_t> want = ParseInt64(req.values[0]);
    if (!want) return false;
    Label v = lookup(req.key);
    if (!v) return false;
    std::optional<int64_t> have = ParseInt64(*v);
    if (!have) return false;
    return op == "Gt" ? *have > *want : *have < *want;
  }
  return false;
}

template <typename Lookup>
bool SelectorMatchesWith(const LabelSelector& sel, const Lookup& lookup) {
  for (const auto& [k, v] : sel.match_labels) {
    Label have = lookup(k);
    if (!have || *have != v) return false;
  }
  for (const SelectorRequirement& r : sel.match_expressions)
    if (!Matches(r, lookup, /*numeric=*/false)) return false;
  return true;
}

auto MapLookup(const StringMap& labels) {
  return [&labels](std::string_view key) -> Label {
    auto it = labels.find(key);
    if (it == labels.end()) return std::nullopt;
    return std::string_view(it->second);
  };
}

auto KMapLookup(const void* map) {
  return [map](std::string_view key) -> Label {
    if (!map) return std::nullopt;
    void* slot = kiln_rt_map_find_s(const_cast<void*>(map), key.data(),
                                    static_cast<int64_t>(key.size()));
    if (!slot) return std::nullopt;
    return View(*static_cast<const KStr*>(slot));
  };
}

// matchFields: fields.Selector over metadata.name, built by NodeSelectorRequirementsAsFieldSelector
// (In/NotIn with exactly one value).
bool FieldMatches(const SelectorRequirement& req, const Node& node) {
  if (req.key != "metadata.name" || req.values.size() != 1) return false;
  if (req.op == "In") return node.name == req.values[0];
  if (req.op == "NotIn") return node.name != req.values[0];
  return false;
}

}  // namespace

bool RequirementMatches(const SelectorRequirement& req, const StringMap& labels) {
  return Matches(req, MapLookup(labels), /*numeric=*/true);
}

bool SelectorMatches(const LabelSelector& sel, const StringMap& labels) {
  return SelectorMatchesWith(sel, MapLookup(labels));
}

bool TermMatchesNode(const NodeSelectorTerm& term, const Node& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  auto lookup = MapLookup(node.labels);
  for (const SelectorRequirement& r : term.match_expressions)
    if (!Matches(r, lookup, /*numeric=*/true)) return false;
  for (const SelectorRequirement& f : term.match_fields)
    if (!FieldMatches(f, node)) return false;
  return true;
}

bool ToleratesTaint(const Toleration& tol, std::string_view key, std::string_view value,
                    std::string_view effect) {
  if (!tol.effect.empty() && tol.effect != effect) return false;
  if (!tol.key.empty() && tol.key != key) return false;
  if (tol.op.empty() || tol.op == "Equal") return tol.value == value;
  return tol.op == "Exists";
}

}  // namespace kiln::k8s

extern "C" {

using kiln::k8s::View;

bool kiln_std_requirement_matches(const kiln::SelectorRequirement* req, const void* labels) {
  return kiln::k8s::Matches(*req, kiln::k8s::KMapLookup(labels), /*numeric=*/true);
}

bool kiln_std_selector_matches(const kiln::LabelSelector* sel, const void* labels) {
  return kiln::k8s::SelectorMatchesWith(*sel, kiln::k8s::KMapLookup(labels));
}

bool kiln_std_selector_matches_task(const kiln::LabelSelector* sel, const kiln::Task* task) {
  return kiln::k8s::SelectorMatches(*sel, task->labels());
}

bool kiln_std_term_matches_node(const kiln::NodeSelectorTerm* term, const kiln::Node* node) {
  return kiln::k8s::TermMatchesNode(*term, *node);
}

bool kiln_std_required_node_affinity_matches(const kiln::Task* task, const kiln::Node* node) {
  for (const auto& [k, v] : task->node_selector()) {
    auto it = node->labels.find(k);
    if (it == node->labels.end() || it->second != v) return false;
  }
  const auto& na = task->affinity().node_affinity;
  if (!na || !na->required) return true;
  for (const kiln::NodeSelectorTerm& term : *na->required)
    if (kiln::k8s::TermMatchesNode(term, *node)) return true;
  return false;
}

bool kiln_std_term_matches_pod(const kiln::PodAffinityTerm* term, const kiln::Task* owner,
                               const kiln::Task* pod) {
  if (!term->namespace_selector) {
    if (term->namespaces.empty()) {
      if (pod->namespace_ != owner->namespace_) return false;
    } else if (!kiln::k8s::Contains(term->namespaces, pod->namespace_)) {
      return false;
    }
  }
  if (!term->label_selector) return false;
  return kiln::k8s::SelectorMatches(*term->label_selector, pod->labels());
}

bool kiln_std_tolerates(const kiln::Toleration* tol, const kiln::Taint* taint) {
  return kiln::k8s::ToleratesTaint(*tol, taint->key, taint->value, taint->effect);
}

bool kiln_std_task_tolerates(const kiln::Task* task, const kiln::Taint* taint) {
  for (const kiln::Toleration& tol : task->tolerations())
    if (kiln::k8s::ToleratesTaint(tol, taint->key, taint->value, taint->effect)) return true;
  return false;
}

bool kiln_std_task_tolerates_taint(const kiln::Task* task, const char* key, size_t key_size,
                                   const char* value, size_t value_size, const char* effect,
                                   size_t effect_size) {
  auto view = [](const char* data, size_t size) { return View(KStr{data, size}); };
  for (const kiln::Toleration& tol : task->tolerations())
    if (kiln::k8s::ToleratesTaint(tol, view(key, key_size), view(value, value_size),
                                  view(effect, effect_size)))
      return true;
  return false;
}

}  // extern "C"
