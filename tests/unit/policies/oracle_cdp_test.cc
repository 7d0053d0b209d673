// Rules of the cdp oracle (tests/oracles/cdp_oracle.h), §5 "cdp" and seed 000.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/oracles/cdp_oracle.h"
#include "tests/unit/policies/oracle_test_util.h"

namespace kiln::oracles::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Optional;

constexpr int64_t kSecond = 1'000'000'000;
constexpr TimeNs kNow = 1'700'000'000 * kSecond;

TEST(OracleCdp, ParsesGoDurations) {
  EXPECT_THAT(cdp::ParseGoDuration("10m"), Optional(600 * kSecond));
  EXPECT_THAT(cdp::ParseGoDuration("1h30m"), Optional(5400 * kSecond));
  EXPECT_THAT(cdp::ParseGoDuration("1.5s"), Optional(1500 * kSecond / 1000));
  EXPECT_THAT(cdp::ParseGoDuration("250ms"), Optional(250 * kSecond / 1000));
  EXPECT_THAT(cdp::ParseGoDuration("0"), Optional(0));
  EXPECT_THAT(cdp::ParseGoDuration("-2s"), Optional(-2 * kSecond));
  EXPECT_THAT(cdp::ParseGoDuration(".5h"), Optional(1800 * kSecond));
}

TEST(OracleCdp, RejectsWhatGoRejects) {
  EXPECT_EQ(cdp::ParseGoDuration(""), std::nullopt);
  EXPECT_EQ(cdp::ParseGoDuration("10"), std::nullopt);     // missing unit
  EXPECT_EQ(cdp::ParseGoDuration("1d"), std::nullopt);     // Go has no days
  EXPECT_EQ(cdp::ParseGoDuration("abc"), std::nullopt);
  EXPECT_EQ(cdp::ParseGoDuration("."), std::nullopt);
  EXPECT_EQ(cdp::ParseGoDuration("5m junk"), std::nullopt);
}

TEST(OracleCdp, LabelWinsOverAnnotation) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1);
  Task& t = c.AddTask(j, "t", TaskStatus::Running);
  t.mutable_shape().annotations[std::string(cdp::kCooldownKey)] = "1h";
  EXPECT_THAT(cdp::Cooldown(t), Optional(3600 * kSecond));
  t.mutable_shape().labels[std::string(cdp::kCooldownKey)] = "1m";
  EXPECT_THAT(cdp::Cooldown(t), Optional(60 * kSecond));
  // An invalid label is not rescued by a valid annotation.
  t.mutable_shape().labels[std::string(cdp::kCooldownKey)] = "soon";
  EXPECT_EQ(cdp::Cooldown(t), std::nullopt);
}

TEST(OracleCdp, RunningPodsInsideTheCooldownAreNotVictims) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1);
  Task& fresh = c.AddTask(j, "fresh", TaskStatus::Running);
  fresh.mutable_shape().labels[std::string(cdp::kCooldownKey)] = "10m";
  fresh.scheduled_at = kNow - 5 * 60 * kSecond;
  Task& old = c.AddTask(j, "old", TaskStatus::Running);
  old.mutable_shape().labels[std::string(cdp::kCooldownKey)] = "10m";
  old.scheduled_at = kNow - 11 * 60 * kSecond;
  Task& edge = c.AddTask(j, "edge", TaskStatus::Running);
  edge.mutable_shape().labels[std::string(cdp::kCooldownKey)] = "10m";
  edge.scheduled_at = kNow - 10 * 60 * kSecond;  // cooldown ends exactly now: not "after" now
  Task& plain = c.AddTask(j, "plain", TaskStatus::Running);
  Task& preemptor = c.AddTask(j, "p", TaskStatus::Pending);
  std::vector<const Task*> cands = {&fresh, &old, &edge, &plain};
  EXPECT_THAT(Names(cdp::Victims(preemptor, cands, kNow)), ElementsAre("old", "edge", "plain"));
}

TEST(OracleCdp, OnlyRunningPodsWithASchedulingTimeAreProtected) {
  MiniCluster c;
  Job& j = c.AddJob("ns/j", 1);
  Task& bound = c.AddTask(j, "bound", TaskStatus::Bound);
  bound.mutable_shape().annotations[std::string(cdp::kCooldownKey)] = "1h";
  bound.scheduled_at = kNow;
  Task& unscheduled = c.AddTask(j, "no-condition", TaskStatus::Running);
  unscheduled.mutable_shape().annotations[std::string(cdp::kCooldownKey)] = "1h";
  Task& invalid = c.AddTask(j, "invalid", TaskStatus::Running);
  invalid.mutable_shape().annotations[std::string(cdp::kCooldownKey)] = "forever";
  invalid.scheduled_at = kNow;
  Task& preemptor = c.AddTask(j, "p", TaskStatus::Pending);
  std::vector<const Task*> cands = {&bound, &unscheduled, &invalid};
  EXPECT_THAT(Names(cdp::Victims(preemptor, cands, kNow)),
              ElementsAre("bound", "no-condition", "invalid"));
}

}  // namespace
}  // namespace kiln::oracles::testing
