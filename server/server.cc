#include "server/server.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "kubernetes/encode.h"
#include "kubernetes/lease.h"
#include "kubernetes/scenario_writer.h"
#include "runtime/thread_name.h"
#include "server/config_watcher.h"
#include "server/http_endpoints.h"
#include "server/leader_election.h"
#include "server/metrics.h"
#include "server/scheduler_loop.h"
#include "server/whatif.h"
#include "server/shadow.h"

namespace kiln::server {

namespace {

// --dry-run: the decisions are logged, the cluster is never written.
class DryRunBinding : public ClusterBinding {
 public:
  explicit DryRunBinding(ClusterBinding& inner) : inner_(inner) {}
  Result<Cluster> Snapshot(TimeNs now) override { return inner_.Snapshot(now); }
  void Apply(const SessionResult& r) override {
    for (const std::string& pod : r.bind_order)
      spdlog::info("dry-run: would bind {} to {}", pod, r.binds.at(pod));
    for (const std::string& pod : r.evictions) spdlog::info("dry-run: would evict {}", pod);
    for (const auto& [pod, node] : r.nominated)
      spdlog::info("dry-run: would nominate {} for {}", node, pod);
    for (const auto& [job, phase] : r.pod_group_phases)
      spdlog::debug("dry-run: PodGroup {} phase {}", job, phase);
  }

 private:
  ClusterBinding& inner_;
};

std::string ConfigJson(const PolicySet* set) {
  nlohmann::ordered_json j;
  if (set == nullptr) return "{}\n";
  j["generation"] = set->generation;
  j["hash"] = "sha256:" + set->hash;
  j["sources"] = set->source_files;
  j["packs"] = set->packs;
  j["loadedAt"] = fmt::format("{:%FT%TZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(
                                                set->loaded_at)));
  j["actions"] = set->conf.actions;
  nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
  for (const Tier& t : set->conf.tiers) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const PluginOption& p : t.plugins) names.push_back(p.name);
    tiers.push_back(names);
  }
  j["tiers"] = tiers;
  return j.dump(2) + "\n";
}

// GET /snapshot: the cluster the next session would see, with the conf in force and the session
// clock, as a scenario. The policies themselves are not in it: the notes name where they came
// from, so a replay can pass the same --policy-dir or --pack.
std::string SnapshotYaml(const ClusterSpec& cluster, const PolicySet& set, TimeNs now) {
  kube::ScenarioHeader header;
  header.name = "snapshot";
  header.now = now;
  header.conf_text = set.conf_text;
  std::string sources;
  for (const std::string& f : set.source_files) sources += (sources.empty() ? "" : ", ") + f;
  header.notes = fmt::format(
      "Taken from kiln serve at {} (configuration generation {}, sha256:{}). Read from: {}. "
      "Replay with `kiln simulate` and the same --policy-dir/--pack options.",
      kube::FormatTimestamp(now), set.generation, set.hash, sources.empty() ? "built-ins" : sources);
  return kube::WriteScenario(cluster, header);
}

}  // namespace

std::unique_ptr<ConfigWatcher> WatchAndReload(PolicyReloader& reloader,
                                              std::chrono::milliseconds quiet) {
  auto watcher = std::make_unique<ConfigWatcher>(
      reloader.WatchDirectories(),
      ConfigWatcher::Callback(),  // set below: it needs the watcher
      quiet, [&reloader](const std::string& dir, std::string_view name) {
        return reloader.IsRelevant(dir, name);
      });
  ConfigWatcher* w = watcher.get();
  watcher->SetCallback([&reloader, w](const ConfigWatcher::Superseded& superseded) {
    reloader.Reload([&] {
      return w->stopping() || (superseded() && PolicyReloader::LoadsInFlight() <= 1);
    });
  });
  return watcher;
}

void ConfigureLogging(int verbosity) {
  auto logger = spdlog::get("kiln-serve");
  if (!logger) logger = spdlog::stderr_color_mt("kiln-serve");
  spdlog::set_default_logger(logger);
  // klog's header: severity letter, MMDD, time with microseconds, thread id.
  spdlog::set_pattern("%L%m%d %H:%M:%S.%f %t] %v");
  spdlog::set_level(verbosity >= 4   ? spdlog::level::trace
                    : verbosity >= 1 ? spdlog::level::debug
                                     : spdlog::level::info);
}

