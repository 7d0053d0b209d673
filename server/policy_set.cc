#include "server/policy_set.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <thread>

#include "compiler/host/kept_state.h"
#include "compiler/host/compiled_policy_provider.h"
#include "packs/pack.h"
#include "runtime/file_read.h"
#include "runtime/scheduler.h"
#include "runtime/thread_name.h"
#include "server/config_watcher.h"

namespace kiln::server {

namespace {

namespace fs = std::filesystem;

// What a set is built from, read once: the conf text, every policy file of the dirs, the trust
// keys and the packs (a .kpack's bytes; a pack directory's manifest and files).
struct SourceTexts {
  std::string conf_text;
  std::string conf_name;  // where the conf's errors point
  std::vector<std::pair<std::string, std::string>> files;  // path → text, conf first
  std::vector<Result<packs::Pack>> packs;  // read (and safety-checked), not yet verified
  std::string hash;
};

std::string Sha256Hex(const std::vector<std::pair<std::string, std::string>>& files) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const auto& [path, text] : files) {
    // Length-prefixed so that moving bytes between a name and a text changes the hash.
    std::string head = fmt::format("{}:{}:{}:", path.size(), path, text.size());
    EVP_DigestUpdate(ctx, head.data(), head.size());
    EVP_DigestUpdate(ctx, text.data(), text.size());
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, digest, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

Result<SourceTexts> ReadSources(const PolicySources& sources) {
  SourceTexts out;
  if (!sources.conf_file.empty()) {
    auto text = ReadBoundedFile(sources.conf_file, kMaxConfBytes, "scheduler.conf");
    if (!text) return text.error();
    out.conf_text = *text;
    out.conf_name = sources.conf_file;
    out.files.emplace_back(sources.conf_file, std::move(*text));
  } else if (!sources.conf_from_pack.empty()) {
    // Read below with the pack's files (which the hash covers already).
  } else {
    out.conf_text = std::string(DefaultSchedulerConfText());
    out.conf_name = "<default scheduler.conf>";
    out.files.emplace_back("<default scheduler.conf>", out.conf_text);
  }
  for (const std::string& dir : sources.policy_dirs) {
    std::error_code ec;
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".policy")
        paths.push_back(entry.path());
    if (ec) return Error{fmt::format("--policy-dir {}: {}", dir, ec.message()), SourceLocation{dir}};
    std::sort(paths.begin(), paths.end());
    for (const fs::path& p : paths) {
      auto text = ReadBoundedFile(p.string(), kMaxPolicyFileBytes, "policy");
      if (!text) return text.error();
      out.files.emplace_back(p.string(), std::move(*text));
    }
  }
  for (const std::string& key : sources.trust_keys) {
    auto text = ReadBoundedFile(key, kMaxPolicyFileBytes, "--trust key");
    if (!text) return text.error();
    out.files.emplace_back(key, std::move(*text));
  }
  std::error_code ec;
  std::vector<std::string> pack_paths = packs::PackPaths(sources, ec);
  if (ec)
    return Error{fmt::format("--packs {}: {}", sources.packs_dir, ec.message()),
                 SourceLocation{sources.packs_dir}};
  for (const std::string& path : pack_paths) {
    // A .kpack is read once: the bytes hashed are the bytes unpacked and verified. A pack that
    // cannot be unpacked is LoadPolicySet's error to report; its bytes still go into the hash,
    // so the same broken pack is rejected once, not again on every unrelated event.
    if (fs::is_directory(path, ec)) {
      auto pack = packs::ReadPack(path);
      if (!pack) return pack.error();
      out.files.emplace_back(pack->Where(std::string(packs::kManifestFile)), pack->manifest_text);
      if (pack->signature_text)
        out.files.emplace_back(pack->Where(std::string(packs::kSignatureFile)), *pack->signature_text);
      for (const auto& [rel, bytes] : pack->files) out.files.emplace_back(pack->Where(rel), bytes);
      out.packs.push_back(std::move(pack));
    } else {
      auto bytes = ReadBoundedFile(path, kMaxPackBytes, "pack");
      if (!bytes) return bytes.error();
      out.packs.push_back(packs::ReadPackBytes(*bytes, path));
      out.files.emplace_back(path, std::move(*bytes));
    }
  }
  if (sources.conf_file.empty() && !sources.conf_from_pack.empty()) {
    const packs::Pack* from = nullptr;
    for (const auto& p : out.packs)
      if (p && p->source == sources.conf_from_pack) from = &*p;
    if (from == nullptr) {
      // The pack could not be read: its own error says why.
      for (const auto& p : out.packs)
        if (!p) return p.error();
      return Error{fmt::format("{}: the pack was not read", sources.conf_from_pack),
                   SourceLocation{sources.conf_from_pack}};
    }
    auto conf = from->files.find(from->manifest.conf);
    if (from->manifest.conf.empty() || conf == from->files.end())
      return Error{fmt::format("{}: the pack has no `conf` (a scheduler.conf using its policies); "
                               "give a scheduler.conf instead, or add one to the pack",
                               sources.conf_from_pack),
                   SourceLocation{sources.conf_from_pack}};
    out.conf_text = conf->second;
    out.conf_name = from->Where(from->manifest.conf);
  }
  out.hash = Sha256Hex(out.files);
  return out;
}

}  // namespace

