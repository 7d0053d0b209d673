#pragma once
// What every plugin said about every node for a pod (scenario-format.md, "Explaining a session:
// `kiln explain`"), and what the session thought of each job and queue.
//
// Two ways to get it:
//   * ExplainAtOpen(ssn): right after the plugins opened and before any action, every pending pod
//     against every node — the session's view before it decides anything;
//   * an ExplainRecorder attached to the session (Session::set_explain): the actions call
//     Record() for each pod they place or give up, at that moment, so the answers are the ones
//     the decision was made on. A session without a recorder pays one null-pointer test per
//     pod decision and nothing else.
//
// Per node: each predicate plugin's own status, the session's combined status (ssn.PredicateFn:
// the first failing status in plugin order), and for nodes that pass, each plugin's weighted
// node_order score, their sum (ssn.NodeOrderFn), the batch_node_order contributions and the total
// node selection compares. Batch scores are computed over the group of nodes the allocate action
// would score together: the passing nodes whose idle resources fit the pod, or, when none does,
// those whose future idle resources fit it.

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/fit_error.h"
#include "runtime/reason_codes.h"
#include "runtime/resource.h"

namespace kiln {

class Session;
struct SessionResult;
struct Task;
struct Queue;

// One plugin's predicate answer.
struct PluginAnswer {
  std::string plugin;
  StatusCode code = StatusCode::Success;
  std::string reason;  // the reasons joined by ", " (Volcano's Status.Message())
  std::vector<std::string> codes;  // each reason's stable code (reason_codes.h), in order
};

struct NodeExplain {
  std::string node;
  StatusCode code = StatusCode::Success;  // the session's combined status
  std::string reason;
  std::vector<std::string> codes;  // the combined reasons' codes, in order
  std::vector<PluginAnswer> predicates;
  // The allocate action's own resource check, made before the predicates: "idle" (the pod fits
  // the node's idle resources: it would be bound), "futureIdle" (it fits once releasing pods are
  // gone: it would be pipelined) or "none" (insufficient: the dimensions are listed).
  std::string fits;
  std::vector<std::string> insufficient;
  // Present when code is Success.
  bool scored = false;
  std::vector<std::pair<std::string, double>> scores;  // plugin → weighted node_order score
  double node_order = 0;                               // Σ scores (ssn.NodeOrderFn)
  std::vector<std::pair<std::string, double>> batch_scores;  // plugin → batch_node_order score
  double total = 0;                                          // node_order + Σ batch_scores
  std::string score_error;  // a node_order/batch_node_order handler failed
};

struct TaskExplain {
  std::string key;     // <namespace>/<name>
  std::string job;     // job uid ("" for none)
  std::string action;  // the action that recorded it ("" at open)
  std::string note;    // why the action gave up without trying nodes, when it did
  std::string note_code;  // the note's stable code
  std::optional<PluginAnswer> pre_predicate;  // the failing pre_predicate, when one failed
  std::vector<NodeExplain> nodes;             // in node order
  // What the session finally did with the pod (recorded mode): "bound", "pipelined" or
  // "unschedulable", and the node or the FitError text.
  std::string result_kind;
  std::string result_value;
  // For "unschedulable": the codes of the reasons the FitError text counts (reason_codes.h).
  std::vector<std::string> result_codes;
};

// A figure a policy shows for a queue (the `show` standard-library functions).
struct Figure {
  std::string name;
  std::variant<double, Resource> value;
};

struct QueueExplain {
  std::string name;
  bool overused = false;
  int order = 0;  // 1-based position in the session's queue order
  std::vector<std::pair<std::string, std::vector<Figure>>> plugins;  // plugin → its figures
};

// One HyperNode allocate considered for a job with a network topology (runtime/actions/
// allocate.cc, T2-T5), in the order it was considered.
struct HyperNodeTry {
  std::string hyper_node;
  int64_t tier = 0;
  // "job": a candidate domain for the whole job (T2/T3); "subJob": a candidate for the job's
  // sub-job inside the job-level domain `within` (T4).
  std::string level;
  std::string within;
  // "chosen" (the job or sub-job was placed there), "solution" (it could have been, but another
  // scored higher), "rejected" (with `reason`), "notTried" (a gradient of a lower tier had a
  // solution, so this tier was never searched).
  std::string outcome;
  // For "rejected": "tier above highestTierAllowed", "not enough resources" (the gradient did not
  // keep it), "outside the domain the job already runs in" (the gradient did not keep it), or
  // "gang not satisfiable inside it" (the dry run could not make the job ready or pipelined).
  std::string reason;
  std::string reason_code;  // the reason's stable code (docs/reasons.md)
  std::optional<double> score;  // hyper_node_order's score (subJob) / the Σ of the sub-job
                                // scores (job), for "chosen" and "solution"
};

// The HyperNode search of one job (the last one this session made for it).
struct TopologyExplain {
  std::string mode;  // "hard" or "soft" (the PodGroup's)
  int64_t highest_tier_allowed = 0;  // after the session's normalisation (soft: the top's tier)
  std::vector<HyperNodeTry> tries;
  std::string chosen;  // the job-level HyperNode chosen ("" = none)
  std::optional<double> chosen_score;
  std::string allocated_hyper_node;  // the job's allocated HyperNode after the action
};

// One domain (a HyperNode; "" without HyperNodes: the whole cluster) gang eviction looked for
// victims in, for a starving job (runtime/actions/gang_evict.cc), in the order they were tried.
struct EvictionDomainTry {
  std::string hyper_node;
  int64_t tier = 0;
  // "planned" (the plan that stood), "rejected" (with `reason`).
  std::string outcome;
  // For "rejected": "no nodes", "no victims" (no bundle of evictable tasks), "victims cannot
  // cover the need" (even every bundle with the domain's idle and releasing resources), or
  // "gang not placeable" (no plan placed the gang after evicting, `detail` says which part).
  std::string reason;
  std::string reason_code;  // the reason's stable code (docs/reasons.md)
  std::string detail;
  // The bundles the domain offered, in the order they were added: "<job> safe|whole: pods".
  std::vector<std::string> bundles;
  // "planned": the victims evicted, and where each part of the gang went (sub-job → HyperNode).
  std::vector<std::string> victims;
  std::vector<std::pair<std::string, std::string>> placed;
};

// What gangpreempt or gangreclaim did for one starving job (the last attempt this session).
struct GangEvictionExplain {
  std::string action;  // "gangpreempt" or "gangreclaim"
  std::string need;    // Σ of the pending requests the victims had to cover
  std::vector<EvictionDomainTry> domains;
  bool committed = false;  // the job was pipelined and the plan committed (nominations set)
};

struct JobExplain {
  std::string uid;
  std::string queue;
  int order = 0;  // 1-based position in the session's job order (all jobs)
  bool ready = false;
  bool pipelined = false;
  bool valid = true;
  std::string invalid_reason;  // "plugin: reason: message" when not valid
  std::string invalid_code;    // the validation's reason (Volcano's own stable reasons)
  // Why enqueue left the PodGroup Pending this session (recorded mode; its vote's refusal).
  std::optional<AdmissionRefusal> admission;
  bool starving = false;
  std::string phase;  // at the moment it was explained
  std::optional<TopologyExplain> topology;  // when allocate searched HyperNodes for the job
  std::optional<GangEvictionExplain> gang_eviction;  // when gangpreempt/gangreclaim planned for it
};

// The explained pods, stored compactly: an explanation holds pods × nodes answers (10k pods on
// 1000 nodes are ten million), so each node's answer is a few integers and doubles, and every
// string (node, plugin, reason, pod names) is stored once per explanation and referred to by
// index. A pod is expanded back into a TaskExplain only while it is read, one at a time.
class ExplainedTasks {
 public:
  ExplainedTasks();
  ~ExplainedTasks();
  ExplainedTasks(ExplainedTasks&&) noexcept;
  ExplainedTasks& operator=(ExplainedTasks&&) noexcept;

