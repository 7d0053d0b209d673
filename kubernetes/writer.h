#pragma once
// The writes a scheduler makes to the API server, one synchronous call each (the binding's
// worker pool runs them off the session's thread), and the bounded pool itself.
//
// Each call answers with an outcome the caller acts on: done, a conflict or a missing object
// (re-read and rebuild), or "retry later" (429, 5xx, network). In dry-run mode nothing is sent:
// each write is logged and reported done.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kubernetes/client.h"
#include "kubernetes/decode.h"
#include "runtime/model.h"

namespace kiln::kube {

// A fixed set of threads over a bounded queue: TrySubmit refuses work when the queue is full, so
// a stalled API server cannot make the scheduler's memory grow without end.
class WorkerPool {
 public:
  WorkerPool(int threads, size_t capacity);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  bool TrySubmit(std::function<void()> work);
  // Waits until the queue is empty and no work runs, up to `timeout`; true when it drained.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Drops queued work that has not started and joins the threads.
  void Stop();
  size_t queued() const;

 private:
  void Loop();
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  size_t capacity_;
  int running_ = 0;
  bool stop_ = false;
};

struct WriteResult {
  enum class Outcome {
    kDone,
    kConflict,    // 409: the object changed (or the pod is bound already)
    kNotFound,    // 404
    kRetryLater,  // 429, 5xx, or the request did not complete
    kFailed,      // any other answer: the write is wrong and retrying will not help
  };
  Outcome outcome = Outcome::kFailed;
  int code = 0;
  std::string message;
  bool done() const { return outcome == Outcome::kDone; }
};

// What an Event is about (core/v1 ObjectReference).
struct ObjectReference {
  std::string api_version = "v1";
  std::string kind = "Pod";
  std::string ns;
  std::string name;
  std::string uid;  // may be empty
};

// The status a session wants a PodGroup to have.
struct PodGroupStatusUpdate {
  PodGroupPhase phase = PodGroupPhase::Pending;
  std::vector<PodGroupCondition> conditions;
  int32_t running = 0, succeeded = 0, failed = 0;
};

struct WriterOptions {
  std::string scheduler_name = "volcano";
  bool dry_run = false;
  int conflict_retries = 3;  // re-GET + re-apply rounds for PodGroup status
};

class Writer {
 public:
  Writer(std::shared_ptr<KubeClient> client, WriterOptions options)
      : client_(std::move(client)), options_(std::move(options)) {}

  // POST pods/{name}/binding with the pod's uid as precondition. `annotations` go in the
  // Binding's metadata, which the API server copies onto the pod (Volcano's cache binds with
  // TaskInfo.PodAnnotations this way: deviceshare's device assignment).
  WriteResult Bind(const std::string& ns, const std::string& name, const std::string& uid,
                   const std::string& node, const StringMap& annotations = {});
  // Volcano's evict: the DisruptionTarget condition on the pod's status, then DELETE (with the
  // uid as precondition, so a replacement pod of the same name is never deleted).
  WriteResult Evict(const std::string& ns, const std::string& name, const std::string& uid);
  // POST pods/{name}/eviction (the API server checks PodDisruptionBudgets; 429 = not now).
  WriteResult EvictWithApi(const std::string& ns, const std::string& name, const std::string& uid);
  // status.conditions PodScheduled=False reason Unschedulable with `message`.
  WriteResult SetUnschedulable(const std::string& ns, const std::string& name, const std::string& message);
  WriteResult SetNominatedNode(const std::string& ns, const std::string& name, const std::string& node);
  // A core/v1 Event about any object (involvedObject = `about`), as component `scheduler_name`;
  // `count` is how many times it happened (EventQueue folds repeats into one Event).
  WriteResult Event(const ObjectReference& about, const std::string& type, const std::string& reason,
                    const std::string& action, const std::string& message, int32_t count = 1);
  // A core/v1 Event about a pod (action Scheduling).
  WriteResult PodEvent(const std::string& ns, const std::string& name, const std::string& uid,
                       const std::string& type, const std::string& reason, const std::string& message);
  // GET the PodGroup, set its status, PUT it with that resourceVersion; on 409 again.
  WriteResult UpdatePodGroupStatus(const std::string& ns, const std::string& name,
                                   const PodGroupStatusUpdate& update);
  // PATCH queues/{name}/status with status.allocated.
  WriteResult UpdateQueueAllocated(const std::string& name, const Resource& allocated);
  // Re-reads a pod: nullopt when it no longer exists.
  Result<std::optional<DecodedPod>> GetPod(const std::string& ns, const std::string& name);

  const WriterOptions& options() const { return options_; }

 private:
  WriteResult Classify(const Result<Response>& r, std::string_view what);
  WriteResult DryRun(std::string_view what);

  std::shared_ptr<KubeClient> client_;
  WriterOptions options_;
};

std::string PodPath(const std::string& ns, const std::string& name);

// Events off the write path, as client-go's event broadcaster keeps them: a bounded queue with
// one sender thread of its own, so a bind never waits behind an Event and an Event never takes a
// writer from a bind. Events are best-effort, and what is not sent is counted:
//   * an Event posted again while the first is still queued (same object, type, reason and
//     message) is folded into it: one Event goes out, its `count` the number of posts (what
//     client-go's correlator does with repeats);
//   * when `capacity` Events are queued, a new one is dropped (client-go's broadcaster drops
//     beyond 1000 queued);
//   * Stop() drops what has not been sent.
// The sender runs at a lower OS priority (nice +10) than the writers and the session: on a busy
// machine the binds and the scheduling go first.
class EventQueue {
 public:
  struct Record {
    ObjectReference about;
    std::string type, reason, action, message;
    int32_t count = 1;  // posts folded into it
  };
  // Sends one Event (Writer::Event, or a stand-in in tests).
  using Send = std::function<WriteResult(const Record&)>;
  struct Counts {
    int64_t sent = 0;     // answered 2xx
    int64_t failed = 0;   // any other answer, or no answer (not retried)
    int64_t dropped = 0;  // the queue was full, or stopped before they were sent
    int64_t folded = 0;   // posts that went into an Event already queued
    size_t queued = 0;    // waiting to be sent now
  };
  EventQueue(Send send, size_t capacity);
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  void Post(ObjectReference about, std::string type, std::string reason, std::string action,
            std::string message);
  // Waits until nothing is queued or being sent, up to `timeout`; true when idle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  void Stop();
  Counts counts() const;

 private:
  struct Pending {
    std::string key;  // by_key_'s
    Record record;
  };
  void Loop();

  Send send_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::unique_ptr<Pending>> queue_;
  std::unordered_map<std::string, Pending*> by_key_;  // what Post folds into: the queued ones
  bool sending_ = false, stop_ = false;
  Counts counts_;
  std::thread thread_;
};

}  // namespace kiln::kube
