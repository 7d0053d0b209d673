#pragma once
// The scheduler's configuration as one immutable value, and how it is replaced while the
// scheduler runs.
//
// A PolicySet is everything a session needs besides the cluster: the parsed scheduler.conf and
// the plugins it names, resolved and compiled. It is built whole, off the session thread, and
// published with one pointer swap; a session takes the pointer once when it opens and keeps the
// set alive until it closes. So a session never sees half a configuration, a session in flight
// finishes on the set it started with, and a set that fails to build never replaces the last
// good one.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/host/compiled_policy_provider.h"
#include "packs/provider.h"
#include "runtime/conf.h"
#include "runtime/plugin.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"

namespace kiln::server {

// Where a configuration comes from: the conf, and where its plugins come from (packs/provider.h).
struct PolicySources : packs::ProviderSources {
  std::string conf_file;  // scheduler.conf; empty: Volcano's default conf
  // With conf_file empty: the conf is the `conf` of this pack (one of pack_files), read with the
  // pack's bytes (a shadow candidate given as a pack, server/shadow.h). A pack without a conf is
  // an error.
  std::string conf_from_pack;
};

// Makes the provider a set resolves its plugin names through. The default compiles policies
// (compiler/host), the packs' (`named`) among them; tests pass C++ test plugins.
using ProviderFactory = std::function<Result<std::unique_ptr<PolicyProvider>>(
    const PolicySources& sources, const std::vector<NamedPolicySource>& named)>;
ProviderFactory CompiledProviderFactory();

struct PolicySet {
  SchedulerConf conf;
  std::string conf_text;  // the scheduler.conf as read (the default one's when none is given)
  // The registry's builders call into the provider (compiled code, bound arguments): the set
  // owns it so that both live exactly as long as the last session using them.
  std::unique_ptr<PolicyProvider> provider;
  PluginRegistry registry;

  uint64_t generation = 0;  // 1 for the first set loaded, +1 per accepted reload
  std::string hash;         // sha256 over the conf text and every policy file read
  std::vector<std::string> source_files;  // the conf, the policy files and packs, as read
  std::vector<std::string> packs;         // "team-fairness 1.0.0 (signed by ed25519:...)"
  std::chrono::system_clock::time_point loaded_at;
};

// Reads, parses, validates and compiles a configuration. Errors carry file:line:col: a YAML or
// validation error in the conf, an unknown plugin or action, a bad argument type, a policy that
// does not compile.
Result<std::shared_ptr<const PolicySet>> LoadPolicySet(const PolicySources& sources,
                                                       const ProviderFactory& factory,
                                                       uint64_t generation);

// The hash LoadPolicySet would give the files as they stand now (no parsing or compiling), so
// a burst of events that changed nothing costs one read of the files.
Result<std::string> HashSources(const PolicySources& sources);

// What one reload attempt did.
struct ReloadOutcome {
  // kAbandoned: a newer change, or shutdown, came before the load finished; its result (if it
  // ever finishes) is dropped and the active generation stays.
  enum class Kind { kOk, kUnchanged, kRejected, kAbandoned };
  Kind kind = Kind::kUnchanged;
  uint64_t generation = 0;      // the active generation afterwards
  std::optional<Error> error;   // kRejected: why
  std::chrono::microseconds took{0};
  bool initial = false;  // the first load (observers set gauges; it is not a reload)
};
std::string_view ToString(ReloadOutcome::Kind kind);

// Holds the active set and replaces it on request. Current() is cheap and safe from any thread.
// Reload() serialises with other reloads; it reads and hashes the sources on the calling thread
// (the watcher's worker, never the session's; the reads are bounded, see runtime/file_read.h),
// and runs the parse and compile on a thread of its own, which it waits for until the load ends
// or `abandon` turns true (polled every 10 ms). An abandoned load keeps running detached until
// it ends (LLVM cannot be interrupted), with copies of what it reads, and its result is dropped;
// LoadsInFlight() counts such loads, so that a caller abandons one only while no other abandoned
// load still runs (at most two compiles at once) and a process exits without waiting for them.
class PolicyReloader {
 public:
  using Observer = std::function<void(const ReloadOutcome&, const PolicySet* active)>;

  PolicyReloader(PolicySources sources, ProviderFactory factory);

  // The first load: its error is the caller's (serve and simulate exit with it). When `abandon`
  // turns true first (SIGTERM), the error says so.
  Status LoadInitial(const std::function<bool()>& abandon = nullptr);
  ReloadOutcome Reload(const std::function<bool()>& abandon = nullptr);
  // Whether an event on `name` inside `directory` (one of WatchDirectories()) can change what
  // the configuration reads: the conf file, *.policy of a policy dir, *.kpack of the packs dir,
  // a --pack file, anything inside a pack directory, and the `..data` / `..<timestamp>` entries
  // a ConfigMap mount swaps.
  bool IsRelevant(const std::string& directory, std::string_view name) const;

  std::shared_ptr<const PolicySet> Current() const;
  const PolicySources& sources() const { return sources_; }
  // The directories whose changes may change the configuration: the conf file's directory (not
  // the file: a ConfigMap mount replaces it by swapping the `..data` symlink), each policy dir,
  // the packs dir and the directories holding --pack files.
  std::vector<std::string> WatchDirectories() const;

  // Called after every Reload (metrics, logs, events), on the reloading thread; for a new
  // generation, before Current() returns it.
  void AddObserver(Observer observer);

  // Loads (of any reloader) running on their own threads, abandoned ones included.
  static int LoadsInFlight();

 private:
  // Runs LoadPolicySet on a thread of its own; nullopt when `abandon` turned true first.
  std::optional<Result<std::shared_ptr<const PolicySet>>> LoadOffThread(
      uint64_t generation, const std::function<bool()>& abandon);

  PolicySources sources_;
  ProviderFactory factory_;
  std::mutex reload_mu_;  // one load at a time
  mutable std::mutex current_mu_;
  std::shared_ptr<const PolicySet> current_;
  std::string last_rejected_hash_;
  std::vector<Observer> observers_;
};

}  // namespace kiln::server
