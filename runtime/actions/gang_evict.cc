// gangpreempt and gangreclaim (volcano-semantics.md §4.7): evict whole "bundles" of lower-ranked
// jobs so that a starving gang gets everything it still needs in one go, instead of preempt's
// task-by-task victims that may free a node for one pod and leave the gang short. Victims are
// looked for inside one topology domain (a HyperNode) at a time, so that the gang ends up inside
// a domain it may use (Volcano's gangpreempt/gangreclaim and actions/utils at ed72c7c8).
//
// Stages (both actions):
//   1. Jobs that are not Pending, pass JobValid and have a queue put their queue into the queue
//      heap (QueueOrderFn); starving ones (JobStarving) go into their queue's job heap (JobOrderFn).
//   2. Pop queues in order (gangreclaim skips an Overused queue); for each of its starving jobs,
//      in one statement, plan (3); commit when the job is then JobPipelined, else discard.
//   3. The job's worksheet (Volcano's organizeEvictionWorksheet, ordered as allocate's S1): its
//      sub-jobs with pending tasks (not scheduling-gated, with requests, in task order), those
//      its policies' minSubGroups still need first, then sub_job_order; a job without sub-jobs
//      is one part holding all its pending tasks. The need is the Σ InitResreq of every part's
//      tasks, or of the first part's alone when the job is already ready. gangreclaim first asks Preemptive for the queue (Kiln's point
//      takes one task: it is asked for every pending task, and all must agree).
//   D. Domains (Volcano's GetCandidateDomains). Without HyperNodes the one domain is the whole
//      cluster. Otherwise hyper_node_gradient_for_job is asked, with `session.evicting` true,
//      which of the top's subtree (root first, level by level) the job may be evicted for (no
//      handler: the top alone); the kept HyperNodes are tried widest tier first (in subtree order
//      within a tier: Volcano's plugin reverses its gradients for eviction), at most `maxDomains`
//      of them (action argument, default 8; ≤ 0 means 8). A job without a hard topology that
//      keeps none falls back to the top; one with a hard topology then has no domain and evicts
//      nothing. A domain without nodes is skipped. Steps 4-7 run per domain, in order; the first
//      domain with a plan wins.
//   4. Candidates on the domain's nodes, per victim job: gangpreempt — Running or Bound,
//      preemptable tasks of other jobs of the same queue with a lower job priority; gangreclaim —
//      Running, preemptable tasks of jobs in other, reclaimable queues. A victim PodGroup that
//      says `volcano.sh/preemptable` (annotation or label) must say true; one that says nothing is
//      fair game.
//   5. Bundles per victim job: its candidates by priority then UID; while the job keeps more ready
//      tasks than minAvailable (and every role with a minTaskMember keeps its minimum) a task goes
//      to the "safe" bundle, the rest to the "whole" bundle (evicting any of those breaks the
//      gang, so the whole job's resources count against it). A job already below its minimum
//      yields one safe bundle. Sorted: safe before whole; then victim order (gangpreempt: the job
//      that orders last first; gangreclaim: VictimQueueOrderFn against the reclaimer's queue);
//      then the best return on investment (Σ over the need's dimensions of min(freed, need)/need,
//      divided by the same over the whole job, ∞ for safe bundles); then job UID, first task UID,
//      size.
//   6. UnifiedEvictable over the bundles' tasks in that order; a whole bundle survives only if all
//      its tasks are allowed, a safe one keeps its allowed tasks. Re-sorted; without
//      `allowWholeBundle` the whole bundles are dropped.
//   7. Bundles are added one at a time; once the domain's Idle + Releasing + the selected victims'
//      requests cover the need, a plan is tried (Volcano's BuildNominationPlanInDomain): evict the
//      selected victims, then place the worksheet's parts in order, each inside one placement
//      domain: its tasks pipelined in task order (Allocatable, the place's nodes minus
//      UnschedulableAndUnresolvable, PrePredicate, FutureIdle and PredicateForPreemptAction,
//      allocate's idle-then-future-idle choice), the part then ready or pipelined
//      (sub_job_ready / sub_job_pipelined; a part without a sub-job: the job pipelined). A job
//      containing a hard topology asks hyper_node_gradient_for_sub_job (evicting) which
//      HyperNodes of the domain's subtree each sub-job may use (no handler: the domain alone) and
//      takes the first, widest tier first, where the part is placed; any other job uses the
//      domain itself. Each part keeps its placement for the next; the plan stops once the job is
//      pipelined (a job already ready: after its first part) and stands when the job is then
//      JobPipelined; a part with no placement, or a job not pipelined in the end, undoes it and
//      the next, larger selection is tried.
//   N. On commit each placed part is nominated to its placement domain (sub-job uid, or the
//      job's for a job without sub-jobs → the HyperNode's name; the whole cluster is the top):
//      allocate places it from there (allocate.cc N1), in a later session too.
//   E. With an ExplainRecorder, the last attempt per job is recorded: the need, each domain tried
//      with its bundles and why it was rejected, or the victims and placements of the plan.
// Gang scheduling is what the bundles model, so the point of a plan is all-or-nothing: a
// selection that cannot place the whole gang evicts nothing.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/actions/action_list.h"
#include "runtime/actions/helpers.h"
#include "runtime/actions/session_walk.h"
#include "runtime/explain.h"
#include "runtime/hyper_node.h"
#include "runtime/session.h"
#include "runtime/statement.h"
#include "runtime/sub_job.h"

