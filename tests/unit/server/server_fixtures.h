#pragma once
// What the server unit tests share: a cluster binding whose every snapshot is one scenario as
// written (so only the configuration can change a session's decisions), and a poll with a
// deadline for what another thread does.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/cluster.h"
#include "runtime/cluster_spec.h"
#include "runtime/scheduler.h"
#include "simulator/scenario.h"
#include "simulator/simulator.h"

namespace kiln::server::fixtures {

using namespace std::chrono_literals;

// n2 is listed first and empty; n1 already runs a 2-cpu pod. Without a scorer allocate takes the
// first feasible node (n2) for c1/p1; binpack prefers the fuller n1; nodeorder's leastrequested
// the emptier n2.
inline constexpr std::string_view kFullerN1Scenario = R"(name: fuller-n1
cluster:
  nodes:
  - name: n2
    allocatable: {cpu: "4", memory: 8Gi}
  - name: n1
    allocatable: {cpu: "4", memory: 8Gi}
  podGroups:
  - {name: busy, namespace: c1, minMember: 1, phase: Running}
  - {name: pg1, namespace: c1, minMember: 1}
  pods:
  - {name: r1, namespace: c1, group: busy, requests: {cpu: "2", memory: 1Gi}, phase: Running, node: n1}
  - {name: p1, namespace: c1, group: pg1, requests: {cpu: "1", memory: 1Gi}}
)";

// Every snapshot is the scenario as written (nothing applied changes it), so each session makes
// the same first decision. Applied results are kept; a snapshot can be made slow.
class FixedBinding : public ClusterBinding {
 public:
  explicit FixedBinding(std::string_view scenario = kFullerN1Scenario) {
    auto spec = ParseScenario(scenario, "fixed.yaml");
    EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().Format());
    if (spec.ok()) spec_ = std::move(*spec);
  }
  void Use(ScenarioSpec spec) { spec_ = std::move(spec); }
  Result<Cluster> Snapshot(TimeNs now) override {
    std::this_thread::sleep_for(snapshot_delay);
    return SimulatedCluster(spec_).Snapshot(now);
  }
  void Apply(const SessionResult& result) override {
    std::lock_guard<std::mutex> lock(mu);
    applied.push_back(result);
    ++applied_count;
  }
  ClusterSpec Spec(TimeNs) const { return spec_.cluster; }

  std::chrono::milliseconds snapshot_delay{0};
  std::mutex mu;
  std::vector<SessionResult> applied;  // under mu
  std::atomic<int> applied_count{0};

 private:
  ScenarioSpec spec_;
};

// Polls `done` every 5 ms until it holds (true) or `timeout` passes (false). Generous by default:
// loads compile real policies, and CI runs tests side by side on few cores.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout = 60s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace kiln::server::fixtures
