#include "kubernetes/writer.h"
#include "kubernetes/encode.h"
#include "runtime/thread_name.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

namespace kiln::kube {

using json = nlohmann::json;

// ---- WorkerPool ----

WorkerPool::WorkerPool(int threads, size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      NameThisThread("kiln-write");
      Loop();
    });
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::TrySubmit(std::function<void()> work) {
  {
    std::lock_guard lock(mu_);
    if (stop_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
  return true;
}

bool WorkerPool::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && running_ == 0; });
}

void WorkerPool::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

size_t WorkerPool::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void WorkerPool::Loop() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      work = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    work();
    {
      std::lock_guard lock(mu_);
      --running_;
      if (queue_.empty() && running_ == 0) idle_cv_.notify_all();
    }
  }
}

// ---- Writer ----

namespace {

std::string Now() {
  auto now = std::chrono::system_clock::now();
  return FormatTimestamp(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() *
                         1'000'000'000);
}

std::string MicroNow() {
  auto now = std::chrono::system_clock::now();
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  return FormatTimestamp(us * 1000);
}

}  // namespace

std::string PodPath(const std::string& ns, const std::string& name) {
  return fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
}

WriteResult Writer::DryRun(std::string_view what) {
  spdlog::info("dry-run: would {}", what);
  return WriteResult{WriteResult::Outcome::kDone, 0, "dry-run"};
}

WriteResult Writer::Classify(const Result<Response>& r, std::string_view what) {
  using O = WriteResult::Outcome;
  if (!r) return WriteResult{O::kRetryLater, 0, r.error().message};
  if (r->ok()) return WriteResult{O::kDone, r->status, ""};
  ApiStatus s = DecodeStatus(r->status, r->body);
  std::string msg = fmt::format("{}: {}", what, Describe(s));
  if (s.code == 409) return WriteResult{O::kConflict, s.code, msg};
  if (s.code == 404) return WriteResult{O::kNotFound, s.code, msg};
  if (s.code == 429 || s.code >= 500 || s.code == 408) return WriteResult{O::kRetryLater, s.code, msg};
  return WriteResult{O::kFailed, s.code, msg};
}

WriteResult Writer::Bind(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& node, const StringMap& annotations) {
  std::string what = fmt::format("bind {}/{} to {}", ns, name, node);
  if (options_.dry_run) return DryRun(what);
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!annotations.empty()) {
    json a = json::object();
    for (const auto& [k, v] : annotations) a[k] = v;
    binding["metadata"]["annotations"] = std::move(a);
  }
  return Classify(client_->Post(PodPath(ns, name) + "/binding", binding.dump()), what);
}

WriteResult Writer::Evict(const std::string& ns, const std::string& name, const std::string& uid) {
  std::string what = fmt::format("evict {}/{}", ns, name);
  if (options_.dry_run) return DryRun(what);
  // Volcano's evictor marks the pod before deleting it, so controllers (and the kubelet) see why
  // it goes away.
  json patch = {{"status",
                 {{"conditions",
                   json::array({{{"type", "DisruptionTarget"},
                                 {"status", "True"},
                                 {"lastTransitionTime", Now()},
                                 {"reason", "PreemptionByScheduler"},
                                 {"message", fmt::format("{}: preempting", options_.scheduler_name)}}})}}}};
  WriteResult cond = Classify(client_->Patch(PodPath(ns, name) + "/status", patch.dump(), "strategic"),
                              what + " (DisruptionTarget condition)");
  if (!cond.done()) {
    if (cond.outcome == WriteResult::Outcome::kNotFound) return cond;
    spdlog::warn("{}; deleting the pod anyway", cond.message);
  }
  json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!uid.empty()) options["preconditions"] = {{"uid", uid}};
  return Classify(client_->Delete(PodPath(ns, name), options.dump()), what);
}

