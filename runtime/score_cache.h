#pragma once
// Cached node_order scores for handlers the compiler proves pure (compiler/passes/
// analyze_score_cache.cc): their score is a function of a few task fields (the task's "shape")
// and of the node, so between two tasks of the same shape only the nodes that changed since the
// first was scored need their handler called again.
//
// Who uses what:
//  * kScoreKeyFields is the one list of task fields a cacheable handler may read: the compiler
//    rejects (marks not cacheable) a handler reading any other task field, and the runtime keys
//    shapes on exactly these. They never change during a session.
//  * Node::version (runtime/model.h) is bumped by every mutation of a node a scorer could see;
//    an entry remembers the version it was computed at.
//  * Session keeps one ScoreCache per cacheable node_order registration and looks it up in both
//    scoring paths (NodeOrderFn and NodeOrderSpeculative), so they agree. When the first two or
//    more registrations are all cacheable, one ScoreCache holds their sum instead, keyed on the
//    union of their fields: one lookup per node for all of them (Session::BuildScoreSumCache).
//
// Threads: a search scores its nodes on the pool's threads, each node on one thread, and nodes
// never change while a search runs; an entry is still a small seqlock so that a concurrent
// reader can never pair one write's version with another's score.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/model.h"

namespace kiln {

// A task field a cacheable node_order handler may read, as the policy language spells it.
enum class ScoreKeyField : uint8_t {
  Resreq, InitResreq, Images, Namespace, Labels, NodeSelector, BestEffort,
};
struct ScoreKeyFieldInfo {
  std::string_view name;  // "resreq"
  ScoreKeyField field;
};
std::span<const ScoreKeyFieldInfo> ScoreKeyFields();
const ScoreKeyFieldInfo* FindScoreKeyField(std::string_view name);
// Appends an unambiguous encoding of t's field to `key`.
void AppendScoreKey(std::string& key, const Task& t, ScoreKeyField field);

// Lookups and hits of one thread, written only by it (relaxed load + store, no shared line) and
// summed by GetScoreCacheStats.
struct ScoreCacheCounters {
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> hits{0};
};

// The three below are read at every lookup (~100M in a 10k-node session), so they are inline.
namespace detail {
// KILN_SCORE_CACHE=0 (read once at start, score_cache.cc) or SetScoreCacheEnabled.
inline constinit std::atomic<bool> g_score_cache_on{true};
inline constinit std::atomic<uint32_t> g_score_cache_epoch{1};
// This thread's counters, made and registered at its first lookup.
inline constinit thread_local ScoreCacheCounters* t_score_cache_counters = nullptr;
ScoreCacheCounters& RegisterScoreCacheCounters();
}  // namespace detail

// Whether the cache is used (process-wide; KILN_SCORE_CACHE=0 turns it off at start). Read at
// every lookup, so a benchmark may toggle it between searches.
inline bool ScoreCacheEnabled() { return detail::g_score_cache_on.load(std::memory_order_relaxed); }
void SetScoreCacheEnabled(bool on);
// 0 while the cache is off; otherwise the generation of the settings a score depends on besides
// its inputs: a call's loop and memory budgets decide whether it faults, so changing either
// (SetPolicyCallIterationBudget, SetPolicyCallMemoryBudget) starts a new generation and every
// score cached before it stops matching.
inline uint32_t ScoreCacheEpoch() {
  return ScoreCacheEnabled() ? detail::g_score_cache_epoch.load(std::memory_order_relaxed) : 0;
}
void InvalidateCachedScores();

// Lookups and hits since the process started, over every session (hits / lookups is the hit
// rate; a lookup that cannot be cached — too many shapes — counts as a lookup, not a hit).
struct ScoreCacheStats {
  uint64_t lookups = 0;
  uint64_t hits = 0;
};
ScoreCacheStats GetScoreCacheStats();
// Counts one lookup on this thread (no shared cache line is written).
inline void CountScoreCacheLookup(bool hit) {
  ScoreCacheCounters* c = detail::t_score_cache_counters;
  if (c == nullptr) [[unlikely]] c = &detail::RegisterScoreCacheCounters();
  c->lookups.store(c->lookups.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (hit) c->hits.store(c->hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// One session's cached scores of one node_order registration.
class ScoreCache {
 public:
  // What an entry is valid for: the epoch (ScoreCacheEpoch) and the node's version when the
  // score was stored. Never 0, which marks an empty entry.
  static uint64_t Tag(uint32_t epoch, uint32_t version) {
    return (uint64_t{epoch} << 33) | (uint64_t{version} + 1);
  }

  // A (shape, node) entry.
  class Entry {
   public:
    bool Get(uint64_t tag, double* score) const {
      if (tag_.load(std::memory_order_acquire) != tag) return false;
      double s = score_.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (tag_.load(std::memory_order_relaxed) != tag) return false;
      *score = s;
      return true;
    }
    void Put(uint64_t tag, double score) {
      tag_.store(0, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      score_.store(score, std::memory_order_relaxed);
      tag_.store(tag, std::memory_order_release);
    }

   private:
    std::atomic<uint64_t> tag_{0};
    std::atomic<double> score_{0};
  };

  // `fields`: what the handler reads of the task. Shapes beyond `max_shapes` are not cached
  // (their calls go to the handler): memory is at most max_shapes × nodes × 16 bytes, plus four
  // bytes per task.
  ScoreCache(std::vector<ScoreKeyField> fields, size_t tasks, size_t nodes, size_t max_shapes);

  // The entry for (t's shape, n), or nullptr when the pair cannot be cached (an object outside
  // the session's cluster, or one shape too many).
  // Asks for the line of Find(t, n)'s entry, if t's shape is known by now (a task's first lookup
  // learns it): allocate's search does, once n passes the resource check, so that the entry
  // arrives while the rest of the node's window is checked.
  void Prefetch(const Task* t, const Node* n) const {
    if (t->index < 0 || static_cast<size_t>(t->index) >= tasks_ || n->index < 0 ||
        static_cast<size_t>(n->index) >= nodes_)
      return;
    uint32_t s = task_shape_[static_cast<size_t>(t->index)].load(std::memory_order_relaxed);
    if (s == kUnknown || s == kUncached) return;
    __builtin_prefetch(&shapes_[s][static_cast<size_t>(n->index)]);
  }
  Entry* Find(const Task* t, const Node* n) {
    if (t->index < 0 || static_cast<size_t>(t->index) >= tasks_ || n->index < 0 ||
        static_cast<size_t>(n->index) >= nodes_)
      return nullptr;
    uint32_t s = task_shape_[static_cast<size_t>(t->index)].load(std::memory_order_acquire);
    if (s == kUnknown) s = Intern(t);
    if (s == kUncached) return nullptr;
    return &shapes_[s][static_cast<size_t>(n->index)];
  }

  size_t shape_count() const;
  // The task fields a shape is made of, in the order the key encodes them.
  const std::vector<ScoreKeyField>& fields() const { return fields_; }

  // How many shapes a cache over `nodes` nodes may hold: a bounded budget of memory per cache.
  static size_t MaxShapesFor(size_t nodes);

 private:
  static constexpr uint32_t kUnknown = UINT32_MAX;
  static constexpr uint32_t kUncached = UINT32_MAX - 1;
  uint32_t Intern(const Task* t);

  std::vector<ScoreKeyField> fields_;
  size_t tasks_, nodes_, max_shapes_;
  std::unique_ptr<std::atomic<uint32_t>[]> task_shape_;  // per task index
  // shapes_[id] is written under mu_ before any task's shape is published as id.
  std::unique_ptr<std::unique_ptr<Entry[]>[]> shapes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace kiln
