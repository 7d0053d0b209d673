// The extender policy (policies/extender.policy) against a real HTTP server (cpp-httplib on
// 127.0.0.1): every verb changing a decision, the error paths (timeout, status 500, a reply that
// is not JSON) with and without `extender.ignorable`, and the cost of per-node predicate calls
// when they wait on the network, serial against the session's I/O pool.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/actions/helpers.h"
#include "runtime/session.h"
#include "runtime/thread_pool.h"
#include "simulator/simulator.h"
#include "tests/unit/compiler/local_http_server.h"

namespace kiln {
namespace {

using Json = nlohmann::json;

// A local extender: one POST route per verb; handlers get the parsed request.
class ExtenderServer {
 public:
  using Handler = std::function<void(const Json& request, httplib::Response& res)>;

  ExtenderServer() {
    // Enough workers for the I/O pool's 16 concurrent calls plus slack.
    server_.new_task_queue = [] { return new httplib::ThreadPool(32); };
    // Headers and body leave in one segment each without waiting for the client's delayed ACK.
    server_.set_tcp_nodelay(true);
    // Idle keep-alive connections end soon, so stop() does not wait 5s for each.
    server_.set_keep_alive_timeout(1);
  }
  ~ExtenderServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void On(const std::string& verb, Handler h) {
    server_.Post("/" + verb, [this, verb, h](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu_);
        ++calls_[verb];
      }
      Json body = Json::parse(req.body, nullptr, false);
      res.status = 200;
      h(body, res);
    });
  }

