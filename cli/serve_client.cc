#include "cli/serve_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>

namespace kiln::cli {

namespace {

struct Sink {
  std::string* body;
  size_t max_bytes;
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  auto* sink = static_cast<Sink*>(out);
  if (sink->body->size() + size * n > sink->max_bytes) return 0;  // curl then fails the transfer
  sink->body->append(data, size * n);
  return size * n;
}

}  // namespace

void AddServeClientOptions(CLI::App& cmd, std::string& server, std::string& output,
                           const std::string& output_help, double& timeout_s) {
  cmd.add_option("--server", server,
                 "base URL of kiln serve's HTTP endpoints (default http://127.0.0.1:8080)");
  cmd.add_option("-o,--output", output, output_help);
  cmd.add_option("--timeout", timeout_s,
                 fmt::format("seconds to wait for the answer (default {})", timeout_s))
      ->check(CLI::Range(0.1, 3600.0));
}

std::string ServerBaseUrl(std::string server) {
  while (!server.empty() && server.back() == '/') server.pop_back();
  if (server.find("://") == std::string::npos) server = "http://" + server;
  return server;
}

Result<ServeAnswer> AskServe(const ServeRequest& request) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Error{"cannot start an HTTP client (curl_easy_init)", {}};
  ServeAnswer a;
  Sink sink{&a.body, request.max_answer_bytes};
  char error[CURL_ERROR_SIZE] = "";
  curl_slist* headers = nullptr;
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  if (request.post_body) {
    headers = curl_slist_append(headers, ("Content-Type: " + request.content_type).c_str());
    headers = curl_slist_append(headers, "Accept: application/json");
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.post_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.post_body->size()));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK)
    return Error{fmt::format("{} {}: {}", request.post_body ? "POST" : "GET", request.url,
                             error[0] ? error : curl_easy_strerror(rc)),
                 {}};
  return a;
}

}  // namespace kiln::cli
