#pragma once
// One scheduling session (volcano-semantics.md §2): the cluster snapshot, the tiers, the clock,
// the handlers plugins registered, the dispatchers that combine their answers, the mutation
// primitives, and the decisions the session made.
//
// Handlers are C function pointers with a `void* ctx` first argument, so JIT-compiled policies
// register directly. Their signatures are derived from the extension-point table's ABI kinds
// (HandlerFn<P> below):
//   parameters, after ctx:  Task/Job/Node/Queue → const T*;  TaskList → const Task* const*, size_t;
//                           NodeList → const Node* const*, size_t
//   then by result kind:
//     Int        → returns int32_t (<0: left first)
//     Float      → returns int32_t (0 ok, else error); extra out param double* score
//     FloatList  → returns int32_t (0 ok, else error); extra double* scores (n, zeroed)
//     Bool       → returns bool
//     Vote       → returns int32_t: -1 Reject, 0 Abstain, 1 Permit
//     Status     → returns int32_t StatusCode; extra KStatusOut* (kiln_status_add_reason)
//     Validation → returns bool (true = valid); extra KStatusOut* (reason + message)
//     NodeOrNone → returns const Node* (null = no opinion); extra const double* scores (per node)
//     Victims    → returns int32_t (0 = abstain); extra uint8_t* selected (n, zeroed): 1 = victim
//     TaskList   → returns void; extra uint8_t* selected (n, zeroed)
//     Void       → returns void
// A handler that hits a policy fault calls kiln_policy_fault(); the session logs it with the
// plugin's name, counts it, and treats that answer as the point's abstain/failure:
//   abstain (answer ignored): orders, node scores, best node, victims, votes, job_valid,
//                             overused, job_enqueued and events
//   failure: pre_predicate/predicate (StatusCode::Error on that node), allocatable, preemptive,
//            job_ready and job_starving (false)
// Faults have a kind (FaultKind): a host function's exception, an allocation over the call's
// memory budget, or a call over its loop budget (compiled loops count their iterations in the
// thread's CurrentCall::fuel and stop when it runs out). A plugin whose handlers fault
// PluginFaultLimit() times in one session is disabled for the rest of it (its handlers are no
// longer called, as if the conf did not name it), with a warning naming it.
//
// Thread safety: dispatchers for read-only points (predicate, node order, …) may run concurrently
// from the actions' worker threads; mutation primitives and Statement run on one thread.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/abi.h"
#include "runtime/coarse_clock.h"
#include "runtime/conf.h"
#include "runtime/extension_points.h"
#include "runtime/fit_error.h"
#include "runtime/model.h"
#include "runtime/plugin.h"
#include "runtime/score_cache.h"
#include "runtime/status.h"
#include "runtime/thread_pool.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Handler signatures derived from the table.

namespace detail {
template <AbiKind K> struct AbiParams { using type = std::tuple<>; };
template <> struct AbiParams<AbiKind::Task> { using type = std::tuple<const Task*>; };
template <> struct AbiParams<AbiKind::Job> { using type = std::tuple<const Job*>; };
template <> struct AbiParams<AbiKind::Node> { using type = std::tuple<const Node*>; };
template <> struct AbiParams<AbiKind::Queue> { using type = std::tuple<const Queue*>; };
template <> struct AbiParams<AbiKind::TaskList> {
  using type = std::tuple<const Task* const*, size_t>;
};
template <> struct AbiParams<AbiKind::NodeList> {
  using type = std::tuple<const Node* const*, size_t>;
};
template <> struct AbiParams<AbiKind::HyperNodeList> {
  using type = std::tuple<const HyperNode* const*, size_t>;
};
template <> struct AbiParams<AbiKind::SubJob> { using type = std::tuple<const SubJob*>; };

template <AbiKind R> struct AbiResult;
// A result kind's return type and the out parameters it adds after the inputs.
template <typename Ret, typename... Extra> struct AbiReturns {
  using ret = Ret;
  using extra = std::tuple<Extra...>;
};
template <> struct AbiResult<AbiKind::Void> : AbiReturns<void> {};
template <> struct AbiResult<AbiKind::Int> : AbiReturns<int32_t> {};
template <> struct AbiResult<AbiKind::Bool> : AbiReturns<bool> {};
template <> struct AbiResult<AbiKind::Vote> : AbiReturns<int32_t> {};
template <> struct AbiResult<AbiKind::Float> : AbiReturns<int32_t, double*> {};
template <> struct AbiResult<AbiKind::FloatList> : AbiReturns<int32_t, double*> {};
template <> struct AbiResult<AbiKind::Status> : AbiReturns<int32_t, KStatusOut*> {};
template <> struct AbiResult<AbiKind::Validation> : AbiReturns<bool, KStatusOut*> {};
template <> struct AbiResult<AbiKind::NodeOrNone> : AbiReturns<const Node*, const double*> {};
template <> struct AbiResult<AbiKind::Victims> : AbiReturns<int32_t, uint8_t*> {};
template <> struct AbiResult<AbiKind::TaskList> : AbiReturns<void, uint8_t*> {};
template <> struct AbiResult<AbiKind::HyperNodeList> : AbiReturns<void, uint8_t*> {};

template <typename Ret, typename Tuple> struct MakeFn;
template <typename Ret, typename... A> struct MakeFn<Ret, std::tuple<A...>> {
  using type = Ret (*)(void*, A...);
  using ret = Ret;
  using args = std::tuple<A...>;
};

template <ExtensionPoint P> struct Handler {
  static constexpr const ExtensionPointInfo& info = kExtensionPoints[static_cast<int>(P)];
  using R = AbiResult<info.result>;
  using args = decltype(std::tuple_cat(typename AbiParams<info.params[0]>::type{},
                                       typename AbiParams<info.params[1]>::type{},
                                       typename AbiParams<info.params[2]>::type{},
                                       typename R::extra{}));
  using fn = typename MakeFn<typename R::ret, args>::type;
};
}  // namespace detail