  void Start() { port_ = testing::ServeOnLocalPort(server_, thread_); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/"; }
  int calls(const std::string& verb) {
    std::lock_guard lock(mu_);
    return calls_[verb];
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, int> calls_;
};

void Reply(httplib::Response& res, const Json& j) { res.set_content(j.dump(), "application/json"); }

// The scenario `cluster` and `actions` with a conf of `first_tier` plugins plus the extender
// (configured with `extender_args`, YAML lines indented for the arguments map).
std::string Scenario(const std::string& actions, const std::string& first_tier,
                     const std::string& extender_args, const std::string& cluster) {
  return "name: extender-test\n"
         "conf: |\n"
         "  actions: \"" + actions + "\"\n"
         "  tiers:\n"
         "  - plugins:\n" + first_tier +
         "    - name: extender\n"
         "      grants: {http: true}\n"
         "      arguments:\n" + extender_args +
         "now: \"2025-01-01T00:10:00Z\"\n" + cluster;
}

Result<SessionResult> RunFirstSession(const std::string& text,
                                      std::function<void(Session&)> after_open = {}) {
  auto spec = ParseScenario(text, "extender.yaml");
  if (!spec.ok()) return spec.error();
  auto conf = ResolveScenarioConf(*spec, nullptr, "");
  if (!conf.ok()) return conf.error();
  static auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  if (!provider.ok()) return provider.error();
  auto sim = Simulator::Create(std::move(*spec), std::move(*conf), **provider);
  if (!sim.ok()) return sim.error();
  if (after_open) (*sim)->SetFirstSessionHooks(SessionHooks{std::move(after_open), {}});
  return (*sim)->RunCycle();
}

SessionResult MustRun(const std::string& text, std::function<void(Session&)> after_open = {}) {
  auto r = RunFirstSession(text, std::move(after_open));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
  return r.ok() ? std::move(*r) : SessionResult{};
}

std::string Args(const ExtenderServer& s, const std::string& more) {
  return "        extender.urlPrefix: " + s.url() + "\n" + more;
}

// `extender.ignorable`, one line of the extender's arguments.
std::string Ignorable(bool ignorable) {
  return std::string("        extender.ignorable: ") + (ignorable ? "true" : "false") + "\n";
}

// One session of `actions` over `cluster` whose first tier is `first_tier` and the extender,
// configured by `verb_args`, whose server answers the verb `verb` with `handler`.
SessionResult RunWithOneVerb(const std::string& verb, ExtenderServer::Handler handler,
                             const std::string& verb_args, const std::string& actions,
                             const std::string& first_tier, const std::string& cluster) {
  ExtenderServer s;
  s.On(verb, std::move(handler));
  s.Start();
  return MustRun(Scenario(actions, first_tier, Args(s, verb_args), cluster));
}

// RunWithOneVerb with a server that answers `verb` with status 500, and `extender.ignorable`.
SessionResult RunWithVerbFailing(const std::string& verb, const std::string& verb_args,
                                 bool ignorable, const std::string& actions,
                                 const std::string& first_tier, const std::string& cluster) {
  return RunWithOneVerb(
      verb, [](const Json&, httplib::Response& res) { res.status = 500; },
      verb_args + Ignorable(ignorable), actions, first_tier, cluster);
}

// The pod the one-pod clusters below schedule: p of PodGroup pg, 1 cpu and 1Gi.
const std::string kPodP =
    "  pods:\n  - {name: p, namespace: c1, group: pg, requests: {cpu: \"1\", memory: 1Gi}}\n";

// Two equal nodes; one pending pod. Without an extender opinion it goes to n1 (node order).
const std::string kTwoNodes = R"(cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  - {name: n2, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  podGroups:
  - {name: pg, namespace: c1, minMember: 1, phase: Inqueue}
)" + kPodP;

TEST(ExtenderTest, PredicateRejectsANode) {
  ExtenderServer s;
  s.On("filter", [](const Json& req, httplib::Response& res) {
    bool n1 = req["node"]["Name"] == "n1";
    Reply(res, n1 ? Json{{"status", "no licence on n1"}, {"code", 2}} : Json{{"status", ""}});
  });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate", "", Args(s, "        extender.predicateVerb: filter\n"), kTwoNodes));
  EXPECT_EQ(r.binds, (std::map<std::string, std::string>{{"c1/p", "n2"}}));
  EXPECT_GE(s.calls("filter"), 2);
}

TEST(ExtenderTest, PredicateRequestCarriesTaskAndNode) {
  ExtenderServer s;
  Json seen;
  std::mutex mu;
  s.On("filter", [&](const Json& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    seen = req;
    Reply(res, Json::object());
  });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate", "", Args(s, "        extender.predicateVerb: filter\n"), kTwoNodes));
  EXPECT_EQ(r.binds.size(), 1u);
  std::lock_guard lock(mu);
  EXPECT_EQ(seen["task"]["Name"], "p");
  EXPECT_EQ(seen["task"]["Namespace"], "c1");
  EXPECT_EQ(seen["task"]["Resreq"]["MilliCPU"].get<double>(), 1000.0);
  EXPECT_EQ(seen["task"]["Resreq"]["Memory"].get<double>(), 1024.0 * 1024 * 1024);
  EXPECT_TRUE(seen["node"]["Name"] == "n1" || seen["node"]["Name"] == "n2");
  EXPECT_EQ(seen["node"]["Allocatable"]["MilliCPU"].get<double>(), 4000.0);
}

TEST(ExtenderTest, PrioritizeFlipsTheChosenNode) {
  ExtenderServer s;
  s.On("score", [](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["nodes"].size(), 2u);
    Reply(res, Json{{"nodeScore", {{"n1", 0}, {"n2", 100}}}, {"errorMessage", ""}});
  });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate", "", Args(s, "        extender.prioritizeVerb: score\n"), kTwoNodes));
  EXPECT_EQ(r.binds, (std::map<std::string, std::string>{{"c1/p", "n2"}}));
  EXPECT_EQ(s.calls("score"), 1);
}

TEST(ExtenderTest, PrioritizeErrorMessageFailsTheScoringUnlessIgnorable) {
  for (bool ignorable : {false, true}) {
    SessionResult r = RunWithOneVerb(
        "score",
        [](const Json&, httplib::Response& res) {
          Reply(res, Json{{"nodeScore", {{"n2", 100}}}, {"errorMessage", "scorer down"}});
        },
        "        extender.prioritizeVerb: score\n" + Ignorable(ignorable), "allocate", "",
        kTwoNodes);
    if (ignorable) {
      EXPECT_EQ(r.binds, (std::map<std::string, std::string>{{"c1/p", "n1"}}));
    } else {
      // Volcano: PrioritizeNodes fails, the task gets no node in this session.
      EXPECT_TRUE(r.binds.empty()) << "bound " << r.binds.size();
    }
  }
}

