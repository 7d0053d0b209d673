#pragma once
// Merging a pack's plugins into a cluster's scheduler.conf (`kiln pack conf --into`).
//
// A pack's conf is an example: the cluster's own conf is the operator's. The merge takes, from the
// pack's conf, every plugin entry named `pack/...` (with its flags and arguments) and puts it into
// the same tier of the operator's conf, next to the plugin it follows in the pack's example when
// the operator's tier has that plugin (else before the one it precedes, else at the tier's end; a
// missing tier is added). An entry the operator's conf already names is left as the operator has
// it. Everything else of the operator's conf is kept; comments are not (the result is re-emitted).

#include <string>
#include <string_view>
#include <vector>

#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln::packs {

struct ConfMerge {
  std::string text;                // the merged scheduler.conf
  std::vector<std::string> added;  // "team-fairness/team-share (tier 2, after drf)"
  std::vector<std::string> kept;   // pack plugins the conf already had
};

// `pack_conf` names the pack's plugins `pack_name/...`; both texts are scheduler.conf YAML (errors
// name `pack_file` or `conf_file` with the line).
Result<ConfMerge> MergePackConf(std::string_view pack_name, std::string_view pack_conf,
                                const std::string& pack_file, std::string_view conf,
                                const std::string& conf_file);

// Whether scheduler.conf `text` loads with the plugins of `provider` (a pack's, via
// MakePackProvider): the conf's own validation, then every plugin name resolved and its arguments
// checked against the policy's schema. Errors name `file` and the line.
Status CheckConfLoads(std::string_view text, const std::string& file, PolicyProvider& provider);

}  // namespace kiln::packs
