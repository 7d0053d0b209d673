#include "server/offpath_snapshot.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_set>

#include "runtime/thread_name.h"

namespace kiln::server {

void NormaliseLikeScenario(ClusterSpec& cluster) {
  std::unordered_set<std::string> implicit;
  for (const PodGroupSpec& g : cluster.pod_groups)
    if (g.implicit) implicit.insert(g.Uid());
  std::erase_if(cluster.pod_groups, [](const PodGroupSpec& g) { return g.implicit; });
  for (PodGroupSpec& g : cluster.pod_groups) g.conditions.clear();
  std::erase_if(cluster.queues, [](const QueueSpec& q) { return q.implicit; });
  for (PodSpec& p : cluster.pods) {
    if (p.foreign) continue;
    if (p.scheduler_name() != kDefaultSchedulerName)
      p.mutable_extras().scheduler_name = std::string(kDefaultSchedulerName);
    if (implicit.count(p.JobUid())) p.group.clear();
  }
}

// ---- one session's objects on a shared cluster ----------------------------------------------

OffPathExtension::OffPathExtension(ClusterSpec& cluster, std::vector<PodGroupSpec> groups,
                                   std::vector<PodSpec> pods)
    : cluster_(cluster) {
  // CompleteCluster lists the PodGroups the cluster names first and the one-pod groups it makes
  // after them: a named group goes before the first made one, a made one at the end.
  auto& g = cluster_.pod_groups;
  group_at_ = static_cast<size_t>(
      std::find_if(g.begin(), g.end(), [](const PodGroupSpec& x) { return x.implicit; }) -
      g.begin());
  std::vector<PodGroupSpec> named, made;
  for (PodGroupSpec& x : groups) (x.implicit ? made : named).push_back(std::move(x));
  groups_ = named.size();
  g.insert(g.begin() + static_cast<std::ptrdiff_t>(group_at_),
           std::make_move_iterator(named.begin()), std::make_move_iterator(named.end()));
  made_at_ = g.size();
  for (PodGroupSpec& x : made) g.push_back(std::move(x));
  pods_at_ = cluster_.pods.size();
  for (PodSpec& p : pods) cluster_.pods.push_back(std::move(p));
}

OffPathExtension::~OffPathExtension() {
  cluster_.pods.resize(pods_at_);
  auto& g = cluster_.pod_groups;
  g.resize(made_at_);
  g.erase(g.begin() + static_cast<std::ptrdiff_t>(group_at_),
          g.begin() + static_cast<std::ptrdiff_t>(group_at_ + groups_));
}

void CompleteAdded(const ClusterSpec& cluster, std::vector<PodGroupSpec>& groups,
                   std::vector<PodSpec>& pods, TimeNs now, std::vector<ClusterWarning>* warnings) {
  // A cluster of the added objects and what completing them reads: the queues (the default one
  // included: `cluster` is completed), the classes, and the cluster's PodGroups the pods name.
  ClusterSpec mini;
  mini.queues = cluster.queues;
  mini.priority_classes = cluster.priority_classes;
  std::unordered_set<std::string> added_groups;
  for (PodGroupSpec& g : groups) {
    added_groups.insert(g.Uid());
    mini.pod_groups.push_back(std::move(g));
  }
  std::unordered_set<std::string> named;
  for (const PodSpec& p : pods)
    if (!p.group.empty() && !added_groups.count(p.JobUid())) named.insert(p.JobUid());
  std::unordered_set<std::string> borrowed;
  for (const PodGroupSpec& g : cluster.pod_groups)
    if (named.count(g.Uid()) && borrowed.insert(g.Uid()).second) mini.pod_groups.push_back(g);
  std::unordered_set<std::string> added_pods;
  for (PodSpec& p : pods) {
    added_pods.insert(p.Key());
    mini.pods.push_back(std::move(p));
  }
  CompleteOptions complete;
  complete.now = now;
  std::vector<ClusterWarning> all = CompleteCluster(mini, complete);
  groups.clear();
  for (PodGroupSpec& g : mini.pod_groups)
    if (!borrowed.count(g.Uid()) || g.implicit) groups.push_back(std::move(g));
  pods = std::move(mini.pods);
  if (warnings == nullptr) return;
  // Only what is said of the added objects (the cluster's own were said when it was completed).
  std::unordered_set<std::string> about;
  for (const std::string& p : added_pods) about.insert("pod " + p);
  for (const PodGroupSpec& g : groups) about.insert("podGroup " + g.Uid());
  for (ClusterWarning& w : all)
    if (about.count(w.object)) warnings->push_back(std::move(w));
}

// ---- the publisher ----------------------------------------------------------------------------

OffPathSnapshots::OffPathSnapshots(std::function<ClusterSpec(TimeNs)> spec_at,
                                   std::function<TimeNs()> clock, Options options)
    : spec_at_(std::move(spec_at)), clock_(std::move(clock)), options_(options) {
  thread_ = std::thread([this] {
    NameThisThread("kiln-whatif");
    ThreadMain();
  });
}

OffPathSnapshots::~OffPathSnapshots() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<OffPathCluster> OffPathSnapshots::Take(int64_t after_session) {
  auto out = std::make_shared<OffPathCluster>();
  out->now = clock_();
  out->taken = std::chrono::steady_clock::now();
  out->after_session = after_session;
  out->spec = spec_at_(out->now);  // the only moment the binding's lock is held
  NormaliseLikeScenario(out->spec);
  CompleteOptions complete;
  complete.now = out->now;
  out->warnings = CompleteCluster(out->spec, complete);
  return out;
}

std::optional<PartialCluster> OffPathCluster::TakeSpare() {
  std::lock_guard<std::mutex> lock(spare_mu);
  if (spares.empty()) return std::nullopt;
  std::optional<PartialCluster> out(std::move(spares.back()));
  spares.pop_back();
  return out;
}

size_t OffPathCluster::spare_count() {
  std::lock_guard<std::mutex> lock(spare_mu);
  return spares.size();
}

void OffPathSnapshots::BuildSpare(OffPathCluster& copy) {
  if (!options_.spare) return;
  for (;;) {
    {
      // A newer copy is asked for: it matters more than another model of this one.
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || wanted_) return;
    }
    if (copy.spare_count() >= static_cast<size_t>(std::max(options_.spare_models, 1))) return;
    std::optional<PartialCluster> built;
    {
      std::lock_guard<std::mutex> lock(copy.mu);
      built.emplace(copy.spec);
    }
    {
      std::lock_guard<std::mutex> lock(copy.spare_mu);
      copy.spares.push_back(std::move(*built));
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++spares_;
  }
}

void OffPathSnapshots::Replenish() {
  std::lock_guard<std::mutex> lock(mu_);
  replenish_ = true;
  cv_.notify_all();
}

void OffPathSnapshots::SessionDone() {
  std::lock_guard<std::mutex> lock(mu_);
  ++sessions_;
  if (last_request_ == std::chrono::steady_clock::time_point{} ||
      std::chrono::steady_clock::now() - last_request_ > options_.demand)
    return;  // nobody asked lately: no copy
  wanted_ = true;
  cv_.notify_all();
}

void OffPathSnapshots::ThreadMain() {
  // Below the loop's priority: a copy is never more urgent than a live session.
  if (options_.nice > 0)
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), options_.nice);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || wanted_ || replenish_; });
    if (stop_) return;
    if (!wanted_) {
      // A request took the latest copy's model: build it again while the copy is current.
      replenish_ = false;
      std::shared_ptr<OffPathCluster> latest = latest_;
      lock.unlock();
      if (latest) BuildSpare(*latest);
      lock.lock();
      continue;
    }
    wanted_ = false;
    replenish_ = false;  // the new copy gets its model below
    copying_ = true;
    int64_t after = sessions_;
    lock.unlock();
    std::shared_ptr<OffPathCluster> copy = Take(after);
    lock.lock();
    copy->sequence = ++sequence_;
    if (!latest_ || latest_->taken < copy->taken) latest_ = copy;
    copying_ = false;
    cv_.notify_all();
    // Published first: a request does not wait for the model (it builds its own meanwhile).
    lock.unlock();
    BuildSpare(*copy);
    lock.lock();
  }
}

std::shared_ptr<OffPathCluster> OffPathSnapshots::Current(double* copy_seconds) {
  auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  last_request_ = start;
  // A copy being taken after the last session: it is the current state, wait for it. One asked
  // for that the thread has not started (it is still building a model) is taken here instead:
  // the request does not wait behind the thread's lower priority for more than one copy.
  cv_.wait(lock, [this] { return stop_ || !copying_; });
  wanted_ = false;
  std::shared_ptr<OffPathCluster> latest = latest_;
  bool current = latest && latest->after_session == sessions_ &&
                 start - latest->taken <= options_.max_age;
  if (!current) {
    int64_t after = sessions_;
    lock.unlock();
    latest = Take(after);  // the request builds its model; Replenish has the next one built
    lock.lock();
    latest->sequence = ++sequence_;
    // A newer one may have been published meanwhile: keep whichever was taken later.
    if (!latest_ || latest_->taken < latest->taken) latest_ = latest;
  }
  if (copy_seconds)
    *copy_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return latest;
}

uint64_t OffPathSnapshots::copies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sequence_;
}

uint64_t OffPathSnapshots::spares() const {
  std::lock_guard<std::mutex> lock(mu_);
  return spares_;
}

}  // namespace kiln::server
