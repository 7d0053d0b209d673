// `kiln serve --conf scheduler.conf (--scenario FILE | --kubeconfig F | in-cluster)
//             [--policy-dir D]... [--packs DIR [--trust PUB.pem]...] [--schedule-period 1s] [--listen 127.0.0.1:8080] [--dry-run]
//             [--shadow PACK_OR_CONF] [--kube-api-qps Q --kube-api-burst B] [--write-workers N]
//             [--write-queue-capacity N] [--event-queue-capacity N]
//             [--leader-elect --lock-namespace kube-system --lock-name kiln-scheduler] [-v N]`
//
// The long-running scheduler (server/server.h): one session per period against a cluster, with
// live reload of the conf, policies and policy packs, Prometheus metrics and health endpoints. The cluster is a
// scenario file (`--scenario`: the simulated cluster of `kiln simulate`, advancing in real time;
// useful for demos, dashboards and trying a conf) or the Kubernetes API server (`--kubeconfig`,
// else $KUBECONFIG, else the pod's service account, else ~/.kube/config).
//
// Exit codes: 0 after SIGTERM/SIGINT, 2 bad input (flags, conf, scenario, listen address).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <variant>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/huge_page_malloc.h"
#include "cli/shared_options.h"
#include "compiler/host/jit_tiers.h"
#include "kubernetes/client.h"
#include "kubernetes/kubernetes_cluster.h"
#include "kubernetes/kubeconfig.h"
#include "kubernetes/lease.h"
#include "runtime/quantity.h"
#include "server/metrics.h"
#include "server/scheduler_loop.h"
#include "server/server.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::cli {

namespace {

struct ServeFlags {
  PolicyOptions policy;  // --conf, --policy-dir, --packs, --trust, ...
  std::string scenario;
  std::string kubeconfig;
  std::string scheduler_name = "volcano";
  std::string schedule_period = "1s";
  bool leader_elect = false;
  std::string lock_namespace = "kube-system";
  std::string lock_name = "kiln-scheduler";
  std::string listen = "127.0.0.1:8080";
  int http_max_connections = server::HttpLimits{}.max_connections;
  std::string http_request_timeout = "5s";
  std::string http_max_request_bytes = "16Ki";
  bool dry_run = false;
  bool evict_with_eviction_api = false;
  bool no_snapshot = false;
  std::string shadow;
  int verbosity = 0;
  // The API client's rate limit (0: none) and the writer threads, each with its own keep-alive
  // connection.
  double kube_api_qps = 0;
  int kube_api_burst = 0;
  int write_workers = kube::KubernetesClusterOptions{}.write_workers;
  // Writes waiting for a writer thread. A session's binds beyond it are dropped and decided
  // again by a later session, which at 100k pending pods costs a whole session each time: the
  // default holds the binds of a 10k-node × 100k-pod cluster's first session and its PodGroup
  // status writes (a queued bind is about 200 bytes: 40 MB when full).
  size_t write_queue_capacity = 200000;
  // Events waiting for the Event sender (kubernetes/writer.h EventQueue); beyond it an Event is
  // dropped and counted, as client-go's broadcaster drops them.
  size_t event_queue_capacity = kube::KubernetesClusterOptions{}.event_queue_capacity;
};

// holderIdentity: unique per process, readable in `kubectl get lease -o yaml` (client-go uses
// hostname + "_" + a UUID).
std::string Identity() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::random_device rd;
  return fmt::format("{}_{:08x}{:08x}", host, rd(), rd());
}

// What reload Events are about: the scheduler's own Pod when the Deployment passes it in through
// the downward API (POD_NAME, POD_NAMESPACE, POD_UID; see deploy/), else the leader-election
// Lease, which every replica shares and `kubectl describe lease` shows.
kube::ObjectReference SchedulerObject(const ServeFlags& f) {
  const char* pod = std::getenv("POD_NAME");
  const char* ns = std::getenv("POD_NAMESPACE");
  if (pod != nullptr && *pod != '\0' && ns != nullptr && *ns != '\0') {
    const char* uid = std::getenv("POD_UID");
    return kube::ObjectReference{"v1", "Pod", ns, pod, uid != nullptr ? uid : ""};
  }
  return kube::ObjectReference{"coordination.k8s.io/v1", "Lease", f.lock_namespace, f.lock_name, ""};
}

