#include "kubernetes/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <random>

namespace kiln::kube {

using json = nlohmann::json;

Reflector::Reflector(std::shared_ptr<KubeClient> client, std::string resource, std::string path,
                     ReflectorHandler handler, ReflectorOptions options)
    : client_(std::move(client)),
      resource_(std::move(resource)),
      path_(std::move(path)),
      handler_(std::move(handler)),
      options_(options),
      backoff_(options.initial_backoff) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void Reflector::Stop() {
  stop_ = true;
  canceller_.Cancel();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

void Reflector::Backoff() {
  std::chrono::milliseconds wait;
  {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    // Full jitter on top of half the step: between 0.5× and 1.5× the current backoff.
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    wait = std::chrono::milliseconds(static_cast<int64_t>(backoff_.count() * jitter(rng)));
    backoff_ = std::min(backoff_ * 2, options_.max_backoff);
  }
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, wait, [&] { return stop_.load(); });
}

void Reflector::Run() {
  bool need_list = true;
  bool listed_once = false;
  std::mt19937_64 rng{std::random_device{}()};
  while (!stop_) {
    if (need_list) {
      if (handler_.begin_list) handler_.begin_list();
      std::string rv;
      ApiStatus status;
      Status s = client_->List(
          path_, "", options_.page_size,
          [&](const json& item) {
            if (handler_.list_item) handler_.list_item(item);
          },
          &rv, &status);
      if (!s) {
        spdlog::warn("reflector {}: {}", resource_, s.error().message);
        Backoff();
        continue;
      }
      if (handler_.end_list) handler_.end_list();
      {
        std::lock_guard lock(mu_);
        rv_ = rv;
      }
      if (listed_once) ++relists_;
      listed_once = true;
      synced_ = true;
      need_list = false;
      spdlog::debug("reflector {}: listed at resourceVersion {}", resource_, rv);
    }
    int64_t min = options_.watch_timeout.count();
    int64_t timeout = std::uniform_int_distribution<int64_t>(min, 2 * min - 1)(rng);
    std::string query = fmt::format("allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}",
                                    timeout, QueryEscape(last_resource_version()));
    bool gone = false;
    bool saw_error = false;
    ++watches_;
    auto end = client_->Watch(
        path_, query,
        [&](std::string_view type, const json& object) {
          if (type == "ERROR") {
            ApiStatus st = DecodeStatus(500, object.dump());
            if (st.code == 410) {
              gone = true;
            } else {
              saw_error = true;
              spdlog::warn("reflector {}: watch error {}", resource_, Describe(st));
            }
            return false;
          }
          std::string rv;
          if (auto m = object.find("metadata"); m != object.end() && m->is_object())
            rv = m->value("resourceVersion", "");
          if (type != "BOOKMARK" && handler_.event) handler_.event(type, object);
          if (!rv.empty()) {
            std::lock_guard lock(mu_);
            rv_ = rv;
          }
          // A stream that delivers events is healthy: the next failure starts backing off anew.
          backoff_ = options_.initial_backoff;
          return !stop_.load();
        },
        &canceller_);
    if (stop_) break;
    canceller_.Reset();
    if (!end) {
      spdlog::warn("reflector {}: {}", resource_, end.error().message);
      Backoff();
      continue;
    }
    if (end->http_status == 410) gone = true;
    if (gone) {
      spdlog::info("reflector {}: resourceVersion {} is too old (410), listing again", resource_,
                   last_resource_version());
      need_list = true;
      continue;
    }
    if (end->http_status != 200) {
      ApiStatus st = DecodeStatus(end->http_status, end->body);
      spdlog::warn("reflector {}: watch answered {}", resource_, Describe(st));
      Backoff();
      continue;
    }
    if (saw_error) {
      Backoff();
      continue;
    }
    // A clean end of stream (timeoutSeconds, or the server closed it): watch again from the
    // last resourceVersion seen.
    spdlog::debug("reflector {}: watch ended, resuming at {}", resource_, last_resource_version());
  }
}

}  // namespace kiln::kube