namespace kiln {
namespace {

enum class GangEvictKind { Preempt, Reclaim };

struct Bundle {
  bool whole = false;
  Job* job = nullptr;
  std::vector<Task*> tasks;
  Resource local;   // Σ resreq of `tasks`
  Resource global;  // whole bundles: Σ resreq of every task of the job; safe: empty
};

Resource SumResreq(std::span<Task* const> tasks) {
  Resource r;
  for (const Task* t : tasks) r.Add(t->resreq());
  return r;
}

// A PodGroup that states its preemptability is taken at its word; one that does not may lose
// tasks to gang eviction (Volcano's IsJobPreemptableForGangEviction).
bool PreemptableForGangEviction(const Job* j) {
  if (j->annotations.contains(kPreemptableKey) || j->labels.contains(kPreemptableKey))
    return j->preemptable;
  return true;
}

// Σ over the need's dimensions of res/need (capped at need when `cap`).
double ScoreAgainstNeed(const Resource& res, const Resource& need, bool cap) {
  double score = 0;
  ForEachBit(need.present, [&](int id) {
    double n = need.Get(static_cast<ResourceId>(id));
    if (n < 0.1) return;  // Resource.ResourceNames skips dimensions below minResource
    double v = res.Get(static_cast<ResourceId>(id));
    if (cap && v > n) v = n;
    score += v / n;
  });
  return score;
}

double Roi(const Bundle& b, const Resource& need) {
  double global = ScoreAgainstNeed(b.global, need, false);
  if (global == 0) return std::numeric_limits<double>::infinity();
  return ScoreAgainstNeed(b.local, need, true) / global;
}

// Volcano's CreateJobBundles for a job without sub-job policies.
std::vector<Bundle> JobBundles(Job* job, std::vector<Task*> tasks) {
  std::sort(tasks.begin(), tasks.end(), [](const Task* l, const Task* r) {
    if (l->priority != r->priority) return l->priority < r->priority;
    return l->uid < r->uid;
  });
  int64_t job_surplus = job->ReadyTaskNum() - job->min_available;
  if (job_surplus < 0) {
    Bundle b{false, job, tasks, SumResreq(tasks), Resource{}};
    return {std::move(b)};
  }
  // Per role with a minTaskMember: how many more tasks it can lose (ready = allocated-status or
  // Succeeded, plus Pending tasks without requests), unless minMember is below the role sum.
  const bool enforce_roles = job->min_available >= job->task_min_available_total;
  std::map<std::string, int64_t, std::less<>> role_surplus;
  if (enforce_roles) {
    for (const auto& [role, min] : job->task_min_available) role_surplus[role] = -min;
    for (const Task* t : job->tasks) {
      bool ready = AllocatedStatus(t->status) || t->status == TaskStatus::Succeeded ||
                   (t->status == TaskStatus::Pending && t->init_resreq().IsEmpty());
      if (!ready) continue;
      if (auto it = role_surplus.find(t->role); it != role_surplus.end()) ++it->second;
    }
  }
  Bundle safe{false, job, {}, Resource{}, Resource{}};
  Bundle whole{true, job, {}, Resource{}, Resource{}};
  for (Task* t : tasks) {
    auto role = enforce_roles ? role_surplus.find(t->role) : role_surplus.end();
    bool role_safe = role == role_surplus.end() || role->second > 0;
    if (job_surplus > 0 && role_safe) {
      safe.tasks.push_back(t);
      --job_surplus;
      if (role != role_surplus.end()) --role->second;
    } else {
      whole.tasks.push_back(t);
    }
  }
  std::vector<Bundle> out;
  if (!safe.tasks.empty()) {
    safe.local = SumResreq(safe.tasks);
    out.push_back(std::move(safe));
  }
  if (!whole.tasks.empty()) {
    whole.local = SumResreq(whole.tasks);
    whole.global = SumResreq(job->tasks);
    out.push_back(std::move(whole));
  }
  return out;
}

class GangEvictRun {
 public:
  GangEvictRun(Session& ssn, GangEvictKind kind)
      : ssn_(ssn),
        kind_(kind),
        args_(ssn.conf().ArgumentsFor(kind == GangEvictKind::Preempt ? "gangpreempt"
                                                                    : "gangreclaim")),
        allocate_args_(ssn.conf().ArgumentsFor("allocate")),
        pool_(ssn.node_pool()) {}

