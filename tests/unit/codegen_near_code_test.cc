// JIT code placed near the binary (compiler/codegen/near_code_memory.h, near_jit.h): the policy
// compiled through the near mapper lands within rel32 reach of the binary and still answers
// exactly as the process-wide JIT's copy does.
#include <gtest/gtest.h>

#include <tuple>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/near_jit.h"
#include "compiler/host/compiled_policy.h"
#include "runtime/session.h"

namespace kiln {
namespace {

template <ExtensionPoint P>
HandlerFn<P> Find(const std::vector<std::pair<ExtensionPoint, void (*)()>>& handlers) {
  for (const auto& [point, fn] : handlers)
    if (point == P) return reinterpret_cast<HandlerFn<P>>(fn);
  return nullptr;
}

TEST(CodegenNearCode, PriorityLandsNearTheBinaryAndOrdersLikeTheJit) {
  const BuiltinPolicy* b = FindBuiltinPolicy("priority");
  ASSERT_NE(b, nullptr);
  SourceFile source{std::string(b->path), std::string(b->text)};
  auto near = CompileNearHostForMeasurement(source);
  ASSERT_TRUE(near.ok()) << near.error().Format();
  EXPECT_TRUE(near->near);
  auto compiled = (*PolicyCompiler::Global())->Compile(source);
  ASSERT_TRUE(compiled.ok());

  Arena arena;
  PolicyContext ctx;
  ctx.session_arena = &arena;
  near->state_init(&ctx);
  auto near_order = Find<ExtensionPoint::JobOrder>(near->handlers);
  auto jit_order = Find<ExtensionPoint::JobOrder>((*compiled)->handlers);
  ASSERT_NE(near_order, nullptr);
  ASSERT_NE(jit_order, nullptr);
  Job low, high, same;
  low.priority = 1;
  high.priority = 5;
  same.priority = 5;
  for (auto [l, r, want] : {std::tuple{&high, &low, -1}, {&low, &high, 1}, {&high, &same, 0}}) {
    EXPECT_EQ(near_order(&ctx, l, r), want);
    EXPECT_EQ(jit_order(&ctx, l, r), want);
  }
}

TEST(CodegenNearCode, PoliciesWithArgumentsAreRefused) {
  const BuiltinPolicy* b = FindBuiltinPolicy("binpack");
  ASSERT_NE(b, nullptr);
  auto near = CompileNearHostForMeasurement(SourceFile{std::string(b->path), std::string(b->text)});
  EXPECT_FALSE(near.ok());
}

}  // namespace
}  // namespace kiln
