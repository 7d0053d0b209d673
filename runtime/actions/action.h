#pragma once
// The scheduling actions a session runs, in the order scheduler.conf's `actions:` lists them
// (volcano-semantics.md §1.3, §4). An action is stateless: everything it learns lives in the
// Session it is given, and its arguments come from ssn.conf().ArgumentsFor(name()).

#include <span>
#include <string_view>

namespace kiln {

class Session;

class Action {
 public:
  virtual ~Action() = default;
  virtual std::string_view name() const = 0;
  // Runs the action once over the open session. The session's conf supplies the action's
  // arguments and which other actions are configured (allocate behaves differently when enqueue
  // is). Runs on one thread; the action may fan read-only extension points out to a ThreadPool.
  virtual void Execute(Session& ssn) const = 0;
};

// An action that makes one `Run(ssn)` per session and runs it: the run holds what the action
// learns while it works (candidates, statements), so the action itself stays stateless.
template <typename Run>
class RunAction final : public Action {
 public:
  explicit RunAction(std::string_view name) : name_(name) {}
  std::string_view name() const override { return name_; }
  void Execute(Session& ssn) const override { Run(ssn).Run(); }

 private:
  std::string_view name_;
};

// The action Kiln implements under `name`, or nullptr.
const Action* FindAction(std::string_view name);

// Names of the actions Kiln implements, in Volcano's registration order.
std::span<const std::string_view> ActionNames();

// Every action name Volcano registers (enqueue, allocate, backfill, preempt, reclaim, shuffle,
// gangpreempt, gangreclaim). A conf loader uses it to tell "a Volcano action Kiln does not
// support" (IsVolcanoActionName && !FindAction) from "no such action".
bool IsVolcanoActionName(std::string_view name);

}  // namespace kiln
