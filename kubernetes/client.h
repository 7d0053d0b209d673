#pragma once
// A small Kubernetes API client over libcurl: plain requests (GET, POST, PUT, PATCH, DELETE)
// that return the HTTP status and body, a paged LIST, and a streaming WATCH that hands each
// event to a callback and can be cancelled from another thread.
//
// Requests reuse a pool of curl handles, so connections (HTTP/2 where the server offers it) and
// TLS sessions are kept across calls; each WATCH holds its own connection for as long as it
// streams. The client is thread-safe.
//
// JSON crosses this interface as nlohmann::json (forward-declared here; include
// <nlohmann/json.hpp> in the .cc that reads it).

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kubernetes/kubeconfig.h"
#include "runtime/status.h"

namespace kiln::kube {

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds request_timeout{30000};
  // A watch that receives nothing for this long is abandoned (the server sends bookmarks and
  // ends streams after timeoutSeconds, so a silent connection is a dead one).
  std::chrono::seconds watch_idle_timeout{120};
  std::string user_agent = "kiln-scheduler";
  // How many idle connections (curl handles) the pool keeps: at least one per thread that
  // writes at once (the write pool) plus the reflectors' LISTs, or connections are closed and
  // opened again under load.
  int max_idle_handles = 16;
  // Client-side rate limit of requests (not of watch streams), as kube-scheduler's and Volcano's
  // --kube-api-qps / --kube-api-burst: `burst` at once, then `qps` per second. qps <= 0: none.
  double qps = 0;
  int burst = 0;  // <= 0: max(1, qps)
};

// A token bucket: up to `burst` tokens, refilled at `qps` per second. Acquire takes one, waiting
// until it is due when none is left. Waiters are served in the order they asked (each reserves
// the next slot), so N acquisitions from a full bucket take at least (N - burst) / qps seconds
// whatever the number of threads. qps <= 0 never waits. Thread-safe.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst);
  // Takes a token; returns how long it waited.
  std::chrono::nanoseconds Acquire();
  bool limited() const { return qps_ > 0; }

 private:
  using Clock = std::chrono::steady_clock;
  double qps_;
  double burst_;
  std::mutex mu_;
  double tokens_;  // may go below zero: tokens reserved by callers still waiting
  Clock::time_point last_;
};

struct Response {
  int status = 0;  // HTTP status code
  std::string body;
  bool ok() const { return status >= 200 && status < 300; }
};

// A Kubernetes `Status` object (the body of an error answer, or an in-band watch ERROR).
struct ApiStatus {
  int code = 0;
  std::string reason;   // NotFound, Conflict, AlreadyExists, Expired, TooManyRequests, ...
  std::string message;
  // The server has not reached the resourceVersion asked for (a StatusCause of type
  // ResourceVersionTooLarge, or an older server's 504 "Too large resource version"): the
  // client's version is from a future the server does not have, e.g. after etcd was restored.
  bool resource_version_too_large = false;
};
// Decodes the Status in `body` (or synthesises one from `http_status` when the body is not one).
ApiStatus DecodeStatus(int http_status, std::string_view body);
// "409 Conflict: Operation cannot be fulfilled ..." for logs and errors.
std::string Describe(const ApiStatus& s);

// Cancels a running Watch from another thread. One canceller may serve one watch at a time;
// Reset() re-arms it for the next.
class WatchCanceller {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  void Reset() { cancelled_ = false; }

 private:
  friend class KubeClient;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  void* multi_ = nullptr;  // the CURLM* of the watch in flight
};

// How a watch stream ended.
struct WatchEnd {
  int http_status = 0;   // status of the watch request (200 for a stream that ran)
  std::string body;      // the error body when http_status is not 200
  bool cancelled = false;
  bool stopped = false;  // the callback asked to stop
};

class KubeClient {
 public:
  static Result<std::shared_ptr<KubeClient>> Create(KubeConfig config, ClientOptions options = {});
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const KubeConfig& config() const { return config_; }

