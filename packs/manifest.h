#pragma once
// A policy pack's manifest, `kiln-pack.yaml` (docs/packs.md): what the pack is, which policies it
// ships under which plugin names, its example conf and tests, and the sha256 of every file.
//
// `kiln pack build` reads a hand-written manifest (without `files`), fills in the digests and
// writes it back in canonical form: fixed key order, every string quoted, files sorted. Those
// canonical bytes are what the pack's Ed25519 signature covers, so the same pack content always
// signs the same bytes and a changed byte anywhere in the manifest breaks the signature.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace kiln::packs {

inline constexpr std::string_view kManifestFile = "kiln-pack.yaml";
inline constexpr std::string_view kSignatureFile = "kiln-pack.sig";

struct PackPolicy {
  std::string file;    // path inside the pack, e.g. "policies/team-share.policy"
  std::string plugin;  // the name its `policy` declaration gives; scheduler.conf says pack/plugin
  // The capabilities the policy declares (`uses http;`), filled by `kiln pack build` and covered
  // by the signature: what a conf has to grant it is visible before it is loaded.
  std::vector<std::string> uses;
  SourceLocation where;
};

struct PackManifest {
  std::string name;         // [a-z0-9-]+; the `pack` of `pack/plugin`
  std::string version;      // semantic version of the pack
  std::string description;
  std::string language;     // range of Kiln policy-language versions, e.g. ">=0.1.0 <0.2.0"
  std::vector<PackPolicy> policies;
  std::string conf;                  // a scheduler.conf example that uses the policies ("" = none)
  std::vector<std::string> tests;    // scenario files with `expect` and/or `calls`
  std::vector<std::string> extra;    // other files shipped (README, docs)
  std::map<std::string, std::string> files;  // path -> sha256 hex; filled by `kiln pack build`

  std::string manifest_file;  // where it was read from, for errors
  std::map<std::string, SourceLocation> where;  // field ("tests[1]", "files") -> position
  SourceLocation At(const std::string& field) const;

  // Every file the manifest refers to (policies, conf, tests, extra), sorted, without duplicates.
  std::vector<std::string> ReferencedFiles() const;
};

// Parses and validates manifest text: unknown or duplicate keys, missing required fields, a bad
// pack name, version or language range, a path that is absolute or leaves the pack, a plugin name
// used twice. Errors carry `file`:line:col.
Result<PackManifest> ParseManifest(std::string_view text, std::string file);

// The canonical text of `m` (see the header comment); ParseManifest(CanonicalManifest(m)) == m.
std::string CanonicalManifest(const PackManifest& m);

// A pack-relative path that stays inside the pack: relative, no `..`, `.` or empty components,
// no backslashes or NULs. Archive entries and manifest paths are both held to it.
bool IsSafeRelativePath(std::string_view path);

// Semantic versions (semver.org 2.0: MAJOR.MINOR.PATCH[-pre][+build]).
struct SemVer {
  int major = 0, minor = 0, patch = 0;
  std::string pre;  // pre-release identifiers, "" for a release
};
Result<SemVer> ParseSemVer(std::string_view text);
// <0, 0, >0 like strcmp; build metadata is ignored and a pre-release sorts before its release.
int Compare(const SemVer& a, const SemVer& b);

// Whether `version` satisfies `range`: comparators separated by spaces or commas, all of which
// must hold (`>=0.1.0 <0.2.0`), each one of `=V`, `V`, `>V`, `>=V`, `<V`, `<=V`, `^V` (same
// major; for 0.x the same minor) or `~V` (same minor). Error for a malformed range.
Result<bool> VersionSatisfies(std::string_view range, const SemVer& version);

}  // namespace kiln::packs
