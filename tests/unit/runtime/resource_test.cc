#include "runtime/resource.h"
#include "runtime/sparse_resource.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/core_test_util.h"

namespace kiln {
namespace {

using testing::Res;
constexpr auto kZero = DimensionDefault::Zero;
constexpr auto kInf = DimensionDefault::Infinity;

ResourceId Gpu() { return *ResourceRegistry::Intern("nvidia.com/gpu"); }
ResourceId Foo() { return *ResourceRegistry::Intern("example.com/foo"); }

TEST(ResourceRegistry, FixedIdsAndInterning) {
  EXPECT_EQ(*ResourceRegistry::Find("cpu"), kCpu);
  EXPECT_EQ(*ResourceRegistry::Find("memory"), kMemory);
  EXPECT_EQ(*ResourceRegistry::Find("pods"), kPods);
  ResourceId g = Gpu();
  EXPECT_GE(g, 3);
  EXPECT_EQ(*ResourceRegistry::Intern("nvidia.com/gpu"), g);
  EXPECT_EQ(ResourceRegistry::Name(g), "nvidia.com/gpu");
  EXPECT_FALSE(ResourceRegistry::Find("never.seen/resource").has_value());
}

// Find compares length and the first 8 bytes before the rest: names alike in one or both of
// those must still map to their own ids. "" when they do, else what went wrong.
std::string CheckNamesSharingLengthOrHead() {
  const std::vector<std::string> names = {
      "example.com/aaaa", "example.com/aaab",  // same length, same head, differ in the tail
      "example.com/baaa",                      // same length and head as both, differs mid-tail
      "example.",                              // exactly the 8-byte head of all three
      "example",                               // a prefix of the head
      "exampleX",                              // 8 bytes, differs in the last
  };
  std::vector<ResourceId> ids;
  for (const auto& n : names) {
    auto id = ResourceRegistry::Intern(n);
    if (!id.ok()) return "cannot intern " + n + ": " + id.error().message;
    ids.push_back(*id);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    auto found = ResourceRegistry::Find(names[i]);
    if (!found || *found != ids[i]) return names[i] + " is not found as its own id";
    if (ResourceRegistry::Name(ids[i]) != names[i]) return names[i] + "'s id names another";
    for (size_t j = 0; j < i; ++j)
      if (ids[i] == ids[j]) return names[i] + " and " + names[j] + " share an id";
  }
  for (const char* absent : {"example.com/aaac", "example.com/aaa", ""})
    if (ResourceRegistry::Find(absent)) return std::string("found \"") + absent + "\"";
  // Interning again gives the same id, not a new one.
  if (*ResourceRegistry::Intern("example.com/aaab") != ids[1]) return "interned twice";
  return "";
}

// The registry is process-wide and holds kMaxResources names: when the whole test binary runs
// in one process, earlier tests have filled it. The check runs in a fresh process of its own
// (gtest's threadsafe death-test style re-executes the binary for just this test).
TEST(ResourceRegistry, FindTellsApartNamesSharingLengthOrHead) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::string error = CheckNamesSharingLengthOrHead();
        std::fputs(error.c_str(), stderr);
        std::exit(error.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Resource, AbiLayout) {
  static_assert(std::is_standard_layout_v<Resource>);
  Resource r = Res(1500, 0, {{"nvidia.com/gpu", 2000}});
  const char* base = reinterpret_cast<const char*>(&r);
  uint32_t present;
  std::memcpy(&present, base, 4);
  EXPECT_TRUE(present & (1u << Gpu()));
  EXPECT_FALSE(present & (1u << kPods));
  double gpu;
  std::memcpy(&gpu, base + 8 + 8 * Gpu(), 8);
  EXPECT_EQ(gpu, 2000);
}

TEST(Resource, AddAndSub) {
  Resource a = Res(1000, 2048, {{"pods", 1}});
  a.Add(Res(500, 1024, {{"nvidia.com/gpu", 1000}}));
  EXPECT_EQ(a.cpu(), 1500);
  EXPECT_EQ(a.memory(), 3072);
  EXPECT_EQ(a.Get(Gpu()), 1000);
  EXPECT_TRUE(a.Has(Gpu()));
  a.Sub(Res(500, 1024, {{"nvidia.com/gpu", 1000}}));
  EXPECT_EQ(a.cpu(), 1000);
  EXPECT_EQ(a.Get(Gpu()), 0);
  EXPECT_TRUE(a.Has(Gpu())) << "a subtracted scalar stays present at 0, like a Go map entry";
}

TEST(Resource, SubSkipsScalarsWhenLeftHasNone) {
  // Volcano's sub() returns early when the left side has no scalar map.
  Resource a = Res(1000, 0);
  a.SubWithoutAssert(Res(100, 0, {{"pods", 1}}));
  EXPECT_EQ(a.cpu(), 900);
  EXPECT_FALSE(a.Has(kPods));
}

TEST(Resource, MultiScalesEveryDimension) {
  Resource a = Res(1000, 10, {{"pods", 4}});
  a.Multi(1.5);
  EXPECT_EQ(a.cpu(), 1500);
  EXPECT_EQ(a.memory(), 15);
  EXPECT_EQ(a.Get(kPods), 6);
}

TEST(Resource, IsEmptyIgnoresPods) {
  EXPECT_TRUE(Res(0, 0, {{"pods", 1}}).IsEmpty());
  EXPECT_TRUE(Res(0.05, 0.09, {{"nvidia.com/gpu", 0.05}}).IsEmpty());
  EXPECT_FALSE(Res(0.1, 0).IsEmpty());
  EXPECT_FALSE(Res(0, 0, {{"nvidia.com/gpu", 1}}).IsEmpty());
}

TEST(Resource, ResourceNamesIncludesPodsAndSkipsTiny) {
  ResourceIdList names = Res(1000, 0.05, {{"pods", 1}, {"nvidia.com/gpu", 0}}).ResourceNames();
  ASSERT_EQ(names.size, 2);
  EXPECT_EQ(names.ids[0], kCpu);
  EXPECT_EQ(names.ids[1], kPods);
  EXPECT_EQ(names.Join(), "cpu, pods");
}

TEST(Resource, LessEqualTolerance) {
  EXPECT_TRUE(Res(1000.09, 0).LessEqual(Res(1000, 0), kZero));
  EXPECT_FALSE(Res(1000.1, 0).LessEqual(Res(1000, 0), kZero));
  EXPECT_TRUE(Res(999, 5).LessEqual(Res(1000, 5), kZero));
  EXPECT_FALSE(Res(1000, 6).LessEqual(Res(1000, 5), kZero));
}

TEST(Resource, LessEqualMissingScalarsZero) {
  Resource with_gpu = Res(1000, 0, {{"nvidia.com/gpu", 1000}});
  Resource without = Res(2000, 0);
  // Left has gpu, right lacks it: compared against 0.
  EXPECT_FALSE(with_gpu.LessEqual(without, kZero));
  // Left lacks gpu, right has it: only the left's scalars are walked.
  EXPECT_TRUE(without.LessEqual(Res(2000, 0, {{"nvidia.com/gpu", 1000}}), kZero));
  // A left scalar of 0 missing on the right passes.
  EXPECT_TRUE(Res(0, 0, {{"nvidia.com/gpu", 0}}).LessEqual(Res(0, 0), kZero));
}

TEST(Resource, LessEqualMissingScalarsInfinity) {
  Resource with_gpu = Res(1000, 0, {{"nvidia.com/gpu", 5000}});
  // Right lacks gpu → infinite there → skipped.
  EXPECT_TRUE(with_gpu.LessEqual(Res(1000, 0), kInf));
  // Right has a scalar the left lacks → false (the left is "infinite").
  EXPECT_FALSE(Res(1000, 0).LessEqual(with_gpu, kInf));
}

TEST(Resource, PodsDimensionCounts) {
  // Every task asks pods: 1; a node without pods allocatable fits nothing under Zero.
  Resource task = Res(100, 0, {{"pods", 1}});
  EXPECT_FALSE(task.LessEqual(Res(4000, 1 << 30), kZero));
  EXPECT_TRUE(task.LessEqual(Res(4000, 1 << 30, {{"pods", 1}}), kZero));
  EXPECT_FALSE(task.LessEqual(Res(4000, 1 << 30, {{"pods", 0}}), kZero));
}

TEST(Resource, LessIsStrictWithoutTolerance) {
  EXPECT_TRUE(Res(1, 1).Less(Res(2, 2), kZero));
  EXPECT_FALSE(Res(1, 2).Less(Res(2, 2), kZero));
  EXPECT_FALSE(Res(1.99, 1, {{"pods", 1}}).Less(Res(2, 2), kZero)) << "pods 1 < 0 is false";
  EXPECT_TRUE(Res(1, 1, {{"pods", 1}}).Less(Res(2, 2), kInf)) << "missing right → infinite";
  EXPECT_FALSE(Res(1, 1).Less(Res(2, 2, {{"pods", 1}}), kInf));
}

TEST(Resource, LessPartly) {
  EXPECT_TRUE(Res(1, 5).LessPartly(Res(2, 2), kZero));
  EXPECT_FALSE(Res(3, 3).LessPartly(Res(2, 2), kZero));
  // Zero: a right scalar missing on the left is 0 < something.
  EXPECT_TRUE(Res(3, 3).LessPartly(Res(2, 2, {{"pods", 1}}), kZero));
  EXPECT_FALSE(Res(3, 3).LessPartly(Res(2, 2, {{"pods", 1}}), kInf));
  // Infinity: a left scalar missing on the right is less than infinity.
  EXPECT_TRUE(Res(3, 3, {{"pods", 9}}).LessPartly(Res(2, 2), kInf));
  EXPECT_FALSE(Res(3, 3, {{"pods", 9}}).LessPartly(Res(2, 2), kZero));
}

TEST(Resource, LessEqualWithResourcesNameReportsDims) {
  ResourceIdList bad;
  Resource l = Res(2000, 10, {{"nvidia.com/gpu", 2000}, {"pods", 1}});
  Resource r = Res(1000, 10, {{"pods", 0}});
  EXPECT_FALSE(l.LessEqualWithResourcesName(r, kZero, &bad));
  EXPECT_EQ(bad.Join(), "cpu, pods, nvidia.com/gpu");
  ResourceIdList bad_inf;
  EXPECT_FALSE(l.LessEqualWithResourcesName(r, kInf, &bad_inf));
  // Infinity skips gpu (missing on the right) but not pods.
  EXPECT_EQ(bad_inf.Join(), "cpu, pods");
}

TEST(Resource, LessEqualWithDimensionAndResourcesName) {
  Resource req = Res(1000, 0, {{"pods", 1}, {"nvidia.com/gpu", 1000}});
  Resource avail = Res(1000, 0, {{"pods", 0}, {"nvidia.com/gpu", 1000}});
  // Only requested dims; cpu equal passes (strict >), pods ignored, memory not requested.
  Resource used = Res(1000, 99999, {{"pods", 5}, {"nvidia.com/gpu", 1000}});
  EXPECT_TRUE(used.LessEqualWithDimensionAndResourcesName(avail, req));
  ResourceIdList bad;
  Resource over = Res(1000.05, 0, {{"nvidia.com/gpu", 1001}});
  EXPECT_FALSE(over.LessEqualWithDimensionAndResourcesName(avail, req, &bad));
  EXPECT_EQ(bad.size, 2) << "no tolerance: 1000.05 > 1000 is insufficient";
  EXPECT_EQ(bad.ids[0], kCpu);
  EXPECT_EQ(bad.ids[1], Gpu());
  // A left side without scalars skips every scalar dimension.
  EXPECT_TRUE(Res(1000, 0).LessEqualWithDimensionAndResourcesName(Res(1000, 0), req));
}

TEST(Resource, LessEqualPartlyWithDimension) {
  Resource req = Res(1, 0, {{"nvidia.com/gpu", 1}});
  EXPECT_TRUE(Res(5000, 0, {{"nvidia.com/gpu", 1000}})
                  .LessEqualPartlyWithDimension(Res(1000, 0, {{"nvidia.com/gpu", 1000}}), req));
  EXPECT_FALSE(Res(5000, 0, {{"nvidia.com/gpu", 2000}})
                   .LessEqualPartlyWithDimension(Res(1000, 0, {{"nvidia.com/gpu", 1000}}), req));
  // Memory is not requested, so memory ≤ does not count.
  EXPECT_FALSE(Res(5000, 0).LessEqualPartlyWithDimension(Res(1000, 10), Res(1, 0)));
}

TEST(Resource, LessEqualPartlyWithDimensionZeroFiltered) {
  // gpu requested but both sides have none: filtered out, so only cpu decides.
  Resource req = Res(1000, 0, {{"nvidia.com/gpu", 1000}});
  Resource l = Res(3000, 0);
  Resource r = Res(2000, 0);
  EXPECT_TRUE(l.LessEqualPartlyWithDimension(r, req)) << "unfiltered: gpu 0 ≤ 0";
  EXPECT_FALSE(l.LessEqualPartlyWithDimensionZeroFiltered(r, req));
  EXPECT_TRUE(Res(1000, 0).LessEqualPartlyWithDimensionZeroFiltered(r, req));
}

TEST(Resource, GreaterPartlyWithDimension) {
  Resource req = Res(1, 1, {{"pods", 1}});
  ResourceIdList g;
  EXPECT_TRUE(Res(2000, 5, {{"pods", 100}}).GreaterPartlyWithDimension(Res(1000, 5), req, &g));
  EXPECT_EQ(g.Join(), "cpu") << "pods ignored, memory equal is not greater";
  EXPECT_FALSE(Res(1000, 5).GreaterPartlyWithDimension(Res(1000, 5), req));
}

TEST(Resource, GreaterPartlyWithRelevantDimensions) {
  Resource req = Res(1000, 1000, {{"nvidia.com/gpu", 1000}});
  // rr has no cpu (< 0.1) and no gpu: only memory is relevant.
  Resource rr = Res(0, 500);
  EXPECT_FALSE(Res(9000, 400, {{"nvidia.com/gpu", 9}}).GreaterPartlyWithRelevantDimensions(rr, req));
  EXPECT_TRUE(Res(0, 600).GreaterPartlyWithRelevantDimensions(rr, req));
  // gpu present in rr (even at 0) becomes relevant.
  Resource rr_gpu = Res(0, 500, {{"nvidia.com/gpu", 0}});
  EXPECT_TRUE(Res(0, 400, {{"nvidia.com/gpu", 1}}).GreaterPartlyWithRelevantDimensions(rr_gpu, req));
}

TEST(Resource, DiffAndExceededPart) {
  Resource l = Res(3000, 100, {{"nvidia.com/gpu", 2000}});
  Resource r = Res(1000, 300, {{"pods", 2}});
  auto d = l.Diff(r, kZero);
  EXPECT_EQ(d.increased.cpu(), 2000);
  EXPECT_EQ(d.decreased.memory(), 200);
  EXPECT_EQ(d.increased.Get(Gpu()), 2000);
  EXPECT_EQ(d.decreased.Get(kPods), 2);
  EXPECT_FALSE(d.increased.Has(kPods));
  Resource e = l.ExceededPart(r);
  EXPECT_EQ(e.cpu(), 2000);
  EXPECT_EQ(e.memory(), 0);
  EXPECT_EQ(e.Get(Gpu()), 2000);
  // Infinity: a dimension missing on one side is -1 ("infinite") on that side.
  auto di = l.Diff(r, kInf);
  EXPECT_EQ(di.decreased.Get(Gpu()), -1);
  EXPECT_EQ(di.increased.Get(kPods), -1);
}

TEST(Resource, MinDimensionResource) {
  Resource a = Res(2000, 4000, {{"nvidia.com/gpu", 3000}, {"pods", 10}});
  Resource b = Res(3000, 1000, {{"pods", 5}});
  Resource z = a;
  z.MinDimensionResource(b, kZero);
  EXPECT_EQ(z.cpu(), 2000);
  EXPECT_EQ(z.memory(), 1000);
  EXPECT_EQ(z.Get(kPods), 5);
  EXPECT_EQ(z.Get(Gpu()), 0) << "missing in rr → 0 under Zero";
  Resource i = a;
  i.MinDimensionResource(b, kInf);
  EXPECT_EQ(i.Get(Gpu()), 3000) << "missing in rr → unchanged under Infinity";
  Resource no_scalars = Res(2000, 4000, {{"nvidia.com/gpu", 3000}});
  no_scalars.MinDimensionResource(Res(1, 1), kZero);
  EXPECT_EQ(no_scalars.Get(Gpu()), 0);
}

TEST(Resource, MaxMinShare) {
  Resource m = Max(Res(1000, 5, {{"pods", -1}, {"nvidia.com/gpu", 3}}),
                   Res(500, 9, {{"nvidia.com/gpu", 7}}));
  EXPECT_EQ(m.cpu(), 1000);
  EXPECT_EQ(m.memory(), 9);
  EXPECT_FALSE(m.Has(kPods)) << "non-positive scalars are dropped";
  EXPECT_EQ(m.Get(Gpu()), 7);
  Resource n = Min(Res(1000, 5, {{"nvidia.com/gpu", 3}}), Res(500, 9, {{"pods", 1}}));
  EXPECT_EQ(n.cpu(), 500);
  EXPECT_EQ(n.Get(Gpu()), 0);
  EXPECT_EQ(Share(0, 0), 0);
  EXPECT_EQ(Share(5, 0), 1);
  EXPECT_EQ(Share(1, 4), 0.25);
}

TEST(Resource, SetMaxAndFitDelta) {
  Resource a = Res(1000, 0);
  a.SetMax(Res(500, 10, {{"pods", 3}}));
  EXPECT_EQ(a.cpu(), 1000);
  EXPECT_EQ(a.memory(), 10);
  EXPECT_EQ(a.Get(kPods), 3);
  Resource idle = Res(1000, 100);
  idle.FitDelta(Res(1000, 0, {{"nvidia.com/gpu", 1}}));
  EXPECT_LT(idle.cpu(), 0);
  EXPECT_EQ(idle.memory(), 100);
  EXPECT_LT(idle.Get(Gpu()), 0);
}

TEST(Resource, ToStringLikeVolcano) {
  Foo();
  EXPECT_EQ(Res(1000, 0, {{"pods", 1}}).ToString(), "cpu 1000.00, memory 0.00, pods 1.00");
  EXPECT_EQ(Res(1, 2, {{"pods", 1}, {"example.com/foo", 2.5}}).ToString(),
            "cpu 1.00, memory 2.00, example.com/foo 2.50, pods 1.00");
}

TEST(Resource, EqualWithTolerance) {
  EXPECT_TRUE(Res(1000, 0, {{"pods", 1}}).Equal(Res(1000.05, 0, {{"pods", 1}}), kZero));
  EXPECT_FALSE(Res(1000, 0, {{"pods", 1}}).Equal(Res(1000, 0), kZero));
}

TEST(Resource, NamesVolcanoKeeps) {
  for (std::string_view ok : {"cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu",
                              "example.com/foo_bar", "hugepages-2Mi", "attachable-volumes-csi-x",
                              "kubernetes.io/batch"})
    EXPECT_TRUE(IsVolcanoResourceName(ok)) << ok;
  for (std::string_view dropped : {"foo", "gpu", "count/pods", "requests.nvidia.com/gpu",
                                   "Example.com/gpu", "nvidia.com/", "-bad.com/x", "a.com/-x"})
    EXPECT_FALSE(IsVolcanoResourceName(dropped)) << dropped;
}


// ---- SparseResource: the spec's form of a Resource ----

// A Resource with n (≤ 6) scalar dimensions beyond cpu and memory, each set to a distinct value.
// Names other tests use too: the registry holds at most kMaxResources per process.
Resource WithScalars(int n) {
  static const char* const kNames[] = {"pods",          "nvidia.com/gpu", "example.com/foo",
                                       "hugepages-2Mi", "hugepages-1Gi",  "ephemeral-storage"};
  Resource r;
  r.Set(kCpu, 1500);
  r.Set(kMemory, 2048);
  for (int i = 0; i < n; ++i) r.Set(*ResourceRegistry::Intern(kNames[i]), 10.0 * (i + 1));
  return r;
}

TEST(SparseResource, DefaultIsResourceDefault) {
  SparseResource s;
  EXPECT_EQ(s.Expand(), Resource{});
  EXPECT_EQ(s.present(), Resource::kBaseMask);
  EXPECT_FALSE(s.HasScalars());
  EXPECT_TRUE(s.IsEmpty());
}

TEST(SparseResource, RoundTripKeepsBitsAndValuesInlineAndOnTheHeap) {
  // 0..3 scalars stay inline (kInline = 5 with cpu and memory); 4 and more go to the heap.
  for (int n : {0, 1, 3, 4, 6}) {
    Resource r = WithScalars(n);
    SparseResource s = r;
    EXPECT_EQ(s.Expand(), r) << n << " scalars";
    EXPECT_EQ(s.present(), r.present) << n;
    ForEachBit(r.present, [&](ResourceId id) { EXPECT_EQ(s.Get(id), r.Get(id)) << n; });
    if (n == 0) EXPECT_EQ(s.Get(kPods), 0) << "absent reads 0";
  }
}

TEST(SparseResource, APresentZeroStaysPresent) {
  Resource r;
  r.Set(Gpu(), 0);  // a scalar key with value 0: Volcano's Zero/Infinity defaults tell it apart
  SparseResource s = r;
  EXPECT_TRUE(s.Has(Gpu()));
  EXPECT_TRUE(s.HasScalars());
  EXPECT_EQ(s.Expand(), r);
  EXPECT_TRUE(s.Expand().Has(Gpu()));
}

TEST(SparseResource, CopiesAndMovesOwnTheirValues) {
  SparseResource big = WithScalars(6), small = WithScalars(1);
  SparseResource copy = big;
  copy.Set(kCpu, 1);
  EXPECT_EQ(big.cpu(), 1500) << "a copy's write leaves the original alone";
  EXPECT_EQ(copy.cpu(), 1);
  SparseResource moved = std::move(big);
  EXPECT_EQ(moved.Expand(), WithScalars(6));
  EXPECT_EQ(big.Expand(), Resource{}) << "moved-from is empty, not dangling";  // NOLINT
  moved = small;
  EXPECT_EQ(moved.Expand(), WithScalars(1)) << "heap to inline";
  small = copy;
  EXPECT_EQ(small.Get(kCpu), 1) << "inline to heap";
  EXPECT_EQ(small.present(), WithScalars(6).present);
}

TEST(SparseResource, SetAndAddThroughTheDenseForm) {
  SparseResource s;
  s.Set(kCpu, 250);
  s.Set(Gpu(), 1000);  // a new dimension
  s.Set(Gpu(), 2000);  // an existing one
  EXPECT_EQ(s.cpu(), 250);
  EXPECT_EQ(s.Get(Gpu()), 2000);
  Resource add;
  add.Set(kMemory, 64);
  add.Set(Foo(), 3);
  s.Add(add);
  Resource want;
  want.Set(kCpu, 250);
  want.Set(kMemory, 64);
  want.Set(Gpu(), 2000);
  want.Set(Foo(), 3);
  EXPECT_EQ(s.Expand(), want);
  EXPECT_TRUE(s == SparseResource(want));
  EXPECT_FALSE(s == SparseResource(Resource{}));
}

TEST(SparseResource, IsSmallerThanAResource) {
  EXPECT_LE(sizeof(SparseResource), 56u);
  EXPECT_LT(sizeof(SparseResource) * 4, sizeof(Resource));
}

}  // namespace
}  // namespace kiln
