#pragma once
// The scheduler's HTTP side: /metrics (Prometheus text), /healthz (the process answers),
// /readyz (caches synced, and leading or standing by), /config (the active configuration as
// JSON), /snapshot (the cluster as a scenario `kiln simulate` replays), /explain?pod=|podgroup=
// (an off-path explanation), and POST /whatif (server/whatif.h). GET and HEAD only, but for
// POST on /whatif, whose body may be up to `max_whatif_bytes`.
// cpp-httplib stays inside http_endpoints.cc.
//
// Bounded, so that no client can take memory or starve the probes (docs/safety.md, "HTTP
// endpoints and inputs"): a request (request line, headers and any body) is read up to
// `max_request_bytes` and must be read and answered within `request_timeout`, or the connection
// is closed; other methods are answered 405 without reading a body; at most `max_connections`
// connections are served at once, each for at most `keep_alive_requests` requests with at most
// `keep_alive_idle` between them; connections waiting for a worker beyond `max_waiting` are
// closed at once with a 503.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/status.h"

namespace kiln::server {

// An answer computed elsewhere (server/whatif.h).
struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  int retry_after_s = 0;  // > 0: a Retry-After header
};

struct HttpHandlers {
  std::function<std::string()> metrics;      // exposition text
  std::function<bool(std::string*)> ready;   // true when ready; sets a reason either way
  std::function<std::string()> config_json;  // the active configuration
  // The cluster as scenario YAML; unset or nullopt (with the reason set): 404.
  std::function<std::optional<std::string>(std::string* reason)> snapshot_yaml;
  // POST /whatif (body, Content-Type) and GET /explain (kind "pod"|"podgroup", "ns/name");
  // unset: 404.
  std::function<HttpReply(std::string_view body, std::string_view content_type)> whatif;
  std::function<HttpReply(std::string_view kind, std::string_view name)> explain;
  // GET /shadow: the shadow candidate's state and differing decisions (server/shadow.h), JSON;
  // unset or nullopt (with the reason set): 404.
  std::function<std::optional<std::string>(std::string* reason)> shadow_json;
};

struct HttpLimits {
  int max_connections = 16;                           // --http-max-connections
  std::chrono::milliseconds request_timeout{5000};    // --http-request-timeout
  size_t max_request_bytes = 16 * 1024;               // --http-max-request-bytes
  size_t max_whatif_bytes = 1024 * 1024;              // a POST /whatif request, body included
  int keep_alive_requests = 5;
  std::chrono::milliseconds keep_alive_idle{5000};
  int max_waiting = 64;
};

class HttpEndpoints {
 public:
  explicit HttpEndpoints(HttpHandlers handlers, HttpLimits limits = {});
  ~HttpEndpoints();
  HttpEndpoints(const HttpEndpoints&) = delete;
  HttpEndpoints& operator=(const HttpEndpoints&) = delete;

  // Binds `listen` ("host:port"; port 0 picks a free one) and serves on a thread of its own.
  Status Start(const std::string& listen);
  void Stop();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kiln::server
