// Capabilities and the HTTP budgets (issue 28 items 4 and 5): `uses http` loads only under a
// scheduler.conf entry that grants it, optionally to URL prefixes; http_post speaks http and
// https only, streams its reply against the call's memory budget, and is held to the call's wall
// time and to the plugin's HTTP time in the session, each a fault of its kind when exceeded.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "stdlib/runtime_support.h"
#include "compiler/host/compiled_policy_provider.h"
#include "runtime/conf.h"
#include "runtime/session.h"
#include "tests/unit/compiler/compiled_plugin_fixture.h"
#include "tests/unit/compiler/local_http_server.h"
#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using LimitsGuard = ::kiln::testing::PolicyLimitsGuard;

// A policy that posts to `poster.url` with the timeout `poster.wait` and scores the reply's
// length (1 when there is none).
constexpr const char* kPoster = R"(policy poster;
uses http;
arg url: string = "" from "poster.url";
arg wait_text: string = "10s" from "poster.wait";
on node_order(task: Task, node: Node) -> float {
  let wait = parse_duration(wait_text) ?? 10s;
  let reply = http_post(url, "{}", wait) ?? "x";
  return float(len(reply));
}
)";

// One plugin `poster` with the conf entry lines `entry` (indented by four spaces).
struct PosterSession : testing::OnePolicySession {
  std::optional<Error> error;  // from Prepare

  explicit PosterSession(const std::string& entry, const std::string& policy = kPoster)
      : OnePolicySession("poster", policy, entry), error(plugin->error) {}
  ~PosterSession() {
    if (ssn) ssn->Close();
    ssn.reset();
  }
  double Score() {
    auto s = ssn->NodeOrderFn(task, node);
    EXPECT_TRUE(s.ok());
    return s.ok() ? *s : -1;
  }
  // One call, within `most`, whose answer is ignored (it scores 0) and which leaves one fault, of
  // `kind`.
  void ExpectOneFaultedCall(FaultKind kind, std::chrono::seconds most) {
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(Score(), 0.0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, most);
    ASSERT_EQ(ssn->fault_count(), 1u);
    EXPECT_EQ(ssn->plugins()[0].faults_by_kind[static_cast<size_t>(kind)], 1u);
  }
  std::string LastFault() const {
    return ssn->decisions().faults.empty() ? "" : ssn->decisions().faults.back();
  }
};

