// scheduler.conf loader: Volcano's format (volcano-semantics.md §1.1, §1.2), read strictly.
//
// Volcano unmarshals the YAML into Go structs, silently dropping unknown keys and skipping unknown
// plugins with a log line; a typo (`enableJobOrdr`) then quietly changes scheduling. Kiln rejects
// such a conf whole, naming the file, the line and the offending text, so a bad conf loses nothing
// and the last good one keeps running.

#include "runtime/conf.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/yaml_util.h"
#include "runtime/actions/action.h"

namespace kiln {

namespace {

using yaml::Reader;

constexpr std::string_view kDefaultConf =
    R"(actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
)";

// Action arguments Volcano defines (§1.2), with the actions that read each.
enum class ArgType { kBool, kInt };
struct ActionArgumentInfo {
  std::string_view key;
  ArgType type;
  std::vector<std::string_view> actions;
};

const std::vector<ActionArgumentInfo>& ActionArgumentTable() {
  static const std::vector<ActionArgumentInfo> table = {
      {"predicateErrorCacheEnable", ArgType::kBool, {"allocate", "backfill", "preempt", "reclaim"}},
      {"enableTopologyAwarePreemption", ArgType::kBool, {"preempt"}},
      {"topologyAwarePreemptWorkerNum", ArgType::kInt, {"preempt"}},
      {"minCandidateNodesPercentage", ArgType::kInt, {"preempt"}},
      {"minCandidateNodesAbsolute", ArgType::kInt, {"preempt"}},
      {"maxCandidateNodesAbsolute", ArgType::kInt, {"preempt"}},
      {"maxDomains", ArgType::kInt, {"gangpreempt", "gangreclaim"}},
      {"allowWholeBundle", ArgType::kBool, {"gangpreempt", "gangreclaim"}},
  };
  return table;
}

void SetActionArgument(ActionArguments& args, std::string_view key, bool b, int64_t i) {
  if (key == "predicateErrorCacheEnable") args.predicate_error_cache_enable = b;
  else if (key == "enableTopologyAwarePreemption") args.enable_topology_aware_preemption = b;
  else if (key == "topologyAwarePreemptWorkerNum") args.topology_aware_preempt_worker_num = static_cast<int>(i);
  else if (key == "minCandidateNodesPercentage") args.min_candidate_nodes_percentage = static_cast<int>(i);
  else if (key == "minCandidateNodesAbsolute") args.min_candidate_nodes_absolute = static_cast<int>(i);
  else if (key == "maxCandidateNodesAbsolute") args.max_candidate_nodes_absolute = static_cast<int>(i);
  else if (key == "maxDomains") args.max_domains = static_cast<int>(i);
  else if (key == "allowWholeBundle") args.allow_whole_bundle = b;
}

std::vector<std::string_view> KnownActionNames() {
  std::vector<std::string_view> names;
  for (std::string_view n : ActionNames()) names.push_back(n);
  return names;
}

// Checks one action name; `at` is the node holding the whole `actions` string and `column` the
// 1-based column of this name inside the source line (0 when unknown).
Status CheckActionName(const Reader& r, const YAML::Node& at, std::string_view name, int column) {
  auto fail = [&](std::string message) {
    Error e = r.Fail(at, std::move(message));
    if (column > 0) e.where.column = column;
    return Status(e);
  };
  if (name.empty()) return fail("empty action name in `actions` (two commas in a row, or a trailing comma?)");
  if (FindAction(name) != nullptr) return Status::Ok();
  if (IsVolcanoActionName(name))
    return fail(fmt::format("action `{}` is a Volcano action that Kiln does not support", name));
  return fail(fmt::format("unknown action `{}`{}", name, yaml::DidYouMean(name, KnownActionNames())));
}

Status ParseActions(const Reader& r, const YAML::Node& node, SchedulerConf& conf) {
  auto text = r.String(node, "`actions`");
  if (!text) return text.error();
  // Column of the string's first character: yaml-cpp marks the scalar's first token, which is the
  // quote for a quoted scalar. Block scalars span lines; for those only the line is reported.
  int base_column = 0;
  if (node.Tag() == "!" || node.Tag() == "?") {
    SourceLocation w = yaml::Where(node, r.file());
    if (w.column > 0) base_column = w.column + (yaml::IsQuoted(node) ? 1 : 0);
  }
  const std::string& s = *text;
  if (s.find('\n') != std::string::npos) base_column = 0;
  // `actions: ""` is allowed: the session opens and closes and no action runs.
  if (s.find_first_not_of(" \t") == std::string::npos) return Status::Ok();
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    size_t end = comma == std::string::npos ? s.size() : comma;
    size_t b = start, e = end;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
    std::string name = s.substr(b, e - b);
    int column = base_column > 0 ? base_column + static_cast<int>(b) : 0;
    if (Status st = CheckActionName(r, node, name, column); !st) return st;
    conf.actions.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

Result<ConfValue> ToConfValue(const Reader& r, const YAML::Node& node) {
  ConfValue v;
  v.where = yaml::Where(node, r.file());
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      v.value = std::monostate{};
      return v;
    case YAML::NodeType::Scalar: {
      const std::string& t = node.Scalar();
      v.text = t;
      if (yaml::IsQuoted(node)) {
        v.value = t;
      } else if (auto b = yaml::ParseBoolText(t)) {
        v.value = *b;
      } else if (auto i = yaml::ParseIntText(t)) {
        v.value = *i;
      } else if (auto d = yaml::ParseFloatText(t)) {
        v.value = *d;
      } else {
        v.value = t;
      }
      return v;
    }
    case YAML::NodeType::Sequence: {
      ConfValue::List list;
      for (const auto& item : node) {
        auto c = ToConfValue(r, item);
        if (!c) return c.error();
        list.push_back(std::move(*c));
      }
      v.value = std::move(list);
      return v;
    }
    case YAML::NodeType::Map: {
      if (Status s = r.ExpectAnyMap(node, "plugin arguments"); !s) return s.error();
      ConfValue::Map map;
      for (const auto& kv : node) {
        auto c = ToConfValue(r, kv.second);
        if (!c) return c.error();
        map.emplace_back(kv.first.Scalar(), std::move(*c));
      }
      v.value = std::move(map);
      return v;
    }
  }
  return v;
}

std::vector<std::string_view> PluginEntryKeys() {
  std::vector<std::string_view> keys = {"name", "arguments", "grants"};
  for (const auto& f : kPluginFlags) keys.push_back(f.key);
  return keys;
}

// `grants:` of a plugin entry: capability → `true` (any URL), `false` (no grant), or a URL
// prefix or list of them the plugin's requests must start with.
//   grants:
//     http: ["http://extender.kube-system:8080/"]
Status ParseGrants(const Reader& r, const YAML::Node& node, PluginOption& p) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsMap())
    return r.Fail(node, fmt::format("`grants` of plugin `{}` must be a map of capability to "
                                    "`true` or URL prefixes, got {}",
                                    p.name, yaml::KindName(node)));
  if (Status s = r.ExpectAnyMap(node, "grants"); !s) return s;
  std::vector<std::string_view> known(kCapabilities.begin(), kCapabilities.end());
  for (const auto& kv : node) {
    const std::string& cap = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), cap) == known.end())
      return r.Fail(kv.first, fmt::format("unknown capability `{}` in the grants of plugin `{}` "
                                          "(known: http){}",
                                          cap, p.name, yaml::DidYouMean(cap, known)));
    CapabilityGrant g;
    g.capability = cap;
    g.where = yaml::Where(kv.first, r.file());
    const YAML::Node& v = kv.second;
    std::vector<YAML::Node> prefixes;
    if (v.IsScalar()) {
      if (auto b = yaml::ParseBoolText(v.Scalar())) {
        if (*b) p.grants.push_back(std::move(g));
        continue;
      }
      prefixes.push_back(v);
    } else if (v.IsSequence()) {
      for (const auto& item : v) prefixes.push_back(item);
      if (prefixes.empty())
        return r.Fail(v, fmt::format("grant `{}` of plugin `{}` lists no URL prefix; write "
                                     "`{}: true` to allow any URL",
                                     cap, p.name, cap));
    } else {
      return r.Fail(v, fmt::format("grant `{}` of plugin `{}` must be `true`, `false` or URL "
                                   "prefixes, got {}",
                                   cap, p.name, yaml::KindName(v)));
    }
    for (const auto& item : prefixes) {
      auto text = r.String(item, fmt::format("URL prefix of grant `{}`", cap));
      if (!text) return text.error();
      std::string_view t = *text;
      // Only http and https: the same schemes http_post itself is limited to.
      if (!(t.starts_with("http://") || t.starts_with("https://")) ||
          t.size() <= (t.starts_with("https://") ? 8u : 7u))
        return r.Fail(item, fmt::format("URL prefix `{}` of grant `{}` must start with http:// "
                                        "or https:// and name a host",
                                        t, cap));
      g.url_prefixes.push_back(*text);
    }
    p.grants.push_back(std::move(g));
  }
  return Status::Ok();
}

