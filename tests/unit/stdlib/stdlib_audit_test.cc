// The builtin audit (issue 28, items 1 and 2). Driven by the standard library's own table
// (stdlib/library.h) and the collection methods the checker types itself:
//
//   * every library function is called with its canonical arguments, as a free function and,
//     where the checker allows it, as a method on its first argument, and the answer is checked;
//   * every argument position (the receiver included) is then given a value of every type in
//     kSamples; each call the checker accepts must compile (the checker accepting what codegen
//     cannot lower was item 2) and must answer what the same call answers when each argument is
//     first bound to a local of the parameter's declared type (the conversion the checker
//     promised, e.g. int → float, T → T?);
//   * the collection methods (`get`, `contains`, `keys`, `values`) on every list and map sample,
//     with every argument sample, against what `in`, indexing and comprehensions answer;
//   * the generic built-ins (len, range, min, max, abs, float, int, string) with every argument
//     type the checker accepts, and hand-checked answers for each.
//
// Policies are compiled by the real front end and codegen and run through the JIT. Run it under
// AddressSanitizer and UBSan with `scripts/sanitize asan 'StdlibAudit*'`: issue 28's list
// `contains` read a list as a string, and only a sanitizer sees every such read.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/frontend.h"
#include "compiler/host/compiled_policy.h"
#include "compiler/passes/walk.h"
#include "compiler/sema/signature.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "stdlib/library.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

// A value of one type as a policy expression inside `fn c(task: Task, node: Node)`; `open` and
// `close` bring it into scope (shapes come from loops over the views' lists).
struct Sample {
  std::string type;  // as Type::Name() spells it
  std::string expr;
  std::string open;
  std::string close;
};

const std::vector<Sample>& Samples() {
  static const std::vector<Sample> samples = {
      {"int", "7"},
      {"float", "2.5"},
      {"bool", "true"},
      {"string", R"("a/b")"},
      {"duration", "90s"},
      {"time", "now()"},
      {"quantity", "2Gi"},
      {"Resource", "resource{cpu: 2, memory: 4Gi}"},
      {"Missing", "Infinity"},
      {"TaskStatus", "Running"},
      {"PodGroupPhase", "PodGroupPhase.Running"},
      {"QueueState", "QueueState.Open"},
      {"Vote", "permit"},
      {"Fit", R"(unschedulable("r"))"},
      {"Validation", "valid"},
      {"Victims", "abstain_victims()"},
      {"none", "none"},
      {"int?", R"(parse_int("5"))"},
      {"float?", R"(parse_float("1.5"))"},
      {"string?", R"(json_string("{\"a\": \"x\"}", "/a"))"},
      {"list<int>", "[1, 2, 3]"},
      {"list<float>", "[1.5, 2.5]"},
      {"list<string>", R"(["a", "b"])"},
      {"list<bool>", "[true]"},
      {"list<Resource>", "[resource{cpu: 1}, resource{cpu: 2}]"},
      {"list<Task>", "[task]"},
      {"list<int?>", R"([parse_int("4"), parse_int("x")])"},
      {"list<list<int>>", "[[1], [2, 3]]"},
      {"list<Fit>", "[fits]"},
      {"map<string, int>", R"({"a": 1, "b": 2})"},
      {"map<string, string>", R"({"a": "x"})"},
      {"map<int, string>", R"({1: "x", 2: "y"})"},
      {"map<string, float>", R"({"a": 1.5})"},
      {"map<string, int?>", R"({"a": parse_int("1"), "b": parse_int("x")})"},
      {"map<Task, int>", "{task: 3}"},
      {"(string, int)", R"(("a", 1))"},
      {"map<(string, int), int>", R"({("a", 1): 2, ("b", 3): 4})"},
      {"map<string, string>", "node.labels"},
      {"Task", "task"},
      {"Node", "node"},
      {"Job", "task.job"},
      {"Queue", "task.job.queue"},
      {"Taint", "s_taint", "for s_taint in node.taints {", "}"},
      {"Toleration", "s_tol", "for s_tol in task.tolerations {", "}"},
      {"NodeSelectorTerm", "s_term", "for s_term in task.required_node_affinity {", "}"},
      {"SelectorRequirement", "s_req",
       "for s_term2 in task.required_node_affinity { for s_req in s_term2.match_expressions {",
       "} }"},
      {"PodAffinityTerm", "s_pat", "for s_pat in task.required_pod_affinity {", "}"},
      {"LabelSelector", "s_sel",
       "for s_pat2 in task.required_pod_affinity { if let s_sel = s_pat2.label_selector {", "} }"},
  };
  return samples;
}