ProviderFactory CompiledProviderFactory() {
  return [](const PolicySources& s, const std::vector<NamedPolicySource>& named)
             -> Result<std::unique_ptr<PolicyProvider>> { return packs::MakeProvider(s, named); };
}

Result<std::string> HashSources(const PolicySources& sources) {
  auto texts = ReadSources(sources);
  if (!texts) return texts.error();
  return texts->hash;
}

Result<std::shared_ptr<const PolicySet>> LoadPolicySet(const PolicySources& sources,
                                                       const ProviderFactory& factory,
                                                       uint64_t generation) {
  auto texts = ReadSources(sources);
  if (!texts) return texts.error();
  auto conf = ParseSchedulerConf(texts->conf_text, texts->conf_name);
  if (!conf) return conf.error();
  // Every pack verified (digests, signature, trust, language version): one that fails rejects
  // the whole configuration.
  auto verified = packs::VerifyPacks(texts->packs, sources.trust_keys);
  if (!verified) return verified.error();
  auto provider = factory(sources, verified->policies);
  if (!provider) return provider.error();
  auto set = std::make_shared<PolicySet>();
  set->packs = std::move(verified->descriptions);
  set->conf = std::move(*conf);
  set->conf_text = texts->conf_text;
  set->provider = std::move(*provider);
  auto registry = ResolvePlugins(set->conf, *set->provider);
  if (!registry) return registry.error();
  set->registry = std::move(*registry);
  set->generation = generation;
  set->hash = texts->hash;
  for (const auto& [path, text] : texts->files) set->source_files.push_back(path);
  set->loaded_at = std::chrono::system_clock::now();
  return std::shared_ptr<const PolicySet>(std::move(set));
}

std::string_view ToString(ReloadOutcome::Kind kind) {
  switch (kind) {
    case ReloadOutcome::Kind::kOk: return "ok";
    case ReloadOutcome::Kind::kUnchanged: return "unchanged";
    case ReloadOutcome::Kind::kRejected: return "rejected";
    case ReloadOutcome::Kind::kAbandoned: return "abandoned";
  }
  return "?";
}

PolicyReloader::PolicyReloader(PolicySources sources, ProviderFactory factory)
    : sources_(std::move(sources)), factory_(std::move(factory)) {
  // One store for every configuration this reloader loads: a reload that leaves a plugin entry
  // as it was keeps the entry's `state ... across sessions` (compiler/host/kept_state.h).
  if (!sources_.kept_state) sources_.kept_state = std::make_shared<KeptStateStore>();
}

namespace {
std::atomic<int> g_loads_in_flight{0};
}  // namespace

int PolicyReloader::LoadsInFlight() { return g_loads_in_flight.load(); }

std::optional<Result<std::shared_ptr<const PolicySet>>> PolicyReloader::LoadOffThread(
    uint64_t generation, const std::function<bool()>& abandon) {
  // Everything the load touches is owned here and by the thread: an abandoned load may outlive
  // this reloader.
  struct Attempt {
    PolicySources sources;
    ProviderFactory factory;
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<std::shared_ptr<const PolicySet>>> result;
  };
  auto attempt = std::make_shared<Attempt>();
  attempt->sources = sources_;
  attempt->factory = factory_;
  g_loads_in_flight.fetch_add(1);
  std::thread([attempt, generation] {
    NameThisThread("kiln-policyload");
    auto set = LoadPolicySet(attempt->sources, attempt->factory, generation);
    // Counted out before the result is seen: whoever sees it also sees the count without it.
    g_loads_in_flight.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lock(attempt->mu);
      attempt->result.emplace(std::move(set));
    }
    attempt->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(attempt->mu);
  for (;;) {
    if (attempt->cv.wait_for(lock, std::chrono::milliseconds(10),
                             [&] { return attempt->result.has_value(); }))
      return std::move(attempt->result);
    if (abandon && abandon()) return std::nullopt;
  }
}

Status PolicyReloader::LoadInitial(const std::function<bool()>& abandon) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  auto start = std::chrono::steady_clock::now();
  auto loaded = LoadOffThread(1, abandon);
  if (!loaded) return Error{"the first configuration load was abandoned (stopping)", {}};
  auto& set = *loaded;
  if (!set) return set.error();
  {
    std::lock_guard<std::mutex> cl(current_mu_);
    current_ = *set;
  }
  ReloadOutcome outcome;
  outcome.kind = ReloadOutcome::Kind::kOk;
  outcome.generation = 1;
  outcome.initial = true;
  outcome.took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  spdlog::info("configuration loaded: generation 1 (hash {}, {} ms)", (*set)->hash.substr(0, 12),
               outcome.took.count() / 1000.0);
  for (const Observer& o : observers_) o(outcome, set->get());
  return Status::Ok();
}

