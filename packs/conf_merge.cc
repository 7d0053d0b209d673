#include "packs/conf_merge.h"

#include <fmt/format.h>

#include "runtime/conf.h"
#include "runtime/scheduler.h"
#include "runtime/yaml_util.h"

namespace kiln::packs {

namespace {

std::string NameOf(const YAML::Node& entry) {
  if (!entry.IsMap() || !entry["name"] || !entry["name"].IsScalar()) return "";
  return entry["name"].Scalar();
}

// The index of the plugin named `name` in `plugins`, or -1.
int Find(const YAML::Node& plugins, const std::string& name) {
  for (size_t i = 0; i < plugins.size(); ++i)
    if (NameOf(plugins[i]) == name) return static_cast<int>(i);
  return -1;
}

Status CheckTiers(const YAML::Node& root, const std::string& file) {
  yaml::Reader r(file);
  if (!root.IsMap()) return r.Fail(root, "a scheduler.conf must be a map");
  const YAML::Node tiers = root["tiers"];
  if (!tiers) return Status::Ok();
  if (!tiers.IsSequence()) return r.Fail(tiers, "`tiers` must be a list");
  for (const YAML::Node& t : tiers) {
    if (!t.IsMap()) return r.Fail(t, "a tier must be a map with `plugins`");
    if (t["plugins"] && !t["plugins"].IsSequence()) return r.Fail(t["plugins"], "`plugins` must be a list");
  }
  return Status::Ok();
}

}  // namespace

Result<ConfMerge> MergePackConf(std::string_view pack_name, std::string_view pack_conf,
                                const std::string& pack_file, std::string_view conf,
                                const std::string& conf_file) {
  auto pack_root = yaml::Load(pack_conf, pack_file);
  if (!pack_root) return pack_root.error();
  auto root = yaml::Load(conf, conf_file);
  if (!root) return root.error();
  if (Status s = CheckTiers(*pack_root, pack_file); !s) return s.error();
  if (Status s = CheckTiers(*root, conf_file); !s) return s.error();
  ConfMerge out;
  std::string prefix = std::string(pack_name) + "/";
  YAML::Node tiers = (*root)["tiers"];
  if (!tiers) {
    tiers = YAML::Node(YAML::NodeType::Sequence);
    (*root)["tiers"] = tiers;
  }
  const YAML::Node pack_tiers = (*pack_root)["tiers"];
  for (size_t ti = 0; pack_tiers && ti < pack_tiers.size(); ++ti) {
    const YAML::Node pack_plugins = pack_tiers[ti]["plugins"];
    for (size_t pi = 0; pack_plugins && pi < pack_plugins.size(); ++pi) {
      std::string name = NameOf(pack_plugins[pi]);
      if (name.rfind(prefix, 0) != 0) continue;
      bool present = false;
      for (const YAML::Node& t : tiers)
        if (t["plugins"] && Find(t["plugins"], name) >= 0) present = true;
      if (present) {
        out.kept.push_back(name);
        continue;
      }
      while (tiers.size() <= ti) {
        YAML::Node t(YAML::NodeType::Map);
        t["plugins"] = YAML::Node(YAML::NodeType::Sequence);
        tiers.push_back(t);
      }
      YAML::Node tier = tiers[ti];
      if (!tier["plugins"]) tier["plugins"] = YAML::Node(YAML::NodeType::Sequence);
      YAML::Node plugins = tier["plugins"];
      // Where the pack's example puts it relative to plugins the operator's tier also has.
      int at = -1;
      std::string where = "at the end";
      for (int k = static_cast<int>(pi) - 1; k >= 0 && at < 0; --k)
        if (int i = Find(plugins, NameOf(pack_plugins[k])); i >= 0) {
          at = i + 1;
          where = "after " + NameOf(pack_plugins[k]);
        }
      for (size_t k = pi + 1; k < pack_plugins.size() && at < 0; ++k)
        if (int i = Find(plugins, NameOf(pack_plugins[k])); i >= 0) {
          at = i;
          where = "before " + NameOf(pack_plugins[k]);
        }
      YAML::Node rebuilt(YAML::NodeType::Sequence);
      for (size_t i = 0; i < plugins.size(); ++i) {
        if (static_cast<int>(i) == at) rebuilt.push_back(YAML::Clone(pack_plugins[pi]));
        rebuilt.push_back(plugins[i]);
      }
      if (at < 0 || at == static_cast<int>(plugins.size()))
        rebuilt.push_back(YAML::Clone(pack_plugins[pi]));
      tier["plugins"] = rebuilt;
      // A capability grant the pack's example gives its plugin comes along with the entry; the
      // note says so, since granting `http` is the operator's decision (docs/safety.md).
      std::string grants;
      if (const YAML::Node g = pack_plugins[pi]["grants"]; g && g.IsMap())
        for (const auto& kv : g) grants += (grants.empty() ? "" : ", ") + kv.first.Scalar();
      out.added.push_back(fmt::format("{} (tier {}, {}{})", name, ti + 1, where,
                                      grants.empty() ? "" : "; grants " + grants + ": review them"));
    }
  }
  YAML::Emitter emitter;
  emitter << *root;
  out.text = std::string(emitter.c_str()) + "\n";
  return out;
}

Status CheckConfLoads(std::string_view text, const std::string& file, PolicyProvider& provider) {
  auto conf = ParseSchedulerConf(text, file);
  if (!conf) return conf.error();
  if (auto registry = ResolvePlugins(*conf, provider); !registry) return registry.error();
  return Status::Ok();
}

}  // namespace kiln::packs