// Node n1 (2 cpu) runs low-0 and low-1 (1 cpu each, low priority); high-0 needs 1 cpu.
const char* kPreempt = R"(cluster:
  priorityClasses: [{name: high, value: 1000}, {name: low, value: 10}]
  nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
  podGroups:
  - {name: low0, namespace: c1, minMember: 1, phase: Running, priorityClassName: low}
  - {name: low1, namespace: c1, minMember: 1, phase: Running, priorityClassName: low}
  - {name: high, namespace: c1, minMember: 1, phase: Inqueue, priorityClassName: high}
  pods:
  - {name: low-0, namespace: c1, group: low0, requests: {cpu: "1", memory: 1Gi}, phase: Running, node: n1}
  - {name: low-1, namespace: c1, group: low1, requests: {cpu: "1", memory: 1Gi}, phase: Running, node: n1}
  - {name: high-0, namespace: c1, group: high, requests: {cpu: "1", memory: 1Gi}, phase: Pending}
)";

// Which low pod priority alone evicts (the victim order of two equal jobs).
std::string ControlVictim() {
  SessionResult control = MustRun(
      "name: control\nconf: |\n  actions: \"allocate, preempt\"\n  tiers:\n  - plugins:\n"
      "    - name: priority\nnow: \"2025-01-01T00:10:00Z\"\n" + std::string(kPreempt));
  EXPECT_EQ(control.evictions.size(), 1u);
  return control.evictions.empty() ? "" : *control.evictions.begin();
}

TEST(ExtenderTest, PreemptableRemovesAVictim) {
  // The extender (same tier as priority) permits only the pod priority alone would spare.
  const std::string spared = ControlVictim() == "c1/low-0" ? "low-1" : "low-0";
  ExtenderServer s;
  s.On("preemptable", [spared](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["evictor"]["Name"], "high-0");
    Json victims = Json::array();
    for (const Json& t : req["evictees"])
      if (t["Name"] == spared) victims.push_back(t);
    Reply(res, Json{{"status", 1}, {"victims", victims}});
  });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate, preempt", "    - name: priority\n",
                                     Args(s, "        extender.preemptableVerb: preemptable\n"),
                                     kPreempt));
  EXPECT_EQ(r.evictions, (std::set<std::string>{"c1/" + spared}));
  EXPECT_EQ(r.pipelined, (std::map<std::string, std::string>{{"c1/high-0", "n1"}}));
}

TEST(ExtenderTest, PreemptableAbstainLeavesPriorityToDecide) {
  const std::string control = ControlVictim();
  ExtenderServer s;
  s.On("preemptable", [](const Json&, httplib::Response& res) { Reply(res, Json{{"status", 0}}); });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate, preempt", "    - name: priority\n",
                                     Args(s, "        extender.preemptableVerb: preemptable\n"),
                                     kPreempt));
  EXPECT_EQ(r.evictions, (std::set<std::string>{control}));
}

TEST(ExtenderTest, PreemptableErrorEvictsNothingEitherWay) {
  for (bool ignorable : {false, true}) {
    SessionResult r =
        RunWithVerbFailing("preemptable", "        extender.preemptableVerb: preemptable\n",
                           ignorable, "allocate, preempt", "    - name: priority\n", kPreempt);
    EXPECT_TRUE(r.evictions.empty()) << "ignorable=" << ignorable;
  }
}

// The error paths of the predicate: every node fails (status Error) unless ignorable.
enum class Failure { Timeout, Status500, Garbage, WrongType };

