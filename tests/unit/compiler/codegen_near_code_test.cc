// JIT code placed near the binary (compiler/codegen/near_code_memory.h): the process-wide JIT's
// handlers land within rel32 reach of the binary, so the session's calls into them and their
// calls into the runtime are near calls, and they answer as the policy says.
#include <gtest/gtest.h>

#include <tuple>

#include "compiler/builtin_policies.h"
#include "compiler/codegen/near_code.h"
#include "compiler/host/jit_tiers.h"
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
    ASSERT_FALSE(code->points.empty()) << name;
    for (ExtensionPoint point : code->points)
      EXPECT_TRUE(IsNearHostCode(reinterpret_cast<const void*>(code->Handler(point))))
          << name << " " << Info(point).handler;
  }
}

// Tier 0 compiles with the small code model only while the region has room, and its objects'
// memory comes from a mapper that fails rather than place code out of rel32 reach.
TEST(CodegenNearCode, StrictMapperNeverPlacesCodeFar) {
  EXPECT_TRUE(NearHostCodeHasRoom(size_t{1} << 20));
  EXPECT_FALSE(NearHostCodeHasRoom(size_t{3} << 30));  // more than the reach
  EXPECT_EQ(MapStrictNearHostCodeForTesting(size_t{3} << 30), nullptr);
  void* near = MapStrictNearHostCodeForTesting(4096);
  ASSERT_NE(near, nullptr);
  EXPECT_TRUE(IsNearHostCode(near));
  ReleaseNearHostCodeForTesting(near, 4096);
  // The refused request did not mark the region as used up.
  EXPECT_TRUE(NearHostCodeHasRoom(size_t{1} << 20));
}

// Tier-0 code (small code model) lands near the binary and answers as the policy says.
TEST(CodegenNearCode, TierZeroHandlersLandNearTheBinary) {
  PolicyCompiler* compiler = *PolicyCompiler::Global();
  const JitTiers saved = compiler->GetJitTiers();
  compiler->SetJitTiers(JitTiers::kFastOnly);
  const BuiltinPolicy* b = FindBuiltinPolicy("priority");
  ASSERT_NE(b, nullptr);
  // A source no cache holds, so it compiles at tier 0.
  auto compiled = compiler->Compile(
      SourceFile{"tier0-near/priority.policy", std::string(b->text) + "\n// tier 0\n"});
  compiler->SetJitTiers(saved);
  ASSERT_TRUE(compiled.ok()) << compiled.error().Format();
  std::shared_ptr<const PolicyCode> code = (*compiled)->Code();
  EXPECT_EQ(code->tier, 0);
  auto order = reinterpret_cast<HandlerFn<ExtensionPoint::JobOrder>>(
      code->Handler(ExtensionPoint::JobOrder));
  ASSERT_NE(order, nullptr);
  EXPECT_TRUE(IsNearHostCode(reinterpret_cast<const void*>(order)));
  Arena arena;
  PolicyContext ctx;
  ctx.session_arena = &arena;
  code->state_init(&ctx);
  Job low, high;
  low.priority = 1;
  high.priority = 5;
  EXPECT_EQ(order(&ctx, &high, &low), -1);
  EXPECT_EQ(order(&ctx, &low, &high), 1);
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
