// scheduler.conf loader: Volcano's format, loader defaults, and each error with its location.
#include <gtest/gtest.h>

#include "runtime/conf.h"

namespace kiln {
namespace {

SchedulerConf MustParse(std::string_view text) {
  auto r = ParseSchedulerConf(text, "test.conf");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().Format());
  return r.ok() ? *r : SchedulerConf{};
}

Error MustFail(std::string_view text) {
  auto r = ParseSchedulerConf(text, "test.conf");
  EXPECT_FALSE(r.ok()) << "parsed, but an error was expected";
  return r.ok() ? Error{} : r.error();
}

// Parsing `text` fails with `message`, at `line` when one is given.
void ExpectFailure(std::string_view text, std::string_view message, int line = 0) {
  SCOPED_TRACE(text);
  Error e = MustFail(text);
  EXPECT_EQ(e.message, message);
  if (line > 0) EXPECT_EQ(e.where.line, line);
}

TEST(ConfTest, DefaultConfParsesWithLoaderDefaults) {
  SchedulerConf conf = MustParse(DefaultSchedulerConfText());
  EXPECT_EQ(conf.actions, (std::vector<std::string>{"enqueue", "allocate", "backfill"}));
  ASSERT_EQ(conf.tiers.size(), 2u);
  ASSERT_EQ(conf.tiers[0].plugins.size(), 3u);
  ASSERT_EQ(conf.tiers[1].plugins.size(), 5u);
  EXPECT_EQ(conf.tiers[0].plugins[1].name, "gang");
  EXPECT_EQ(conf.tiers[1].plugins[4].name, "nodeorder");
  const PluginOption& gang = conf.tiers[0].plugins[1];
  EXPECT_EQ(gang.where.line, 5);
  // ApplyPluginConfDefaults: every flag true except enableHierarchy and enabledClusterOrder.
  for (int i = 0; i < kPluginFlagCount; ++i) {
    auto flag = static_cast<PluginFlag>(i);
    bool expected = flag != PluginFlag::enableHierarchy && flag != PluginFlag::enabledClusterOrder;
    EXPECT_EQ(gang.Enabled(flag), expected) << kPluginFlags[i].key;
  }
  EXPECT_FALSE(gang.flags[static_cast<int>(PluginFlag::enableHierarchy)].has_value());
  EXPECT_TRUE(conf.HasAction("enqueue"));
  EXPECT_FALSE(conf.HasAction("preempt"));
}

TEST(ConfTest, ExplicitFlagsOverrideDefaults) {
  SchedulerConf conf = MustParse(R"(actions: "allocate"
tiers:
- plugins:
  - name: gang
    enablePreemptable: false
    enableJobOrder: true
    enableHierarchy: true
    enabledClusterOrder: yes
)");
  const PluginOption& gang = conf.tiers[0].plugins[0];
  EXPECT_FALSE(gang.Enabled(PluginFlag::enablePreemptable));
  EXPECT_TRUE(gang.Enabled(PluginFlag::enableJobOrder));
  EXPECT_TRUE(gang.Enabled(PluginFlag::enableHierarchy));
  EXPECT_TRUE(gang.Enabled(PluginFlag::enabledClusterOrder));
  EXPECT_TRUE(gang.Enabled(PluginFlag::enableReclaimable));
}

TEST(ConfTest, EmptyTiersAndEmptyActionsAreAccepted) {
  SchedulerConf conf = MustParse("actions: \"\"\ntiers: []\n");
  EXPECT_TRUE(conf.actions.empty());
  EXPECT_TRUE(conf.tiers.empty());
  SchedulerConf conf2 = MustParse("actions: \"enqueue,allocate ,  backfill\"\n");
  EXPECT_EQ(conf2.actions, (std::vector<std::string>{"enqueue", "allocate", "backfill"}));
  EXPECT_TRUE(conf2.tiers.empty());
  // A tier with no plugins is legal too.
  SchedulerConf conf3 = MustParse("actions: allocate\ntiers:\n- plugins: []\n");
  ASSERT_EQ(conf3.tiers.size(), 1u);
  EXPECT_TRUE(conf3.tiers[0].plugins.empty());
}

TEST(ConfTest, PluginArgumentsKeepTypesAndLocations) {
  SchedulerConf conf = MustParse(R"(actions: "allocate"
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1.5
      binpack.enabled: true
      binpack.resources: "nvidia.com/gpu"
      quoted: "10"
      list: [a, 2]
      nested: {x: 1}
)");
  const auto& args = conf.tiers[0].plugins[0].arguments;
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[0].first, "binpack.weight");
  EXPECT_EQ(std::get<int64_t>(args[0].second.value), 10);
  EXPECT_EQ(args[0].second.where.line, 6);
  EXPECT_EQ(args[0].second.where.file, "test.conf");
  EXPECT_DOUBLE_EQ(std::get<double>(args[1].second.value), 1.5);
  EXPECT_EQ(args[1].second.text, "1.5");
  EXPECT_TRUE(std::get<bool>(args[2].second.value));
  EXPECT_EQ(std::get<std::string>(args[3].second.value), "nvidia.com/gpu");
  EXPECT_EQ(std::get<std::string>(args[4].second.value), "10");  // quoted stays a string
  const auto& list = std::get<ConfValue::List>(args[5].second.value);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(list[1].value), 2);
  const auto& nested = std::get<ConfValue::Map>(args[6].second.value);
  ASSERT_EQ(nested.size(), 1u);
  EXPECT_EQ(nested[0].first, "x");
}