void ExpectPredicateFailure(Failure f, bool ignorable) {
  // A hung extender answers only after 10 s, or once the test is done with it.
  auto release = std::make_shared<std::atomic<bool>>(false);
  ExtenderServer s;
  s.On("filter", [f, release](const Json&, httplib::Response& res) {
    switch (f) {
      case Failure::Timeout:
        for (int i = 0; i < 1000 && !release->load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        Reply(res, Json::object());
        break;
      case Failure::Status500: res.status = 500; res.set_content("{}", "application/json"); break;
      case Failure::Garbage: res.set_content("{\"status\": \"x\", oops", "application/json"); break;
      case Failure::WrongType: Reply(res, Json{{"status", 7}}); break;
    }
  });
  s.Start();
  std::string args = Args(s, "        extender.predicateVerb: filter\n"
                             "        extender.httpTimeout: 50ms\n" +
                                 Ignorable(ignorable));
  auto start = std::chrono::steady_clock::now();
  SessionResult r = MustRun(Scenario("allocate", "", args, kTwoNodes));
  auto took = std::chrono::steady_clock::now() - start;
  if (ignorable) {
    EXPECT_EQ(r.binds, (std::map<std::string, std::string>{{"c1/p", "n1"}}));
  } else {
    EXPECT_TRUE(r.binds.empty());
    ASSERT_EQ(r.unschedulable.count("c1/p"), 1u);
    EXPECT_NE(r.unschedulable["c1/p"].find("extender filter failed"), std::string::npos)
        << r.unschedulable["c1/p"];
  }
  // The 50ms timeout cuts the server's 10 s hang (two nodes, in parallel). The bound leaves a
  // loaded machine seconds of room and still fails a client that waits for the answer.
  if (f == Failure::Timeout) EXPECT_LT(took, std::chrono::milliseconds(5000));
  release->store(true);
}

class ExtenderPredicateFailure : public ::testing::TestWithParam<Failure> {};

TEST_P(ExtenderPredicateFailure, FailsEveryNodeUnlessIgnorable) {
  ExpectPredicateFailure(GetParam(), false);
  ExpectPredicateFailure(GetParam(), true);
}

std::string FailureName(const ::testing::TestParamInfo<Failure>& info) {
  switch (info.param) {
    case Failure::Timeout: return "Timeout";
    case Failure::Status500: return "Status500";
    case Failure::Garbage: return "GarbageReply";
    case Failure::WrongType: return "MemberOfWrongType";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(Failures, ExtenderPredicateFailure,
                         ::testing::Values(Failure::Timeout, Failure::Status500, Failure::Garbage,
                                           Failure::WrongType),
                         FailureName);

TEST(ExtenderTest, UnreachableServerIsAnError) {
  // Nothing listens on the port of a stopped server.
  std::string url;
  {
    ExtenderServer s;
    s.Start();
    url = s.url();
  }
  for (bool ignorable : {false, true}) {
    std::string args = "        extender.urlPrefix: " + url +
                       "\n        extender.predicateVerb: filter\n" + Ignorable(ignorable);
    SessionResult r = MustRun(Scenario("allocate", "", args, kTwoNodes));
    EXPECT_EQ(r.binds.size(), ignorable ? 1u : 0u);
  }
}

const std::string kEnqueue = R"(cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  podGroups:
  - {name: pg, namespace: c1, minMember: 1, phase: Pending, minResources: {cpu: "1"}}
)" + kPodP;

TEST(ExtenderTest, EnqueueableRejectsAndEnqueuedIsNotified) {
  ExtenderServer s;
  s.On("enqueueable", [](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["job"]["Name"], "pg");
    Reply(res, Json{{"status", -1}});
  });
  s.On("enqueued", [](const Json&, httplib::Response& res) { Reply(res, Json::object()); });
  s.Start();
  std::string args = Args(s, "        extender.jobEnqueueableVerb: enqueueable\n"
                             "        extender.jobEnqueuedVerb: enqueued\n");
  SessionResult r = MustRun(Scenario("enqueue, allocate", "", args, kEnqueue));
  EXPECT_TRUE(r.binds.empty());
  EXPECT_EQ(r.pod_group_phases["c1/pg"], "Pending");
  EXPECT_EQ(s.calls("enqueued"), 0);

  ExtenderServer permit;
  permit.On("enqueueable", [](const Json&, httplib::Response& res) { Reply(res, Json{{"status", 1}}); });
  permit.On("enqueued", [](const Json&, httplib::Response& res) { Reply(res, Json::object()); });
  permit.Start();
  args = Args(permit, "        extender.jobEnqueueableVerb: enqueueable\n"
                      "        extender.jobEnqueuedVerb: enqueued\n");
  r = MustRun(Scenario("enqueue, allocate", "", args, kEnqueue));
  EXPECT_EQ(r.binds, (std::map<std::string, std::string>{{"c1/p", "n1"}}));
  EXPECT_EQ(permit.calls("enqueued"), 1);
}

TEST(ExtenderTest, EnqueueableErrorRejectsUnlessIgnorable) {
  for (bool ignorable : {false, true}) {
    SessionResult r =
        RunWithVerbFailing("enqueueable", "        extender.jobEnqueueableVerb: enqueueable\n",
                           ignorable, "enqueue, allocate", "", kEnqueue);
    EXPECT_EQ(r.binds.size(), ignorable ? 1u : 0u) << "ignorable=" << ignorable;
  }
}

TEST(ExtenderTest, OverusedQueueGetsNothing) {
  ExtenderServer s;
  s.On("overused", [](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["queue"]["Name"], "default");
    Reply(res, Json{{"overused", true}});
  });
  s.Start();
  SessionResult r = MustRun(Scenario("allocate", "", Args(s, "        extender.queueOverusedVerb: overused\n"), kTwoNodes));
  EXPECT_TRUE(r.binds.empty());
  EXPECT_GE(s.calls("overused"), 1);
}

