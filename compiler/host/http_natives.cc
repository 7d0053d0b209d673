// The standard library's `http_post` (stdlib/library.h, Host impl, capability `http`): one
// blocking HTTP POST with a JSON body and a hard timeout, made with libcurl. The extender policy
// is its only user; the session fans its per-node calls out on a thread pool sized for I/O
// (Session::node_pool), so the calls of one session overlap instead of queueing.
//
// A reply is "some" only for status 200; connection errors, the policy's own timeout and other
// statuses give none, which the policy maps to Volcano's error handling (`extender.ignorable`).
// What the runtime holds a request to is a fault instead (docs/safety.md): a URL that is not
// http(s) or not under the plugin's granted prefixes, a reply past the call's memory budget,
// and running out of the call's wall time or of the plugin's HTTP time in the session.
#include <curl/curl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "stdlib/runtime_support.h"
#include "compiler/host/host_symbols.h"
#include "runtime/session.h"

namespace kiln {
namespace {

void EnsureCurlInitialised() {
  // curl_global_init is not thread-safe; every thread funnels through here first.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One easy handle per thread: libcurl keeps the connection to the extender open between calls
// of the same thread (HTTP keep-alive), which matters when a session makes thousands of them.
struct ThreadHandle {
  CURL* curl = nullptr;
  ~ThreadHandle() {
    if (curl) curl_easy_cleanup(curl);
  }
};

// The reply, streamed against the call's memory budget: past `limit` bytes the transfer is
// aborted (the write callback answers 0), so a huge reply never sits in memory whole.
struct Reply {
  std::string bytes;
  size_t limit = 0;
  bool over = false;
};

size_t Collect(char* data, size_t size, size_t count, void* user) {
  auto* reply = static_cast<Reply*>(user);
  size_t n = size * count;
  if (n > reply->limit - reply->bytes.size()) {
    reply->over = true;
    return 0;
  }
  reply->bytes.append(data, n);
  return n;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

void Fault(FaultKind kind, const std::string& message) {
  kiln_policy_fault_kind(static_cast<int32_t>(kind), message.data(), message.size());
}

std::string Seconds(int64_t ns) { return fmt::format("{:.3g}s", static_cast<double>(ns) / 1e9); }

}  // namespace
}  // namespace kiln

extern "C" {

bool kiln_host_http_post(const char* url, size_t url_size, const char* body, size_t body_size,
                         int64_t timeout_ns, KStr* out) {
  using kiln::FaultKind;
  std::string target(url ? url : "", url ? url_size : 0);
  // 1. The scheme: http and https only (libcurl also speaks gopher, dict, telnet, ..., which
  //    would let a policy send raw bytes to any port). libcurl is told the same below, for
  //    redirects too.
  if (!kiln::StartsWithNoCase(target, "http://") && !kiln::StartsWithNoCase(target, "https://")) {
    kiln::Fault(FaultKind::Host,
                fmt::format("http_post: `{}` is not an http:// or https:// URL", target.substr(0, 200)));
    return false;
  }
  // 2. The grant: scheduler.conf grants `http` to the plugin's entry, optionally only under URL
  //    prefixes (runtime/conf.h CapabilityGrant). A policy without the grant does not load
  //    (PolicyProvider::Prepare); this check holds the prefixes.
  const auto& call = kiln::detail::ThisThreadCall();
  const kiln::Session* ssn = call.session;
  const kiln::PluginOption* option = nullptr;
  if (ssn != nullptr && call.slot >= 0 && call.slot < static_cast<int>(ssn->plugins().size()))
    option = ssn->plugins()[static_cast<size_t>(call.slot)].option;
  if (ssn != nullptr) {
    const kiln::CapabilityGrant* grant = option ? option->Grant("http") : nullptr;
    if (grant == nullptr) {
      kiln::Fault(FaultKind::Host, "http_post: scheduler.conf does not grant this plugin `http`");
      return false;
    }
    if (!grant->url_prefixes.empty() &&
        std::none_of(grant->url_prefixes.begin(), grant->url_prefixes.end(),
                     [&](const std::string& p) { return target.starts_with(p); })) {
      kiln::Fault(FaultKind::Host,
                  fmt::format("http_post: `{}` is under none of the URL prefixes granted to "
                              "plugin {} ({})",
                              target.substr(0, 200), option->name,
                              fmt::join(grant->url_prefixes, ", ")));
      return false;
    }
  }
  // 3. Time: the request may take the policy's timeout, but no more than the call's wall time
  //    left nor the plugin's HTTP time left in this session. When one of those cuts it short,
  //    running out is a time fault; the policy's own timeout is an ordinary `none`.
  int64_t allowed = timeout_ns <= 0 ? 1'000'000 : timeout_ns;
  bool cut = false;
  std::string cut_by;
  if (ssn != nullptr) {
    int64_t http_left = ssn->HttpTimeLeft(call.slot);
    if (http_left <= 0) {
      kiln::Fault(FaultKind::Time, fmt::format("http_post: the plugin spent its HTTP budget of "
                                               "{} per session",
                                               kiln::Seconds(kiln::PolicySessionHttpBudget())));
      return false;
    }
    int64_t call_left = kiln::PolicyCallTimeBudget() - (kiln::CoarseNowNs() - call.started_ns);
    if (call_left <= 0) {
      kiln::Fault(FaultKind::Time, fmt::format("http_post: the call is past its wall-time "
                                               "budget of {}",
                                               kiln::Seconds(kiln::PolicyCallTimeBudget())));
      return false;
    }
    if (http_left < allowed) {
      allowed = http_left;
      cut = true;
      cut_by = fmt::format("the plugin's HTTP budget of {} per session",
                           kiln::Seconds(kiln::PolicySessionHttpBudget()));
    }
    if (call_left < allowed) {
      allowed = call_left;
      cut = true;
      cut_by = fmt::format("the call's wall-time budget of {}",
                           kiln::Seconds(kiln::PolicyCallTimeBudget()));
    }
  }
  if (!kiln::ChargeHostWork(static_cast<int64_t>(body ? body_size : 0))) return false;

  kiln::EnsureCurlInitialised();
  thread_local kiln::ThreadHandle handle;
  if (!handle.curl) handle.curl = curl_easy_init();
  CURL* curl = handle.curl;
  if (!curl) return false;
  curl_easy_reset(curl);
  kiln::Reply reply;
  // What the call may still allocate: the reply is copied into its arena.
  size_t budget = kiln::PolicyCallMemoryBudget();
  size_t used = kiln::CurrentArena()->BytesInUse();
  reply.limit = used + 1 < budget ? budget - used - 1 : 0;
  // A non-positive timeout would mean "wait forever" to libcurl; the language promises every
  // call ends, so it becomes the smallest one.
  long timeout_ms = static_cast<long>(std::max<int64_t>(1, (allowed + 999'999) / 1'000'000));
  struct curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  // No "Expect: 100-continue" round trip before bodies over 1 KiB (a task and a node are more).
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body ? body_size : 0));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe off the main thread
  // A Content-Length past the limit is refused before any of the body is read.
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(reply.limit));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &kiln::Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  auto start = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(curl);
  int64_t took = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start).count();
  if (ssn != nullptr) ssn->AddHttpTime(call.slot, took);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (reply.over || rc == CURLE_FILESIZE_EXCEEDED) {
    kiln::Fault(FaultKind::Memory,
                fmt::format("http_post: the reply from {} exceeded the call's memory budget of "
                            "{} bytes",
                            target.substr(0, 200), budget));
    return false;
  }
  if (rc == CURLE_OPERATION_TIMEDOUT && cut) {
    kiln::Fault(FaultKind::Time, fmt::format("http_post: {} ran out before {} answered", cut_by,
                                             target.substr(0, 200)));
    return false;
  }
  if (rc != CURLE_OK || status != 200) return false;
  // The reply lives in the handler's call arena, like every other string a call builds.
  char* bytes = static_cast<char*>(kiln_rt_alloc(static_cast<int64_t>(reply.bytes.size()) + 1));
  if (!bytes) return false;
  std::memcpy(bytes, reply.bytes.data(), reply.bytes.size());
  bytes[reply.bytes.size()] = '\0';
  *out = KStr{bytes, reply.bytes.size()};
  return true;
}

}  // extern "C"
