#pragma once
// A reflector keeps one resource's objects flowing into a store, as client-go's does: a paged
// LIST, then a WATCH from the list's resourceVersion (with bookmarks). A stream that ends
// cleanly is re-watched from the last resourceVersion seen, without listing again; a 410 Gone
// (an in-band ERROR event or the HTTP status) means the history is compacted past that version
// and the reflector lists again. So does a resourceVersion the server has not reached (a
// "Too large resource version" answer, as client-go's reflector handles it) or a watch event
// older than one already seen: the API server's storage was restored from a backup, its
// versions went backwards, and a watch from the cached version would miss every object written
// since the restore up to that version. Any other failure waits (exponential backoff with jitter,
// capped) and retries. One thread per reflector; Stop() ends it promptly, mid-stream or
// mid-backoff.

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "kubernetes/client.h"

namespace kiln::kube {

// Where a reflector delivers what it sees. begin_list/list_item/end_list bracket one full LIST
// (the store replaces its contents at end_list; a LIST that fails midway never reaches end_list
// and the next one starts again with begin_list). event gets ADDED, MODIFIED and DELETED.
//
// Objects arrive as JSON text (padded as kubernetes/decode_fast.h asks) to list_item_text and
// event_text when those are set, for the fast decoders; otherwise the reflector parses each one
// for list_item and event. list_item_text's Error fails the LIST (an item that is not JSON fails
// it, as a page that did not parse did).
//
// end_events, when set, lets the store apply watch events in batches: it is called after each
// read from the stream (end_events(false): it may keep what it cannot apply now, returning true
// to be called again soon) and when a stream ends (end_events(true): everything delivered must
// be applied before it returns, as before a LIST).
struct ReflectorHandler {
  std::function<void()> begin_list;
  std::function<void(const nlohmann::json& object)> list_item;
  std::function<void()> end_list;
  std::function<void(std::string_view type, const nlohmann::json& object)> event;
  std::function<Status(std::string_view object)> list_item_text;
  std::function<void(std::string_view type, std::string_view object)> event_text;
  std::function<bool(bool force)> end_events;
};

struct ReflectorOptions {
  int page_size = 500;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{30000};
  // Server-side end of each watch (a random value in [min, 2×min) like client-go's, so many
  // reflectors do not reconnect at once).
  std::chrono::seconds watch_timeout{300};
  // A resource the cluster may not serve (a CRD that is not installed, such as Volcano's
  // HyperNode or Numatopology): a LIST answered 404 counts as an empty, synced list, and the
  // reflector lists again every `absent_relist` until the resource appears. Other resources
  // stay unsynced (and retry with backoff) on a 404 like on any other failure.
  bool optional = false;
  std::chrono::milliseconds absent_relist{30000};
};

class Reflector {
 public:
  // `resource` names it in logs and metrics ("pods"); `path` is the collection's URL path
  // ("/api/v1/pods", "/apis/scheduling.volcano.sh/v1beta1/podgroups").
  Reflector(std::shared_ptr<KubeClient> client, std::string resource, std::string path,
            ReflectorHandler handler, ReflectorOptions options = {});
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start();
  void Stop();

  const std::string& resource() const { return resource_; }
  // The first LIST has been delivered.
  bool HasSynced() const { return synced_.load(); }
  // LISTs after the first one (a 410 or a watch that could not resume).
  int64_t relists() const { return relists_.load(); }
  // Watches started (the first one and every re-watch).
  int64_t watches() const { return watches_.load(); }
  std::string last_resource_version() const;

 private:
  void Run();
  // Sleeps for the current backoff (interrupted by Stop) and doubles it.
  void Backoff();
  // Hands a watch event's object to the handler (as text, or parsed).
  void Deliver(std::string_view type, std::string_view object);

  std::shared_ptr<KubeClient> client_;
  std::string resource_;
  std::string path_;
  ReflectorHandler handler_;
  ReflectorOptions options_;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  std::atomic<int64_t> relists_{0};
  std::atomic<int64_t> watches_{0};
  WatchCanceller canceller_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string rv_;
  std::chrono::milliseconds backoff_{0};
  bool absent_ = false;  // the last LIST of an optional resource answered 404
};

}  // namespace kiln::kube
