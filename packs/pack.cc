#include "packs/pack.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/language_version.h"
#include "runtime/file_read.h"

namespace kiln::packs {

namespace {

namespace fs = std::filesystem;

// A .kpack, or one file of a pack directory: a regular file of at most kMaxPackBytes (a FIFO
// or a device is refused without blocking).
Result<std::string> ReadBytes(const fs::path& path) {
  return ReadBoundedFile(path.string(), kMaxPackBytes, "pack");
}

Status ParseManifestInto(Pack& pack) {
  auto m = ParseManifest(pack.manifest_text, pack.Where(std::string(kManifestFile)));
  if (!m) return m.error();
  pack.manifest = std::move(*m);
  return Status::Ok();
}

}  // namespace

std::string Pack::Where(const std::string& path) const {
  if (archive) return source + ":" + path;
  return (fs::path(source) / path).string();
}

Result<Pack> ReadPackBytes(std::string_view bytes, const std::string& source) {
  auto files = ReadPackArchive(bytes, source);
  if (!files) return files.error();
  Pack pack;
  pack.source = source;
  pack.archive = true;
  auto manifest = files->find(std::string(kManifestFile));
  if (manifest == files->end())
    return Error{fmt::format("{}: the archive has no {}", source, kManifestFile),
                 SourceLocation{source}};
  pack.manifest_text = std::move(manifest->second);
  files->erase(manifest);
  if (auto sig = files->find(std::string(kSignatureFile)); sig != files->end()) {
    pack.signature_text = std::move(sig->second);
    files->erase(sig);
  }
  pack.files = std::move(*files);
  if (Status s = ParseManifestInto(pack); !s) return s.error();
  return pack;
}

Result<Pack> ReadPack(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    auto bytes = ReadBytes(path);
    if (!bytes) return bytes.error();
    return ReadPackBytes(*bytes, path);
  }
  Pack pack;
  pack.source = path;
  auto read_inside = [&](const std::string& rel) -> Result<std::string> {
    fs::path p = fs::path(path) / rel;
    // The manifest's paths were checked to stay inside the pack; a link could still leave it.
    for (fs::path part = p; part != fs::path(path) && part.has_relative_path();
         part = part.parent_path())
      if (fs::is_symlink(fs::symlink_status(part, ec)))
        return Error{fmt::format("{}: symbolic links are not allowed in a pack", part.string()),
                     SourceLocation{part.string()}};
    if (!fs::is_regular_file(p, ec))
      return Error{fmt::format("{}: no such file in the pack", p.string()),
                   SourceLocation{pack.Where(std::string(kManifestFile))}};
    return ReadBytes(p);
  };
  auto manifest = read_inside(std::string(kManifestFile));
  if (!manifest) return manifest.error();
  pack.manifest_text = std::move(*manifest);
  if (Status s = ParseManifestInto(pack); !s) return s.error();
  if (fs::exists(fs::path(path) / kSignatureFile, ec)) {
    auto sig = read_inside(std::string(kSignatureFile));
    if (!sig) return sig.error();
    pack.signature_text = std::move(*sig);
  }
  std::vector<std::string> wanted = pack.manifest.ReferencedFiles();
  for (const auto& [file, digest] : pack.manifest.files) wanted.push_back(file);
  for (const std::string& rel : wanted) {
    if (pack.files.count(rel)) continue;
    auto bytes = read_inside(rel);
    if (!bytes) {
      // A file the manifest lists but the directory lacks is VerifyPack's to report (it names
      // what is missing); one the manifest uses is an error now.
      if (pack.manifest.files.count(rel) && !fs::exists(fs::path(path) / rel, ec)) continue;
      return bytes.error();
    }
    pack.files[rel] = std::move(*bytes);
  }
  return pack;
}