// A local HTTP server; routes are added before Start.
class Server {
 public:
  Server() {
    server_.new_task_queue = [] { return new httplib::ThreadPool(8); };
    server_.set_keep_alive_timeout(1);
  }
  ~Server() {
    release_ = true;
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Server& http() { return server_; }
  const std::atomic<bool>& released() const { return release_; }
  void Start() { port_ = testing::ServeOnLocalPort(server_, thread_); }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> release_{false};
};

// Sleeps up to `ms` or until the server is being stopped.
void Hang(const Server& s, int ms) {
  for (int i = 0; i < ms / 10 && !s.released().load(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::string Entry(const std::string& grants, const std::string& url,
                  const std::string& wait = "10s") {
  return grants + "    arguments:\n      poster.url: \"" + url + "\"\n      poster.wait: " + wait +
         "\n";
}

// ---- the grant in scheduler.conf ----

TEST(Capabilities, ConfGrantsParse) {
  auto conf = ParseSchedulerConf(R"(actions: "allocate"
tiers:
- plugins:
  - name: a
    grants: {http: true}
  - name: b
    grants:
      http: ["http://svc:8080/", "https://other/api/"]
  - name: c
    grants:
      http: "http://one/"
  - name: d
    grants: {http: false}
  - name: e
)",
                                 "scheduler.conf");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  const auto& p = conf->tiers[0].plugins;
  ASSERT_NE(p[0].Grant("http"), nullptr);
  EXPECT_TRUE(p[0].Grant("http")->url_prefixes.empty());
  ASSERT_NE(p[1].Grant("http"), nullptr);
  EXPECT_EQ(p[1].Grant("http")->url_prefixes,
            (std::vector<std::string>{"http://svc:8080/", "https://other/api/"}));
  ASSERT_NE(p[2].Grant("http"), nullptr);
  EXPECT_EQ(p[2].Grant("http")->url_prefixes, std::vector<std::string>{"http://one/"});
  EXPECT_EQ(p[3].Grant("http"), nullptr);
  EXPECT_EQ(p[4].Grant("http"), nullptr);
}

TEST(Capabilities, BadGrantsAreLocatedErrors) {
  struct Case {
    const char* grants;
    const char* message;
    int line;
  };
  const Case cases[] = {
      {"grants: {htp: true}", "scheduler.conf:5:14: error: unknown capability `htp` in the grants of plugin `x` (known: http); did you mean `http`?", 5},
      {"grants: {http: [\"gopher://h/\"]}", "scheduler.conf:5:21: error: URL prefix `gopher://h/` of grant `http` must start with http:// or https:// and name a host", 5},
      {"grants: {http: []}", "scheduler.conf:5:20: error: grant `http` of plugin `x` lists no URL prefix; write `http: true` to allow any URL", 5},
      {"grants: [http]", "scheduler.conf:5:13: error: `grants` of plugin `x` must be a map of capability to `true` or URL prefixes, got a list", 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.grants);
    auto conf = ParseSchedulerConf(std::string("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: x\n    ") +
                                       c.grants + "\n",
                                   "scheduler.conf");
    ASSERT_FALSE(conf.ok());
    EXPECT_EQ(conf.error().Format(), c.message);
    EXPECT_EQ(conf.error().where.line, c.line);
  }
}

TEST(Capabilities, PolicyUsingAnUngrantedCapabilityIsRefused) {
  for (const std::string& entry : {std::string(""), std::string("    grants: {http: false}\n")}) {
    PosterSession ps(entry + "    arguments:\n      poster.url: \"http://127.0.0.1:1/\"\n");
    ASSERT_TRUE(ps.error.has_value());
    EXPECT_EQ(ps.error->Format(),
              "scheduler.conf:4:11: error: plugin `poster`: the policy uses the `http` capability, which "
              "this scheduler.conf entry does not grant; add `grants: {http: [URL prefix, ...]}` "
              "(or `http: true` for any URL) to the entry");
  }
  PosterSession granted("    grants: {http: true}\n");
  EXPECT_FALSE(granted.error.has_value());
}

// The built-in extender declares `uses http;` like any policy: it needs the grant too.
TEST(Capabilities, BuiltinExtenderNeedsTheGrant) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok());
  for (bool grant : {false, true}) {
    auto conf = ParseSchedulerConf(
        std::string("actions: \"allocate\"\ntiers:\n- plugins:\n  - name: extender\n") +
            (grant ? "    grants: {http: [\"http://127.0.0.1:8080/\"]}\n" : "") +
            "    arguments:\n      extender.urlPrefix: http://127.0.0.1:8080\n",
        "scheduler.conf");
    ASSERT_TRUE(conf.ok());
    auto builder = (*provider)->Prepare(conf->tiers[0].plugins[0]);
    EXPECT_EQ(builder.ok(), grant) << (builder.ok() ? "" : builder.error().Format());
  }
}

// ---- http_post at run time ----

// libcurl speaks gopher://, dict://, telnet://, ...: a policy could send raw bytes to any port
// (`SET pwned 1` reached a Redis listener). Only http and https are allowed.
TEST(Capabilities, HttpPostSpeaksOnlyHttpAndHttps) {
  LimitsGuard limits;
  SetPluginFaultLimit(0);
  for (const char* url : {"gopher://127.0.0.1:6379/_SET%20pwned%201", "dict://127.0.0.1:6379/x",
                          "file:///etc/passwd", "telnet://127.0.0.1:23"}) {
    SCOPED_TRACE(url);
    PosterSession ps(Entry("    grants: {http: true}\n", url));
    ASSERT_TRUE(ps.ssn);
    EXPECT_EQ(ps.Score(), 0.0);  // the faulted call's score is ignored
    ASSERT_EQ(ps.ssn->fault_count(), 1u);
    EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Host)], 1u);
    EXPECT_EQ(ps.LastFault(), std::string("plugin poster: node_order: http_post: `") + url +
                                  "` is not an http:// or https:// URL");
  }
}

TEST(Capabilities, HttpPostStaysUnderTheGrantedPrefixes) {
  LimitsGuard limits;
  SetPluginFaultLimit(0);
  Server s;
  s.http().Post("/allowed/x", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"ok\": true}", "application/json");
  });
  s.http().Post("/other", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  s.Start();
  std::string grant = "    grants:\n      http: [\"" + s.url("/allowed/") + "\"]\n";
  {
    PosterSession ps(Entry(grant, s.url("/allowed/x")));
    ASSERT_TRUE(ps.ssn);
    EXPECT_EQ(ps.Score(), 12.0);
    EXPECT_EQ(ps.ssn->fault_count(), 0u);
  }
  {
    PosterSession ps(Entry(grant, s.url("/other")));
    ASSERT_TRUE(ps.ssn);
    EXPECT_EQ(ps.Score(), 0.0);
    ASSERT_EQ(ps.ssn->fault_count(), 1u);
    EXPECT_EQ(ps.LastFault(), "plugin poster: node_order: http_post: `" + s.url("/other") +
                                  "` is under none of the URL prefixes granted to plugin poster (" +
                                  s.url("/allowed/") + ")");
  }
}