int Serve(ClusterBinding& cluster, const ServeOptions& options, const ServeHooks& hooks,
          const std::function<bool()>& stop) {
  std::atomic<SchedulerLoop*> running_loop{nullptr};
  std::atomic<bool> signalled{false};
  SignalWaiter signals([&](int signo) {
    spdlog::info("received signal {}: finishing the session in flight, then stopping", signo);
    signalled = true;
    if (SchedulerLoop* l = running_loop.load()) l->Stop();
  });

  ServerMetrics metrics;
  if (hooks.attach_metrics) hooks.attach_metrics(metrics);
  PolicyReloader reloader(options.sources, CompiledProviderFactory());
  reloader.AddObserver([&metrics, &hooks](const ReloadOutcome& o, const PolicySet* active) {
    metrics.ObserveReload(o, active);
    if (hooks.on_reload && !o.initial && o.kind != ReloadOutcome::Kind::kUnchanged &&
        o.kind != ReloadOutcome::Kind::kAbandoned)
      hooks.on_reload(o);
  });
  if (Status s = reloader.LoadInitial([&] { return signalled.load(); }); !s) {
    if (signalled) {
      spdlog::info("kiln serve: stopped before the first configuration was loaded");
      return 0;
    }
    spdlog::error("configuration: {}", s.error().Format());
    return 2;
  }

  std::unique_ptr<LeaderElector> elector;
  std::thread election_thread;
  if (options.lease_store != nullptr) {
    LeaderElectionConfig config;
    config.identity = options.identity;
    elector = std::make_unique<LeaderElector>(*options.lease_store, config);
  }
  auto leading = [&] { return elector == nullptr || elector->IsLeader(); };

  std::function<TimeNs()> session_clock = options.clock ? options.clock : WallClockNs;
  // POST /whatif and GET /explain: sessions off the scheduling path (server/whatif.h).
  std::unique_ptr<OffPathRunner> offpath;
  if (hooks.snapshot_spec && !options.listen.empty()) {
    OffPathRunner::Deps deps;
    deps.sources = options.sources;
    deps.factory = CompiledProviderFactory();
    deps.live = [&reloader] { return reloader.Current(); };
    deps.snapshot = hooks.snapshot_spec;
    deps.clock = session_clock;
    deps.explain_json = hooks.explain_json;
    // A copy taken after the last session stays current until the next one; without sessions
    // (standby, caches not synced) a request takes its own after a couple of periods.
    deps.snapshots.max_age = std::max<std::chrono::nanoseconds>(std::chrono::seconds(3),
                                                                2 * options.schedule_period);
    WhatIfLimits limits;
    limits.max_body_bytes = options.http_limits.max_whatif_bytes;
    offpath = std::make_unique<OffPathRunner>(std::move(deps), limits);
  }
  std::unique_ptr<ShadowRunner> shadow;
  std::function<ClusterSpec(TimeNs)> session_spec =
      hooks.session_spec ? hooks.session_spec : hooks.snapshot_spec;
  if (!options.shadow.empty()) {
    if (!session_spec) {
      spdlog::error("--shadow: this cluster gives no copy of its state to run a shadow on");
      return 2;
    }
    ShadowOptions shadow_options;
    shadow_options.path = options.shadow;
    shadow_options.live_sources = options.sources;
    shadow_options.reload_quiet = options.reload_quiet;
    shadow = std::make_unique<ShadowRunner>(shadow_options, CompiledProviderFactory(), reloader,
                                            &metrics);
  }
  std::unique_ptr<HttpEndpoints> http;
  if (!options.listen.empty()) {
    HttpHandlers handlers;
    handlers.metrics = [&metrics, &offpath] {
      return metrics.Serialize() + (offpath ? offpath->MetricsText() : std::string());
    };
    handlers.ready = [&](std::string* reason) {
      bool synced = !hooks.caches_synced || hooks.caches_synced();
      if (!synced) {
        *reason = "caches not synced";
        return false;
      }
      // Ready means able to take over: leading, or standing by with synced caches.
      *reason = elector == nullptr ? "scheduling" : (elector->IsLeader() ? "leader" : "standby");
      return true;
    };
    handlers.config_json = [&reloader] { return ConfigJson(reloader.Current().get()); };
    if (hooks.snapshot_spec)
      handlers.snapshot_yaml = [&](std::string*) -> std::optional<std::string> {
        TimeNs now = session_clock();
        std::shared_ptr<const PolicySet> set = reloader.Current();
        return SnapshotYaml(hooks.snapshot_spec(now), *set, now);
      };
    if (offpath) {
      handlers.whatif = [&offpath](std::string_view body, std::string_view type) {
        return offpath->WhatIf(body, type);
      };
      handlers.explain = [&offpath](std::string_view kind, std::string_view name) {
        return offpath->Explain(kind, name);
      };
    }
    if (shadow)
      handlers.shadow_json = [&shadow](std::string*) -> std::optional<std::string> {
        return shadow->StatusJson();
      };
    http = std::make_unique<HttpEndpoints>(handlers, options.http_limits);
    if (Status s = http->Start(options.listen); !s) {
      spdlog::error("{}", s.error().Format());
      return 2;
    }
  }

  std::unique_ptr<ConfigWatcher> watcher_owner = WatchAndReload(reloader, options.reload_quiet);
  ConfigWatcher& watcher = *watcher_owner;
  if (Status s = watcher.Start(); !s) {
    spdlog::error("config watcher: {}", s.error().Format());
    return 2;
  }
  if (shadow) {
    if (Status s = shadow->Start(); !s) {
      spdlog::error("--shadow {}: {}", options.shadow, s.error().Format());
      return 2;
    }
  }

  // Leadership: the elector renews on its own thread; a second thread follows IsLeader(), which
  // turns false the moment the renew deadline passes even while a renew request hangs, and
  // opens or closes the binding's writes within 50 ms of the change.
  std::atomic<bool> election_done{false};
  std::thread leadership_thread;
  if (elector) {
    election_thread = std::thread([&] {
      NameThisThread("kiln-lease");
      elector->Run(nullptr);
    });
    leadership_thread = std::thread([&] {
      NameThisThread("kiln-leader");
      bool leading_now = false;
      while (!election_done) {
        bool l = elector->IsLeader();
        if (l != leading_now) {
          leading_now = l;
          spdlog::info("leader election: {} {}", options.identity,
                       l ? "is leading: scheduling starts" : "is not leading: writes stop");
          metrics.SetLeader(l);
          if (hooks.on_leadership) hooks.on_leadership(l);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  } else {
    metrics.SetLeader(true);
  }

  DryRunBinding dry(cluster);
  ClusterBinding& live_binding = options.dry_run ? static_cast<ClusterBinding&>(dry) : cluster;
  std::optional<ShadowTapBinding> tap;
  if (shadow) tap.emplace(live_binding, *shadow, session_spec, hooks.kept_session_spec);
  ClusterBinding& binding = tap ? static_cast<ClusterBinding&>(*tap) : live_binding;
  LoopOptions loop_options;
  loop_options.period = options.schedule_period;
  loop_options.clock = session_clock;
  loop_options.may_schedule = [&] {
    bool synced = !hooks.caches_synced || hooks.caches_synced();
    return synced && leading();
  };
  if (shadow) {
    loop_options.session_starts = [&shadow] { shadow->LiveSessionStarts(); };
    loop_options.session_ends = [&shadow] { shadow->LiveSessionEnds(); };
  }
  SchedulerLoop loop(binding, reloader, &metrics, loop_options);
  if (hooks.on_session || shadow || offpath)
    loop.SetObserver([&](const SessionResult& r, const PolicySet&) {
      if (shadow) shadow->LiveDone(&r);
      if (offpath) offpath->SessionDone();
      if (hooks.on_session) hooks.on_session(r);
    });
  running_loop = &loop;
  if (signalled) loop.Stop();

  std::atomic<bool> finished{false};
  std::thread stopper;
  if (stop) {
    stopper = std::thread([&] {
      while (!finished) {
        if (stop()) {
          loop.Stop();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  if (hooks.on_started) hooks.on_started(http ? http->port() : 0);
  spdlog::info("kiln serve: scheduling every {} ms (generation {}){}",
               std::chrono::duration_cast<std::chrono::milliseconds>(options.schedule_period).count(),
               reloader.Current()->generation, options.dry_run ? ", dry run" : "");
  int64_t sessions = loop.Run();
  running_loop = nullptr;
  finished = true;
  if (stopper.joinable()) stopper.join();

  if (shadow) shadow->Stop();
  watcher.Stop();
  if (hooks.flush) hooks.flush(options.shutdown_grace);
  if (elector) {
    elector->Stop();
    if (election_thread.joinable()) election_thread.join();
    election_done = true;
    if (leadership_thread.joinable()) leadership_thread.join();
    if (hooks.on_leadership) hooks.on_leadership(false);
    elector->Release();
  }
  if (http) http->Stop();
  spdlog::info("kiln serve: stopped after {} sessions", sessions);
  return 0;
}

}  // namespace kiln::server
