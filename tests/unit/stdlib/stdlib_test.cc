// The standard library: every table row is well-formed (so checker and codegen agree), and the
// natives give Volcano's / Go's answers, including on bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "compiler/host/host_symbols.h"
#include "compiler/sema/signature.h"
#include "runtime/resource.h"
#include "stdlib/library.h"
#include "stdlib/natives.h"
#include "stdlib/runtime_support.h"

namespace kiln {
namespace {

// A string literal as the (data, size) pair natives take for a string parameter.
#define S(literal) std::string_view(literal).data(), std::string_view(literal).size()

TEST(Stdlib, EveryFunctionRowIsWellFormed) {
  TypeContext t;
  std::set<std::string> seen;
  for (const auto& f : stdlib::Functions()) {
    SCOPED_TRACE(std::string(f.name));
    // A generic row parses once its type variable is bound (to any type).
    auto sig = sema::ParseSignature(f.signature, t, sema::IsGeneric(f.signature) ? t.Int() : nullptr);
    EXPECT_NE(sig.result, nullptr) << "signature does not parse: " << f.signature;
    EXPECT_TRUE(seen.insert(std::string(f.receiver) + "." + std::string(f.name)).second)
        << "duplicate function";
    switch (f.impl) {
      case stdlib::Impl::Native:
        EXPECT_NE(f.native, nullptr);
        EXPECT_TRUE(f.symbol.starts_with("kiln_std_")) << f.symbol;
        break;
      case stdlib::Impl::Host:
        EXPECT_NE(f.native, nullptr);
        EXPECT_FALSE(f.symbol.empty());
        break;
      case stdlib::Impl::Intrinsic:
        EXPECT_TRUE(f.symbol.empty());
        EXPECT_EQ(f.native, nullptr);
        break;
    }
  }
  for (const auto& c : stdlib::Constants())
    EXPECT_NE(sema::ParseTypeString(c.type, t), nullptr) << c.name;
  for (const auto& s : stdlib::SessionFields())
    EXPECT_NE(sema::ParseTypeString(s.type, t), nullptr) << s.name;
}

// The JIT's symbol list is read from the rows: every row with a symbol reaches policies at the
// row's address, so a new function needs no second registration.
TEST(Stdlib, EveryRowSymbolIsAHostSymbolAtItsAddress) {
  std::map<std::string, const void*> jit;
  for (const HostSymbol& s : AllHostSymbols()) jit[s.name] = s.address;
  for (const auto& f : stdlib::Functions()) {
    if (f.symbol.empty()) continue;
    auto it = jit.find(std::string(f.symbol));
    ASSERT_NE(it, jit.end()) << f.symbol;
    EXPECT_EQ(it->second, f.native) << f.symbol;
  }
  for (const auto& s : stdlib::SessionFields()) {
    auto it = jit.find(std::string(s.symbol));
    ASSERT_NE(it, jit.end()) << s.symbol;
    EXPECT_EQ(it->second, s.address) << s.symbol;
  }
}

// A call arena keeps the blocks its recent calls needed: a handler that needs 1 MiB per call
// keeps reusing its blocks, while the 3 MiB of one large call go back once a window of 256
// calls (Reset) did without them.
TEST(Arena, KeepsWhatRecentCallsNeededAndReturnsTheRest) {
  Arena arena;
  auto call = [&](size_t bytes) {
    arena.Reset();
    for (size_t done = 0; done < bytes; done += 256) arena.Allocate(256);
  };
  call(3 << 20);  // one large call
  call(1024);
  const size_t after_large = arena.BytesHeld();
  EXPECT_GE(after_large, size_t{3} << 20);
  for (int i = 0; i < 600; ++i) call(1024);  // two full windows of small calls
  arena.Reset();
  EXPECT_EQ(arena.BytesHeld(), size_t{64} << 10) << "one block stays";

  for (int i = 0; i < 600; ++i) call(1 << 20);  // a steady 1 MiB per call
  const size_t steady = arena.BytesHeld();
  EXPECT_GE(steady, size_t{1} << 20);
  EXPECT_LT(steady, size_t{2} << 20);
  for (int i = 0; i < 300; ++i) {
    call(1 << 20);
    EXPECT_EQ(arena.BytesHeld(), steady) << "the blocks of a steady call are reused, not freed";
  }
}

TEST(Stdlib, ShareFollowsVolcano) {
  EXPECT_EQ(kiln_std_share(0, 0), 0);
  EXPECT_EQ(kiln_std_share(3, 0), 1);
  EXPECT_DOUBLE_EQ(kiln_std_share(1, 4), 0.25);
}

TEST(Stdlib, DominantShareTakesTheMaxOverTheTotalsDimensions) {
  Resource total = Resource::Of({{"cpu", 4000}, {"memory", 8e9}, {"pods", 10}});
  Resource alloc = Resource::Of({{"cpu", 1000}, {"memory", 6e9}, {"pods", 1}});
  EXPECT_DOUBLE_EQ(kiln_std_dominant_share(&alloc, &total), 0.75);
}

TEST(Stdlib, DurationsParseLikeGo) {
  int64_t ns = 0;
  ASSERT_TRUE(kiln_std_parse_duration(S("1h30m"), &ns));
  EXPECT_EQ(ns, 5400LL * 1000000000);
  ASSERT_TRUE(kiln_std_parse_duration(S("250ms"), &ns));
  EXPECT_EQ(ns, 250LL * 1000000);
  EXPECT_FALSE(kiln_std_parse_duration(S("10"), &ns));     // Go requires a unit
  EXPECT_FALSE(kiln_std_parse_duration(S("1d"), &ns));     // Go has no day unit
  EXPECT_FALSE(kiln_std_parse_duration(S("abc"), &ns));
  EXPECT_FALSE(kiln_std_parse_duration(S(""), &ns));
}

TEST(Stdlib, QuantitiesParseLikeKubernetes) {
  EXPECT_DOUBLE_EQ(kiln_std_quantity(S("250m")), 0.25);
  EXPECT_DOUBLE_EQ(kiln_std_quantity(S("1Gi")), 1073741824.0);
  EXPECT_DOUBLE_EQ(kiln_std_quantity(S("2k")), 2000.0);
  EXPECT_DOUBLE_EQ(kiln_std_quantity(S("nonsense")), 0.0);
  double v = 0;
  EXPECT_FALSE(kiln_std_parse_quantity(S("1Gb"), &v));
}

TEST(Stdlib, BoolsAndIntsParseLikeGo) {
  bool b = false;
  ASSERT_TRUE(kiln_std_parse_bool(S("T"), &b));
  EXPECT_TRUE(b);
  EXPECT_FALSE(kiln_std_parse_bool(S("yes"), &b));
  int64_t i = 0;
  EXPECT_FALSE(kiln_std_parse_int(S("12x"), &i));
  ASSERT_TRUE(kiln_std_parse_int(S("-12"), &i));
  EXPECT_EQ(i, -12);
}

TEST(Stdlib, StringHelpers) {
  EXPECT_TRUE(kiln_std_starts_with(S("volcano.sh/x"), S("volcano.sh/")));
  EXPECT_FALSE(kiln_std_ends_with(S("a"), S("abc")));
  KStr t = kiln_std_trim(S("  x y \n"));
  EXPECT_EQ(std::string_view(t.data, t.size), "x y");
  KStr e = kiln_std_trim(S("   "));
  EXPECT_EQ(e.size, 0u);
}

TEST(Stdlib, MathIsTotal) {
  EXPECT_EQ(kiln_std_sqrt(-4), 0);
  EXPECT_EQ(kiln_std_log(0), 0);
  EXPECT_EQ(kiln_std_round(2.5), 3);
  EXPECT_EQ(kiln_std_round(-2.5), -3);
  EXPECT_EQ(kiln_std_clamp(150, 0, 100), 100);
  EXPECT_EQ(kiln_std_clamp(-3, 0, 100), 0);
  EXPECT_EQ(kiln_std_clamp(42.5, 0, 100), 42.5);
  EXPECT_EQ(kiln_std_clamp(5, 10, 0), 10);              // lo > hi: lo
  EXPECT_EQ(kiln_std_clamp(std::nan(""), 1, 2), 1);     // NaN: lo
}

}  // namespace
}  // namespace kiln