// The C function pointer type of a handler for point P.
template <ExtensionPoint P>
using HandlerFn = typename detail::Handler<P>::fn;

// ---------------------------------------------------------------------------------------------

// What plugins answer to JobValid (Volcano's ValidateResult).
struct ValidateResult {
  bool pass = true;
  std::string reason;
  std::string message;
  std::string plugin;
};

// What the session decided; the simulator prints it.
struct Decisions {
  struct Placement {
    Task* task;
    Node* node;
  };
  struct Eviction {
    Task* task;
    std::string reason;
  };
  std::vector<Placement> binds;  // in bind order (statement commit / Session::Allocate dispatch)
  std::vector<Eviction> evictions;
  // Filled by Close():
  std::vector<Placement> pipelined;  // tasks still Pipelined at close, with their node
  std::vector<std::pair<Task*, std::string>> unschedulable;  // per pending task: the reason
  std::vector<std::pair<Job*, PodGroupPhase>> phases;        // every job's phase at close
  // Policy faults: "plugin <name>: <point>: <message>".
  std::vector<std::string> faults;
  // For the server's metrics (Volcano's volcano_* families): the same faults as (plugin, handler),
  // each plugin's OnSessionOpen / OnSessionClose time, and how many preemptors preempt tried.
  std::vector<PolicyFaultPoint> fault_points;
  struct PluginTiming {
    std::string plugin;
    bool open = true;  // OnSessionOpen (true) or OnSessionClose
    int64_t micros = 0;
  };
  std::vector<PluginTiming> plugin_timings;
  int preemption_attempts = 0;
  // Plugins the fault watchdog disabled, in the order it did.
  std::vector<std::string> disabled_plugins;
};

// What went wrong in a faulting handler call (the `kind` label of kiln_policy_faults_total):
// a host error, memory over a call's or the state's budget, loop iterations or host work over
// the call's budget, wall time over the call's or the session's budget (HTTP time included).
enum class FaultKind : uint8_t { Host, Memory, Budget, Time };
inline constexpr int kFaultKindCount = 4;
const char* FaultKindName(FaultKind k);  // "host", "memory", "budget", "time"

// Loop iterations one handler call may run before it is abandoned (a budget fault), and the
// faults after which a plugin is disabled for the rest of its session. Process-wide settings.
void SetPolicyCallIterationBudget(int64_t iterations);
int64_t PolicyCallIterationBudget();
void SetPluginFaultLimit(int faults);
int PluginFaultLimit();

// The time and host-work budgets (docs/safety.md lists every budget). Process-wide settings.
//  * host work: bytes the builtins of one call may walk or build (a substring search walks its
//    haystack, a concatenation builds both sides, a split walks its string and builds its
//    parts); over it the call is abandoned as a budget fault;
//  * call time: wall time one handler call may take (nanoseconds); checked where the call does
//    host work, bounds each HTTP request, and checked when the call returns: a time fault;
//  * session time: wall time all calls of one plugin may take in a session; over it the plugin
//    is disabled for the rest of the session (a time fault);
//  * session HTTP time: time one plugin's http_post requests may take in a session; past it
//    every request of the plugin is a time fault without being sent.
void SetPolicyCallHostWorkBudget(int64_t bytes);
int64_t PolicyCallHostWorkBudget();
void SetPolicyCallTimeBudget(int64_t ns);
int64_t PolicyCallTimeBudget();
void SetPolicySessionTimeBudget(int64_t ns);
int64_t PolicySessionTimeBudget();
void SetPolicySessionHttpBudget(int64_t ns);
int64_t PolicySessionHttpBudget();

