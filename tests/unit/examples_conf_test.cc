// Every scheduler.conf in examples/conf/ loads, and every plugin it names is a policy Kiln
// provides and accepts the arguments given: an example conf a user copies must work as is.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/host/policy_provider.h"
#include "runtime/conf.h"

namespace kiln {
namespace {

TEST(ExamplesConf, EveryExampleConfLoadsWithItsPolicies) {
  auto provider = MakeCompiledPolicyProvider(CompiledPolicyOptions{});
  ASSERT_TRUE(provider.ok()) << provider.error().Format();
  int confs = 0;
  bool saw_capacity = false;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(KILN_SOURCE_DIR) / "examples/conf")) {
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

}  // namespace
}  // namespace kiln
