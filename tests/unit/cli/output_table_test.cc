// The readable table `kiln simulate` prints (cli/output_table.cc): the facts a reader of
// scripts/demo needs beyond the JSON contract — which pipelined pods evicted others, and the
// PodGroup condition the session just set.
#include <gtest/gtest.h>

#include <string>

#include "cli/output_format.h"
#include "runtime/quantity.h"
#include "simulator/simulator.h"

namespace kiln {
namespace {

SessionResult DemoSession() {
  SessionResult s;
  s.index = 0;
  s.time = *ParseTimestamp("2025-03-03T09:00:00Z");
  s.binds = {{"monitoring/node-exporter", "cpu-1"}};
  s.bind_order = {"monitoring/node-exporter"};
  s.pipelined = {{"prod/llama-finetune-master-0", "gpu-0"}, {"research/bert-large-worker-0", "gpu-1"}};
  s.nominated = {{"prod/llama-finetune-master-0", "gpu-0"}};
  s.evictions = {"prod/embeddings-batch-3"};
  s.pod_group_phases = {{"monitoring/podgroup-monitoring-node-exporter", "Inqueue"},
                        {"research/llm-70b", "Inqueue"},
                        {"research/old", "Pending"}};
  PodGroupCondition now;
  now.type = "Unschedulable";
  now.status = "True";
  now.reason = "NotEnoughResources";
  now.message =
      "2/3 tasks in gang unschedulable: pod group is not ready, 2 minAvailable, 3 Pending; Pending: 3 "
      "Unschedulable. Origin reason is llm-70b-worker-0: 0/6 nodes are available: 4 Insufficient "
      "nvidia.com/gpu.";
  now.last_transition_time = s.time;
  PodGroupCondition earlier = now;
  earlier.message = "from an earlier session";
  earlier.last_transition_time = s.time - 1'000'000'000;
  s.conditions = {{"research/llm-70b", {now}}, {"research/old", {earlier}}};
  s.unschedulable = {{"research/llm-70b-worker-0", "0/6 nodes are available: 4 Insufficient nvidia.com/gpu."}};
  s.duration_micros = 7;
  return s;
}

// The table of DemoSession, and what a test expects to find in it.
class OutputTableTest : public ::testing::Test {
 protected:
  void ExpectLine(const std::string& text) {
    EXPECT_NE(table.find(text), std::string::npos) << table;
  }

  std::string table = cli::FormatTable(SimulationResult{"demo", {DemoSession()}});
};

TEST_F(OutputTableTest, SummaryLineCountsEveryKindOfDecision) {
  ExpectLine("session 0 at 2025-03-03T09:00:00Z (7 µs): 1 bound, 2 pipelined, 1 evicted, "
             "1 unschedulable\n");
}

TEST_F(OutputTableTest, ColumnsFitTheLongestName) {
  // The longest key (44 characters) sets the column: phases line up with it, one space after.
  ExpectLine("    monitoring/podgroup-monitoring-node-exporter Inqueue\n");
  ExpectLine("    research/llm-70b                             Inqueue\n");
  ExpectLine("    monitoring/node-exporter                     -> cpu-1\n");
}

TEST_F(OutputTableTest, PipelinedPodsThatEvictedOthersAreMarked) {
  ExpectLine("prod/llama-finetune-master-0                 -> gpu-0  (nominated after "
             "evictions)\n");
  ExpectLine("research/bert-large-worker-0                 -> gpu-1\n");
}

TEST_F(OutputTableTest, ShowsOnlyTheConditionsThisSessionSet) {
  // The origin reason is left out: it is the first pod's reason, already listed.
  ExpectLine("research/llm-70b                             Inqueue\n      2/3 tasks in "
             "gang unschedulable: pod group is not ready, 2 minAvailable, 3 Pending; "
             "Pending: 3 Unschedulable\n");
  EXPECT_EQ(table.find("from an earlier session"), std::string::npos) << table;
}

}  // namespace
}  // namespace kiln
