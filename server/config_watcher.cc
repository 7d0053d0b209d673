#include "server/config_watcher.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/thread_name.h"

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

ConfigWatcher::ConfigWatcher(std::vector<std::string> directories, Callback on_change,
                             std::chrono::milliseconds quiet, Relevant relevant)
    : directories_(std::move(directories)),
      on_change_(std::move(on_change)),
      quiet_(quiet),
      relevant_(std::move(relevant)) {}

ConfigWatcher::ConfigWatcher(std::vector<std::string> directories, std::function<void()> on_change,
                             std::chrono::milliseconds quiet, Relevant relevant)
    : ConfigWatcher(
          std::move(directories),
          Callback([f = std::move(on_change)](const Superseded&) { f(); }), quiet,
          std::move(relevant)) {}

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
  worker_ = std::thread([this] {
    NameThisThread("kiln-confload");
    Work();
  });
  thread_ = std::thread([this] {
    NameThisThread("kiln-confwatch");
    Loop();
  });
  return Status::Ok();
}

void ConfigWatcher::Stop() {
  if (!thread_.joinable() && !worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  idle_cv_.notify_all();
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
    // Waiting for the burst to end: a quiet period without relevant events fires the callback.
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
      // Hand the burst to the worker; a request it has not started yet absorbs this one.
      std::lock_guard<std::mutex> lock(mu_);
      events_pending_ = false;
      ++requested_;
      cv_.notify_all();
      continue;
    }
    if (fds[0].revents & POLLIN) {
      bool relevant = false;
      for (;;) {
        ssize_t len = ::read(inotify_fd_, buf, sizeof buf);
        if (len <= 0) break;
        for (char* p = buf; p < buf + len;) {
          auto* ev = reinterpret_cast<inotify_event*>(p);
          p += sizeof(inotify_event) + ev->len;
          bool self = (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) != 0;
          if (self) rewatch = true;
          std::string_view name = ev->len ? std::string_view(ev->name) : std::string_view();
          if (!self && !name.empty() && relevant_) {
            const std::string* dir = nullptr;
            for (size_t i = 0; i < watch_ids_.size(); ++i)
              if (watch_ids_[i] == ev->wd) dir = &directories_[i];
            if (dir != nullptr && !relevant_(*dir, name)) {
              // Not logged: a log file in this directory would log its own writes.
              ignored_.fetch_add(1);
              continue;
            }
          }
          relevant = true;
          spdlog::trace("config watcher: event {:#x} {}", ev->mask, name);
        }
      }
      if (relevant) {
        std::lock_guard<std::mutex> lock(mu_);
        events_pending_ = true;
        pending = true;
      }
    }
  }
}

void ConfigWatcher::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || requested_ > started_; });
    if (stopping_) return;
    started_ = requested_;
    uint64_t serving = started_;
    running_ = true;
    lock.unlock();
    on_change_([this, serving] {
      std::lock_guard<std::mutex> l(mu_);
      return stopping_ || requested_ > serving;
    });
    callbacks_.fetch_add(1);
    lock.lock();
    running_ = false;
    idle_cv_.notify_all();
  }
}

bool ConfigWatcher::WaitIdle(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // An event the kernel queued but the thread has not read yet counts as pending: a write that
    // returned before WaitIdle was called is never missed.
    bool busy = events_pending_ || running_ || requested_ > started_;
    if (!busy && !Readable(inotify_fd_)) return true;
    if (stopping_) return !busy;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    idle_cv_.wait_for(lock, std::chrono::milliseconds(10));
  }
}

std::string ParentDir(const std::string& file) {
  std::filesystem::path parent = std::filesystem::path(file).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace kiln::server
