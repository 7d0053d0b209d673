#include "runtime/actions/action.h"

#include <algorithm>
#include <array>

#include "runtime/actions/action_list.h"

namespace kiln {
namespace {

constexpr std::array<std::string_view, 8> kVolcanoActionNames = {
    "enqueue", "allocate", "backfill",    "preempt",
    "reclaim", "shuffle",  "gangpreempt", "gangreclaim",
};

struct Registry {
  std::array<const Action*, 8> actions;
  std::array<std::string_view, 8> names;
};

const Registry& TheRegistry() {
  static const Registry registry = [] {
    Registry r{{&EnqueueAction(), &AllocateAction(), &BackfillAction(), &PreemptAction(),
                &ReclaimAction(), &ShuffleAction(), &GangPreemptAction(), &GangReclaimAction()},
               {}};
    for (size_t i = 0; i < r.actions.size(); ++i) r.names[i] = r.actions[i]->name();
    return r;
  }();
  return registry;
}

}  // namespace

const Action* FindAction(std::string_view name) {
  for (const Action* action : TheRegistry().actions)
    if (action->name() == name) return action;
  return nullptr;
}

std::span<const std::string_view> ActionNames() { return TheRegistry().names; }

bool IsVolcanoActionName(std::string_view name) {
  return std::find(kVolcanoActionNames.begin(), kVolcanoActionNames.end(), name) !=
         kVolcanoActionNames.end();
}

}  // namespace kiln
