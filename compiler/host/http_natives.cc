// The standard library's `http_post` (stdlib/library.h, Host impl, capability `http`): one
// blocking HTTP POST with a JSON body and a hard timeout, made with libcurl. The extender policy
// is its only user; the session fans its per-node calls out on a thread pool sized for I/O
// (Session::node_pool), so the calls of one session overlap instead of queueing.
//
// A reply is "some" only for status 200; connection errors, timeouts and other statuses give
// none, which the policy maps to Volcano's error handling (`extender.ignorable`).
#include <curl/curl.h>

#include <cstring>
#include <mutex>
#include <string>

#include "compiler/codegen/runtime_support.h"
#include "compiler/host/host_symbols.h"

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

size_t Collect(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

}  // namespace
}  // namespace kiln

extern "C" {

bool kiln_host_http_post(const char* url, size_t url_size, const char* body, size_t body_size,
                         int64_t timeout_ns, KStr* out) {
  kiln::EnsureCurlInitialised();
  thread_local kiln::ThreadHandle handle;
  if (!handle.curl) handle.curl = curl_easy_init();
  CURL* curl = handle.curl;
  if (!curl) return false;
  curl_easy_reset(curl);
  std::string target(url ? url : "", url ? url_size : 0);
  std::string reply;
  // A non-positive timeout would mean "wait forever" to libcurl; the language promises every
  // call ends, so it becomes the smallest one.
  long timeout_ms = timeout_ns <= 0 ? 1 : static_cast<long>((timeout_ns + 999'999) / 1'000'000);
  struct curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  // No "Expect: 100-continue" round trip before bodies over 1 KiB (a task and a node are more).
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body ? body_size : 0));
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe off the main thread
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &kiln::Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK || status != 200) return false;
  // The reply lives in the handler's call arena, like every other string a call builds.
  char* bytes = static_cast<char*>(kiln_rt_alloc(static_cast<int64_t>(reply.size()) + 1));
  if (!bytes) return false;
  std::memcpy(bytes, reply.data(), reply.size());
  bytes[reply.size()] = '\0';
  *out = KStr{bytes, reply.size()};
  return true;
}

}  // extern "C"
