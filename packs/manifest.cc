#include "packs/manifest.h"

#include "runtime/conf.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "runtime/yaml_util.h"

namespace kiln::packs {

namespace {

bool IsPackName(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

// A plugin name as scheduler.conf and `policy "..."` write it; `/` is reserved for pack/plugin.
bool IsPluginName(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.';
  });
}

std::optional<int> ParseNumber(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;  // semver: no leading 0
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// JSON-style double-quoted string: valid YAML, one line, every byte visible.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt::format("\\x{:02x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool IsHexDigest(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

bool IsSafeRelativePath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.size() > 1024) return false;
  if (path.find('\\') != std::string_view::npos || path.find('\0') != std::string_view::npos)
    return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

SourceLocation PackManifest::At(const std::string& field) const {
  if (auto it = where.find(field); it != where.end()) return it->second;
  return SourceLocation{manifest_file};
}

std::vector<std::string> PackManifest::ReferencedFiles() const {
  std::set<std::string> all;
  for (const auto& p : policies) all.insert(p.file);
  if (!conf.empty()) all.insert(conf);
  all.insert(tests.begin(), tests.end());
  all.insert(extra.begin(), extra.end());
  return {all.begin(), all.end()};
}

Result<SemVer> ParseSemVer(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return Error{fmt::format("`{}` is not a semantic version (MAJOR.MINOR.PATCH): {}", text, why),
                 {}};
  };
  std::string_view core = text;
  SemVer v;
  if (size_t plus = core.find('+'); plus != std::string_view::npos) core = core.substr(0, plus);
  if (size_t dash = core.find('-'); dash != std::string_view::npos) {
    v.pre = std::string(core.substr(dash + 1));
    core = core.substr(0, dash);
    if (v.pre.empty()) return bad("empty pre-release");
  }
  int parts[3];
  for (int i = 0; i < 3; ++i) {
    size_t dot = core.find('.');
    std::string_view num = i < 2 ? core.substr(0, dot) : core;
    if (i < 2 && dot == std::string_view::npos) return bad("expected three numbers");
    auto n = ParseNumber(num);
    if (!n) return bad(fmt::format("`{}` is not a number without leading zeros", num));
    parts[i] = *n;
    if (i < 2) core = core.substr(dot + 1);
  }
  v.major = parts[0];
  v.minor = parts[1];
  v.patch = parts[2];
  return v;
}

int Compare(const SemVer& a, const SemVer& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.pre == b.pre) return 0;
  if (a.pre.empty()) return 1;  // 1.0.0-rc1 < 1.0.0
  if (b.pre.empty()) return -1;
  return a.pre < b.pre ? -1 : 1;  // identifiers compared as text: enough for rc1 < rc2
}

Result<bool> VersionSatisfies(std::string_view range, const SemVer& version) {
  std::string text(range);
  std::replace(text.begin(), text.end(), ',', ' ');
  bool any = false;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    if (i >= text.size()) break;
    size_t end = text.find(' ', i);
    if (end == std::string::npos) end = text.size();
    std::string_view term(text.data() + i, end - i);
    i = end;
    std::string_view op;
    for (std::string_view candidate : {">=", "<=", ">", "<", "=", "^", "~"}) {
      if (term.substr(0, candidate.size()) == candidate) {
        op = candidate;
        break;
      }
    }
    std::string ver(term.substr(op.size()));
    // `0.1` means 0.1.0 and `1` means 1.0.0 in a range.
    auto dots = std::count(ver.begin(), ver.end(), '.');
    if (ver.find_first_of("-+") == std::string::npos)
      for (; dots < 2; ++dots) ver += ".0";
    auto bound = ParseSemVer(ver);
    if (!bound)
      return Error{fmt::format("bad version range `{}`: {}", range, bound.error().message), {}};
    int c = Compare(version, *bound);
    bool ok = true;
    if (op == ">=") ok = c >= 0;
    else if (op == "<=") ok = c <= 0;
    else if (op == ">") ok = c > 0;
    else if (op == "<") ok = c < 0;
    else if (op == "^")
      ok = c >= 0 && version.major == bound->major &&
           (bound->major != 0 || version.minor == bound->minor);
    else if (op == "~") ok = c >= 0 && version.major == bound->major && version.minor == bound->minor;
    else ok = c == 0;
    if (!ok) return false;
    any = true;
  }
  if (!any) return Error{fmt::format("bad version range `{}`: no comparator", range), {}};
  return true;
}

