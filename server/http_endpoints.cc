#include "server/http_endpoints.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/thread_name.h"

namespace kiln::server {

namespace {

using Clock = std::chrono::steady_clock;

// One connection's socket, read and written within the current request's deadline and byte
// budget. cpp-httplib's own socket stream waits up to its read timeout for every recv, so a
// client sending a byte every few seconds holds a worker for as long as it likes; here the whole
// request has one deadline.
class BoundedStream : public httplib::Stream {
 public:
  explicit BoundedStream(int sock) : sock_(sock) {}

  void StartRequest(Clock::time_point deadline, size_t max_bytes) {
    deadline_ = deadline;
    read_left_ = max_bytes;
  }
  bool HasBuffered() const { return pos_ < len_; }
  // Raises the request's byte budget to `max_bytes` in all (what was read already counts).
  void WidenBudget(size_t max_bytes, size_t used_so_far) {
    read_left_ = max_bytes > used_so_far ? max_bytes - used_so_far : 0;
  }

  bool is_readable() const override { return HasBuffered() || Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (read_left_ == 0) return -1;  // over the request's byte budget
    size = std::min(size, read_left_);
    if (!HasBuffered()) {
      if (!Wait(POLLIN)) return -1;
      ssize_t n;
      do {
        n = ::recv(sock_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    read_left_ -= n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!Wait(POLLOUT)) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    Address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    Address(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  // Waits until the socket is ready for `events` or the deadline passes.
  bool Wait(short events) const {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{sock_, events, 0};
      int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r < 0 && errno == EINTR) continue;
      return r > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
    }
  }

  void Address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ip.clear();
    port = 0;
    if (get(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  int sock_;
  Clock::time_point deadline_{};
  size_t read_left_ = 0;
  char buf_[4096];
  size_t pos_ = 0;
  size_t len_ = 0;
};

// Set on the accepting thread while it refuses a connection (CountingPool::enqueue).
thread_local bool t_refuse = false;
// The stream the worker thread is answering on (so the routing can widen a POST's budget).
thread_local BoundedStream* t_stream = nullptr;

// cpp-httplib's server with the limits applied per connection (its per-recv timeouts and
// unlimited header count are not enough on their own).
class LimitedServer : public httplib::Server {
 public:
  explicit LimitedServer(const HttpLimits& limits) : limits_(limits) {
    new_task_queue = [this] { return new CountingPool(*this); };
    set_keep_alive_max_count(static_cast<size_t>(std::max(1, limits_.keep_alive_requests)));
    set_payload_max_length(std::max(limits_.max_request_bytes, limits_.max_whatif_bytes));
    auto secs = [](std::chrono::milliseconds d) {
      return std::max<time_t>(1, static_cast<time_t>((d.count() + 999) / 1000));
    };
    set_keep_alive_timeout(secs(limits_.keep_alive_idle));
    set_read_timeout(secs(limits_.request_timeout));
    set_write_timeout(secs(limits_.request_timeout));
  }

  uint64_t refused() const { return refused_.load(); }

  // cpp-httplib listens with a backlog of 5: under a burst of connections the kernel would drop
  // the handshakes beyond it (the probes' among them) before kiln could answer or refuse them.
  void WidenBacklog() {
    if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, 256);
  }

 private:
  // A thread pool of max_connections workers that counts the connections waiting for one.
  class CountingPool : public httplib::ThreadPool {
   public:
    explicit CountingPool(LimitedServer& s)
        : httplib::ThreadPool(static_cast<size_t>(std::max(1, s.limits_.max_connections))),
          server_(s) {}
    void enqueue(std::function<void()> fn) override {
      if (server_.waiting_.load() >= server_.limits_.max_waiting) {
        // The backlog is full: answer on the accepting thread at once (a non-blocking 503 and
        // close), instead of queueing one more descriptor behind the busy workers.
        t_refuse = true;
        fn();
        t_refuse = false;
        return;
      }
      server_.waiting_.fetch_add(1);
      httplib::ThreadPool::enqueue(std::move(fn));
    }

   private:
    LimitedServer& server_;
  };

  bool process_and_close_socket(socket_t sock) override {
    bool refuse = t_refuse;
    if (!refuse) waiting_.fetch_sub(1);
    bool ret = false;
    if (refuse) {
      // Too many connections queued behind the workers: refuse this one at once rather than
      // hold its descriptor (best effort: the socket buffer takes the short answer).
      refused_.fetch_add(1);
      static constexpr char kBusy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::send(sock, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
      BoundedStream strm(sock);
      int count = std::max(1, limits_.keep_alive_requests);
      for (int i = 0; i < count && svr_sock_ != INVALID_SOCKET; ++i) {
        if (i > 0 && !strm.HasBuffered()) {
          // Idle between requests: wait for the next one at most keep_alive_idle.
          pollfd p{sock, POLLIN, 0};
          int r;
          do {
            r = ::poll(&p, 1, static_cast<int>(limits_.keep_alive_idle.count()));
          } while (r < 0 && errno == EINTR);
          if (r <= 0 || (p.revents & POLLIN) == 0) break;
        }
        strm.StartRequest(Clock::now() + limits_.request_timeout, limits_.max_request_bytes);
        bool connection_closed = false;
        t_stream = &strm;
        ret = process_request(strm, i + 1 == count, connection_closed, nullptr);
        t_stream = nullptr;
        if (!ret || connection_closed) break;
      }
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  HttpLimits limits_;
  std::atomic<int> waiting_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace

struct HttpEndpoints::Impl {
  explicit Impl(const HttpLimits& limits) : server(limits), limits_(limits) {}
  HttpHandlers handlers;
  LimitedServer server;
  HttpLimits limits_;
};

HttpEndpoints::HttpEndpoints(HttpHandlers handlers, HttpLimits limits)
    : impl_(std::make_unique<Impl>(limits)) {
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
    size_t used = 0;
    std::string digits = listen.substr(colon + 1);
    port = std::stoi(digits, &used);
    if (used != digits.size() || port < 0 || port > 65535) throw std::out_of_range("port");
  } catch (...) {
    return Error{fmt::format("--listen must be host:port with a port from 0 to 65535, got `{}`",
                             listen),
                 {}};
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  httplib::Server& s = impl_->server;
  HttpHandlers& h = impl_->handlers;
  const HttpLimits& limits_ = impl_->limits_;
  // Only GET and HEAD are served, and POST on /whatif: anything else is answered before its body
  // is read. A POST /whatif may send up to max_whatif_bytes in all (its headers were read within
  // max_request_bytes already); the routing reads its body after this handler.
  const HttpLimits limits = limits_;
  s.set_pre_routing_handler([limits](const httplib::Request& req, httplib::Response& res) {
    bool whatif = req.path == "/whatif";
    if (!whatif && (req.method == "GET" || req.method == "HEAD"))
      return httplib::Server::HandlerResponse::Unhandled;
    if (whatif && req.method == "POST") {
      size_t length = req.get_header_value<uint64_t>("Content-Length");
      if (length > limits.max_whatif_bytes) {
        res.status = 413;
        res.set_header("Connection", "close");
        res.set_content(fmt::format("{{\"error\":\"the body has {} bytes; at most {} are read\"}}\n",
                                    length, limits.max_whatif_bytes),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (t_stream != nullptr) t_stream->WidenBudget(limits.max_whatif_bytes, 0);
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 405;
    res.set_header("Allow", whatif ? "POST" : "GET, HEAD");
    res.set_header("Connection", "close");
    res.set_content("method not allowed\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
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
  // A document that may be missing (`handler` unset, or it says why not): 404 with the reason.
  using OptionalDocument = std::function<std::optional<std::string>(std::string* reason)>;
  auto document = [&s](const char* path, const OptionalDocument& handler, const char* missing,
                       const char* type) {
    s.Get(path, [&handler, missing, type](const httplib::Request&, httplib::Response& res) {
      std::string reason = missing;
      std::optional<std::string> doc = handler ? handler(&reason) : std::nullopt;
      if (!doc) {
        res.status = 404;
        res.set_content(reason + "\n", "text/plain");
        return;
      }
      res.set_content(std::move(*doc), type);
    });
  };
  document("/snapshot", h.snapshot_yaml,
           "no snapshot here: kiln serve runs with --no-snapshot, or on a scenario",
           "application/yaml");

  auto reply = [](httplib::Response& res, HttpReply r) {
    res.status = r.status;
    if (r.retry_after_s > 0) res.set_header("Retry-After", std::to_string(r.retry_after_s));
    res.set_content(std::move(r.body), r.content_type);
  };
  s.Post("/whatif", [&h, reply](const httplib::Request& req, httplib::Response& res) {
    if (!h.whatif) {
      reply(res, {404, "{\"error\":\"no what-if here: kiln serve runs without a cluster snapshot\"}\n"});
      return;
    }
    reply(res, h.whatif(req.body, req.get_header_value("Content-Type")));
  });
  s.Get("/explain", [&h, reply](const httplib::Request& req, httplib::Response& res) {
    if (!h.explain) {
      reply(res, {404, "{\"error\":\"no explanations here: kiln serve runs without a cluster snapshot\"}\n"});
      return;
    }
    bool pod = req.has_param("pod"), group = req.has_param("podgroup");
    if (pod == group) {
      reply(res, {400, "{\"error\":\"give exactly one of ?pod=namespace/name and ?podgroup=namespace/name\"}\n"});
      return;
    }
    reply(res, h.explain(pod ? "pod" : "podgroup", req.get_param_value(pod ? "pod" : "podgroup")));
  });
  document("/shadow", h.shadow_json, "no shadow: kiln serve runs without --shadow",
           "application/json");

  if (port == 0) {
    port = s.bind_to_any_port(host.c_str());
    if (port < 0) return Error{fmt::format("--listen {}: cannot bind", listen), {}};
  } else if (!s.bind_to_port(host.c_str(), port)) {
    return Error{fmt::format("--listen {}: cannot bind (in use?)", listen), {}};
  }
  impl_->server.WidenBacklog();
  port_ = port;
  thread_ = std::thread([this] {
    NameThisThread("kiln-http");
    impl_->server.listen_after_bind();
  });
  spdlog::info("serving /metrics /healthz /readyz /config /snapshot /explain /whatif /shadow on {}:{}", host, port_);
  return Status::Ok();
}

void HttpEndpoints::Stop() {
  if (!thread_.joinable()) return;
  impl_->server.stop();
  thread_.join();
}

}  // namespace kiln::server
