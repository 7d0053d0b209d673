#include "runtime/actions/helpers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>

#include "runtime/session.h"

namespace kiln::actions {

int NumNodesToFind(int num_all_nodes, int percentage, int min_nodes, int min_percentage) {
  if (num_all_nodes <= min_nodes || percentage >= 100) return num_all_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) {
    constexpr int kBaselinePercentage = 50;
    adaptive = std::max(kBaselinePercentage - num_all_nodes / 125, min_percentage);
  }
  int n = static_cast<int>(static_cast<int64_t>(num_all_nodes) * adaptive / 100);
  return std::max(n, min_nodes);
}

PredicateResult PredicateHelper::PredicateNodes(const Task* t, std::span<Node* const> nodes,
                                                const NodePredicate& fn, bool enable_error_cache,
                                                const Resource* future_idle_request) {
  PredicateResult out;
  const size_t n = nodes.size();
  if (n == 0) {
    out.errors.SetTotalNodes(0);
    return out;
  }
  const size_t want = static_cast<size_t>(NumNodesToFind(static_cast<int>(n)));
  out.nodes.reserve(std::min(want, n));

  const bool use_cache = enable_error_cache && !t->role.empty();
  std::string group;
  const std::unordered_map<int64_t, NodeRejection>* cached = nullptr;
  if (use_cache) {
    group = t->job_uid + "/" + t->role;
    if (auto it = error_cache_.find(group); it != error_cache_.end()) cached = &it->second;
  }

  // Each node's verdict lands in its own slot; the slots are then read in rotated order, so the
  // feasible set is the same whichever worker finished first. The buffers outlive the call: a
  // search over 10k nodes would otherwise map and fault in megabytes per task.
  struct Slot {
    bool rejected = false;
    bool from_cache = false;
    NodeRejection rejection;
  };
  struct Scratch {
    std::vector<Slot> slots;
    std::vector<Node*> rejected_nodes;
    std::vector<NodeRejection> rejections;
  };
  thread_local Scratch scratch;
  std::vector<Slot>& slots = scratch.slots;
  std::vector<Node*>& rejected_nodes = scratch.rejected_nodes;
  std::vector<NodeRejection>& rejections = scratch.rejections;
  rejected_nodes.clear();
  rejections.clear();
  std::vector<std::pair<int64_t, NodeRejection>> new_cache_entries;
  const size_t start = *rotation_ % n;
  size_t processed = 0;
  // Evaluating a little past the target wastes little and keeps every worker busy.
  const size_t min_block = static_cast<size_t>(pool_->size()) * 32;
  while (processed < n && out.nodes.size() < want) {
    size_t block = std::min(n - processed, std::max(want - out.nodes.size(), min_block));
    // Slots are reused across blocks and tasks: each is reset where it is written, instead of
    // destroying and value-initialising a few hundred ~100-byte slots per block.
    if (slots.size() < block) slots.resize(block);
    pool_->ParallelFor(block, [&](size_t i) {
      const Node* node = nodes[(start + processed + i) % n];
      Slot& slot = slots[i];
      slot.rejected = false;
      slot.from_cache = false;
      slot.rejection.insufficient = -1;
      if (slot.rejection.error) slot.rejection.error.reset();
      if (cached) {
        if (auto it = cached->find(node->index); it != cached->end()) {
          slot.rejected = true;
          slot.from_cache = true;
          slot.rejection = it->second;
          if (slot.rejection.error) slot.rejection.error->task_uid = t->uid;
          return;
        }
      }
      if (future_idle_request) {
        ResourceIdList insufficient;
        if (!FitsFutureIdle(*future_idle_request, node, &insufficient)) {
          slot.rejected = true;
          slot.rejection.insufficient = insufficient.empty() ? kCpu : insufficient.ids[0];
          return;
        }
      }
      slot.rejection.error = fn(t, node);
      slot.rejected = slot.rejection.error.has_value();
    });
    size_t consumed = block;
    for (size_t i = 0; i < block; ++i) {
      Node* node = nodes[(start + processed + i) % n];
      Slot& slot = slots[i];
      if (!slot.rejected) {
        out.nodes.push_back(node);
        if (out.nodes.size() == want) {
          consumed = i + 1;
          break;
        }
        continue;
      }
      if (use_cache && !slot.from_cache)
        new_cache_entries.emplace_back(node->index, slot.rejection);
      rejected_nodes.push_back(node);
      rejections.push_back(std::move(slot.rejection));
    }
    processed += consumed;
  }
  *rotation_ = (start + processed) % n;

  if (!new_cache_entries.empty()) {
    auto& node_errors = error_cache_[group];
    for (auto& [index, r] : new_cache_entries) node_errors.emplace(index, std::move(r));
  }
  if (out.nodes.empty())
    out.errors = BuildFitErrors(t, rejected_nodes, rejections, static_cast<int>(n));
  return out;
}