  size_t size() const { return tasks_.size(); }
  bool empty() const { return tasks_.empty(); }
  void push_back(const TaskExplain& t);
  void Replace(size_t i, const TaskExplain& t);
  TaskExplain operator[](size_t i) const;  // expanded
  const std::string& key(size_t i) const;
  void SetResult(size_t i, std::string_view kind, std::string_view value,
                 const std::vector<std::string>& codes = {});
  // Bytes held (for measurements).
  size_t MemoryBytes() const;

  // Iterates expanded pods: `for (const TaskExplain& t : e.tasks)` holds one pod at a time.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = TaskExplain;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = TaskExplain;
    Iterator(const ExplainedTasks* owner, size_t i) : owner_(owner), i_(i) {}
    TaskExplain operator*() const { return (*owner_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    const ExplainedTasks* owner_;
    size_t i_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, tasks_.size()); }

 private:
  struct Strings;
  struct Pred {
    uint32_t plugin;
    uint32_t reason;
    uint32_t codes;  // the codes joined by kReasonCodeMark
    StatusCode code;
  };
  struct Score {
    double value;
    uint32_t plugin;
  };
  struct Row {
    double node_order;
    double total;
    uint32_t node;
    uint32_t reason;
    uint32_t codes;
    uint32_t fits;
    uint32_t score_error;
    uint32_t insufficient;  // bit per ResourceId
    uint16_t preds;         // how many of the pod's `preds` entries are this node's
    uint16_t scores;
    uint16_t batch;
    StatusCode code;
    bool scored;
  };
  struct Task {
    uint32_t key, job, action, note, note_code, result_kind, result_value, result_codes;
    bool has_pre = false;
    Pred pre{};
    std::vector<Row> rows;
    std::vector<Pred> preds;    // rows' predicate answers, in row order
    std::vector<Score> scores;  // rows' node_order scores then batch scores, in row order
  };
  Task Compact(const TaskExplain& t);