Result<PackManifest> ParseManifest(std::string_view text, std::string file) {
  auto doc = yaml::Load(text, file);
  if (!doc) return doc.error();
  yaml::Reader r(file);
  const YAML::Node& root = *doc;
  if (Status s = r.ExpectMap(root, "pack manifest",
                             {"name", "version", "description", "language", "policies", "conf",
                              "tests", "extra", "files"});
      !s)
    return s.error();
  PackManifest m;
  m.manifest_file = file;
  m.where["manifest"] = yaml::Where(root, file);

  auto required = [&](const char* key, std::string* out) -> Status {
    const YAML::Node n = root[key];
    if (!n.IsDefined() || n.IsNull())
      return Error{fmt::format("the manifest has no `{}`", key), SourceLocation{file, 1, 1}};
    auto v = r.String(n, fmt::format("`{}`", key));
    if (!v) return v.error();
    *out = *v;
    m.where[key] = yaml::Where(n, file);
    return Status::Ok();
  };
  if (Status s = required("name", &m.name); !s) return s.error();
  if (!IsPackName(m.name))
    return r.Fail(root["name"], fmt::format("pack name `{}` must be 1-63 lowercase letters, digits "
                                            "and inner dashes (it prefixes plugin names: "
                                            "`{}/plugin`)",
                                            m.name, m.name));
  if (Status s = required("version", &m.version); !s) return s.error();
  if (auto v = ParseSemVer(m.version); !v) return r.Fail(root["version"], v.error().message);
  if (Status s = required("language", &m.language); !s) return s.error();
  if (auto ok = VersionSatisfies(m.language, SemVer{}); !ok)
    return r.Fail(root["language"], ok.error().message);
  if (const YAML::Node d = root["description"]; d.IsDefined() && !d.IsNull()) {
    auto v = r.String(d, "`description`");
    if (!v) return v.error();
    m.description = *v;
  }

  auto path = [&](const YAML::Node& n, const std::string& what) -> Result<std::string> {
    auto v = r.String(n, what);
    if (!v) return v.error();
    if (!IsSafeRelativePath(*v))
      return r.Fail(n, fmt::format("{} `{}` must be a relative path inside the pack (no leading "
                                   "`/`, no `..`)",
                                   what, *v));
    if (*v == kManifestFile || *v == kSignatureFile)
      return r.Fail(n, fmt::format("{} `{}` is reserved for the pack itself", what, *v));
    return v;
  };

  const YAML::Node policies = root["policies"];
  if (!policies.IsDefined() || policies.IsNull() || (policies.IsSequence() && policies.size() == 0))
    return Error{"the manifest lists no `policies` (a pack ships at least one)",
                 policies.IsDefined() ? yaml::Where(policies, file) : SourceLocation{file, 1, 1}};
  if (Status s = r.ExpectList(policies, "`policies`"); !s) return s.error();
  std::map<std::string, int> plugin_lines;
  for (const YAML::Node& p : policies) {
    if (Status s = r.ExpectMap(p, "policy entry", {"file", "plugin", "uses"}); !s) return s.error();
    if (!p["file"].IsDefined()) return r.Fail(p, "policy entry has no `file`");
    if (!p["plugin"].IsDefined()) return r.Fail(p, "policy entry has no `plugin`");
    PackPolicy pol;
    auto f = path(p["file"], "policy `file`");
    if (!f) return f.error();
    pol.file = *f;
    auto plugin = r.String(p["plugin"], "`plugin`");
    if (!plugin) return plugin.error();
    if (!IsPluginName(*plugin))
      return r.Fail(p["plugin"], fmt::format("plugin name `{}` must be letters, digits, `-`, `_` "
                                             "or `.`", *plugin));
    pol.plugin = *plugin;
    if (const YAML::Node u = p["uses"]; u.IsDefined() && !u.IsNull()) {
      if (Status s = r.ExpectList(u, "`uses`"); !s) return s.error();
      for (const YAML::Node& c : u) {
        auto cap = r.String(c, "capability in `uses`");
        if (!cap) return cap.error();
        if (std::find(kCapabilities.begin(), kCapabilities.end(), *cap) == kCapabilities.end())
          return r.Fail(c, fmt::format("unknown capability `{}` (known: http)", *cap));
        if (std::find(pol.uses.begin(), pol.uses.end(), *cap) != pol.uses.end())
          return r.Fail(c, fmt::format("capability `{}` is listed twice", *cap));
        pol.uses.push_back(*cap);
      }
      std::sort(pol.uses.begin(), pol.uses.end());
    }
    pol.where = yaml::Where(p, file);
    if (auto [it, fresh] = plugin_lines.emplace(pol.plugin, pol.where.line); !fresh)
      return r.Fail(p["plugin"], fmt::format("plugin `{}` is listed twice (first at line {})",
                                             pol.plugin, it->second));
    m.policies.push_back(std::move(pol));
  }
  if (const YAML::Node c = root["conf"]; c.IsDefined() && !c.IsNull()) {
    auto f = path(c, "`conf`");
    if (!f) return f.error();
    m.conf = *f;
    m.where["conf"] = yaml::Where(c, file);
  }
  for (const char* key : {"tests", "extra"}) {
    const YAML::Node list = root[key];
    if (!list.IsDefined() || list.IsNull()) continue;
    if (Status s = r.ExpectList(list, fmt::format("`{}`", key)); !s) return s.error();
    auto& out = std::string_view(key) == "tests" ? m.tests : m.extra;
    for (const YAML::Node& t : list) {
      auto f = path(t, fmt::format("`{}` entry", key));
      if (!f) return f.error();
      m.where[fmt::format("{}[{}]", key, out.size())] = yaml::Where(t, file);
      out.push_back(*f);
    }
  }
  if (const YAML::Node files = root["files"]; files.IsDefined() && !files.IsNull()) {
    if (Status s = r.ExpectAnyMap(files, "`files`"); !s) return s.error();
    m.where["files"] = yaml::Where(files, file);
    for (const auto& kv : files) {
      auto name = path(kv.first, "`files` key");
      if (!name) return name.error();
      auto digest = r.String(kv.second, fmt::format("sha256 of `{}`", *name));
      if (!digest) return digest.error();
      std::string hex = *digest;
      if (hex.rfind("sha256:", 0) == 0) hex = hex.substr(7);
      if (!IsHexDigest(hex))
        return r.Fail(kv.second, fmt::format("sha256 of `{}` must be `sha256:` and 64 lowercase "
                                             "hex digits, got `{}`",
                                             *name, *digest));
      m.where["files." + *name] = yaml::Where(kv.first, file);
      m.files[*name] = hex;
    }
  }
  return m;
}

