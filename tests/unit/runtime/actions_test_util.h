#pragma once
// A fixture for the actions' unit tests: a small cluster built through the core API, C++ test
// plugins registered for the extension points a test needs, and readable views of the session's
// decisions ("task@node" binds, evicted task names, per-task unschedulable reasons).

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/actions/action.h"
#include "runtime/conf.h"

namespace kiln::actions_testing {
// clang-16 with libstdc++-12 rejects default-constructing a PluginOption when ConfValue's
// recursive variant has not been instantiated yet in the translation unit (its Map's pair is
// still incomplete when the traits are computed). Instantiating ConfValue first avoids that.
[[maybe_unused]] inline const ConfValue kInstantiateConfValue{};
}  // namespace kiln::actions_testing

#include "runtime/plugin.h"
#include "runtime/session.h"
#include "tests/unit/core_test_util.h"

namespace kiln::actions_testing {

using EP = ExtensionPoint;

using ::kiln::testing::Res;  // cpu in milli-cores, memory in bytes, extra scalars by name

// Node allocatable with room for plenty of pods (every task requests a hidden pods: 1).
inline Resource NodeRes(double cpu, double mem = 16384) { return Res(cpu, mem, {{"pods", 110}}); }

// A conf whose tiers list the plugins by name, every flag the YAML loader defaults set to true.
inline SchedulerConf MakeConf(const std::vector<std::vector<std::string>>& tiers) {
  SchedulerConf conf;
  for (const auto& names : tiers) {
    Tier tier;
    for (const auto& name : names) {
      PluginOption o;
      o.name = name;
      for (int i = 0; i < kPluginFlagCount; ++i)
        if (kPluginFlags[i].defaulted_by_loader) o.flags[i] = true;
      tier.plugins.push_back(std::move(o));
    }
    conf.tiers.push_back(std::move(tier));
  }
  return conf;
}

// A C++ test plugin: OnSessionOpen runs a lambda that registers handlers.
using OpenFn = std::function<void(Session&, PluginHandle)>;
class TestPlugin : public Plugin {
 public:
  explicit TestPlugin(OpenFn open) : open_(std::move(open)) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    open_(ssn, self);
    return Status::Ok();
  }

 private:
  OpenFn open_;
};

// The core tests' builder: clusters built through the core API.
using kiln::testing::ClusterBuilder;

