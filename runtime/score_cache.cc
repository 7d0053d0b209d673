#include "runtime/score_cache.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kiln {

namespace {

constexpr ScoreKeyFieldInfo kScoreKeyFields[] = {
    {"resreq", ScoreKeyField::Resreq},
    {"init_resreq", ScoreKeyField::InitResreq},
    {"images", ScoreKeyField::Images},
    {"namespace", ScoreKeyField::Namespace},
    {"labels", ScoreKeyField::Labels},
    {"node_selector", ScoreKeyField::NodeSelector},
    {"best_effort", ScoreKeyField::BestEffort},
};

void AppendBytes(std::string& key, const void* p, size_t n) {
  key.append(static_cast<const char*>(p), n);
}

// Length-prefixed, so that no two different values encode alike.
void AppendString(std::string& key, std::string_view s) {
  const uint64_t n = s.size();
  AppendBytes(key, &n, sizeof n);
  key.append(s);
}

void AppendResource(std::string& key, const Resource& r) {
  // Every value, present or not: equal encodings are equal Resources bit for bit.
  AppendBytes(key, &r.present, sizeof r.present);
  AppendBytes(key, r.values, sizeof r.values);
}

void AppendMap(std::string& key, const StringMap& m) {
  const uint64_t n = m.size();
  AppendBytes(key, &n, sizeof n);
  for (const auto& [k, v] : m) {
    AppendString(key, k);
    AppendString(key, v);
  }
}

// KILN_SCORE_CACHE=0 or off turns the cache off from the start. A lookup before this runs (none
// happens during static initialisation) would see the default, on.
[[maybe_unused]] const bool g_score_cache_env_read = [] {
  const char* env = std::getenv("KILN_SCORE_CACHE");
  if (env && (std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0))
    detail::g_score_cache_on.store(false, std::memory_order_relaxed);
  return true;
}();

// Every thread's counters, read by GetScoreCacheStats. They live as long as the process, since
// they are read after their thread exits.
std::mutex g_counters_mu;
std::vector<ScoreCacheCounters*>& AllCounters() {
  static auto* all = new std::vector<ScoreCacheCounters*>();
  return *all;
}

}  // namespace

std::span<const ScoreKeyFieldInfo> ScoreKeyFields() { return kScoreKeyFields; }

const ScoreKeyFieldInfo* FindScoreKeyField(std::string_view name) {
  for (const auto& f : kScoreKeyFields)
    if (f.name == name) return &f;
  return nullptr;
}

void AppendScoreKey(std::string& key, const Task& t, ScoreKeyField field) {
  key.push_back(static_cast<char>(field));
  switch (field) {
    case ScoreKeyField::Resreq: AppendResource(key, t.resreq()); break;
    case ScoreKeyField::InitResreq: AppendResource(key, t.init_resreq()); break;
    case ScoreKeyField::Images: {
      const uint64_t n = t.images().size();
      AppendBytes(key, &n, sizeof n);
      for (const std::string& image : t.images()) AppendString(key, image);
      break;
    }
    case ScoreKeyField::Namespace: AppendString(key, t.namespace_); break;
    case ScoreKeyField::Labels: AppendMap(key, t.labels()); break;
    case ScoreKeyField::NodeSelector: AppendMap(key, t.node_selector()); break;
    case ScoreKeyField::BestEffort: key.push_back(t.best_effort ? 1 : 0); break;
  }
}

void SetScoreCacheEnabled(bool on) { detail::g_score_cache_on.store(on, std::memory_order_relaxed); }

ScoreCacheCounters& detail::RegisterScoreCacheCounters() {
  auto* c = new ScoreCacheCounters();  // never freed: read after the thread exits
  {
    std::lock_guard<std::mutex> lock(g_counters_mu);
    AllCounters().push_back(c);
  }
  t_score_cache_counters = c;
  return *c;
}

void InvalidateCachedScores() {
  // Wraps after 2^31 changes of a budget (the tag keeps 31 bits of it): never, in practice;
  // 0 is skipped so that an enabled cache never answers epoch 0.
  uint32_t e = detail::g_score_cache_epoch.load(std::memory_order_relaxed);
  uint32_t next;
  do {
    next = (e + 1) & 0x7fffffffu;
    if (next == 0) next = 1;
  } while (!detail::g_score_cache_epoch.compare_exchange_weak(e, next, std::memory_order_relaxed));
}

ScoreCacheStats GetScoreCacheStats() {
  ScoreCacheStats s;
  std::lock_guard<std::mutex> lock(g_counters_mu);
  for (const ScoreCacheCounters* c : AllCounters()) {
    s.lookups += c->lookups.load(std::memory_order_relaxed);
    s.hits += c->hits.load(std::memory_order_relaxed);
  }
  return s;
}

ScoreCache::ScoreCache(std::vector<ScoreKeyField> fields, size_t tasks, size_t nodes,
                       size_t max_shapes)
    : fields_(std::move(fields)),
      tasks_(tasks),
      nodes_(nodes),
      max_shapes_(max_shapes),
      task_shape_(std::make_unique<std::atomic<uint32_t>[]>(tasks)),
      shapes_(std::make_unique<std::unique_ptr<Entry[]>[]>(max_shapes)) {
  for (size_t i = 0; i < tasks; ++i) task_shape_[i].store(kUnknown, std::memory_order_relaxed);
}

size_t ScoreCache::MaxShapesFor(size_t nodes) {
  // 64 MiB of entries per cache (16 bytes each): 419 shapes at 10k nodes; never more than 4096.
  constexpr size_t kBudget = size_t{64} << 20;
  return std::clamp<size_t>(kBudget / (std::max<size_t>(nodes, 1) * sizeof(Entry)), 1, 4096);
}

size_t ScoreCache::shape_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ids_.size();
}

uint32_t ScoreCache::Intern(const Task* t) {
  std::string key;
  for (ScoreKeyField f : fields_) AppendScoreKey(key, *t, f);
  std::lock_guard<std::mutex> lock(mu_);
  std::atomic<uint32_t>& slot = task_shape_[static_cast<size_t>(t->index)];
  uint32_t id = kUncached;
  if (auto it = ids_.find(key); it != ids_.end()) {
    id = it->second;
  } else if (ids_.size() < max_shapes_) {
    id = static_cast<uint32_t>(ids_.size());
    shapes_[id] = std::make_unique<Entry[]>(nodes_);
    ids_.emplace(std::move(key), id);
  }
  slot.store(id, std::memory_order_release);
  return id;
}

}  // namespace kiln