  std::unique_ptr<Strings> strings_;
  std::vector<Task> tasks_;
};

struct Explanation {
  bool at_open = false;
  ExplainedTasks tasks;  // in the order pods were first recorded (at open: cluster order)
  std::vector<JobExplain> jobs;
  std::vector<QueueExplain> queues;
};

// Evaluates one pod against every node of the session as it stands (runs pre_predicate first,
// as the actions do).
TaskExplain ExplainTask(const Session& ssn, const Task* t);

// The figures every plugin's show_queue handler reports for `q` (plugin → figures, conf order).
std::vector<std::pair<std::string, std::vector<Figure>>> ShowQueueFigures(Session& ssn,
                                                                         const Queue* q);

// The `deserved` figure of the first plugin (conf order) that shows one for `q`: what proportion or
// capacity computed for the queue; nullopt when no plugin computed one (the queue has no jobs).
std::optional<Resource> ShownDeserved(Session& ssn, const Queue* q);

// Job and queue answers of the session as it stands (also asks each plugin's show handler).
void ExplainJobsAndQueues(Session& ssn, Explanation& out);

// The whole session at open: every Pending pod (or only `pods`, keys <ns>/<name>, when not
// empty), every job, every queue.
Explanation ExplainAtOpen(Session& ssn, const std::set<std::string>& pods = {});

struct SessionHooks;
class ExplainRecorder;
// The hooks that record one session's explanation into `recorder`: attached to the session right
// after it opens, finished (jobs and queues as the actions left them) and detached before it
// closes. Every tool that explains a session it runs (`kiln explain`, a what-if, a shadow's two
// sides) uses these, so they all see the same moments. The caller still calls ApplyResults with
// the session's result. Defined in explain.cc; include runtime/scheduler.h to use the result.
SessionHooks RecordingHooks(ExplainRecorder& recorder);

class ExplainRecorder {
 public:
  // Records only `pods` (keys <ns>/<name>) when not empty.
  explicit ExplainRecorder(std::set<std::string> pods = {}) : pods_(std::move(pods)) {}

  // An action is about to place `t` (or has given it up): evaluate it now. A later record of the
  // same pod replaces the earlier one (the last consideration decided its fate).
  void Record(const Session& ssn, std::string_view action, const Task* t,
              std::string_view note = {}, std::string_view note_code = {});
  // allocate's HyperNode search for the job `uid`; a later search of the same job replaces it.
  void RecordTopology(const std::string& uid, TopologyExplain t) {
    topology_[uid] = std::move(t);
  }
  // gangpreempt's or gangreclaim's attempt for the job `uid`; a later one replaces it.
  void RecordGangEviction(const std::string& uid, GangEvictionExplain g) {
    gang_eviction_[uid] = std::move(g);
  }
  // enqueue refused the job `uid` this session; a later refusal replaces it.
  void RecordAdmission(const std::string& uid, AdmissionRefusal r) {
    admission_[uid] = std::move(r);
  }
  // Jobs and queues as the actions left them; call before the session closes.
  void Finish(Session& ssn);
  // Fills each recorded pod's result from what the session decided.
  void ApplyResults(const SessionResult& result);

  // Figures a policy's show handler reports while ExplainJobsAndQueues asks for them.
  void BeginFigures(std::vector<std::pair<std::string, std::vector<Figure>>>* sink) { sink_ = sink; }
  void AddFigure(std::string_view plugin, Figure f);

  Explanation& explanation() { return explanation_; }

 private:
  std::set<std::string> pods_;
  Explanation explanation_;
  std::unordered_map<std::string, size_t> position_;  // pod key → index in explanation_.tasks
  std::map<std::string, TopologyExplain> topology_;    // job uid → its HyperNode search
  std::map<std::string, GangEvictionExplain> gang_eviction_;  // job uid → its gang eviction
  std::map<std::string, AdmissionRefusal> admission_;  // job uid → enqueue's refusal
  std::vector<std::pair<std::string, std::vector<Figure>>>* sink_ = nullptr;
};

}  // namespace kiln
