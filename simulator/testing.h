#pragma once
// `kiln test`'s library part: finding test cases and running one (so `kiln pack build` can run a
// pack's tests the same way), and the differential runs of `kiln test --compare`.
//
// A test case is one scenario file with an `expect` block: it runs like `kiln simulate --check`
// (the first session against `expect`, the loader's warnings against `expect.warnings`, and the
// scenario's `calls` against `expect.calls`, each call a sub-result of the case).

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/calls.h"
#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/policy_provider.h"
#include "runtime/status.h"
#include "simulator/random_cluster.h"

namespace kiln {

struct TestCase {
  std::string name;   // what a run prints and --run matches: the file's path as found
  std::string file;
  std::string suite;  // the path it was found under (JUnit's testsuite)
  // Policy directories the case needs beyond the command's --policy-dir ones (a pack's policies).
  std::vector<std::string> policy_dirs;
  // When set, the provider for this case, built instead of the command's default one (a source
  // whose plugin names the default cannot resolve, like a pack's `pack/plugin`). Called once per
  // case, possibly from several threads at once.
  std::function<Result<std::unique_ptr<PolicyProvider>>()> provider;
  // When set, the scenario's text, read instead of `file` (a test inside a .kpack archive; `file`
  // then names it in errors, "team.kpack:tests/a.yaml").
  std::optional<std::string> text;
  // When set, the conf a scenario without its own `conf` runs with (a pack's conf), and the name
  // its errors carry.
  std::optional<std::string> default_conf;
  std::string default_conf_file;
};

// A finder for one kind of test source. Given a path, it returns nullopt when the path is not
// its kind, else the cases in it (or an Error: the path is its kind but broken).
using TestDiscoverer =
    std::function<std::optional<Result<std::vector<TestCase>>>(const std::string& path)>;

class TestDiscovery {
 public:
  // Asked, in the order added, about every path given and every directory met while searching,
  // before the built-in scenario search.
  void Add(TestDiscoverer discoverer) { discoverers_.push_back(std::move(discoverer)); }

  // The cases under `paths`, in the order given; a directory is searched recursively in name
  // order for *.yaml / *.yml scenarios with a top-level `expect` (a file that is not valid YAML
  // is a case too, which fails with its error; other YAML files are skipped). A file named
  // directly is a case whatever it holds. Error: a path that does not exist.
  Result<std::vector<TestCase>> Discover(const std::vector<std::string>& paths) const;

 private:
  void Search(const std::string& dir, const std::string& suite, std::vector<TestCase>& out,
              std::optional<Error>& error) const;
  std::optional<Result<std::vector<TestCase>>> AskDiscoverers(const std::string& path) const;

  std::vector<TestDiscoverer> discoverers_;
};

// Whether `file` is a test case a directory search would run: a scenario with a top-level
// `expect` (or a file that is not valid YAML, so that a broken test fails rather than vanishes).
bool IsTestScenarioFile(const std::string& file);

struct TestResult {
  enum class Status { Pass, Fail, Error };
  Status status = Status::Pass;
  std::string scenario;  // the scenario's `name`
  // Differences of the decisions ("binds: c1/p1: expected n1, got n2") and of the warnings.
  std::vector<std::string> diffs;
  // One entry per `expect.calls` entry (CheckEachCall).
  std::vector<CallCheck> calls;
  // Status::Error: the scenario, its conf or a plugin could not be loaded.
  std::optional<Error> error;
  // The first session's decisions (for a failure's "actual decisions" block).
  std::optional<SessionResult> session;
  std::vector<CallSpec> ran_calls;
  std::vector<ClusterWarning> warnings;
  bool expects_warnings = false;
  double millis = 0;

  bool passed() const { return status == Status::Pass; }
};

// Runs one case with `provider` (which must resolve the scenario's plugins).
TestResult RunTestCase(const TestCase& tc, PolicyProvider& provider);

// Which handlers of each plugin the sessions ran: plugins in name order, each with the handlers
// it registered (in extension-point table order, as first seen) and whether any session ran it.
struct PluginCoverage {
  std::string plugin;
  std::vector<std::pair<std::string, bool>> handlers;
  int called() const;
};
std::vector<PluginCoverage> MergeCoverage(const std::vector<const SessionResult*>& sessions);

// ---- differential testing (kiln test --compare) ----

// The random confs of DefaultRandomConfs() with `plugin` in each (appended to the last tier of
// a conf that lacks it), its entry given `arguments` (none: the plugin's defaults).
std::vector<std::string> ConfsWithPlugin(
    const std::string& plugin, const std::vector<std::pair<std::string, std::string>>& arguments = {});
// `conf` with the plugin entry `from` renamed `to`.
std::string ReplacePlugin(const std::string& conf, const std::string& from, const std::string& to);

// The first session of `scenario_yaml` (a rendered RandomCluster) run with `conf`.
Result<SessionResult> RunFirstSession(const std::string& scenario_yaml, const std::string& conf,
                                      PolicyProvider& provider);

// How `candidate` differs from `reference` in binds, evictions and pipelined pods, one line each
// in CheckExpectations' words ("expected" is the reference); empty when they decide alike.
std::vector<std::string> DecisionDiffs(const SessionResult& reference, const SessionResult& candidate);

// The reference's decisions as an `expect:` block of binds, evictions and pipelined pods.
std::string DecisionsExpectBlock(const SessionResult& reference);

}  // namespace kiln