TEST(ExtenderTest, OverusedGarbageCountsAsOverusedUnlessIgnorable) {
  for (bool ignorable : {false, true}) {
    SessionResult r = RunWithOneVerb(
        "overused",
        [](const Json&, httplib::Response& res) { res.set_content("[1,2", "text/plain"); },
        "        extender.queueOverusedVerb: overused\n" + Ignorable(ignorable), "allocate", "",
        kTwoNodes);
    EXPECT_EQ(r.binds.size(), ignorable ? 1u : 0u) << "ignorable=" << ignorable;
  }
}

TEST(ExtenderTest, JobReadyFalseHoldsTheBind) {
  for (bool ready : {false, true}) {
    SessionResult r = RunWithOneVerb(
        "ready",
        [ready](const Json&, httplib::Response& res) { Reply(res, Json{{"status", ready}}); },
        "        extender.jobReadyVerb: ready\n", "allocate", "", kTwoNodes);
    EXPECT_EQ(r.binds.size(), ready ? 1u : 0u) << "ready=" << ready;
  }
}

TEST(ExtenderTest, AllocateIsNotifiedAndManagedResourcesFilterTasks) {
  ExtenderServer s;
  std::atomic<int> gpu_calls{0};
  s.On("allocate", [&](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["task"]["Name"], "gpu");
    ++gpu_calls;
    Reply(res, Json::object());
  });
  s.On("filter", [](const Json& req, httplib::Response& res) {
    EXPECT_EQ(req["task"]["Name"], "gpu");  // the cpu-only pod is never sent
    Reply(res, Json::object());
  });
  s.Start();
  std::string args = Args(s, "        extender.allocateFuncVerb: allocate\n"
                             "        extender.predicateVerb: filter\n"
                             "        extender.managedResources: [nvidia.com/gpu]\n");
  SessionResult r = MustRun(Scenario("allocate", "", args, R"(cluster:
  nodes:
  - {name: n1, allocatable: {cpu: "8", memory: 8Gi, pods: "110", nvidia.com/gpu: "2"}}
  podGroups:
  - {name: pg, namespace: c1, minMember: 1, phase: Inqueue}
  - {name: pg2, namespace: c1, minMember: 1, phase: Inqueue}
  pods:
  - {name: gpu, namespace: c1, group: pg, requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "1"}}
  - {name: cpu, namespace: c1, group: pg2, requests: {cpu: "1", memory: 1Gi}}
)"));
  EXPECT_EQ(r.binds.size(), 2u);
  EXPECT_EQ(gpu_calls.load(), 1);
  EXPECT_GE(s.calls("filter"), 1);
}

TEST(ExtenderTest, FailedSessionOpenSilencesThePluginUnlessIgnorable) {
  for (bool ignorable : {false, true}) {
    ExtenderServer s;
    s.On("open", [](const Json&, httplib::Response& res) { res.status = 503; });
    s.On("filter", [](const Json&, httplib::Response& res) {
      Reply(res, Json{{"status", "never"}, {"code", 3}});
    });
    s.Start();
    std::string args = Args(s, "        extender.onSessionOpenVerb: open\n"
                               "        extender.predicateVerb: filter\n" +
                                   Ignorable(ignorable));
    SessionResult r = MustRun(Scenario("allocate", "", args, kTwoNodes));
    // Not ignorable: Volcano returns before registering the predicate, so the pod binds.
    EXPECT_EQ(r.binds.size(), ignorable ? 0u : 1u) << "ignorable=" << ignorable;
    EXPECT_EQ(s.calls("filter") > 0, ignorable);
  }
}

