// `kiln export-manifests SCENARIO [-o FILE] [--format yaml|json] [--scheduler-name NAME]
// [--conf-out FILE]`: a
// scenario's cluster as Kubernetes manifests (PriorityClasses, Volcano Queues and PodGroups,
// Nodes with their status, Volcano HyperNodes and Numatopologies, Pods with theirs, PDBs,
// ResourceQuotas, Namespaces), so the same
// cluster `kiln simulate` runs can be loaded into an API server (or the test emulator) and
// scheduled by `kiln serve` (with the scenario's own `conf`, which --conf-out writes as
// scheduler.conf). What the cluster adds by itself (the `default` queue, one-pod
// PodGroups for pods without a group) is left out, as a real cluster would not store it before a
// scheduler or controller ran; decoding the manifests brings it back (kubernetes/decode.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/errors.h"
#include "kubernetes/decode.h"
#include "kubernetes/encode.h"
#include "simulator/scenario.h"

namespace kiln::cli {

namespace {

struct ExportArgs {
  std::string scenario;
  std::string output;
  std::string format = "yaml";
  std::string scheduler_name = "volcano";
  std::string conf_output;
};

// Writes `text` to `path` ("-" or empty: stdout).
int WriteText(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    fmt::print("{}", text);
    return kExitOk;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return BadInput(Error{fmt::format("cannot write {}", path), {}});
  return kExitOk;
}

int Export(const ExportArgs& args) {
  auto spec = LoadScenarioFile(args.scenario);
  if (!spec) return BadInput(spec.error());
  kube::EncodeOptions options;
  options.scheduler_name = args.scheduler_name;
  options.now = spec->now;
  auto items = kube::EncodeCluster(spec->cluster, options);
  std::string text = args.format == "json" ? kube::ManifestsToJson(items) : kube::ManifestsToYaml(items);
  if (!args.conf_output.empty()) {
    // The scenario's conf text as it is (empty when the scenario has none: the default applies).
    if (int code = WriteText(args.conf_output, spec->conf_text); code != kExitOk) return code;
  }
  return WriteText(args.output, text);
}

}  // namespace

void AddExportManifestsCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("export-manifests",
                                 "write a scenario's cluster as Kubernetes manifests");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("scenario", args->scenario, "scenario YAML file")->required();
  cmd->add_option("-o,--output", args->output, "output file (default: stdout)");
  cmd->add_option("--format", args->format, "yaml (multi-document) or json (a v1 List)")
      ->check(CLI::IsMember({"yaml", "json"}));
  cmd->add_option("--scheduler-name", args->scheduler_name,
                  "spec.schedulerName of the pods (default: volcano)");
  cmd->add_option("--conf-out", args->conf_output,
                  "also write the scenario's conf (scheduler.conf text) to this file");
  cmd->callback([args] { EndCommand(Export(*args)); });
}

}  // namespace kiln::cli