  void Run() {
    // 1.
    actions::StarvingJobs starving = actions::StarvingJobsByQueue(ssn_, [](Job*) { return true; });
    PriorityQueue<Queue*>& queues = starving.queues;
    // 2.
    while (!queues.Empty()) {
      Queue* queue = queues.Pop();
      if (kind_ == GangEvictKind::Reclaim && ssn_.Overused(queue)) continue;
      auto& jobs = starving.by_queue.at(queue);
      while (!jobs.Empty()) {
        Job* job = jobs.Pop();
        explain_ = {};
        Plan plan = PlanForJob(queue, job);
        if (ssn_.JobPipelined(job)) {
          for (Statement& stmt : plan.chain) stmt.Commit();
          ApplyNominations(job, plan.nominations);
          explain_.committed = true;
        } else {
          for (auto it = plan.chain.rbegin(); it != plan.chain.rend(); ++it) it->Discard();
        }
        if (ExplainRecorder* r = ssn_.explain(); r != nullptr && !explain_.action.empty())
          r->RecordGangEviction(job->uid, std::move(explain_));
      }
    }
  }

 private:
  // A plan: the victims' eviction, then one statement per part placed, all still applied to the
  // session; and where each part went (sub-job uid → HyperNode name), the nominations N.
  struct Plan {
    std::vector<Statement> chain;
    std::vector<std::pair<std::string, std::string>> nominations;
  };

  // One part of the gang the plan places (Volcano's eviction worksheet entry): a sub-job and its
  // pending tasks in task order; sub is null for a job without sub-jobs (all its tasks).
  struct Part {
    SubJob* sub;
    std::vector<Task*> tasks;
  };