Result<PluginOption> ParsePlugin(const Reader& r, const YAML::Node& node) {
  if (!node.IsMap())
    return r.Fail(node, fmt::format("a plugin entry must be a map with a `name`, got {}",
                                    yaml::KindName(node)));
  if (Status s = r.ExpectAnyMap(node, "plugin entry"); !s) return s.error();
  PluginOption p;
  p.where = yaml::Where(node, r.file());
  const YAML::Node name = node["name"];
  if (!name.IsDefined()) return r.Fail(node, "plugin entry has no `name`");
  auto n = r.String(name, "plugin `name`");
  if (!n) return n.error();
  if (n->empty()) return r.Fail(name, "plugin `name` is empty");
  p.name = *n;
  p.where = yaml::Where(name, r.file());

  std::vector<std::string_view> keys = PluginEntryKeys();
  for (const auto& kv : node) {
    const std::string& key = kv.first.Scalar();
    if (key == "name") continue;
    if (key == "arguments") {
      if (!kv.second.IsNull() && !kv.second.IsMap())
        return r.Fail(kv.second, fmt::format("`arguments` of plugin `{}` must be a map, got {}",
                                             p.name, yaml::KindName(kv.second)));
      auto v = ToConfValue(r, kv.second);
      if (!v) return v.error();
      if (auto* m = std::get_if<ConfValue::Map>(&v->value)) p.arguments = std::move(*m);
      continue;
    }
    if (key == "grants") {
      if (Status s = ParseGrants(r, kv.second, p); !s) return s.error();
      continue;
    }
    std::optional<PluginFlag> flag = FindPluginFlag(key);
    if (!flag)
      return r.Fail(kv.first, fmt::format("unknown plugin option `{}`{}", key,
                                          yaml::DidYouMean(key, keys)));
    auto b = r.Bool(kv.second, fmt::format("plugin option `{}`", key));
    if (!b) return b.error();
    p.flags[static_cast<int>(*flag)] = *b;
  }
  // ApplyPluginConfDefaults: unset flags become true, except the ones Volcano leaves nil.
  for (int i = 0; i < kPluginFlagCount; ++i)
    if (!p.flags[i].has_value() && kPluginFlags[i].defaulted_by_loader) p.flags[i] = true;
  return p;
}

