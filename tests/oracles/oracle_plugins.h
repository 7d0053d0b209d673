#pragma once
// The gang, priority and cdp oracles as session plugins, registered under the same names as the
// built-in policies, so a differential test can run one scenario twice — once with the compiled
// policies, once with these — and compare every decision. Registration mirrors Volcano's
// OnSessionOpen of each plugin (which points each one registers); the session applies the
// enableXxx flags exactly as it does for compiled policies. Test-only.

#include <memory>
#include <span>
#include <vector>

#include "runtime/abi.h"
#include "runtime/plugin.h"
#include "runtime/session.h"
#include "tests/oracles/cdp_oracle.h"
#include "tests/oracles/gang_oracle.h"
#include "tests/oracles/priority_oracle.h"

namespace kiln::oracles {

// Victims ABI: mark the selected candidates and Permit (1). The C++ sides of jit_bench's
// preemptable benchmarks answer through it too.
inline int32_t MarkVictims(const Task* const* tasks, size_t n, uint8_t* selected,
                           const std::vector<const Task*>& victims) {
  size_t v = 0;
  for (size_t i = 0; i < n && v < victims.size(); ++i)
    if (tasks[i] == victims[v]) {
      selected[i] = 1;
      ++v;
    }
  return 1;
}

class GangOracle : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.On<ExtensionPoint::JobValid>(self, [](const Job* j, KStatusOut* out) {
      auto v = gang::JobValid(*j);
      if (!v.pass) {
        kiln_status_add_reason(out, v.reason.data(), v.reason.size());
        kiln_status_set_message(out, v.message.data(), v.message.size());
      }
      return v.pass;
    });
    auto victims = [](const Task* p, const Task* const* c, size_t n, uint8_t* sel) {
      return MarkVictims(c, n, sel, gang::Victims(*p, std::span(c, n)));
    };
    ssn.On<ExtensionPoint::Preemptable>(self, victims);
    ssn.On<ExtensionPoint::Reclaimable>(self, victims);
    ssn.On<ExtensionPoint::JobOrder>(
        self, [](const Job* l, const Job* r) { return int32_t{gang::JobOrder(*l, *r)}; });
    ssn.On<ExtensionPoint::JobReady>(self, [](const Job* j) { return gang::JobReady(*j); });
    ssn.On<ExtensionPoint::JobPipelined>(
        self, [](const Job* j) { return int32_t{gang::JobPipelined(*j)}; });
    ssn.On<ExtensionPoint::JobStarving>(self, [](const Job* j) { return gang::JobStarving(*j); });
    return Status::Ok();
  }
};

class PriorityOracle : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    ssn.On<ExtensionPoint::TaskOrder>(
        self, [](const Task* l, const Task* r) { return int32_t{priority::TaskOrder(*l, *r)}; });
    ssn.On<ExtensionPoint::JobOrder>(
        self, [](const Job* l, const Job* r) { return int32_t{priority::JobOrder(*l, *r)}; });
    ssn.On<ExtensionPoint::Preemptable>(
        self, [](const Task* p, const Task* const* c, size_t n, uint8_t* sel) {
          return MarkVictims(c, n, sel, priority::Victims(*p, std::span(c, n)));
        });
    ssn.On<ExtensionPoint::JobStarving>(self,
                                        [](const Job* j) { return priority::JobStarving(*j); });
    return Status::Ok();
  }
};

class CdpOracle : public Plugin {
 public:
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    // The session clock, read once: it does not move during a session.
    TimeNs now = ssn.now();
    auto victims = [now](const Task* p, const Task* const* c, size_t n, uint8_t* sel) {
      return MarkVictims(c, n, sel, cdp::Victims(*p, std::span(c, n), now));
    };
    ssn.On<ExtensionPoint::Preemptable>(self, victims);
    ssn.On<ExtensionPoint::Reclaimable>(self, victims);
    return Status::Ok();
  }
};

// Registers "gang", "priority" and "cdp" as the oracles.
inline Status RegisterOraclePlugins(PluginRegistry& registry) {
  auto add = [&registry]<typename P>(const char* name) {
    return registry.Register(name, [](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
      return std::unique_ptr<Plugin>(std::make_unique<P>());
    });
  };
  if (Status s = add.template operator()<GangOracle>("gang"); !s.ok()) return s;
  if (Status s = add.template operator()<PriorityOracle>("priority"); !s.ok()) return s;
  return add.template operator()<CdpOracle>("cdp");
}

}  // namespace kiln::oracles