  // 3., D. and 7.: the plan that made the job pipelined, or an empty one.
  Plan PlanForJob(Queue* queue, Job* job) {
    std::vector<Part> parts = Worksheet(job);
    std::vector<Task*> pending = NeededTasks(job, parts);
    if (pending.empty()) return {};
    if (kind_ == GangEvictKind::Reclaim) {
      for (const Task* t : pending)
        if (!ssn_.Preemptive(queue, t)) return {};
    }
    Resource need;
    for (const Task* t : pending) need.Add(t->init_resreq());
    if (!ssn_.JobStarving(job)) return {};
    const bool explaining = ssn_.explain() != nullptr;
    if (explaining) {
      explain_.action = kind_ == GangEvictKind::Preempt ? "gangpreempt" : "gangreclaim";
      explain_.need = need.ToString();
    }
    for (HyperNode* domain : CandidateDomains(job)) {
      EvictionDomainTry* tried = nullptr;
      if (explaining) {
        tried = &explain_.domains.emplace_back();
        tried->hyper_node = domain != nullptr ? domain->name : std::string();
        tried->tier = domain != nullptr ? domain->tier : 0;
        tried->outcome = "rejected";
      }
      auto reject = [tried](std::string reason, const char* code) {
        if (tried == nullptr) return;
        tried->reason = std::move(reason);
        tried->reason_code = code;
      };
      std::span<Node* const> nodes = DomainNodes(domain);
      if (nodes.empty()) {
        reject("no nodes", "EvictionNoNodes");
        continue;
      }
      std::vector<Bundle> bundles = SelectBundles(job, need, nodes);
      if (bundles.empty()) {
        reject("no victims", "EvictionNoVictims");
        continue;
      }
      Resource idle;
      for (const Node* n : nodes) {
        idle.Add(n->idle);
        idle.Add(n->releasing);
      }
      std::vector<Task*> selected;
      bool covered = false;
      for (const Bundle& b : bundles) {
        if (tried != nullptr) tried->bundles.push_back(BundleText(b));
        selected.insert(selected.end(), b.tasks.begin(), b.tasks.end());
        Resource available = idle;
        available.Add(SumResreq(selected));
        if (!need.LessEqual(available, DimensionDefault::Zero)) continue;
        covered = true;
        unplaced_.clear();
        if (std::optional<Plan> plan = PlanInDomain(queue, job, parts, selected, domain)) {
          if (tried != nullptr) {
            tried->outcome = "planned";
            for (const Task* v : selected) tried->victims.push_back(v->Key());
            tried->placed = plan->nominations;
          }
          return std::move(*plan);
        }
      }
      if (!covered) {
        reject("victims cannot cover the need", "EvictionVictimsInsufficient");
      } else {
        reject("gang not placeable", "EvictionGangNotPlaceable");
        if (tried != nullptr && !unplaced_.empty())
          tried->detail = unplaced_;
      }
    }
    return {};
  }

  // For explain: "<job> safe|whole: pod, pod".
  static std::string BundleText(const Bundle& b) {
    std::string pods;
    for (const Task* t : b.tasks) pods += (pods.empty() ? "" : ", ") + t->Key();
    return fmt::format("{} {}: {}", b.job->uid, b.whole ? "whole" : "safe", pods);
  }

  // N. Where the committed plan placed each part: allocate honours it in later sessions.
  void ApplyNominations(Job* job,
                        const std::vector<std::pair<std::string, std::string>>& nominations) {
    HyperNodeTree* tree = ssn_.cluster().hyper_nodes();
    for (const auto& [uid, name] : nominations) {
      ssn_.cluster().nominated_hyper_nodes()[uid] = name;
      for (const auto& sub : job->sub_jobs)
        if (sub->uid == uid) sub->nominated_hyper_node = tree != nullptr ? tree->Find(name) : nullptr;
    }
  }

  // The nodes of a domain; null (no HyperNodes) and the virtual top are the whole cluster.
  std::span<Node* const> DomainNodes(const HyperNode* domain) const {
    if (domain == nullptr || domain->top) return ssn_.cluster().nodes();
    return domain->nodes;
  }

  // `root`'s subtree (root first, then level by level) as the gradient point asked for eviction
  // keeps it, widest tier first (subtree order within a tier); nullopt when no plugin answers.
  // sub: null for the job's gradient (D), the part's sub-job for a placement gradient (7; a part
  // without a sub-job has none).
  std::optional<std::vector<HyperNode*>> EvictionGradient(const Job* job, HyperNode* root,
                                                          const SubJob* sub, bool sub_job) {
    std::vector<HyperNode*> candidates{root};
    for (size_t i = 0; i < candidates.size(); ++i)
      for (HyperNode* c : candidates[i]->children) candidates.push_back(c);
    Session::EvictionPurposeScope purpose(ssn_);
    std::optional<std::vector<HyperNode*>> kept =
        !sub_job ? ssn_.HyperNodeGradientForJobFn(job, candidates)
        : sub    ? ssn_.HyperNodeGradientForSubJobFn(sub, candidates)
                 : std::nullopt;
    if (kept)
      std::stable_sort(kept->begin(), kept->end(),
                       [](const HyperNode* l, const HyperNode* r) { return l->tier > r->tier; });
    return kept;
  }

