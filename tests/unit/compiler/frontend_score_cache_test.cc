// The analyze-score-cache pass: which node_order handlers are proved pure functions of a few task
// fields and of the node (their scores may be cached), and for the others, which reason it gives.
#include <optional>

#include "compiler/builtin_policies.h"
#include "tests/unit/compiler/frontend_test_util.h"

namespace kiln::testing {
namespace {

ast::ScoreCacheFacts Facts(const std::string& text) {
  FrontendResult r = RunFrontend(SourceFile{"t.policy", text});
  EXPECT_TRUE(r.ok()) << FormatDiagnostics(r.diagnostics, {"t.policy", text});
  if (!r.policy) return {};
  return r.policy->node_order_cache;
}

// A cacheable handler's fields; fails the test when it is not cacheable.
std::vector<std::string> Fields(const std::string& text) {
  ast::ScoreCacheFacts f = Facts(text);
  EXPECT_TRUE(f.has_handler);
  EXPECT_TRUE(f.cacheable) << f.reason << " (line " << f.where.begin.line << ")";
  return f.task_fields;
}

// A non-cacheable handler's reason and its line.
std::pair<std::string, int> Reason(const std::string& text) {
  ast::ScoreCacheFacts f = Facts(text);
  EXPECT_TRUE(f.has_handler);
  EXPECT_FALSE(f.cacheable);
  return {f.reason, f.where.begin.line};
}

using Strings = std::vector<std::string>;

TEST(ScoreCacheAnalysis, NoHandler) {
  ast::ScoreCacheFacts f = Facts("policy p;\non job_order(l: Job, r: Job) -> int { return 0; }\n");
  EXPECT_FALSE(f.has_handler);
  EXPECT_FALSE(f.cacheable);
}

TEST(ScoreCacheAnalysis, NodeFieldsAndTaskRequest) {
  EXPECT_EQ(Fields(R"(policy p;
on node_order(task: Task, node: Node) -> float {
  return task.resreq.cpu / node.allocatable.cpu + float(len(node.tasks));
})"),
            Strings{"resreq"});
}

TEST(ScoreCacheAnalysis, NoTaskFieldAtAll) {
  EXPECT_EQ(Fields(R"(policy p;
on node_order(task: Task, node: Node) -> float { return node.idle.cpu; })"),
            Strings{});
}

TEST(ScoreCacheAnalysis, FieldsThroughFunctionsAndDeclaredNatives) {
  EXPECT_EQ(Fields(R"(policy p;
arg w: int = 1;
fn req(t: Task, n: Node) -> float { return t.init_resreq.memory + n.used.memory; }
fn imgs(t: Task) -> int { return len(t.images); }
on node_order(task: Task, node: Node) -> float {
  return req(task, node) + float(imgs(task) * w);
})"),
            (Strings{"images", "init_resreq"}));
}

TEST(ScoreCacheAnalysis, StateWrittenOnlyAtOpen) {
  EXPECT_EQ(Fields(R"(policy p;
state total: float;
on session_open() { total = session.total.cpu; }
on node_order(task: Task, node: Node) -> float { return task.resreq.cpu / total; })"),
            Strings{"resreq"});
}

// The policy `p` with a node_order of the one line `body` (the body is line 3).
std::string NodeOrderPolicy(const std::string& body) {
  return "policy p;\non node_order(task: Task, node: Node) -> float {\n" + body + "\n}";
}

// A node_order that is not cacheable: the reason the pass gives, and the line it names.
struct NotCacheableCase {
  const char* name;
  std::string text;
  const char* reason;
  std::optional<int> line;  // none: not checked
};

class ScoreCacheAnalysisNotCacheable : public ::testing::TestWithParam<NotCacheableCase> {};

TEST_P(ScoreCacheAnalysisNotCacheable, GivesItsReasonAndLine) {
  const NotCacheableCase& c = GetParam();
  auto [why, line] = Reason(c.text);
  EXPECT_EQ(why, c.reason);
  if (c.line) EXPECT_EQ(line, *c.line);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ScoreCacheAnalysisNotCacheable,
    ::testing::Values(
        NotCacheableCase{"StateWrittenDuringTheSession", R"(policy p;
state placed: int;
fn bump() { placed += 1; }
on allocate(task: Task) { bump(); }
on node_order(task: Task, node: Node) -> float {
  return float(placed);
})",
                         "reads state `placed`, which `allocate` writes during the session",
                         6},
        NotCacheableCase{"ChangingTaskField",
                         NodeOrderPolicy("  return task.status == Pending ? 1.0 : 0.0;"),
                         "reads `task.status`, which is not a field a cached score is keyed on",
                         3},
        NotCacheableCase{"TaskFieldReadInACalledFunction", R"(policy p;
fn prio(t: Task) -> float { return float(t.priority); }
on node_order(task: Task, node: Node) -> float { return prio(task); })",
                         "calls `prio`, which reads `task.priority`, which is not a field a cached "
                         "score is keyed on",
                         2},
        NotCacheableCase{"SessionRead",
                         NodeOrderPolicy("  return float(len(session.nodes));"),
                         "reads `session`, which is session-wide",
                         3},
        NotCacheableCase{"HiddenInput",
                         NodeOrderPolicy("  return now() > node.metrics_time ? 1.0 : 0.0;"),
                         "calls `now`, whose answer depends on more than its arguments",
                         3},
        NotCacheableCase{"OtherTasksOnTheNode",
                         NodeOrderPolicy(
                             "  return float(count(p for p in node.tasks where p.priority > 1));"),
                         "reads `priority` of a task other than the one scored, which can change "
                         "without its node changing",
                         3},
        NotCacheableCase{"JobOfTheTask",
                         NodeOrderPolicy("  return float(task.job.priority);"),
                         "reads `priority` of a Job, which changes during a session",
                         3},
        NotCacheableCase{"NativeWithoutDeclaredFields",
                         NodeOrderPolicy(
                             "  return required_node_affinity_matches(task, node) ? 1.0 : 0.0;"),
                         "passes the task to `required_node_affinity_matches`, which does not "
                         "declare the task fields it reads",
                         std::nullopt},
        // term_matches_pod declares what it reads of its tasks, so the handler fails further in:
        // the terms come from a task field no score is keyed on.
        NotCacheableCase{"NativeDeclaringItsFields", R"(policy p;
on node_order(task: Task, node: Node) -> float {
  return float(count(w for w in task.preferred_pod_affinity
                     where term_matches_pod(w.term, task, task)));
})",
                         "reads `task.preferred_pod_affinity`, which is not a field a cached score "
                         "is keyed on",
                         3},
        NotCacheableCase{"TaskUsedAsAValue", R"(policy p;
on node_order(task: Task, node: Node) -> float {
  let t = task;
  return t.resreq.cpu;
})",
                         "uses the task `task` other than by reading its fields",
                         3}),
    [](const ::testing::TestParamInfo<NotCacheableCase>& info) { return info.param.name; });

// The built-in scorers the bench runs are cacheable; the ones reading live state are not.
TEST(ScoreCacheAnalysis, BuiltinPolicies) {
  std::map<std::string, ast::ScoreCacheFacts> facts;
  for (const auto& p : BuiltinPolicies()) {
    FrontendResult r = RunFrontend(SourceFile{std::string(p.path), std::string(p.text)});
    ASSERT_TRUE(r.ok()) << p.name;
    facts[std::string(p.name)] = r.policy->node_order_cache;
  }
  EXPECT_TRUE(facts["nodeorder"].cacheable) << facts["nodeorder"].reason;
  EXPECT_EQ(facts["nodeorder"].task_fields, (Strings{"images", "resreq"}));
  EXPECT_TRUE(facts["binpack"].cacheable) << facts["binpack"].reason;
  EXPECT_EQ(facts["binpack"].task_fields, Strings{"resreq"});
  for (const auto& [name, f] : facts)
    if (f.has_handler)
      std::printf("%-24s %s\n", name.c_str(), f.cacheable ? "cacheable" : f.reason.c_str());
}

}  // namespace
}  // namespace kiln::testing