TEST(ConfTest, ActionArguments) {
  SchedulerConf conf = MustParse(R"(actions: "allocate, preempt"
configurations:
- name: preempt
  arguments:
    predicateErrorCacheEnable: "false"
    enableTopologyAwarePreemption: true
    minCandidateNodesPercentage: 20
- name: allocate
  arguments: {predicateErrorCacheEnable: false}
)");
  const ActionArguments& p = conf.ArgumentsFor("preempt");
  EXPECT_FALSE(p.predicate_error_cache_enable);
  EXPECT_TRUE(p.enable_topology_aware_preemption);
  EXPECT_EQ(p.min_candidate_nodes_percentage, 20);
  EXPECT_EQ(p.max_candidate_nodes_absolute, 100);  // default kept
  EXPECT_FALSE(conf.ArgumentsFor("allocate").predicate_error_cache_enable);
  EXPECT_TRUE(conf.ArgumentsFor("backfill").predicate_error_cache_enable);  // not configured
}

TEST(ConfTest, MetricsAreStrings) {
  SchedulerConf conf = MustParse("actions: allocate\nmetrics: {type: prometheus, interval: 30s}\n");
  EXPECT_EQ(conf.metrics.at("type"), "prometheus");
  EXPECT_EQ(conf.metrics.at("interval"), "30s");
}

TEST(ConfTest, UnknownActionNamesColumnAndSuggestion) {
  Error e = MustFail("actions: \"enqueue, alocate\"\n");
  EXPECT_EQ(e.message, "unknown action `alocate`; did you mean `allocate`?");
  EXPECT_EQ(e.where.file, "test.conf");
  EXPECT_EQ(e.where.line, 1);
  EXPECT_EQ(e.where.column, 20);
  Error plain = MustFail("tiers: []\nactions: enqueue, frobnicate\n");
  EXPECT_EQ(plain.message, "unknown action `frobnicate`");
  EXPECT_EQ(plain.where.line, 2);
  EXPECT_EQ(plain.where.column, 19);
}

TEST(ConfTest, GangEvictionActionsAreAccepted) {
  auto conf = ParseSchedulerConf("actions: \"allocate, gangpreempt, gangreclaim\"\n", "c.conf");
  ASSERT_TRUE(conf.ok()) << conf.error().Format();
  EXPECT_EQ(conf->actions, (std::vector<std::string>{"allocate", "gangpreempt", "gangreclaim"}));
}

TEST(ConfTest, EmptyActionBetweenCommas) {
  Error e = MustFail("actions: \"allocate,,backfill\"\n");
  EXPECT_EQ(e.message,
            "empty action name in `actions` (two commas in a row, or a trailing comma?)");
}

TEST(ConfTest, UnknownTopLevelKey) {
  Error e = MustFail("actions: allocate\ntier:\n- plugins: []\n");
  EXPECT_EQ(e.message, "unknown key `tier` in scheduler.conf; did you mean `tiers`?");
  EXPECT_EQ(e.where.line, 2);
  EXPECT_EQ(e.where.column, 1);
}

TEST(ConfTest, MistypedFlagKey) {
  Error e = MustFail(R"(actions: "allocate"
tiers:
- plugins:
  - name: gang
    enableJobOrdr: false
)");
  EXPECT_EQ(e.message, "unknown plugin option `enableJobOrdr`; did you mean `enableJobOrder`?");
  EXPECT_EQ(e.where.line, 5);
  EXPECT_EQ(e.where.column, 5);
  EXPECT_EQ(e.Format(),
            "test.conf:5:5: error: unknown plugin option `enableJobOrdr`; did you mean "
            "`enableJobOrder`?");
}

