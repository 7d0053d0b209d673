#include "server/config_watcher.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::server {

namespace {

constexpr uint32_t kEvents = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                             IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

// Whether `fd` has something to read, without reading it.
bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace

ConfigWatcher::ConfigWatcher(std::vector<std::string> directories, std::function<void()> on_change,
                             std::chrono::milliseconds quiet)
    : directories_(std::move(directories)), on_change_(std::move(on_change)), quiet_(quiet) {}

ConfigWatcher::~ConfigWatcher() {
  Stop();
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

Status ConfigWatcher::Start() {
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return Error{fmt::format("inotify_init1: {}", std::strerror(errno)), {}};
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) return Error{fmt::format("eventfd: {}", std::strerror(errno)), {}};
  for (const std::string& dir : directories_) {
    int wd = ::inotify_add_watch(inotify_fd_, dir.c_str(), kEvents | IN_ONLYDIR);
    if (wd < 0)
      return Error{fmt::format("cannot watch {}: {}", dir, std::strerror(errno)), SourceLocation{dir}};
    watch_ids_.push_back(wd);
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void ConfigWatcher::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  thread_.join();
}

// A watched directory that was deleted or moved (IN_IGNORED) is watched again once it exists.
void ConfigWatcher::AddWatches() {
  for (size_t i = 0; i < directories_.size(); ++i) {
    int wd = ::inotify_add_watch(inotify_fd_, directories_[i].c_str(), kEvents | IN_ONLYDIR);
    if (wd >= 0) watch_ids_[i] = wd;  // same id when the watch already exists
  }
}

void ConfigWatcher::Loop() {
  alignas(inotify_event) char buf[16 * 1024];
  bool pending = false;
  bool rewatch = false;
  for (;;) {
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    // Waiting for the burst to end: a quiet period without events fires the callback.
    int timeout = pending ? static_cast<int>(quiet_.count()) : -1;
    int n = ::poll(fds, 2, timeout);
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("config watcher: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (n == 0 && pending) {
      if (rewatch) AddWatches();
      rewatch = false;
      pending = false;
      on_change_();
      callbacks_.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu_);
      // Events that arrived during the callback keep the watcher busy until handled.
      if (!Readable(inotify_fd_)) {
        busy_ = false;
        idle_cv_.notify_all();
      }
      continue;
    }
    if (fds[0].revents & POLLIN) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        busy_ = true;
      }
      for (;;) {
        ssize_t len = ::read(inotify_fd_, buf, sizeof buf);
        if (len <= 0) break;
        for (char* p = buf; p < buf + len;) {
          auto* ev = reinterpret_cast<inotify_event*>(p);
          if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) rewatch = true;
          spdlog::trace("config watcher: event {:#x} {}", ev->mask, ev->len ? ev->name : "");
          p += sizeof(inotify_event) + ev->len;
        }
      }
      pending = true;
    }
  }
}

bool ConfigWatcher::WaitIdle(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // An event the kernel queued but the thread has not read yet counts as pending: a write that
    // returned before WaitIdle was called is never missed.
    if (!busy_ && !Readable(inotify_fd_)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    idle_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
}

}  // namespace kiln::server
