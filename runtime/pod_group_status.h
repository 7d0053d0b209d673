#pragma once
// PodGroup status comparisons shared by the cluster bindings.

#include <vector>

#include "runtime/model.h"

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

}  // namespace kiln
