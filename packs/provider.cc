#include "packs/provider.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace kiln::packs {

namespace fs = std::filesystem;

std::vector<std::string> PackPaths(const ProviderSources& sources, std::error_code& ec) {
  std::vector<std::string> paths;
  if (!sources.packs_dir.empty()) {
    for (const auto& entry : fs::directory_iterator(sources.packs_dir, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".kpack")
        paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
  }
  paths.insert(paths.end(), sources.pack_files.begin(), sources.pack_files.end());
  return paths;
}

Result<VerifiedPacks> VerifyPacks(const std::vector<Result<Pack>>& read,
                                  const std::vector<std::string>& trust_keys) {
  auto trust = LoadTrustedKeys(trust_keys);
  if (!trust) return trust.error();
  VerifiedPacks out;
  std::map<std::string, std::string> seen;  // pack name → source
  for (const Result<Pack>& r : read) {
    if (!r) return r.error();
    const Pack& pack = *r;
    if (Status s = CheckPackForUse(pack, *trust); !s) return s.error();
    if (auto [it, fresh] = seen.emplace(pack.manifest.name, pack.source); !fresh)
      return Error{fmt::format("pack `{}` is provided twice: by {} and by {}", pack.manifest.name,
                               it->second, pack.source),
                   SourceLocation{pack.source}};
    for (NamedPolicySource& n : NamedPolicies(pack)) out.policies.push_back(std::move(n));
    std::string signer;
    if (pack.signature_text)
      if (auto sig = VerifySignature(pack.manifest_text, *pack.signature_text))
        signer = ", signed by " + sig->signer.id;
    out.descriptions.push_back(fmt::format("{} {} ({}{})", pack.manifest.name,
                                           pack.manifest.version, pack.source, signer));
  }
  return out;
}

Result<std::unique_ptr<PolicyProvider>> MakeProvider(const ProviderSources& sources,
                                                     std::vector<NamedPolicySource> pack_policies) {
  CompiledPolicyOptions options;
  options.policy_dirs = sources.policy_dirs;
  options.allow_builtin_override = sources.allow_builtin_override;
  options.compile_cache_dir = sources.compile_cache_dir;
  options.named_policies = std::move(pack_policies);
  options.kept_state = sources.kept_state;
  return MakeCompiledPolicyProvider(options);
}

Result<std::unique_ptr<PolicyProvider>> LoadProvider(const ProviderSources& sources) {
  std::error_code ec;
  std::vector<std::string> paths = PackPaths(sources, ec);
  if (ec)
    return Error{fmt::format("--packs {}: {}", sources.packs_dir, ec.message()),
                 SourceLocation{sources.packs_dir}};
  std::vector<Result<Pack>> read;
  for (const std::string& path : paths) read.push_back(ReadPack(path));
  auto verified = VerifyPacks(read, sources.trust_keys);
  if (!verified) return verified.error();
  return MakeProvider(sources, std::move(verified->policies));
}

Result<std::unique_ptr<PolicyProvider>> MakePackProvider(const ProviderSources& sources,
                                                         const std::vector<Pack>& packs) {
  std::vector<NamedPolicySource> policies;
  for (const Pack& pack : packs)
    for (NamedPolicySource& n : NamedPolicies(pack)) policies.push_back(std::move(n));
  return MakeProvider(sources, std::move(policies));
}

}  // namespace kiln::packs
