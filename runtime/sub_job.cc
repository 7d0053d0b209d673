#include "runtime/sub_job.h"

#include <charconv>
#include <map>

#include "runtime/hyper_node.h"

namespace kiln {

int64_t SubJob::ReadyTaskNum() const {
  int64_t n = 0;
  for (const Task* t : tasks)
    if (InMask(t->status, kAllocatedStatusMask) || t->status == TaskStatus::Succeeded) ++n;
  return n;
}

int64_t SubJob::WaitingTaskNum() const {
  int64_t n = 0;
  for (const Task* t : tasks) n += t->status == TaskStatus::Pipelined;
  return n;
}

int64_t SubJob::PendingBestEffortTaskNum() const {
  int64_t n = 0;
  for (const Task* t : tasks) n += t->status == TaskStatus::Pending && t->best_effort;
  return n;
}

int64_t SubJob::AllocatedTaskNum() const {
  int64_t n = 0;
  for (const Task* t : tasks) n += AllocatedStatus(t->status);
  return n;
}

Resource SubJob::PendingRequest() const {
  Resource sum;
  for (const Task* t : tasks)
    if (t->status == TaskStatus::Pending) sum.Add(t->init_resreq());
  return sum;
}

bool Job::ContainsNetworkTopology() const {
  if (HasNetworkTopology()) return true;
  for (const auto& s : sub_jobs)
    if (s->HasNetworkTopology()) return true;
  return false;
}

bool Job::ContainsHardTopology() const {
  if (hard_topology) return true;
  for (const auto& s : sub_jobs)
    if (s->hard_topology) return true;
  return false;
}

SubJob* Job::DefaultSubJob() const {
  for (const auto& s : sub_jobs)
    if (s->IsDefault()) return s.get();
  return nullptr;
}

namespace {

// Volcano's getSubJobMatchValues: the values of the policy's matchLabelKeys on the pod, or
// nothing when the selector rejects it, a key is missing or empty, or there are no keys.
std::vector<std::string> MatchValues(const SubGroupPolicySpec& p, const Task* t) {
  if (p.label_selector && !LabelsMatch(*p.label_selector, t->labels())) return {};
  std::vector<std::string> values;
  for (const std::string& key : p.match_label_keys) {
    auto it = t->labels().find(key);
    if (it == t->labels().end() || it->second.empty()) return {};
    values.push_back(it->second);
  }
  return values;
}

}  // namespace

void BuildSubJobs(Cluster& cluster) {
  for (Job* job : cluster.jobs()) {
    for (Task* t : job->tasks) t->sub_job = nullptr;
    job->sub_jobs.clear();
    if (!job->HasSubGroupPolicy() && !job->HasNetworkTopology()) continue;
    // The default sub-job exists once a task falls into it (Volcano's getOrCreateDefaultSubJob).
    std::map<std::string, SubJob*, std::less<>> by_uid;
    auto default_sub_job = [&]() {
      auto [it, inserted] = by_uid.try_emplace(job->uid, nullptr);
      if (inserted) {
        auto s = std::make_unique<SubJob>();
        s->uid = job->uid;
        s->job = job;
        s->min_available = job->HasSubGroupPolicy() ? 1 : job->min_available;
        s->network_topology = job->network_topology;
        it->second = s.get();
        job->sub_jobs.push_back(std::move(s));
      }
      return it->second;
    };
    for (Task* t : job->tasks) {
      SubJob* sub = nullptr;
      for (const SubGroupPolicySpec& p : job->sub_group_policy) {
        std::vector<std::string> values = MatchValues(p, t);
        if (values.empty()) continue;
        std::string id;
        for (const std::string& v : values) id += (id.empty() ? "" : "-") + v;
        std::string uid = job->uid + "/" + p.name + "-" + id;
        auto [it, inserted] = by_uid.try_emplace(uid, nullptr);
        if (inserted) {
          auto s = std::make_unique<SubJob>();
          s->uid = std::move(uid);
          s->group = p.name;
          s->job = job;
          s->policy = &p;
          s->min_available = p.sub_group_size.value_or(1);
          s->network_topology = p.network_topology;
          int64_t index = 0;
          const std::string& first = values.front();
          auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), index);
          if (ec == std::errc() && end == first.data() + first.size()) s->match_index = index;
          it->second = s.get();
          job->sub_jobs.push_back(std::move(s));
        }
        sub = it->second;
        break;
      }
      if (sub == nullptr) sub = default_sub_job();
      sub->tasks.push_back(t);
      if (t->priority > sub->priority) sub->priority = t->priority;
      t->sub_job = sub;
    }
    // The nominations carried from earlier sessions, as the policies' view shows them (a name
    // no HyperNode has any more shows as none; allocate then drops the nomination).
    if (const HyperNodeTree* tree = cluster.hyper_nodes()) {
      for (const auto& sub : job->sub_jobs) {
        auto it = cluster.nominated_hyper_nodes().find(sub->uid);
        sub->nominated_hyper_node =
            it == cluster.nominated_hyper_nodes().end() ? nullptr : tree->Find(it->second);
      }
    }
  }
}

}  // namespace kiln
