// `kiln pack build DIR -o NAME.kpack [--sign KEY.pem]`
// `kiln pack verify NAME.kpack [--trust PUB.pem]...`
// `kiln pack inspect NAME.kpack [--output text|json]`
// `kiln pack conf NAME.kpack [--into scheduler.conf] [-o FILE]`
//
// Policy packs (packs/, docs/packs.md). `build` checks and compiles every policy, validates the
// pack's conf against them, runs the pack's tests (as `kiln simulate --check` runs a scenario),
// fills the manifest's sha256s and writes the archive, signed when a key is given. `verify` checks
// the digests, the signature and (with --trust) the signer. `inspect` shows the manifest and, per
// policy, the extension points it serves and the arguments it reads from scheduler.conf. `conf`
// prints the pack's example conf or, with --into, merges the pack's plugin entries into a conf
// (packs/conf_merge.h) and checks the result against the pack's policies.
//
// Exit codes: 0 ok; 1 a test failed (build) or verification failed (verify); 2 bad input.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/errors.h"
#include "compiler/diagnostics.h"
#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/language_version.h"
#include "packs/conf_merge.h"
#include "packs/pack.h"
#include "packs/provider.h"
#include "packs/scenario_check.h"
#include "runtime/conf.h"
#include "simulator/scenario.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

struct BuildOptions {
  std::string dir;
  std::string output;
  std::string sign_key;
};

// Writes `bytes` to `path` through a temporary file and a rename, so a packs directory that
// `kiln serve` watches never holds half an archive.
Status WriteAtomically(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error{fmt::format("cannot write {}", tmp), SourceLocation{path}};
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) return Error{fmt::format("cannot write {}", tmp), SourceLocation{path}};
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Error{fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()), {}};
  return Status::Ok();
}

// Runs the front end over each policy (printing its diagnostics like `kiln check`) and compiles
// the clean ones; false when any has an error or declares a name other than its `plugin`.
// The capabilities a policy declares, in kCapabilities order.
std::vector<std::string> UsedCapabilities(const ast::Policy& policy) {
  std::vector<std::string> out;
  for (std::string_view cap : kCapabilities)
    if (policy.Uses(cap)) out.emplace_back(cap);
  return out;
}

// Checks and compiles every policy; records in the manifest what each uses (`uses:`).
bool CheckPolicies(packs::Pack& pack) {
  bool ok = true;
  for (packs::PackPolicy& p : pack.manifest.policies) {
    SourceFile source{pack.Where(p.file), pack.files.at(p.file)};
    FrontendResult fe = RunFrontend(source);
    PrintDiagnostics(fe.diagnostics, source);
    if (!fe.ok()) {
      ok = false;
      continue;
    }
    if (fe.policy->name != p.plugin) {
      PrintError(Error{fmt::format("policy file {} declares `policy {};` but the manifest names "
                                   "its plugin `{}`",
                                   p.file, fe.policy->name, p.plugin),
                       p.where});
      ok = false;
      continue;
    }
    p.uses = UsedCapabilities(*fe.policy);
    auto compiler = PolicyCompiler::Global();
    if (!compiler) {
      PrintError(compiler.error());
      return false;
    }
    if (auto compiled = (*compiler)->Compile(source); !compiled) {
      PrintError(compiled.error());
      ok = false;
    }
  }
  return ok;
}