  // One request to `path` (starting with '/', query included). A transport failure (connect,
  // TLS, timeout) is an Error; every HTTP answer is a Response.
  Result<Response> Do(std::string_view method, const std::string& path, std::string_view body = {},
                      std::string_view content_type = "application/json");
  Result<Response> Get(const std::string& path) { return Do("GET", path); }
  Result<Response> Post(const std::string& path, std::string_view body) {
    return Do("POST", path, body);
  }
  Result<Response> Put(const std::string& path, std::string_view body) {
    return Do("PUT", path, body);
  }
  // patch_type: "merge" (application/merge-patch+json), "strategic", or "json".
  Result<Response> Patch(const std::string& path, std::string_view body,
                         std::string_view patch_type = "merge");
  Result<Response> Delete(const std::string& path, std::string_view body = {}) {
    return Do("DELETE", path, body);
  }

  // Paged LIST of `path` (no query; `query` adds e.g. "labelSelector=a%3Db"): limit=`page_size`
  // and continue tokens until the last page. on_item gets the JSON text of each item, padded as
  // kubernetes/decode_fast.h asks (no DOM of the page is built); an Error it returns ends the
  // LIST with that Error. *resource_version gets the list's resourceVersion. A non-2xx answer is
  // an Error whose message starts with the code ("410 Expired: ...") and is also returned in
  // *status when given.
  Status ListRaw(const std::string& path, const std::string& query, int page_size,
                 const std::function<Status(std::string_view item)>& on_item,
                 std::string* resource_version, ApiStatus* status = nullptr);
  // The same with each item parsed (an item that is not JSON fails the LIST).
  Status List(const std::string& path, const std::string& query, int page_size,
              const std::function<void(const nlohmann::json& item)>& on_item,
              std::string* resource_version, ApiStatus* status = nullptr);

  // WATCH `path` with `query` (the caller adds resourceVersion, allowWatchBookmarks,
  // timeoutSeconds; watch=1 is added here). on_event(type, object) for every event line, with
  // the object's JSON text (padded as kubernetes/decode_fast.h asks); return false to stop.
  // on_batch_end, when given, is called after each read from the stream has been handed to
  // on_event (so the caller can apply a batch of events at once) and at least every second while
  // the stream is open; when it returns true (it holds events it could not apply yet) it is
  // called again within 20 ms even if nothing arrives. Returns how the stream ended; a transport
  // failure is an Error.
  Result<WatchEnd> Watch(const std::string& path, const std::string& query,
                         const std::function<bool(std::string_view type,
                                                  std::string_view object)>& on_event,
                         WatchCanceller* canceller, const std::function<bool()>& on_batch_end = {});

  // Number of requests made (all verbs, watches included).
  int64_t request_count() const { return requests_.load(); }
  // Time requests spent waiting for the rate limit (ClientOptions::qps), in total.
  std::chrono::nanoseconds throttled() const { return std::chrono::nanoseconds(throttled_ns_.load()); }

 private:
  KubeClient(KubeConfig config, ClientOptions options);
  // A pooled handle (its options as the last request left them), or a new one (*fresh).
  void* AcquireHandle(bool* fresh);
  void ReleaseHandle(void* h);
  // Sets connection and request options on a new handle; returns the header list to free.
  void* Prepare(void* h, const std::string& url, std::string_view content_type);
  // What every request of a handle shares: timeouts, protocol, TLS.
  void SetConnectionOptions(void* h);
  // The URL and the headers (auth included); returns the header list to free after the request.
  void* SetRequestOptions(void* h, const std::string& url, std::string_view content_type);
  std::string BearerToken();

  KubeConfig config_;
  ClientOptions options_;
  std::mutex pool_mu_;
  std::vector<void*> idle_;
  std::mutex token_mu_;
  std::string token_;
  int64_t token_mtime_ns_ = -1;
  std::atomic<int64_t> requests_{0};
  TokenBucket limiter_;
  std::atomic<int64_t> throttled_ns_{0};
};

// Percent-encodes a query value.
std::string QueryEscape(std::string_view s);

}  // namespace kiln::kube