WriteResult Writer::EvictWithApi(const std::string& ns, const std::string& name, const std::string& uid) {
  std::string what = fmt::format("evict {}/{} (eviction API)", ns, name);
  if (options_.dry_run) return DryRun(what);
  json eviction = {{"apiVersion", "policy/v1"},
                   {"kind", "Eviction"},
                   {"metadata", {{"name", name}, {"namespace", ns}}}};
  if (!uid.empty()) eviction["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return Classify(client_->Post(PodPath(ns, name) + "/eviction", eviction.dump()), what);
}

WriteResult Writer::SetUnschedulable(const std::string& ns, const std::string& name,
                                     const std::string& message) {
  std::string what = fmt::format("mark {}/{} Unschedulable", ns, name);
  if (options_.dry_run) return DryRun(what);
  json patch = {{"status",
                 {{"conditions", json::array({{{"type", "PodScheduled"},
                                               {"status", "False"},
                                               {"lastTransitionTime", Now()},
                                               {"reason", "Unschedulable"},
                                               {"message", message}}})}}}};
  return Classify(client_->Patch(PodPath(ns, name) + "/status", patch.dump(), "strategic"), what);
}

WriteResult Writer::SetNominatedNode(const std::string& ns, const std::string& name, const std::string& node) {
  std::string what = fmt::format("nominate {} for {}/{}", node, ns, name);
  if (options_.dry_run) return DryRun(what);
  json patch = {{"status", {{"nominatedNodeName", node.empty() ? json(nullptr) : json(node)}}}};
  return Classify(client_->Patch(PodPath(ns, name) + "/status", patch.dump(), "merge"), what);
}

WriteResult Writer::Event(const ObjectReference& about, const std::string& type,
                          const std::string& reason, const std::string& action,
                          const std::string& message, int32_t count) {
  std::string what = fmt::format("event {} on {} {}/{}", reason, about.kind, about.ns, about.name);
  if (options_.dry_run) return DryRun(what);
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string now = Now();
  json involved = {{"apiVersion", about.api_version}, {"kind", about.kind}, {"namespace", about.ns},
                   {"name", about.name}};
  if (!about.uid.empty()) involved["uid"] = about.uid;
  // The API server caps an Event's message at 1 kB; a longer one is refused whole.
  std::string text = message.size() > 1024 ? message.substr(0, 1021) + "..." : message;
  json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", fmt::format("{}.{:016x}", about.name, rng())}, {"namespace", about.ns}}},
             {"involvedObject", std::move(involved)},
             {"type", type},
             {"reason", reason},
             {"message", std::move(text)},
             {"source", {{"component", options_.scheduler_name}}},
             {"reportingComponent", options_.scheduler_name},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"eventTime", MicroNow()},
             {"action", action},
             {"count", count}};
  return Classify(client_->Post(fmt::format("/api/v1/namespaces/{}/events", about.ns), ev.dump()), what);
}

WriteResult Writer::PodEvent(const std::string& ns, const std::string& name, const std::string& uid,
                             const std::string& type, const std::string& reason,
                             const std::string& message) {
  return Event(ObjectReference{"v1", "Pod", ns, name, uid}, type, reason, "Scheduling", message);
}

WriteResult Writer::UpdatePodGroupStatus(const std::string& ns, const std::string& name,
                                         const PodGroupStatusUpdate& u) {
  std::string what = fmt::format("update status of podgroup {}/{} ({})", ns, name, ToString(u.phase));
  if (options_.dry_run) return DryRun(what);
  std::string path = fmt::format("/apis/scheduling.volcano.sh/v1beta1/namespaces/{}/podgroups/{}", ns, name);
  WriteResult last;
  for (int attempt = 0; attempt <= options_.conflict_retries; ++attempt) {
    auto got = client_->Get(path);
    WriteResult g = Classify(got, what);
    if (!g.done()) return g;
    json pg = json::parse(got->body, nullptr, false);
    if (pg.is_discarded() || !pg.is_object())
      return WriteResult{WriteResult::Outcome::kRetryLater, 0, what + ": GET answered no JSON object"};
    json& status = pg["status"];
    if (!status.is_object()) status = json::object();
    status["phase"] = std::string(ToString(u.phase));
    status["running"] = u.running;
    status["succeeded"] = u.succeeded;
    status["failed"] = u.failed;
    json conds = json::array();
    for (const auto& c : u.conditions) {
      json cj = {{"type", c.type}, {"status", c.status}};
      if (!c.transition_id.empty()) cj["transitionID"] = c.transition_id;
      if (c.last_transition_time) cj["lastTransitionTime"] = FormatTimestamp(c.last_transition_time / 1'000'000'000 * 1'000'000'000);
      if (!c.reason.empty()) cj["reason"] = c.reason;
      if (!c.message.empty()) cj["message"] = c.message;
      conds.push_back(std::move(cj));
    }
    status["conditions"] = std::move(conds);
    // PUT carries metadata.resourceVersion from the GET: a concurrent writer makes it 409.
    last = Classify(client_->Put(path, pg.dump()), what);
    if (last.outcome != WriteResult::Outcome::kConflict) return last;
  }
  return last;
}

