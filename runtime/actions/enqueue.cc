// enqueue (volcano-semantics.md §4.1): moves Pending PodGroups to Inqueue when the plugins'
// JobEnqueueable vote lets them in, round-robin over queues in QueueOrder, so that allocate only
// considers jobs the cluster has admitted.
//
// Stages:
//   1. For every job: stamp its schedule start time if unset; push its queue (once) into the
//      queue heap (QueueOrderFn); if the job is Pending, push it into its queue's job heap
//      (JobOrderFn). No JobValid check here (Volcano has none).
//   2. Pop the best queue; a queue without pending jobs is dropped. Pop its best job and admit it
//      when its PodGroup has no minResources or JobEnqueueable permits: JobEnqueued, phase
//      Inqueue. A rejected job simply waits for the next cycle; who refused it and why (the
//      vote's refusal, reason_codes.h) goes to the session's result and to explain. Push the queue
//      back, so queues take turns by their (updated) order.

#include <unordered_map>

#include "runtime/actions/action_list.h"
#include "runtime/actions/priority_queue.h"
#include "runtime/explain.h"
#include "runtime/reason_codes.h"
#include "runtime/session.h"

namespace kiln {
namespace {

class Enqueue final : public Action {
 public:
  std::string_view name() const override { return "enqueue"; }

  void Execute(Session& ssn) const override {
    auto queue_less = [&ssn](Queue* const& l, Queue* const& r) { return ssn.QueueLess(l, r); };
    auto job_less = [&ssn](Job* const& l, Job* const& r) { return ssn.JobLess(l, r); };

    // 1. Queues and their pending jobs.
    PriorityQueue<Queue*> queues(queue_less);
    std::unordered_map<const Queue*, PriorityQueue<Job*>> jobs_by_queue;
    for (Job* job : ssn.cluster().jobs()) {
      if (job->schedule_start_time == 0) job->schedule_start_time = ssn.now();
      Queue* queue = job->queue;
      if (queue == nullptr) continue;
      auto [it, inserted] = jobs_by_queue.try_emplace(queue, job_less);
      if (inserted) queues.Push(queue);
      if (job->IsPending()) it->second.Push(job);
    }

    // 2. Round robin over queues, one job per turn.
    while (!queues.Empty()) {
      Queue* queue = queues.Pop();
      auto& jobs = jobs_by_queue.at(queue);
      if (jobs.Empty()) continue;
      Job* job = jobs.Pop();
      SetLastVoteRefusal({});
      if (!job->has_min_resources || ssn.JobEnqueueable(job)) {
        ssn.JobEnqueued(job);
        job->phase = PodGroupPhase::Inqueue;
      } else {
        Refused(ssn, job);
      }
      queues.Push(queue);
    }
  }

 private:
  static void Refused(Session& ssn, const Job* job) {
    AdmissionRefusal refusal = LastVoteRefusal();
    // A bare `reject` says nothing; every plugin abstaining (a fallback that refuses) names none.
    if (refusal.code.empty()) refusal.code = "EnqueueRejected";
    if (refusal.message.empty())
      refusal.message = refusal.plugin.empty()
                            ? std::string("no plugin permitted the PodGroup")
                            : refusal.plugin + " refused the PodGroup";
    NoteAdmissionRefusal(job->uid, refusal);
    if (ExplainRecorder* r = ssn.explain()) r->RecordAdmission(job->uid, std::move(refusal));
  }
};

}  // namespace

const Action& EnqueueAction() {
  static const Enqueue action;
  return action;
}

}  // namespace kiln