Status ParseTiers(const Reader& r, const YAML::Node& node, SchedulerConf& conf) {
  if (Status s = r.ExpectList(node, "`tiers`"); !s) return s;
  std::map<std::string, int> seen;  // plugin name -> line of first entry
  for (const auto& tier_node : node) {
    if (Status s = r.ExpectMap(tier_node, "tier", {"plugins"}, /*allow_null=*/false); !s) return s;
    Tier tier;
    const YAML::Node plugins = tier_node["plugins"];
    if (plugins.IsDefined()) {
      if (Status s = r.ExpectList(plugins, "`plugins`"); !s) return s;
      for (const auto& pn : plugins) {
        auto p = ParsePlugin(r, pn);
        if (!p) return p.error();
        auto [it, inserted] = seen.emplace(p->name, p->where.line);
        if (!inserted)
          return Error{fmt::format("plugin `{}` is listed twice (first at line {})", p->name,
                                   it->second),
                       p->where};
        tier.plugins.push_back(std::move(*p));
      }
    }
    // Volcano rejects hierarchical DRF together with proportion in one tier: both would compute
    // queue shares, with contradicting answers.
    const PluginOption* hdrf = nullptr;
    const PluginOption* proportion = nullptr;
    for (const auto& p : tier.plugins) {
      if (p.name == "drf" && p.Enabled(PluginFlag::enableHierarchy)) hdrf = &p;
      if (p.name == "proportion") proportion = &p;
    }
    if (hdrf && proportion)
      return Error{fmt::format("proportion and drf with hierarchy enabled conflicts: drf has "
                               "`enableHierarchy: true` and proportion is in the same tier "
                               "(line {})",
                               proportion->where.line),
                   hdrf->where};
    conf.tiers.push_back(std::move(tier));
  }
  return Status::Ok();
}

