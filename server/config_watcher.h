#pragma once
// Watches the directories a configuration is read from and calls back once per burst of changes.
//
// Directories, not files: Kubernetes updates a mounted ConfigMap by writing a new timestamped
// directory and atomically renaming a `..data` symlink over the old one, so a watch on the file
// itself would keep pointing at the deleted copy. Editors similarly write a temp file and rename
// it. Only events on names the configuration is read from count (`relevant`: the conf file, the
// `..data`-style entries of a ConfigMap mount, *.policy, *.kpack, ...); the rest of a directory
// is ignored, so a log file written into a watched directory cannot make the watcher react to
// (and log) its own writes. The callback decides (by content hash) whether anything changed.
//
// Two threads: the watcher's own reads inotify and coalesces events (the callback is due once
// the names have been quiet for `quiet`, default 200 ms); a second thread runs the callback. So
// a reload's parse and compile never run on the session thread, and a slow compile never stops
// the watcher from seeing the next change, nor Stop() from returning: the callback is told
// (`superseded`) when a newer change is waiting or the watcher is stopping, and may abandon its
// work.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/status.h"

namespace kiln::server {

class ConfigWatcher {
 public:
  // Turns true once a newer burst of changes is waiting or Stop() was called: the callback's
  // work no longer matters.
  using Superseded = std::function<bool()>;
  using Callback = std::function<void(const Superseded& superseded)>;
  // Whether an event on `name` in `directory` (one of `directories`) may change the
  // configuration. Events on a watched directory itself always count.
  using Relevant = std::function<bool(const std::string& directory, std::string_view name)>;

  ConfigWatcher(std::vector<std::string> directories, Callback on_change,
                std::chrono::milliseconds quiet = std::chrono::milliseconds(200),
                Relevant relevant = nullptr);
  // A callback that cannot be abandoned (it runs to its end; Stop() waits for it).
  ConfigWatcher(std::vector<std::string> directories, std::function<void()> on_change,
                std::chrono::milliseconds quiet = std::chrono::milliseconds(200),
                Relevant relevant = nullptr);
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  // Replaces the callback; before Start() only.
  void SetCallback(Callback on_change) { on_change_ = std::move(on_change); }

  // Sets up inotify and starts the threads. Error when a directory cannot be watched.
  Status Start();
  // Stops both threads. A callback in progress is told it is superseded and Stop waits for it
  // to return. Idempotent.
  void Stop();

  // Blocks until no event is pending and no callback runs or is due (or `timeout` passes); true
  // when idle. `kiln simulate --watch` calls it between cycles so every change written before a
  // cycle starts is in effect for that cycle.
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Stop() was called (a callback may abandon its work at once).
  bool stopping() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }
  // Callbacks run so far (tests).
  uint64_t callbacks() const { return callbacks_.load(); }
  // Events read and ignored because no configuration file was named (tests).
  uint64_t ignored_events() const { return ignored_.load(); }

 private:
  void Loop();
  void Work();
  void AddWatches();

  std::vector<std::string> directories_;
  Callback on_change_;
  std::chrono::milliseconds quiet_;
  Relevant relevant_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: wakes the thread for Stop
  std::vector<int> watch_ids_;
  std::thread thread_;
  std::thread worker_;
  std::atomic<uint64_t> callbacks_{0};
  std::atomic<uint64_t> ignored_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;       // the worker waits for requests here
  std::condition_variable idle_cv_;
  bool events_pending_ = false;  // relevant events seen, quiet period not over yet
  uint64_t requested_ = 0;       // bursts handed to the worker
  uint64_t started_ = 0;         // the request the running (or last) callback serves
  bool running_ = false;         // a callback runs
  bool stopping_ = false;
};

// The directory to watch for `file`: its parent, "." for a bare file name.
std::string ParentDir(const std::string& file);

}  // namespace kiln::server