TEST(ConfTest, WrongFlagValueType) {
  Error e = MustFail(R"(actions: "allocate"
tiers:
- plugins:
  - name: gang
    enableJobOrder: yes please
)");
  EXPECT_EQ(e.message, "plugin option `enableJobOrder` must be true or false, got `yes please`");
  EXPECT_EQ(e.where.line, 5);
  EXPECT_EQ(e.where.column, 21);
  // A quoted "true" is a string, as in Go's yaml decoder into *bool.
  Error quoted = MustFail("tiers:\n- plugins:\n  - name: gang\n    enableJobReady: \"true\"\n");
  EXPECT_EQ(quoted.message, "plugin option `enableJobReady` must be true or false, got `true`");
  EXPECT_EQ(quoted.where.line, 4);
}

TEST(ConfTest, PluginEntryShapeErrors) {
  ExpectFailure("tiers:\n- plugins:\n  - enableJobOrder: true\n", "plugin entry has no `name`", 3);
  ExpectFailure("tiers:\n- plugins:\n  - gang\n",
                "a plugin entry must be a map with a `name`, got `gang`");
  ExpectFailure("tiers:\n- plugins:\n  - name: gang\n    arguments: [1]\n",
                "`arguments` of plugin `gang` must be a map, got a list", 4);
  ExpectFailure("tiers:\n- plugin:\n  - name: gang\n",
                "unknown key `plugin` in tier; did you mean `plugins`?");
  ExpectFailure("tiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: gang\n",
                "plugin `gang` is listed twice (first at line 3)", 5);
  ExpectFailure("tiers:\n- plugins:\n  - name: gang\n    name: drf\n",
                "duplicate key `name` in plugin entry (first at line 3)", 4);
}

TEST(ConfTest, BadActionArguments) {
  Error unknown = MustFail(R"(actions: "allocate"
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnabled: true
)");
  EXPECT_EQ(unknown.message,
            "unknown argument `predicateErrorCacheEnabled` for action `allocate`; did you mean "
            "`predicateErrorCacheEnable`? (it takes: predicateErrorCacheEnable)");
  EXPECT_EQ(unknown.where.line, 5);
  Error type = MustFail(R"(actions: "preempt"
configurations:
- name: preempt
  arguments:
    minCandidateNodesAbsolute: 1.5
)");
  EXPECT_EQ(type.message,
            "argument `minCandidateNodesAbsolute` of action `preempt` must be an integer, got "
            "`1.5`");
  EXPECT_EQ(type.where.line, 5);
  EXPECT_EQ(type.where.column, 32);
  ExpectFailure("configurations:\n- name: enqueue\n  arguments: {maxDomains: 2}\n",
                "unknown argument `maxDomains` for action `enqueue`; it takes no arguments");
  Error action = MustFail("configurations:\n- name: alocate\n");
  EXPECT_EQ(action.message, "configuration for unknown action `alocate`; did you mean `allocate`?");
  EXPECT_EQ(action.where.line, 2);
}

TEST(ConfTest, HierarchicalDrfConflictsWithProportion) {
  ExpectFailure(
      R"(actions: "allocate"
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
  - name: proportion
)",
      "proportion and drf with hierarchy enabled conflicts: drf has `enableHierarchy: true` "
      "and proportion is in the same tier (line 6)",
      4);
  // Without hierarchy, or in different tiers, both are fine.
  MustParse("tiers:\n- plugins:\n  - name: drf\n  - name: proportion\n");
  MustParse(
      "tiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n- plugins:\n  - name: "
      "proportion\n");
}

TEST(ConfTest, YamlSyntaxErrorHasLocation) {
  Error e = MustFail("actions: \"allocate\"\ntiers:\n- plugins: [\n");
  EXPECT_EQ(e.where.file, "test.conf");
  EXPECT_GT(e.where.line, 0);
  EXPECT_EQ(e.message.rfind("invalid YAML: ", 0), 0u) << e.message;
  ExpectFailure("", "scheduler.conf is empty");
  ExpectFailure("- a\n- b\n",
                "scheduler.conf must be a map with `actions` and `tiers`, got a list");
}

}  // namespace
}  // namespace kiln