const Sample* SampleOf(std::string_view type) {
  for (const Sample& s : Samples())
    if (s.type == type) return &s;
  return nullptr;
}

// One library function's canonical call. `args` are policy expressions (the receiver first for
// a method); "$Type" stands for that type's sample. `expect` is "= EXPR" (the answer renders as
// EXPR, declared with the result type, does), "? PRED" (a bool expression over `got`) or "" (the
// result cannot be inspected: it is only computed). `run` false: compiled, not run (functions
// that need a session, or the network).
struct Case {
  std::string_view name;
  std::vector<std::string> args;
  std::string expect;
  bool run = true;
  std::string_view type_variable = {};  // what `T` is in the canonical call of a generic row
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // math
      {"share", {"6.0", "3.0"}, "= 2.0"},
      {"sqrt", {"16.0"}, "= 4.0"},
      {"floor", {"2.7"}, "= 2.0"},
      {"ceil", {"2.1"}, "= 3.0"},
      {"round", {"2.5"}, "= 3.0"},
      {"log", {"1.0"}, "= 0.0"},
      {"pow", {"2.0", "10.0"}, "= 1024.0"},
      {"clamp", {"250.0", "0.0", "100.0"}, "= 100.0"},
      // resources
      {"dominant_share", {"resource{cpu: 1, memory: 1Gi}", "resource{cpu: 4, memory: 2Gi}"},
       "= 0.5"},
      {"less_equal", {"resource{cpu: 1}", "resource{cpu: 2}", "Zero"}, "= true"},
      {"less", {"resource{cpu: 1, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}", "Zero"},
       "= true"},
      {"less_partly", {"resource{cpu: 3, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}", "Zero"},
       "= true"},
      {"less_equal_in",
       {"resource{cpu: 1, memory: 8Gi}", "resource{cpu: 2, memory: 1Gi}", "resource{cpu: 1}"},
       "= true"},
      {"less_equal_partly_in",
       {"resource{cpu: 1, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}",
        "resource{cpu: 1, memory: 1Gi}"},
       "= true"},
      {"greater_partly_in", {"resource{cpu: 3}", "resource{cpu: 2}", "resource{cpu: 1}"},
       "= true"},
      {"greater_partly_relevant", {"resource{cpu: 3}", "resource{cpu: 2}", "resource{cpu: 1}"},
       "= true"},
      {"exceeded", {"resource{cpu: 3, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}"},
       "? got.cpu == 1000.0 and got.memory == 0.0"},
      {"min_dims", {"resource{cpu: 3, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}", "Zero"},
       "? got.cpu == 2000.0 and got.memory == 1073741824.0"},
      {"max_dims", {"resource{cpu: 3, memory: 1Gi}", "resource{cpu: 2, memory: 2Gi}"},
       "? got.cpu == 3000.0 and got.memory == 2147483648.0"},
      {"infinite_resource", {}, "? got.cpu > 1000000000000.0 and got.memory > 1000000000000.0"},
      {"has", {"resource{cpu: 1}", R"("cpu")"}, "= true"},
      {"resource_id", {R"("cpu")"}, "? got >= 0"},
      {"dim", {"resource{cpu: 2}", R"(resource_id("cpu"))"}, "= 2000.0"},
      // strings
      {"parse_duration", {R"("1h30m")"}, "= 5400s"},
      {"quantity", {R"("250m")"}, "? got.value == 0.25"},
      {"parse_quantity", {R"("2Gi")"}, "= 2Gi"},
      {"parse_int", {R"("42")"}, "= 42"},
      {"parse_float", {R"("1.5")"}, "= 1.5"},
      {"parse_bool", {R"("true")"}, "= true"},
      {"contains", {R"("abc")", R"("b")"}, "= true"},
      {"starts_with", {R"("abc")", R"("ab")"}, "= true"},
      {"ends_with", {R"("abc")", R"("bc")"}, "= true"},
      {"trim", {R"("  a b ")"}, R"(= "a b")"},
      {"to_upper", {R"("Tesla-t4 x")"}, R"(= "TESLA-T4 X")"},
      {"split", {R"("a/b")", R"("/")"}, R"(= ["a", "b"])"},
      // lists
      {"append", {"[1, 2]", "3"}, "= [1, 2, 3]", true, "int"},
      {"parse_json_number_map", {R"("{\"a\": 1.5}")"}, R"(= {"a": 1.5})"},
      {"parse_json_resource_map", {R"("{\"g\": {\"cpu\": \"2\"}}")"},
       R"(= {"g": resource{cpu: 2}})"},
      // json
      {"json_quote", {R"("ab")"}, R"(= "\"ab\"")"},
      {"json_number", {R"("{\"a\": 2}")", R"("/a")"}, "= 2.0"},
      {"json_string", {R"("{\"a\": \"x\"}")", R"("/a")"}, R"(= "x")"},
      {"json_bool", {R"("{\"a\": true}")", R"("/a")"}, "= true"},
      {"json_text", {R"("{\"a\": [1, 2]}")", R"("/a")"}, R"(= "[1,2]")"},
      {"json_keys", {R"("{\"b\": 1, \"a\": 2}")", R"("")"}, R"(= ["a", "b"])"},
      {"json_strings", {R"("{\"a\": [\"x\", \"y\"]}")", R"("/a")", R"("")"},
       R"(= ["x", "y"])"},
      // Kubernetes matching, on the views Populate() fills in
      {"requirement_matches", {"$SelectorRequirement", "node.labels"}, "= true"},
      {"selector_matches", {"$LabelSelector", R"({"app": "db"})"}, "= true"},
      {"selector_matches_task", {"$LabelSelector", "task"}, "= true"},
      {"term_matches_node", {"$NodeSelectorTerm", "node"}, "= true"},
      {"required_node_affinity_matches", {"task", "node"}, "= true"},
      {"term_matches_pod", {"$PodAffinityTerm", "task", "task"}, "= true"},
      {"tolerates", {"$Toleration", "$Taint"}, "= true"},
      {"task_tolerates", {"task", "$Taint"}, "= true"},
      {"task_tolerates_taint", {"task", R"("gpu")", R"("1")", R"("NoSchedule")"}, "= true"},
      // task status sets
      {"allocated_status", {"Running"}, "= true"},
      {"preemptable_status", {"Running"}, "= true"},
      {"completed_status", {"Running"}, "= false"},
      {"scheduled_status", {"Running"}, "= true"},
      // handler results
      {"unschedulable", {R"("r")"}, R"(? got.code == 2 and got.reason == "r")"},
      {"unresolvable", {R"("r")"}, R"(? got.code == 3 and got.reason == "r")"},
      {"fit_error", {R"("r")"}, R"(? got.code == 1 and got.reason == "r")"},
      {"fit_wait", {R"("r")"}, R"(? got.code == 4 and got.reason == "r")"},
      {"fit_skip", {R"("r")"}, R"(? got.code == 5 and got.reason == "r")"},
      {"combine", {R"(unschedulable("a"))", R"(unresolvable("b"))"}, "? got.code == 3"},
      {"coded", {R"("C")", R"("text")"}, R"(? ends_with(got, "text") and contains(got, "C") and got != "Ctext")"},
      {"invalid", {R"("r")", R"("m")"}, ""},
      {"victims", {"[task]"}, ""},
      {"abstain_victims", {}, ""},
      // session (the session-facing host functions need a session: compiled only here, run by
      // the scenario and session tests)
      {"now", {}, "= now()"},
      {"set_condition",
       {"task.job", R"("Scheduled")", R"("True")", R"("r")", R"("m")"}, "", false},
      {"set_fit_error", {"task.job", R"("m")"}, "", false},
      {"set_pod_annotation", {"task", R"("k")", R"("v")"}, "", false},
      {"remove_pod_annotation", {"task", R"("k")"}, "", false},
      {"show", {R"("x")", "resource{cpu: 1}"}, "", false},
      {"show_number", {R"("x")", "1.5"}, "", false},
      {"victim_order", {"task", "[task]"}, "", false},
      {"reject_with", {R"("C")", R"("m")"}, "", false},
      // http (the network: compiled only)
      {"http_post", {R"("http://127.0.0.1:9/")", R"("{}")", "1s"}, "", false},
  };
  return cases;
}

// Statements appending a rendering of `e` (of type t) to the string variable `out`. Values that
// cannot be inspected (Validation, Victims, votes) append a marker only.
std::string Render(const std::string& e, const Type* t, const std::string& out, int& fresh) {
  auto append = [&](const std::string& s) { return fmt::format("{0} = {0} + {1} + \";\";\n", out, s); };
  switch (t->kind) {
    case TypeKind::Int: case TypeKind::Float: case TypeKind::Bool: case TypeKind::String:
    case TypeKind::Duration: case TypeKind::Quantity:
    case TypeKind::TaskStatus: case TypeKind::QueueState: case TypeKind::PodGroupPhase:
      return append(fmt::format("string({})", e));
    case TypeKind::Resource: {
      // cpu, memory and every named dimension with its amount.
      std::string n = fmt::format("n{}", fresh++);
      return append(fmt::format("string(({0}).cpu) + \",\" + string(({0}).memory)", e)) +
             fmt::format("for {} in ({}).names {{\n{}}}\n", n, e,
                         append(fmt::format("{0} + \"=\" + string(({1})[{0}])", n, e)));
    }
    case TypeKind::Time: return append(fmt::format("string(({}).unix_seconds)", e));
    case TypeKind::Task: case TypeKind::Job: case TypeKind::Node: case TypeKind::Queue:
      return append(fmt::format("({}).name", e));
    case TypeKind::Fit:
      return append(fmt::format("string(({0}).code) + \":\" + ({0}).reason", e));
    case TypeKind::Optional: {
      std::string v = fmt::format("v{}", fresh++);
      return fmt::format("if let {} = {} {{\n{}{}}} else {{\n{}}}\n", v, e, append("\"some\""),
                         Render(v, t->elem, out, fresh), append("\"none\""));
    }
    case TypeKind::List: {
      std::string v = fmt::format("v{}", fresh++);
      return fmt::format("{}for {} in {} {{\n{}}}\n{}", append("\"[\""), v, e,
                         Render(v, t->elem, out, fresh), append("\"]\""));
    }
    case TypeKind::Tuple: {
      std::string elems;
      for (size_t i = 0; i < t->elems.size(); ++i)
        elems += Render(fmt::format("({}).{}", e, i), t->elems[i], out, fresh);
      return append("\"(\"") + elems + append("\")\"");
    }
    case TypeKind::Map: {
      std::string k = fmt::format("k{}", fresh++);
      std::string v = fmt::format("v{}", fresh++);
      return fmt::format("{}for {}, {} in {} {{\n{}{}}}\n{}", append("\"{\""), k, v, e,
                         Render(k, t->key, out, fresh), Render(v, t->elem, out, fresh),
                         append("\"}\""));
    }
    default: return append(fmt::format("\"{}\"", t->Name()));
  }
}

bool Inspectable(const Type* t) {
  switch (t->kind) {
    case TypeKind::Void: case TypeKind::Validation: case TypeKind::Victims: return false;
    default: return true;
  }
}

// One check: a body for `fn cN(task: Task, node: Node) -> bool` that returns false when the
// answer is wrong, and a description for the failure message.
struct Check {
  std::string body;
  std::string what;
  bool run = true;
  bool http = false;
};

std::string Policy(const std::vector<Check>& checks) {
  std::string text = "policy audit;\n";
  for (const Check& c : checks)
    if (c.http) {
      text += "uses http;\n";
      break;
    }
  std::string ordered, unordered;
  for (size_t i = 0; i < checks.size(); ++i) {
    text += fmt::format("fn c{}(task: Task, node: Node) -> bool {{\n{}return true;\n}}\n", i,
                        checks[i].body);
    if (checks[i].run)
      ordered += fmt::format("  if not c{0}(task, node) {{ return {0}.0; }}\n", i);
    else
      unordered += fmt::format("  let r{0} = c{0}(task, node);\n", i);
  }
  text += "on node_order(task: Task, node: Node) -> float {\n" + ordered + "  return -1.0;\n}\n";
  // Checks that are compiled only hang off an event handler the test never calls.
  if (!unordered.empty())
    text += "on allocate(task: Task) {\n  for node in session.nodes {\n" + unordered + "  }\n}\n";
  return text;
}

bool Accepted(const Check& check, std::string* diagnostics = nullptr) {
  std::string text = Policy({check});
  FrontendResult r = RunFrontend(SourceFile{"audit.policy", text});
  if (diagnostics) *diagnostics = FormatDiagnostics(r.diagnostics, SourceFile{"audit.policy", text});
  return r.ok();
}

// The views every check runs on: a task of job j1 in queue q1, with a toleration, a required
// node affinity term and a required pod affinity term that all match node n1 and the task itself.
struct Views {
  Queue queue;
  Job job;
  Task task;
  Node node;
  Views() {
    queue.name = "q1";
    job.name = "j1";
    job.queue = &queue;
    task.name = "t1";
    task.job = &job;
    PodShape& shape = task.mutable_shape();
    shape.labels = {{"app", "db"}};
    shape.tolerations.push_back(Toleration{"gpu", "Equal", "1", "NoSchedule", std::nullopt});
    NodeSelectorTerm term;
    term.match_expressions.push_back(SelectorRequirement{"zone", "In", {"a"}});
    shape.affinity.node_affinity = NodeAffinity{};
    shape.affinity.node_affinity->required = std::vector<NodeSelectorTerm>{term};
    PodAffinityTerm pod_term;
    pod_term.label_selector = LabelSelector{};
    pod_term.label_selector->match_labels = {{"app", "db"}};
    pod_term.topology_key = "zone";
    shape.affinity.pod_affinity = PodAffinity{};
    shape.affinity.pod_affinity->required.push_back(pod_term);
    node.name = "n1";
    node.labels = {{"zone", "a"}};
    node.taints.push_back(Taint{"gpu", "1", "NoSchedule"});
  }
};

// Compiles the checks into one policy and runs node_order: a test failure naming the first
// check that answers wrongly (or the policy, when it does not compile).
void RunChecks(const std::vector<Check>& checks, const std::string& group) {
  if (checks.empty()) return;
  std::string text = Policy(checks);
  auto loaded = testing::LoadPolicy(text, "test/audit_" + group + "_");
  ASSERT_TRUE(loaded) << group << ": the checker accepted these calls, but they do not compile:\n"
                      << text;
  Views v;
  double score = -12345;
  ASSERT_EQ(loaded->Fn<ExtensionPoint::NodeOrder>()(&loaded->ctx, &v.task, &v.node, &score), 0)
      << group << ": a check faulted:\n" << text;
  if (score != -1.0) {
    size_t i = static_cast<size_t>(score);
    ASSERT_LT(i, checks.size()) << group << ": score " << score;
    size_t n = 0;
    for (size_t k = 0; k < checks.size(); ++k) {
      if (!checks[k].run) continue;
      if (n++ == i) {
        ADD_FAILURE() << group << ": wrong answer from " << checks[k].what << ":\nfn c" << k
                      << " {\n" << checks[k].body << "}";
        return;
      }
    }
  }
}

// The opening and closing of every argument's sample scope, and its expression.
struct Arg {
  std::string expr;
  std::string open;
  std::string close;
};

Arg ArgOf(const std::string& spec) {
  if (!spec.empty() && spec[0] == '$') {
    const Sample* s = SampleOf(spec.substr(1));
    EXPECT_NE(s, nullptr) << spec;
    if (!s) return {spec};
    return {s->expr, s->open, s->close};
  }
  return {spec};
}
Arg ArgOf(const Sample& s) { return {s.expr, s.open, s.close}; }

std::string Call(std::string_view name, const std::vector<std::string>& args, bool method) {
  if (method) {
    std::string rest;
    for (size_t i = 1; i < args.size(); ++i) rest += (i > 1 ? ", " : "") + args[i];
    return fmt::format("({}).{}({})", args[0], name, rest);
  }
  std::string all;
  for (size_t i = 0; i < args.size(); ++i) all += (i > 0 ? ", " : "") + args[i];
  return fmt::format("{}({})", name, all);
}

// The body of a check comparing `got` (a call) with the expectation, inside the args' scopes.
std::string Body(const std::vector<Arg>& args, const std::string& got_call, const Type* result,
                 const std::string& expect, const std::string& prelude = "") {
  std::string open, close;
  for (const Arg& a : args) {
    open += a.open + "\n";
    close = a.close + "\n" + close;
  }
  int fresh = 0;
  std::string body = open + prelude;
  if (!Inspectable(result)) {
    body += result->kind == TypeKind::Void ? got_call + ";\n" : "let got = " + got_call + ";\n";
  } else if (expect.rfind("? ", 0) == 0) {
    body += fmt::format("let got = {};\nif not ({}) {{ return false; }}\n", got_call,
                        expect.substr(2));
  } else if (expect.rfind("= ", 0) == 0) {
    body += fmt::format("let got = {};\nlet want: {} = {};\nvar a = \"\";\nvar b = \"\";\n{}{}"
                        "if a != b {{ return false; }}\n",
                        got_call, result->Name(), expect.substr(2), Render("got", result, "a", fresh),
                        Render("want", result, "b", fresh));
  } else {
    body += "let got = " + got_call + ";\n";
  }
  return body + close;
}

const stdlib::Function* Row(std::string_view name) {
  for (const stdlib::Function& f : stdlib::Functions())
    if (f.name == name) return &f;
  return nullptr;
}

TEST(StdlibAudit, EveryLibraryFunctionHasACaseAndNamesAreUnambiguous) {
  std::set<std::string_view> cased;
  for (const Case& c : Cases()) {
    EXPECT_TRUE(cased.insert(c.name).second) << "two cases for " << c.name;
    EXPECT_NE(Row(c.name), nullptr) << "a case for `" << c.name << "`, which is not in the table";
  }
  std::set<std::string_view> names;
  for (const stdlib::Function& f : stdlib::Functions()) {
    EXPECT_TRUE(cased.count(f.name)) << "stdlib function `" << f.name
                                     << "` has no case in tests/unit/stdlib/stdlib_audit_test.cc";
    // Calls are resolved by name before their types are known: one row per name.
    EXPECT_TRUE(names.insert(f.name).second) << "two stdlib rows named " << f.name;
    for (std::string_view g : stdlib::kGenericBuiltins)
      EXPECT_NE(f.name, g) << "a stdlib row shadows the generic built-in " << g;
  }
}

// The canonical call of every function, free and as a method, and every argument of it replaced
// by every sample type.
TEST(StdlibAudit, EveryLibraryFunctionWithEveryAcceptedArgumentType) {
  int accepted = 0, rejected = 0;
  for (const Case& c : Cases()) {
    const stdlib::Function* row = Row(c.name);
    ASSERT_NE(row, nullptr) << c.name;
    TypeContext types;
    const Type* type_variable =
        c.type_variable.empty() ? nullptr : sema::ParseTypeString(c.type_variable, types);
    sema::Signature sig = sema::ParseSignature(row->signature, types, type_variable);
    std::vector<const Type*> params = sig.params;
    if (!row->receiver.empty())
      params.insert(params.begin(), sema::ParseTypeString(row->receiver, types));
    const Type* result = sig.result ? sig.result : types.Void();
    ASSERT_EQ(params.size(), c.args.size()) << c.name << " " << row->signature;
    std::vector<Arg> args;
    std::vector<std::string> exprs;
    for (const std::string& spec : c.args) {
      args.push_back(ArgOf(spec));
      exprs.push_back(args.back().expr);
    }
    const bool receiver_only = !row->receiver.empty();
    std::vector<Check> checks;
    std::string diags;
    // Canonical: free (unless it is a method only) and as a method (when it has an argument).
    for (bool method : {false, true}) {
      if (method ? exprs.empty() : receiver_only) continue;
      Check check{Body(args, Call(c.name, exprs, method), result, c.expect),
                  Call(c.name, c.args, method), c.run, row->capability == "http"};
      bool ok = Accepted(check, &diags);
      // Every function can be called as a method on its first argument.
      EXPECT_TRUE(ok) << "the canonical call " << check.what << " is rejected:\n" << diags;
      if (ok) checks.push_back(check);
    }
    // Every position, every sample type.
    for (size_t p = 0; p < params.size(); ++p) {
      for (const Sample& s : Samples()) {
        if (s.type == params[p]->Name() && s.expr == args[p].expr) continue;
        for (bool method : {false, true}) {
          if (method ? false : receiver_only) continue;
          if (method && !receiver_only && p != 0) continue;  // the receiver's type is what varies
          std::vector<Arg> mutated = args;
          mutated[p] = ArgOf(s);
          std::vector<std::string> got_exprs = exprs;
          got_exprs[p] = s.expr;
          // The reference binds the argument to a local of the parameter's type first.
          std::vector<std::string> want_exprs = exprs;
          want_exprs[p] = "ref_arg";
          // For a generic row, the sample's own type: it may bind `T` to something else.
          std::string prelude =
              type_variable ? fmt::format("let ref_arg = {};\n", s.expr)
                            : fmt::format("let ref_arg: {} = {};\n", params[p]->Name(), s.expr);
          std::string expect;
          if (Inspectable(result)) {
            // Compare the call on the sample with the call on the bound local.
            expect = "= " + Call(c.name, want_exprs, method);
          }
          Check check{Body(mutated, Call(c.name, got_exprs, method), result, expect, prelude),
                      fmt::format("{} with argument {} a `{}` ({})", c.name, p + 1, s.type,
                                  Call(c.name, got_exprs, method)),
                      c.run, row->capability == "http"};
          if (Accepted(check)) {
            checks.push_back(check);
            ++accepted;
          } else {
            ++rejected;
          }
        }
      }
    }
    RunChecks(checks, std::string(c.name));
  }
  // The audit ran: most variants are rejected, some (int → float, T → T?) accepted.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 1000);
  std::cout << "[ audit    ] library functions: " << accepted << " mutated calls accepted and "
            << "checked, " << rejected << " rejected by the checker\n";
}

// The collection methods on every list and map sample with every argument sample, against `in`,
// indexing and comprehensions.
TEST(StdlibAudit, CollectionMethodsWithEveryReceiverAndArgumentType) {
  int accepted = 0, rejected = 0;
  std::vector<Sample> args = Samples();
  // In-range and absent indexes and keys as well as the samples.
  for (const char* extra : {"0", "1", "-1", R"("a")", R"("zone")", "1.5", "2"})
    args.push_back({"extra", extra});
  std::vector<Check> checks;
  for (const Sample& recv : Samples()) {
    // Strings have `contains` too, as a library function: the test above covers it.
    if (recv.type.rfind("list<", 0) != 0 && recv.type.rfind("map<", 0) != 0) continue;
    for (std::string_view method : {"get", "contains", "keys", "values", "size"}) {
      std::vector<std::vector<const Sample*>> arg_lists = {{}};
      for (const Sample& a : args) arg_lists.push_back({&a});
      for (const auto& list : arg_lists) {
        std::string arg = list.empty() ? "" : list[0]->expr;
        std::string got = fmt::format("({}).{}({})", recv.expr, method, arg);
        std::string open = recv.open + "\n" + (list.empty() ? "" : list[0]->open + "\n");
        std::string close = (list.empty() ? "" : list[0]->close + "\n") + recv.close + "\n";
        // The reference, from the receiver and argument bound to locals.
        std::string ref;
        if (method == "get" && recv.type.rfind("list<", 0) == 0)
          ref = "(ref_arg >= 0 and ref_arg < len(ref_recv)) ? ref_recv[ref_arg] : none";
        else if (method == "get")
          ref = "ref_arg in ref_recv ? ref_recv[ref_arg] : none";
        else if (method == "contains")
          ref = "ref_arg in ref_recv";
        else if (method == "keys")
          ref = "[k for k, v in ref_recv]";
        else if (method == "values")
          ref = "[v for k, v in ref_recv]";
        else
          ref = "len(ref_recv)";
        // Probe the result type with the checker: the typed comparison needs its name.
        std::string probe = open + fmt::format("let got = {};\n", got) + close;
        if (!Accepted(Check{probe, got})) {
          ++rejected;
          continue;
        }
        FrontendResult typed = RunFrontend(SourceFile{"audit.policy", Policy({Check{probe, got}})});
        const Type* result = nullptr;
        const Type* param = nullptr;  // the argument's parameter type
        passes::Walker find;
        find.on_stmt = [&](ast::Stmt* s) {
          auto* l = ast::As<ast::Let>(s);
          if (!l || l->local->name != "got") return;
          result = l->local->type;
          auto* call = ast::As<ast::Call>(l->value.get());
          if (!call || !call->receiver || !call->receiver->type) return;
          const Type* r = call->receiver->type;
          if (method == "contains") param = r->elem;
          else if (method == "get") param = r->kind == TypeKind::List ? typed.policy->types->Int() : r->key;
        };
        for (auto* fn : typed.policy->All<ast::FnDecl>()) find.Stmt(fn->body.get());
        ASSERT_NE(result, nullptr) << got;
        std::string body = open + fmt::format("let got = {};\nlet ref_recv = {};\n", got, recv.expr);
        if (!list.empty()) {
          ASSERT_NE(param, nullptr) << got;
          body += fmt::format("let ref_arg: {} = {};\n", param->Name(), arg);
        }
        int fresh = 0;
        body += fmt::format("let want: {} = {};\nvar a = \"\";\nvar b = \"\";\n{}{}"
                            "if a != b {{ return false; }}\n",
                            result->Name(), ref, Render("got", result, "a", fresh),
                            Render("want", result, "b", fresh));
        body += close;
        Check check{body, fmt::format("{} (receiver `{}`)", got, recv.type)};
        std::string diags;
        ASSERT_TRUE(Accepted(check, &diags))
            << "the checker accepts " << got << " but not its reference " << ref << ":\n"
            << diags;
        checks.push_back(check);
        ++accepted;
      }
    }
  }
  RunChecks(checks, "collection_methods");
  // 14 list and map samples: every one has get, lists contains, maps keys and values.
  EXPECT_GT(accepted, 40);
  std::cout << "[ audit    ] collection methods: " << accepted << " calls accepted and checked, "
            << rejected << " rejected by the checker\n";
}

// The generic built-ins with every argument type (two for min and max) the checker accepts:
// each accepted call must compile and run; the answers are checked by hand below.
TEST(StdlibAudit, GenericBuiltinsWithEveryAcceptedArgumentType) {
  int accepted = 0, rejected = 0;
  std::vector<Check> checks;
  auto consider = [&](const std::string& call, const std::vector<const Sample*>& used) {
    std::string open, close;
    for (const Sample* s : used) {
      open += s->open + "\n";
      close = s->close + "\n" + close;
    }
    Check check{open + "let got = " + call + ";\nvar a = \"\";\n" + close, call};
    FrontendResult r = RunFrontend(SourceFile{"audit.policy", Policy({check})});
    if (!r.ok()) {
      ++rejected;
      return;
    }
    const Type* result = nullptr;
    passes::Walker find;
    find.on_stmt = [&](ast::Stmt* s) {
      if (auto* l = ast::As<ast::Let>(s); l && l->local->name == "got") result = l->local->type;
    };
    for (auto* fn : r.policy->All<ast::FnDecl>()) find.Stmt(fn->body.get());
    ASSERT_NE(result, nullptr);
    int fresh = 0;
    checks.push_back(Check{open + "let got = " + call + ";\nvar a = \"\";\n" +
                               Render("got", result, "a", fresh) + close,
                           call});
    ++accepted;
  };
  for (std::string_view f : stdlib::kGenericBuiltins) {
    if (f == "sum" || f == "count" || f == "any" || f == "all") continue;  // generators only
    for (const Sample& a : Samples()) {
      consider(fmt::format("{}({})", f, a.expr), {&a});
      if (f == "min" || f == "max" || f == "range" || f == "compare")
        for (const Sample& b : Samples())
          consider(fmt::format("{}({}, {})", f, a.expr, b.expr), {&a, &b});
    }
  }
  // The built-in fields of values (docs/language.md "Views of the cluster"): every name the
  // checker accepts on a sample must compile and run (`t.unix_seconds` and `d.nanoseconds` were
  // accepted and failed to load).
  for (const Sample& a : Samples()) {
    for (const char* field : {"cpu", "memory", "pods", "names", "is_empty", "seconds",
                              "nanoseconds", "minutes", "hours", "milliseconds", "unix",
                              "unix_seconds", "value", "code", "reason", "pass", "message", "len",
                              "size"}) {
      if (a.type == "Task" || a.type == "Node" || a.type == "Job" || a.type == "Queue" ||
          !a.open.empty())
        continue;  // the views' fields are the ABI table's, tested with the views
      consider(fmt::format("({}).{}", a.expr, field), {&a});
    }
  }
  // Hand-checked answers.
  for (const char* c : {
           "len([1, 2, 3]) == 3", R"(len("abc") == 3)", R"(len({"a": 1}) == 1)",
           "len(node.labels) == 1", "min(2, 3.5) == 2.0", "max(90s, 2m) == 2m",
           "min(2Gi, 1Gi) == 1Gi", "abs(-3) == 3", "abs(-90s) == 90s", "abs(-1.5) == 1.5",
           "float(2Gi) == 2147483648.0", "int(2.9) == 2", "int(Running) == 32",
           R"(string(7) == "7")", R"(string(true) == "true")", R"(string("x") == "x")",
           "len(range(2, 5)) == 3 and range(2, 5)[0] == 2 and range(3)[2] == 2",
           "(90s).nanoseconds == 90000000000 and (90s).seconds == 90.0",
           "(2Gi).value == 2147483648.0", "(resource{cpu: 2}).cpu == 2000.0",
           R"((unschedulable("x")).code == 2 and (unschedulable("x")).reason == "x")",
           R"(string(90s) == "90000000000" and string(Running) == "32")",
           "compare(1, 2) == -1 and compare(2, 2) == 0 and compare(3, 2) == 1",
           R"(compare(2.5, 2) == 1 and compare("ab", "b") == -1 and compare("b", "b") == 0)",
           "compare(90s, 2m) == -1 and compare(2Gi, 1Gi) == 1 and compare(now(), now()) == 0",
           "compare(-1.5, -1.5) == 0 and compare(-2, 1.5) == -1",
           "compare(false, true) == -1 and compare(true, false) == 1 and compare(true, true) == 0",
       }) {
    Check check{fmt::format("if not ({}) {{ return false; }}\n", c), c};
    std::string diags;
    ASSERT_TRUE(Accepted(check, &diags)) << c << "\n" << diags;
    checks.push_back(check);
  }
  RunChecks(checks, "generic_builtins");
  EXPECT_GT(accepted, 30);
  EXPECT_GT(rejected, 1000);
  std::cout << "[ audit    ] generic built-ins: " << accepted << " calls accepted and run, "
            << rejected << " rejected by the checker\n";
}

}  // namespace
}  // namespace kiln