Result<VerifyReport> VerifyPack(const Pack& pack, const std::vector<PublicKey>& trust) {
  std::vector<std::string> problems;
  const PackManifest& m = pack.manifest;
  VerifyReport report;
  if (m.files.empty()) {
    problems.push_back(fmt::format("{}: no `files` digests: the pack was never built (kiln pack "
                                   "build)",
                                   kManifestFile));
  }
  for (const std::string& used : m.ReferencedFiles())
    if (!m.files.empty() && !m.files.count(used))
      problems.push_back(fmt::format("{}: used by the manifest but has no sha256 in `files`", used));
  for (const auto& [path, want] : m.files) {
    auto it = pack.files.find(path);
    if (it == pack.files.end()) {
      problems.push_back(fmt::format("{}: listed in the manifest but missing from the pack", path));
      continue;
    }
    std::string got = Sha256Hex(it->second);
    if (got != want)
      problems.push_back(fmt::format("{}: sha256 differs from the manifest (manifest {}, file {}): "
                                     "the file changed after the pack was built",
                                     path, want.substr(0, 16), got.substr(0, 16)));
    else
      ++report.files_checked;
  }
  for (const auto& [path, bytes] : pack.files)
    if (!m.files.empty() && !m.files.count(path))
      problems.push_back(fmt::format("{}: in the pack but not listed in the manifest", path));

  if (pack.signature_text) {
    auto sig = VerifySignature(pack.manifest_text, *pack.signature_text);
    if (!sig) {
      problems.push_back(fmt::format("{}: {}", kSignatureFile, sig.error().message));
    } else {
      report.signer = sig->signer;
      report.trusted = std::any_of(trust.begin(), trust.end(),
                                   [&](const PublicKey& k) { return k.raw == sig->signer.raw; });
      if (!trust.empty() && !report.trusted) {
        std::vector<std::string> ids;
        for (const PublicKey& k : trust) ids.push_back(k.id);
        problems.push_back(fmt::format("{}: signed by unknown key {} (trusted: {})", kSignatureFile,
                                       sig->signer.id, fmt::join(ids, ", ")));
      }
    }
  } else if (!trust.empty()) {
    problems.push_back(fmt::format("the pack is not signed ({} is missing), and trusted keys are "
                                   "configured (--trust): only signed packs are accepted",
                                   kSignatureFile));
  }
  if (!problems.empty())
    return Error{fmt::format("pack {} failed verification:\n  {}", pack.source,
                             fmt::join(problems, "\n  ")),
                 SourceLocation{pack.source}};
  return report;
}

Status CheckLanguageVersion(const PackManifest& manifest) {
  auto mine = ParseSemVer(kLanguageVersion);
  auto ok = VersionSatisfies(manifest.language, *mine);
  if (!ok) return Error{ok.error().message, manifest.At("language")};
  if (!*ok)
    return Error{fmt::format("pack {} {} needs Kiln policy language `{}`; this kiln implements {}",
                             manifest.name, manifest.version, manifest.language, kLanguageVersion),
                 manifest.At("language")};
  return Status::Ok();
}

Status CheckPackForUse(const Pack& pack, const std::vector<PublicKey>& trust) {
  bool unbuilt_dir = !pack.archive && pack.manifest.files.empty() && !pack.signature_text;
  if (!unbuilt_dir || !trust.empty()) {
    auto report = VerifyPack(pack, trust);
    if (!report) return report.error();
  }
  return CheckLanguageVersion(pack.manifest);
}

Result<Pack> LoadPackForUse(const std::string& path, const std::vector<PublicKey>& trust) {
  auto pack = ReadPack(path);
  if (!pack) return pack.error();
  if (Status s = CheckPackForUse(*pack, trust); !s) return s.error();
  return pack;
}

std::vector<NamedPolicySource> NamedPolicies(const Pack& pack) {
  std::vector<NamedPolicySource> out;
  for (const PackPolicy& p : pack.manifest.policies) {
    auto it = pack.files.find(p.file);
    // A built pack (digests filled) states what its policies use; an unbuilt directory does not.
    std::optional<std::vector<std::string>> uses;
    if (!pack.manifest.files.empty()) uses = p.uses;
    out.push_back(NamedPolicySource{pack.manifest.name + "/" + p.plugin, p.plugin,
                                    SourceFile{pack.Where(p.file),
                                               it == pack.files.end() ? "" : it->second},
                                    std::move(uses)});
  }
  return out;
}

Result<std::vector<PublicKey>> LoadTrustedKeys(const std::vector<std::string>& paths) {
  std::vector<PublicKey> keys;
  for (const std::string& p : paths) {
    auto k = LoadPublicKeyPem(p);
    if (!k) return Error{fmt::format("--trust {}", k.error().message), k.error().where};
    keys.push_back(std::move(*k));
  }
  return keys;
}

}  // namespace kiln::packs