class ActionsTest : public ::testing::Test {
 protected:
  // Opens the session. `tiers` name plugins registered in `reg`; `actions` become conf.actions.
  void Open(std::vector<std::vector<std::string>> tiers, std::vector<std::string> actions = {}) {
    SchedulerConf fresh = MakeConf(std::move(tiers));
    fresh.actions = std::move(actions);
    fresh.action_arguments = conf.action_arguments;
    conf = std::move(fresh);
    Status linked = b.cluster.Link();
    ASSERT_TRUE(linked.ok()) << linked.error().message;
    ssn = std::make_unique<Session>(std::move(b.cluster), conf, /*now=*/1000, "s1");
    Status s = ssn->Open(reg);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  void Run(std::string_view action) {
    const Action* a = FindAction(action);
    ASSERT_NE(a, nullptr) << action;
    a->Execute(*ssn);
  }

  // Registers a plugin whose OnSessionOpen runs `open`.
  void Plugin(const std::string& name, OpenFn open) {
    Status s =
        reg.Register(name, [open](const PluginOption&) -> Result<std::unique_ptr<kiln::Plugin>> {
          return std::unique_ptr<kiln::Plugin>(std::make_unique<TestPlugin>(open));
        });
    ASSERT_TRUE(s.ok()) << s.error().message;
  }

  // Nodes n1 … n<count>, each with `cpu` milli-cores (and NodeRes's memory and pods).
  void AddNodes(int count, double cpu) {
    for (int i = 1; i <= count; ++i) b.AddNode("n" + std::to_string(i), NodeRes(cpu));
  }

  // Registers the plugin `name` (see Plugin) and opens the session with it alone.
  void OpenWithPlugin(const std::string& name, OpenFn open) {
    Plugin(name, std::move(open));
    Open({{name}});
  }

  // A job of namespace ns in the phase it enters the session with.
  Job& RunningJob(std::string name, std::string queue = "default", int64_t min = 1) {
    Job& j = b.AddJob("ns", std::move(name), std::move(queue), min);
    j.phase = PodGroupPhase::Running;
    return j;
  }
  Job& InqueueJob(std::string name, std::string queue = "default", int64_t min = 1) {
    Job& j = b.AddJob("ns", std::move(name), std::move(queue), min);
    j.phase = PodGroupPhase::Inqueue;
    return j;
  }

  Task* T(std::string_view name) { return ssn->cluster().FindTask(std::string("ns-") += name); }
  Job* J(std::string_view name) { return ssn->cluster().FindJob(std::string("ns/") += name); }
  Node* N(std::string_view name) { return ssn->cluster().FindNode(name); }
  Queue* Q(std::string_view name) { return ssn->cluster().FindQueue(name); }

  std::vector<std::string> Binds() const {
    std::vector<std::string> out;
    for (const auto& b : ssn->decisions().binds) out.push_back(b.task->name + "@" + b.node->name);
    return out;
  }
  std::vector<std::string> Evictions() const {
    std::vector<std::string> out;
    for (const auto& e : ssn->decisions().evictions) out.push_back(e.task->name);
    return out;
  }
  // Tasks in Pipelined status with their node, in task order of the cluster.
  std::vector<std::string> Pipelined() const {
    std::vector<std::string> out;
    for (const Task* t : ssn->cluster().tasks())
      if (t->status == TaskStatus::Pipelined)
        out.push_back(t->name + "@" + (t->node ? t->node->name : std::string("?")));
    return out;
  }
  // Runs `action`: it binds exactly `binds` ("task@node"), in bind order.
  void ExpectBinds(std::string_view action, const std::vector<std::string>& binds) {
    Run(action);
    EXPECT_EQ(Binds(), binds);
  }
  // Runs `action`: it binds nothing, and `task` stays pending with the reason `why`.
  void ExpectNoBind(std::string_view action, std::string_view task, std::string_view why) {
    Run(action);
    EXPECT_TRUE(Binds().empty());
    EXPECT_EQ(Unschedulable(task), why);
  }
  // The reason Close() records for a task that stayed pending ("" when none).
  std::string Unschedulable(std::string_view task_name) {
    ssn->Close();
    for (const auto& [t, msg] : ssn->decisions().unschedulable)
      if (t->name == task_name) return msg;
    return "";
  }

  ClusterBuilder b;
  PluginRegistry reg;
  SchedulerConf conf;
  std::unique_ptr<Session> ssn;
};

// The fixture of the tests whose jobs all sit in one queue, "default".
class DefaultQueueTest : public ActionsTest {
 protected:
  void SetUp() override { b.AddQueue("default"); }
};

// Common plugins.

// JobReady/JobPipelined/JobStarving as gang defines them (Volcano's JobInfo helpers), so that a
// job is held until minAvailable tasks fit.
inline OpenFn GangLike() {
  return [](Session& s, PluginHandle h) {
    s.On<EP::JobReady>(h, [](const Job* j) { return j->IsReady(); });
    s.On<EP::JobPipelined>(h, [](const Job* j) { return j->IsPipelined() ? 1 : -1; });
    s.On<EP::JobStarving>(h, [](const Job* j) { return j->IsStarving(); });
  };
}

// Selects every candidate (a Preemptable/Reclaimable that permits all).
inline int32_t SelectAll(const Task*, const Task* const*, size_t n, uint8_t* sel) {
  for (size_t i = 0; i < n; ++i) sel[i] = 1;
  return 1;
}

// Higher task priority first (Volcano's priority plugin TaskOrder).
inline int32_t ByPriority(const Task* l, const Task* r) {
  if (l->priority == r->priority) return 0;
  return l->priority > r->priority ? -1 : 1;
}

inline void AddReason(KStatusOut* out, std::string_view reason) {
  kiln_status_add_reason(out, reason.data(), reason.size());
}

// A predicate's answer that turns the task away with `reason`.
inline int32_t Reject(KStatusOut* out, std::string_view reason,
                      StatusCode code = StatusCode::UnschedulableAndUnresolvable) {
  AddReason(out, reason);
  return static_cast<int32_t>(code);
}

}  // namespace kiln::actions_testing
