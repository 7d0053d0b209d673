// Codegen semantics: policies compiled and JIT'd for real, their handlers called through the
// same C ABI the session uses (runtime/session.h HandlerFn<P>). Each test pins down one rule of
// docs/language.md "Defined results everywhere" or one lowering (state, maps, labels, lists,
// comprehensions, resources, thunks).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "compiler/builtin_policies.h"
#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"
#include "tests/unit/jit_test_util.h"

namespace kiln {
namespace {

// A compiled policy with its arguments bound (no conf arguments) and per-session state open.
using Loaded = testing::LoadedPolicy;


// Evaluates a float expression inside `on node_order(task, node)`; `prelude` adds declarations.
double EvalFloat(const std::string& body, const std::string& prelude = "") {
  return testing::EvalNodeOrder(body, prelude, "test/codegen_eval_");
}

// Each test may load one policy and call its handlers with a task and a node of its own.
class CodegenSemantics : public ::testing::Test {
 protected:
  // Compiles `text` and opens its state (session time `now`) into `l`; false with a test failure
  // when it does not compile.
  bool Load(const std::string& text, int64_t now = 0) {
    l = testing::LoadPolicy(text, "test/codegen_", now);
    return l != nullptr;
  }

  std::unique_ptr<Loaded> l;
  Task task;
  Node node;
};

// node_order's answer for `task` on `node`.
double NodeOrder(Loaded& l, Task& task, Node& node) {
  double score = 0;
  l.Fn<ExtensionPoint::NodeOrder>()(&l.ctx, &task, &node, &score);
  return score;
}

// The LLVM IR of the policy `text` compiled as test/codegen_<name>.policy ("" with a test failure
// when it does not compile).
std::string CompiledIr(const std::string& name, const std::string& text) {
  auto ir = PolicyCompiler::EmitIr(SourceFile{"test/codegen_" + name + ".policy", text});
  EXPECT_TRUE(ir.ok()) << (ir.ok() ? "" : ir.error().Format());
  return ir.ok() ? *ir : "";
}

// A library row is all a builtin needs to be called from a policy (issue #29): clamp is one row
// in stdlib/library.cc and one C function; the checker, the lowering and the JIT's symbols come
// from the row.
TEST_F(CodegenSemantics, ClampIsCalledThroughItsLibraryRow) {
  EXPECT_EQ(EvalFloat("return clamp(float(len(node.name)) - 5.0, 0.0, 100.0);"), 0.0);
  EXPECT_EQ(EvalFloat("return clamp(250.0, 0.0, 100.0) + clamp(-1.0, 0.5, 2.0);"), 100.5);
  EXPECT_EQ(EvalFloat("return clamp(7.0, 10.0, 0.0);"), 10.0);  // lo > hi: lo
}

TEST_F(CodegenSemantics, IntegerDivisionAndRemainderByZeroAreZero) {
  EXPECT_EQ(EvalFloat("let z = 0; return float(7 / z);"), 0.0);
  EXPECT_EQ(EvalFloat("let z = 0; return float(7 % z);"), 0.0);
  EXPECT_EQ(EvalFloat("let d = 2; return float(7 / d);"), 3.0);
  EXPECT_EQ(EvalFloat("let d = -2; return float(7 % d);"), 1.0);
}

TEST_F(CodegenSemantics, FloatDivisionByZeroIsZero) {
  EXPECT_EQ(EvalFloat("let z = 0.0; return 1.5 / z;"), 0.0);
  EXPECT_EQ(EvalFloat("let z = 0; return 3.0 / float(z) + 1.0;"), 1.0);
}

TEST_F(CodegenSemantics, IntegerOverflowSaturates) {
  EXPECT_EQ(EvalFloat("let big = 9223372036854775807; if big + 1 == big { return 1.0; } return 0.0;"),
            1.0);
  EXPECT_EQ(EvalFloat("let big = 9223372036854775807; if big * 3 == big { return 1.0; } return 0.0;"),
            1.0);
  EXPECT_EQ(EvalFloat("let small = -9223372036854775807 - 1;\n"
                      "if small - 1 == small and small * 2 == small { return 1.0; } return 0.0;"),
            1.0);
  // INT64_MIN / -1 overflows in C; the language saturates it.
  EXPECT_EQ(EvalFloat("let small = -9223372036854775807 - 1; let m = -1;\n"
                      "if small / m == 9223372036854775807 and small % m == 0 { return 1.0; }\n"
                      "return 0.0;"),
            1.0);
}

// int(x) saturates out of range and maps NaN to 0; subtractions saturate toward the left
// operand's sign. (Tier 0 lowers these intrinsics by hand: jit-tiers/unit-tier0 runs this too.)
TEST_F(CodegenSemantics, FloatToIntSaturatesAndNanIsZero) {
  EXPECT_EQ(EvalFloat("let big = 1.0e308 * 10.0; let nan = big - big;\n"
                      "if int(nan) == 0 and int(big) == 9223372036854775807\n"
                      "   and int(-big) == -9223372036854775807 - 1 and int(-2.75) == -2\n"
                      "   and int(9.3e18) == 9223372036854775807 and int(9.2e18) == 9200000000000000000\n"
                      "{ return 1.0; }\nreturn 0.0;"),
            1.0);
  EXPECT_EQ(EvalFloat("let small = -9223372036854775807 - 1; let big = 9223372036854775807;\n"
                      "if small - 1 == small and big - small == big and small - big == small\n"
                      "   and 0 - small == big and -5 - 3 == -8 and big + small == -1\n"
                      "{ return 1.0; }\nreturn 0.0;"),
            1.0);
  EXPECT_EQ(EvalFloat("return float(max(-3, 0) + min(-3, 0) * 10 + max(7, 2));"), -23.0);
}

TEST_F(CodegenSemantics, MissingMapKeyGivesZeroValueAndGetGivesNone) {
  EXPECT_EQ(EvalFloat("var m: map<string, int> = {\"a\": 4};\n"
                      "return float(m[\"a\"] * 10 + m[\"missing\"]);"),
            40.0);
  EXPECT_EQ(EvalFloat("var m: map<string, int> = {};\n"
                      "if \"x\" in m { return 1.0; }\n"
                      "return float(m.get(\"x\") ?? 5);"),
            5.0);
  EXPECT_EQ(EvalFloat("var m: map<string, float> = {};\n"
                      "m[\"k\"] += 2.5; m[\"k\"] += 1.0;\n"
                      "return m[\"k\"];"),
            3.5);
}

TEST_F(CodegenSemantics, ListIndexOutOfRangeGivesZero) {
  EXPECT_EQ(EvalFloat("let xs = [1, 2, 3]; return float(xs[1] + xs[5] + xs[-1]);"), 2.0);
}

TEST_F(CodegenSemantics, AbsentLabelIndexesAsEmptyString) {
  ASSERT_TRUE(Load(R"(policy labels;
on node_order(task: Task, node: Node) -> float {
  var score = 0.0;
  if node.labels["zone"] == "a" { score += 1.0; }
  if node.labels["absent"] == "" { score += 10.0; }
  if let v = task.labels.get("tier") { if v == "gold" { score += 100.0; } }
  if task.labels.get("nope") == none { score += 1000.0; }
  return score;
}
)"));
  node.labels["zone"] = "a";
  task.mutable_shape().labels["tier"] = "gold";
  EXPECT_EQ(NodeOrder(*l, task, node), 1111.0);
  node.labels["zone"] = "b";
  task.mutable_shape().labels.clear();
  EXPECT_EQ(NodeOrder(*l, task, node), 1010.0);
}

TEST_F(CodegenSemantics, StringsConcatenateAndCompare) {
  EXPECT_EQ(EvalFloat("let s = \"ab\" + string(12) + \"c\";\n"
                      "if s == \"ab12c\" and s < \"ac\" and len(s) == 5 { return 1.0; } return 0.0;"),
            1.0);
}

// `==` and `!=` on strings compare inline (lengths, then bytes) rather than through
// kiln_rt_str_cmp: every case of a length or byte difference, empty strings, run-time strings
// against literals and against each other.
TEST_F(CodegenSemantics, StringEqualityComparesLengthsThenBytes) {
  EXPECT_EQ(EvalFloat("let parts = split(\"NoSchedule,NoSchedulf,PreferNoSchedule,,NoSchedule\", \",\");\n"
                      "var bits = 0;\n"
                      "if parts[0] == \"NoSchedule\" { bits += 1; }\n"        // equal to a literal
                      "if parts[1] != \"NoSchedule\" { bits += 2; }\n"        // last byte differs
                      "if parts[2] != parts[0] { bits += 4; }\n"              // lengths differ
                      "if parts[3] == \"\" { bits += 8; }\n"                  // empty
                      "if parts[3] != parts[0] and parts[0] != parts[3] { bits += 16; }\n"
                      "if parts[4] == parts[0] { bits += 32; }\n"             // equal, not shared
                      "if not (parts[1] == parts[0]) { bits += 64; }\n"
                      "return float(bits);"),
            127.0);
}

TEST_F(CodegenSemantics, ComprehensionsFilterOrderAndAggregate) {
  EXPECT_EQ(EvalFloat("let xs = [3, 1, 4, 1, 5];\n"
                      "let big = [x for x in xs where x > 1 order by x desc];\n"
                      "return float(big[0] * 100 + big[1] * 10 + big[2]);"),
            543.0);
  EXPECT_EQ(EvalFloat("let xs = [3, 1, 4, 1, 5];\n"
                      "return float(sum(x for x in xs) * 100 + count(x for x in xs where x == 1));"),
            1402.0);
  EXPECT_EQ(EvalFloat("let xs = [3, 1, 4];\n"
                      "if any(x > 3 for x in xs) and not all(x > 1 for x in xs) { return float(max(x for x in xs)); }\n"
                      "return 0.0;"),
            4.0);
}

TEST_F(CodegenSemantics, ResourcesLoadDirectlyAndLiteralsUseVolcanoUnits) {
  ASSERT_TRUE(Load(R"(policy res;
on node_order(task: Task, node: Node) -> float {
  let want = resource{cpu: 2, memory: 1Gi};
  let free = node.idle - task.resreq;
  if task.resreq <= node.idle and want.cpu == 2000.0 {
    return free.cpu + want.memory / 1073741824.0;
  }
  return -1.0;
}
)"));
  task.mutable_resreq().Set(kCpu, 500);
  node.idle.Set(kCpu, 2000);
  node.idle.Set(kMemory, 1e9);
  EXPECT_EQ(NodeOrder(*l, task, node), 1501.0);
  task.mutable_resreq().Set(kCpu, 4000);
  EXPECT_EQ(NodeOrder(*l, task, node), -1.0);
}

// `r[name]` with a name known only at run time: the id lookup is merged across resources and
// the dimension is read inline (codegen ResourceDimAt); a name no resource has reads 0, as does a
// dimension the resource lacks, and compound assignment through such a name still copies.
TEST_F(CodegenSemantics, ResourceDimensionByRuntimeName) {
  ASSERT_TRUE(Load(R"(policy dyn;
on node_order(task: Task, node: Node) -> float {
  var total = 0.0;
  for name in split("cpu,memory,example.com/dyn-gpu,example.com/never-set", ",") {
    total += task.resreq[name] * 1000.0 + node.idle[name];
  }
  var r = task.resreq;
  let key = split("x,cpu", ",")[1];
  r[key] += 1.0;
  return total + r.cpu * 1000000.0 + task.resreq.cpu;
}
)"));
  task.mutable_resreq().Set(kCpu, 2);
  task.mutable_resreq().Set(kMemory, 3);
  task.mutable_resreq().Set(*ResourceRegistry::Intern("example.com/dyn-gpu"), 5);
  node.idle.Set(kCpu, 7);
  node.idle.Set(kMemory, 11);
  // Σ resreq·1000 + idle over the names = 2007 + 3011 + 5000 + 0; r.cpu = 3; resreq unchanged.
  EXPECT_EQ(NodeOrder(*l, task, node), 10018.0 + 3000000.0 + 2.0);
}

// "cpu" and "memory" are recognised inline by their bytes (codegen ResourceIdOf); names that
// differ in one byte or in length go to the registry and read their own dimension.
TEST_F(CodegenSemantics, ResourceNamesCloseToCpuAndMemoryAreOtherDimensions) {
  ASSERT_TRUE(Load(R"(policy near;
on node_order(task: Task, node: Node) -> float {
  var total = 0.0;
  var scale = 1.0;
  for name in split("cpu,memory,cpx,cpU,Cpu,cp,cpuu,memorx,Memory,memor,memoryy,xemory", ",") {
    total += task.resreq[name] * scale;
    scale *= 10.0;
  }
  return total;
}
)"));
  task.mutable_resreq().Set(kCpu, 1);
  task.mutable_resreq().Set(kMemory, 2);
  task.mutable_resreq().Set(*ResourceRegistry::Intern("cpx"), 3);
  task.mutable_resreq().Set(*ResourceRegistry::Intern("memorx"), 4);
  EXPECT_EQ(NodeOrder(*l, task, node), 1.0 + 20.0 + 300.0 + 4.0 * 1e7);  // memorx is the 8th name
}

TEST_F(CodegenSemantics, StatePersistsAcrossCallsWithinASession) {
  ASSERT_TRUE(Load(R"(policy counter;
state placed: int;
state by_job: map<Job, int>;
on allocate(task: Task) {
  placed += 1;
  by_job[task.job] += 1;
}
on node_order(task: Task, node: Node) -> float {
  return float(placed * 10 + by_job[task.job]);
}
)"));
  Job j1, j2;
  Task a, b;
  a.job = &j1;
  b.job = &j2;
  auto on_allocate = l->Fn<ExtensionPoint::OnAllocate>();
  on_allocate(&l->ctx, &a);
  on_allocate(&l->ctx, &a);
  on_allocate(&l->ctx, &b);
  EXPECT_EQ(NodeOrder(*l, a, node), 32.0);
  EXPECT_EQ(NodeOrder(*l, b, node), 31.0);
}

TEST_F(CodegenSemantics, IntHandlersReturnOnlyTheSign) {
  ASSERT_TRUE(Load(R"(policy order;
on job_order(l: Job, r: Job) -> int {
  return (r.priority - l.priority) * 1000;
}
)"));
  Job hi, lo;
  hi.priority = 10;
  lo.priority = 1;
  auto fn = l->Fn<ExtensionPoint::JobOrder>();
  EXPECT_EQ(fn(&l->ctx, &hi, &lo), -1);
  EXPECT_EQ(fn(&l->ctx, &lo, &hi), 1);
  EXPECT_EQ(fn(&l->ctx, &lo, &lo), 0);
}

TEST_F(CodegenSemantics, VictimsThunkMarksTheChosenCandidates) {
  ASSERT_TRUE(Load(R"(policy pick;
on preemptable(preemptor: Task, candidates: list<Task>) -> Victims {
  if len(candidates) == 0 { return abstain_victims(); }
  return victims([c for c in candidates where c.priority < preemptor.priority]);
}
)"));
  Task preemptor, c0, c1, c2;
  preemptor.priority = 5;
  c0.priority = 1;
  c1.priority = 9;
  c2.priority = 4;
  const Task* cands[] = {&c0, &c1, &c2};
  uint8_t selected[3] = {0, 0, 0};
  auto fn = l->Fn<ExtensionPoint::Preemptable>();
  EXPECT_EQ(fn(&l->ctx, &preemptor, cands, 3, selected), 1);
  EXPECT_EQ(selected[0], 1);
  EXPECT_EQ(selected[1], 0);
  EXPECT_EQ(selected[2], 1);
  EXPECT_EQ(fn(&l->ctx, &preemptor, cands, 0, selected), 0);  // abstain
}

TEST_F(CodegenSemantics, SessionClockIsTheContextsNotTheWallClock) {
  ASSERT_TRUE(Load(R"(policy clock;
on node_order(task: Task, node: Node) -> float {
  if let at = task.scheduled_at { return (now() - at).seconds; }
  return -1.0;
}
)",
                   /*now=*/100'000'000'000));
  EXPECT_EQ(NodeOrder(*l, task, node), -1.0);  // scheduled_at == 0: unset → none
  task.scheduled_at = 40'000'000'000;
  EXPECT_EQ(NodeOrder(*l, task, node), 60.0);
}

TEST_F(CodegenSemantics, JsonMapsParseOrGiveNone) {
  EXPECT_EQ(EvalFloat("if let m = parse_json_number_map(\"{\\\"a\\\": 2.5, \\\"b\\\": 4}\") {\n"
                      "  return m[\"a\"] + m[\"b\"] + m[\"missing\"];\n}\nreturn -1.0;"),
            6.5);
  EXPECT_EQ(EvalFloat("if let m = parse_json_number_map(\"{\\\"a\\\": \\\"x\\\"}\") { return 1.0; }\n"
                      "if let m = parse_json_number_map(\"not json\") { return 2.0; }\nreturn -1.0;"),
            -1.0);
}

// The IR of one handler's thunk (its body is inlined there), from `define` to the closing brace.
std::string HandlerIr(const std::string& ir, const std::string& handler) {
  size_t start = ir.find("@kiln.on." + handler + "(");
  if (start == std::string::npos) return "<no handler " + handler + ">";
  size_t end = ir.find("\n}\n", start);
  return ir.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// `key in view.labels` (also inside a comprehension) asks the view's map in place: a present
// key with an empty value is in, an absent key is not, and nothing copies the labels into a
// policy map (which once made nodeorder's topology-spread scorer 10x slower).
TEST_F(CodegenSemantics, InOnViewLabelsAsksTheViewInPlace) {
  const char* text = R"(policy inlabels;
fn has_all(node: Node, keys: list<string>) -> bool {
  return all(k in node.labels for k in keys);
}
on node_order(task: Task, node: Node) -> float {
  var score = 0.0;
  if "zone" in node.labels { score += 1.0; }
  if "empty" in node.labels { score += 10.0; }
  if "absent" in node.labels { score += 100.0; }
  if has_all(node, split("zone,empty", ",")) { score += 1000.0; }
  if has_all(node, split("zone,absent", ",")) { score += 10000.0; }
  if "app" in task.labels { score += 100000.0; }
  return score;
}
)";
  ASSERT_TRUE(Load(text));
  node.labels["zone"] = "z1";
  node.labels["empty"] = "";
  EXPECT_EQ(NodeOrder(*l, task, node), 1011.0);
  task.mutable_shape().labels["app"] = "a";
  EXPECT_EQ(NodeOrder(*l, task, node), 101011.0);
  const std::string ir = CompiledIr("inlabels", text);
  EXPECT_EQ(ir.find("kiln_node_label_at"), std::string::npos) << "labels were copied";
  EXPECT_EQ(HandlerIr(ir, "node_order").find("kiln_rt_map_new"), std::string::npos)
      << "labels were copied";
}

// Iterating a view's record or string list (node.taints, task.tolerations, task.images) walks
// the host's accessors: loops, comprehensions and break see every element in order, and nothing
// is copied into the call arena for it.
TEST_F(CodegenSemantics, IteratingViewListsWalksTheViewInPlace) {
  const char* text = R"(policy viewlists;
on node_order(task: Task, node: Node) -> float {
  var score = 0.0;
  score += float(count(t for t in node.taints where t.effect == "PreferNoSchedule"));
  for t in node.taints {
    if t.key == "stop" { break; }
    score += 10.0;
  }
  if any(any(tolerates(tol, t) for tol in task.tolerations) for t in node.taints) { score += 100.0; }
  var i = 0;
  for image in task.images {
    i += 1;
    if image == "b" { score += 1000.0 * float(i); }
  }
  return score;
}
)";
  ASSERT_TRUE(Load(text));
  node.taints.push_back({"a", "1", "PreferNoSchedule"});
  node.taints.push_back({"b", "2", "NoSchedule"});
  node.taints.push_back({"stop", "", "PreferNoSchedule"});
  node.taints.push_back({"c", "3", "PreferNoSchedule"});
  task.mutable_shape().images = {"a", "b", "c"};
  EXPECT_EQ(NodeOrder(*l, task, node), 3.0 + 20.0 + 2000.0);
  task.mutable_shape().tolerations.push_back({"b", "Exists", "", "", std::nullopt});
  EXPECT_EQ(NodeOrder(*l, task, node), 3.0 + 20.0 + 100.0 + 2000.0);
  EXPECT_EQ(HandlerIr(CompiledIr("viewlists", text), "node_order").find("kiln_rt_alloc"),
            std::string::npos)
      << "a view list was copied";
}

// A view's int-valued host map (node.images) is read in place like its labels — `in`, `[]`,
// `.get` and `len` — and `len` of a view list asks the host for the size: none of them copies
// anything into the call arena, so a handler using only these needs no fault frame or arena.
TEST_F(CodegenSemantics, ViewMapAndListSizesAreReadInPlace) {
  const char* text = R"(policy viewsizes;
on node_order(task: Task, node: Node) -> float {
  var score = 0.0;
  if "nginx:latest" in node.images { score += 1.0; }
  if "redis:7" in node.images { score += 10.0; }
  score += float(node.images["nginx:latest"]) * 100.0;
  score += float(node.images["absent"]) * 100.0;
  if let size = node.images.get("nginx:latest") { score += float(size) * 1000.0; }
  if let size = node.images.get("absent") { score += 1e9; }
  score += float(len(node.images)) * 10000.0;
  score += float(len(task.images)) * 100000.0;
  score += float(len(node.taints)) * 1000000.0;
  return score;
}
)";
  ASSERT_TRUE(Load(text));
  EXPECT_EQ(NodeOrder(*l, task, node), 0.0);
  node.images["nginx:latest"] = 3;
  node.images["busybox:1"] = 5;
  node.taints.push_back({"a", "1", "NoSchedule"});
  task.mutable_shape().images = {"nginx", "x", "y"};
  EXPECT_EQ(NodeOrder(*l, task, node), 1.0 + 300.0 + 3000.0 + 20000.0 + 300000.0 + 1000000.0);
  const std::string handler = HandlerIr(CompiledIr("viewsizes", text), "node_order");
  EXPECT_EQ(handler.find("kiln_rt_alloc"), std::string::npos) << "a view list or map was copied";
  EXPECT_EQ(handler.find("kiln_rt_map_new"), std::string::npos) << "node.images was copied";
  EXPECT_EQ(handler.find("kiln_rt_enter"), std::string::npos) << "the handler sets up a fault frame";
}

// A handler that allocates only when it fails arms its fault frame on that path alone
// (compiler/codegen/fault_frame.h): the passing path, through a helper inlined into the handler,
// reaches no kiln_rt_enter. The failing path builds its message in the call arena as before.
TEST_F(CodegenSemantics, FaultFrameIsArmedOnlyOnPathsThatAllocate) {
  const char* text = R"(policy lazyframe;
fn port_fit(task: Task, node: Node) -> Fit {
  for taint in node.taints {
    if taint.effect == "NoSchedule" { return unschedulable("taint " + taint.key + " on " + node.name); }
  }
  return fits;
}
on predicate(task: Task, node: Node) -> Fit {
  if node.unschedulable { return unresolvable("cordoned"); }
  return port_fit(task, node);
}
)";
  ASSERT_TRUE(Load(text));
  node.name = "n1";
  EXPECT_EQ(l->Fn<ExtensionPoint::Predicate>()(&l->ctx, &task, &node, nullptr), 0);
  node.taints.push_back({"gpu", "1", "NoSchedule"});
  EXPECT_EQ(l->Fn<ExtensionPoint::Predicate>()(&l->ctx, &task, &node, nullptr),
            static_cast<int32_t>(StatusCode::Unschedulable));
  const std::string handler = HandlerIr(CompiledIr("lazyframe", text), "predicate");
  // The entry block (up to its first branch) neither enters the runtime nor sets a jump target.
  const std::string entry = handler.substr(0, handler.find("\n  br "));
  EXPECT_EQ(entry.find("kiln_rt_enter"), std::string::npos) << handler;
  EXPECT_EQ(entry.find("eh.sjlj.setjmp"), std::string::npos) << handler;
  // The arming point is on the failing path, right before the message is built.
  size_t enter = handler.find("call ptr @kiln_rt_enter()");
  ASSERT_NE(enter, std::string::npos) << "the failing path lost its fault frame";
  EXPECT_LT(handler.find("kiln_taint_effect"), enter) << handler;
  EXPECT_LT(enter, handler.find("kiln_rt_str_concat")) << handler;
}

// resource_id(name) and r.dim(id) read what r[name] reads (0 for a missing dimension, an id
// outside the registry, or -1); an id kept in state costs no name lookup per call.
TEST_F(CodegenSemantics, ResourceDimReadsByIdWhatIndexingByNameReads) {
  const char* text = R"(policy dims;
state gpu: int;
on session_open() { gpu = resource_id("nvidia.com/gpu"); }
on node_order(task: Task, node: Node) -> float {
  let foo = resource_id("example.com/foo");
  if task.resreq.dim(foo) != task.resreq["example.com/foo"] { return -1.0; }
  if resource_id("cpu") != 0 or resource_id("memory") != 1 { return -2.0; }
  return task.resreq.dim(resource_id("cpu")) + 10.0 * node.idle.dim(gpu)
         + 100.0 * task.resreq.dim(foo) + node.idle.dim(-1) + node.idle.dim(1000000);
}
)";
  ASSERT_TRUE(Load(text));
  task.mutable_resreq().Set(kCpu, 500);
  auto foo = ResourceNames::Intern("example.com/foo");
  ASSERT_TRUE(foo.ok());
  task.mutable_resreq().Set(*foo, 3);
  EXPECT_EQ(NodeOrder(*l, task, node), 500.0 + 300.0);
  const std::string handler = HandlerIr(CompiledIr("dims", text), "node_order");
  // Only the literal "example.com/foo" is looked up in the handler (cpu and memory are inline).
  EXPECT_EQ(handler.find("kiln_rt_res_id"), handler.rfind("kiln_rt_res_id")) << handler;
}

// A Resource sum or difference handed straight to a native with a scalar result is built on the
// stack: proportion's allocatable no longer allocates (and so runs without a fault frame).
TEST_F(CodegenSemantics, ResourceSumConsumedByANativeIsNotAllocated) {
  const char* text = R"(policy sums;
state deserved: Resource;
on node_order(task: Task, node: Node) -> float {
  var score = 0.0;
  if less_equal_in(node.used + task.resreq, node.allocatable, task.resreq) { score += 1.0; }
  if less_equal(node.allocatable - task.resreq, node.used, Zero) { score += 10.0; }
  return score + dominant_share(node.used + task.resreq, node.allocatable);
}
)";
  ASSERT_TRUE(Load(text));
  task.mutable_resreq().Set(kCpu, 500);
  node.used.Set(kCpu, 1000);
  node.allocatable.Set(kCpu, 2000);
  node.allocatable.Set(kMemory, 1e9);
  // 1500 ≤ 2000; 2000 - 500 = 1500 ≤ 1000 is false; share 1500/2000.
  EXPECT_EQ(NodeOrder(*l, task, node), 1.0 + 0.75);
  node.used.Set(kCpu, 1600);
  node.used.Set(kMemory, 1e9);
  // 2100 > 2000; 1500 ≤ 1600 and 1e9 ≤ 1e9; share max(2100/2000, 1e9/1e9).
  EXPECT_EQ(NodeOrder(*l, task, node), 10.0 + 1.05);
  const std::string handler = HandlerIr(CompiledIr("sums", text), "node_order");
  EXPECT_EQ(handler.find("kiln_rt_res_add("), std::string::npos) << handler;
  EXPECT_EQ(handler.find("kiln_rt_res_sub("), std::string::npos) << handler;
  EXPECT_EQ(handler.find("kiln_rt_enter"), std::string::npos) << "the handler sets up a fault frame";
}

// binpack's node_order reads its weighted resources by the ids session_open looked up: no name
// lookup per resource per node.
TEST_F(CodegenSemantics, ShippedBinpackLooksNoResourceNameUpPerCall) {
  auto handler_of = [](const char* policy, const char* point) {
    const BuiltinPolicy* b = FindBuiltinPolicy(policy);
    if (b == nullptr) return std::string("<no policy>");
    auto ir = PolicyCompiler::EmitIr(SourceFile{std::string(b->path), std::string(b->text)});
    if (!ir.ok()) return ir.error().Format();
    return HandlerIr(*ir, point);
  };
  const std::string binpack = handler_of("binpack", "node_order");
  EXPECT_NE(binpack.find("entry:"), std::string::npos) << binpack;
  EXPECT_EQ(binpack.find("kiln_rt_res_id"), std::string::npos) << binpack;
}

TEST_F(CodegenSemantics, EveryShippedPolicyWithItsHandlersCompiles) {
  for (const char* name : {"gang", "priority", "conformance", "cdp"}) {
    SCOPED_TRACE(name);
    const BuiltinPolicy* b = FindBuiltinPolicy(name);
    ASSERT_NE(b, nullptr);
    auto compiler = PolicyCompiler::Global();
    ASSERT_TRUE(compiler.ok());
    auto compiled = (*compiler)->Compile(SourceFile{std::string(b->path), std::string(b->text)});
    ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
    auto ir = PolicyCompiler::EmitIr(SourceFile{std::string(b->path), std::string(b->text)});
    ASSERT_TRUE(ir.ok()) << ir.error().Format();
    for (ExtensionPoint point : (*compiled)->Code()->points) {
      EXPECT_NE((*compiled)->Code()->Handler(point), nullptr);
      std::string def = fmt::format("@kiln.on.{}(", Info(point).handler);
      EXPECT_NE(ir->find(def), std::string::npos) << def;
    }
    EXPECT_FALSE((*compiled)->Code()->points.empty());
  }
}

// Maps are values: a `var` bound or assigned to a map another name holds writes into its own
// copy, at every depth; a fresh literal is not copied (nothing else holds it).
TEST(CodegenSemanticsMaps, AVarBoundToAMapWritesIntoItsOwnCopy) {
  EXPECT_EQ(EvalFloat("var outer: map<int, int> = {};\n"
                      "outer[1] = 1;\n"
                      "var m2 = outer;\n"
                      "m2[2] = 2;\n"
                      "m2[1] += 10;\n"
                      "return float(len(outer) * 1000 + outer[1] * 100 + len(m2) * 10 + m2[1]);"),
            1000.0 + 100 + 20 + 11);
  EXPECT_EQ(EvalFloat("var a: map<string, int> = {};\n"
                      "a[\"x\"] = 1;\n"
                      "var b: map<string, int> = {};\n"
                      "b = a;\n"
                      "b[\"y\"] = 2;\n"
                      "return float(len(a) * 10 + len(b));"),
            12.0);
  EXPECT_EQ(EvalFloat("var outer: map<int, map<int, int>> = {};\n"
                      "outer[1][1] = 1;\n"
                      "var m2 = outer;\n"
                      "m2[1][2] = 2;\n"
                      "m2[3][1] = 1;\n"
                      "return float(len(outer) * 100 + len(outer[1]) * 10 + len(m2[1]));"),
            100.0 + 10 + 2);
  // A state map bound to a `var` is not written through either.
  EXPECT_EQ(testing::EvalInAllocate("s[1] = 1;\n"
                                    "var m = s;\n"
                                    "m[2] = 2;\n"
                                    "return float(len(s) * 10 + len(m));",
                                    "state s: map<int, int>;\n", "test/codegen_map_copy_"),
            12.0);
}

// The same for maps inside a record or a list: the `var` copies each map a write could reach.
TEST(CodegenSemanticsMaps, AVarBoundToARecordOrListCopiesTheMapsInside) {
  const std::string prelude = "record Box { name: string = \"\"; m: map<string, int> = {}; }\n";
  // A record's map field.
  EXPECT_EQ(EvalFloat("var r = Box{name: \"a\"};\n"
                      "r.m[\"x\"] = 1;\n"
                      "var r2 = r;\n"
                      "r2.m[\"y\"] = 2;\n"
                      "r2.m[\"x\"] += 10;\n"
                      "return float(len(r.m) * 1000 + r.m[\"x\"] * 100 + len(r2.m) * 10 + r2.m[\"x\"]);",
                      prelude),
            1000.0 + 100 + 20 + 11);
  // Assigned, not bound; and a map of records' maps is reached through the map.
  EXPECT_EQ(EvalFloat("var r = Box{name: \"\"};\n"
                      "r.m[\"x\"] = 1;\n"
                      "var r2 = Box{name: \"\"};\n"
                      "r2 = r;\n"
                      "r2.m[\"y\"] = 2;\n"
                      "return float(len(r.m) * 10 + len(r2.m));",
                      prelude),
            12.0);
  // A list's maps.
  EXPECT_EQ(EvalFloat("var a: map<string, int> = {};\n"
                      "a[\"x\"] = 1;\n"
                      "var xs = [a, a];\n"
                      "xs[0][\"y\"] = 2;\n"
                      "var ys = xs;\n"
                      "ys[1][\"z\"] = 3;\n"
                      "return float(len(a) * 1000 + len(xs[0]) * 100 + len(xs[1]) * 10 + len(ys[1]));",
                      prelude),
            1000.0 + 200 + 10 + 2);
  // A map stored into a map's entry or a record's field, then changed through either name.
  EXPECT_EQ(EvalFloat("var outer: map<int, map<int, int>> = {};\n"
                      "var inner: map<int, int> = {};\n"
                      "inner[1] = 1;\n"
                      "outer[1] = inner;\n"
                      "inner[2] = 2;\n"
                      "outer[1][3] = 3;\n"
                      "var r = Box{name: \"\"};\n"
                      "var m: map<string, int> = {};\n"
                      "r.m = m;\n"
                      "m[\"a\"] = 1;\n"
                      "return float(len(inner) * 100 + len(outer[1]) * 10 + len(r.m));",
                      prelude),
            220.0);
  // A map appended to a list.
  EXPECT_EQ(EvalFloat("var m: map<int, int> = {};\n"
                      "var xs: list<map<int, int>> = [];\n"
                      "xs = append(xs, m);\n"
                      "xs = xs + [m];\n"
                      "m[1] = 1;\n"
                      "xs[0][2] = 2;\n"
                      "return float(len(m) * 100 + len(xs[0]) * 10 + len(xs[1]));"),
            110.0);
  // A map literal whose values are maps another name holds.
  EXPECT_EQ(EvalFloat("var a: map<string, int> = {};\n"
                      "var m = {\"k\": a};\n"
                      "m[\"k\"][\"y\"] = 2;\n"
                      "return float(len(a) * 10 + len(m[\"k\"]));"),
            1.0);
}

// `r.f = v` on a `var` record or record state replaces the field in the variable's record.
TEST(CodegenSemanticsRecords, AFieldAssignmentChangesOnlyThatVariable) {
  const std::string prelude =
      "record Box { name: string = \"\"; n: int = 0; }\n"
      "record Pair { a: Box = Box{n: 0}; k: float = 1.0; }\n";
  EXPECT_EQ(EvalFloat("var p = Pair{k: 1.0};\n"
                      "p.a.n = 3;\n"
                      "p.a.n += 4;\n"
                      "p.k *= 2.5;\n"
                      "var q = p;\n"
                      "q.a.n = 100;\n"
                      "p.a.name = \"xy\";\n"
                      "return float(p.a.n * 100 + len(p.a.name) * 10 + len(q.a.name)) + p.k\n"
                      "       + float(q.a.n) * 1000;",
                      prelude),
            700.0 + 20 + 0 + 2.5 + 100000);
  EXPECT_EQ(testing::EvalInAllocate("s.n = 4;\n"
                                    "s.n += 1;\n"
                                    "s.name = \"abc\";\n"
                                    "return float(s.n * 10 + len(s.name));",
                                    "record Box { name: string = \"\"; n: int = 0; }\n"
                                    "state s: Box;\n",
                                    "test/codegen_record_field_"),
            53.0);
  // A resource held in a record field: the dimension is set on a copy stored back in the field.
  EXPECT_EQ(EvalFloat("var a = Need{req: resource{cpu: 1}};\n"
                      "let shared = a.req;\n"
                      "a.req[\"cpu\"] = 3;\n"
                      "a.req[\"cpu\"] += 2;\n"
                      "var b = a;\n"
                      "b.req[\"memory\"] = 8;\n"
                      "return a.req.cpu * 100 + shared.cpu * 10 + a.req.memory + b.req.memory * 1000;",
                      "record Need { req: Resource = resource{cpu: 0}; }\n"),
            500.0 + 10000 + 0 + 8000);  // `resource{cpu: 1}` is 1000 millicores
}

}  // namespace
}  // namespace kiln
