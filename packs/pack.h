#pragma once
// A policy pack in memory, read from a directory (while it is written) or a `.kpack` archive (as
// it ships), and the checks that decide whether it may be used: every file's sha256 against the
// manifest, the manifest against its Ed25519 signature, the signer against the trusted keys, and
// the language version range against this compiler's. docs/packs.md describes the format.

#include <optional>
#include <string>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "packs/archive.h"
#include "packs/crypto.h"
#include "packs/manifest.h"
#include "runtime/status.h"

namespace kiln::packs {

struct Pack {
  std::string source;  // the .kpack file or the directory it was read from
  bool archive = false;
  PackManifest manifest;
  std::string manifest_text;                  // the exact bytes the signature covers
  std::optional<std::string> signature_text;  // kiln-pack.sig, when the pack has one
  PackFiles files;  // every other file, by its path inside the pack

  // How errors name a file of the pack: the real path for a directory,
  // "team-fairness.kpack:policies/team-share.policy" for an archive.
  std::string Where(const std::string& path) const;
};

// Reads a pack directory (its manifest and the files the manifest names; symbolic links and
// paths leaving the directory are refused) or a .kpack file (every entry, with ReadPackArchive's
// safety checks). Parses the manifest. Does not verify anything else.
Result<Pack> ReadPack(const std::string& path);
// The same for .kpack bytes already in memory (a reload reads each file once, hashes and parses
// the same bytes).
Result<Pack> ReadPackBytes(std::string_view bytes, const std::string& source);

struct VerifyReport {
  size_t files_checked = 0;
  std::optional<PublicKey> signer;  // set when the pack is signed (and the signature matches)
  bool trusted = false;             // the signer is one of the trusted keys
};

// Checks a pack's integrity: every file the manifest uses has a digest, every digest matches its
// file, no file is unlisted; the signature (when present) matches the manifest; with `trust`
// non-empty the pack must be signed by one of those keys. Errors list every problem found, one
// per line, each naming the file: "policies/x.policy: sha256 differs from the manifest ...",
// "kiln-pack.sig: the signature ... does not match kiln-pack.yaml ...", "signed by unknown key".
Result<VerifyReport> VerifyPack(const Pack& pack, const std::vector<PublicKey>& trust);

// Whether this compiler's language version (compiler/language_version.h) is in the pack's range.
Status CheckLanguageVersion(const PackManifest& manifest);

// Whether a pack that was read may run its policies: VerifyPack and the language check. A
// directory without digests (a pack being written, never built) is accepted only when `trust` is
// empty.
Status CheckPackForUse(const Pack& pack, const std::vector<PublicKey>& trust);
// ReadPack, then CheckPackForUse.
Result<Pack> LoadPackForUse(const std::string& path, const std::vector<PublicKey>& trust);

// The pack's policies as the policy host takes them: named `pack/plugin` in scheduler.conf.
std::vector<NamedPolicySource> NamedPolicies(const Pack& pack);

// Loads the PEM public keys given with --trust.
Result<std::vector<PublicKey>> LoadTrustedKeys(const std::vector<std::string>& paths);

}  // namespace kiln::packs
