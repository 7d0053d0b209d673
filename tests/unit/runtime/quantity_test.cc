#include "runtime/quantity.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

int64_t Milli(std::string_view s) {
  auto q = ParseQuantity(s);
  EXPECT_TRUE(q.ok()) << s << ": " << (q.ok() ? "" : q.error().message);
  return q.ok() ? q->MilliValue() : -1;
}
int64_t Val(std::string_view s) {
  auto q = ParseQuantity(s);
  EXPECT_TRUE(q.ok()) << s;
  return q.ok() ? q->Value() : -1;
}

TEST(Quantity, DecimalAndMilli) {
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Val("500m"), 1);  // Value rounds up like Kubernetes
  EXPECT_EQ(Milli("1"), 1000);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("0.1"), 100);
  EXPECT_EQ(Milli(".5"), 500);
  EXPECT_EQ(Milli("+2"), 2000);
  EXPECT_EQ(Milli("-1"), -1000);
  EXPECT_EQ(Milli("1n"), 1);  // rounds up to one milli
  EXPECT_EQ(Milli("250u"), 1);
  EXPECT_EQ(Milli("1000u"), 1);
  EXPECT_EQ(Milli("0"), 0);
}

TEST(Quantity, DecimalSuffixesAndExponents) {
  EXPECT_EQ(Val("2k"), 2000);
  EXPECT_EQ(Val("3M"), 3'000'000);
  EXPECT_EQ(Val("1G"), 1'000'000'000);
  EXPECT_EQ(Val("1T"), 1'000'000'000'000);
  EXPECT_EQ(Val("1P"), 1'000'000'000'000'000);
  EXPECT_EQ(Val("1E"), 1'000'000'000'000'000'000);
  EXPECT_EQ(Val("1e3"), 1000);
  EXPECT_EQ(Val("1E3"), 1000);
  EXPECT_EQ(Val("15e-1"), 2);
  EXPECT_EQ(Milli("15e-1"), 1500);
  EXPECT_EQ(Val("1.5e+2"), 150);
}

TEST(Quantity, BinarySuffixes) {
  EXPECT_EQ(Val("1Ki"), 1024);
  EXPECT_EQ(Val("1Mi"), 1048576);
  EXPECT_EQ(Val("1Gi"), 1073741824);
  EXPECT_EQ(Val("1.5Gi"), 1610612736);
  EXPECT_EQ(Val("4Ti"), 4LL << 40);
  EXPECT_EQ(Val("1Pi"), 1LL << 50);
  EXPECT_EQ(Val("1Ei"), 1LL << 60);
  EXPECT_EQ(Val("100Mi"), 100LL << 20);
}

TEST(Quantity, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(Val("100E"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Milli("10E"), std::numeric_limits<int64_t>::max());
}

TEST(Quantity, InvalidTextNamesTheValue) {
  for (std::string_view bad : {"abc", "", "1x", "1.2.3", "Gi", "1e", "1KiB", "1 Gi", "--1", ".",
                               "1m5", "e3", "1ki"}) {
    auto q = ParseQuantity(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_EQ(q.error().message, fmt::format("invalid quantity \"{}\"", bad));
  }
}

TEST(Quantity, ResourceUnitsFollowVolcano) {
  EXPECT_EQ(*ParseResourceQuantity("cpu", "2"), 2000);
  EXPECT_EQ(*ParseResourceQuantity("cpu", "250m"), 250);
  EXPECT_EQ(*ParseResourceQuantity("memory", "1Gi"), 1073741824);
  EXPECT_EQ(*ParseResourceQuantity("memory", "500m"), 1);
  EXPECT_EQ(*ParseResourceQuantity("pods", "110"), 110);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "1"), 1000);
  EXPECT_EQ(*ParseResourceQuantity("ephemeral-storage", "1Ki"), 1024000);
  auto bad = ParseResourceQuantity("cpu", "two");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "invalid quantity \"two\"");
}

TEST(Duration, GoSyntax) {
  EXPECT_EQ(*ParseGoDuration("10m"), 600'000'000'000);
  EXPECT_EQ(*ParseGoDuration("1h30m"), 5'400'000'000'000);
  EXPECT_EQ(*ParseGoDuration("300ms"), 300'000'000);
  EXPECT_EQ(*ParseGoDuration("1.5h"), 5'400'000'000'000);
  EXPECT_EQ(*ParseGoDuration("2us"), 2'000);
  EXPECT_EQ(*ParseGoDuration("7ns"), 7);
  EXPECT_EQ(*ParseGoDuration("-5s"), -5'000'000'000);
  EXPECT_EQ(*ParseGoDuration("0"), 0);
  for (std::string_view bad : {"10", "abc", "", "5d", "1h-3m", "h"}) {
    auto d = ParseGoDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().message, fmt::format("invalid duration \"{}\"", bad));
  }
}

TEST(Timestamp, Rfc3339) {
  EXPECT_EQ(*ParseTimestamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseTimestamp("2025-01-01T00:00:00Z"), 1735689600LL * 1'000'000'000);
  EXPECT_EQ(*ParseTimestamp("2025-01-01T08:00:00+08:00"), 1735689600LL * 1'000'000'000);
  EXPECT_EQ(*ParseTimestamp("2025-01-01T00:00:00.5Z"), 1735689600LL * 1'000'000'000 + 500'000'000);
  EXPECT_EQ(*ParseTimestamp("2024-02-29T12:00:00Z") - *ParseTimestamp("2024-02-28T12:00:00Z"),
            86400LL * 1'000'000'000);
  for (std::string_view bad : {"2025-01-01", "2025-13-01T00:00:00Z", "yesterday",
                               "2025-01-01T00:00:00", "2025-01-01T00:00:00Zjunk"}) {
    auto t = ParseTimestamp(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().message, fmt::format("invalid timestamp \"{}\"", bad));
  }
  // The ends of what int64 nanoseconds hold; beyond them an error, not a wrapped-around time
  // (the kube fuzzer found the overflow).
  EXPECT_TRUE(ParseTimestamp("1678-01-01T00:00:00Z").ok());
  EXPECT_TRUE(ParseTimestamp("2262-01-01T00:00:00Z").ok());
  EXPECT_LT(*ParseTimestamp("1678-01-01T00:00:00Z"), *ParseTimestamp("1970-01-01T00:00:00Z"));
  for (std::string_view far : {"1012-03-04T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"}) {
    auto t = ParseTimestamp(far);
    ASSERT_FALSE(t.ok()) << far;
    EXPECT_NE(t.error().message.find("outside 1677-09-22 to 2262-04-10"), std::string::npos);
  }
}

// Go's zero time.Time as Kubernetes writes it: recognised (ParseTimestamp refuses it, it lies
// before what int64 nanoseconds hold), every other year-1 time is not.
TEST(Timestamp, GoZeroTime) {
  for (std::string_view zero : {"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z",
                                "0001-01-01t00:00:00z", "0001-01-01T00:00:00+00:00",
                                "0001-01-01 00:00:00-00:00"})
    EXPECT_TRUE(IsZeroTimestamp(zero)) << zero;
  for (std::string_view other : {"0001-01-01T00:00:01Z", "0001-01-02T00:00:00Z",
                                 "0001-01-01T00:00:00.001Z", "0001-01-01T00:00:00.Z",
                                 "0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00", "",
                                 "1970-01-01T00:00:00Z", "0001-01-01T00:00:00Zjunk"})
    EXPECT_FALSE(IsZeroTimestamp(other)) << other;
  EXPECT_FALSE(ParseTimestamp("0001-01-01T00:00:00Z").ok());
}

}  // namespace
}  // namespace kiln
