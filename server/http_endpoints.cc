#include "server/http_endpoints.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

namespace kiln::server {

struct HttpEndpoints::Impl {
  HttpHandlers handlers;
  httplib::Server server;
};

HttpEndpoints::HttpEndpoints(HttpHandlers handlers) : impl_(std::make_unique<Impl>()) {
  impl_->handlers = std::move(handlers);
}

HttpEndpoints::~HttpEndpoints() { Stop(); }

Status HttpEndpoints::Start(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    return Error{fmt::format("--listen must be host:port, got `{}`", listen), {}};
  std::string host = listen.substr(0, colon);
  int port = 0;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
    return Error{fmt::format("--listen must be host:port, got `{}`", listen), {}};
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  httplib::Server& s = impl_->server;
  HttpHandlers& h = impl_->handlers;
  s.Get("/metrics", [&h](const httplib::Request&, httplib::Response& res) {
    res.set_content(h.metrics ? h.metrics() : std::string(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  s.Get("/readyz", [&h](const httplib::Request&, httplib::Response& res) {
    std::string reason;
    bool ready = h.ready ? h.ready(&reason) : true;
    res.status = ready ? 200 : 503;
    res.set_content((ready ? "ok" : "not ready") + (reason.empty() ? "" : ": " + reason) + "\n",
                    "text/plain");
  });
  s.Get("/config", [&h](const httplib::Request&, httplib::Response& res) {
    res.set_content(h.config_json ? h.config_json() : "{}", "application/json");
  });

  if (port == 0) {
    port = s.bind_to_any_port(host.c_str());
    if (port < 0) return Error{fmt::format("--listen {}: cannot bind", listen), {}};
  } else if (!s.bind_to_port(host.c_str(), port)) {
    return Error{fmt::format("--listen {}: cannot bind (in use?)", listen), {}};
  }
  port_ = port;
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  spdlog::info("serving /metrics /healthz /readyz /config on {}:{}", host, port_);
  return Status::Ok();
}

void HttpEndpoints::Stop() {
  if (!thread_.joinable()) return;
  impl_->server.stop();
  thread_.join();
}

}  // namespace kiln::server
