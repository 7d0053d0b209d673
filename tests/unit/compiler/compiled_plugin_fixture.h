// Sessions over one compiled policy, for the compiler's tests: a one-node cluster, and a
// scheduler.conf whose only plugin is the policy, prepared by the compiled-policy provider the way
// the scheduler prepares it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "compiler/host/compiled_policy_provider.h"
#include "compiler/passes/cost.h"
#include "runtime/conf.h"
#include "runtime/session.h"
#include "stdlib/runtime_support.h"
#include "tests/unit/core_test_util.h"
#include "tests/unit/temp_dir.h"

namespace kiln::testing {

// Restores the process-wide budgets and limits of policy calls that a test changes.
struct PolicyLimitsGuard {
  int64_t iterations = PolicyCallIterationBudget();
  int faults = PluginFaultLimit();
  size_t memory = PolicyCallMemoryBudget();
  size_t state_memory = PolicyStateMemoryBudget();
  int64_t host_work = PolicyCallHostWorkBudget();
  int64_t call_time = PolicyCallTimeBudget();
  int64_t session_time = PolicySessionTimeBudget();
  int64_t http = PolicySessionHttpBudget();
  double max_cost = DefaultMaxHandlerCost();
  ~PolicyLimitsGuard() {
    SetPolicyCallIterationBudget(iterations);
    SetPluginFaultLimit(faults);
    SetPolicyCallMemoryBudget(memory);
    SetPolicyStateMemoryBudget(state_memory);
    SetPolicyCallHostWorkBudget(host_work);
    SetPolicyCallTimeBudget(call_time);
    SetPolicySessionTimeBudget(session_time);
    SetPolicySessionHttpBudget(http);
    SetDefaultMaxHandlerCost(max_cost);
  }
};

// Queue `default`, node n1 (4 CPU, 8 GB) and job ns/j of `tasks` tasks t-0, t-1, … asking 1 CPU
// each (the job needs all of them), linked.
inline Cluster OneNodeCluster(int tasks = 1) {
  ClusterBuilder b;
  b.AddQueue("default");
  b.AddNode("n1", Res(4000, 8e9));
  Job& j = b.AddJob("ns", "j", "default", tasks);
  for (int i = 0; i < tasks; ++i) b.AddTask(j, "t-" + std::to_string(i), Res(1000, 0));
  EXPECT_TRUE(b.cluster.Link().ok());
  return std::move(b.cluster);
}

// The first plugin entry of a conf, prepared by a compiled-policy provider and registered for
// sessions. Sessions keep references to `conf` and `registry`: it must outlive them and never move.
struct CompiledPlugin {
  std::unique_ptr<PolicyProvider> provider;
  std::optional<SchedulerConf> conf;
  PluginRegistry registry;
  std::optional<Error> error;  // the provider's refusal to prepare the entry

  // `made` is the provider; `plugins` the conf's plugin entries (YAML list items indented by two
  // spaces) under `actions: "allocate"`.
  CompiledPlugin(Result<std::unique_ptr<PolicyProvider>> made, const std::string& plugins) {
    auto c = ParseSchedulerConf("actions: \"allocate\"\ntiers:\n- plugins:\n" + plugins,
                                "scheduler.conf");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().Format());
    if (!c.ok()) return;
    conf = std::move(*c);
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().Format());
    if (!made.ok()) return;
    provider = std::move(*made);
    const PluginOption& entry = conf->tiers[0].plugins[0];
    auto builder = provider->Prepare(entry);
    if (!builder.ok()) {
      error = builder.error();
      return;
    }
    EXPECT_TRUE(*builder);
    if (*builder) EXPECT_TRUE(registry.Register(entry.name, **builder).ok());
  }
  // The plugin `name` of the policies in `policy_dir`, alone in the conf; `entry` is more of its
  // entry (YAML lines indented by four spaces).
  CompiledPlugin(const std::string& policy_dir, const std::string& name,
                 const std::string& entry = "")
      : CompiledPlugin(MakeCompiledPolicyProvider(CompiledPolicyOptions{{policy_dir}, false}),
                       "  - name: " + name + "\n" + entry) {}
  CompiledPlugin(const CompiledPlugin&) = delete;
  CompiledPlugin& operator=(const CompiledPlugin&) = delete;

  // A session over `cluster` at time 1000 with this plugin, opened.
  std::unique_ptr<Session> Open(const std::string& uid = "s1",
                                Cluster cluster = OneNodeCluster()) {
    auto ssn = std::make_unique<Session>(std::move(cluster), *conf, 1000, uid);
    EXPECT_TRUE(ssn->Open(registry).ok());
    return ssn;
  }
};

// A session over OneNodeCluster() whose only plugin is the policy `name` of the text `text`
// (written to a temporary directory); `entry` as for CompiledPlugin.
struct OnePolicySession {
  PolicyDir dir;
  std::optional<CompiledPlugin> plugin;
  std::unique_ptr<Session> ssn;  // none when the provider refused the entry (plugin->error)
  Task* task = nullptr;          // ns-t-0
  Node* node = nullptr;          // n1

  OnePolicySession(const std::string& name, const std::string& text,
                   const std::string& entry = "") {
    dir.Write(name + ".policy", text);
    plugin.emplace(dir.path(), name, entry);
    if (plugin->error || !plugin->conf) return;
    ssn = plugin->Open();
    task = ssn->cluster().FindTask("ns-t-0");
    node = ssn->cluster().FindNode("n1");
  }
};

}  // namespace kiln::testing
