// `kiln whatif --server URL JOB.yaml [-o json|table]`: asks a running `kiln serve` what it would do
// with a job (POST /whatif, server/whatif.h) without submitting it: whether enqueue admits it,
// where each pod would go, whom it would evict, its place in its queue and why pods stay pending.
// JSON (the server's answer, a contract: docs/serve.md) by default; a table for people.
//
// Exit codes: 0 answered (whatever the answer), 2 bad input or the server refused the request.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/serve_client.h"
#include "simulator/scenario.h"

namespace kiln::cli {

namespace {

struct WhatIfFlags {
  std::string server = "http://127.0.0.1:8080";
  std::string file;
  std::string output = "json";
  double timeout_s = 30;
};

constexpr size_t kMaxAnswerBytes = size_t{64} << 20;

std::string Table(const nlohmann::json& a) {
  std::string out;
  std::string job = a.value("job", "");
  if (a.value("admitted", false)) {
    out += fmt::format("PodGroup {}: admitted; position {} in its queue\n", job,
                       a.value("queuePosition", 0));
  } else {
    const auto& adm = a["admission"];
    std::string plugin = adm.value("plugin", "");
    std::string code = adm.value("code", "");
    out += fmt::format("PodGroup {}: NOT admitted{}{}: {}\n", job,
                       plugin.empty() ? "" : " by " + plugin, code.empty() ? "" : " [" + code + "]",
                       adm.value("message", ""));
  }
  std::vector<std::array<std::string, 3>> rows;
  for (const auto& [pod, node] : a["placements"].items()) rows.push_back({pod, "bind", node});
  for (const auto& [pod, node] : a["pipelined"].items()) rows.push_back({pod, "pipeline", node});
  for (const auto& [pod, reasons] : a["reasons"].items()) {
    bool first = true;
    for (const auto& r : reasons) {
      std::string code = r.value("code", "");
      rows.push_back({first ? pod : "", first ? "pending" : "",
                      (code.empty() ? "" : "[" + code + "] ") + r.value("message", "")});
      first = false;
    }
    if (first) rows.push_back({pod, "pending", ""});
  }
  size_t w0 = 3, w1 = 6;
  for (const auto& r : rows) {
    w0 = std::max(w0, r[0].size());
    w1 = std::max(w1, r[1].size());
  }
  out += fmt::format("{:<{}}  {:<{}}  {}\n", "POD", w0, "RESULT", w1, "NODE / REASON");
  for (const auto& r : rows) out += fmt::format("{:<{}}  {:<{}}  {}\n", r[0], w0, r[1], w1, r[2]);
  const auto& ev = a["evictions"];
  if (ev.empty()) {
    out += "evictions: none\n";
  } else {
    out += fmt::format("evictions ({}):\n", ev.size());
    for (const auto& e : ev) out += "  " + e.get<std::string>() + "\n";
  }
  return out;
}

int WhatIf(const WhatIfFlags& f) {
  if (f.output != "json" && f.output != "table")
    return BadInput(Error{fmt::format("-o must be json or table, got `{}`", f.output), {}});
  std::string body;
  if (f.file == "-") {
    body.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto text = ReadTextFile(f.file);
    if (!text) return BadInput(text.error());
    body = std::move(*text);
  }
  bool json = f.file.size() > 5 && f.file.substr(f.file.size() - 5) == ".json";
  if (f.file == "-") {
    size_t i = body.find_first_not_of(" \t\r\n");
    json = i != std::string::npos && (body[i] == '{' || body[i] == '[');
  }
  std::string base = ServerBaseUrl(f.server);
  auto answer = AskServe({.url = base + "/whatif",
                          .timeout_s = f.timeout_s,
                          .max_answer_bytes = kMaxAnswerBytes,
                          .post_body = std::move(body),
                          .content_type = json ? "application/json" : "application/yaml"});
  if (!answer) return BadInput(answer.error());
  nlohmann::json doc = nlohmann::json::parse(answer->body, nullptr, /*allow_exceptions=*/false);
  if (answer->status != 200) {
    std::string why = doc.is_object() && doc.contains("error") && doc["error"].is_string()
                          ? doc["error"].get<std::string>()
                          : answer->body;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return BadInput(Error{fmt::format("{}/whatif: HTTP {}: {}", base, answer->status, why), {}});
  }
  if (doc.is_discarded() || !doc.is_object())
    return BadInput(Error{fmt::format("{}/whatif: the answer is not a JSON object", base), {}});
  if (f.output == "json") {
    std::fwrite(answer->body.data(), 1, answer->body.size(), stdout);
  } else {
    std::string t = Table(doc);
    std::fwrite(t.data(), 1, t.size(), stdout);
  }
  return kExitOk;
}

}  // namespace

void AddWhatIfCommand(CLI::App& app) {
  auto f = std::make_shared<WhatIfFlags>();
  auto* cmd = app.add_subcommand(
      "whatif", "ask a running `kiln serve` what it would do with a job, without submitting it");
  cmd->add_option("job", f->file,
                  "the job: a PodGroup and its pods (YAML or JSON; a List, or several "
                  "documents), - for standard input")
      ->required();
  AddServeClientOptions(*cmd, f->server, f->output, "json (default: the server's answer) or table",
                        f->timeout_s);
  cmd->callback([f] { EndCommand(WhatIf(*f)); });
}

}  // namespace kiln::cli
