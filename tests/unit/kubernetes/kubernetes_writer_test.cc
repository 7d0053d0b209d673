// kubernetes/writer.h on its own, without an API server: the bounded worker pool the binding runs
// its writes on (every job runs; a full queue refuses work; Stop drops what has not started), the
// Event queue beside it (repeats folded, a full queue drops, both counted), and the writer's
// dry-run mode (every write reported done, nothing sent). The writes themselves, with
// an API server answering, are covered by kubernetes_emulator_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kubernetes/writer.h"

namespace kiln::kube {
namespace {

using namespace std::chrono_literals;

// Holds the pool's workers until Open(): lets a test fill the queue behind a running job.
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    entered_ = true;
    entered_cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void WaitEntered() {
    std::unique_lock lock(mu_);
    entered_cv_.wait(lock, [&] { return entered_; });
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_, entered_cv_;
  bool open_ = false, entered_ = false;
};

TEST(KubernetesWorkerPool, RunsEverySubmittedJobAndDrains) {
  WorkerPool pool(3, 100);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_TRUE(pool.WaitIdle(10s));
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(pool.queued(), 0u);
}

TEST(KubernetesWorkerPool, AFullQueueRefusesWorkAndStopDropsWhatHasNotStarted) {
  WorkerPool pool(1, 2);
  Gate gate;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.TrySubmit([&] {
    gate.Wait();
    ++ran;
  }));
  gate.WaitEntered();  // the one worker is busy: what follows waits in the queue
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_FALSE(pool.TrySubmit([&] { ++ran; }));  // capacity 2: refused, not queued
  EXPECT_EQ(pool.queued(), 2u);
  EXPECT_FALSE(pool.WaitIdle(20ms));  // a job is still running
  std::thread stopper([&] { pool.Stop(); });
  // Stop clears the queue at once, then joins the worker once its running job ends.
  for (int i = 0; i < 1000 && pool.queued() != 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(pool.queued(), 0u);
  gate.Open();
  stopper.join();
  EXPECT_EQ(ran.load(), 1);  // only the job that had started
  EXPECT_FALSE(pool.TrySubmit([&] { ++ran; }));  // a stopped pool takes nothing
}

TEST(KubernetesWriter, DryRunReportsEveryWriteDoneAndSendsNothing) {
  // No client at all: a dry-run writer that tried to send would crash here.
  Writer writer(nullptr, WriterOptions{.scheduler_name = "volcano", .dry_run = true});
  PodGroupStatusUpdate status;
  status.phase = PodGroupPhase::Running;
  Resource allocated;
  for (const WriteResult& r :
       {writer.Bind("ns", "p", "uid-1", "n1", {{"k", "v"}}), writer.Evict("ns", "p", "uid-1"),
        writer.EvictWithApi("ns", "p", "uid-1"), writer.SetUnschedulable("ns", "p", "0/3 nodes"),
        writer.SetNominatedNode("ns", "p", "n2"),
        writer.PodEvent("ns", "p", "uid-1", "Normal", "Scheduled", "bound"),
        writer.UpdatePodGroupStatus("ns", "pg", status), writer.UpdateQueueAllocated("q", allocated)}) {
    EXPECT_TRUE(r.done());
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.message, "dry-run");
  }
}

// The Event queue beside the writers: while its sender is busy, a repeat of a queued Event is
// folded into it (sent once, with its count), a full queue drops new Events and counts them, and
// a repeat of an Event already sent is a new one.
TEST(KubernetesEventQueue, FoldsRepeatsDropsWhenFullAndCountsBoth) {
  Gate gate;
  std::mutex mu;
  std::vector<EventQueue::Record> sent;
  EventQueue events(
      [&](const EventQueue::Record& r) {
        if (r.reason == "First") gate.Wait();
        std::lock_guard lock(mu);
        sent.push_back(r);
        return WriteResult{WriteResult::Outcome::kDone, 201, ""};
      },
      /*capacity=*/2);
  auto post = [&](const std::string& pod, const std::string& reason) {
    events.Post(ObjectReference{"v1", "Pod", "ns", pod, "uid-" + pod}, "Normal", reason, "Scheduling",
                "assigned " + pod);
  };
  post("a", "First");
  gate.WaitEntered();  // the sender holds "a": what follows waits in the queue
  post("b", "Scheduled");
  post("b", "Scheduled");  // the same Event again: folded into the queued one
  post("c", "Scheduled");
  post("d", "Scheduled");  // capacity 2 (b and c): dropped
  EXPECT_EQ(events.counts().queued, 2u);
  gate.Open();
  ASSERT_TRUE(events.WaitIdle(10s));
  post("b", "Scheduled");  // sent already: a new Event
  ASSERT_TRUE(events.WaitIdle(10s));
  std::lock_guard lock(mu);
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].about.name, "a");
  EXPECT_EQ((std::pair{sent[1].about.name, sent[1].count}), (std::pair<std::string, int32_t>{"b", 2}));
  EXPECT_EQ((std::pair{sent[2].about.name, sent[2].count}), (std::pair<std::string, int32_t>{"c", 1}));
  EXPECT_EQ((std::pair{sent[3].about.name, sent[3].count}), (std::pair<std::string, int32_t>{"b", 1}));
  EventQueue::Counts c = events.counts();
  EXPECT_EQ(c.sent, 4);
  EXPECT_EQ(c.folded, 1);
  EXPECT_EQ(c.dropped, 1);
  EXPECT_EQ(c.failed, 0);
}

TEST(KubernetesEventQueue, StopDropsWhatIsQueuedAndTakesNoMore) {
  Gate gate;
  std::atomic<int> sent{0};
  EventQueue events(
      [&](const EventQueue::Record&) {
        gate.Wait();
        ++sent;
        return WriteResult{WriteResult::Outcome::kRetryLater, 0, "no answer"};
      },
      10);
  ObjectReference pod{"v1", "Pod", "ns", "p", ""};
  events.Post(pod, "Warning", "FailedScheduling", "Scheduling", "first");
  gate.WaitEntered();
  events.Post(pod, "Warning", "FailedScheduling", "Scheduling", "second");
  std::thread stopper([&] { events.Stop(); });
  for (int i = 0; i < 1000 && events.counts().queued != 0; ++i) std::this_thread::sleep_for(1ms);
  gate.Open();
  stopper.join();
  events.Post(pod, "Warning", "FailedScheduling", "Scheduling", "third");
  EventQueue::Counts c = events.counts();
  EXPECT_EQ(sent.load(), 1);
  EXPECT_EQ(c.failed, 1);   // the one in flight, answered badly: counted, not retried
  EXPECT_EQ(c.dropped, 2);  // the queued one at Stop, and the one posted after
  EXPECT_EQ(c.sent, 0);
}

TEST(KubernetesWriter, PodPathIsTheCoreV1Path) {
  EXPECT_EQ(PodPath("research", "vit-0"), "/api/v1/namespaces/research/pods/vit-0");
}

}  // namespace
}  // namespace kiln::kube