ReloadOutcome PolicyReloader::Reload(const std::function<bool()>& abandon) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const PolicySet> active = Current();
  ReloadOutcome outcome;
  outcome.generation = active ? active->generation : 0;
  auto hash = HashSources(sources_);
  if (hash && ((active && *hash == active->hash) || *hash == last_rejected_hash_)) {
    // Nothing changed since the active set, or since the last rejected attempt (the same broken
    // files are not compiled and reported again for every unrelated event).
    outcome.kind = ReloadOutcome::Kind::kUnchanged;
  } else if (!hash) {
    // Unreadable sources (a FIFO or a device in place of a file, a file past its size limit):
    // rejected without compiling anything.
    outcome.kind = ReloadOutcome::Kind::kRejected;
    outcome.error = hash.error();
    last_rejected_hash_.clear();
  } else {
    auto loaded = LoadOffThread(outcome.generation + 1, abandon);
    if (!loaded) {
      outcome.kind = ReloadOutcome::Kind::kAbandoned;
    } else if (!*loaded) {
      outcome.kind = ReloadOutcome::Kind::kRejected;
      outcome.error = loaded->error();
      last_rejected_hash_ = *hash;
    } else {
      outcome.kind = ReloadOutcome::Kind::kOk;
      outcome.generation = (**loaded)->generation;
      active = **loaded;  // made current after the observers, below
    }
  }
  outcome.took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  switch (outcome.kind) {
    case ReloadOutcome::Kind::kOk:
      spdlog::info("config reload: generation {} active (hash {}, {} ms)", outcome.generation,
                   active->hash.substr(0, 12), outcome.took.count() / 1000.0);
      break;
    case ReloadOutcome::Kind::kRejected:
      spdlog::error("config reload rejected, generation {} stays active: {}", outcome.generation,
                    outcome.error->Format());
      break;
    case ReloadOutcome::Kind::kAbandoned:
      spdlog::info("config reload: load abandoned after {} ms (a newer change, or stopping); "
                   "generation {} stays active",
                   outcome.took.count() / 1000, outcome.generation);
      break;
    case ReloadOutcome::Kind::kUnchanged:
      spdlog::debug("config reload: sources unchanged");
      break;
  }
  // Observers first, then the swap: whoever sees the new generation on Current() (a session,
  // /config) also sees it in the metrics.
  for (const Observer& o : observers_) o(outcome, active.get());
  if (outcome.kind == ReloadOutcome::Kind::kOk) {
    std::lock_guard<std::mutex> cl(current_mu_);
    current_ = active;
  }
  return outcome;
}

std::shared_ptr<const PolicySet> PolicyReloader::Current() const {
  std::lock_guard<std::mutex> lock(current_mu_);
  return current_;
}

std::vector<std::string> PolicyReloader::WatchDirectories() const {
  std::vector<std::string> dirs;
  if (!sources_.conf_file.empty()) dirs.push_back(ParentDir(sources_.conf_file));
  for (const std::string& d : sources_.policy_dirs) dirs.push_back(d);
  if (!sources_.packs_dir.empty()) dirs.push_back(sources_.packs_dir);
  for (const std::string& p : sources_.pack_files) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      // A pack directory's files sit in subdirectories too (policies/, tests/).
      dirs.push_back(p);
      for (const auto& entry : fs::recursive_directory_iterator(p, ec))
        if (entry.is_directory()) dirs.push_back(entry.path().string());
    } else {
      dirs.push_back(ParentDir(p));
    }
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

namespace {
bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
}  // namespace

bool PolicyReloader::IsRelevant(const std::string& directory, std::string_view name) const {
  // A ConfigMap mount: `..data` (the symlink swapped on update), `..2026_11_29_...` (the
  // timestamped directory it points at) and `..data_tmp`.
  if (name.substr(0, 2) == "..") return true;
  auto names_file = [&](const std::string& file) {
    return ParentDir(file) == directory && fs::path(file).filename().string() == name;
  };
  if (!sources_.conf_file.empty() && names_file(sources_.conf_file)) return true;
  for (const std::string& d : sources_.policy_dirs)
    if (d == directory && EndsWith(name, ".policy")) return true;
  if (sources_.packs_dir == directory && EndsWith(name, ".kpack")) return true;
  for (const std::string& key : sources_.trust_keys)
    if (names_file(key)) return true;
  for (const std::string& p : sources_.pack_files) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      if (directory == p || directory.rfind(p + "/", 0) == 0) return true;
    } else if (names_file(p)) {
      return true;
    }
  }
  return false;
}

void PolicyReloader::AddObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(reload_mu_);
  observers_.push_back(std::move(observer));
}

}  // namespace kiln::server
