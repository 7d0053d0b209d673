#pragma once
// The single source of truth for the session's extension points (volcano-semantics.md §2).
//
// Everything that needs to know the points derives from KILN_EXTENSION_POINTS below: the
// ExtensionPoint enum, the scheduler.conf flag that gates each point, the session's dispatcher
// (how plugin answers combine across tiers), and the policy compiler's handler signatures.
// Add a point here and every consumer sees it; there is no second hand-kept list.
//
// Columns:
//   Id        C++ enumerator (ExtensionPoint::Id)
//   handler   the handler name a policy writes (`on job_order(l: Job, r: Job) -> int`)
//   flag      scheduler.conf key that gates the point ("" = always on when registered)
//   combine   how answers of several plugins combine (Combine enum below)
//   default   the answer when no plugin decides (Fallback enum below)
//   result    ABI kind of the answer (AbiKind enum below)
//   params... ABI kinds of the handler's parameters, in order

#include <array>
#include <cstdint>
#include <string_view>

namespace kiln {

// clang-format off
#define KILN_EXTENSION_POINTS(X)                                                                     \
  X(JobOrder,         "job_order",          "enableJobOrder",     FirstNonZero,     CreationThenUid,   Int,        Job, Job)               \
  X(QueueOrder,       "queue_order",        "enableQueueOrder",   FirstNonZero,     CreationThenName,  Int,        Queue, Queue)           \
  X(VictimQueueOrder, "victim_queue_order", "",                   FirstNonZero,     InverseQueueOrder, Int,        Queue, Queue, Queue)    \
  X(TaskOrder,        "task_order",         "enableTaskOrder",    FirstNonZero,     CompareTask,       Int,        Task, Task)             \
  X(PrePredicate,     "pre_predicate",      "enablePredicate",    FirstError,       Pass,              Status,     Task)                   \
  X(Predicate,        "predicate",          "enablePredicate",    FirstError,       Pass,              Status,     Task, Node)             \
  X(NodeOrder,        "node_order",         "enableNodeOrder",    Sum,              Zero,              Float,      Task, Node)             \
  X(BatchNodeOrder,   "batch_node_order",   "enableNodeOrder",    SumPerNode,       Zero,              FloatList,  Task, NodeList)         \
  X(BestNode,         "best_node",          "enableBestNode",     FirstNonNull,     NoNode,            NodeOrNone, Task, NodeList)         \
  X(Preemptable,      "preemptable",        "enablePreemptable",  VictimIntersect,  NoVictims,         Victims,    Task, TaskList)         \
  X(Reclaimable,      "reclaimable",        "enableReclaimable",  VictimIntersect,  NoVictims,         Victims,    Task, TaskList)         \
  X(UnifiedEvictable, "unified_evictable",  "",                   VictimIntersect,  NoVictims,         Victims,    Job, TaskList)          \
  X(VictimTasks,      "victim_tasks",       "enabledVictim",      TierUnion,        NoVictims,         TaskList,   TaskList)               \
  X(Overused,         "overused",           "enabledOverused",    Any,              False,             Bool,       Queue)                  \
  X(Allocatable,      "allocatable",        "enabledAllocatable", All,              True,              Bool,       Queue, Task)            \
  X(Preemptive,       "preemptive",         "enablePreemptive",   All,              True,              Bool,       Queue, Task)            \
  X(JobReady,         "job_ready",          "enableJobReady",     All,              True,              Bool,       Job)                    \
  X(JobPipelined,     "job_pipelined",      "enableJobPipelined", Vote,             True,              Vote,       Job)                    \
  X(JobValid,         "job_valid",          "",                   FirstInvalid,     Pass,              Validation, Job)                    \
  X(JobEnqueueable,   "job_enqueueable",    "enableJobEnqueued",  Vote,             True,              Vote,       Job)                    \
  X(JobEnqueued,      "job_enqueued",       "enableJobEnqueued",  CallAll,          Nothing,           Void,       Job)                    \
  X(JobStarving,      "job_starving",       "enableJobStarving",  FirstTierAll,     False,             Bool,       Job)                    \
  X(SimulateRemoveTask, "simulate_remove_task", "enablePreemptable", CallAll,        Nothing,           Void,       Task, Task, Node)       \
  X(SimulateAddTask,  "simulate_add_task",  "enablePreemptable",  CallAll,          Nothing,           Void,       Task, Task, Node)       \
  X(SimulatePredicate, "simulate_predicate", "enablePredicate",   FirstError,       Pass,              Status,     Task, Node)             \
  X(SimulateAllocatable, "simulate_allocatable", "enabledAllocatable", All,          True,              Bool,       Queue, Task)            \
  X(OnAllocate,       "allocate",           "",                   CallAll,          Nothing,           Void,       Task)                   \
  X(OnDeallocate,     "deallocate",         "",                   CallAll,          Nothing,           Void,       Task)                   \
  X(SessionOpen,      "session_open",       "",                   CallAll,          Nothing,           Void)                               \
  X(SessionClose,     "session_close",      "",                   CallAll,          Nothing,           Void)                               \
  X(ShowQueue,        "show_queue",         "",                   CallAll,          Nothing,           Void,       Queue)      \
  X(HyperNodeOrder,   "hyper_node_order",   "enabledHyperNodeOrder", SumPerNode,    Zero,              FloatList,  SubJob, HyperNodeList) \
  X(HyperNodeGradientForJob, "hyper_node_gradient_for_job", "enabledHyperNodeGradient", FirstDecides, SearchRootOnly, HyperNodeList, Job, HyperNodeList) \
  X(HyperNodeGradientForSubJob, "hyper_node_gradient_for_sub_job", "enabledHyperNodeGradient", FirstDecides, SearchRootOnly, HyperNodeList, SubJob, HyperNodeList) \
  X(SubJobReady,      "sub_job_ready",      "enabledSubJobReady", All,              True,              Bool,       SubJob)                 \
  X(SubJobPipelined,  "sub_job_pipelined",  "enabledSubJobPipelined", Vote,         True,              Vote,       SubJob)                 \
  X(SubJobOrder,      "sub_job_order",      "enabledSubJobOrder", FirstNonZero,     MatchIndexThenUid, Int,        SubJob, SubJob)
// clang-format on

// hyper_node_order / hyper_node_gradient_for_job / hyper_node_gradient_for_sub_job
// (network-topology-aware; Volcano's HyperNodeOrderMapFn, HyperNodeGradientForJobFn and
// HyperNodeGradientForSubJobFn): allocate offers a job placed by the HyperNode search (a hard
// network topology after the session's normalisation, on the job or a sub-job, or a
// subGroupPolicy) the candidate HyperNodes of one search — the subtree under the search root,
// root first, then level by level — and asks which of them the job, then each of its sub-jobs
// (runtime/sub_job.h), may be placed in; the action tries those tier by tier, lowest first, with
// a dry run in each. hyper_node_order scores, for the sub-job, the HyperNodes whose dry run placed
// it; the best score wins.
//
// sub_job_ready / sub_job_pipelined / sub_job_order (gang; Volcano's SubJobReadyFn,
// SubJobPipelinedFn, SubJobOrderFn): while allocate places a job with a subGroupPolicy, whether
// one sub-job has enough tasks placed, or placed and pipelined, and which sub-job goes first. For a
// job without a subGroupPolicy the action asks job_ready / job_pipelined instead (Volcano's
// Session.SubJobReady does the same), so those jobs never reach these handlers.


// unified_evictable (gangpreempt/gangreclaim) gets the starving job and the candidates of one
// eviction; Volcano's EvictionContext.Kind is implied by the candidates: gangpreempt offers only
// tasks of the job's own queue, gangreclaim only tasks of other queues.

// simulate_remove_task/simulate_add_task are gated by enablePreemptable OR enabledAllocatable
// (Volcano's isEnabled(plugin.EnabledPreemptable) || isEnabled(plugin.EnabledAllocatable)); the
// table names the first, Session::PointEnabled and the handler table add the second.

// Every scheduler.conf plugin flag Volcano accepts, with whether the YAML loader defaults an
// unset flag to true (volcano-semantics.md §1.1). Flags that gate no point Kiln implements are
// still accepted so that Volcano confs load unchanged.
// clang-format off
#define KILN_PLUGIN_FLAGS(X)                  \
  X(enableJobOrder,            true)         \
  X(enableHierarchy,           false)        \
  X(enableJobReady,            true)         \
  X(enableJobPipelined,        true)         \
  X(enableTaskOrder,           true)         \
  X(enablePreemptable,         true)         \
  X(enableReclaimable,         true)         \
  X(enablePreemptive,          true)         \
  X(enableQueueOrder,          true)         \
  X(enabledClusterOrder,       false)        \
  X(enablePredicate,           true)         \
  X(enableBestNode,            true)         \
  X(enableNodeOrder,           true)         \
  X(enableTargetJob,           true)         \
  X(enableReservedNodes,       true)         \
  X(enableJobEnqueued,         true)         \
  X(enabledVictim,             true)         \
  X(enableJobStarving,         true)         \
  X(enabledOverused,           true)         \
  X(enabledAllocatable,        true)         \
  X(enabledHyperNodeOrder,     true)         \
  X(enabledSubJobReady,        true)         \
  X(enabledSubJobPipelined,    true)         \
  X(enabledSubJobOrder,        true)         \
  X(enabledHyperNodeGradient,  true)
// clang-format on

enum class ExtensionPoint : uint8_t {
#define KILN_X(Id, ...) Id,
  KILN_EXTENSION_POINTS(KILN_X)
#undef KILN_X
};

inline constexpr int kExtensionPointCount = 0
#define KILN_X(...) +1
    KILN_EXTENSION_POINTS(KILN_X)
#undef KILN_X
    ;

// How the session combines the answers of the plugins that registered a point
// (volcano-semantics.md §2.1, §2.2, §2.3).
enum class Combine : uint8_t {
  FirstNonZero,     // tiers in order, plugins in order: first non-zero comparison wins; default otherwise
  FirstError,       // first plugin that fails decides; pass when none fails
  Sum,              // scores add up; an error aborts
  SumPerNode,       // per-node scores add up; an error aborts
  FirstNonNull,     // first plugin that names a node decides
  VictimIntersect,  // abstains ignored; intersect within a tier; first tier with victims decides
  TierUnion,        // union within a tier; first tier with a non-empty set decides
  Any,              // OR: first true wins
  All,              // AND: first false wins
  Vote,             // Reject anywhere in a reached tier wins; a Permit ends the walk at its tier
  FirstInvalid,     // first plugin reporting an invalid job decides
  FirstTierAll,     // the first tier with any registration decides, by AND of its plugins
  FirstDecides,     // the first registered plugin (tiers, then plugins, in order) decides
  CallAll,          // every plugin is called (events, notifications)
};

// The answer a point gives when no registered plugin decides (volcano-semantics.md §2.1's
// "default" column). For the order points it is a fallback comparison.
enum class Fallback : uint8_t {
  CreationThenUid,    // job order: earlier creation time first, then UID
  CreationThenName,   // queue order: earlier creation time first, then name
  InverseQueueOrder,  // victim queue order: !QueueOrderFn(l, r)
  CompareTask,        // task order: pod-name index, then creation time, then UID
  Pass,               // predicates pass; a job is valid
  Zero,               // scores add nothing
  NoNode,             // best node: the caller picks among the best-scored nodes
  NoVictims,          // nobody is evicted
  True,
  False,
  Nothing,            // notifications: no answer
  SearchRootOnly,     // hyper_node_gradient: only the HyperNode the search starts from
  MatchIndexThenUid,  // sub-job order: lower first matchLabelKeys value first, then sub-job uid
};

// ABI kinds of handler parameters and results. The compiler maps each to a language type; the
// runtime maps each to a C type in the callback signature.
enum class AbiKind : uint8_t {
  Void, Int, Float, Bool, Vote, Status, Validation,
  Task, Job, Node, Queue, TaskList, NodeList, FloatList, NodeOrNone, Victims,
  HyperNodeList,  // list<HyperNode>: as a parameter the candidates; as a result, a subset of them
  SubJob,         // a job's sub-group gang (runtime/sub_job.h)
};

struct ExtensionPointInfo {
  ExtensionPoint id;
  std::string_view enum_name;  // "JobOrder"
  std::string_view handler;    // "job_order"
  std::string_view flag;       // "enableJobOrder", or "" when always on
  Combine combine;
  Fallback fallback;
  AbiKind result;
  std::array<AbiKind, 3> params;
  uint8_t param_count;
};

namespace detail {
template <typename... K>
constexpr ExtensionPointInfo MakePointInfo(ExtensionPoint id, std::string_view enum_name,
                                           std::string_view handler, std::string_view flag,
                                           Combine combine, Fallback fallback, AbiKind result,
                                           K... params) {
  return ExtensionPointInfo{id,     enum_name,   handler, flag,
                            combine, fallback, result,  {params...},
                            static_cast<uint8_t>(sizeof...(K))};
}
}  // namespace detail

inline constexpr std::array<ExtensionPointInfo, kExtensionPointCount> kExtensionPoints = {{
#define KILN_ABI(k) AbiKind::k
#define KILN_X(Id, handler, flag, combine, fallback, result, ...)                                \
  detail::MakePointInfo(ExtensionPoint::Id, #Id, handler, flag, Combine::combine,                 \
                        Fallback::fallback, AbiKind::result KILN_X_PARAMS(__VA_ARGS__)),
#define KILN_X_PARAMS(...) __VA_OPT__(, KILN_X_MAP(__VA_ARGS__))
#define KILN_X_MAP(...) KILN_X_MAP_N(__VA_ARGS__, KILN_X_MAP3, KILN_X_MAP2, KILN_X_MAP1)(__VA_ARGS__)
#define KILN_X_MAP_N(_1, _2, _3, N, ...) N
#define KILN_X_MAP1(a) AbiKind::a
#define KILN_X_MAP2(a, b) AbiKind::a, AbiKind::b
#define KILN_X_MAP3(a, b, c) AbiKind::a, AbiKind::b, AbiKind::c
    KILN_EXTENSION_POINTS(KILN_X)
#undef KILN_X
#undef KILN_ABI
}};

constexpr std::string_view Describe(Fallback f) {
  switch (f) {
    case Fallback::CreationThenUid: return "earlier creation time first, then UID";
    case Fallback::CreationThenName: return "earlier creation time first, then name";
    case Fallback::InverseQueueOrder: return "the reverse of queue order";
    case Fallback::CompareTask: return "pod-name index, then creation time, then UID";
    case Fallback::Pass: return "pass";
    case Fallback::Zero: return "0";
    case Fallback::NoNode: return "none (the best-scored node)";
    case Fallback::NoVictims: return "no victims";
    case Fallback::True: return "true";
    case Fallback::False: return "false";
    case Fallback::Nothing: return "-";
    case Fallback::SearchRootOnly: return "only the HyperNode searched from";
    case Fallback::MatchIndexThenUid: return "lower match index first, then sub-job uid";
  }
  return "";
}

constexpr const ExtensionPointInfo& Info(ExtensionPoint p) {
  return kExtensionPoints[static_cast<int>(p)];
}

// Looks a point up by its handler name ("job_order"); nullptr when there is none.
constexpr const ExtensionPointInfo* FindExtensionPoint(std::string_view handler) {
  for (const auto& info : kExtensionPoints)
    if (info.handler == handler) return &info;
  return nullptr;
}

// The points the actions call from the node pool's threads, many calls at once for one task
// (runtime/actions/helpers.cc: the predicate search and node scoring). Their handlers must not
// write anything shared; the policy checker forbids assigning state in them
// (compiler/passes/check_concurrency.cc).
constexpr bool RunsConcurrently(ExtensionPoint p) {
  return p == ExtensionPoint::Predicate || p == ExtensionPoint::NodeOrder;
}

}  // namespace kiln