int ServeKubernetes(const ServeFlags& f, server::ServeOptions options, server::ServeHooks hooks) {
  auto config = kube::ResolveKubeConfig(f.kubeconfig);
  if (!config) return BadInput(config.error());
  if (f.kube_api_qps < 0 || f.kube_api_burst < 0)
    return BadInput(Error{fmt::format("--kube-api-qps and --kube-api-burst must not be negative, got {} and {}",
                                      f.kube_api_qps, f.kube_api_burst),
                          {}});
  if (f.write_workers < 1 || f.write_workers > 256)
    return BadInput(Error{fmt::format("--write-workers must be from 1 to 256, got {}", f.write_workers), {}});
  if (f.write_queue_capacity < 1)
    return BadInput(Error{"--write-queue-capacity must be at least 1", {}});
  if (f.event_queue_capacity < 1)
    return BadInput(Error{"--event-queue-capacity must be at least 1", {}});
  kube::ClientOptions client_options;
  client_options.qps = f.kube_api_qps;
  client_options.burst = f.kube_api_burst;
  // An idle connection for every writer plus the Event sender, the reflectors' LISTs and status
  // reads, so none is closed and reopened between two writes.
  client_options.max_idle_handles = f.write_workers + 16;
  auto client = kube::KubeClient::Create(*config, client_options);
  if (!client) return BadInput(client.error());
  std::atomic<server::ServerMetrics*> metrics{nullptr};
  kube::KubernetesClusterOptions kopts;
  kopts.scheduler_names = {f.scheduler_name};
  kopts.evict_with_eviction_api = f.evict_with_eviction_api;
  kopts.write_workers = f.write_workers;
  kopts.write_queue_capacity = f.write_queue_capacity;
  kopts.event_queue_capacity = f.event_queue_capacity;
  kopts.on_bind = [&metrics](double seconds, bool ok) {
    if (server::ServerMetrics* m = metrics.load()) m->ObserveBind(seconds * 1000, ok ? "ok" : "error");
  };
  kube::KubernetesCluster cluster(*client, kopts);

  // Leader election talks to the API server over its own client with a short request timeout:
  // a renew that hangs must not outlive the renew deadline.
  std::unique_ptr<kube::LeaseStore> lease_store;
  if (f.leader_elect) {
    kube::ClientOptions lease_client_options;
    lease_client_options.request_timeout = std::chrono::seconds(4);
    auto lease_client = kube::KubeClient::Create(*config, lease_client_options);
    if (!lease_client) return BadInput(lease_client.error());
    lease_store = kube::NewKubeLeaseStore(*lease_client, f.lock_namespace, f.lock_name);
    options.lease_store = lease_store.get();
    options.identity = Identity();
    cluster.SetWritesEnabled(false);  // a standby writes nothing until it leads
  }
  hooks.caches_synced = [&cluster] { return cluster.HasSynced(); };
  if (!f.no_snapshot)
    hooks.snapshot_spec = [&cluster](TimeNs now) { return cluster.SnapshotSpec(now); };
  hooks.session_spec = [&cluster](TimeNs now) { return cluster.SnapshotSpec(now); };
  if (!options.shadow.empty()) {
    cluster.KeepSessionSpecs(true);
    hooks.kept_session_spec = [&cluster](TimeNs now) { return cluster.TakeSessionSpec(now); };
  }
  hooks.flush = [&cluster](std::chrono::nanoseconds grace) {
    cluster.Stop(std::chrono::duration_cast<std::chrono::milliseconds>(grace));
  };
  hooks.on_leadership = [&cluster](bool leading) { cluster.SetWritesEnabled(leading); };
  hooks.on_reload = [&cluster, about = SchedulerObject(f)](const server::ReloadOutcome& o) {
    if (o.kind == server::ReloadOutcome::Kind::kRejected)
      cluster.PostEvent(about, "Warning", "ConfigRejected", "Reload",
                        fmt::format("configuration rejected, generation {} stays active: {}",
                                    o.generation, o.error ? o.error->Format() : "unknown error"));
    else
      cluster.PostEvent(about, "Normal", "ConfigReloaded", "Reload",
                        fmt::format("configuration generation {} is active (loaded in {} ms)",
                                    o.generation, o.took.count() / 1000));
  };
  // kiln_watch_relists_total: the reflectors count relists; the metric follows after each
  // session.
  std::mutex relist_mu;
  std::map<std::string, int64_t> relists_seen;
  hooks.attach_metrics = [&metrics](server::ServerMetrics& m) { metrics = &m; };
  hooks.on_session = [&](const SessionResult&) {
    server::ServerMetrics* m = metrics.load();
    if (m == nullptr) return;
    std::lock_guard<std::mutex> lock(relist_mu);
    for (const auto& [resource, n] : cluster.stats().relists) {
      int64_t& seen = relists_seen[resource];
      if (n > seen) m->CountRelists(resource, n - seen);
      seen = n;
    }
  };
  spdlog::info("kiln serve: API server {} ({}), scheduler name {}; {}", config->server, config->source,
               f.scheduler_name, HugePageMallocState());
  cluster.Start();
  return server::Serve(cluster, options, hooks);
}

