#include "runtime/fit_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "runtime/enum_names.h"
#include "runtime/reason_codes.h"

namespace kiln {

namespace {

constexpr EnumName<StatusCode> kStatusCodeNames[] = {
    {StatusCode::Success, "Success"},
    {StatusCode::Error, "Error"},
    {StatusCode::Unschedulable, "Unschedulable"},
    {StatusCode::UnschedulableAndUnresolvable, "UnschedulableAndUnresolvable"},
    {StatusCode::Wait, "Wait"},
    {StatusCode::Skip, "Skip"}};

}  // namespace

std::string_view ToString(StatusCode c) { return NameOf(kStatusCodeNames, c, "Unknown"); }

FitError::FitError(std::string task, std::string node, StatusCode code, std::string reason,
                   std::string plugin)
    : task_uid(std::move(task)), node_name(std::move(node)) {
  PluginStatus s;
  s.code = code;
  if (!reason.empty()) s.reasons.push_back(std::move(reason));
  s.plugin = std::move(plugin);
  statuses.push_back(std::move(s));
}

std::vector<std::string> FitError::Reasons() const {
  std::vector<std::string> out;
  for (const auto& s : statuses)
    for (const auto& r : s.reasons) out.push_back(ReasonText(r));  // codes stay out of texts
  return out;
}

bool FitError::Contains(StatusCode c) const {
  for (const auto& s : statuses)
    if (s.code == c) return true;
  return false;
}

bool FitError::FailsAllocate() const {
  for (const auto& s : statuses)
    if (s.code != StatusCode::Success) return true;
  return false;
}

bool FitError::FailsPreempt() const {
  for (const auto& s : statuses)
    if (s.code != StatusCode::Success && s.code != StatusCode::Unschedulable) return true;
  return false;
}

std::string FitError::Message() const {
  return fmt::format("task {} on node {} fit failed: {}", task_uid, node_name,
                     fmt::join(Reasons(), ", "));
}

bool FitErrors::HasUnresolvable(std::string_view node_name) const {
  for (const auto& e : errors_)
    if (e.node_name == node_name && e.Contains(StatusCode::UnschedulableAndUnresolvable))
      return true;
  return false;
}

std::string FitErrors::Message() const {
  if (errors_.empty()) return ReasonText(error_);
  // Kubernetes counts each distinct reason once per node.
  std::map<std::string, int> histogram;
  for (const auto& e : errors_) {
    std::vector<std::string> reasons = e.Reasons();
    std::sort(reasons.begin(), reasons.end());
    reasons.erase(std::unique(reasons.begin(), reasons.end()), reasons.end());
    for (auto& r : reasons) ++histogram[r];
  }
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [reason, count] : histogram) sorted.emplace_back(count, reason);
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> parts;
  for (auto& [count, reason] : sorted) parts.push_back(fmt::format("{} {}", count, reason));
  int total = total_nodes_ >= 0 ? total_nodes_ : static_cast<int>(errors_.size());
  std::string head =
      error_.empty() ? fmt::format("0/{} nodes are available", total) : ReasonText(error_);
  std::string message = fmt::format("{}: {}.", head, fmt::join(parts, ", "));
  // Volcano names the HyperNode a job with a network topology was tried in.
  if (!hyper_node_.empty()) return fmt::format("In hyperNode {}: {}", hyper_node_, message);
  return message;
}

}  // namespace kiln