  // D. (Volcano's GetCandidateDomains / PickDomainsFromGradients.)
  std::vector<HyperNode*> CandidateDomains(const Job* job) {
    HyperNodeTree* tree = ssn_.cluster().hyper_nodes();
    if (tree == nullptr) return {nullptr};
    HyperNode* root = tree->top();
    std::vector<HyperNode*> domains =
        EvictionGradient(job, root, nullptr, false).value_or(std::vector<HyperNode*>{root});
    const size_t cap = args_.max_domains > 0 ? static_cast<size_t>(args_.max_domains) : 8;
    if (domains.size() > cap) domains.resize(cap);
    if (domains.empty() && !job->hard_topology) domains.push_back(root);
    return domains;
  }

  // 7. One plan in `domain` (Volcano's BuildNominationPlanInDomain): evict the victims, then
  // place the parts in worksheet order, each in the first placement domain where all its tasks
  // find a node and it is then ready or pipelined (a part without a sub-job: the job pipelined),
  // keeping each part's placement for the next; stop once the job is pipelined (a job that was
  // already ready: after the first part). nullopt, everything undone, when a part finds no
  // placement or the job is not pipelined in the end.
  std::optional<Plan> PlanInDomain(Queue* queue, Job* job, const std::vector<Part>& parts,
                                   const std::vector<Task*>& victims, HyperNode* domain) {
    const char* reason = kind_ == GangEvictKind::Preempt ? "gangpreempt" : "gangreclaim";
    const bool was_ready = ssn_.JobReady(job);
    Plan plan;
    auto undo = [&plan] {
      for (auto it = plan.chain.rbegin(); it != plan.chain.rend(); ++it) it->Discard();
      return std::nullopt;
    };
    if (!victims.empty()) {
      Statement evict(ssn_);
      for (Task* v : victims) {
        if (Status s = evict.Evict(v, reason); !s.ok()) {
          spdlog::error("{}: evicting {} failed: {}", reason, v->Key(), s.error().message);
          evict.Discard();
          return undo();
        }
      }
      plan.chain.push_back(std::move(evict));
    }
    bool pipelined = false;
    for (const Part& part : parts) {
      std::vector<HyperNode*> places{domain};
      if (domain != nullptr && job->ContainsHardTopology())
        places = EvictionGradient(job, domain, part.sub, true).value_or(std::vector<HyperNode*>{domain});
      bool placed = false;
      for (HyperNode* place : places) {
        Statement trial(ssn_);
        if (TryPlace(trial, queue, job, part, !victims.empty(), DomainNodes(place))) {
          plan.chain.push_back(std::move(trial));
          plan.nominations.emplace_back(part.sub != nullptr ? part.sub->uid : job->uid,
                                        place != nullptr ? place->name
                                                         : std::string(kClusterTopHyperNode));
          placed = true;
          break;
        }
        trial.Discard();
      }
      if (!placed) {
        unplaced_ = part.sub != nullptr ? fmt::format("sub-job {} found no placement", part.sub->uid)
                                        : std::string("a task found no node");
        return undo();
      }
      pipelined = ssn_.JobPipelined(job);
      if (was_ready || pipelined) break;
    }
    if (!pipelined) {
      unplaced_ = "the job is not pipelined with every part placed";
      return undo();
    }
    return plan;
  }

  // The parts of the job's gang still to place (Volcano's organizeEvictionWorksheet, as
  // allocate's S1 orders them): sub-jobs with pending tasks that are not gated and have requests,
  // those still needed for their policy's minSubGroups first, then sub_job_order. A job without
  // sub-jobs is one part.
  std::vector<Part> Worksheet(Job* job) const {
    std::vector<Part> parts;
    if (job->sub_jobs.empty()) {
      std::vector<Task*> tasks = PendingOf(job->TasksWith(TaskStatus::Pending));
      if (!tasks.empty()) parts.push_back({nullptr, std::move(tasks)});
      return parts;
    }
    const std::unordered_set<const SubJob*> required =
        actions::SubJobsRequiredByMinSubGroups(ssn_, job);
    for (const auto& sub : job->sub_jobs) {
      std::vector<Task*> pending;
      for (Task* t : sub->tasks)
        if (t->status == TaskStatus::Pending) pending.push_back(t);
      std::vector<Task*> tasks = PendingOf(pending);
      if (!tasks.empty()) parts.push_back({sub.get(), std::move(tasks)});
    }
    std::stable_sort(parts.begin(), parts.end(), [&](const Part& l, const Part& r) {
      const bool lr = required.count(l.sub) != 0, rr = required.count(r.sub) != 0;
      if (lr != rr) return lr;
      return ssn_.SubJobLess(l.sub, r.sub);
    });
    return parts;
  }

