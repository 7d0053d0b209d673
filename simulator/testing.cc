#include "simulator/testing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>

#include "runtime/yaml_util.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

bool IsYamlFile(const fs::path& p) { return p.extension() == ".yaml" || p.extension() == ".yml"; }

}  // namespace

bool IsTestScenarioFile(const std::string& file) {
  auto text = ReadTextFile(file);
  if (!text) return true;
  auto doc = yaml::Document::Parse(*text, file);
  if (!doc) return true;
  return doc->root().IsMap() && doc->root()["expect"];
}

std::optional<Result<std::vector<TestCase>>> TestDiscovery::AskDiscoverers(
    const std::string& path) const {
  for (const TestDiscoverer& d : discoverers_)
    if (auto found = d(path)) return found;
  return std::nullopt;
}

void TestDiscovery::Search(const std::string& dir, const std::string& suite,
                           std::vector<TestCase>& out, std::optional<Error>& error) const {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  if (ec) {
    error = Error{fmt::format("cannot read directory {}: {}", dir, ec.message()), {}};
    return;
  }
  // Name order, so that a run lists its cases the same way on every file system.
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (error) return;
    std::string path = p.string();
    if (fs::is_directory(p, ec)) {
      if (auto found = AskDiscoverers(path)) {
        if (!*found) {
          error = found->error();
          return;
        }
        for (TestCase& tc : found->value()) out.push_back(std::move(tc));
        continue;
      }
      Search(path, suite, out, error);
    } else if (IsYamlFile(p) && IsTestScenarioFile(path)) {
      out.push_back(TestCase{path, path, suite, {}, {}, {}, {}, {}});
    }
  }
}

Result<std::vector<TestCase>> TestDiscovery::Discover(const std::vector<std::string>& paths) const {
  std::vector<TestCase> out;
  for (const std::string& path : paths) {
    if (auto found = AskDiscoverers(path)) {
      if (!*found) return found->error();
      for (TestCase& tc : found->value()) out.push_back(std::move(tc));
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::optional<Error> error;
      Search(path, path, out, error);
      if (error) return *error;
    } else if (fs::exists(path, ec)) {
      std::string suite = fs::path(path).parent_path().string();
      out.push_back(TestCase{path, path, suite.empty() ? "." : suite, {}, {}, {}, {}, {}});
    } else {
      return Error{fmt::format("{}: no such file or directory", path), {}};
    }
  }
  return out;
}

TestResult RunTestCase(const TestCase& tc, PolicyProvider& provider) {
  auto started = std::chrono::steady_clock::now();
  TestResult r;
  auto finish = [&](TestResult::Status status) {
    r.status = status;
    r.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                   .count();
    return r;
  };
  auto broken = [&](Error e) {
    r.error = std::move(e);
    return finish(TestResult::Status::Error);
  };
  auto spec = tc.text ? ParseScenario(*tc.text, tc.file) : LoadScenarioFile(tc.file);
  if (!spec) return broken(spec.error());
  r.scenario = spec->name;
  if (!spec->expect || spec->expect->empty())
    return broken(Error{"the scenario has no `expect` block to check against",
                        SourceLocation{spec->file}});
  bool use_default = !spec->has_conf && tc.default_conf;
  auto conf = ResolveScenarioConf(*spec, use_default ? &*tc.default_conf : nullptr,
                                  use_default ? tc.default_conf_file : "");
  if (!conf) return broken(conf.error());
  auto sim = Simulator::Create(*spec, std::move(*conf), provider);
  if (!sim) return broken(sim.error());
  auto run = (*sim)->Run();
  if (!run) return broken(run.error());
  const ExpectSpec& expect = *spec->expect;
  r.session = run->sessions.front();
  r.ran_calls = run->calls;
  r.warnings = spec->warnings;
  r.expects_warnings = expect.warnings.has_value();
  r.diffs = CheckExpectations(expect, *r.session);
  for (std::string& d : CheckWarnings(expect, spec->warnings)) r.diffs.push_back(std::move(d));
  bool failed = !r.diffs.empty();
  if (expect.calls) {
    r.calls = CheckEachCall(*expect.calls, run->calls);
    for (const CallCheck& c : r.calls) failed |= !c.diff.empty();
  }
  return finish(failed ? TestResult::Status::Fail : TestResult::Status::Pass);
}

