// `kiln snapshot --server URL [-o FILE]`: fetches GET /snapshot from a running `kiln serve` (the
// live cluster as a scenario, kubernetes/scenario_writer.h) and saves it. The answer is read back
// by the scenario loader before anything is written, so a file that `kiln simulate` would refuse
// is never saved; the file is replaced whole (written beside it, then renamed).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/serve_client.h"
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

Result<std::string> Get(const std::string& url, double timeout_s) {
  auto answer =
      AskServe({.url = url, .timeout_s = timeout_s, .max_answer_bytes = kMaxSnapshotBytes});
  if (!answer) return answer.error();
  std::string& body = answer->body;
  if (answer->status != 200) {
    while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
    return Error{
        fmt::format("GET {}: HTTP {}{}", url, answer->status, body.empty() ? "" : ": " + body), {}};
  }
  return std::move(body);
}

int Snapshot(const SnapshotFlags& f) {
  auto body = Get(ServerBaseUrl(f.server) + "/snapshot", f.timeout_s);
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
  AddServeClientOptions(*cmd, f->server, f->output, "file to write (default -: standard output)",
                        f->timeout_s);
  cmd->callback([f] { EndCommand(Snapshot(*f)); });
}

}  // namespace kiln::cli
