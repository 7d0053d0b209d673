#include "kubernetes/kubernetes_cluster.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "kubernetes/decode_fast.h"
#include "runtime/name_table.h"
#include "runtime/pod_group_status.h"

namespace kiln::kube {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// One resource's objects by key, with the staging map a LIST fills before it replaces them.
template <typename T>
struct Store {
  std::map<std::string, T> items;
  std::map<std::string, T> staging;
  Clock::time_point list_started{};  // of the LIST in progress
  bool listed = false;               // the first LIST has ended (and was logged)
  // Counts the changes to `items` (a LIST swapped in, a batch of watch events, a pod re-read):
  // what was computed from the items at one version holds while it stays.
  uint64_t version = 0;
  // Counts the LISTs swapped in, and the changes to the set of keys (a LIST, an object added
  // or removed): a snapshot's pods depend on which nodes exist, not on the nodes' fields.
  uint64_t lists = 0;
  uint64_t key_changes = 0;
};

std::string Key(const ObjectMeta& m) {
  return m.namespace_.empty() ? m.name : m.namespace_ + "/" + m.name;
}

// "<namespace>/<name>" (a pod key, a job uid) → namespace, name.
std::pair<std::string, std::string> SplitKey(const std::string& key) {
  size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

struct KubernetesCluster::State {
  mutable std::mutex mu;
  Store<DecodedPod> pods;
  Store<NodeSpec> nodes;
  Store<DecodedPodGroup> pod_groups;
  Store<QueueSpec> queues;
  Store<PriorityClassSpec> priority_classes;
  Store<PodDisruptionBudget> pdbs;
  Store<ResourceQuota> quotas;
  Store<DecodedNamespace> namespaces;
  Store<HyperNodeSpec> hyper_nodes;
  Store<NumatopologySpec> numatopologies;

  struct Assumed {
    std::string uid;
    std::string node;
    StringMap annotations;  // what the binding carries, seen on the pod until the watch does
  };
  std::map<std::string, Assumed> assumed;          // pod key → bind queued/in flight/done
  // Counts the changes to `assumed` that a pod of the cache can see (not the erasure of keys
  // no longer in it). Change `assumed` through Assume and Unassume, which count.
  uint64_t assumed_version = 0;
  void Assume(const std::string& key, Assumed a) {
    assumed.insert_or_assign(key, std::move(a));
    ++assumed_version;
    PodChanged(key);
  }
  void Unassume(const std::string& key) {
    if (assumed.erase(key) == 0) return;
    ++assumed_version;
    PodChanged(key);
  }
  // Change these two through the functions below, which note the pod for the next snapshot.
  std::map<std::string, std::string> evicting;     // pod key → uid
  std::map<std::string, std::string> nominated;    // pod key → node written
  void SetEvicting(const std::string& key, std::string uid) {
    evicting.insert_or_assign(key, std::move(uid));
    PodChanged(key);
  }
  void ForgetEvicting(const std::string& key) {
    if (evicting.erase(key)) PodChanged(key);
  }
  void SetNominated(const std::string& key, std::string node) {
    nominated.insert_or_assign(key, std::move(node));
    PodChanged(key);
  }
  void ForgetNominated(const std::string& key) {
    if (nominated.erase(key)) PodChanged(key);
  }

  // The pods whose entry in a snapshot may differ from the last snapshot's: the pod changed
  // (watch, re-read), or its assumed bind, eviction or nomination did. The next snapshot reads
  // only these again (KubernetesCluster::PodMirror). Past a quarter of the cache the list is
  // dropped and the next snapshot reads every pod, so a replica that runs no sessions (a
  // standby) does not collect keys without end.
  std::vector<std::string> changed_pods;
  bool changed_pods_overflow = false;
  void PodChanged(const std::string& key) {
    // A watch event that settles an assumed bind names its pod twice in a row.
    if (changed_pods_overflow || (!changed_pods.empty() && changed_pods.back() == key)) return;
    if (changed_pods.size() >= std::max<size_t>(1024, pods.items.size() / 4)) {
      changed_pods_overflow = true;
      changed_pods = {};
      return;
    }
    changed_pods.push_back(key);
  }
  // What a pod's update or deletion settles in the bookkeeping above: an assumed pod whose node
  // the API server now shows is simply bound; a pod that is terminating (or gone) is no longer
  // "being evicted". `p` is null for a pod gone.
  void PodUpdated(const std::string& key, const DecodedPod* p);
  std::map<std::string, std::string> unschedulable_written;  // pod key → message written
  struct Retry {
    Clock::time_point at;
    std::chrono::milliseconds backoff{0};
  };
  std::map<std::string, Retry> bind_retry;         // pod key → not before
  std::map<std::string, PodGroupStatusUpdate> pg_overlay;  // job uid → status written/in flight
  std::map<std::string, std::string> queue_allocated;      // queue → last written (as text)
  // The last walks over the pods for PodGroup and Queue status, kept with the versions of what
  // they read: a session after which nothing changed (a quiet cluster) does not walk 100k pods
  // again under the lock.
  struct PodGroupCounts {
    uint64_t pods_version = ~uint64_t{0};
    std::unordered_map<std::string, PodGroupStatusUpdate> counts;  // "<ns>/<group>" → counts only
  } pod_group_counts;
  struct QueueSums {
    std::array<uint64_t, 4> versions{~uint64_t{0}};  // pods, pod_groups, queues, assumed
    std::map<std::string, Resource> allocated;
  } queue_sums;

  std::set<std::string> warnings;  // CompleteCluster's, as of the last snapshot

  // The initial sync's duration (issue 33: LIST + decode at scale), logged once.
  Clock::time_point started{}, last_list_done{};
  std::atomic<bool> sync_logged{false};

  KubernetesClusterStats stats;
  // Counted by the writers without taking `mu`, which a snapshot copy holds for long.
  std::atomic<int64_t> binds_ok{0};
};

void KubernetesCluster::State::PodUpdated(const std::string& key, const DecodedPod* p) {
  PodChanged(key);
  if (!p) {
    Unassume(key);
    ForgetEvicting(key);
    ForgetNominated(key);
    unschedulable_written.erase(key);
    bind_retry.erase(key);
    return;
  }
  if (auto a = assumed.find(key); a != assumed.end())
    if (!p->spec.node.empty() || a->second.uid != p->meta.uid) Unassume(key);
  if (auto e = evicting.find(key); e != evicting.end())
    if (p->spec.deleting || e->second != p->meta.uid) ForgetEvicting(key);
  if (auto n = nominated.find(key); n != nominated.end())
    if (p->spec.nominated_node == n->second || !p->spec.node.empty()) ForgetNominated(key);
  if (auto u = unschedulable_written.find(key); u != unschedulable_written.end())
    if (p->scheduled_status == "False" && p->scheduled_message == u->second)
      unschedulable_written.erase(u);
}

KubernetesCluster::KubernetesCluster(std::shared_ptr<KubeClient> client, KubernetesClusterOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      writer_(client_, WriterOptions{options_.scheduler_names.empty() ? "volcano" : options_.scheduler_names[0],
                                     options_.dry_run}),
      state_(std::make_unique<State>()),
      mirror_(std::make_unique<PodMirror>()) {}

KubernetesCluster::~KubernetesCluster() { Stop(std::chrono::milliseconds(0)); }

bool KubernetesCluster::Ours(const std::string& scheduler_name) const {
  return std::find(options_.scheduler_names.begin(), options_.scheduler_names.end(), scheduler_name) !=
         options_.scheduler_names.end();
}

namespace {

// Whether `r` (a decoded object) holds a value; if not, the error is logged and counted (the
// count taken under st.mu) and the caller skips the object.
template <typename R>
bool DecodedOrSkipped(KubernetesCluster::State& st, const std::string& resource, const R& r) {
  if (r) return true;
  spdlog::warn("{}: skipping an object: {}", resource, r.error().message);
  std::lock_guard lock(st.mu);
  ++st.stats.decode_errors;
  return false;
}

// A job's pods have equal extras (the group-name annotation, the image, the scheduler name), so
// a pod whose extras equal a key-order neighbour's shares them: the cache then holds about one
// per job, not one per pod, and a snapshot's checks (PartialCluster::ShapeFor, CompleteCluster's
// scheduler check) see the address they saw for the previous pod instead of comparing its
// strings. Extras are copy-on-write (PodSpec::mutable_extras), so sharing changes no value.
bool SameExtras(const PodExtras& a, const PodExtras& b) {
  // Every field: one added to PodExtras must be compared here too.
  static_assert(sizeof(PodExtras) == 4 * sizeof(std::string) + sizeof(SparseResource) +
                                         sizeof(StringMap) + sizeof(std::vector<std::string>),
                "compare the new PodExtras field in SameExtras");
  return a.scheduler_name == b.scheduler_name && a.image == b.image && a.annotations == b.annotations &&
         a.task == b.task && a.priority_class_name == b.priority_class_name && a.limits == b.limits &&
         a.scheduling_gates == b.scheduling_gates;
}

template <typename T>
void ShareWithNeighbour(std::map<std::string, T>&, typename std::map<std::string, T>::iterator) {}

void ShareWithNeighbour(std::map<std::string, DecodedPod>& items,
                        std::map<std::string, DecodedPod>::iterator it) {
  std::shared_ptr<const PodExtras>& mine = it->second.spec.extras;
  auto share = [&mine](const DecodedPod& other) {
    const std::shared_ptr<const PodExtras>& theirs = other.spec.extras;
    if (theirs != mine && !SameExtras(*theirs, *mine)) return false;
    mine = theirs;
    return true;
  };
  if (it != items.begin() && share(std::prev(it)->second)) return;
  if (auto next = std::next(it); next != items.end()) share(next->second);
}

// Watch events held by a store's handler between two end_events: decoded as they arrive (no
// lock), applied together under one lock. A snapshot copy holds the lock for long; while it does,
// the events are kept (and the stream read on) up to kMaxHeldEvents or kMaxHoldTime, after which
// the handler waits for the lock.
template <typename T>
struct HeldEvents {
  static constexpr size_t kMaxHeldEvents = 20000;
  static constexpr std::chrono::milliseconds kMaxHoldTime{500};
  std::vector<std::pair<std::string, std::optional<T>>> events;  // nullopt: deleted
  Clock::time_point since{};  // of the oldest event held
};

// Wires a reflector to a store: `decode` turns an object into (key, value) or an Error, which is
// logged and counted, and the object skipped. `decode_text`, when given, does the same from the
// object's JSON text (kubernetes/decode_fast.h), and the reflector then hands over text only.
// The staging map is the reflector thread's alone (no lock until end_list swaps it in).
template <typename T, typename Decode, typename DecodeText = std::nullptr_t>
ReflectorHandler StoreHandler(KubernetesCluster::State& st, Store<T>& store, std::string resource,
                              Decode decode, std::function<void(const std::string&, const T*)> on_change = {},
                              DecodeText decode_text = nullptr) {
  ReflectorHandler h;
  h.begin_list = [&st, &store] {
    std::lock_guard lock(st.mu);
    store.staging.clear();
    store.list_started = Clock::now();
  };
  auto stage = [&st, &store, resource](auto r) {
    if (!DecodedOrSkipped(st, resource, r)) return;
    ShareWithNeighbour(store.staging, store.staging.insert_or_assign(store.staging.end(), std::move(r->first),
                                                                     std::move(r->second)));
  };
  h.list_item = [stage, decode](const json& obj) { stage(decode(obj)); };
  h.end_list = [&st, &store, on_change, resource] {
    std::lock_guard lock(st.mu);
    store.items.swap(store.staging);
    store.staging.clear();
    ++store.version;
    ++store.lists;
    ++store.key_changes;
    st.last_list_done = Clock::now();
    if (!store.listed) {
      store.listed = true;
      spdlog::info("kubernetes: initial LIST of {}: {} objects listed and decoded in {:.0f} ms", resource,
                   store.items.size(),
                   std::chrono::duration<double, std::milli>(st.last_list_done - store.list_started).count());
    }
    if (on_change)
      for (const auto& [k, v] : store.items) on_change(k, &v);
  };
  auto held = std::make_shared<HeldEvents<T>>();
  auto hold = [held](std::string key, std::optional<T> value) {
    if (held->events.empty()) held->since = Clock::now();
    held->events.emplace_back(std::move(key), std::move(value));
  };
  auto remove = [hold](const ObjectMeta& m) { hold(Key(m), std::nullopt); };
  auto apply = [&st, resource, hold](auto r) {
    if (!DecodedOrSkipped(st, resource, r)) return;
    hold(std::move(r->first), std::move(r->second));
  };
  h.event = [remove, apply, decode](std::string_view type, const json& obj) {
    if (type == "DELETED") return remove(DecodeMeta(obj));
    apply(decode(obj));
  };
  h.end_events = [&st, &store, on_change, held](bool force) {
    if (held->events.empty()) return false;
    std::unique_lock lock(st.mu, std::defer_lock);
    bool may_wait = !force && held->events.size() < HeldEvents<T>::kMaxHeldEvents &&
                    Clock::now() - held->since < HeldEvents<T>::kMaxHoldTime;
    if (may_wait) {
      if (!lock.try_lock()) return true;
    } else {
      lock.lock();
    }
    ++store.version;
    for (auto& [key, value] : held->events) {
      if (!value) {
        store.key_changes += store.items.erase(key);
        if (on_change) on_change(key, nullptr);
        continue;
      }
      auto [slot, added] = store.items.try_emplace(key);
      store.key_changes += added;
      std::swap(slot->second, *value);  // the old object goes to `held`, to be freed outside the lock
      ShareWithNeighbour(store.items, slot);
      if (on_change) on_change(key, &slot->second);
    }
    lock.unlock();
    held->events.clear();
    return false;
  };
  if constexpr (!std::is_same_v<DecodeText, std::nullptr_t>) {
    h.list_item_text = [stage, decode_text, resource](std::string_view text) -> Status {
      auto r = decode_text(text);
      // Text that is not JSON fails the LIST, as a page that did not parse always has.
      if (!r && !json::accept(text))
        return Error{fmt::format("{}: an item is not JSON: {}", resource, r.error().message), {}};
      stage(std::move(r));
      return Status::Ok();
    };
    h.event_text = [remove, apply, decode_text](std::string_view type, std::string_view text) {
      if (type == "DELETED") return remove(DecodeMetaJson(text));
      apply(decode_text(text));
    };
  }
  return h;
}

template <typename T>
Result<std::pair<std::string, T>> Keyed(Result<T> r, const ObjectMeta& m) {
  if (!r) return r.error();
  return std::pair<std::string, T>(Key(m), std::move(*r));
}

// What a decoder reads (a DOM, or JSON text): its first parameter.
template <typename F>
struct Input;
template <typename R, typename In, typename... Rest>
struct Input<R (*)(In, Rest...)> {
  using type = In;
};

// A decoder for objects keyed by their metadata (namespace/name, or name).
template <typename T, auto Decode>
Result<std::pair<std::string, T>> DecodeKeyed(typename Input<decltype(Decode)>::type o) {
  ObjectMeta m;
  auto r = Decode(o, &m);
  return Keyed(std::move(r), m);
}

// A decoder for objects whose decoded form carries its own key (`Key` reads it).
template <typename T, auto Decode, std::string (*Key)(const T&)>
Result<std::pair<std::string, T>> DecodeSelfKeyed(typename Input<decltype(Decode)>::type o) {
  auto r = Decode(o);
  if (!r) return r.error();
  std::string key = Key(*r);
  return std::pair<std::string, T>(std::move(key), std::move(*r));
}
std::string PodKey(const DecodedPod& p) { return p.spec.Key(); }            // namespace/name
std::string PodGroupKey(const DecodedPodGroup& g) { return g.spec.Uid(); }  // as the loader keys it
std::string NamespaceKey(const DecodedNamespace& n) { return n.meta.name; }

}  // namespace

void KubernetesCluster::Start() {
  if (!reflectors_.empty()) return;
  State& st = *state_;
  st.started = Clock::now();
  pool_ = std::make_unique<WorkerPool>(std::max(1, options_.write_workers), options_.write_queue_capacity);
  events_ = std::make_unique<EventQueue>(
      [this](const EventQueue::Record& e) {
        return writer_.Event(e.about, e.type, e.reason, e.action, e.message, e.count);
      },
      options_.event_queue_capacity);
  auto add = [&](std::string resource, std::string path, ReflectorHandler h) {
    reflectors_.push_back(std::make_unique<Reflector>(client_, std::move(resource), std::move(path),
                                                      std::move(h), options_.reflector));
  };
  auto on_pod = [&st](const std::string& key, const DecodedPod* p) { st.PodUpdated(key, p); };
  add("pods", "/api/v1/pods",
      StoreHandler<DecodedPod>(st, st.pods, "pods", DecodeSelfKeyed<DecodedPod, DecodePod, PodKey>, on_pod,
                               DecodeSelfKeyed<DecodedPod, DecodePodJson, PodKey>));
  add("nodes", "/api/v1/nodes",
      StoreHandler<NodeSpec>(st, st.nodes, "nodes", DecodeKeyed<NodeSpec, DecodeNode>, {},
                             DecodeKeyed<NodeSpec, DecodeNodeJson>));
  auto on_pg = [&st](const std::string& key, const DecodedPodGroup* g) {
    // The written status has arrived (or the group is gone): the overlay is no longer needed.
    auto it = st.pg_overlay.find(key);
    if (it == st.pg_overlay.end()) return;
    if (!g || (g->spec.phase == it->second.phase &&
               SameConditions(g->spec.conditions, it->second.conditions)))
      st.pg_overlay.erase(it);
  };
  add("podgroups", "/apis/scheduling.volcano.sh/v1beta1/podgroups",
      StoreHandler<DecodedPodGroup>(st, st.pod_groups, "podgroups",
                                    DecodeSelfKeyed<DecodedPodGroup, DecodePodGroup, PodGroupKey>,
                                    on_pg));
  add("queues", "/apis/scheduling.volcano.sh/v1beta1/queues",
      StoreHandler<QueueSpec>(st, st.queues, "queues", DecodeKeyed<QueueSpec, DecodeQueue>));
  add("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses",
      StoreHandler<PriorityClassSpec>(st, st.priority_classes, "priorityclasses",
                                      DecodeKeyed<PriorityClassSpec, DecodePriorityClass>));
  add("poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets",
      StoreHandler<PodDisruptionBudget>(st, st.pdbs, "poddisruptionbudgets",
                                        DecodeKeyed<PodDisruptionBudget, DecodePdb>));
  add("resourcequotas", "/api/v1/resourcequotas",
      StoreHandler<ResourceQuota>(st, st.quotas, "resourcequotas",
                                  DecodeKeyed<ResourceQuota, DecodeResourceQuota>));
  add("namespaces", "/api/v1/namespaces",
      StoreHandler<DecodedNamespace>(
          st, st.namespaces, "namespaces",
          DecodeSelfKeyed<DecodedNamespace, DecodeNamespace, NamespaceKey>));
  // Volcano's topology CRDs (its cache lists both): a cluster that has not installed them
  // simply has none, so their reflectors are optional (a 404 is an empty list).
  auto add_optional = [&](std::string resource, std::string path, ReflectorHandler h) {
    ReflectorOptions o = options_.reflector;
    o.optional = true;
    reflectors_.push_back(std::make_unique<Reflector>(client_, std::move(resource), std::move(path),
                                                      std::move(h), o));
  };
  add_optional("hypernodes", "/apis/topology.volcano.sh/v1alpha1/hypernodes",
               StoreHandler<HyperNodeSpec>(st, st.hyper_nodes, "hypernodes",
                                           DecodeKeyed<HyperNodeSpec, DecodeHyperNode>));
  add_optional("numatopologies", "/apis/nodeinfo.volcano.sh/v1alpha1/numatopologies",
               StoreHandler<NumatopologySpec>(st, st.numatopologies, "numatopologies",
                                              DecodeKeyed<NumatopologySpec, DecodeNumatopology>));
  for (auto& r : reflectors_) r->Start();
}

bool KubernetesCluster::HasSynced() const {
  if (reflectors_.empty()) return false;
  for (const auto& r : reflectors_)
    if (!r->HasSynced()) return false;
  if (!state_->sync_logged.exchange(true)) {
    std::lock_guard lock(state_->mu);
    spdlog::info("kubernetes: caches synced {:.0f} ms after start ({} pods, {} nodes, {} podgroups)",
                 std::chrono::duration<double, std::milli>(state_->last_list_done - state_->started).count(),
                 state_->pods.items.size(), state_->nodes.items.size(), state_->pod_groups.items.size());
  }
  return true;
}

bool KubernetesCluster::WaitForSync(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!HasSynced()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void KubernetesCluster::Stop(std::chrono::milliseconds drain) {
  auto deadline = Clock::now() + drain;
  if (pool_) {
    if (drain.count() > 0 && !pool_->WaitIdle(drain))
      spdlog::warn("kubernetes: {} writes still queued at shutdown are abandoned", pool_->queued());
    pool_->Stop();
  }
  // Events last: the writes above post them. What is left after the drain is dropped.
  if (events_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() > 0 && !events_->WaitIdle(left))
      spdlog::info("kubernetes: {} Events still queued at shutdown are dropped", events_->counts().queued);
    events_->Stop();
  }
  for (auto& r : reflectors_) r->Stop();
}

bool KubernetesCluster::WaitForWrites(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  if (pool_ && !pool_->WaitIdle(timeout)) return false;
  // The writes may have posted Events: those are waited for after them.
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return !events_ || events_->WaitIdle(std::max(left, std::chrono::milliseconds(0)));
}

KubernetesClusterStats KubernetesCluster::stats() const {
  std::lock_guard lock(state_->mu);
  KubernetesClusterStats s = state_->stats;
  for (const auto& r : reflectors_) s.relists[r->resource()] = r->relists();
  s.write_queue_depth = pool_ ? pool_->queued() : 0;
  s.binds_ok = state_->binds_ok.load();
  if (events_) {
    EventQueue::Counts e = events_->counts();
    s.events = e.sent;
    s.events_dropped = e.dropped;
    s.events_folded = e.folded;
    s.events_failed = e.failed;
  }
  s.pods = state_->pods.items.size();
  s.nodes = state_->nodes.items.size();
  s.pod_groups = state_->pod_groups.items.size();
  s.queues = state_->queues.items.size();
  s.hyper_nodes = state_->hyper_nodes.items.size();
  s.numatopologies = state_->numatopologies.items.size();
  s.warnings = state_->warnings.size();
  return s;
}

namespace {

// Walks a map sorted by pod key alongside the pods, which are visited in key order: the entry
// for each pod, if any, in one step per entry instead of one lookup per pod.
template <typename M>
class SortedCursor {
 public:
  explicit SortedCursor(const M& m) : it_(m.begin()), end_(m.end()) {}
  // The entry of `key`, or null. Keys must come in ascending order.
  const typename M::mapped_type* Find(const std::string& key) {
    while (it_ != end_ && it_->first < key) ++it_;
    return it_ != end_ && it_->first == key ? &it_->second : nullptr;
  }

 private:
  typename M::const_iterator it_, end_;
};

// Whether pod `p` is of the same job (namespace and PodGroup) as `last`, the pod before it in a
// walk in key order, which keeps a job's pods next to each other.
bool SameJob(const DecodedPod* last, const DecodedPod& p) {
  return last != nullptr && p.spec.group == last->spec.group && p.spec.namespace_ == last->spec.namespace_;
}

// Drops the entries of `m` whose key `present` does not hold, in one walk over both (they are
// sorted by the same keys): no lookup per entry (a snapshot after 100k binds prunes 100k
// assumed binds).
template <typename M, typename P>
void EraseKeysNotIn(M& m, const P& present) {
  SortedCursor in_present(present);
  std::erase_if(m, [&](const auto& kv) { return in_present.Find(kv.first) == nullptr; });
}

}  // namespace

// The pods the last snapshot copied, in key order, kept between sessions (under mirror_mu_): a
// snapshot reads again only the pods State::changed_pods names, updates these and copies them
// out, so the cache's lock is held for what changed, not for every pod (a quiet cluster of 100k
// pods held it ~45 ms per session, and every watch event and writer waited on it).
struct KubernetesCluster::PodMirror {
  bool valid = false;
  uint64_t pod_lists = 0;  // st.pods.lists when every pod was last read
  uint64_t node_keys = 0;  // st.nodes.key_changes likewise: a pod's entry depends on its node existing
  std::vector<std::string> keys;
  std::vector<PodSpec> pods;

  // Puts the pods read again in their places: in place when no pod comes or goes, else in one
  // merge of the two key orders.
  void Apply(PodChanges&& changes);
};

// Pods read again, in ascending key order without repeats; null for one the session does not
// see (gone, or another scheduler's pod on no node).
struct KubernetesCluster::PodChanges {
  std::vector<std::string> keys;
  std::vector<std::optional<PodSpec>> pods;
};

void KubernetesCluster::PodMirror::Apply(PodChanges&& changes) {
  std::vector<size_t> at(changes.keys.size(), SIZE_MAX);
  bool reshaped = false;
  for (size_t i = 0; i < changes.keys.size(); ++i) {
    auto it = std::lower_bound(keys.begin(), keys.end(), changes.keys[i]);
    const bool found = it != keys.end() && *it == changes.keys[i];
    if (found) at[i] = static_cast<size_t>(it - keys.begin());
    reshaped |= found != changes.pods[i].has_value();
  }
  if (!reshaped) {
    for (size_t i = 0; i < changes.keys.size(); ++i)
      if (at[i] != SIZE_MAX) pods[at[i]] = std::move(*changes.pods[i]);
    return;
  }
  std::vector<std::string> merged_keys;
  std::vector<PodSpec> merged_pods;
  merged_keys.reserve(keys.size() + changes.keys.size());
  merged_pods.reserve(keys.size() + changes.keys.size());
  auto keep = [&](size_t i) {
    merged_keys.push_back(std::move(keys[i]));
    merged_pods.push_back(std::move(pods[i]));
  };
  size_t i = 0;
  for (size_t j = 0; j < changes.keys.size(); ++j) {
    for (; i < keys.size() && keys[i] < changes.keys[j]; ++i) keep(i);
    if (i < keys.size() && keys[i] == changes.keys[j]) ++i;  // replaced or gone
    if (!changes.pods[j]) continue;
    merged_keys.push_back(std::move(changes.keys[j]));
    merged_pods.push_back(std::move(*changes.pods[j]));
  }
  for (; i < keys.size(); ++i) keep(i);
  keys = std::move(merged_keys);
  pods = std::move(merged_pods);
}

namespace {

// Appends what a snapshot makes of the cached pod `p` to `out`, with the cache's own bookkeeping
// applied: `a` its assumed bind, `e` the uid it is being evicted as, `n` the node it was
// nominated to (each null when there is none). False when the session does not see the pod.
template <typename NodeExists>
bool AppendSnapshotPod(const DecodedPod& p, bool ours, const KubernetesCluster::State::Assumed* a,
                       const std::string* e, const std::string* n, const NodeExists& node_exists,
                       std::vector<PodSpec>& out) {
  const bool assumed_here = a != nullptr && p.spec.node.empty() && a->uid == p.meta.uid;
  const std::string& node = assumed_here ? a->node : p.spec.node;
  // Bound to a node the cache does not have (yet): nothing to schedule, nothing to count.
  const bool on_missing_node = !node.empty() && !node_exists(node);
  if (on_missing_node && p.spec.phase == PodPhase::Pending) return false;
  // Volcano's informer never shows it another scheduler's pods that are not on a node.
  if (!ours && (node.empty() || on_missing_node)) return false;
  PodSpec& pod = out.emplace_back(p.spec);
  // The decoder judged QoS over every container, as Kubernetes does; a spec holds one.
  pod.qos_guaranteed = p.qos_guaranteed;
  if (assumed_here) {
    pod.node = a->node;
    for (const auto& [k, v] : a->annotations) pod.mutable_extras().annotations[k] = v;
  }
  if (e != nullptr && *e == p.meta.uid) pod.deleting = true;
  if (n != nullptr && pod.node.empty()) pod.nominated_node = *n;
  if (on_missing_node) pod.node.clear();
  return true;
}

// The first field in which two snapshot entries of a pod differ ("" when none): the check of
// the changed pods' reading against a whole one.
std::string_view FirstDifference(const PodSpec& a, const PodSpec& b) {
  static_assert(sizeof(PodSpec) == 392, "compare the new PodSpec field in FirstDifference");
  if (a.name != b.name || a.namespace_ != b.namespace_) return "name";
  if (a.group != b.group) return "group";
  if (!(a.requests == b.requests)) return "requests";
  if (a.priority != b.priority) return "priority";
  if (a.phase != b.phase) return "phase";
  if (a.node != b.node) return "node";
  if (a.nominated_node != b.nominated_node) return "nominated_node";
  if (a.labels != b.labels) return "labels";
  if (a.placement != b.placement) return "placement";
  if (a.extras != b.extras && !SameExtras(*a.extras, *b.extras)) return "extras";
  if (a.foreign != b.foreign) return "foreign";
  if (a.deleting != b.deleting) return "deleting";
  if (a.qos_guaranteed != b.qos_guaranteed) return "qos_guaranteed";
  if (a.preemption_policy != b.preemption_policy) return "preemption_policy";
  if (a.creation_time != b.creation_time) return "creation_time";
  if (a.scheduled_at != b.scheduled_at) return "scheduled_at";
  if (a.duration != b.duration) return "duration";
  if (a.started_at != b.started_at) return "started_at";
  if (!(a.where.file == b.where.file) || a.where.line != b.where.line || a.where.column != b.where.column)
    return "where";
  return "";
}

}  // namespace

ClusterSpec KubernetesCluster::SnapshotSpec(TimeNs now) {
  State& st = *state_;
  ClusterSpec c;
  std::lock_guard mirror_lock(mirror_mu_);
  PodMirror& m = *mirror_;
  PodChanges changes;
  std::unique_ptr<PodMirror> whole;  // check_snapshots: every pod read beside the changes
  PodMirror replaced;                // freed after the lock
  {
    std::lock_guard lock(st.mu);
    const Clock::time_point locked = Clock::now();
    CopyObjectsLocked(st, c);
    if (!m.valid || m.pod_lists != st.pods.lists || m.node_keys != st.nodes.key_changes ||
        st.changed_pods_overflow) {
      std::swap(replaced, m);
      ReadAllPodsLocked(st, m);
      ++st.stats.snapshots_whole;
      st.stats.snapshot_pods_read = static_cast<int64_t>(st.pods.items.size());
    } else {
      ReadChangedPodsLocked(st, changes);
      st.stats.snapshot_pods_read = static_cast<int64_t>(changes.keys.size());
      if (options_.check_snapshots) {
        whole = std::make_unique<PodMirror>();
        ReadAllPodsLocked(st, *whole);
      }
    }
    st.changed_pods.clear();
    st.changed_pods_overflow = false;
    st.stats.snapshot_lock_ms = std::chrono::duration<double, std::milli>(Clock::now() - locked).count();
  }
  // The changes go into the mirror outside the lock: the watch and the writers wait for nothing
  // but the reading.
  m.Apply(std::move(changes));
  if (whole) {
    std::string difference;
    if (whole->keys != m.keys) {
      difference = "the pods seen differ";
    } else {
      for (size_t i = 0; i < m.pods.size() && difference.empty(); ++i)
        if (std::string_view field = FirstDifference(whole->pods[i], m.pods[i]); !field.empty())
          difference = fmt::format("pod {}: {}", m.keys[i], field);
    }
    if (!difference.empty()) {
      spdlog::error("kubernetes: the snapshot read from the changed pods differs from a whole reading "
                    "({}); the whole reading is used",
                    difference);
      std::lock_guard lock(st.mu);
      ++st.stats.snapshot_mismatches;
    }
    m = std::move(*whole);
  }
  c.pods = m.pods;
  // The defaults and references are resolved outside the lock: the watch and the writers wait
  // for nothing but the copy.
  CompleteOptions complete;
  complete.now = now;
  complete.scheduler_names = options_.scheduler_names;
  std::vector<ClusterWarning> warnings = CompleteCluster(c, complete);
  std::lock_guard lock(st.mu);
  // A live cluster repeats its warnings every session: log each one when it first appears.
  std::set<std::string> current;
  for (const auto& w : warnings) {
    if (!st.warnings.count(w.message)) spdlog::info("kubernetes: {}", w.message);
    current.insert(w.message);
  }
  st.warnings = std::move(current);
  // One-pod groups the cluster does not store keep the phase the last session gave them.
  for (auto& g : c.pod_groups) {
    if (!g.implicit) continue;
    if (auto o = st.pg_overlay.find(g.Uid()); o != st.pg_overlay.end()) {
      g.phase = o->second.phase;
      g.conditions = o->second.conditions;
    }
  }
  return c;
}

void KubernetesCluster::CopyObjectsLocked(State& st, ClusterSpec& c) const {
  auto copy_all = [](const auto& store, auto& out) {
    out.reserve(store.items.size());
    for (const auto& [k, v] : store.items) out.push_back(v);
  };
  copy_all(st.priority_classes, c.priority_classes);
  copy_all(st.queues, c.queues);
  copy_all(st.nodes, c.nodes);
  c.pod_groups.reserve(st.pod_groups.items.size());
  for (const auto& [k, v] : st.pod_groups.items) {
    PodGroupSpec g = v.spec;
    if (auto o = st.pg_overlay.find(k); o != st.pg_overlay.end()) {
      g.phase = o->second.phase;
      g.conditions = o->second.conditions;
    }
    c.pod_groups.push_back(std::move(g));
  }
  copy_all(st.pdbs, c.pdbs);
  copy_all(st.quotas, c.resource_quotas);
  // HyperNodes in name order (the API server's; Volcano's are a map): a changed topology is
  // what the next snapshot resolves, so an edit takes effect at the next session.
  copy_all(st.hyper_nodes, c.hyper_nodes);
  copy_all(st.numatopologies, c.numatopologies);
}

void KubernetesCluster::ReadAllPodsLocked(State& st, PodMirror& m) const {
  // Bookkeeping for pods a relist showed gone (no DELETED event reached us for them). No pod of
  // the cache can see these keys, so assumed_version does not count them.
  EraseKeysNotIn(st.assumed, st.pods.items);
  EraseKeysNotIn(st.evicting, st.pods.items);
  EraseKeysNotIn(st.nominated, st.pods.items);
  EraseKeysNotIn(st.unschedulable_written, st.pods.items);
  EraseKeysNotIn(st.bind_retry, st.pods.items);

  // Node names are keys of st.nodes (cluster-scoped: the key is the name), copied into one
  // compact table (runtime/name_table.h): every bound pod's node is looked up, and reading the
  // store's map entries instead was a cache miss per pod at 100k pods.
  const NameTable node_names(st.nodes.items, [](const auto& kv) { return std::string_view(kv.first); });
  const auto node_exists = [&node_names](const std::string& name) { return node_names.Contains(name); };
  SortedCursor assumed(st.assumed);
  SortedCursor evicting(st.evicting);
  SortedCursor nominated(st.nominated);
  m.keys.clear();
  m.pods.clear();
  m.keys.reserve(st.pods.items.size());
  m.pods.reserve(st.pods.items.size());
  for (const auto& [key, p] : st.pods.items)
    if (AppendSnapshotPod(p, Ours(p.scheduler_name), assumed.Find(key), evicting.Find(key),
                          nominated.Find(key), node_exists, m.pods))
      m.keys.push_back(key);
  m.valid = true;
  m.pod_lists = st.pods.lists;
  m.node_keys = st.nodes.key_changes;
}

void KubernetesCluster::ReadChangedPodsLocked(State& st, PodChanges& out) const {
  std::vector<std::string>& keys = st.changed_pods;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const auto node_exists = [&st](const std::string& name) { return st.nodes.items.count(name) > 0; };
  SortedCursor assumed(st.assumed);
  SortedCursor evicting(st.evicting);
  SortedCursor nominated(st.nominated);
  const auto& pods = st.pods.items;
  auto p = pods.begin();
  std::vector<PodSpec> one;
  out.keys.reserve(keys.size());
  out.pods.reserve(keys.size());
  for (std::string& key : keys) {
    // Changed pods come in runs (a job's pods are bound together, and their keys are next to
    // each other): a few steps on from the previous one before a search from the root.
    for (int steps = 0; p != pods.end() && p->first < key && steps < 8; ++steps) ++p;
    if (p != pods.end() && p->first < key) p = pods.lower_bound(key);
    std::optional<PodSpec>& entry = out.pods.emplace_back();
    if (p != pods.end() && p->first == key) {
      one.clear();
      if (AppendSnapshotPod(p->second, Ours(p->second.scheduler_name), assumed.Find(key),
                            evicting.Find(key), nominated.Find(key), node_exists, one))
        entry = std::move(one.front());
    }
    out.keys.push_back(std::move(key));
  }
}

namespace {

// What this thread has used so far: CPU in user and kernel mode, and page faults.
struct ThreadUsage {
  double user_ms = 0, kernel_ms = 0;
  long faults = 0;
  static ThreadUsage Now() {
    rusage u{};
    if (getrusage(RUSAGE_THREAD, &u) != 0) return {};
    auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
    return {ms(u.ru_utime), ms(u.ru_stime), u.ru_minflt + u.ru_majflt};
  }
};

}  // namespace

Result<Cluster> KubernetesCluster::Snapshot(TimeNs now) {
  // The thread's own CPU beside the wall time: while binds land, two cores are shared with the
  // writers, the watches and (in the benchmark) the API server, and the wall time alone cannot
  // tell waiting for a core from work.
  const ThreadUsage u0 = ThreadUsage::Now();
  auto t0 = Clock::now();
  ClusterSpec spec = SnapshotSpec(now);
  auto t1 = Clock::now();
  std::shared_ptr<const ClusterSpec> kept;
  if (keep_session_specs_) kept = std::make_shared<const ClusterSpec>(std::move(spec));
  Result<Cluster> cluster = BuildCluster(kept ? *kept : spec);
  if (kept) {
    std::shared_ptr<const ClusterSpec> untaken;  // freed outside the lock
    std::lock_guard lock(kept_mu_);
    untaken = std::exchange(kept_spec_, std::move(kept));
    kept_now_ = now;
  }
  if (!cluster) return cluster;
  using Ms = std::chrono::duration<double, std::milli>;
  auto t2 = Clock::now();
  const ThreadUsage u1 = ThreadUsage::Now();
  int64_t pods_read = 0;
  double lock_ms = 0;
  {
    std::lock_guard lock(state_->mu);
    pods_read = state_->stats.snapshot_pods_read;
    lock_ms = state_->stats.snapshot_lock_ms;
  }
  spdlog::debug("kubernetes: snapshot {:.1f} ms (copy of the cache {:.1f} ms: {} pods read, the cache's "
                "lock held {:.1f} ms; model built {:.1f} ms; "
                "this thread's CPU {:.1f} ms, {:.1f} of it in the kernel, {} page faults)",
                Ms(t2 - t0).count(), Ms(t1 - t0).count(), pods_read, lock_ms, Ms(t2 - t1).count(),
                (u1.user_ms - u0.user_ms) + (u1.kernel_ms - u0.kernel_ms), u1.kernel_ms - u0.kernel_ms,
                u1.faults - u0.faults);
  return cluster;
}

std::shared_ptr<const ClusterSpec> KubernetesCluster::TakeSessionSpec(TimeNs now) {
  std::lock_guard lock(kept_mu_);
  if (kept_now_ != now) return nullptr;
  return std::move(kept_spec_);
}

void KubernetesCluster::SubmitWrite(std::function<void()> work, std::function<void(State&)> undo) {
  if (pool_ && pool_->TrySubmit(std::move(work))) return;
  std::lock_guard lock(state_->mu);
  if (undo) undo(*state_);
  // One line per thousand, not one per write: a session of 100k binds would log 80k of them.
  if (state_->stats.writes_dropped++ % 1000 == 0)
    spdlog::warn("kubernetes: the write queue is full; a write is dropped (a later session redoes "
                 "it; {} dropped so far)",
                 state_->stats.writes_dropped);
}

void KubernetesCluster::PostEvent(ObjectReference about, std::string type, std::string reason,
                                  std::string action, std::string message) {
  if (options_.dry_run || !events_) return;
  events_->Post(std::move(about), std::move(type), std::move(reason), std::move(action), std::move(message));
}

void KubernetesCluster::Bind(const std::string& key, const std::string& uid, const std::string& node,
                             const StringMap& annotations, bool retried) {
  State& st = *state_;
  auto [ns, name] = SplitKey(key);
  auto t0 = Clock::now();
  WriteResult r = writer_.Bind(ns, name, uid, node, annotations);
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (options_.on_bind) options_.on_bind(secs, r.done());
  using O = WriteResult::Outcome;
  if (r.done()) {
    // No lock on the common path: a snapshot copy holding st.mu would stall every writer.
    ++st.binds_ok;
    if (retried) {
      std::lock_guard lock(st.mu);
      st.bind_retry.erase(key);
    }
    if (options_.write_events && writes_enabled_)
      PostEvent(ObjectReference{"v1", "Pod", ns, name, uid}, "Normal", "Scheduled", "Scheduling",
                fmt::format("Successfully assigned {} to {}", key, node));
    return;
  }
  if (r.outcome == O::kConflict || r.outcome == O::kNotFound) {
    // Someone else bound it, it was replaced, or it is gone: read it again and let a later
    // session decide with the truth.
    spdlog::info("kubernetes: {}; re-reading the pod", r.message);
    auto fresh = writer_.GetPod(ns, name);
    std::lock_guard lock(st.mu);
    ++st.stats.binds_conflict;
    st.Unassume(key);
    if (fresh && *fresh) {
      auto [slot, added] = st.pods.items.try_emplace(key);
      slot->second = std::move(**fresh);
      ++st.pods.version;
      st.pods.key_changes += added;
      st.PodUpdated(key, &slot->second);
    } else if (fresh && !*fresh && st.pods.items.erase(key)) {
      ++st.pods.version;
      ++st.pods.key_changes;
      st.PodUpdated(key, nullptr);
    }
    return;
  }
  std::lock_guard lock(st.mu);
  st.Unassume(key);
  if (r.outcome == O::kRetryLater) {
    ++st.stats.binds_retry;
    auto& retry = st.bind_retry[key];
    retry.backoff = retry.backoff.count() == 0 ? options_.bind_retry_initial
                                               : std::min(retry.backoff * 2, options_.bind_retry_max);
    retry.at = Clock::now() + retry.backoff;
    spdlog::warn("kubernetes: {}; the pod stays pending, retried after {} ms", r.message, retry.backoff.count());
  } else {
    ++st.stats.binds_failed;
    spdlog::error("kubernetes: {}", r.message);
  }
}

void KubernetesCluster::Apply(const SessionResult& result) {
  if (!writes_enabled_) {
    spdlog::debug("kubernetes: writes disabled (not the leader); session {} decisions not applied", result.index);
    return;
  }
  // Each kind of decision is queued in its own step, in this order: binds first, as the session
  // made them, so a pod starts as early as it can; status writes last.
  const auto start = Clock::now();
  ApplyBinds(result);          // 1
  ApplyEvictions(result);      // 2
  ApplyNominations(result);    // 3
  ApplyPodGroupStatus(result);  // 4
  ApplyUnschedulable(result);  // 5
  if (options_.write_queue_status) ApplyQueueStatus();  // 6
  spdlog::debug("kubernetes: session {} decisions queued in {:.1f} ms", result.index,
                std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

// 1. Binds, in the order the session made them. The claims are made a few hundred at a time,
// one lock each (the reflectors and the writers wait for that lock too), and each group is
// queued at once, so the writers start on the first binds while the rest are claimed.
void KubernetesCluster::ApplyBinds(const SessionResult& result) {
  State& st = *state_;
  auto now = Clock::now();
  struct Claim {
    const std::string* key;
    const std::string* node;
    std::string uid;
    StringMap annotations;
    bool retried;
  };
  constexpr size_t kClaimsPerLock = 256;
  std::vector<Claim> claims;
  claims.reserve(kClaimsPerLock);
  const auto& order = result.bind_order;
  for (size_t from = 0; from < order.size(); from += kClaimsPerLock) {
    claims.clear();
    {
      std::lock_guard lock(st.mu);
      for (size_t i = from; i < std::min(order.size(), from + kClaimsPerLock); ++i) {
        const std::string& key = order[i];
        auto it = result.binds.find(key);
        if (it == result.binds.end()) continue;
        auto p = st.pods.items.find(key);
        if (p == st.pods.items.end() || !p->second.spec.node.empty() || st.assumed.count(key)) continue;
        auto r = st.bind_retry.find(key);
        if (r != st.bind_retry.end() && r->second.at > now) continue;
        StringMap annotations;
        if (auto a = result.pod_annotations.find(key); a != result.pod_annotations.end())
          annotations = a->second;
        const std::string& uid = p->second.meta.uid;
        st.Assume(key, State::Assumed{uid, it->second, annotations});
        st.ForgetNominated(key);
        claims.push_back(Claim{&key, &it->second, uid, std::move(annotations), r != st.bind_retry.end()});
      }
    }
    for (Claim& c : claims)
      SubmitWrite(
          [this, key = *c.key, uid = std::move(c.uid), node = *c.node, annotations = std::move(c.annotations),
           retried = c.retried] {
            if (!writes_enabled_) {
              std::lock_guard lock(state_->mu);
              state_->Unassume(key);
              ++state_->stats.writes_dropped;
              return;
            }
            Bind(key, uid, node, annotations, retried);
          },
          // Not sent: an assumption nothing will confirm would hold the pod on the node for good.
          [key = *c.key](State& s) { s.Unassume(key); });
  }
}

// 2. Evictions: never twice for the same pod.
void KubernetesCluster::ApplyEvictions(const SessionResult& result) {
  State& st = *state_;
  using O = WriteResult::Outcome;
  for (const std::string& key : result.evictions) {
    std::string uid;
    {
      std::lock_guard lock(st.mu);
      auto p = st.pods.items.find(key);
      if (p == st.pods.items.end() || p->second.spec.deleting || st.evicting.count(key)) continue;
      uid = p->second.meta.uid;
      st.SetEvicting(key, uid);
    }
    SubmitWrite([this, key, uid] {
      State& s = *state_;
      if (!writes_enabled_) {
        std::lock_guard lock(s.mu);
        s.ForgetEvicting(key);
        return;
      }
      auto [ns, name] = SplitKey(key);
      WriteResult r = options_.evict_with_eviction_api ? writer_.EvictWithApi(ns, name, uid)
                                                       : writer_.Evict(ns, name, uid);
      std::lock_guard lock(s.mu);
      if (r.done()) {
        ++s.stats.evictions_ok;
        return;
      }
      ++s.stats.evictions_refused;
      // Refused (429 PDB, 5xx) or the pod changed: forget it so a later session may decide again.
      s.ForgetEvicting(key);
      if (r.outcome == O::kRetryLater || r.outcome == O::kFailed)
        spdlog::warn("kubernetes: {}", r.message);
    }, [key](State& s) { s.ForgetEvicting(key); });
  }
}

// 3. Nominated nodes of pipelined preemptors.
void KubernetesCluster::ApplyNominations(const SessionResult& result) {
  State& st = *state_;
  for (const auto& [key, node] : result.nominated) {
    {
      std::lock_guard lock(st.mu);
      auto p = st.pods.items.find(key);
      if (p == st.pods.items.end() || !p->second.spec.node.empty()) continue;
      auto written = st.nominated.find(key);
      if (p->second.spec.nominated_node == node || (written != st.nominated.end() && written->second == node)) {
        ++st.stats.status_writes_skipped;
        continue;
      }
      st.SetNominated(key, node);
    }
    SubmitWrite([this, key, node] {
      auto [ns, name] = SplitKey(key);
      WriteResult r = writer_.SetNominatedNode(ns, name, node);
      std::lock_guard lock(state_->mu);
      if (r.done()) {
        ++state_->stats.status_writes;
      } else {
        ++state_->stats.status_write_failures;
        state_->ForgetNominated(key);
      }
    }, [key](State& s) { s.ForgetNominated(key); });
  }
}

// 4. PodGroup status: phase, conditions and pod counts, written only when they change.
void KubernetesCluster::ApplyPodGroupStatus(const SessionResult& result) {
  State& st = *state_;
  // The status counts of every group's pods, in one walk over the pod cache (a walk per
  // PodGroup made this quadratic: at 1k groups × 10k pods it took most of the loop's time),
  // again only when a pod changed since the last one. Kept in st.pod_group_counts, read under
  // the lock below.
  if (std::lock_guard lock(st.mu);
      !result.pod_group_phases.empty() && st.pod_group_counts.pods_version != st.pods.version) {
    ++st.stats.status_walks;
    st.pod_group_counts.pods_version = st.pods.version;
    auto& counts = st.pod_group_counts.counts;
    counts.clear();
    // A job's pods are next to each other in key order: the previous counted pod's entry holds
    // for the next one of the same namespace and group.
    const DecodedPod* last = nullptr;
    PodGroupStatusUpdate* last_counts = nullptr;
    for (const auto& [k, p] : st.pods.items) {
      PodPhase phase = p.spec.phase;
      if (phase != PodPhase::Running && phase != PodPhase::Succeeded && phase != PodPhase::Failed) continue;
      if (p.spec.group.empty() || !Ours(p.scheduler_name)) continue;
      if (!SameJob(last, p)) last_counts = &counts[p.spec.JobUid()];
      last = &p;
      PodGroupStatusUpdate& c = *last_counts;
      if (phase == PodPhase::Running) ++c.running;
      if (phase == PodPhase::Succeeded) ++c.succeeded;
      if (phase == PodPhase::Failed) ++c.failed;
    }
  }
  // One pass under the lock over the session's groups, in key order like the cache's maps;
  // the writes are queued after it. A quiet session of 10k PodGroups writes none, so what it
  // costs is this pass: one status built into the same buffers each time and compared.
  const std::string transition = fmt::format("session-{}", result.index);
  std::vector<std::pair<std::string, PodGroupStatusUpdate>> writes;
  {
    std::lock_guard lock(st.mu);
    SortedCursor conditions(result.conditions);
    SortedCursor refusals(result.admission_refusals);
    SortedCursor groups(st.pod_groups.items);
    PodGroupStatusUpdate u;  // reused: its conditions keep their strings' capacity
    for (const auto& [uid, phase_text] : result.pod_group_phases) {
      u.phase = ParsePodGroupPhase(phase_text).value_or(PodGroupPhase::Pending);
      if (const auto* c = conditions.Find(uid))
        u.conditions.assign(c->begin(), c->end());
      else
        u.conditions.clear();
      // A refused PodGroup's stable code where Volcano writes no reason of its own (docs/reasons.md).
      SetAdmissionCondition(u.conditions, refusals.Find(uid), result.time, transition);
      u.running = u.succeeded = u.failed = 0;
      const DecodedPodGroup* cur = groups.Find(uid);
      if (cur == nullptr) {
        // A one-pod group the cluster does not store: remember its phase for the next session.
        st.pg_overlay[uid] = u;
        continue;
      }
      if (auto c = st.pod_group_counts.counts.find(uid); c != st.pod_group_counts.counts.end()) {
        u.running = c->second.running;
        u.succeeded = c->second.succeeded;
        u.failed = c->second.failed;
      }
      auto o = st.pg_overlay.find(uid);
      bool same_as_server = cur->spec.phase == u.phase && SameConditions(cur->spec.conditions, u.conditions) &&
                            cur->running == u.running && cur->succeeded == u.succeeded && cur->failed == u.failed;
      bool same_as_pending = o != st.pg_overlay.end() && o->second.phase == u.phase &&
                             SameConditions(o->second.conditions, u.conditions) && o->second.running == u.running &&
                             o->second.succeeded == u.succeeded && o->second.failed == u.failed;
      if (same_as_server || same_as_pending) {
        ++st.stats.status_writes_skipped;
        continue;
      }
      st.pg_overlay[uid] = u;
      writes.emplace_back(uid, u);
    }
  }
  for (auto& write : writes) {
    std::string ns, name, uid = std::move(write.first);
    std::tie(ns, name) = SplitKey(uid);
    SubmitWrite([this, ns, name, uid, u = std::move(write.second)] {
      WriteResult r = writer_.UpdatePodGroupStatus(ns, name, u);
      std::lock_guard lock(state_->mu);
      if (r.done()) {
        ++state_->stats.status_writes;
      } else {
        ++state_->stats.status_write_failures;
        // The next session computes it again and writes it then.
        if (auto o = state_->pg_overlay.find(uid); o != state_->pg_overlay.end() && o->second.phase == u.phase)
          state_->pg_overlay.erase(o);
        spdlog::warn("kubernetes: {}", r.message);
      }
    }, [uid](State& s) { s.pg_overlay.erase(uid); });
  }
}

// 5. Unschedulable pods: PodScheduled=False with the fit error, and a FailedScheduling Event,
// only when the message changed (not every second for every pending pod).
void KubernetesCluster::ApplyUnschedulable(const SessionResult& result) {
  State& st = *state_;
  for (const auto& [key, message] : result.unschedulable) {
    std::string uid;
    {
      std::lock_guard lock(st.mu);
      auto p = st.pods.items.find(key);
      if (p == st.pods.items.end() || !p->second.spec.node.empty() || st.assumed.count(key)) continue;
      const DecodedPod& pod = p->second;
      bool same = pod.scheduled_status == "False" && pod.scheduled_reason == "Unschedulable" &&
                  pod.scheduled_message == message;
      auto w = st.unschedulable_written.find(key);
      if (same || (w != st.unschedulable_written.end() && w->second == message)) {
        ++st.stats.status_writes_skipped;
        continue;
      }
      st.unschedulable_written[key] = message;
      uid = pod.meta.uid;
    }
    SubmitWrite([this, key, uid, message] {
      auto [ns, name] = SplitKey(key);
      WriteResult r = writer_.SetUnschedulable(ns, name, message);
      if (r.done() && options_.write_events)
        PostEvent(ObjectReference{"v1", "Pod", ns, name, uid}, "Warning", "FailedScheduling", "Scheduling",
                  message);
      std::lock_guard lock(state_->mu);
      if (r.done()) {
        ++state_->stats.status_writes;
      } else {
        ++state_->stats.status_write_failures;
        state_->unschedulable_written.erase(key);
      }
    }, [key](State& s) { s.unschedulable_written.erase(key); });
  }
}

std::map<std::string, Resource> KubernetesCluster::QueueAllocatedLocked(const State& st) const {
  std::map<std::string, Resource> allocated;
  std::map<std::string, std::string> queue_of;  // job uid → queue
  for (const auto& [k, g] : st.pod_groups.items) queue_of[k] = g.spec.queue;
  for (const auto& [k, q] : st.queues.items) allocated[k];
  // The pods come in key order, so a job's pods are next to each other: the previous pod's
  // queue holds for the next one of the same namespace and group, and the previous answer of
  // Ours for the same scheduler name. The assumed binds are walked alongside (same keys).
  SortedCursor assumed(st.assumed);
  const DecodedPod* last = nullptr;
  bool last_ours = false;
  Resource* last_sum = nullptr;  // the queue's sum; null: the pod's job counts for no queue
  for (const auto& [key, p] : st.pods.items) {
    const bool same_scheduler = last != nullptr && p.scheduler_name == last->scheduler_name;
    if (!same_scheduler) last_ours = Ours(p.scheduler_name);
    if (!SameJob(last, p)) {
      last_sum = nullptr;
      // A pod without a group is its own one-pod job in queue `default`.
      static const std::string kDefaultQueue = "default";
      const std::string* queue = &kDefaultQueue;
      if (!p.spec.group.empty()) {
        auto q = queue_of.find(p.spec.JobUid());
        queue = q == queue_of.end() ? nullptr : &q->second;
      }
      if (queue != nullptr)
        if (auto a = allocated.find(*queue); a != allocated.end()) last_sum = &a->second;
    }
    last = &p;
    if (!last_ours || last_sum == nullptr) continue;
    bool holds = (!p.spec.node.empty() || assumed.Find(key) != nullptr) && !p.spec.deleting &&
                 (p.spec.phase == PodPhase::Pending || p.spec.phase == PodPhase::Running);
    if (!holds) continue;
    Resource r = p.spec.requests;
    r.AddScalar(kPods, 1);
    last_sum->Add(r);
  }
  return allocated;
}

// 6. Queue status.allocated: Σ requests (+ the pods: 1 Volcano counts) of the queue's pods
// that hold resources (bound, running, or assumed by this scheduler), written when it changes.
void KubernetesCluster::ApplyQueueStatus() {
  State& st = *state_;
  std::map<std::string, Resource> allocated;
  {
    std::lock_guard lock(st.mu);
    const std::array<uint64_t, 4> versions{st.pods.version, st.pod_groups.version, st.queues.version,
                                           st.assumed_version};
    if (st.queue_sums.versions != versions) {
      ++st.stats.status_walks;
      st.queue_sums = {versions, QueueAllocatedLocked(st)};
    }
    allocated = st.queue_sums.allocated;
    for (auto it = allocated.begin(); it != allocated.end();) {
      std::string text = it->second.ToString();
      if (st.queue_allocated[it->first] == text) {
        it = allocated.erase(it);
      } else {
        st.queue_allocated[it->first] = text;
        ++it;
      }
    }
  }
  for (const auto& [queue, res] : allocated)
    SubmitWrite([this, queue, res] {
      WriteResult r = writer_.UpdateQueueAllocated(queue, res);
      std::lock_guard lock(state_->mu);
      if (r.done()) {
        ++state_->stats.status_writes;
      } else {
        ++state_->stats.status_write_failures;
        state_->queue_allocated.erase(queue);
      }
    }, [queue](State& s) { s.queue_allocated.erase(queue); });
}

}  // namespace kiln::kube
