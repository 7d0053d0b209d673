// The ORC wrapper: hand-written IR is optimised, linked only against registered host symbols,
// called, and dropped through its resource tracker.
#include <gtest/gtest.h>

#include <cstdint>

#include "compiler/jit/jit_engine.h"

namespace kiln {
namespace {

int64_t g_host_calls = 0;
extern "C" int64_t TestHostTwice(int64_t x) {
  ++g_host_calls;
  return 2 * x;
}

constexpr std::string_view kAddMul = R"(
declare i64 @host_twice(i64)
define i64 @add_twice(i64 %a, i64 %b) {
  %s = add i64 %a, %b
  %r = call i64 @host_twice(i64 %s)
  ret i64 %r
}
)";

std::unique_ptr<JitEngine> MakeEngine() {
  auto engine = JitEngine::Create({{"host_twice", reinterpret_cast<void*>(&TestHostTwice)}});
  EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error().Format());
  return std::move(engine).value();
}

TEST(JitEngine, CallsJitCompiledFunctionThroughHostIntrinsic) {
  auto engine = MakeEngine();
  auto unit = engine->LoadIrText(kAddMul, "test.v1");
  ASSERT_TRUE(unit.ok()) << unit.error().Format();
  auto fn = engine->Lookup(*unit, "add_twice");
  ASSERT_TRUE(fn.ok()) << fn.error().Format();
  g_host_calls = 0;
  auto add_twice = reinterpret_cast<int64_t (*)(int64_t, int64_t)>(*fn);
  EXPECT_EQ(add_twice(3, 4), 14);
  EXPECT_EQ(add_twice(-10, 4), -12);
  EXPECT_EQ(g_host_calls, 2);
}

TEST(JitEngine, RemovedUnitCannotBeLookedUpAndSameNameReloads) {
  auto engine = MakeEngine();
  auto v1 = engine->LoadIrText("define i64 @answer() {\n  ret i64 1\n}\n", "answer.v1");
  ASSERT_TRUE(v1.ok());
  auto f1 = engine->Lookup(*v1, "answer");
  ASSERT_TRUE(f1.ok());
  EXPECT_EQ(reinterpret_cast<int64_t (*)()>(*f1)(), 1);
  EXPECT_EQ(engine->LiveUnits(), 1);

  ASSERT_TRUE(engine->Remove(*v1).ok());
  EXPECT_EQ(engine->LiveUnits(), 0);
  auto gone = engine->Lookup(*v1, "answer");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().message, fmt::format("no JIT unit with handle {}", *v1));

  // A new version defines the same symbol again: the old definition is really gone.
  auto v2 = engine->LoadIrText("define i64 @answer() {\n  ret i64 2\n}\n", "answer.v1");
  ASSERT_TRUE(v2.ok()) << v2.error().Format();
  auto f2 = engine->Lookup(*v2, "answer");
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ(reinterpret_cast<int64_t (*)()>(*f2)(), 2);
}

TEST(JitEngine, UnitsAreIsolatedFromEachOther) {
  auto engine = MakeEngine();
  auto a = engine->LoadIrText("define i64 @only_in_a() {\n  ret i64 7\n}\n", "a");
  auto b = engine->LoadIrText("define i64 @only_in_b() {\n  ret i64 8\n}\n", "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(engine->Lookup(*a, "only_in_a").ok());
  auto cross = engine->Lookup(*a, "only_in_b");
  ASSERT_FALSE(cross.ok());
  EXPECT_NE(cross.error().message.find("only_in_b"), std::string::npos) << cross.error().message;
}

TEST(JitEngine, ProcessSymbolsAreNotVisible) {
  auto engine = MakeEngine();
  // `getpid` exists in the process (libc) but was not registered: linking must fail.
  auto unit = engine->LoadIrText(R"(
declare i32 @getpid()
define i32 @uses_getpid() {
  %r = call i32 @getpid()
  ret i32 %r
}
)",
                                 "leaky");
  ASSERT_TRUE(unit.ok());
  auto fn = engine->Lookup(*unit, "uses_getpid");
  ASSERT_FALSE(fn.ok());
  EXPECT_NE(fn.error().message.find("getpid"), std::string::npos) << fn.error().message;
}

TEST(JitEngine, BadIrReportsLine) {
  auto engine = MakeEngine();
  auto unit = engine->LoadIrText("define i64 @f() {\n  ret i32 1\n}\n", "bad.ll");
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().where.file, "bad.ll");
  EXPECT_EQ(unit.error().where.line, 2);
  EXPECT_NE(unit.error().message.find("type"), std::string::npos) << unit.error().message;
}

}  // namespace
}  // namespace kiln
