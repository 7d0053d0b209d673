#pragma once
// Watches the directories a configuration is read from and calls back once per burst of changes.
//
// Directories, not files: Kubernetes updates a mounted ConfigMap by writing a new timestamped
// directory and atomically renaming a `..data` symlink over the old one, so a watch on the file
// itself would keep pointing at the deleted copy. Editors similarly write a temp file and rename
// it. Every event in a watched directory counts; the callback decides (by content hash) whether
// anything changed. Events are coalesced: the callback runs once the directories have been quiet
// for `quiet` (default 200 ms), on the watcher's own thread, so a reload's parse and compile
// never run on the session thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/status.h"

namespace kiln::server {

class ConfigWatcher {
 public:
  ConfigWatcher(std::vector<std::string> directories, std::function<void()> on_change,
                std::chrono::milliseconds quiet = std::chrono::milliseconds(200));
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Sets up inotify and starts the thread. Error when a directory cannot be watched.
  Status Start();
  // Stops the thread (a callback in progress finishes first). Idempotent.
  void Stop();

  // Blocks until no event is pending and no callback runs (or `timeout` passes); true when idle.
  // `kiln simulate --watch` calls it between cycles so every change written before a cycle
  // starts is in effect for that cycle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Callbacks run so far (tests).
  uint64_t callbacks() const { return callbacks_.load(); }

 private:
  void Loop();
  void AddWatches();

  std::vector<std::string> directories_;
  std::function<void()> on_change_;
  std::chrono::milliseconds quiet_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes the thread for Stop
  std::vector<int> watch_ids_;
  std::thread thread_;
  std::atomic<uint64_t> callbacks_{0};

  std::mutex mu_;
  std::condition_variable idle_cv_;
  bool busy_ = false;  // events seen and not yet handled, or a callback running
};

}  // namespace kiln::server
