#include "kubernetes/client.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "kubernetes/decode_fast.h"
#include "runtime/file_read.h"

namespace kiln::kube {

using json = nlohmann::json;

namespace {

std::once_flag g_curl_init;

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Sets a PEM blob option (the data is copied by curl).
void SetBlob(CURL* h, CURLoption opt, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(h, opt, &blob);
}

// State of one watch stream: the bytes of a partial line and the callback.
struct WatchState {
  std::string pending;
  std::string error_body;
  long http_status = 0;
  bool stopped = false;
  std::string line;  // the line being handed out, padded
  const std::function<bool(std::string_view, std::string_view)>* on_event = nullptr;
  CURL* handle = nullptr;
};

size_t WatchWrite(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<WatchState*>(user);
  size_t len = size * n;
  if (st->http_status == 0) curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &st->http_status);
  if (st->http_status != 200) {
    st->error_body.append(data, len);
    return len;
  }
  st->pending.append(data, len);
  size_t start = 0;
  for (size_t nl; (nl = st->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(st->pending.data() + start, nl - start);
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    st->line.assign(line);
    std::string type;
    std::string_view object;
    WatchLine split = SplitWatchEvent(PadInPlace(st->line), &type, &object);
    if (split == WatchLine::NotJson) {
      spdlog::warn("watch: skipping an event line that is not JSON ({} bytes)", line.size());
      continue;
    }
    if (split == WatchLine::Incomplete) continue;
    if (!(*st->on_event)(type, object)) {
      st->stopped = true;
      return 0;  // aborts the transfer
    }
  }
  st->pending.erase(0, start);
  return len;
}

}  // namespace

std::string QueryEscape(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

ApiStatus DecodeStatus(int http_status, std::string_view body) {
  ApiStatus s;
  s.code = http_status;
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.value("kind", "") == "Status") {
    if (auto c = j.find("code"); c != j.end() && c->is_number_integer()) s.code = c->get<int>();
    s.reason = j.value("reason", "");
    s.message = j.value("message", "");
    if (auto d = j.find("details"); d != j.end() && d->is_object())
      if (auto causes = d->find("causes"); causes != d->end() && causes->is_array())
        for (const json& c : *causes)
          if (c.is_object() && c.value("reason", "") == "ResourceVersionTooLarge")
            s.resource_version_too_large = true;
  } else {
    s.message = std::string(body.substr(0, 200));
  }
  if (s.code == 504 && s.message.find("Too large resource version") != std::string::npos)
    s.resource_version_too_large = true;
  if (s.reason.empty()) {
    switch (s.code) {
      case 404: s.reason = "NotFound"; break;
      case 409: s.reason = "Conflict"; break;
      case 410: s.reason = "Expired"; break;
      case 429: s.reason = "TooManyRequests"; break;
      case 500: s.reason = "InternalError"; break;
      case 503: s.reason = "ServiceUnavailable"; break;
      default: break;
    }
  }
  return s;
}

std::string Describe(const ApiStatus& s) {
  return fmt::format("{} {}: {}", s.code, s.reason, s.message);
}

void WatchCanceller::Cancel() {
  cancelled_ = true;
  std::lock_guard lock(mu_);
  if (multi_) curl_multi_wakeup(static_cast<CURLM*>(multi_));
}

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps),
      burst_(burst > 0 ? burst : std::max(1.0, qps)),
      tokens_(burst_),
      last_(Clock::now()) {}

std::chrono::nanoseconds TokenBucket::Acquire() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::chrono::duration<double> wait(0);
  {
    std::lock_guard lock(mu_);
    auto now = Clock::now();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
    tokens_ -= 1;
    // Below zero, this caller holds the slot after every earlier waiter's: it is due when the
    // refill has paid back what is owed.
    if (tokens_ < 0) wait = std::chrono::duration<double>(-tokens_ / qps_);
  }
  if (wait.count() <= 0) return std::chrono::nanoseconds(0);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wait);
  std::this_thread::sleep_for(ns);
  return ns;
}

