#include "kubernetes/reflector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "kubernetes/decode_fast.h"
#include "runtime/thread_name.h"

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
  thread_ = std::thread([this] {
    NameThisThread("watch-" + resource_);
    Run();
  });
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

void Reflector::Deliver(std::string_view type, std::string_view object) {
  if (handler_.event_text) {
    handler_.event_text(type, object);
    return;
  }
  if (!handler_.event) return;
  json parsed = json::parse(object, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    spdlog::warn("reflector {}: skipping a {} event whose object is not JSON", resource_, type);
    return;
  }
  handler_.event(type, parsed);
}

namespace {
// resourceVersions are opaque to clients, but every API server backed by etcd writes its
// revision, a decimal number. nullopt for anything else (then no order is assumed).
std::optional<uint64_t> Revision(std::string_view rv) {
  if (rv.empty() || rv.size() > 19 || rv.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  uint64_t v = 0;
  std::from_chars(rv.data(), rv.data() + rv.size(), v);
  return v;
}
}  // namespace

void Reflector::Run() {
  bool need_list = true;
  bool listed_once = false;
  std::mt19937_64 rng{std::random_device{}()};
  std::function<bool()> batch_end = [this] { return handler_.end_events(false); };
  while (!stop_) {
    if (need_list) {
      if (handler_.begin_list) handler_.begin_list();
      std::string rv;
      ApiStatus status;
      auto parsed = [&](const json& item) {
        if (handler_.list_item) handler_.list_item(item);
      };
      Status s = handler_.list_item_text
                     ? client_->ListRaw(path_, "", options_.page_size, handler_.list_item_text, &rv, &status)
                     : client_->List(path_, "", options_.page_size, parsed, &rv, &status);
      if (!s && options_.optional && status.code == 404) {
        // Not served here (its CRD is not installed): nothing of it exists. Empty the store
        // once, count as synced, and look again later without watching.
        if (!absent_) {
          spdlog::info("reflector {}: the API server does not serve {} (404); treated as empty "
                       "and listed again every {} s",
                       resource_, path_, options_.absent_relist.count() / 1000.0);
          if (handler_.begin_list) handler_.begin_list();
          if (handler_.end_list) handler_.end_list();
          absent_ = true;
        }
        synced_ = true;
        listed_once = true;
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, options_.absent_relist, [&] { return stop_.load(); });
        continue;
      }
      if (!s) {
        spdlog::warn("reflector {}: {}", resource_, s.error().message);
        Backoff();
        continue;
      }
      if (absent_) {
        spdlog::info("reflector {}: {} is served now", resource_, path_);
        absent_ = false;
      }
      if (handler_.end_list) handler_.end_list();
      {
        std::lock_guard lock(mu_);
        auto before = Revision(rv_), now = Revision(rv);
        if (before && now && *now < *before)
          spdlog::warn("reflector {}: the API server's resourceVersion went back from {} to {} "
                       "(its storage was restored from a backup?); the list replaces every object",
                       resource_, rv_, rv);
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
    bool too_large = false;   // the server is behind the version asked for
    bool went_back = false;   // an event older than one already seen
    bool saw_error = false;
    // The newest revision seen, kept here (rv_ is shared with other threads) for the order check.
    std::optional<uint64_t> seen = Revision(last_resource_version());
    ++watches_;
    auto end = client_->Watch(
        path_, query,
        [&](std::string_view type, std::string_view object) {
          if (type == "ERROR") {
            ApiStatus st = DecodeStatus(500, object);
            if (st.code == 410) {
              gone = true;
            } else if (st.resource_version_too_large) {
              too_large = true;
            } else {
              saw_error = true;
              spdlog::warn("reflector {}: watch error {}", resource_, Describe(st));
            }
            return false;
          }
          std::string rv = DecodeMetaJson(object).resource_version;
          // A watch delivers versions in increasing order; one below a version already seen
          // means the server's history is not the one this cache was built from.
          std::optional<uint64_t> got = Revision(rv);
          if (seen && got && *got < *seen) {
            went_back = true;
            spdlog::warn("reflector {}: watch event at resourceVersion {} is older than {}",
                         resource_, rv, *seen);
            return false;
          }
          if (type != "BOOKMARK") Deliver(type, object);
          if (!rv.empty()) {
            seen = got;
            std::lock_guard lock(mu_);
            rv_ = std::move(rv);
          }
          // A stream that delivers events is healthy: the next failure starts backing off anew.
          backoff_ = options_.initial_backoff;
          return !stop_.load();
        },
        &canceller_, handler_.end_events ? batch_end : std::function<bool()>());
    if (handler_.end_events) handler_.end_events(true);
    if (stop_) break;
    canceller_.Reset();
    if (!end) {
      spdlog::warn("reflector {}: {}", resource_, end.error().message);
      Backoff();
      continue;
    }
    if (end->http_status == 410) gone = true;
    if (end->http_status != 200 && DecodeStatus(end->http_status, end->body).resource_version_too_large)
      too_large = true;
    if (gone) {
      spdlog::info("reflector {}: resourceVersion {} is too old (410), listing again", resource_,
                   last_resource_version());
      need_list = true;
      continue;
    }
    if (too_large || went_back) {
      // As client-go's reflector does on "Too large resource version": the version this cache
      // holds is ahead of the server (etcd restored from a backup), so watching from it would
      // miss everything written up to it. List again from the server's current state.
      spdlog::warn("reflector {}: resourceVersion {} is {} the API server's history, listing "
                   "again",
                   resource_, last_resource_version(), too_large ? "ahead of" : "not in");
      need_list = true;
      continue;
    }
    if (end->http_status == 404 && options_.optional) {
      need_list = true;  // the CRD went away: the next LIST finds out and empties the store
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