// Issue 28: a 400 MiB reply used 613 MB under a 16 MiB budget. The reply is streamed against the
// call's memory budget and the transfer aborted past it: a memory fault, quickly, whether the
// server announces the length or streams chunks without one.
TEST(Capabilities, HttpRepliesAreStreamedAgainstTheMemoryBudget) {
  LimitsGuard limits;
  SetPluginFaultLimit(0);
  SetPolicyCallMemoryBudget(1 << 20);
  Server s;
  const std::string chunk(64 << 10, 'x');
  s.http().Post("/sized", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(8 << 20, 'y'), "application/json");
  });
  s.http().Post("/chunked", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [&](size_t offset, httplib::DataSink& sink) {
      if (offset >= (size_t{400} << 20) || s.released()) {
        sink.done();
        return true;
      }
      return sink.write(chunk.data(), chunk.size());
    });
  });
  s.Start();
  for (const char* path : {"/sized", "/chunked"}) {
    SCOPED_TRACE(path);
    PosterSession ps(Entry("    grants: {http: true}\n", s.url(path)));
    ASSERT_TRUE(ps.ssn);
    ASSERT_NO_FATAL_FAILURE(
        ps.ExpectOneFaultedCall(FaultKind::Memory, std::chrono::seconds(5)));
    EXPECT_NE(ps.LastFault().find("exceeded the call's memory budget of 1048576 bytes"),
              std::string::npos)
        << ps.LastFault();
  }
}

// The policy's own timeout is its business (the extender's `ignorable`): no reply in time is
// `none`, not a fault. A request the call's wall-time budget cuts short is a time fault.
TEST(Capabilities, HttpTimeoutsThePolicySetsAreNoneThoseTheRuntimeSetsAreFaults) {
  LimitsGuard limits;
  SetPluginFaultLimit(0);
  Server s;
  s.http().Post("/slow", [&](const httplib::Request&, httplib::Response& res) {
    Hang(s, 10'000);
    res.set_content("{}", "application/json");
  });
  s.Start();
  {
    PosterSession ps(Entry("    grants: {http: true}\n", s.url("/slow"), "100ms"));
    ASSERT_TRUE(ps.ssn);
    EXPECT_EQ(ps.Score(), 1.0);  // none
    EXPECT_EQ(ps.ssn->fault_count(), 0u);
  }
  {
    SetPolicyCallTimeBudget(300'000'000);  // 300 ms, the policy asks for 10 s
    PosterSession ps(Entry("    grants: {http: true}\n", s.url("/slow")));
    ASSERT_TRUE(ps.ssn);
    ASSERT_NO_FATAL_FAILURE(
        ps.ExpectOneFaultedCall(FaultKind::Time, std::chrono::seconds(3)));
    EXPECT_EQ(ps.LastFault(), "plugin poster: node_order: http_post: the call's wall-time budget "
                              "of 0.3s ran out before " + s.url("/slow") + " answered");
  }
}

// Issue 28: a 20-job session spent 12 s in HTTP with no fault. The plugin's requests share an
// HTTP budget per session: the request that would run past it is cut there (a time fault), and
// every later one is a time fault without being sent.
TEST(Capabilities, HttpTimePerSessionIsCapped) {
  LimitsGuard limits;
  SetPluginFaultLimit(0);
  // Wide margins: on a loaded machine a 250 ms answer can take 400 ms to arrive.
  SetPolicySessionHttpBudget(1'200'000'000);  // 1.2 s
  Server s;
  std::atomic<int> requests{0};
  s.http().Post("/slowish", [&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    Hang(s, 700);
    res.set_content("{\"a\":1}", "application/json");
  });
  s.Start();
  PosterSession ps(Entry("    grants: {http: true}\n", s.url("/slowish")));
  ASSERT_TRUE(ps.ssn);
  EXPECT_EQ(ps.Score(), 7.0);  // 700 ms of the 1200
  EXPECT_EQ(ps.ssn->fault_count(), 0u);
  EXPECT_EQ(ps.Score(), 0.0);  // cut at the remaining ~500 ms
  ASSERT_EQ(ps.ssn->fault_count(), 1u);
  EXPECT_EQ(ps.LastFault(), "plugin poster: node_order: http_post: the plugin's HTTP budget of "
                            "1.2s per session ran out before " + s.url("/slowish") + " answered");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ps.Score(), 0.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));  // not sent: no 700 ms wait
  EXPECT_EQ(requests.load(), 2);  // the third was never sent
  EXPECT_EQ(ps.LastFault(), "plugin poster: node_order: http_post: the plugin spent its HTTP "
                            "budget of 1.2s per session");
  EXPECT_EQ(ps.ssn->plugins()[0].faults_by_kind[static_cast<size_t>(FaultKind::Time)], 2u);
}

}  // namespace
}  // namespace kiln