KubeClient::KubeClient(KubeConfig config, ClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      limiter_(options_.qps, options_.burst) {
  token_ = config_.token;
}

KubeClient::~KubeClient() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

Result<std::shared_ptr<KubeClient>> KubeClient::Create(KubeConfig config, ClientOptions options) {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (config.server.empty()) return Error{"kubernetes client: no server", {}};
  // Files named by the config must be readable now, not at the first request, and must be
  // regular files of a sane size (`tokenFile: /dev/zero` would be read forever).
  for (auto [f, what] : {std::pair{&config.ca_file, "certificate-authority"},
                         std::pair{&config.client_cert_file, "client-certificate"},
                         std::pair{&config.client_key_file, "client-key"},
                         std::pair{&config.token_file, "tokenFile"}}) {
    if (f->empty()) continue;
    auto text = ReadBoundedFile(*f, kMaxCredentialBytes, what);
    if (!text)
      return Error{fmt::format("{}: {}", config.source.empty() ? "kubeconfig" : config.source,
                               text.error().message),
                   {}};
  }
  if (config.server.rfind("http://", 0) == 0 && (!config.token.empty() || !config.token_file.empty()))
    spdlog::warn("kubernetes client: sending a bearer token over plain HTTP to {}", config.server);
  return std::shared_ptr<KubeClient>(new KubeClient(std::move(config), std::move(options)));
}

std::string KubeClient::BearerToken() {
  if (config_.token_file.empty()) return config_.token;
  // A projected service-account token is rotated in place; re-read it when the file changes.
  struct stat st {};
  std::lock_guard lock(token_mu_);
  if (stat(config_.token_file.c_str(), &st) == 0) {
    int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (mtime != token_mtime_ns_) {
      auto read = ReadBoundedFile(config_.token_file, kMaxCredentialBytes, "tokenFile");
      if (!read) {
        // The last good token stays in use; the message repeats only when the file changes.
        spdlog::warn("kubernetes client: {}", read.error().message);
        token_mtime_ns_ = mtime;
        return token_;
      }
      std::string t = std::move(*read);
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
      if (!t.empty()) {
        token_ = t;
        token_mtime_ns_ = mtime;
      }
    }
  }
  return token_;
}

void* KubeClient::AcquireHandle(bool* fresh) {
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      *fresh = false;
      return h;
    }
  }
  *fresh = true;
  return curl_easy_init();
}

void KubeClient::ReleaseHandle(void* h) {
  std::lock_guard lock(pool_mu_);
  if (static_cast<int>(idle_.size()) < options_.max_idle_handles) {
    idle_.push_back(h);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(h));
  }
}

void* KubeClient::Prepare(void* hv, const std::string& url, std::string_view content_type) {
  CURL* h = static_cast<CURL*>(hv);
  SetConnectionOptions(h);
  return SetRequestOptions(h, url, content_type);
}

void KubeClient::SetConnectionOptions(void* hv) {
  CURL* h = static_cast<CURL*>(hv);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(h, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // gzip where the server offers it
  if (config_.server.rfind("https://", 0) == 0) {
    if (config_.insecure_skip_tls_verify) {
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!config_.ca_pem.empty()) {
      SetBlob(h, CURLOPT_CAINFO_BLOB, config_.ca_pem);
    } else if (!config_.ca_file.empty()) {
      curl_easy_setopt(h, CURLOPT_CAINFO, config_.ca_file.c_str());
    }
    if (!config_.client_cert_pem.empty()) {
      SetBlob(h, CURLOPT_SSLCERT_BLOB, config_.client_cert_pem);
      curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (!config_.client_cert_file.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
    }
    if (!config_.client_key_pem.empty()) {
      SetBlob(h, CURLOPT_SSLKEY_BLOB, config_.client_key_pem);
      curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (!config_.client_key_file.empty()) {
      curl_easy_setopt(h, CURLOPT_SSLKEY, config_.client_key_file.c_str());
    }
  }
}

void* KubeClient::SetRequestOptions(void* hv, const std::string& url, std::string_view content_type) {
  CURL* h = static_cast<CURL*>(hv);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!content_type.empty())
    headers = curl_slist_append(headers, fmt::format("Content-Type: {}", content_type).c_str());
  if (std::string token = BearerToken(); !token.empty())
    headers = curl_slist_append(headers, fmt::format("Authorization: Bearer {}", token).c_str());
  // No "Expect: 100-continue" round trip before a body.
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  return headers;
}

Result<Response> KubeClient::Do(std::string_view method, const std::string& path,
                                std::string_view body, std::string_view content_type) {
  throttled_ns_ += limiter_.Acquire().count();
  ++requests_;
  bool fresh = false;
  CURL* h = static_cast<CURL*>(AcquireHandle(&fresh));
  if (!h) return Error{"kubernetes client: curl_easy_init failed", {}};
  // A pooled handle keeps its connection options (and its connection): only what differs per
  // request is set again, and the method is reset to a plain GET first.
  if (fresh) SetConnectionOptions(h);
  std::string url = config_.server + path;
  auto* headers = static_cast<curl_slist*>(SetRequestOptions(h, url, body.empty() ? "" : content_type));
  std::string m(method);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);  // no body, no upload: what the last request left goes
  if (m != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m.c_str());
    if (!body.empty() || m == "POST" || m == "PUT" || m == "PATCH") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    }
  }
  Response resp;
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp.body);
  CURLcode rc = curl_easy_perform(h);
  // The handle must not keep pointers to this request's memory while it waits in the pool.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(-1));
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    // A failed handle may hold a broken connection; do not return it to the pool.
    curl_easy_cleanup(h);
    return Error{fmt::format("{} {}{}: {}", m, config_.server, path, curl_easy_strerror(rc)), {}};
  }
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  resp.status = static_cast<int>(code);
  ReleaseHandle(h);
  return resp;
}

