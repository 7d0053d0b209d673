#pragma once
// Why a task does not fit a node (Volcano's api.FitError / FitErrors, §2 status codes), and the
// Kubernetes-style aggregate message:
//   "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}."

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class StatusCode : int32_t {
  Success = 0,
  Error = 1,
  Unschedulable = 2,
  UnschedulableAndUnresolvable = 3,
  Wait = 4,
  Skip = 5,
};
std::string_view ToString(StatusCode c);

// A policy's Fit may carry several reasons (the language's combine); they travel joined by this
// character, which no reason text contains, and the session splits them into separate reasons.
inline constexpr char kFitReasonSeparator = '\x1f';

// One plugin's verdict on a (task, node) pair.
struct PluginStatus {
  StatusCode code = StatusCode::Success;
  std::vector<std::string> reasons;
  std::string plugin;  // who said it (empty for the actions' own resource check)
};

// Every rejection of one task on one node.
struct FitError {
  std::string task_uid;
  std::string node_name;
  std::vector<PluginStatus> statuses;

  FitError() = default;
  FitError(std::string task, std::string node, StatusCode code, std::string reason,
           std::string plugin = {});

  // All reasons of all statuses, in order.
  std::vector<std::string> Reasons() const;
  bool Contains(StatusCode c) const;
  // Volcano's PredicateForAllocateAction: fails on Unschedulable, Unresolvable, Error, Wait, Skip.
  bool FailsAllocate() const;
  // PredicateForPreemptAction: fails only on Unresolvable, Error, Wait, Skip (plain Unschedulable
  // passes so preemption may free the node).
  bool FailsPreempt() const;
  // "task <uid> on node <name> fit failed: reason1, reason2".
  std::string Message() const;
};

// All nodes' rejections of one task.
class FitErrors {
 public:
  // Total node count used in "0/N nodes are available" (Kubernetes counts every node considered).
  void SetTotalNodes(int n) { total_nodes_ = n; }
  void Add(FitError e) { errors_.push_back(std::move(e)); }
  // A task-level error that is not about one node ("pod group is not ready", "PrePredicate ...").
  void SetError(std::string message) { error_ = std::move(message); }
  // The HyperNode whose nodes were searched (a job with a network topology): the message then
  // starts "In hyperNode <name>: " (Volcano's FitErrors.SetHyperNode).
  void SetHyperNode(std::string name) { hyper_node_ = std::move(name); }

  const std::vector<FitError>& errors() const { return errors_; }
  const std::string& error() const { return error_; }
  bool empty() const { return errors_.empty() && error_.empty(); }
  // True when some node rejected the task with UnschedulableAndUnresolvable.
  bool HasUnresolvable(std::string_view node_name) const;

  // "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {k: v}."
  // Reasons counted per node, sorted by count descending then text. With only a task-level
  // error and no node errors, that error is returned as is.
  std::string Message() const;

 private:
  std::vector<FitError> errors_;
  std::string error_;
  int total_nodes_ = -1;  // -1: number of node errors
  std::string hyper_node_;
};

}  // namespace kiln