  // Of `tasks`, those a plan places: not gated, with requests, in task order.
  std::vector<Task*> PendingOf(std::span<Task* const> tasks) const {
    std::vector<Task*> out;
    for (Task* t : tasks)
      if (!t->sch_gated && !t->resreq().IsEmpty()) out.push_back(t);
    std::stable_sort(out.begin(), out.end(),
                     [this](const Task* l, const Task* r) { return ssn_.TaskLess(l, r); });
    return out;
  }

  // 3. The tasks whose requests make the need (Volcano's CollectPendingTasksForGangEviction): a
  // job that is already ready needs its first part, one still starting every part.
  std::vector<Task*> NeededTasks(const Job* job, const std::vector<Part>& parts) const {
    if (parts.empty()) return {};
    if (ssn_.JobReady(job)) return parts.front().tasks;
    std::vector<Task*> out;
    for (const Part& p : parts) out.insert(out.end(), p.tasks.begin(), p.tasks.end());
    return out;
  }

  // 4.–6.
  std::vector<Bundle> SelectBundles(Job* job, const Resource& need,
                                    std::span<Node* const> nodes) {
    std::vector<Job*> order;  // victim jobs in the order their first candidate was met
    std::unordered_map<Job*, std::vector<Task*>> by_job;
    for (Node* node : nodes) {
      for (Task* t : node->tasks) {
        if (!IsCandidate(job, t)) continue;
        auto [it, inserted] = by_job.try_emplace(t->job);
        if (inserted) order.push_back(t->job);
        it->second.push_back(t);
      }
    }
    std::vector<Bundle> bundles;
    for (Job* victim : order)
      for (Bundle& b : JobBundles(victim, std::move(by_job[victim]))) bundles.push_back(std::move(b));
    if (bundles.empty()) return {};
    SortBundles(bundles, need, job);

    std::vector<Task*> flat;
    for (const Bundle& b : bundles) flat.insert(flat.end(), b.tasks.begin(), b.tasks.end());
    std::vector<Task*> allowed = ssn_.UnifiedEvictable(job, flat);
    if (allowed.empty()) return {};
    std::vector<const Task*> allowed_set(allowed.begin(), allowed.end());
    std::sort(allowed_set.begin(), allowed_set.end());
    auto is_allowed = [&](const Task* t) {
      return std::binary_search(allowed_set.begin(), allowed_set.end(), t);
    };
    std::vector<Bundle> valid;
    for (Bundle& b : bundles) {
      std::vector<Task*> approved;
      for (Task* t : b.tasks)
        if (is_allowed(t)) approved.push_back(t);
      if (b.whole) {
        if (approved.size() == b.tasks.size()) valid.push_back(std::move(b));
        continue;
      }
      if (approved.empty()) continue;
      b.local = SumResreq(approved);
      b.tasks = std::move(approved);
      valid.push_back(std::move(b));
    }
    SortBundles(valid, need, job);
    if (!args_.allow_whole_bundle)
      std::erase_if(valid, [](const Bundle& b) { return b.whole; });
    return valid;
  }

  bool IsCandidate(const Job* preemptor, const Task* t) const {
    if (!t->preemptable || t->job == nullptr || t->job->queue == nullptr) return false;
    const Job* victim = t->job;
    if (!PreemptableForGangEviction(victim)) return false;
    if (kind_ == GangEvictKind::Preempt) {
      if (!PreemptableStatus(t->status)) return false;
      if (victim->queue != preemptor->queue) return false;
      return victim != preemptor && preemptor->priority > victim->priority;
    }
    if (t->status != TaskStatus::Running) return false;
    return victim->queue != preemptor->queue && victim->queue->reclaimable;
  }