FitErrors BuildFitErrors(const Task* t, std::span<Node* const> examined,
                         std::span<NodeRejection> rejections, int total_nodes) {
  FitErrors errors;
  errors.SetTotalNodes(total_nodes);
  bool compact = true;
  for (const NodeRejection& r : rejections)
    if (r.error) compact = false;
  if (compact && !rejections.empty()) {
    // Same text as FitErrors::Message: reasons by count descending, then by text.
    std::array<int, kMaxResources> counts{};
    for (const NodeRejection& r : rejections) ++counts[r.insufficient];
    std::vector<std::pair<int, std::string>> parts;
    for (int id = 0; id < kMaxResources; ++id)
      if (counts[id] > 0)
        parts.emplace_back(
            counts[id],
            fmt::format("Insufficient {}", ResourceNames::Name(static_cast<ResourceId>(id))));
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    std::string message = fmt::format("0/{} nodes are available: ", total_nodes);
    for (size_t i = 0; i < parts.size(); ++i)
      message += fmt::format("{}{} {}", i ? ", " : "", parts[i].first, parts[i].second);
    message += ".";
    errors.SetError(std::move(message));
    return errors;
  }
  for (size_t i = 0; i < rejections.size(); ++i) {
    NodeRejection& r = rejections[i];
    if (r.error) {
      errors.Add(std::move(*r.error));
    } else {
      errors.Add(
          FitError(t->uid, examined[i]->name, StatusCode::Unschedulable,
                   fmt::format("Insufficient {}",
                               ResourceNames::Name(static_cast<ResourceId>(r.insufficient)))));
    }
  }
  return errors;
}

std::optional<std::vector<double>> PrioritizeNodes(const Session& ssn, const Task* t,
                                                   std::span<Node* const> nodes, ThreadPool& pool) {
  std::vector<double> scores(nodes.size(), 0.0);
  pool.ParallelFor(nodes.size(), [&](size_t i) {
    Result<double> s = ssn.NodeOrderFn(t, nodes[i]);
    if (s.ok()) {
      scores[i] = *s;
    } else {
      spdlog::debug("node order for task {} on node {} failed: {}", t->Key(), nodes[i]->name,
                    s.error().message);
    }
  });
  std::vector<double> batch;
  Status st = ssn.BatchNodeOrderFn(t, nodes, batch);
  if (!st.ok()) {
    spdlog::debug("batch node order for task {} failed: {}", t->Key(), st.error().message);
    return std::nullopt;
  }
  for (size_t i = 0; i < batch.size() && i < scores.size(); ++i) scores[i] += batch[i];
  return scores;
}

Node* SelectBestNode(std::span<Node* const> nodes, std::span<const double> scores) {
  Node* best = nullptr;
  double max_score = -1.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (scores[i] > max_score ||
        (best != nullptr && scores[i] == max_score && nodes[i]->index < best->index)) {
      max_score = scores[i];
      best = nodes[i];
    }
  }
  return best;
}

Node* BestScoredNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                     ThreadPool& pool) {
  // Nobody scores and nobody picks: every score is 0, and SelectBestNode's tie-break (the lowest
  // node index) decides alone.
  if (!ssn.HasHandlers(ExtensionPoint::NodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BatchNodeOrder) &&
      !ssn.HasHandlers(ExtensionPoint::BestNode) && !nodes.empty()) {
    return *std::min_element(nodes.begin(), nodes.end(),
                             [](const Node* a, const Node* b) { return a->index < b->index; });
  }
  auto scores = PrioritizeNodes(ssn, t, nodes, pool);
  if (!scores) return nullptr;
  if (Node* n = ssn.BestNodeFn(t, nodes, *scores)) return n;
  return SelectBestNode(nodes, *scores);
}

Node* BestIdleThenFutureIdleNode(const Session& ssn, const Task* t, std::span<Node* const> nodes,
                                 ThreadPool& pool) {
  std::vector<Node*> idle_fit;
  std::vector<Node*> future_fit;
  idle_fit.reserve(nodes.size());
  for (Node* n : nodes) {
    if (t->init_resreq.LessEqual(n->idle, DimensionDefault::Zero)) {
      idle_fit.push_back(n);
    } else if (FitsFutureIdle(t->init_resreq, n)) {
      future_fit.push_back(n);
    }
  }
  for (const auto* group : {&idle_fit, &future_fit}) {
    Node* best = nullptr;
    if (group->size() == 1) {
      best = group->front();
    } else if (group->size() > 1) {
      best = BestScoredNode(ssn, t, *group, pool);
    }
    if (best != nullptr) return best;
  }
  return nullptr;
}

