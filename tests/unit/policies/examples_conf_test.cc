// Every scheduler.conf in examples/conf/ loads, and every plugin it names is a policy Kiln
// provides and accepts the arguments given: an example conf a user copies must work as is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/host/compiled_policy_provider.h"
#include "runtime/conf.h"
#include "simulator/simulator.h"
#include "tests/unit/source_dir.h"

namespace kiln {
namespace {

TEST(ExamplesConf, EveryExampleConfLoadsWithItsPolicies) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  int confs = 0;
  bool saw_capacity = false;
  for (const auto& entry :
       std::filesystem::directory_iterator(KilnSourceDir() / "examples/conf")) {
    if (entry.path().extension() != ".conf") continue;
    ++confs;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    auto conf = ParseSchedulerConf(text.str(), entry.path().string());
    ASSERT_TRUE(conf.ok()) << conf.error().Format();
    for (const Tier& tier : conf->tiers)
      for (const PluginOption& option : tier.plugins) {
        auto builder = (*provider)->Prepare(option);
        EXPECT_TRUE(builder.ok() && *builder)
            << entry.path() << ": plugin " << option.name << ": "
            << (builder.ok() ? "no policy" : builder.error().Format());
        saw_capacity |= option.name == "capacity";
      }
  }
  EXPECT_GE(confs, 4);
  EXPECT_TRUE(saw_capacity) << "the Helm conf in its capacity form is among the examples";
}

// Each example conf also runs: one session over a small cluster whose queue and nodes satisfy
// every plugin the examples use (nodegroup needs a group affinity, capacity a deserved share),
// in which the one pending pod must be bound.
TEST(ExamplesConf, EveryExampleConfSchedulesAPod) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  const std::string cluster = R"(
now: "2025-01-01T00:10:00Z"
cluster:
  queues:
  - name: default
    deserved: {cpu: "8", memory: 16Gi}
    affinity:
      nodeGroupAffinity:
        requiredDuringSchedulingIgnoredDuringExecution: [pool]
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, labels: {volcano.sh/nodegroup-name: pool}}
  - {name: n2, allocatable: {cpu: "4", memory: 8Gi, pods: "110"}, labels: {volcano.sh/nodegroup-name: pool}}
  podGroups:
  - {name: pg, namespace: c1, minMember: 1, minResources: {cpu: "1", memory: 1Gi}}
  pods:
  - {name: p, namespace: c1, group: pg, requests: {cpu: "1", memory: 1Gi}}
)";
  for (const auto& entry :
       std::filesystem::directory_iterator(KilnSourceDir() / "examples/conf")) {
    if (entry.path().extension() != ".conf") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::string indented;
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) indented += "  " + line + "\n";
    auto spec = ParseScenario("name: example\nconf: |\n" + indented + cluster, entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.error().Format();
    auto conf = ResolveScenarioConf(*spec, nullptr, "");
    ASSERT_TRUE(conf.ok()) << conf.error().Format();
    auto sim = Simulator::Create(std::move(*spec), std::move(*conf), **provider);
    ASSERT_TRUE(sim.ok()) << sim.error().Format();
    auto result = (*sim)->RunCycle();
    ASSERT_TRUE(result.ok()) << entry.path() << ": " << result.error().Format();
    EXPECT_EQ(result->binds.size(), 1u) << entry.path() << ": the pod was not bound";
  }
}

}  // namespace
}  // namespace kiln
