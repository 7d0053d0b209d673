#pragma once
// A scenario file (scenario-format.md, a public contract) loaded strictly into plain structs.
//
// The loader checks every key, type, quantity and timestamp, names defined twice, and the names
// `expect` checks: what is malformed as a file is an Error with file:line. Defaults and the
// cluster's own references go through CompleteCluster (runtime/cluster_spec.h), the path the
// Kubernetes binding shares: a reference that does not resolve is a warning, handled as Volcano's
// cache does. The defaults:
//   * queue `default` (weight 1) exists unless the scenario defines it;
//   * a node whose allocatable omits `pods` gets 110; `capacity` defaults to `allocatable`;
//   * a pod without `group` gets its own single-member PodGroup, named as Volcano's controller
//     names it (`podgroup-<pod uid>`), in queue `default`, minResources = the pod's requests;
//   * a PodGroup without `minMember` gets 1, without `queue` the queue `default`;
//   * namespaces default to `default`; every `creationTimestamp` defaults to the scenario's `now`
//     (all equal), and `now` defaults to 2025-01-01T00:00:00Z;
//   * a pod's priority: `priority` if written, else its priority class's value, else the global
//     default class's value, else unset (Volcano's TaskInfo then uses 1).
// UIDs follow the contract: pod `<namespace>-<name>`, job `<namespace>/<podgroup>`.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/calls.h"
#include "runtime/cluster_spec.h"
#include "runtime/model.h"
#include "runtime/resource.h"
#include "runtime/status.h"

namespace kiln {

// What the FIRST session must decide. An absent key is not checked.
struct ExpectSpec {
  std::optional<std::map<std::string, std::string>> binds;  // pod key -> node
  std::optional<int64_t> bind_count;
  std::optional<std::set<std::string>> evictions;
  std::optional<int64_t> eviction_count;
  std::optional<std::map<std::string, std::string>> pipelined;
  std::optional<std::map<std::string, std::string>> pod_group_phases;  // job uid -> phase
  // Sorted counts of this session's binds per lowest-tier HyperNode of the bound node.
  std::optional<std::vector<int64_t>> bind_counts_by_leaf_hyper_node;
  // Kiln extension: exact map of pod key -> unschedulable reason text.
  std::optional<std::map<std::string, std::string>> unschedulable;
  // Kiln extension: the loader's warnings (ClusterWarning::message), exactly, in order.
  std::optional<std::vector<std::string>> warnings;
  // The scenario's `calls` with the results they must give (runtime/calls.h).
  std::optional<std::vector<CallSpec>> calls;
  // The annotations plugins set for binds (SessionResult::pod_annotations): each listed pod's
  // exactly (`{}`: none); pods not listed are not checked.
  std::optional<std::map<std::string, std::map<std::string, std::string>>> pod_annotations;
  SourceLocation where;

  bool empty() const {
    return !binds && !bind_count && !evictions && !eviction_count && !pipelined &&
           !pod_group_phases && !unschedulable && !warnings && !bind_counts_by_leaf_hyper_node &&
           !calls && !pod_annotations;
  }
};

// Kiln extension, `replay:`: how many sessions `kiln simulate` runs the scenario for, one every
// `period`, when the command line does not say (--cycles, --until), and what later sessions
// must decide (`expect` above is the first session's).
struct ReplaySpec {
  int64_t cycles = 1;
  int64_t period = 1'000'000'000;  // nanoseconds
  std::map<int64_t, ExpectSpec> expect;  // session index (1 = the second session) → expectation
  SourceLocation where;
};

struct ScenarioSpec {
  std::string file;
  std::string name;
  std::string conf_text;  // empty when the scenario has no `conf` (the default conf applies)
  bool has_conf = false;
  // Where the conf text starts in `file`, so conf errors point into the scenario: line of the
  // conf's first line and the column its text is indented to (0 when not a block scalar).
  int conf_first_line = 0;
  int conf_indent = 0;
  SourceLocation conf_where;
  TimeNs now = 0;
  ClusterSpec cluster;
  // References in the cluster that do not resolve (CompleteCluster): reported, not refused.
  std::vector<ClusterWarning> warnings;
  std::optional<ExpectSpec> expect;
  std::optional<ReplaySpec> replay;
  // Direct extension-point calls run in the first session (runtime/calls.h). When the scenario
  // writes only `expect.calls`, those entries are the calls.
  std::vector<CallSpec> calls;
  // Pods named by `calls` whose `group` the scenario does not define: tasks of no job, as a unit
  // test passes them. They are not part of the cluster.
  std::vector<PodSpec> detached_pods;
  std::string notes;
  std::string source;
};

// Loads scenario YAML text. `file` names it in errors.
Result<ScenarioSpec> ParseScenario(std::string_view text, std::string file);
// Reads and parses a scenario file.
Result<ScenarioSpec> LoadScenarioFile(const std::string& path);

// Reads a whole file; Error "cannot read FILE: reason" when it cannot.
Result<std::string> ReadTextFile(const std::string& path);

// Maps an error in the scenario's embedded conf text to the scenario file's lines and columns.
Error MapConfError(const ScenarioSpec& spec, Error error);

}  // namespace kiln
