// JIT code placed near the binary (compiler/codegen/near_code_memory.h): the process-wide JIT's
// handlers land within rel32 reach of the binary, so the session's calls into them and their
// calls into the runtime are near calls, and they answer as the policy says.
#include <gtest/gtest.h>

#include <tuple>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/near_code.h"
#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"

namespace kiln {
namespace {

TEST(CodegenNearCode, BuiltinHandlersLandNearTheBinary) {
  for (std::string_view name : {"priority", "gang", "predicates", "nodeorder"}) {
    const BuiltinPolicy* b = FindBuiltinPolicy(name);
    ASSERT_NE(b, nullptr) << name;
    auto compiled =
        (*PolicyCompiler::Global())->Compile(SourceFile{std::string(b->path), std::string(b->text)});
    ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
    std::shared_ptr<const PolicyCode> code = (*compiled)->Code();
    ASSERT_FALSE(code->handlers.empty()) << name;
    for (const auto& [point, fn] : code->handlers)
      EXPECT_TRUE(IsNearHostCode(reinterpret_cast<const void*>(fn)))
          << name << " " << Info(point).handler;
  }
}

TEST(CodegenNearCode, PriorityOrdersJobsFromNearCode) {
  const BuiltinPolicy* b = FindBuiltinPolicy("priority");
  ASSERT_NE(b, nullptr);
  auto compiled =
      (*PolicyCompiler::Global())->Compile(SourceFile{std::string(b->path), std::string(b->text)});
  ASSERT_TRUE(compiled.ok());
  std::shared_ptr<const PolicyCode> code = (*compiled)->Code();
  auto order = reinterpret_cast<HandlerFn<ExtensionPoint::JobOrder>>(
      code->Handler(ExtensionPoint::JobOrder));
  ASSERT_NE(order, nullptr);
  Arena arena;
  PolicyContext ctx;
  ctx.session_arena = &arena;
  code->state_init(&ctx);
  Job low, high, same;
  low.priority = 1;
  high.priority = 5;
  same.priority = 5;
  for (auto [l, r, want] : {std::tuple{&high, &low, -1}, {&low, &high, 1}, {&high, &same, 0}})
    EXPECT_EQ(order(&ctx, l, r), want);
}

}  // namespace
}  // namespace kiln