std::vector<Node*> SortNodesByScore(std::span<Node* const> nodes, std::span<const double> scores) {
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return nodes[a]->index < nodes[b]->index;
  });
  std::vector<Node*> out;
  out.reserve(order.size());
  for (size_t i : order) out.push_back(nodes[i]);
  return out;
}

bool ValidateVictims(const Task* preemptor, const Node* node, std::span<Task* const> victims) {
  Resource future_idle = node->FutureIdle();
  for (const Task* v : victims) future_idle.Add(v->resreq);
  return preemptor->init_resreq.LessEqual(future_idle, DimensionDefault::Zero);
}

PriorityQueue<Task*> BuildVictimsPriorityQueue(const Session& ssn, std::span<Task* const> victims,
                                               const Task* preemptor) {
  PriorityQueue<Task*> queue([&ssn, preemptor](Task* const& l, Task* const& r) {
    if (l->job == r->job) return !ssn.TaskLess(l, r);
    if (l->job == nullptr) return true;
    if (r->job == nullptr) return false;
    const Job* pj = preemptor->job;
    if (pj == nullptr || l->job->queue == r->job->queue) {
      if (int c = ssn.JobCompareFn(l->job, r->job); c != 0) return c > 0;
      return !ssn.TaskLess(l, r);
    }
    return ssn.VictimQueueOrderFn(l->job->queue, r->job->queue, pj->queue) < 0;
  });
  for (Task* v : victims) queue.Push(v);
  return queue;
}

void UnPipelineTask(Session& ssn, Task* t) {
  ssn.UnplaceTask(t);
  Status st = ssn.UpdateTaskStatus(t, TaskStatus::Pending);
  if (!st.ok()) spdlog::error("un-pipelining task {}: {}", t->Key(), st.error().message);
  ssn.FireDeallocate(t);
  t->node_name.clear();
}

bool FitsFutureIdle(const Resource& req, const Node* node, ResourceIdList* insufficient) {
  // Node::FutureIdle = Idle + Releasing − Pipelined, where Resource::Sub leaves the scalars alone
  // when the left side has none (Volcano's Sub on a nil scalar map): node->fit_future holds it.
  auto future = [&](ResourceId id) { return node->fit_future[id]; };
  bool ok = true;
  auto check = [&](ResourceId id) {
    double l = req.values[id];
    double r = future(id);
    if (l < r || std::abs(l - r) < kMinResource) return;
    ok = false;
    if (insufficient) insufficient->Push(id);
  };
  check(kCpu);
  if (!ok && !insufficient) return false;
  check(kMemory);
  if (!ok && !insufficient) return false;
  ForEachBit(req.scalar_mask(), [&](ResourceId id) {
    if (ok || insufficient) check(id);
  });
  return ok;
}

std::span<Node* const> NodesWithoutUnresolvable(const Session& ssn, const Task* t,
                                                std::vector<Node*>& storage) {
  const std::vector<Node*>& all = ssn.cluster().nodes();
  const FitErrors* recorded = nullptr;
  if (t->job != nullptr) {
    auto it = t->job->nodes_fit_errors.find(t->index);
    if (it != t->job->nodes_fit_errors.end()) recorded = &it->second;
  }
  if (recorded == nullptr) return all;
  // One name lookup per recorded rejection, not one per (task, node).
  std::vector<int64_t> unresolvable;
  for (const FitError& e : recorded->errors()) {
    if (!e.Contains(StatusCode::UnschedulableAndUnresolvable)) continue;
    const Node* n = ssn.cluster().FindNode(e.node_name);
    if (n != nullptr && n->index >= 0 && static_cast<size_t>(n->index) < all.size())
      unresolvable.push_back(n->index);
  }
  if (unresolvable.empty()) return all;
  std::vector<char> drop(all.size(), 0);
  for (int64_t i : unresolvable) drop[i] = 1;
  storage.clear();
  storage.reserve(all.size());
  for (Node* n : all)
    if (n->index < 0 || static_cast<size_t>(n->index) >= drop.size() || !drop[n->index])
      storage.push_back(n);
  return storage;
}

FitErrors SameErrorOnAllNodes(const Task* t, std::span<Node* const> nodes,
                              const PluginStatus& status) {
  FitErrors errors;
  errors.SetTotalNodes(static_cast<int>(nodes.size()));
  for (const Node* n : nodes) {
    FitError e;
    e.task_uid = t->uid;
    e.node_name = n->name;
    e.statuses.push_back(status);
    errors.Add(std::move(e));
  }
  return errors;
}

}  // namespace kiln::actions