int RunServe(const ServeFlags& f) {
  ReexecWithHugePageMalloc();  // returns only when it did not (cli/huge_page_malloc.h)
  server::BlockTerminationSignals();  // before any thread exists (kubernetes reflectors, writers)
  // Tier-0 handlers compile in the background while the caches sync, and on first use.
  SetDefaultLazyHandlers(true);
  server::ConfigureLogging(f.verbosity);
  auto period = ParseGoDuration(f.schedule_period);
  if (!period || *period <= 0)
    return BadInput(Error{
        fmt::format("--schedule-period must be a positive duration like 1s or 500ms, got `{}`",
                    f.schedule_period),
        {}});
  if (f.policy.conf_file.empty())
    return BadInput(Error{"--conf is required (the scheduler.conf to run)", {}});

  server::ServeOptions options;
  options.sources = {f.policy.sources, f.policy.conf_file, {}};
  options.schedule_period = std::chrono::nanoseconds(*period);
  options.listen = f.listen;
  if (f.http_max_connections < 1 || f.http_max_connections > 1024)
    return BadInput(Error{fmt::format("--http-max-connections must be from 1 to 1024, got {}",
                                      f.http_max_connections),
                          {}});
  options.http_limits.max_connections = f.http_max_connections;
  auto request_timeout = ParseGoDuration(f.http_request_timeout);
  if (!request_timeout || *request_timeout < 1'000'000 || *request_timeout > 600'000'000'000)
    return BadInput(Error{
        fmt::format("--http-request-timeout must be a duration from 1ms to 10m like 5s, got `{}`",
                    f.http_request_timeout),
        {}});
  options.http_limits.request_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(*request_timeout));
  auto request_bytes = ParseQuantity(f.http_max_request_bytes);
  if (!request_bytes || request_bytes->Value() < 1024 || request_bytes->Value() > (16 << 20))
    return BadInput(
        Error{fmt::format("--http-max-request-bytes must be a size from 1Ki to 16Mi, got `{}`",
                          f.http_max_request_bytes),
              {}});
  options.http_limits.max_request_bytes = static_cast<size_t>(request_bytes->Value());
  options.dry_run = f.dry_run;
  options.shadow = f.shadow;
  server::ServeHooks hooks;
  hooks.explain_json = [](const Explanation& e) { return ExplainJsonText("kiln serve", e); };

  if (!f.scenario.empty()) {
    if (f.leader_elect)
      return BadInput(
          Error{"--leader-elect needs a Kubernetes cluster (a scenario has no Lease)", {}});
    auto spec = LoadScenarioFile(f.scenario);
    if (!spec) return BadInput(spec.error());
    // The scenario's clock starts at its `now` and runs with the wall clock.
    TimeNs origin = spec->now;
    auto started = std::chrono::steady_clock::now();
    options.clock = [origin, started] {
      return origin + std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
    };
    SimulatedCluster cluster(std::move(*spec));
    // The shadow's copy, on the loop thread right after the snapshot: the simulated cluster's
    // objects as that snapshot built them (GET /snapshot stays unserved: the HTTP thread may not
    // read the simulated cluster while the loop advances it).
    hooks.session_spec = [&cluster](TimeNs) { return cluster.state().cluster; };
    return server::Serve(cluster, options, hooks);
  }
  return ServeKubernetes(f, options, hooks);
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the scheduler: one session per period against a cluster, with live reload, "
               "metrics and health endpoints");
  AddPolicyOptions(*cmd, f->policy, kConfFlag | kPolicyDirFlags | kPacksDirFlags);
  // Everything the configuration reads is watched and reloaded while serving.
  cmd->get_option("--conf")->description("scheduler.conf (watched: changes apply live)");
  cmd->get_option("--policy-dir")->description("directory of user policies (repeatable, watched)");
  cmd->add_option("--scenario", f->scenario,
                  "serve the simulated cluster of a scenario file instead of Kubernetes");
  cmd->add_option("--kubeconfig", f->kubeconfig,
                  "kubeconfig of the cluster (default: in-cluster service account)");
  cmd->add_option("--scheduler-name", f->scheduler_name,
                  "schedule pods whose spec.schedulerName is this (default volcano)");
  cmd->add_option("--schedule-period", f->schedule_period,
                  "time between session starts, a Go duration (default 1s)");
  cmd->add_flag("--leader-elect", f->leader_elect,
                "run sessions only while holding the leader Lease");
  cmd->add_option("--lock-namespace", f->lock_namespace, "namespace of the leader Lease");
  cmd->add_option("--lock-name", f->lock_name, "name of the leader Lease");
  cmd->add_option("--listen", f->listen,
                  "address of /metrics /healthz /readyz /config (default 127.0.0.1:8080; port 0 "
                  "picks one; empty: none)");
  cmd->add_option("--http-max-connections", f->http_max_connections,
                  "HTTP connections served at once (default 16)");
  cmd->add_option("--http-request-timeout", f->http_request_timeout,
                  "time to read and answer one HTTP request, else the connection is closed "
                  "(default 5s)");
  cmd->add_option("--http-max-request-bytes", f->http_max_request_bytes,
                  "bytes of one HTTP request (request line, headers, body) (default 16Ki)");
  cmd->add_flag("--dry-run", f->dry_run, "decide and log, never write to the cluster");
  cmd->add_flag("--no-snapshot", f->no_snapshot,
                "do not serve GET /snapshot (the cluster's objects as a scenario)");
  cmd->add_option("--shadow", f->shadow,
                  "a candidate scheduler.conf, .kpack or pack directory that decides beside the "
                  "live configuration on every session and writes nothing (GET /shadow, "
                  "kiln_shadow_* metrics); watched: create, replace or delete it live");
  cmd->add_flag("--evict-with-eviction-api", f->evict_with_eviction_api,
                "evict through pods/eviction (PodDisruptionBudget aware) instead of DELETE");
  // How kiln serve talks to the API server: one row per flag.
  struct ClientFlag {
    const char* name;
    std::variant<double*, int*, size_t*> value;
    const char* help;
  };
  const ClientFlag client_flags[] = {
      {"--kube-api-qps", &f->kube_api_qps,
       "requests per second to the API server, watches aside (default 0: no limit; Volcano's "
       "scheduler uses 2000)"},
      {"--kube-api-burst", &f->kube_api_burst,
       "requests let through at once above --kube-api-qps (default: the qps)"},
      {"--write-workers", &f->write_workers,
       "threads writing binds, evictions and status to the API server, each with its own "
       "keep-alive connection (default 8)"},
      {"--write-queue-capacity", &f->write_queue_capacity,
       "writes that may wait for a writer; a session's writes beyond it are dropped and redone "
       "by a later session (default 200000)"},
      {"--event-queue-capacity", &f->event_queue_capacity,
       "Events (Scheduled, FailedScheduling, ...) that may wait for the Event sender, which runs "
       "beside the writers; beyond it new Events are dropped and counted (default 10000)"},
  };
  for (const ClientFlag& flag : client_flags)
    std::visit([&](auto* value) { cmd->add_option(flag.name, *value, flag.help); }, flag.value);
  cmd->add_option("-v,--v", f->verbosity, "log verbosity (klog levels: 0 info, 2-3 debug, 4+ trace)");
  cmd->callback([f] {
    int code = RunServe(*f);
    if (server::PolicyReloader::LoadsInFlight() > 0) {
      // A configuration load abandoned at shutdown still compiles on a detached thread: static
      // destructors (LLVM's among them) must not run under it, so leave without them.
      spdlog::info("kiln serve: leaving a configuration load in flight unfinished");
      spdlog::default_logger()->flush();
      std::fflush(nullptr);
      std::_Exit(code);
    }
    EndCommand(code);
  });
}

}  // namespace kiln::cli