Status ParseConfigurations(const Reader& r, const YAML::Node& node, SchedulerConf& conf) {
  if (Status s = r.ExpectList(node, "`configurations`"); !s) return s;
  std::map<std::string, int> seen;
  for (const auto& entry : node) {
    if (Status s = r.ExpectMap(entry, "configuration entry", {"name", "arguments"}); !s) return s;
    const YAML::Node name_node = entry["name"];
    if (!name_node.IsDefined()) return r.Fail(entry, "configuration entry has no `name`");
    auto name = r.String(name_node, "configuration `name`");
    if (!name) return name.error();
    if (!IsVolcanoActionName(*name) && FindAction(*name) == nullptr)
      return r.Fail(name_node, fmt::format("configuration for unknown action `{}`{}", *name,
                                           yaml::DidYouMean(*name, KnownActionNames())));
    auto [it, inserted] = seen.emplace(*name, yaml::Where(name_node, r.file()).line);
    if (!inserted)
      return r.Fail(name_node, fmt::format("action `{}` is configured twice (first at line {})",
                                           *name, it->second));
    ActionArguments args;
    const YAML::Node arguments = entry["arguments"];
    if (arguments.IsDefined()) {
      if (Status s = r.ExpectAnyMap(arguments, fmt::format("arguments of action `{}`", *name)); !s)
        return s;
      for (const auto& kv : arguments) {
        const std::string& key = kv.first.Scalar();
        std::vector<std::string_view> accepted;
        const ActionArgumentInfo* info = nullptr;
        for (const auto& a : ActionArgumentTable()) {
          if (std::find(a.actions.begin(), a.actions.end(), *name) == a.actions.end()) continue;
          accepted.push_back(a.key);
          if (a.key == key) info = &a;
        }
        if (info == nullptr) {
          std::string list;
          for (std::string_view a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
          return r.Fail(kv.first,
                        fmt::format("unknown argument `{}` for action `{}`{}{}", key, *name,
                                    yaml::DidYouMean(key, accepted),
                                    accepted.empty() ? std::string("; it takes no arguments")
                                                     : fmt::format(" (it takes: {})", list)));
        }
        std::string what = fmt::format("argument `{}` of action `{}`", key, *name);
        if (info->type == ArgType::kBool) {
          // Arguments.GetBool accepts a bool or a string strconv.ParseBool understands.
          std::optional<bool> b;
          if (kv.second.IsScalar()) {
            b = yaml::IsQuoted(kv.second) ? yaml::ParseGoBool(kv.second.Scalar())
                                          : yaml::ParseBoolText(kv.second.Scalar());
          }
          if (!b)
            return r.Fail(kv.second, fmt::format("{} must be true or false, got {}", what,
                                                 yaml::KindName(kv.second)));
          SetActionArgument(args, key, *b, 0);
        } else {
          auto i = r.Int(kv.second, what);
          if (!i) return i.error();
          if (*i < 0 || *i > 1'000'000)
            return r.Fail(kv.second, fmt::format("{} must be between 0 and 1000000, got {}", what, *i));
          SetActionArgument(args, key, false, *i);
        }
      }
    }
    conf.action_arguments[*name] = args;
  }
  return Status::Ok();
}

Status ParseMetrics(const Reader& r, const YAML::Node& node, SchedulerConf& conf) {
  if (Status s = r.ExpectAnyMap(node, "`metrics`"); !s) return s;
  if (node.IsNull()) return Status::Ok();
  for (const auto& kv : node) {
    auto v = r.String(kv.second, fmt::format("metrics `{}`", kv.first.Scalar()));
    if (!v) return v.error();
    conf.metrics[kv.first.Scalar()] = *v;
  }
  return Status::Ok();
}

}  // namespace

const ActionArguments& SchedulerConf::ArgumentsFor(std::string_view action) const {
  static const ActionArguments kDefaults;
  auto it = action_arguments.find(std::string(action));
  return it == action_arguments.end() ? kDefaults : it->second;
}

bool SchedulerConf::HasAction(std::string_view action) const {
  return std::find(actions.begin(), actions.end(), action) != actions.end();
}

Result<SchedulerConf> ParseSchedulerConf(std::string_view text, std::string file) {
  Reader r(file);
  auto doc = yaml::Load(text, file);
  if (!doc) return doc.error();
  const YAML::Node& root = *doc;
  if (root.IsNull()) return Error{"scheduler.conf is empty", SourceLocation{file, 1, 0}};
  if (!root.IsMap())
    return r.Fail(root, fmt::format("scheduler.conf must be a map with `actions` and `tiers`, got {}",
                                    yaml::KindName(root)));
  if (Status s = r.ExpectMap(root, "scheduler.conf", {"actions", "tiers", "configurations", "metrics"});
      !s)
    return s.error();
  SchedulerConf conf;
  conf.source_file = file;
  if (const YAML::Node n = root["actions"]; n.IsDefined() && !n.IsNull()) {
    if (Status s = ParseActions(r, n, conf); !s) return s.error();
  }
  if (const YAML::Node n = root["tiers"]; n.IsDefined()) {
    if (Status s = ParseTiers(r, n, conf); !s) return s.error();
  }
  if (const YAML::Node n = root["configurations"]; n.IsDefined()) {
    if (Status s = ParseConfigurations(r, n, conf); !s) return s.error();
  }
  if (const YAML::Node n = root["metrics"]; n.IsDefined()) {
    if (Status s = ParseMetrics(r, n, conf); !s) return s.error();
  }
  return conf;
}

std::string_view DefaultSchedulerConfText() { return kDefaultConf; }

}  // namespace kiln
