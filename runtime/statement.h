#pragma once
// Volcano's framework.Statement (volcano-semantics.md §2.5): a transaction over the session.
// Evict / Pipeline / Allocate change the session immediately and are recorded; Commit sends them
// to the cache in order (evict → evict, pipeline → nothing, allocate → bind); Discard undoes them
// in reverse order, firing the event handlers as Volcano does. In debug builds Discard asserts
// that every touched node's idle/used/releasing/pipelined and every touched job's counters are
// exactly what they were before the operations; with invariant checking on (runtime/invariants.h)
// any build compares the whole session.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/status.h"

namespace kiln {

class Session;

class Statement {
 public:
  enum class Op : uint8_t { Evict, Pipeline, Allocate };
  struct Operation {
    Op op;
    Task* task;
    Node* node;          // Pipeline/Allocate: the target node; Evict: the victim's node
    std::string reason;  // Evict
  };

  explicit Statement(Session& ssn) : ssn_(&ssn) {}
  Statement(Statement&&) = default;
  Statement& operator=(Statement&&) = default;

  // Victim → Releasing (node.UpdateTask), DeallocateFunc; recorded.
  Status Evict(Task* reclaimee, std::string reason);
  // → Pipelined on node (node.pipelined += resreq), AllocateFunc; on error rolled back.
  Status Pipeline(Task* task, Node* node, bool eviction_occurred);
  // → Allocated on node (idle −= resreq, used += resreq), AllocateFunc; on error rolled back.
  Status Allocate(Task* task, Node* node);

  void Commit();
  void Discard();
  // Moves other's operations to the end of this statement.
  void Merge(Statement& other);

  const std::vector<Operation>& operations() const { return ops_; }
  bool empty() const { return ops_.empty(); }

 private:
  void UnEvict(Task* t);
  void UnPipeline(Task* t);
  void UnAllocate(Task* t);
  // Records the state of the task's job and of the nodes before the first operation touching
  // them, so a debug build can check that Discard restores them exactly.
  void Capture(Task* t, Node* target);
  void CheckRestored() const;

  struct NodeSnapshot {
    Node* node;
    Resource idle, used, releasing, pipelined;
    size_t tasks;
  };
  struct JobSnapshot {
    Job* job;
    std::array<size_t, kTaskStatusCount> counts;
    Resource allocated;
    int64_t pending_best_effort;
  };

  Session* ssn_;
  std::vector<Operation> ops_;
  std::vector<NodeSnapshot> node_snapshots_;
  std::vector<JobSnapshot> job_snapshots_;
  uint64_t first_seq_ = 0;        // session mutation counter before this statement's first op
  uint64_t own_mutations_ = 0;    // mutations made by this statement's ops (merged ones too)
  // With invariant checking on (runtime/invariants.h): the whole session as it was before the
  // first operation, compared again after a discard.
  std::string full_snapshot_;
};

}  // namespace kiln
