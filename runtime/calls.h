#pragma once
// Direct calls of the session's extension points (scenario-format.md, "Calling extension points
// directly: `calls`"): the unit-test layer for policies. A scenario lists invocations such as
// `{fn: predicate, task: c1/p1, node: n1}`; they run in order against the open session — right
// after it opens when the conf has no actions, after the actions otherwise — through the same
// dispatchers the actions use (tiers, enable flags, combination rules), and each gets a result.
//
// The callable functions come from the extension-point table (runtime/extension_points.h): every
// point a policy can handle is callable under its handler name, with inputs derived from its
// parameter kinds. Four names differ from a plain dispatch, as the contract says:
//   allocate      ssn.Allocate(task, node): the task goes Allocated on the node, allocate events
//                 fire, and the job's allocated tasks are bound once it is ready (result null);
//   deallocate    fires the deallocate event for the task (result null);
//   job_enqueued  fires the enqueued event (result null);
//   *_order       the plugins' combined comparison of `l` and `r` (-1, 0, 1) without the
//                 session's fallback (creation time, UID), so a tie between plugins shows as 0.
// session_open and session_close are not callable (the session has already opened).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/extension_points.h"
#include "runtime/status.h"

namespace kiln {

class Session;
struct Task;

// What a call returned, or what a scenario expects it to return.
struct CallValue {
  enum class Kind : uint8_t {
    Null,        // notifications, allocate
    Bool,        // gates and votes
    Int,         // orders: -1, 0, 1
    Number,      // node_order
    Status,      // predicate, pre_predicate: {code, reason}
    Tasks,       // victims: pod keys, compared as a set
    NodeScores,  // batch_node_order: node → score
    Node,        // best_node: a node name, or "" for none (printed as null)
    Error,       // the call failed (text); never equal to an expectation
  };
  Kind kind = Kind::Null;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string code;    // Status: "Success", "Unschedulable", ...
  std::string text;    // Status: the reasons joined by ", "; Node: the name; Error: the message
  std::vector<std::string> names;  // Tasks: pod keys
  std::vector<std::pair<std::string, double>> scores;  // NodeScores, in input order
};

// One entry of `calls:`. Names are as the scenario writes them: pods `<ns>/<name>`, jobs
// `<ns>/<podgroup>`, queues and nodes by name.
struct CallSpec {
  std::string fn;
  ExtensionPoint point{};
  std::optional<std::string> task, node, job, queue, l, r;
  // sub_job_ready/sub_job_pipelined: a sub-job uid (runtime/sub_job.h: the job uid for its default
  // sub-job, else "<job uid>/<policy>-<values>"); sub_job_order takes two as `l` and `r`.
  std::optional<std::string> sub_job;
  // preemptable/reclaimable: absent or null is an empty task (no job, no requests).
  bool has_preemptor = false;  // the key was written (null or a pod)
  std::optional<std::string> preemptor;
  std::optional<std::vector<std::string>> candidates;  // victim points
  std::optional<std::vector<std::string>> nodes;       // batch_node_order, best_node (default all)
  std::optional<std::vector<double>> scores;           // best_node: per `nodes` (default zeros)
  SourceLocation where;
  std::optional<CallValue> result;  // set by RunCalls; in `expect.calls`, the expected value
};

// Which input keys a callable fn takes and what kind of result it gives; nullopt when `fn` is not
// callable (unknown, or session_open/session_close).
struct CallShape {
  ExtensionPoint point;
  std::vector<std::string_view> required;  // keys that must be given
  std::vector<std::string_view> optional;  // keys that may be given
  CallValue::Kind result;
};
std::optional<CallShape> ShapeOfCall(std::string_view fn);
// Names of every callable fn, in table order (for "did you mean" and the docs).
std::vector<std::string_view> CallableFunctions();

// Runs `calls` in order against `ssn`, setting each result. `detached` are tasks that belong to
// no job of the session (pods whose group the scenario does not define); they are looked up
// after the session's own tasks. Names that the session does not know (a pod whose job the
// snapshot dropped and that is not detached) give an Error result.
void RunCalls(Session& ssn, std::vector<CallSpec>& calls, const std::vector<Task*>& detached = {});

// Differences between the expected and the actual calls, one line each; empty when they match.
// Entries are compared by position; victim lists as sets; numbers to 1e-9 relative.
std::vector<std::string> CheckCalls(const std::vector<CallSpec>& expected,
                                    const std::vector<CallSpec>& got);

// One entry of `expect.calls` against the call the scenario ran at its position: `call` describes
// it ("predicate(task: c1/p1, node: n1)"); `checked` when a result was expected (or the entry
// does not line up); `diff` is CheckCalls' line for it, empty when it passed. Entries past the
// shorter list are included with a diff.
struct CallCheck {
  size_t index = 0;
  std::string call;
  bool checked = false;
  std::string diff;
};
std::vector<CallCheck> CheckEachCall(const std::vector<CallSpec>& expected,
                                     const std::vector<CallSpec>& got);

// "predicate(task: c1/p1, node: n1)": the call's function and inputs as the diffs name it.
std::string DescribeCall(const CallSpec& c);

// "true", "-1", "12.5", "{code: Unschedulable, reason: ...}", "[c1/p2, c1/p3]", "null".
std::string FormatCallValue(const CallValue& v);

}  // namespace kiln