int RunBuild(const BuildOptions& opts) {
  std::error_code ec;
  if (!fs::is_directory(opts.dir, ec)) {
    return BadInput(
        Error{fmt::format("{}: not a directory (kiln pack build takes the pack's source "
                          "directory, the one holding kiln-pack.yaml)",
                          opts.dir),
              {}});
  }
  auto pack = packs::ReadPack(opts.dir);
  if (!pack) return BadInput(pack.error());
  packs::PackManifest& m = pack->manifest;
  if (Status s = packs::CheckLanguageVersion(m); !s) return BadInput(s.error());
  // Digests from an earlier build are recomputed below; a stale signature is dropped.
  m.files.clear();
  pack->signature_text.reset();
  if (!CheckPolicies(*pack)) return kExitBadInput;

  auto provider = packs::MakePackProvider({}, {*pack});
  if (!provider) return BadInput(provider.error());
  if (!m.conf.empty()) {
    if (Status s = packs::CheckConfLoads(pack->files.at(m.conf), pack->Where(m.conf), **provider);
        !s) {
      return BadInput(s.error());
    }
  }

  int passed = 0, failed = 0;
  for (const packs::PackTestResult& t : packs::RunPackTests(*pack, **provider)) {
    if (t.error) {
      ++failed;
      fmt::print("FAIL {}\n", t.file);
      PrintError(*t.error);
      continue;
    }
    if (t.passed()) {
      ++passed;
      fmt::print("PASS {} ({})\n", t.file, t.name);
      continue;
    }
    ++failed;
    fmt::print("FAIL {} ({})\n", t.file, t.name);
    for (const std::string& d : t.check.diffs) fmt::print("  {}\n", d);
  }
  if (!m.tests.empty()) fmt::print("{} passed, {} failed\n", passed, failed);
  if (failed > 0) {
    PrintError(Error{fmt::format("{} test{} of pack {} failed: no archive written", failed,
                                 failed == 1 ? "" : "s", m.name),
                     {}});
    return kExitFailed;
  }

  packs::PackFiles out;
  for (const std::string& path : m.ReferencedFiles()) {
    m.files[path] = packs::Sha256Hex(pack->files.at(path));
    out[path] = pack->files.at(path);
  }
  std::string manifest = packs::CanonicalManifest(m);
  out[std::string(packs::kManifestFile)] = manifest;
  std::string signer;
  if (!opts.sign_key.empty()) {
    auto sig = packs::SignManifest(manifest, opts.sign_key);
    if (!sig) return BadInput(sig.error());
    out[std::string(packs::kSignatureFile)] = *sig;
    auto check = packs::VerifySignature(manifest, *sig);
    if (check) signer = check->signer.id;
  }
  auto bytes = packs::WritePackArchive(out);
  if (!bytes) return BadInput(bytes.error());
  if (Status s = WriteAtomically(opts.output, *bytes); !s) return BadInput(s.error());
  fmt::print("built {}: {} {}, {} polic{}, {} file{}, {} bytes, {}\n", opts.output, m.name,
             m.version, m.policies.size(), m.policies.size() == 1 ? "y" : "ies", m.files.size(),
             m.files.size() == 1 ? "" : "s", bytes->size(),
             signer.empty() ? std::string("unsigned") : "signed by " + signer);
  return kExitOk;
}

int RunVerify(const std::string& file, const std::vector<std::string>& trust_paths) {
  auto trust = packs::LoadTrustedKeys(trust_paths);
  if (!trust) return BadInput(trust.error());
  auto pack = packs::ReadPack(file);
  if (!pack) {
    // An archive that cannot be read safely (a `..` entry, a link, a bomb) fails verification.
    PrintError(pack.error());
    return kExitFailed;
  }
  auto report = packs::VerifyPack(*pack, *trust);
  if (!report) {
    PrintError(report.error());
    return kExitFailed;
  }
  if (Status s = packs::CheckLanguageVersion(pack->manifest); !s) {
    PrintError(s.error());
    return kExitFailed;
  }
  const packs::PackManifest& m = pack->manifest;
  fmt::print("{}: OK: {} {}\n", file, m.name, m.version);
  fmt::print("  {} file{} match their sha256 in {}\n", report->files_checked,
             report->files_checked == 1 ? "" : "s", packs::kManifestFile);
  if (!report->signer)
    fmt::print("  unsigned\n");
  else if (report->trusted)
    fmt::print("  signed by {} (trusted)\n", report->signer->id);
  else
    fmt::print("  signed by {} (signer not checked: no --trust key given)\n", report->signer->id);
  fmt::print("  language {} (this kiln: {})\n", m.language, kLanguageVersion);
  return kExitOk;
}

// The text of `range` in `text` (1-based lines and columns, end inclusive): an argument's default
// as its author wrote it.
std::string SourceText(const std::string& text, SourceRange range) {
  if (!range.valid()) return "";
  std::istringstream in(text);
  std::string line, out;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n < range.begin.line || n > range.end.line) continue;
    size_t from = n == range.begin.line ? static_cast<size_t>(range.begin.column - 1) : 0;
    size_t to = n == range.end.line ? static_cast<size_t>(range.end.column) : line.size();
    if (from > line.size()) from = line.size();
    if (!out.empty()) out += " ";
    out += line.substr(from, to > from ? to - from : 0);
  }
  return out;
}

