// `kiln snapshot --server URL [-o FILE]`: fetches GET /snapshot from a running `kiln serve` (the
// live cluster as a scenario, kubernetes/scenario_writer.h) and saves it. The answer is read back
// by the scenario loader before anything is written, so a file that `kiln simulate` would refuse
// is never saved; the file is replaced whole (written beside it, then renamed).
#include <curl/curl.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/errors.h"
#include "simulator/scenario.h"

namespace kiln::cli {

namespace {

struct SnapshotFlags {
  std::string server = "http://127.0.0.1:8080";
  std::string output = "-";
  double timeout_s = 60;
};

// More than any cluster's scenario (100k pods are ~60 MB): a server that sends more is refused.
constexpr size_t kMaxSnapshotBytes = size_t{1} << 30;

size_t Append(char* data, size_t size, size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() + size * n > kMaxSnapshotBytes) return 0;  // curl then fails the transfer
  body->append(data, size * n);
  return size * n;
}

Result<std::string> Get(const std::string& url, double timeout_s) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return Error{"cannot start an HTTP client (curl_easy_init)", {}};
  std::string body;
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK)
    return Error{fmt::format("GET {}: {}", url, error[0] ? error : curl_easy_strerror(rc)), {}};
  if (status != 200) {
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    return Error{fmt::format("GET {}: HTTP {}{}", url, status, body.empty() ? "" : ": " + body), {}};
  }
  return body;
}

int Snapshot(const SnapshotFlags& f) {
  std::string base = f.server;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.find("://") == std::string::npos) base = "http://" + base;
  auto body = Get(base + "/snapshot", f.timeout_s);
  if (!body) return BadInput(body.error());
  // What the server sent must be a scenario the simulator takes.
  auto spec = ParseScenario(*body, f.server + "/snapshot");
  if (!spec)
    return BadInput(Error{fmt::format("the server's snapshot is not a valid scenario: {}",
                                      FormatError(spec.error())),
                          {}});
  if (f.output == "-") {
    std::fwrite(body->data(), 1, body->size(), stdout);
    return kExitOk;
  }
  std::string tmp = f.output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(body->data(), static_cast<std::streamsize>(body->size()));
    if (!out.flush())
      return BadInput(Error{fmt::format("cannot write {}", tmp), {}});
  }
  std::error_code ec;
  std::filesystem::rename(tmp, f.output, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return BadInput(Error{fmt::format("cannot write {}: {}", f.output, ec.message()), {}});
  }
  fmt::print(stderr, "{}: {} nodes, {} pods, {} PodGroups, {} queues at {}\n", f.output,
             spec->cluster.nodes.size(), spec->cluster.pods.size(), spec->cluster.pod_groups.size(),
             spec->cluster.queues.size(), f.server);
  return kExitOk;
}

}  // namespace

void AddSnapshotCommand(CLI::App& app) {
  auto f = std::make_shared<SnapshotFlags>();
  auto* cmd = app.add_subcommand(
      "snapshot", "save the cluster a running `kiln serve` sees as a scenario for `kiln simulate`");
  cmd->add_option("--server", f->server, "base URL of kiln serve's HTTP endpoints (default "
                                         "http://127.0.0.1:8080)");
  cmd->add_option("-o,--output", f->output, "file to write (default -: standard output)");
  cmd->add_option("--timeout", f->timeout_s, "seconds to wait for the answer (default 60)")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->callback([f] { EndCommand(Snapshot(*f)); });
}

}  // namespace kiln::cli