Result<Response> KubeClient::Patch(const std::string& path, std::string_view body,
                                   std::string_view patch_type) {
  std::string_view ct = "application/merge-patch+json";
  if (patch_type == "strategic") ct = "application/strategic-merge-patch+json";
  if (patch_type == "json") ct = "application/json-patch+json";
  return Do("PATCH", path, body, ct);
}

Status KubeClient::ListRaw(const std::string& path, const std::string& query, int page_size,
                           const std::function<Status(std::string_view item)>& on_item,
                           std::string* resource_version, ApiStatus* status) {
  std::string cont;
  for (;;) {
    std::string url = fmt::format("{}?limit={}", path, page_size);
    if (!query.empty()) url += "&" + query;
    if (!cont.empty()) url += "&continue=" + QueryEscape(cont);
    auto resp = Get(url);
    if (!resp) return resp.error();
    if (!resp->ok()) {
      ApiStatus s = DecodeStatus(resp->status, resp->body);
      if (status) *status = s;
      return Error{fmt::format("LIST {}: {}", path, Describe(s)), {}};
    }
    ListPageMeta meta;
    if (Status s = ForEachListItem(PadInPlace(resp->body), on_item, &meta); !s)
      return Error{fmt::format("LIST {}: {}", path, s.error().message), {}};
    cont = std::move(meta.continue_token);
    if (cont.empty()) {
      if (resource_version) *resource_version = std::move(meta.resource_version);
      return Status::Ok();
    }
  }
}

Status KubeClient::List(const std::string& path, const std::string& query, int page_size,
                        const std::function<void(const json& item)>& on_item,
                        std::string* resource_version, ApiStatus* status) {
  auto parsed = [&](std::string_view text) -> Status {
    json item = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (item.is_discarded()) return Error{"an item is not JSON", {}};
    on_item(item);
    return Status::Ok();
  };
  return ListRaw(path, query, page_size, parsed, resource_version, status);
}

Result<WatchEnd> KubeClient::Watch(const std::string& path, const std::string& query,
                                   const std::function<bool(std::string_view, std::string_view)>& on_event,
                                   WatchCanceller* canceller, const std::function<bool()>& on_batch_end) {
  ++requests_;
  CURL* h = curl_easy_init();
  CURLM* multi = curl_multi_init();
  if (!h || !multi) {
    if (h) curl_easy_cleanup(h);
    if (multi) curl_multi_cleanup(multi);
    return Error{"kubernetes client: curl init failed", {}};
  }
  std::string url = fmt::format("{}{}?watch=1", config_.server, path);
  if (!query.empty()) url += "&" + query;
  auto* headers = static_cast<curl_slist*>(Prepare(h, url, ""));
  WatchState st;
  st.on_event = &on_event;
  st.handle = h;
  curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WatchWrite);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  // Larger reads than curl's 16 kB: a busy stream (every pod changing at once) hands over
  // hundreds of events per read, and on_batch_end applies them together.
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
  // A stream that delivers nothing for the idle timeout is dead (bookmarks keep live ones busy).
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.watch_idle_timeout.count()));
  curl_multi_add_handle(multi, h);
  if (canceller) {
    std::lock_guard lock(canceller->mu_);
    canceller->multi_ = multi;
  }
  bool cancelled = false;
  CURLcode result = CURLE_OK;
  for (;;) {
    if (canceller && canceller->cancelled()) {
      cancelled = true;
      break;
    }
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi, &running);
    if (mc != CURLM_OK) {
      result = CURLE_RECV_ERROR;
      break;
    }
    int queued = 0;
    bool done = false;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg == CURLMSG_DONE) {
        result = msg->data.result;
        done = true;
      }
    }
    bool holding = on_batch_end && on_batch_end();
    if (done || running == 0) break;
    curl_multi_poll(multi, nullptr, 0, holding ? 20 : 1000, nullptr);
  }
  if (canceller) {
    std::lock_guard lock(canceller->mu_);
    canceller->multi_ = nullptr;
  }
  if (st.http_status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st.http_status);
  curl_multi_remove_handle(multi, h);
  curl_easy_cleanup(h);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  WatchEnd end;
  end.http_status = static_cast<int>(st.http_status);
  end.body = std::move(st.error_body);
  end.cancelled = cancelled;
  end.stopped = st.stopped;
  if (!cancelled && !st.stopped && result != CURLE_OK)
    return Error{fmt::format("WATCH {}{}: {}", config_.server, path, curl_easy_strerror(result)), {}};
  return end;
}

}  // namespace kiln::kube