  void SortBundles(std::vector<Bundle>& bundles, const Resource& need, const Job* job) const {
    const Queue* own_queue = job->queue;
    std::stable_sort(bundles.begin(), bundles.end(), [&](const Bundle& l, const Bundle& r) {
      if (l.whole != r.whole) return !l.whole;
      if (kind_ == GangEvictKind::Preempt) {
        if (l.job != r.job) {
          // Volcano's less = !JobOrderFn: the job that would be scheduled later goes first.
          bool lr = !ssn_.JobLess(l.job, r.job);
          bool rl = !ssn_.JobLess(r.job, l.job);
          if (lr != rl) return lr;
        }
      } else if (l.job->queue != r.job->queue) {
        bool lr = ssn_.VictimQueueOrderFn(l.job->queue, r.job->queue, own_queue) < 0;
        bool rl = ssn_.VictimQueueOrderFn(r.job->queue, l.job->queue, own_queue) < 0;
        if (lr != rl) return lr;
      }
      double lroi = Roi(l, need), rroi = Roi(r, need);
      if (lroi != rroi) return lroi > rroi;
      if (l.job->uid != r.job->uid) return l.job->uid < r.job->uid;
      const std::string& lfirst = l.tasks.empty() ? std::string() : l.tasks.front()->uid;
      const std::string& rfirst = r.tasks.empty() ? std::string() : r.tasks.front()->uid;
      if (lfirst != rfirst) return lfirst < rfirst;
      return l.tasks.size() < r.tasks.size();
    });
  }

  // 7.: pipeline the part's tasks on `place`'s nodes (evicted: whether the plan evicts); true
  // when every task found a node and the part is then ready or pipelined (a part without a
  // sub-job: the job pipelined).
  bool TryPlace(Statement& trial, Queue* queue, Job* job, const Part& part, bool evicted,
                std::span<Node* const> place) {
    size_t rotation = 0;
    actions::PredicateHelper helper(&rotation, pool_);
    for (Task* t : part.tasks) {
      if (queue != nullptr && !ssn_.Allocatable(queue, t)) return false;
      std::vector<Node*> storage;
      std::span<Node* const> nodes = actions::NodesWithoutUnresolvable(ssn_, t, storage);
      if (place.data() != ssn_.cluster().nodes().data()) nodes = Within(nodes, place, storage);
      if (nodes.empty()) return false;
      if (ssn_.PrePredicateFn(t)) return false;
      actions::PredicateResult found = helper.PredicateNodes(
          t, nodes,
          [this](const Task* task, const Node* n) { return ssn_.PredicateForPreemptAction(task, n); },
          allocate_args_.predicate_error_cache_enable, &t->init_resreq());
      if (found.nodes.empty()) return false;
      Node* best = actions::BestIdleThenFutureIdleNode(ssn_, t, found.nodes, pool_);
      if (best == nullptr || !actions::FitsFutureIdle(t->init_resreq(), best)) return false;
      if (Status s = trial.Pipeline(t, best, evicted); !s.ok()) return false;
    }
    if (trial.empty()) return false;
    if (part.sub == nullptr) return ssn_.JobPipelined(job);
    return ssn_.SubJobReady(job, part.sub) || ssn_.SubJobPipelined(job, part.sub);
  }

  // The nodes of `place` that are in `nodes` (the schedulable ones), in `place`'s order.
  std::span<Node* const> Within(std::span<Node* const> nodes, std::span<Node* const> place,
                                std::vector<Node*>& storage) const {
    std::vector<uint8_t> in(ssn_.cluster().nodes().size(), 0);
    for (const Node* n : nodes) in[n->index] = 1;
    std::vector<Node*> out;
    for (Node* n : place)
      if (in[n->index]) out.push_back(n);
    storage = std::move(out);
    return storage;
  }

  Session& ssn_;
  GangEvictKind kind_;
  GangEvictionExplain explain_;  // the current job's attempt, when explaining
  std::string unplaced_;         // why the last plan failed, when explaining
  const ActionArguments& args_;
  const ActionArguments& allocate_args_;
  ThreadPool& pool_;
};

class GangPreempt final : public Action {
 public:
  std::string_view name() const override { return "gangpreempt"; }
  void Execute(Session& ssn) const override { GangEvictRun(ssn, GangEvictKind::Preempt).Run(); }
};

class GangReclaim final : public Action {
 public:
  std::string_view name() const override { return "gangreclaim"; }
  void Execute(Session& ssn) const override { GangEvictRun(ssn, GangEvictKind::Reclaim).Run(); }
};

}  // namespace

const Action& GangPreemptAction() {
  static const GangPreempt action;
  return action;
}

const Action& GangReclaimAction() {
  static const GangReclaim action;
  return action;
}

}  // namespace kiln
