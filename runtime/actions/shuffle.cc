// shuffle (volcano-semantics.md §4.6): asks the plugins which running tasks should make room
// (VictimTasks — e.g. a rescheduling policy's low-utilisation picks) and evicts them at once.
//
// Stages:
//   1. Every Running task of every job, in cluster order.
//   2. VictimTasks (per tier union; the first tier with a non-empty set decides).
//   3. Session::Evict each victim immediately (no statement).

#include <spdlog/spdlog.h>

#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/session.h"

namespace kiln {
namespace {

class Shuffle final : public Action {
 public:
  std::string_view name() const override { return "shuffle"; }

  void Execute(Session& ssn) const override {
    // 1.
    std::vector<Task*> running;
    for (Job* job : ssn.cluster().jobs())
      for (Task* t : job->TasksWith(TaskStatus::Running)) running.push_back(t);
    // 2. and 3.
    for (Task* victim : ssn.VictimTasks(running)) {
      if (Status s = ssn.Evict(victim, "shuffle"); !s.ok())
        spdlog::error("shuffle: evicting {} failed: {}", victim->Key(), s.error().message);
    }
  }
};

}  // namespace

const Action& ShuffleAction() {
  static const Shuffle action;
  return action;
}

}  // namespace kiln