int PluginCoverage::called() const {
  return static_cast<int>(std::count_if(handlers.begin(), handlers.end(),
                                        [](const auto& h) { return h.second; }));
}

std::vector<PluginCoverage> MergeCoverage(const std::vector<const SessionResult*>& sessions) {
  std::map<std::string, PluginCoverage> by_plugin;
  for (const SessionResult* s : sessions) {
    for (const SessionResult::HandlerUse& h : s->handlers) {
      PluginCoverage& c = by_plugin[h.plugin];
      c.plugin = h.plugin;
      auto it = std::find_if(c.handlers.begin(), c.handlers.end(),
                             [&](const auto& x) { return x.first == h.handler; });
      if (it == c.handlers.end())
        c.handlers.emplace_back(h.handler, h.called);
      else
        it->second = it->second || h.called;
    }
  }
  std::vector<PluginCoverage> out;
  for (auto& [name, c] : by_plugin) out.push_back(std::move(c));
  return out;
}

// ---- differential testing ----

namespace {

std::string PluginLine(const std::string& name) { return fmt::format("  - name: {}\n", name); }

// `text` as a YAML scalar: numbers and booleans as they are (so an int argument reads as one),
// anything else double-quoted with its quotes, backslashes and control characters escaped.
std::string YamlScalar(const std::string& text) {
  static const std::regex plain(R"(-?[0-9]+(\.[0-9]+)?|true|false)");
  if (std::regex_match(text, plain)) return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::vector<std::string> ConfsWithPlugin(
    const std::string& plugin, const std::vector<std::pair<std::string, std::string>>& arguments) {
  std::string block;
  if (!arguments.empty()) {
    block = "    arguments:\n";
    for (const auto& [key, value] : arguments)
      block += fmt::format("      {}: {}\n", YamlScalar(key), YamlScalar(value));
  }
  std::vector<std::string> out;
  for (std::string conf : DefaultRandomConfs()) {
    // The last tier is the last list in the conf: appending a plugin line extends it.
    size_t at = conf.find(PluginLine(plugin));
    if (at == std::string::npos) {
      conf += PluginLine(plugin) + block;
    } else {
      conf.insert(at + PluginLine(plugin).size(), block);
    }
    out.push_back(std::move(conf));
  }
  return out;
}

std::string ReplacePlugin(const std::string& conf, const std::string& from, const std::string& to) {
  std::string out = conf;
  std::string old_line = PluginLine(from), new_line = PluginLine(to);
  for (size_t at = out.find(old_line); at != std::string::npos; at = out.find(old_line, at + new_line.size()))
    out.replace(at, old_line.size(), new_line);
  return out;
}

Result<SessionResult> RunFirstSession(const std::string& scenario_yaml, const std::string& conf,
                                      PolicyProvider& provider) {
  auto spec = ParseScenario(scenario_yaml, "generated.yaml");
  if (!spec) return spec.error();
  auto parsed = ParseSchedulerConf(conf, "generated scheduler.conf");
  if (!parsed) return parsed.error();
  auto sim = Simulator::Create(std::move(*spec), std::move(*parsed), provider);
  if (!sim) return sim.error();
  auto session = (*sim)->RunCycle();
  if (!session) return session.error();
  return std::move(*session);
}

std::vector<std::string> DecisionDiffs(const SessionResult& reference,
                                       const SessionResult& candidate) {
  ExpectSpec expect;
  expect.binds = reference.binds;
  expect.evictions = reference.evictions;
  expect.pipelined = reference.pipelined;
  return CheckExpectations(expect, candidate);
}

std::string DecisionsExpectBlock(const SessionResult& reference) {
  auto map = [](const std::map<std::string, std::string>& m) {
    std::vector<std::string> parts;
    for (const auto& [k, v] : m) parts.push_back(fmt::format("{}: {}", k, v));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  };
  std::vector<std::string> evicted(reference.evictions.begin(), reference.evictions.end());
  return fmt::format("expect:\n  binds: {}\n  evictions: [{}]\n  pipelined: {}\n",
                     map(reference.binds), fmt::join(evicted, ", "), map(reference.pipelined));
}

}  // namespace kiln
