#pragma once
// The scheduler's HTTP side: /metrics (Prometheus text), /healthz (the process answers),
// /readyz (caches synced, and leading or standing by), /config (the active configuration as
// JSON). cpp-httplib stays inside http_endpoints.cc.

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "runtime/status.h"

namespace kiln::server {

struct HttpHandlers {
  std::function<std::string()> metrics;      // exposition text
  std::function<bool(std::string*)> ready;   // true when ready; sets a reason either way
  std::function<std::string()> config_json;  // the active configuration
};

class HttpEndpoints {
 public:
  explicit HttpEndpoints(HttpHandlers handlers);
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
