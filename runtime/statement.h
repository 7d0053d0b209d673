#pragma once
// Volcano's framework.Statement (volcano-semantics.md §2.5): a transaction over the session.
// Evict / Pipeline / Allocate change the session immediately and are recorded; Commit sends them
// to the cache in order (evict → evict, pipeline → nothing, allocate → bind); Discard undoes them
// in reverse order, firing the event handlers as Volcano does. In debug builds Discard asserts
// that every touched node's idle/used/releasing/pipelined and every touched job's counters are
// exactly what they were before the operations.

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

  Session* ssn_;
  std::vector<Operation> ops_;
};

}  // namespace kiln
