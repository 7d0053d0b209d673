#pragma once
// Compiling a policy text for a test and calling its handlers through the same C ABI the
// session uses (runtime/session.h HandlerFn<P>), without a session: arguments bound from an
// empty plugin entry (every default), per-session state open in the policy's own arena.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>

#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"

namespace kiln::testing {

struct LoadedPolicy {
  std::shared_ptr<const CompiledPolicy> policy;
  std::shared_ptr<const BoundArgs> args;
  std::shared_ptr<const PolicyCode> code;  // the code `args` were bound with, which tests call
  PolicyContext ctx;
  Arena arena;

  // The compiled handler for P; a test failure (and null) when the policy has none.
  template <ExtensionPoint P>
  HandlerFn<P> Fn() const {
    if (auto fn = code->Handler(P)) return reinterpret_cast<HandlerFn<P>>(fn);
    ADD_FAILURE() << policy->name << " has no handler for " << Info(P).handler;
    return nullptr;
  }
};

// Compiles `source` and opens its state; null with a test failure naming the diagnostics when it
// does not compile.
inline std::unique_ptr<LoadedPolicy> LoadSource(const SourceFile& source, int64_t now = 0) {
  auto compiler = PolicyCompiler::Global();
  EXPECT_TRUE(compiler.ok());
  if (!compiler.ok()) return nullptr;
  auto compiled = (*compiler)->Compile(source);
  EXPECT_TRUE(compiled.ok()) << compiled.error().Format();
  if (!compiled.ok()) return nullptr;
  PluginOption option{};
  option.name = (*compiled)->name;
  auto bound = BindArguments(*compiled, option);
  EXPECT_TRUE(bound.ok()) << bound.error().Format();
  if (!bound.ok()) return nullptr;
  auto l = std::make_unique<LoadedPolicy>();
  l->policy = *compiled;
  l->args = *bound;
  l->code = l->args->code;
  l->ctx.args = l->args->data;
  l->ctx.now = now;
  l->ctx.session_arena = &l->arena;
  l->code->state_init(&l->ctx);
  return l;
}

// LoadSource for a policy text, under a fresh path so the compile cache never answers.
inline std::unique_ptr<LoadedPolicy> LoadPolicy(const std::string& text,
                                                std::string_view path_prefix = "test/policy_",
                                                int64_t now = 0) {
  static std::atomic<int> n{0};
  return LoadSource(SourceFile{std::string(path_prefix) + std::to_string(n++) + ".policy", text},
                    now);
}

// Compiles `prelude` plus `on node_order(task, node) -> float { body }`, calls it `calls` times in
// one session on `task` and `node`, and returns the last score: NaN when it does not compile,
// -12345 when the call was abandoned (a fault) before writing one.
inline double EvalNodeOrder(const std::string& body, const std::string& prelude,
                            std::string_view path_prefix, const Task& task, const Node& node,
                            int calls = 1) {
  auto l = LoadPolicy("policy eval;\n" + prelude +
                          "\non node_order(task: Task, node: Node) -> float {\n" + body + "\n}\n",
                      path_prefix);
  if (!l) return std::nan("");
  double score = -12345;
  for (int i = 0; i < calls; ++i)
    EXPECT_EQ(l->Fn<ExtensionPoint::NodeOrder>()(&l->ctx, &task, &node, &score), 0);
  return score;
}

// For bodies that write state, which node_order may not (it runs on many threads at once,
// compiler/passes/check_concurrency.cc): `body` becomes a function called from the one-at-a-time
// `allocate` event `calls` times in one session, each answer kept in state, and the last one is
// returned (read back through node_order). NaN when it does not compile.
inline double EvalInAllocate(const std::string& body, const std::string& prelude,
                             std::string_view path_prefix, int calls = 1) {
  auto l = LoadPolicy("policy eval;\n" + prelude +
                          "\nstate eval_answer: float;\n"
                          "fn eval_body(task: Task) -> float {\n" + body + "\n}\n"
                          "on allocate(task: Task) { eval_answer = eval_body(task); }\n"
                          "on node_order(task: Task, node: Node) -> float { return eval_answer; }\n",
                      path_prefix);
  if (!l) return std::nan("");
  Task task;
  Node node;
  for (int i = 0; i < calls; ++i) l->Fn<ExtensionPoint::OnAllocate>()(&l->ctx, &task);
  double score = -12345;
  EXPECT_EQ(l->Fn<ExtensionPoint::NodeOrder>()(&l->ctx, &task, &node, &score), 0);
  return score;
}

// The same on empty Task and Node views.
inline double EvalNodeOrder(const std::string& body, const std::string& prelude,
                            std::string_view path_prefix, int calls = 1) {
  return EvalNodeOrder(body, prelude, path_prefix, Task{}, Node{}, calls);
}

}  // namespace kiln::testing