// Charges `bytes` of host work to the handler call running on this thread. False when the
// call's budget is spent (the budget fault is recorded; the caller answers its zero value or
// abandons the call) or the call is past its wall-time budget (a time fault). Outside a session
// call nothing is counted and the answer is true.
bool ChargeHostWork(int64_t bytes);
// Records a fault of `kind` for the handler call on this thread (kiln_policy_fault_kind) and
// asks for its plugin to be disabled for the rest of the session at once, whatever the fault
// limit: its state is over budget, or its session time is spent.
void FaultAndDisablePlugin(FaultKind kind, std::string_view message);

// A registered plugin in the open session.

struct PluginSlot {
  std::string name;
  int tier = 0;
  const PluginOption* option = nullptr;
  std::unique_ptr<Plugin> plugin;
  uint64_t faults = 0;
  std::array<uint64_t, kFaultKindCount> faults_by_kind{};  // indexed by FaultKind
};

class ExplainRecorder;   // runtime/explain.h
class InvariantChecker;  // runtime/invariants.h

class Session {
 public:
  // `conf` must outlive the session (its tiers and plugin options are referenced).
  Session(Cluster cluster, const SchedulerConf& conf, TimeNs now, std::string uid = "session-0");
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Builds every plugin of every tier in config order and calls its OnSessionOpen (then its
  // session_open handlers). A plugin name the registry does not know is skipped with a log line
  // (Volcano does the same); a builder or open Error aborts with the plugin named.
  Status Open(const PluginRegistry& registry);
  // §3.6: session_close handlers and OnSessionClose of every plugin (config order), then PodGroup
  // phases, unschedulable reasons, pipelined placements, queue allocated up to the root.
  void Close();

  // ---- state ----
  Cluster& cluster() { return cluster_; }
  const Cluster& cluster() const { return cluster_; }
  TimeNs now() const { return now_; }
  const std::string& uid() const { return uid_; }
  const SchedulerConf& conf() const { return conf_; }
  const std::vector<Tier>& tiers() const { return conf_.tiers; }
  bool HasAction(std::string_view action) const { return conf_.HasAction(action); }
  const Resource& total_resource() const { return cluster_.total_resource(); }
  const std::vector<PluginSlot>& plugins() const { return plugins_; }
  Decisions& decisions() { return decisions_; }
  const Decisions& decisions() const { return decisions_; }
  uint64_t fault_count() const { return fault_count_; }
  // The pool the actions run per-node predicates and scores on. A plugin whose handlers block on
  // the network (a policy with `uses http;`) asks for the I/O pool at open, so that the per-node
  // calls of one task wait side by side instead of one after another on a few cores.
  void RequireIoPool() { io_pool_ = true; }
  ThreadPool& node_pool() const { return io_pool_ ? ThreadPool::Io() : ThreadPool::Default(); }
  // Whether a plugin asked for the I/O pool: its handlers wait on the network, so nothing may be
  // called speculatively (a call is a request someone else sees).
  bool uses_io_pool() const { return io_pool_; }
  // Whether the fault watchdog disabled the plugin in `slot` (its handlers are skipped).
  bool plugin_disabled(int slot) const {
    return slot >= 0 && slot < static_cast<int>(plugins_.size()) &&
           disabled_[static_cast<size_t>(slot)].load(std::memory_order_relaxed);
  }

  // Handler coverage (kiln test's coverage line): per plugin of the session, each point it
  // registered a handler for and whether that handler ran so far.
  struct HandlerUse {
    std::string plugin;
    ExtensionPoint point;
    bool called = false;
  };
  std::vector<HandlerUse> HandlerCoverage() const;

  // ---- registration (from Plugin::OnSessionOpen) ----
  // Registers fn for point P when the plugin's conf flag for P is enabled (or P has no flag);
  // returns whether it was registered. A plugin may register several handlers for a point; they
  // run in registration order.
  template <ExtensionPoint P>
  bool Register(PluginHandle plugin, void* ctx, HandlerFn<P> fn) {
    return RegisterRaw(plugin, P, ctx, reinterpret_cast<void (*)()>(fn));
  }
  // Untyped form for JIT code: fn must have the signature HandlerFn<point>.
  bool RegisterRaw(PluginHandle plugin, ExtensionPoint point, void* ctx, void (*fn)());
  // A handler whose code is compiled the first time the session dispatches `point`
  // (`code->Handler(point)`, which `code` must outlive the session to answer): tier-0 policy
  // code, so that what no action asks is never compiled. The compile runs before the dispatch's
  // first call, and one reached inside another handler's call is not charged to that call's
  // budget. A handler that cannot be compiled is left out of the session (its source logs why).
  bool RegisterLazy(PluginHandle plugin, ExtensionPoint point, void* ctx,
                    const HandlerSource* code);
  // The plugin's node_order handler was proved a pure function of the task fields `fields` and
  // of the node (compiler/passes/analyze_score_cache.cc): its scores are cached per (task shape,
  // node) and reused while the node's version is unchanged (runtime/score_cache.h). Call after
  // registering the handler; nothing happens when the cache is off (KILN_SCORE_CACHE=0).
  void EnableScoreCache(PluginHandle plugin, std::vector<ScoreKeyField> fields);
  // Whether any plugin registered a handler for `point` (an action may then skip work whose
  // result is known without one, such as scoring nodes nobody scores).
  bool HasHandlers(ExtensionPoint point) const {
    // A handler still to compile is registered (and its list may be changing: ResolveLazy).
    if (lazy_points_.load(std::memory_order_acquire) & (uint64_t{1} << static_cast<int>(point)))
      return true;
    return !handlers_[static_cast<int>(point)].empty();
  }
  // Convenience for C++ test plugins: f is called with HandlerFn<P>'s arguments minus ctx.
  template <ExtensionPoint P, typename F>
  bool On(PluginHandle plugin, F f);
  // Whether plugin's flag for point is on (points without a flag: always).
  bool PointEnabled(PluginHandle plugin, ExtensionPoint point) const;

  // ---- dispatch (§2.1–2.3) ----
  // Who asks, when, and what the answer means. Combination and default come from the table.
  //
  // Orders (<0: l first). Heaps in enqueue/allocate/backfill/preempt/reclaim order jobs, queues
  // and tasks with these; JobCompareFn/TaskCompareFn are the forms without a fallback, used by
  // BuildVictimsPriorityQueue ("the job that orders later is evicted first").
  int JobOrderFn(const Job* l, const Job* r) const;
  bool JobLess(const Job* l, const Job* r) const { return JobOrderFn(l, r) < 0; }
  int JobCompareFn(const Job* l, const Job* r) const;
  int QueueOrderFn(const Queue* l, const Queue* r) const;
  // The plugins' answers alone, without the fallback (direct calls, runtime/calls.h).
  int QueueCompareFn(const Queue* l, const Queue* r) const;
  int VictimQueueCompareFn(const Queue* l, const Queue* r, const Queue* preemptor) const;
  bool QueueLess(const Queue* l, const Queue* r) const { return QueueOrderFn(l, r) < 0; }
  // Victim ordering across queues in preempt/reclaim; <0: evict l's task first.
  int VictimQueueOrderFn(const Queue* l, const Queue* r, const Queue* preemptor) const;
  int TaskOrderFn(const Task* l, const Task* r) const;
  bool TaskLess(const Task* l, const Task* r) const { return TaskOrderFn(l, r) < 0; }
  int TaskCompareFn(const Task* l, const Task* r) const;

  // allocate/backfill/preempt/reclaim, once per task before any node: a failure rejects the task
  // on every node. nullopt = pass; otherwise the first failing plugin's status.
  std::optional<PluginStatus> PrePredicateFn(const Task* t) const;
  // Per (task, node), from the actions' worker threads. nullopt = the node is feasible.
  std::optional<FitError> PredicateFn(const Task* t, const Node* n) const;
  // PredicateFn's answer before it becomes a FitError: nullopt = feasible, otherwise the first
  // failing plugin's status (every such status fails allocate). The allocate search's form: a
  // feasible node costs no FitError.
  std::optional<PluginStatus> PredicateStatus(const Task* t, const Node* n) const;
  // The FitError only when it fails for allocate (any non-Success) / for preempt and reclaim
  // (not plain Unschedulable, which eviction may cure) — §2.4.
  std::optional<FitError> PredicateForAllocateAction(const Task* t, const Node* n) const;
  // Topology-aware preemption's dry run (Volcano's Simulate* points): a victim leaves / comes
  // back to node n for `preemptor` (plugins update what they precomputed for it, and must leave
  // it as it was after the matching add), and the predicate on that simulated state.
  void SimulateRemoveTask(const Task* preemptor, const Task* victim, const Node* n) const;
  void SimulateAddTask(const Task* preemptor, const Task* victim, const Node* n) const;
  std::optional<FitError> SimulatePredicateFn(const Task* t, const Node* n) const;
  // Allocatable on the simulated state: whether queue q may take t with the victims removed so
  // far (plugins that follow simulate_remove_task/simulate_add_task answer on their own account).
  bool SimulateAllocatableFn(const Queue* q, const Task* t) const;
  std::optional<FitError> PredicateForPreemptAction(const Task* t, const Node* n) const;
  // Scoring of feasible nodes (allocate, backfill, preempt). Σ over plugins; an error aborts the
  // scoring of that task with the plugin named.
  Result<double> NodeOrderFn(const Task* t, const Node* n) const;
  // NodeOrderFn computed before the caller knows it needs the answer (allocate scores a node in
  // the same parallel pass that finds it feasible). The same handler calls and sum, but a fault
  // is neither reported nor counted (Faulted: the caller must score again with NodeOrderFn,
  // which reports it) and nothing is marked called: the handlers that ran are OR-ed into
  // *called (bit k = the k-th node_order registration), for MarkNodeOrderCalled once the score
  // is used. Failed = a handler answered an error: NodeOrderFn's error, *score = 0.
  // Sound only because node_order handlers answer without side effects, which running them
  // concurrently on the worker threads already requires.
  enum class SpeculativeScore : uint8_t { Ok, Failed, Faulted };
  SpeculativeScore NodeOrderSpeculative(const Task* t, const Node* n, double* score,
                                        uint64_t* called) const;
  // Asks for the cache lines NodeOrderSpeculative(t, n) will read of the cached scores.
  void PrefetchCachedScores(const Task* t, const Node* n) const;
  // Records the handlers of `called` (NodeOrderSpeculative's bits) as called. A session with
  // more than 64 node_order registrations cannot be accounted this way: NodeOrderSpeculative
  // answers Faulted when it reaches the 65th.
  void MarkNodeOrderCalled(uint64_t called) const;
  // Per-node Σ into scores (resized to nodes.size(), added to). An error aborts.
  Status BatchNodeOrderFn(const Task* t, std::span<Node* const> nodes,
                          std::vector<double>& scores) const;
  // After scoring: the first plugin naming a node wins; nullptr lets the caller take the first
  // best-scored node.
  Node* BestNodeFn(const Task* t, std::span<Node* const> nodes,
                   std::span<const double> scores) const;
  // preempt / reclaim, per candidate node: which of the candidates may be evicted for t
  // (§2.2 exact tier intersection). Empty = none on this node.
  std::vector<Task*> Preemptable(const Task* preemptor, std::span<Task* const> preemptees) const;
  std::vector<Task*> Reclaimable(const Task* reclaimer, std::span<Task* const> reclaimees) const;
  // gangpreempt / gangreclaim, per domain: which of the flattened bundle candidates may be
  // evicted for the starving job (same combination as Preemptable).
  std::vector<Task*> UnifiedEvictable(const Job* job, std::span<Task* const> candidates) const;
  // shuffle: per tier union (dedup, input order); the first tier with a non-empty set decides.
  std::vector<Task*> VictimTasks(std::span<Task* const> tasks) const;
  // allocate / reclaim, per popped queue: true skips the queue for the rest of the action.
  bool Overused(const Queue* q) const;
  // allocate (and preempt's fit check), per task: false skips the task.
  bool Allocatable(const Queue* q, const Task* t) const;
  // reclaim, per task: false means the task may not reclaim for its queue.
  bool Preemptive(const Queue* q, const Task* t) const;
  // allocate/backfill: whether the job's allocations may be bound (gang's minAvailable).
  bool JobReady(const Job* j) const;
  // allocate/preempt/reclaim: whether a non-ready job's pipelined statement is kept/committed.
  bool JobPipelined(const Job* j) const;
  // enqueue: whether a Pending job with minResources may become Inqueue.
  bool JobEnqueueable(const Job* j) const;
  // enqueue, after a job became Inqueue: plugins account its minResources.
  void JobEnqueued(const Job* j);
  // preempt/reclaim: whether the job still needs resources (false: it is not a preemptor).
  bool JobStarving(const Job* j) const;
  // allocate/backfill/preempt/reclaim, per job: nullopt = valid; else the first failing
  // plugin's answer (the job is skipped; its reason becomes the job's fit error).
  std::optional<ValidateResult> JobValid(const Job* j) const;

  // ---- mutation primitives (§2.4); Statement is the transactional form ----
  // backfill: task → Allocated on node, AllocateFunc; when JobReady, every Allocated task of the
  // job is dispatched (→ Binding, recorded as a bind).
  Status Allocate(Task* t, Node* n);
  // task → Pipelined on node (node.pipelined += resreq), AllocateFunc.
  Status Pipeline(Task* t, Node* n);
  // Immediate eviction (shuffle): recorded, task → Releasing, DeallocateFunc.
  Status Evict(Task* t, std::string_view reason);
  void UpdatePodGroupCondition(Job* j, PodGroupCondition c);
  // Volcano's job.JobFitErrors (gang sets it at close): what a pending task of the job without
  // fit errors of its own reports as its unschedulable reason.
  void SetJobFitError(Job* j, std::string message);
  // Pod annotations a plugin decided for a task (Volcano's TaskInfo.PodAnnotations beyond the
  // pod's own: deviceshare's device assignment), carried by the task's binding when it binds.
  // A plugin sets them from its allocate handler and removes them from its deallocate handler.
  void SetPodAnnotation(const Task* t, std::string key, std::string value);
  void RemovePodAnnotation(const Task* t, const std::string& key);
  // Task → the annotations set for it and not removed (tasks with none are absent).
  std::map<const Task*, StringMap> pod_annotations() const;
  // Records that nodes rejected t (job.nodes_fit_errors[t]), replacing an earlier record.
  void RecordFitErrors(Task* t, FitErrors errors);
  // Node names rejected with UnschedulableAndUnresolvable for t earlier in this session.
  bool NodeUnresolvableFor(const Task* t, const Node* n) const;

  // ---- building blocks for Statement and the primitives (keep every counter in sync) ----
  // Moves t to status in its job and, when t is placed on a node, re-accounts it there
  // (node.UpdateTask).
  Status UpdateTaskStatus(Task* t, TaskStatus status);
  // Places t on n with its current status (node.AddTask) / removes it from its node.
  Status PlaceTask(Task* t, Node* n);
  void UnplaceTask(Task* t);
  void FireAllocate(Task* t);
  void FireDeallocate(Task* t);
  // Dispatch to the cache: bind (→ Binding, recorded) / evict (recorded).
  Status DispatchBind(Task* t);
  Status DispatchEvict(Task* t, std::string_view reason);

  // Faults raised by handlers (kiln_policy_fault) are reported here with the plugin's slot.
  // `disable`: the plugin is disabled at once, whatever PluginFaultLimit().
  void ReportFault(int slot, ExtensionPoint point, std::string_view message,
                   FaultKind kind = FaultKind::Host, bool disable = false);

  // ---- per-plugin time accounting (the session time and session HTTP budgets) ----
  // Adds `ns` to the plugin's handler time; true when that is now past PolicySessionTimeBudget().
  bool AddCallTime(int slot, int64_t ns) const;
  // HTTP time the plugin has left in this session (never below zero), and what a request took.
  int64_t HttpTimeLeft(int slot) const;
  void AddHttpTime(int slot, int64_t ns) const;

  // ---- explain (runtime/explain.h); never called while scheduling unless a recorder is set ----
  // The recorder the actions report their pod decisions to; nullptr (the default) records
  // nothing.
  ExplainRecorder* explain() const { return explain_; }
  void set_explain(ExplainRecorder* recorder) { explain_ = recorder; }
  // The invariant checker (runtime/invariants.h), made by Open when checking is enabled;
  // nullptr otherwise.
  InvariantChecker* invariants() const { return invariants_.get(); }
  // Each registered predicate handler's own answer, in plugin order (Success included).
  std::vector<PluginStatus> PredicateEach(const Task* t, const Node* n) const;
  // Each node_order handler's own weighted score, summed per plugin, in plugin order. An error
  // sets `error` (naming the plugin) and stops.
  std::vector<std::pair<std::string, double>> NodeOrderEach(const Task* t, const Node* n,
                                                            std::string* error) const;
  // Each batch_node_order plugin's per-node scores over `nodes`, in plugin order.
  std::vector<std::pair<std::string, std::vector<double>>> BatchNodeOrderEach(
      const Task* t, std::span<Node* const> nodes, std::string* error) const;
  // Calls every plugin's show_queue handler for q (the figures go to the recorder).
  void ShowQueueFn(const Queue* q) const;

  // ---- network topology (allocate, jobs with a hard network topology; runtime/hyper_node.h) ----
  // Per candidate HyperNode, Σ of the plugins' hyper_node_order scores (added into `scores`,
  // resized to hns.size()). An error aborts with the plugin named.
  Status HyperNodeOrderFn(const SubJob* s, std::span<HyperNode* const> hns,
                          std::vector<double>& scores) const;
  // The candidates the first plugin with a handler for the point keeps, in candidate order;
  // nullopt when no plugin has one (the action then searches the root alone).
  std::optional<std::vector<HyperNode*>> HyperNodeGradientForJobFn(
      const Job* j, std::span<HyperNode* const> candidates) const;
  std::optional<std::vector<HyperNode*>> HyperNodeGradientForSubJobFn(
      const SubJob* s, std::span<HyperNode* const> candidates) const;

  // ---- sub-jobs (allocate, jobs with sub-jobs; runtime/sub_job.h) ----
  // Volcano's Session.SubJobReady / SubJobPipelined: for a job without a subGroupPolicy they are
  // JobReady / JobPipelined of the job; otherwise the plugins' sub_job_ready (AND) and
  // sub_job_pipelined (vote) of the sub-job.
  bool SubJobReady(const Job* j, const SubJob* s) const;
  bool SubJobPipelined(const Job* j, const SubJob* s) const;
  // Sub-job order (<0: l first); the fallback is lower match index first, then uid.
  int SubJobOrderFn(const SubJob* l, const SubJob* r) const;
  int SubJobCompareFn(const SubJob* l, const SubJob* r) const;
  bool SubJobLess(const SubJob* l, const SubJob* r) const { return SubJobOrderFn(l, r) < 0; }
  // Why the gradients are asked for (Volcano's SearchPurpose): false for placement (allocate),
  // true while gangpreempt/gangreclaim look for eviction domains (PurposeEvict). Policies read
  // it as `session.evicting`. Set for the length of a scope by EvictionPurposeScope.
  bool gradient_for_eviction() const { return gradient_for_eviction_; }
  class EvictionPurposeScope {
   public:
    explicit EvictionPurposeScope(Session& ssn) : ssn_(ssn), was_(ssn.gradient_for_eviction_) {
      ssn_.gradient_for_eviction_ = true;
    }
    ~EvictionPurposeScope() { ssn_.gradient_for_eviction_ = was_; }
    EvictionPurposeScope(const EvictionPurposeScope&) = delete;
    EvictionPurposeScope& operator=(const EvictionPurposeScope&) = delete;

   private:
    Session& ssn_;
    bool was_;
  };

 private:
  struct Registration {
    int slot;  // plugin slot
    int tier;
    void* ctx;
    void (*fn)();                       // null until `lazy` compiled it
    ScoreCache* score_cache = nullptr;  // node_order only: see EnableScoreCache
    const HandlerSource* lazy = nullptr;  // RegisterLazy: compiles `fn` (ResolveLazy)
  };
  class CallScope;  // marks the handler running on this thread (faults are attributed to it)
  struct ScoreProbe {
    ScoreCache::Entry* fill = nullptr;
    bool hit = false;
    uint64_t tag = 0;  // what `fill` is stored with (ScoreCache::Tag)
  };
  // The entry of `cache` (null: none) for (t, n); see session_points.cc.
  ScoreProbe CachedScore(ScoreCache* cache, const Task* t, const Node* n, double* score) const;
  // When the first node_order registrations (two or more, at most 64) are all cacheable, their
  // sum gets one cache in place of theirs: one lookup per node for all of them. Called once
  // the node_order list is final (the end of Open, or ResolveLazy). The sum is taken in the
  // registrations' order from 0, as NodeOrderFn adds them, so a cached sum is the same double.
  void BuildScoreSumCache() const;
  // How many leading node_order registrations the sum cache covers now: 0 when there is none or
  // a plugin of the run was disabled (then each registration is called as without the cache).
  size_t UsableScoreSumRun(const std::vector<Registration>& hs) const;

  template <ExtensionPoint P>
  const std::vector<Registration>& Handlers() const {
    if (lazy_points_.load(std::memory_order_acquire) & (uint64_t{1} << static_cast<int>(P)))
        [[unlikely]]
      ResolveLazy(P);
    return handlers_[static_cast<int>(P)];
  }
  // Compiles the lazily registered handlers of `point` (RegisterLazy), once per session.
  void ResolveLazy(ExtensionPoint point) const;
  // The generic combinators, one per Combine kind of the table (session.cc).
  template <ExtensionPoint P, typename... A>
  int CombineFirstNonZero(A... args) const;
  template <ExtensionPoint P, typename... A>
  std::optional<PluginStatus> CombineFirstError(A... args) const;
  template <ExtensionPoint P, typename... A>
  bool CombineBool(A... args) const;  // Any / All / FirstTierAll
  template <ExtensionPoint P, typename... A>
  bool CombineVote(A... args) const;
  template <ExtensionPoint P, typename... A>
  void CombineCallAll(A... args) const;
  template <ExtensionPoint P, typename Subject>
  std::vector<Task*> CombineVictimIntersect(const Subject* t, std::span<Task* const> cands) const;
  template <ExtensionPoint P>
  std::vector<Task*> CombineTierUnion(std::span<Task* const> tasks) const;
  template <ExtensionPoint P, typename Owner>
  std::optional<std::vector<HyperNode*>> CombineFirstDecides(
      const Owner* j, std::span<HyperNode* const> candidates) const;
  void CallSessionHandlers(ExtensionPoint point, int slot);

  Cluster cluster_;
  const SchedulerConf& conf_;
  TimeNs now_;
  std::string uid_;
  std::vector<PluginSlot> plugins_;
  std::array<std::vector<Registration>, kExtensionPointCount> handlers_;
  // One bit per point with a registration still to compile; the lists change only under
  // lazy_mu_ while their bit is set, and nothing reads a list before its bit is clear.
  mutable std::atomic<uint64_t> lazy_points_{0};
  mutable std::mutex lazy_mu_;
  std::vector<std::shared_ptr<void>> lambda_storage_;
  // Mutable: BuildScoreSumCache, reached from ResolveLazy, replaces the run's caches by one.
  mutable std::vector<std::unique_ptr<ScoreCache>> score_caches_;
  mutable std::unique_ptr<ScoreCache> score_sum_cache_;
  mutable size_t score_sum_run_ = 0;  // registrations score_sum_cache_ sums (0: none)
  Decisions decisions_;
  mutable std::mutex fault_mu_;
  mutable std::mutex pod_annotations_mu_;
  std::map<const Task*, StringMap> pod_annotations_;
  mutable std::atomic<uint64_t> fault_count_{0};
  bool io_pool_ = false;
  // One flag per plugin slot, set by the watchdog (read by concurrent dispatchers).
  std::unique_ptr<std::atomic<bool>[]> disabled_;
  // Per plugin slot, one bit per extension point whose handler ran (CallScope sets them). A
  // relaxed load per call; the atomic write happens once per handler and session.
  static_assert(kExtensionPointCount <= 64);
  // Inline: once per handler call.
  void MarkCalled(int slot, ExtensionPoint point) const {
    if (slot < 0 || static_cast<size_t>(slot) >= called_slots_) return;
    const uint64_t bit = uint64_t{1} << static_cast<int>(point);
    std::atomic<uint64_t>& word = called_[static_cast<size_t>(slot)];
    if ((word.load(std::memory_order_relaxed) & bit) == 0)
      word.fetch_or(bit, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<uint64_t>[]> called_;
  size_t called_slots_ = 0;
  // Per plugin slot: wall time of its handler calls and of its HTTP requests, nanoseconds.
  std::unique_ptr<std::atomic<int64_t>[]> call_ns_;
  std::unique_ptr<std::atomic<int64_t>[]> http_ns_;
  // Incremented by every mutation of task placement/status; lets Statement check in debug
  // builds that nothing else interleaved before it verifies an exact undo.
  uint64_t mutation_seq_ = 0;
  bool closed_ = false;
  ExplainRecorder* explain_ = nullptr;
  bool gradient_for_eviction_ = false;
  std::unique_ptr<InvariantChecker> invariants_;

  friend class Statement;
};

// ---------------------------------------------------------------------------------------------
// Implementation details of Session::On and Session::Call.

namespace detail {
// Thread-local record of the handler currently running, read by kiln_policy_fault().
struct CurrentCall {
  const Session* session = nullptr;
  int slot = -1;
  ExtensionPoint point{};
  bool faulted = false;
  FaultKind kind = FaultKind::Host;  // of the first fault of the call
  bool disable_plugin = false;        // FaultAndDisablePlugin: disable at once
  int64_t started_ns = 0;             // CoarseNowNs() when the call started
  std::string message;
  // The loop iterations left to the call are a thread_local of their own (session.cc t_fuel,
  // kiln_policy_fuel); each handler call starts with PolicyCallIterationBudget().
};
// Inline: every handler call's dispatch reads it.
inline CurrentCall& ThisThreadCall() {
  thread_local CurrentCall call;
  return call;
}

template <typename F, typename Ret, typename Tuple> struct LambdaThunk;
template <typename F, typename Ret, typename... A>
struct LambdaThunk<F, Ret, std::tuple<A...>> {
  static Ret Call(void* ctx, A... args) { return (*static_cast<F*>(ctx))(args...); }
};
}  // namespace detail

template <ExtensionPoint P, typename F>
bool Session::On(PluginHandle plugin, F f) {
  using H = detail::Handler<P>;
  auto storage = std::make_shared<F>(std::move(f));
  void* ctx = storage.get();
  lambda_storage_.push_back(storage);
  HandlerFn<P> fn = &detail::LambdaThunk<F, typename H::R::ret, typename H::args>::Call;
  return Register<P>(plugin, ctx, fn);
}

}  // namespace kiln