int RunInspect(const std::string& file, const std::string& output) {
  if (Status s = CheckChoice("--output", output, {"text", "json"}); !s) return BadInput(s.error());
  auto pack = packs::ReadPack(file);
  if (!pack) return BadInput(pack.error());
  const packs::PackManifest& m = pack->manifest;
  nlohmann::json doc;
  doc["name"] = m.name;
  doc["version"] = m.version;
  doc["description"] = m.description;
  doc["language"] = m.language;
  doc["conf"] = m.conf;
  doc["tests"] = m.tests;
  doc["signed"] = pack->signature_text.has_value();
  doc["files"] = nlohmann::json::object();
  for (const auto& [path, hex] : m.files) doc["files"][path] = hex;
  doc["policies"] = nlohmann::json::array();
  bool ok = true;
  for (const packs::PackPolicy& p : m.policies) {
    nlohmann::json pj;
    pj["plugin"] = m.name + "/" + p.plugin;
    pj["file"] = p.file;
    auto text = pack->files.find(p.file);
    if (text == pack->files.end()) {
      return BadInput(Error{fmt::format("{}: missing from the pack", p.file), p.where});
    }
    SourceFile source{pack->Where(p.file), text->second};
    FrontendResult fe = RunFrontend(source);
    if (!fe.ok()) {
      PrintDiagnostics(fe.diagnostics, source);
      ok = false;
      continue;
    }
    // What the policy declares it uses, and what its manifest lists (kiln pack build fills it);
    // a conf must grant each (`grants:` on the plugin's entry).
    pj["uses"] = UsedCapabilities(*fe.policy);
    pj["manifest_uses"] = p.uses;
    pj["handlers"] = nlohmann::json::array();
    for (const ast::HandlerDecl* h : fe.policy->All<ast::HandlerDecl>())
      for (const ast::HandlerPoint& point : h->points) {
        nlohmann::json hj;
        hj["point"] = point.name;
        if (point.info && !point.info->flag.empty()) hj["flag"] = std::string(point.info->flag);
        pj["handlers"].push_back(hj);
      }
    pj["arguments"] = nlohmann::json::array();
    for (const ast::ArgDecl* a : fe.policy->All<ast::ArgDecl>()) {
      nlohmann::json aj;
      aj["name"] = a->name;
      aj["key"] = a->conf_key;
      aj["from"] = a->from_flag ? "flag" : a->from_prefix ? "prefix" : "argument";
      aj["type"] = a->declared.resolved ? a->declared.resolved->Name() : a->declared.name;
      aj["default"] = a->default_value ? SourceText(text->second, a->default_value->range) : "";
      pj["arguments"].push_back(aj);
    }
    doc["policies"].push_back(pj);
  }
  if (!ok) return kExitBadInput;
  if (output == "json") {
    fmt::print("{}\n", doc.dump(2));
    return kExitOk;
  }
  fmt::print("pack:        {} {}\n", m.name, m.version);
  if (!m.description.empty()) fmt::print("description: {}\n", m.description);
  fmt::print("language:    {} (this kiln: {})\n", m.language, kLanguageVersion);
  fmt::print("signed:      {}\n", pack->signature_text ? "yes (run kiln pack verify to check)" : "no");
  if (!m.conf.empty()) fmt::print("conf:        {}\n", m.conf);
  for (const std::string& t : m.tests) fmt::print("test:        {}\n", t);
  for (const auto& pj : doc["policies"]) {
    fmt::print("\npolicy {} ({})\n", pj["plugin"].get<std::string>(), pj["file"].get<std::string>());
    auto uses = pj["uses"].get<std::vector<std::string>>();
    if (uses.empty()) fmt::print("  capabilities: none\n");
    for (const std::string& cap : uses)
      fmt::print("  capability {}  (scheduler.conf must grant it: `grants: {{{}: [URL prefix, ...]}}` "
                 "on the plugin's entry)\n",
                 cap, cap);
    for (const auto& hj : pj["handlers"])
      fmt::print("  on {}{}\n", hj["point"].get<std::string>(),
                 hj.contains("flag") ? fmt::format("  (scheduler.conf flag {})",
                                                   hj["flag"].get<std::string>())
                                     : "");
    for (const auto& aj : pj["arguments"]) {
      std::string from = aj["from"].get<std::string>();
      std::string key = aj["key"].get<std::string>();
      std::string where = from == "flag"     ? fmt::format("flag {}", key)
                          : from == "prefix" ? fmt::format("arguments {}*", key)
                                             : fmt::format("arguments {}", key);
      std::string def = aj["default"].get<std::string>();
      fmt::print("  arg {}: {}{}  ({})\n", aj["name"].get<std::string>(),
                 aj["type"].get<std::string>(), def.empty() ? "" : " = " + def, where);
    }
  }
  return kExitOk;
}