// N nodes, a server that takes 5ms per predicate call: the per-node calls of one task, serial
// (a one-thread pool) against the session's pool (the I/O pool, since the extender `uses http`).
// What is asserted is the overlap the server sees (calls in flight at once), not wall-clock
// time: a loaded machine stretches every call, it does not serialise them.
TEST(ExtenderTest, PredicateCallsOverlapOnTheIoPool) {
  constexpr int kNodes = 64;
  ExtenderServer s;
  std::atomic<int> in_flight{0}, most_in_flight{0};
  s.On("filter", [&](const Json&, httplib::Response& res) {
    int now = ++in_flight;
    int seen = most_in_flight.load();
    while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    --in_flight;
    Reply(res, Json::object());
  });
  s.Start();
  std::string cluster = "cluster:\n  nodes:\n";
  for (int i = 0; i < kNodes; ++i)
    cluster += "  - {name: n" + std::to_string(i) +
               ", allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n";
  cluster += "  podGroups:\n  - {name: pg, namespace: c1, minMember: 1, phase: Inqueue}\n"
             "  pods:\n  - {name: p, namespace: c1, group: pg, requests: {cpu: \"1\"}}\n";
  double serial_ms = 0, cold_ms = 0, pooled_ms = 0, hardware_ms = 0;
  int pool_size = 0, serial_overlap = 0, pooled_overlap = 0;
  auto time_search = [](Session& ssn, ThreadPool& pool) {
    const Task* t = nullptr;
    for (Job* j : ssn.cluster().jobs())
      for (Task* task : j->tasks)
        if (task->status == TaskStatus::Pending) t = task;
    size_t rotation = 0;
    actions::PredicateHelper helper(&rotation, pool);
    actions::NodePredicate fn = [&ssn](const Task* task, const Node* node) {
      return ssn.PredicateFn(task, node);
    };
    auto start = std::chrono::steady_clock::now();
    auto found = helper.PredicateNodes(t, ssn.cluster().nodes(), fn, false);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(found.nodes.size(), static_cast<size_t>(kNodes));
    return std::chrono::duration<double, std::milli>(took).count();
  };
  SessionResult r = MustRun(
      Scenario("allocate", "",
               Args(s, "        extender.predicateVerb: filter\n        extender.httpTimeout: 10s\n"),
               cluster),
      [&](Session& ssn) {
        ThreadPool one(1);
        serial_ms = time_search(ssn, one);
        serial_overlap = most_in_flight.exchange(0);
        // The first pooled search opens up to 16 connections at once; cpp-httplib listens with a
        // backlog of 5, so some connects wait for a SYN retry. Kiln's threads keep their
        // connections (keep-alive), which the second search measures.
        cold_ms = time_search(ssn, ssn.node_pool());
        // The best of three, so one stall of a loaded machine does not decide.
        pooled_ms = time_search(ssn, ssn.node_pool());
        for (int i = 0; i < 2; ++i) pooled_ms = std::min(pooled_ms, time_search(ssn, ssn.node_pool()));
        pooled_overlap = most_in_flight.exchange(0);
        pool_size = ssn.node_pool().size();
        hardware_ms = time_search(ssn, ThreadPool::Default());
      });
  EXPECT_EQ(r.binds.size(), 1u);
  std::printf("[extender] %d nodes, 5ms per predicate call: serial %.1f ms, default pool (%d "
              "threads) %.1f ms, session I/O pool (%d threads) %.1f ms (%.1f ms with new "
              "connections); calls in flight at once: %d serial, %d pooled\n",
              kNodes, serial_ms, ThreadPool::Default().size(), hardware_ms, pool_size, pooled_ms,
              cold_ms, serial_overlap, pooled_overlap);
  EXPECT_GE(serial_ms, kNodes * 5.0);
  EXPECT_EQ(pool_size, ThreadPool::Io().size());
  EXPECT_EQ(serial_overlap, 1);
  // 64 calls on 16 threads against a server with 8 or more workers: several calls overlap even
  // on a loaded 2-core machine, since each spends its 5ms asleep.
  EXPECT_GE(pooled_overlap, 4);
}

}  // namespace
}  // namespace kiln
