// libFuzzer target for the whole compiler: a policy that passes the front end is lowered,
// optimised and JIT-compiled, then every handler it serves runs in a small fixed session (two
// nodes, a gang of three tasks, one running pod), under the run-time loop and memory budgets.
// Faults are expected outcomes (they are contained and counted); a crash, a sanitizer report or
// a hang past libFuzzer's -timeout is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include "compiler/frontend.h"
#include "compiler/host/compiled_policy_provider.h"
#include "simulator/scenario.h"
#include "runtime/session.h"
#include "simulator/simulator.h"

namespace {

constexpr const char* kConf = R"(actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: {}
  - name: priority
)";

constexpr const char* kScenario = R"(name: fuzz
cluster:
  queues:
  - {name: default, weight: 1}
  nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi}}
  - {name: n2, allocatable: {cpu: "2", memory: 4Gi}}
  podGroups:
  - {name: g, namespace: c1, minMember: 2, phase: Inqueue}
  - {name: r, namespace: c1, minMember: 1, phase: Running}
  pods:
  - {name: g-0, namespace: c1, group: g, requests: {cpu: "1"}}
  - {name: g-1, namespace: c1, group: g, requests: {cpu: "1"}}
  - {name: g-2, namespace: c1, group: g, requests: {cpu: "3"}}
  - {name: r-0, namespace: c1, group: r, requests: {cpu: "1"}, phase: Running, node: n2}
)";

std::filesystem::path Dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("kiln_jit_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

// KILN_FUZZ_ENTRY renames the entry point when the replay binary links every target.
#ifndef KILN_FUZZ_ENTRY
#define KILN_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
extern "C" int KILN_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  kiln::SetPolicyCallIterationBudget(1'000'000);
  kiln::SourceFile source{"fuzzed.policy", std::string(reinterpret_cast<const char*>(data), size)};
  // Only what checks is compiled: the front end target covers the rest.
  kiln::FrontendResult fe = kiln::RunFrontend(source);
  if (!fe.ok()) return 0;
  // The plugin is named after the policy (`policy gang;` → gang.policy, plugin `gang`, replacing
  // the built-in of that name); a name that is no plain file name is skipped.
  const std::string& name = fe.policy->name;
  if (name.empty() || name.size() > 64 || name == "priority" ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
    return 0;
  std::filesystem::remove_all(Dir());
  std::filesystem::create_directories(Dir());
  std::ofstream(Dir() / (name + ".policy"), std::ios::binary) << source.text;
  auto spec = kiln::ParseScenario(kScenario, "fuzz.yaml");
  if (!spec.ok()) __builtin_trap();
  auto conf = kiln::ParseSchedulerConf(fmt::format(kConf, name), "scheduler.conf");
  if (!conf.ok()) return 0;
  auto provider = kiln::MakeCompiledPolicyProvider(
      kiln::CompiledPolicyOptions{{Dir().string()}, /*allow_builtin_override=*/true});
  if (!provider.ok()) return 0;
  // A policy named like a built-in, or one that does not serve this conf, is refused: fine.
  auto sim = kiln::Simulator::Create(*spec, *conf, **provider);
  if (!sim.ok()) return 0;
  (void)(*sim)->Run();
  return 0;
}