WriteResult Writer::UpdateQueueAllocated(const std::string& name, const Resource& allocated) {
  std::string what = fmt::format("update status.allocated of queue {}", name);
  if (options_.dry_run) return DryRun(what);
  json res = json::object();
  for (int id = 0; id < kMaxResources; ++id) {
    if (!allocated.Has(static_cast<ResourceId>(id))) continue;
    std::string_view rn = ResourceRegistry::Name(static_cast<ResourceId>(id));
    res[std::string(rn)] = FormatQuantity(rn, allocated.Get(static_cast<ResourceId>(id)));
  }
  json patch = {{"status", {{"allocated", res}}}};
  return Classify(client_->Patch(fmt::format("/apis/scheduling.volcano.sh/v1beta1/queues/{}/status", name),
                                 patch.dump(), "merge"),
                  what);
}

Result<std::optional<DecodedPod>> Writer::GetPod(const std::string& ns, const std::string& name) {
  auto r = client_->Get(PodPath(ns, name));
  if (!r) return r.error();
  if (r->status == 404) return std::optional<DecodedPod>();
  if (!r->ok()) return Error{fmt::format("GET pod {}/{}: {}", ns, name, Describe(DecodeStatus(r->status, r->body))), {}};
  json obj = json::parse(r->body, nullptr, false);
  if (obj.is_discarded()) return Error{fmt::format("GET pod {}/{}: not JSON", ns, name), {}};
  auto pod = DecodePod(obj);
  if (!pod) return pod.error();
  return std::optional<DecodedPod>(std::move(*pod));
}

// ---- EventQueue ----

EventQueue::EventQueue(Send send, size_t capacity)
    : send_(std::move(send)), capacity_(std::max<size_t>(1, capacity)), thread_([this] { Loop(); }) {}

EventQueue::~EventQueue() { Stop(); }

void EventQueue::Post(ObjectReference about, std::string type, std::string reason, std::string action,
                      std::string message) {
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", about.kind, about.ns,
                                about.name, about.uid, type, reason, action, message);
  {
    std::lock_guard lock(mu_);
    if (stop_) {
      ++counts_.dropped;
      return;
    }
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      ++it->second->record.count;
      ++counts_.folded;
      return;
    }
    if (queue_.size() >= capacity_) {
      // One line per thousand: a burst of binds beyond the queue would log each one.
      if (counts_.dropped++ % 1000 == 0)
        spdlog::warn("kubernetes: the Event queue is full ({} queued); an Event is dropped ({} so far)",
                     queue_.size(), counts_.dropped);
      return;
    }
    auto p = std::make_unique<Pending>(Pending{
        key, Record{std::move(about), std::move(type), std::move(reason), std::move(action), std::move(message), 1}});
    by_key_.emplace(std::move(key), p.get());
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
}

EventQueue::Counts EventQueue::counts() const {
  std::lock_guard lock(mu_);
  Counts c = counts_;
  c.queued = queue_.size();
  return c;
}

bool EventQueue::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return queue_.empty() && !sending_; });
}

void EventQueue::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    counts_.dropped += static_cast<int64_t>(queue_.size());
    queue_.clear();
    by_key_.clear();
  }
  cv_.notify_all();
  idle_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EventQueue::Loop() {
  // Linux keeps a nice value per thread: this one alone goes below the writers and the session.
  // Raising one's own nice value needs no privilege; a failure only leaves the default.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  NameThisThread("kiln-events");
  for (;;) {
    std::unique_ptr<Pending> p;
    {
      std::unique_lock lock(mu_);
      sending_ = false;
      if (queue_.empty()) idle_cv_.notify_all();
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      p = std::move(queue_.front());
      queue_.pop_front();
      by_key_.erase(p->key);  // sent from here on: a repeat posted now is a new Event
      sending_ = true;
    }
    WriteResult r = send_(p->record);
    std::lock_guard lock(mu_);
    ++(r.done() ? counts_.sent : counts_.failed);
  }
}

}  // namespace kiln::kube
