#pragma once
// A cluster as a scenario file (docs/scenario-format.md): what `GET /snapshot` on `kiln serve`
// answers and `kiln snapshot` saves, so that `kiln simulate` replays the live cluster. Reading the
// text back with the scenario loader gives the same ClusterSpec, field by field
// (ScenarioWriter.* tests run every scenario in the repository through it).
//
// What it leaves out:
//   * what the loader adds by itself: the implicit `default` queue and the one-pod PodGroups of
//     pods without a group;
//   * anything that may carry a secret: no Secret objects or environment values exist in a
//     ClusterSpec, and annotations that copy a whole object (kubectl's last-applied
//     configuration) are dropped;
//   * what a scenario has no key for: PodGroup status conditions, and the scheduler's memory
//     across sessions (nominated HyperNodes, policy state kept across sessions).
// Pods of the scheduler (not `foreign`) are written without `schedulerName`, so the simulator,
// which answers to Volcano's default name, takes them as its own whatever name `kiln serve`
// answers to; other schedulers' pods keep theirs. (A pod of another scheduler that names
// `volcano` would therefore become the simulator's: keep `--scheduler-name volcano` to avoid it.)

#include <string>
#include <vector>

#include "runtime/cluster_spec.h"

namespace kiln::kube {

struct ScenarioHeader {
  std::string name = "snapshot";
  std::string notes;      // free text (where and when the snapshot was taken)
  std::string conf_text;  // the scheduler.conf in force; empty: none written (the default applies)
  TimeNs now = 0;         // the session clock
};

// Annotations never written: they copy a whole object, so they may hold what the snapshot must
// not (environment values of kubectl-applied pods).
inline constexpr std::string_view kDroppedAnnotations[] = {
    "kubectl.kubernetes.io/last-applied-configuration",
};

// `cluster` (CompleteCluster's output) as scenario YAML.
std::string WriteScenario(const ClusterSpec& cluster, const ScenarioHeader& header);

}  // namespace kiln::kube
