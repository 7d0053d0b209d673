#pragma once
// Clusters that several runtime unit tests start from, built through the core API.

#include <string>

#include "tests/unit/core_test_util.h"

namespace kiln::testing {

// n1 (4 cpu) is empty; n2 (2 cpu) is full with job ns/victims: v-0 (1.5 cpu, Running) and v-1
// (0.5 cpu, Bound). Job ns/pending (minMember 2) waits with two 1-cpu tasks, p-0 and p-1. The
// queues must exist already.
inline void AddPendingAndVictims(ClusterBuilder& b, const std::string& pending_queue,
                                 const std::string& victims_queue) {
  b.AddNode("n1", Res(4000, 8192, {{"pods", 110}}));
  b.AddNode("n2", Res(2000, 4096, {{"pods", 110}}));
  Job& p = b.AddJob("ns", "pending", pending_queue, 2);
  b.AddTask(p, "p-0", Res(1000, 1024));
  b.AddTask(p, "p-1", Res(1000, 1024));
  Job& v = b.AddJob("ns", "victims", victims_queue, 1);
  b.AddTask(v, "v-0", Res(1500, 512), TaskStatus::Running, "n2");
  b.AddTask(v, "v-1", Res(500, 512), TaskStatus::Bound, "n2");
}

}  // namespace kiln::testing
