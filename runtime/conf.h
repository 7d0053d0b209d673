#pragma once
// scheduler.conf in Volcano's format (volcano-semantics.md §1): the parsed, validated form.
// The loader (conf.cc) turns YAML text into a SchedulerConf or an Error with file, line and the
// offending text; nothing here is half-applied.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/extension_points.h"
#include "runtime/status.h"

namespace kiln {

// One plugin flag (`enableJobOrder`, ...), derived from KILN_PLUGIN_FLAGS.
enum class PluginFlag : uint8_t {
#define KILN_X(key, defaulted) key,
  KILN_PLUGIN_FLAGS(KILN_X)
#undef KILN_X
};

struct PluginFlagInfo {
  std::string_view key;      // "enableJobOrder"
  bool defaulted_by_loader;  // the YAML loader turns an unset flag into true
};

inline constexpr std::array kPluginFlags = {
#define KILN_X(key, defaulted) PluginFlagInfo{#key, defaulted},
    KILN_PLUGIN_FLAGS(KILN_X)
#undef KILN_X
};
inline constexpr int kPluginFlagCount = static_cast<int>(kPluginFlags.size());

// The flag whose YAML key is `key`, or std::nullopt.
constexpr std::optional<PluginFlag> FindPluginFlag(std::string_view key) {
  for (int i = 0; i < kPluginFlagCount; ++i)
    if (kPluginFlags[i].key == key) return static_cast<PluginFlag>(i);
  return std::nullopt;
}

// Every gated extension point names a real flag: the two tables cannot drift apart.
static_assert([] {
  for (const auto& p : kExtensionPoints)
    if (!p.flag.empty() && !FindPluginFlag(p.flag)) return false;
  return true;
}());

// The flag gating `point`, or std::nullopt when the point is always on.
constexpr std::optional<PluginFlag> GatingFlag(ExtensionPoint point) {
  return Info(point).flag.empty() ? std::nullopt : FindPluginFlag(Info(point).flag);
}

// A second flag that also enables `point` (OR): enabledAllocatable for Volcano's
// SimulateAddTask/SimulateRemoveTask, which enablePreemptable enables too.
constexpr std::optional<PluginFlag> AlternativeGatingFlag(ExtensionPoint point) {
  if (point == ExtensionPoint::SimulateRemoveTask || point == ExtensionPoint::SimulateAddTask)
    return PluginFlag::enabledAllocatable;
  return std::nullopt;
}

// A plugin argument value as written in YAML, with where it was written, so that a compiled
// policy's argument schema can report "plugin binpack, argument binpack.weight (line 12): ...".
struct ConfValue {
  using List = std::vector<ConfValue>;
  using Map = std::vector<std::pair<std::string, ConfValue>>;  // keeps the order written
  std::variant<std::monostate, bool, int64_t, double, std::string, List, Map> value;
  SourceLocation where;
  // The YAML text of a scalar exactly as written ("1.2", "true", "10m").
  std::string text;
};

// A capability scheduler.conf grants one plugin entry (`grants:`, docs/safety.md): a policy
// that declares `uses CAP;` loads only under an entry that grants CAP. For `http`,
// `url_prefixes` are the URLs its requests may go to (each request's URL must start with one of
// them); empty = any http:// or https:// URL (`http: true`).
struct CapabilityGrant {
  std::string capability;
  std::vector<std::string> url_prefixes;
  SourceLocation where;
};

// The capabilities a policy may declare with `uses` (compiler/passes/declare_globals.cc).
inline constexpr std::array<std::string_view, 1> kCapabilities = {"http"};

struct PluginOption {
  std::string name;
  // Flags as written; std::nullopt = not written. The loader fills loader defaults into
  // `flags`, so `Enabled()` reads Volcano's isEnabled(flag) after ApplyPluginConfDefaults.
  std::array<std::optional<bool>, kPluginFlagCount> flags{};
  ConfValue::Map arguments;
  SourceLocation where;  // the `- name:` line
  // `grants:` (a Kiln key; Volcano's loader ignores keys it does not know).
  std::vector<CapabilityGrant> grants;

  // The grant of `capability`, or nullptr.
  const CapabilityGrant* Grant(std::string_view capability) const {
    for (const auto& g : grants)
      if (g.capability == capability) return &g;
    return nullptr;
  }

  bool Enabled(PluginFlag f) const {
    const auto& v = flags[static_cast<int>(f)];
    return v.has_value() && *v;
  }
};

struct Tier {
  std::vector<PluginOption> plugins;
};

// Per-action arguments (`configurations:`), with Volcano's defaults (§1.2). Every action reads
// the same struct; each reads only its own fields.
struct ActionArguments {
  bool predicate_error_cache_enable = true;
  bool enable_topology_aware_preemption = false;
  int topology_aware_preempt_worker_num = 16;
  int min_candidate_nodes_percentage = 10;
  int min_candidate_nodes_absolute = 1;
  int max_candidate_nodes_absolute = 100;
  int max_domains = 8;
  bool allow_whole_bundle = true;
};

struct SchedulerConf {
  std::vector<std::string> actions;  // in execution order
  std::vector<Tier> tiers;
  std::map<std::string, ActionArguments> action_arguments;  // by action name
  std::map<std::string, std::string> metrics;
  std::string source_file;

  // The arguments for `action` (defaults when the conf has no `configurations` entry for it).
  const ActionArguments& ArgumentsFor(std::string_view action) const;
  bool HasAction(std::string_view action) const;
};

// Parses and validates scheduler.conf text. `file` names the source in errors.
// Validation: unknown top-level key, unknown action, unknown plugin flag key, a flag that is not
// a bool, unknown action argument or a value of the wrong type, drf-with-hierarchy together with
// proportion in one tier. Plugin names and plugin arguments are checked later, against the
// policies the names resolve to (the loader does not know the policies).
Result<SchedulerConf> ParseSchedulerConf(std::string_view text, std::string file);

// Volcano's built-in fallback conf (pkg/scheduler/util.go DefaultSchedulerConf).
std::string_view DefaultSchedulerConfText();

}  // namespace kiln