std::string CanonicalManifest(const PackManifest& m) {
  std::string out;
  out += fmt::format("name: {}\n", Quote(m.name));
  out += fmt::format("version: {}\n", Quote(m.version));
  out += fmt::format("description: {}\n", Quote(m.description));
  out += fmt::format("language: {}\n", Quote(m.language));
  out += "policies:\n";
  for (const auto& p : m.policies) {
    out += fmt::format("- file: {}\n  plugin: {}\n", Quote(p.file), Quote(p.plugin));
    // Only when there are some: manifests of packs that use no capability keep their bytes.
    if (!p.uses.empty()) {
      out += "  uses:\n";
      for (const auto& c : p.uses) out += fmt::format("  - {}\n", Quote(c));
    }
  }
  if (!m.conf.empty()) out += fmt::format("conf: {}\n", Quote(m.conf));
  if (!m.tests.empty()) {
    out += "tests:\n";
    for (const auto& t : m.tests) out += fmt::format("- {}\n", Quote(t));
  }
  if (!m.extra.empty()) {
    out += "extra:\n";
    for (const auto& t : m.extra) out += fmt::format("- {}\n", Quote(t));
  }
  if (!m.files.empty()) {
    out += "files:\n";
    for (const auto& [path, hex] : m.files)
      out += fmt::format("  {}: \"sha256:{}\"\n", Quote(path), hex);
  }
  return out;
}

}  // namespace kiln::packs