struct ConfOptions {
  std::string pack;
  std::string into;
  std::string output;
};

int RunConf(const ConfOptions& opts) {
  auto pack = packs::ReadPack(opts.pack);
  if (!pack) return BadInput(pack.error());
  const packs::PackManifest& m = pack->manifest;
  if (m.conf.empty()) {
    return BadInput(Error{fmt::format("pack {} ships no conf (`conf:` in its manifest)", m.name),
                          m.At("manifest")});
  }
  const std::string& pack_conf = pack->files.at(m.conf);
  std::string text = pack_conf;
  if (!opts.into.empty()) {
    auto conf = ReadTextFile(opts.into);
    if (!conf) return BadInput(conf.error());
    auto merged = packs::MergePackConf(m.name, pack_conf, pack->Where(m.conf), *conf, opts.into);
    if (!merged) return BadInput(merged.error());
    for (const std::string& a : merged->added) fmt::print(stderr, "added {}\n", a);
    for (const std::string& k : merged->kept) fmt::print(stderr, "kept {}: the conf already has it\n", k);
    text = merged->text;
    // The merged conf must load with the pack: names, flags and argument types.
    std::string name = opts.output.empty() ? "<merged scheduler.conf>" : opts.output;
    auto provider = packs::MakePackProvider({}, {*pack});
    if (!provider) return BadInput(provider.error());
    if (Status s = packs::CheckConfLoads(text, name, **provider); !s) return BadInput(s.error());
  }
  if (opts.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return kExitOk;
  }
  if (Status s = WriteAtomically(opts.output, text); !s) return BadInput(s.error());
  return kExitOk;
}

}  // namespace

void AddPackCommand(CLI::App& app) {
  CLI::App* pack = app.add_subcommand("pack", "Build, verify and inspect policy packs (.kpack)");
  pack->require_subcommand(1);

  auto build = std::make_shared<BuildOptions>();
  CLI::App* b = pack->add_subcommand(
      "build", "Check and compile a pack's policies, run its tests, write NAME.kpack");
  b->add_option("dir", build->dir, "the pack's directory (with kiln-pack.yaml)")->required();
  b->add_option("-o,--output", build->output, "the archive to write (NAME.kpack)")->required();
  b->add_option("--sign", build->sign_key,
                "Ed25519 private key (PEM, `openssl genpkey -algorithm ed25519`) to sign with");
  b->callback([build] { EndCommand(RunBuild(*build)); });

  auto verify_file = std::make_shared<std::string>();
  auto trust = std::make_shared<std::vector<std::string>>();
  CLI::App* v = pack->add_subcommand("verify", "Check a pack's sha256s, signature and signer");
  v->add_option("pack", *verify_file, "the .kpack (or a built pack directory)")->required();
  v->add_option("--trust", *trust,
                "public key (PEM) whose signature is accepted (repeatable); with any given, an "
                "unsigned pack or another signer fails")
      ->allow_extra_args(false);
  v->callback([verify_file, trust] { EndCommand(RunVerify(*verify_file, *trust)); });

  auto inspect_file = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>("text");
  CLI::App* i = pack->add_subcommand(
      "inspect", "Show a pack's manifest and its policies' extension points and arguments");
  i->add_option("pack", *inspect_file, "the .kpack or pack directory")->required();
  i->add_option("-o,--output", *output, "text (default) or json");
  i->callback([inspect_file, output] { EndCommand(RunInspect(*inspect_file, *output)); });

  auto conf = std::make_shared<ConfOptions>();
  CLI::App* c = pack->add_subcommand(
      "conf", "Print a pack's example scheduler.conf, or merge its plugins into yours (--into)");
  c->add_option("pack", conf->pack, "the .kpack or pack directory")->required();
  c->add_option("--into", conf->into,
                "scheduler.conf to add the pack's plugin entries to (same tier, next to the "
                "plugin they follow in the pack's example)");
  c->add_option("-o,--output", conf->output, "write the result here instead of stdout");
  c->callback([conf] { EndCommand(RunConf(*conf)); });
}

}  // namespace kiln::cli
