#pragma once
// PodGroup status comparisons shared by the cluster bindings.

#include <string>
#include <string_view>
#include <vector>

#include "runtime/model.h"
#include "runtime/reason_codes.h"

namespace kiln {

// A PodGroup's conditions as Volcano compares them before writing (isPodGroupStatusUpdated) and
// as a session reads them: lastTransitionTime and transitionID only say when they were set.
inline bool SameConditions(const std::vector<PodGroupCondition>& a,
                           const std::vector<PodGroupCondition>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].status != b[i].status || a[i].reason != b[i].reason ||
        a[i].message != b[i].message)
      return false;
  return true;
}

// Kiln's addition to the conditions a binding writes (docs/reasons.md, "PodGroup conditions"): a
// PodGroup enqueue refused gets an `Unschedulable` condition whose reason is the refusal's stable
// code, where Volcano writes none of its own: Volcano's gang writes `NotEnoughResources` for a
// PodGroup with pods, and nothing for one without. A Volcano condition is never replaced; Kiln's
// own (known by its message) is replaced by the next refusal and dropped once the PodGroup is
// admitted.
inline constexpr std::string_view kAdmissionConditionPrefix = "enqueue did not admit the PodGroup: ";

inline void SetAdmissionCondition(std::vector<PodGroupCondition>& conditions,
                                  const AdmissionRefusal* refusal, TimeNs now,
                                  const std::string& transition_id) {
  auto ours = [](const PodGroupCondition& c) {
    return c.type == "Unschedulable" && c.message.starts_with(kAdmissionConditionPrefix);
  };
  bool volcano_unschedulable = false;
  for (const PodGroupCondition& c : conditions)
    volcano_unschedulable |= c.type == "Unschedulable" && !ours(c);
  if (refusal == nullptr || volcano_unschedulable) {
    std::erase_if(conditions, ours);
    return;
  }
  PodGroupCondition c;
  c.type = "Unschedulable";
  c.status = "True";
  c.transition_id = transition_id;
  c.last_transition_time = now;
  c.reason = refusal->code;
  c.message = std::string(kAdmissionConditionPrefix) +
              (refusal->plugin.empty() ? std::string() : refusal->plugin + ": ") + refusal->message;
  for (PodGroupCondition& old : conditions) {
    if (!ours(old)) continue;
    // The same refusal keeps its transition time, so an unchanged status is not written again.
    if (old.reason == c.reason && old.message == c.message) return;
    old = std::move(c);
    return;
  }
  conditions.push_back(std::move(c));
}

}  // namespace kiln
