// `kiln test PATH... [--run REGEX] [--output table|json|junit] [--policy-dir DIR]... [--jobs N]
//                    [--no-times]`
// `kiln test --compare REF CANDIDATE [--seed S] [--cases N] [--out DIR] [--policy-dir DIR]...`
//
// The first form runs test scenarios (simulator/testing.h: files, or directories searched for
// scenarios with `expect`) the way `kiln simulate --check` runs one, several at a time, and
// reports them in the order found: one line per case, the differences of the failures, a
// summary. The second runs random clusters under a conf with REF and the same conf with
// CANDIDATE (a plugin name, or a .policy file) in its place, and shrinks the first cluster on
// which they decide differently to a small scenario that reproduces it.
//
// Exit codes: 0 all passed (or no difference), 1 a case failed (or a difference was found),
// 2 bad arguments or a path/policy that cannot be loaded.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "cli/errors.h"
#include "cli/output_format.h"
#include "cli/shared_options.h"
#include "packs/pack.h"
#include "runtime/text_util.h"
#include "simulator/random_cluster.h"
#include "simulator/testing.h"

namespace kiln::cli {
namespace {

using Json = nlohmann::ordered_json;

struct TestOptions {
  std::vector<std::string> paths;
  std::string run;
  std::string output = "table";
  PolicyOptions policy;  // --policy-dir, --allow-builtin-override, --compile-cache
  int jobs = 2;
  bool no_times = false;
  // --compare
  std::string compare;
  uint64_t seed = 1;
  int cases = 100;
  std::string out_dir;
  bool rich = false;                   // --rich
  bool gpus = false;                   // --gpus
  std::vector<std::string> arguments;  // --arg KEY=VALUE
};

// ---- running cases ----

struct CaseRun {
  TestCase tc;
  TestResult result;
};

Result<std::unique_ptr<PolicyProvider>> ProviderFor(const TestOptions& opts, const TestCase& tc) {
  if (tc.provider) return tc.provider();
  PolicyOptions p = opts.policy;
  p.sources.policy_dirs.insert(p.sources.policy_dirs.end(), tc.policy_dirs.begin(),
                               tc.policy_dirs.end());
  return MakeProvider(p);
}

// A pack directory's test scenarios that its manifest does not list are not run (the manifest is
// what `kiln pack build` packs and checks): say so rather than skip them in silence.
void WarnOfUnlistedTests(const std::string& dir, const packs::Pack& pack) {
  namespace fs = std::filesystem;
  std::set<std::string, std::less<>> listed(pack.manifest.tests.begin(), pack.manifest.tests.end());
  listed.insert("kiln-pack.yaml");
  listed.insert(pack.manifest.conf);
  std::vector<std::string> unlisted;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path& p = it->path();
    if (!it->is_regular_file(ec) || (p.extension() != ".yaml" && p.extension() != ".yml")) continue;
    std::string rel = fs::relative(p, dir, ec).generic_string();
    if (!listed.count(rel) && IsTestScenarioFile(p.string())) unlisted.push_back(rel);
  }
  std::sort(unlisted.begin(), unlisted.end());
  for (const std::string& rel : unlisted)
    fmt::print(stderr,
               "warning: {}: a test scenario kiln-pack.yaml does not list under `tests`: not run\n",
               (fs::path(dir) / rel).generic_string());
}

// A policy pack (a .kpack file, or a directory with kiln-pack.yaml) is a test source: its
// manifest's tests, each run with the pack's plugins (named pack/plugin) and, when the scenario
// has no conf of its own, the pack's conf, as `kiln pack build` runs them.
std::optional<Result<std::vector<TestCase>>> DiscoverPack(const TestOptions& opts,
                                                          const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  bool archive = fs::is_regular_file(path, ec) && fs::path(path).extension() == ".kpack";
  bool directory = fs::is_directory(path, ec) && fs::exists(fs::path(path) / "kiln-pack.yaml", ec);
  if (!archive && !directory) return std::nullopt;
  auto pack = packs::ReadPack(path);
  if (!pack) return Result<std::vector<TestCase>>(pack.error());
  std::optional<std::string> conf;
  if (!pack->manifest.conf.empty())
    if (auto it = pack->files.find(pack->manifest.conf); it != pack->files.end()) conf = it->second;
  if (directory) WarnOfUnlistedTests(path, *pack);
  std::vector<TestCase> cases;
  for (const std::string& test : pack->manifest.tests) {
    TestCase tc;
    tc.file = pack->Where(test);
    tc.name = tc.file;
    tc.suite = pack->manifest.name;
    if (auto it = pack->files.find(test); it != pack->files.end()) tc.text = it->second;
    tc.default_conf = conf;
    tc.default_conf_file = pack->Where(pack->manifest.conf);
    tc.provider = [opts, path]() {
      PolicyOptions p = opts.policy;
      p.sources.pack_files = {path};
      return MakeProvider(p);
    };
    cases.push_back(std::move(tc));
  }
  return Result<std::vector<TestCase>>(std::move(cases));
}

TestResult RunOne(const TestOptions& opts, const TestCase& tc) {
  auto provider = ProviderFor(opts, tc);
  if (!provider) {
    TestResult r;
    r.status = TestResult::Status::Error;
    r.error = provider.error();
    return r;
  }
  return RunTestCase(tc, **provider);
}

std::string CaseLine(const TestOptions& opts, const CaseRun& c) {
  std::string line = fmt::format("{} {}", c.result.passed() ? "PASS" : "FAIL", c.tc.name);
  if (!opts.no_times) line += fmt::format(" ({:.0f} ms)", c.result.millis);
  return line + "\n";
}

// Runs the cases on `opts.jobs` threads. Each finished case is handed to `done` in the order
// the cases were found (not the order they finish), so output does not depend on scheduling.
void RunAll(const TestOptions& opts, std::vector<CaseRun>& runs,
            const std::function<void(const CaseRun&)>& done) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::vector<bool> finished(runs.size(), false);
  size_t reported = 0;
  auto worker = [&] {
    for (size_t i = next++; i < runs.size(); i = next++) {
      TestResult r = RunOne(opts, runs[i].tc);
      std::lock_guard lock(mu);
      runs[i].result = std::move(r);
      finished[i] = true;
      for (; reported < runs.size() && finished[reported]; ++reported) done(runs[reported]);
    }
  };
  int threads = std::clamp(opts.jobs, 1, static_cast<int>(std::max<size_t>(runs.size(), 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::string CallStatus(const CallCheck& c) {
  return !c.checked ? "unchecked" : c.diff.empty() ? "pass" : "fail";
}

// `text` with every line indented by `prefix`.
std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  AppendIndented(out, text, prefix);
  return out;
}

// The details of a failed case: its differences field by field, each expected call as a
// sub-result, and the actual decisions as an `expect:` block to paste if they are right.
std::string FailureDetails(const CaseRun& c) {
  const TestResult& r = c.result;
  std::string out = fmt::format("--- FAIL {}", c.tc.name);
  if (!r.scenario.empty() && r.scenario != c.tc.name) out += fmt::format(" (scenario {})", r.scenario);
  out += "\n";
  if (r.error) return out + Indent(FormatError(*r.error), "  ");
  for (const std::string& d : r.diffs) out += "  " + d + "\n";
  if (!r.calls.empty()) {
    out += "  calls:\n";
    for (const CallCheck& call : r.calls) {
      if (!call.diff.empty())
        out += fmt::format("    FAIL {}\n", call.diff);
      else
        out += fmt::format("    {} calls[{}]: {}\n", call.checked ? "ok  " : "-   ", call.index,
                           call.call);
    }
  }
  out += "  actual decisions (paste into the scenario if they are right):\n";
  std::string block = FormatExpectBlock(*r.session);
  if (r.expects_warnings) block += FormatWarningsBlock(r.warnings);
  if (!r.ran_calls.empty()) block += FormatCallsBlock(r.ran_calls);
  return out + Indent(block, "    ");
}

std::vector<PluginCoverage> Coverage(const std::vector<CaseRun>& runs) {
  std::vector<const SessionResult*> sessions;
  for (const CaseRun& c : runs)
    if (c.result.session) sessions.push_back(&*c.result.session);
  return MergeCoverage(sessions);
}

// "coverage: ..." and one line per plugin: handlers run / registered, and those not run.
std::string FormatCoverage(const std::vector<PluginCoverage>& coverage) {
  if (coverage.empty()) return "";
  size_t width = 0;
  for (const PluginCoverage& c : coverage) width = std::max(width, c.plugin.size());
  std::string out = "coverage: handlers the cases ran / handlers registered, per plugin\n";
  for (const PluginCoverage& c : coverage) {
    std::string count = fmt::format("{}/{}", c.called(), c.handlers.size());
    std::string line = fmt::format("  {:<{}}  {:>5}", c.plugin, width, count);
    std::vector<std::string> missed;
    for (const auto& [handler, called] : c.handlers)
      if (!called) missed.push_back(handler);
    if (!missed.empty()) line += fmt::format("  not run: {}", fmt::join(missed, ", "));
    out += line + "\n";
  }
  return out;
}

const char* StatusName(TestResult::Status s) {
  switch (s) {
    case TestResult::Status::Pass: return "pass";
    case TestResult::Status::Fail: return "fail";
    case TestResult::Status::Error: return "error";
  }
  return "";
}

std::string FormatTestJson(const TestOptions& opts, const std::vector<CaseRun>& runs) {
  Json cases = Json::array();
  int passed = 0;
  for (const CaseRun& c : runs) {
    const TestResult& r = c.result;
    passed += r.passed() ? 1 : 0;
    Json j;
    j["name"] = c.tc.name;
    j["file"] = c.tc.file;
    j["suite"] = c.tc.suite;
    j["scenario"] = r.scenario;
    j["status"] = StatusName(r.status);
    if (!opts.no_times) j["ms"] = std::round(r.millis * 1000) / 1000;
    j["diffs"] = r.diffs;
    Json calls = Json::array();
    for (const CallCheck& call : r.calls) {
      Json e;
      e["index"] = call.index;
      e["call"] = call.call;
      e["status"] = CallStatus(call);
      if (!call.diff.empty()) e["diff"] = call.diff;
      calls.push_back(std::move(e));
    }
    j["calls"] = std::move(calls);
    if (r.error) j["error"] = r.error->Format();
    cases.push_back(std::move(j));
  }
  Json doc;
  doc["cases"] = std::move(cases);
  int total = static_cast<int>(runs.size());
  doc["summary"] = {{"passed", passed}, {"failed", total - passed}, {"total", total}};
  Json coverage = Json::object();
  for (const PluginCoverage& c : Coverage(runs)) {
    Json handlers = Json::object();
    for (const auto& [handler, called] : c.handlers) handlers[handler] = called;
    coverage[c.plugin] = std::move(handlers);
  }
  doc["coverage"] = std::move(coverage);
  return doc.dump(2) + "\n";
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += '?';
        else
          out += ch;
    }
  }
  return out;
}

// JUnit XML as Jenkins, GitLab and GitHub's test reporters read it: one <testsuite> per path the
// cases were found under, a <failure> with the differences for a mismatch, an <error> for a
// case that could not be loaded.
std::string FormatJunit(const TestOptions& opts, const std::vector<CaseRun>& runs) {
  std::vector<std::string> suites;
  std::map<std::string, std::vector<const CaseRun*>> by_suite;
  for (const CaseRun& c : runs) {
    if (!by_suite.count(c.tc.suite)) suites.push_back(c.tc.suite);
    by_suite[c.tc.suite].push_back(&c);
  }
  auto time_attr = [&](double ms) {
    return opts.no_times ? std::string() : fmt::format(" time=\"{:.3f}\"", ms / 1000);
  };
  auto counts = [](const std::vector<const CaseRun*>& cs) {
    int failures = 0, errors = 0;
    double ms = 0;
    for (const CaseRun* c : cs) {
      failures += c->result.status == TestResult::Status::Fail ? 1 : 0;
      errors += c->result.status == TestResult::Status::Error ? 1 : 0;
      ms += c->result.millis;
    }
    return std::tuple(failures, errors, ms);
  };
  std::vector<const CaseRun*> all;
  for (const CaseRun& c : runs) all.push_back(&c);
  auto [failures, errors, ms] = counts(all);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"kiln test\" tests=\"{}\" failures=\"{}\" errors=\"{}\"{}>\n",
                     runs.size(), failures, errors, time_attr(ms));
  for (const std::string& suite : suites) {
    const auto& cs = by_suite[suite];
    auto [sf, se, sms] = counts(cs);
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\"{}>\n",
                       XmlEscape(suite), cs.size(), sf, se, time_attr(sms));
    for (const CaseRun* c : cs) {
      const TestResult& r = c->result;
      out += fmt::format("    <testcase name=\"{}\" classname=\"{}\" file=\"{}\"{}", XmlEscape(c->tc.name),
                         XmlEscape(suite), XmlEscape(c->tc.file), time_attr(r.millis));
      if (r.passed()) {
        out += "/>\n";
        continue;
      }
      out += ">\n";
      if (r.error) {
        out += fmt::format("      <error message=\"{}\" type=\"load\">{}</error>\n",
                           XmlEscape(r.error->message), XmlEscape(FormatError(*r.error)));
      } else {
        size_t n = r.diffs.size();
        for (const CallCheck& call : r.calls) n += call.diff.empty() ? 0 : 1;
        out += fmt::format("      <failure message=\"{} difference{} from expect\" type=\"mismatch\">{}</failure>\n",
                           n, n == 1 ? "" : "s", XmlEscape(FailureDetails(*c)));
      }
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

int RunTests(const TestOptions& opts) {
  if (Status s = CheckChoice("--output", opts.output, {"table", "json", "junit"}); !s)
    return BadInput(s.error());
  if (opts.paths.empty()) {
    return BadInput(
        Error{"kiln test needs at least one PATH (a scenario file or a directory of them)", {}});
  }
  if (opts.jobs < 1) {
    return BadInput(Error{fmt::format("--jobs must be at least 1, got {}", opts.jobs), {}});
  }
  std::optional<std::regex> filter;
  if (!opts.run.empty()) {
    try {
      filter.emplace(opts.run, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return BadInput(Error{
          fmt::format("--run `{}` is not a valid regular expression: {}", opts.run, e.what()), {}});
    }
  }
  // The command's own policy directories must load before any case runs: a typo in --policy-dir
  // is a usage error, not one failure per case.
  if (auto p = MakeProvider(opts.policy); !p) return BadInput(p.error());
  TestDiscovery discovery;
  discovery.Add([&opts](const std::string& path) { return DiscoverPack(opts, path); });
  auto found = discovery.Discover(opts.paths);
  if (!found) return BadInput(found.error());
  if (found->empty()) {
    return BadInput(Error{fmt::format("no test scenarios (YAML files with `expect`) under {}",
                                      fmt::join(opts.paths, ", ")),
                          {}});
  }
  std::vector<CaseRun> runs;
  for (TestCase& tc : *found)
    if (!filter || std::regex_search(tc.name, *filter)) runs.push_back({std::move(tc), {}});
  if (runs.empty())
    std::fputs(fmt::format("warning: --run `{}` matches none of the {} cases\n", opts.run,
                           found->size())
                   .c_str(),
               stderr);
  bool table = opts.output == "table";
  RunAll(opts, runs, [&](const CaseRun& c) {
    if (!table) return;
    std::fputs(CaseLine(opts, c).c_str(), stdout);
    std::fflush(stdout);
  });
  int passed = 0;
  for (const CaseRun& c : runs) passed += c.result.passed() ? 1 : 0;
  int failed = static_cast<int>(runs.size()) - passed;
  std::string out;
  if (table) {
    for (const CaseRun& c : runs)
      if (!c.result.passed()) out += "\n" + FailureDetails(c);
    if (failed > 0) out += "\n";
    out += fmt::format("{} passed, {} failed\n", passed, failed);
    out += FormatCoverage(Coverage(runs));
  } else if (opts.output == "json") {
    out = FormatTestJson(opts, runs);
  } else {
    out = FormatJunit(opts, runs);
  }
  std::fputs(out.c_str(), stdout);
  return failed > 0 ? kExitFailed : kExitOk;
}

// ---- --compare ----

// What the random clusters of a comparison can contain, said beside its verdict: a SAME holds for
// this space and nothing wider.
std::string SampledSpace(const std::string& ref, const RandomClusterOptions& gen,
                         const std::vector<std::pair<std::string, std::string>>& arguments) {
  std::string out = gen.rich
                        ? "clusters of up to 8 nodes (three in ten up to 48, one in ten up to "
                          "300), 1-8 cpu and 1-16 GiB each, some tainted, in three zones; up to "
                          "8 queues; up to 500 PodGroups of up to 12 pods at three priorities, "
                          "some running, with tolerations, zone affinity, pod anti-affinity, "
                          "non-preemptable pods and PDBs"
                        : fmt::format("clusters of 1-{} nodes, 1-8 cpu and 1-16 GiB each, some "
                                      "tainted; 1-{} queues; 1-{} PodGroups of up to {} pods at "
                                      "three priorities, some running (--rich: zones, affinity, "
                                      "tolerations, PDBs, larger clusters)",
                                      gen.max_nodes, gen.max_queues, gen.max_groups,
                                      gen.max_group_size);
  out += gen.gpus ? "; resources cpu, memory, nvidia.com/gpu"
                  : "; resources cpu and memory only (--gpus: nvidia.com/gpu too)";
  if (arguments.empty()) {
    out += fmt::format("; {}'s arguments at their defaults (--arg KEY=VALUE sets them)", ref);
  } else {
    std::vector<std::string> parts;
    for (const auto& [k, v] : arguments) parts.push_back(k + "=" + v);
    out += fmt::format("; {}'s arguments {}", ref, fmt::join(parts, ", "));
  }
  out += fmt::format("; {} confs (Volcano's default set with binpack; with preempt and reclaim; "
                     "allocate and backfill without gang), {} added where missing",
                     gen.confs.size(), ref);
  return out;
}

int RunCompare(const TestOptions& opts) {
  if (opts.paths.size() != 1) {
    return BadInput(
        Error{"--compare REF takes one CANDIDATE: a plugin name or a .policy file", {}});
  }
  if (opts.output != "table" || !opts.run.empty()) {
    return BadInput(Error{"--compare prints its own report: --output and --run do not apply", {}});
  }
  if (opts.cases < 1) {
    return BadInput(Error{fmt::format("--cases must be at least 1, got {}", opts.cases), {}});
  }
  const std::string& ref = opts.compare;
  std::string candidate = opts.paths.front();
  PolicyOptions with_candidate = opts.policy;
  std::vector<std::string>& dirs = with_candidate.sources.policy_dirs;
  std::filesystem::path as_path(candidate);
  if (as_path.extension() == ".policy") {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(as_path, ec)) {
      return BadInput(Error{fmt::format("{}: no such policy file", candidate), {}});
    }
    // The file's directory becomes a policy directory; the plugin is named after the file.
    dirs.push_back(as_path.has_parent_path() ? as_path.parent_path().string() : ".");
    candidate = as_path.stem().string();
  }
  if (candidate == ref) {
    return BadInput(
        Error{fmt::format("--compare: `{}` is both the reference and the candidate", ref), {}});
  }
  auto provider = MakeProvider(with_candidate);
  if (!provider) return BadInput(provider.error());
  for (const std::string& name : {ref, candidate}) {
    PluginOption option;
    option.name = name;
    auto prepared = (*provider)->Prepare(option);
    if (!prepared) return BadInput(prepared.error());
    if (!*prepared) {
      return BadInput(
          Error{fmt::format("unknown plugin `{}` (a built-in, a policy in a --policy-dir, or a "
                            ".policy file)",
                            name),
                {}});
    }
  }
  std::vector<std::pair<std::string, std::string>> arguments;
  for (const std::string& a : opts.arguments) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadInput(Error{fmt::format("--arg `{}`: expected KEY=VALUE", a), {}});
    }
    arguments.emplace_back(a.substr(0, eq), a.substr(eq + 1));
  }
  RandomClusterOptions gen;
  gen.rich = opts.rich;
  gen.gpus = opts.gpus;
  gen.confs = ConfsWithPlugin(ref, arguments);
  const std::string space = "space: " + SampledSpace(ref, gen, arguments) + "\n";
  std::optional<Error> run_error;
  auto differences = [&](const RandomCluster& c) -> std::vector<std::string> {
    std::string yaml = RenderScenario(c, "compare");
    auto a = RunFirstSession(yaml, c.conf, **provider);
    if (!a) {
      run_error = a.error();
      return {};
    }
    auto b = RunFirstSession(yaml, ReplacePlugin(c.conf, ref, candidate), **provider);
    if (!b) {
      run_error = b.error();
      return {};
    }
    return DecisionDiffs(*a, *b);
  };
  auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < opts.cases; ++i) {
    uint64_t seed = opts.seed * 1'000'003 + static_cast<uint64_t>(i);
    RandomCluster cluster = GenerateRandomCluster(seed, gen);
    std::vector<std::string> diffs = differences(cluster);
    if (run_error) return BadInput(*run_error);
    if (diffs.empty()) continue;
    size_t original = cluster.size();
    ShrinkStats stats;
    RandomCluster small = ShrinkRandomCluster(
        cluster,
        [&](const RandomCluster& c) {
          run_error.reset();
          return !differences(c).empty() && !run_error;
        },
        &stats);
    diffs = differences(small);
    auto reference = RunFirstSession(RenderScenario(small, "compare"), small.conf, **provider);
    if (!reference) return BadInput(reference.error());
    std::string name = fmt::format("compare-{}-vs-{}-seed-{}", candidate, ref, seed);
    std::string policy_dirs;
    for (const std::string& d : dirs) policy_dirs += " --policy-dir " + d;
    std::string file = opts.out_dir.empty() ? name + ".yaml"
                                             : (std::filesystem::path(opts.out_dir) / (name + ".yaml")).string();
    std::string notes = fmt::format(
        "notes: |\n"
        "  Written by `kiln test --compare {ref} {cand}` (cluster {i} of seed {s}, shrunk from {o}\n"
        "  objects to {n}). The conf runs {cand} where the reference conf runs {ref}; `expect`\n"
        "  holds what {ref} decides. Reproduce: kiln simulate --check {file}{dirs}\n",
        fmt::arg("ref", ref), fmt::arg("cand", candidate), fmt::arg("i", i), fmt::arg("s", opts.seed),
        fmt::arg("o", original), fmt::arg("n", small.size()), fmt::arg("file", file),
        fmt::arg("dirs", policy_dirs));
    std::string scenario = RenderScenario(small, name, notes + DecisionsExpectBlock(*reference),
                                          ReplacePlugin(small.conf, ref, candidate));
    std::string out = fmt::format(
        "DIFFERENT: {} decides differently from {} on cluster {} (seed {})\n"
        "shrunk from {} objects to {} ({} candidates tried, {} kept)\n",
        candidate, ref, i, seed, original, small.size(), stats.attempts, stats.accepted);
    for (const std::string& d : diffs) out += "  " + d + "\n";
    out += space;
    if (opts.out_dir.empty()) {
      out += "scenario:\n" + scenario;
    } else {
      std::error_code ec;
      std::filesystem::create_directories(opts.out_dir, ec);
      FILE* f = std::fopen(file.c_str(), "w");
      if (ec || f == nullptr) {
        return BadInput(Error{fmt::format("--out: cannot write {}", file), {}});
      }
      std::fputs(scenario.c_str(), f);
      std::fclose(f);
      out += fmt::format("wrote {}; reproduce with: kiln simulate --check {}{}\n", file, file,
                         policy_dirs);
    }
    std::fputs(out.c_str(), stdout);
    return kExitFailed;
  }
  std::string out = fmt::format("SAME: {} decides like {} on {} random clusters (seed {})", candidate,
                                ref, opts.cases, opts.seed);
  if (!opts.no_times)
    out += fmt::format(
        " in {:.0f} ms",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  std::fputs((out + "\n" + space).c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddTestCommand(CLI::App& app) {
  auto opts = std::make_shared<TestOptions>();
  CLI::App* cmd = app.add_subcommand(
      "test", "Run test scenarios (files or directories) and report each case, or compare a "
              "policy with a reference over random clusters (--compare)");
  cmd->add_option("paths", opts->paths,
                  "scenario files or directories to search for them; with --compare, the "
                  "candidate plugin name or .policy file");
  cmd->add_option("--run", opts->run, "run only the cases whose name matches this ECMAScript regex");
  cmd->add_option("-o,--output", opts->output, "table (default), json or junit");
  AddPolicyOptions(*cmd, opts->policy, kPolicyDirFlags | kPackFlags);
  cmd->add_option("-j,--jobs", opts->jobs, "cases run at once (default 2)");
  cmd->add_flag("--no-times", opts->no_times, "leave durations out of the output (reproducible output)");
  CLI::Option* compare = cmd->add_option(
      "--compare", opts->compare,
      "differential testing: the reference plugin the candidate is compared with");
  cmd->add_option("--seed", opts->seed, "--compare: seed of the random clusters (default 1)")
      ->needs(compare);
  cmd->add_option("--cases", opts->cases, "--compare: number of random clusters (default 100)")
      ->needs(compare);
  cmd->add_option("--out", opts->out_dir,
                  "--compare: directory to write the shrunk scenario to (default: print it)")
      ->needs(compare);
  cmd->add_flag("--rich", opts->rich,
                "--compare: richer clusters (zones, affinity, tolerations, PDBs, non-preemptable "
                "pods, a tenth with hundreds of nodes)")
      ->needs(compare);
  cmd->add_flag("--gpus", opts->gpus,
                "--compare: GPUs (nvidia.com/gpu) on about half of the nodes and in a third of "
                "the pods' requests")
      ->needs(compare);
  cmd->add_option("--arg", opts->arguments,
                  "--compare: KEY=VALUE, an argument given to the reference and the candidate "
                  "alike (repeatable); default: the plugin's defaults")
      ->needs(compare);
  cmd->callback(
      [opts] { EndCommand(opts->compare.empty() ? RunTests(*opts) : RunCompare(*opts)); });
}

}  // namespace kiln::cli
