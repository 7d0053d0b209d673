// The session's mutation primitives (volcano-semantics.md §2.4): task status changes, placing and
// unplacing tasks on nodes (keeping HyperNodes' used sums current), bind and evict dispatch, and
// the PodGroup conditions, fit errors and pod annotations a session records.

#include <cassert>

#include "runtime/hyper_node.h"
#include "runtime/invariants.h"
#include "runtime/session.h"
#include "runtime/session_dispatch.h"

namespace kiln {

namespace {

// Runs `change` (which moves tasks on or off node `n`) and tells the HyperNodes holding `n` how
// its used and pipelined resources moved, so that their `used` sums stay current
// (runtime/hyper_node.h: HyperNodeTree::NoteNodeUsage).
template <class Change>
Status ChangeNode(HyperNodeTree* tree, Node& n, Change&& change) {
  if (tree == nullptr || !tree->KeepsUsage(n)) return change();
  const Resource old_used = n.used, old_pipelined = n.pipelined;
  Status s = change();
  tree->NoteNodeUsage(n, old_used, old_pipelined);
  return s;
}

}  // namespace

Status Session::UpdateTaskStatus(Task* t, TaskStatus status) {
  if (t->job == nullptr)
    return Error{fmt::format("task {} has no job in this session", t->uid), {}};
  ++mutation_seq_;
  t->job->UpdateTaskStatus(t, status);
  if (Node* n = t->node)
    return ChangeNode(cluster_.hyper_nodes(), *n, [&] { return n->UpdateTask(t); });
  return Status::Ok();
}

Status Session::PlaceTask(Task* t, Node* n) {
  ++mutation_seq_;
  t->node_name = n->name;
  return ChangeNode(cluster_.hyper_nodes(), *n, [&] { return n->AddTask(t); });
}

void Session::UnplaceTask(Task* t) {
  ++mutation_seq_;
  if (Node* n = t->node)
    (void)ChangeNode(cluster_.hyper_nodes(), *n, [&] {
      n->RemoveTask(t);
      return Status::Ok();
    });
  t->node_name.clear();
}

void Session::FireAllocate(Task* t) { CombineCallAll<ExtensionPoint::OnAllocate>(t); }

void Session::FireDeallocate(Task* t) { CombineCallAll<ExtensionPoint::OnDeallocate>(t); }

Status Session::DispatchBind(Task* t) {
  if (t->node == nullptr)
    return Error{fmt::format("task {} cannot be bound: it is not on a node", t->uid), {}};
#ifndef NDEBUG
  for (const auto& b : decisions_.binds) assert(b.task != t && "a pod is never bound twice");
#endif
  decisions_.binds.push_back(Decisions::Placement{t, t->node});
  ++mutation_seq_;
  t->job->UpdateTaskStatus(t, TaskStatus::Binding);
  return Status::Ok();
}

Status Session::DispatchEvict(Task* t, std::string_view reason) {
  decisions_.evictions.push_back(Decisions::Eviction{t, std::string(reason)});
  return Status::Ok();
}

Status Session::Allocate(Task* t, Node* n) {
  if (Status s = UpdateTaskStatus(t, TaskStatus::Allocated); !s.ok()) return s;
  if (Status s = PlaceTask(t, n); !s.ok()) return s;
  FireAllocate(t);
  Job* j = t->job;
  if (JobReady(j)) {
    // Copy: dispatching moves tasks out of the Allocated list.
    std::vector<Task*> allocated = j->TasksWith(TaskStatus::Allocated);
    for (Task* a : allocated)
      if (Status s = DispatchBind(a); !s.ok()) return s;
  }
  return Status::Ok();
}

Status Session::Pipeline(Task* t, Node* n) {
  if (Status s = UpdateTaskStatus(t, TaskStatus::Pipelined); !s.ok()) return s;
  if (Status s = PlaceTask(t, n); !s.ok()) return s;
  FireAllocate(t);
  return Status::Ok();
}

Status Session::Evict(Task* t, std::string_view reason) {
  if (Status s = DispatchEvict(t, reason); !s.ok()) return s;
  if (Status s = UpdateTaskStatus(t, TaskStatus::Releasing); !s.ok()) return s;
  FireDeallocate(t);
  return Status::Ok();
}

void Session::UpdatePodGroupCondition(Job* j, PodGroupCondition c) { j->SetCondition(std::move(c)); }

void Session::SetJobFitError(Job* j, std::string message) { j->job_fit_error = std::move(message); }

void Session::SetPodAnnotation(const Task* t, std::string key, std::string value) {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  pod_annotations_[t][std::move(key)] = std::move(value);
}

void Session::RemovePodAnnotation(const Task* t, const std::string& key) {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  auto it = pod_annotations_.find(t);
  if (it == pod_annotations_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) pod_annotations_.erase(it);
}

std::map<const Task*, StringMap> Session::pod_annotations() const {
  std::lock_guard<std::mutex> lock(pod_annotations_mu_);
  return pod_annotations_;
}

void Session::RecordFitErrors(Task* t, FitErrors errors) {
  if (t->job == nullptr) return;
  t->job->nodes_fit_errors[t->index] = std::move(errors);
}

bool Session::NodeUnresolvableFor(const Task* t, const Node* n) const {
  if (t->job == nullptr) return false;
  auto it = t->job->nodes_fit_errors.find(t->index);
  return it != t->job->nodes_fit_errors.end() && it->second.HasUnresolvable(n->name);
}

}  // namespace kiln
