#pragma once
// Helpers for the runtime core's unit tests: small clusters, confs with every loader default, and
// a C++ test plugin whose OnSessionOpen runs a lambda.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/conf.h"
#include "runtime/model.h"
#include "runtime/plugin.h"
#include "runtime/session.h"

namespace kiln::testing {

// cpu in milli-cores, memory in bytes, extra scalars by name.
inline Resource Res(double cpu, double mem,
                    std::vector<std::pair<std::string, double>> scalars = {}) {
  Resource r;
  r.Set(kCpu, cpu);
  r.Set(kMemory, mem);
  for (auto& [name, v] : scalars) r.Set(*ResourceRegistry::Intern(name), v);
  return r;
}

// A plugin entry as the YAML loader would produce it: every loader-defaulted flag on.
inline PluginOption LoaderOption(std::string name) {
  PluginOption o{};  // `PluginOption o;` trips a libstdc++ recursive-instantiation bug in conf.h under clang-16
  o.name = std::move(name);
  for (int i = 0; i < kPluginFlagCount; ++i)
    if (kPluginFlags[i].defaulted_by_loader) o.flags[i] = true;
  return o;
}

// tiers: plugin names per tier.
inline SchedulerConf MakeConf(std::vector<std::vector<std::string>> tiers) {
  SchedulerConf conf;
  for (auto& names : tiers) {
    Tier t;
    for (auto& n : names) t.plugins.push_back(LoaderOption(n));
    conf.tiers.push_back(std::move(t));
  }
  return conf;
}

class LambdaPlugin : public Plugin {
 public:
  using OpenFn = std::function<void(Session&, PluginHandle)>;
  LambdaPlugin(OpenFn open, std::function<void(Session&)> close)
      : open_(std::move(open)), close_(std::move(close)) {}
  Status OnSessionOpen(Session& ssn, PluginHandle self) override {
    if (open_) open_(ssn, self);
    return Status::Ok();
  }
  void OnSessionClose(Session& ssn) override {
    if (close_) close_(ssn);
  }

 private:
  OpenFn open_;
  std::function<void(Session&)> close_;
};

inline void AddPlugin(PluginRegistry& reg, const std::string& name, LambdaPlugin::OpenFn open,
                      std::function<void(Session&)> close = {}) {
  Status s = reg.Register(name, [open, close](const PluginOption&) -> Result<std::unique_ptr<Plugin>> {
    return std::unique_ptr<Plugin>(std::make_unique<LambdaPlugin>(open, close));
  });
  (void)s;
}

// A small cluster builder: queue "default", nodes, one job per call with its tasks.
struct ClusterBuilder {
  Cluster cluster;

  Queue& AddQueue(std::string name, int64_t weight = 1) {
    Queue& q = cluster.NewQueue();
    q.name = std::move(name);
    q.weight = weight;
    return q;
  }
  Node& AddNode(std::string name, Resource allocatable) {
    Node& n = cluster.NewNode();
    n.name = std::move(name);
    n.allocatable = allocatable;
    n.capacity = allocatable;
    return n;
  }
  Job& AddJob(std::string ns, std::string name, std::string queue, int64_t min_member) {
    Job& j = cluster.NewJob();
    j.namespace_ = std::move(ns);
    j.name = std::move(name);
    j.uid = j.namespace_ + "/" + j.name;
    j.queue_name = std::move(queue);
    j.min_available = min_member;
    return j;
  }
  Task& AddTask(const Job& job, std::string name, Resource requests,
                TaskStatus status = TaskStatus::Pending, std::string node = "",
                std::string role = "") {
    Task& t = cluster.NewTask();
    t.namespace_ = job.namespace_;
    t.name = std::move(name);
    t.uid = t.namespace_ + "-" + t.name;
    t.job_uid = job.uid;
    t.status = status;
    t.node_name = std::move(node);
    t.role = std::move(role);
    t.SetRequests(requests);
    return t;
  }
};

}  // namespace kiln::testing
