// kiln_bind_sink: a fast, in-memory stand-in for the Kubernetes API server, made to measure
// `kiln serve` at scale (issue 33) where the Python emulator (tools/kube-emulator) is the
// bottleneck. It serves what `kiln serve` reads and writes (see README.md next to this file):
// paged LISTs, WATCH streams with bookmarks, pods/binding, pod and PodGroup/Queue status writes,
// Events, deletes and evictions, and plain create/get/update (a Lease), and counts what it saw
// at GET /sink/stats. It is not the protocol reference: the emulator is.
//
//   kiln_bind_sink serve --manifests cluster.json [--port 0] [--url-file F] [--write-kubeconfig F]
//   kiln_bind_sink load URL [--threads 8] [--seconds 5]     # a binding-POST load test
//
// Every object is kept as its JSON text with its resourceVersion (one counter for the whole
// store, as etcd's revision); a write parses the one object it changes, stores the new text and
// appends a watch event to the resource's history, from which every watch of that resource is fed.
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Not the bare "application/json" that cpp-httplib gzips for every client that accepts it: a
// compressed watch holds its events in the compressor until a block fills (the watcher sees
// nothing), and compressing each small answer would cost the sink more than serving it.
constexpr const char* kJson = "application/json; charset=utf-8";

// ---- The store ----

struct Object {
  std::string text;  // the object's JSON, metadata.resourceVersion included
  uint64_t rv = 0;
};

struct WatchEvent {
  uint64_t rv;
  std::string line;  // {"type":...,"object":...}\n
};

// One resource (pods, nodes, ...): its objects by "namespace/name" (or name) and its recent
// watch events.
struct Resource {
  std::string name;        // plural, as in the URL
  std::string kind;        // Pod
  std::string api_version; // v1, scheduling.volcano.sh/v1beta1
  bool namespaced = true;
  std::map<std::string, Object> objects;
  std::deque<WatchEvent> history;
  uint64_t trimmed_rv = 0;  // events at or below this version are no longer in `history`
  std::condition_variable changed;  // an event was appended to `history`
};

// The resources kiln serve lists and watches (kubernetes/kubernetes_cluster.cc) and writes, by
// API group: "plural=Kind", with a trailing '!' for a cluster-scoped one.
struct ApiGroupRow {
  const char* prefix;  // "/api/v1" or "/apis/GROUP/VERSION"
  const char* resources;
};
constexpr ApiGroupRow kApiGroups[] = {
    {"/api/v1", "pods=Pod nodes=Node! namespaces=Namespace! resourcequotas=ResourceQuota events=Event"},
    {"/apis/scheduling.volcano.sh/v1beta1", "podgroups=PodGroup queues=Queue!"},
    {"/apis/scheduling.k8s.io/v1", "priorityclasses=PriorityClass!"},
    {"/apis/policy/v1", "poddisruptionbudgets=PodDisruptionBudget"},
    {"/apis/topology.volcano.sh/v1alpha1", "hypernodes=HyperNode!"},
    {"/apis/nodeinfo.volcano.sh/v1alpha1", "numatopologies=Numatopology!"},
    {"/apis/coordination.k8s.io/v1", "leases=Lease"},
};

struct Stats {
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> binds{0};
  std::atomic<int64_t> bind_conflicts{0};  // a binding for a pod already bound (409)
  std::atomic<int64_t> events{0};
  std::atomic<int64_t> status_writes{0};
  std::atomic<int64_t> watch_events{0};  // events written to watch streams (bookmarks left out)
  std::atomic<int64_t> first_bind_ns{0}, last_bind_ns{0};
  // The last POST /sink/touch: when it queued its events and when a watch wrote the last one.
  std::atomic<uint64_t> touch_last_rv{0};
  std::atomic<int64_t> touch_started_ns{0}, touch_delivered_ns{0}, touch_events{0};
};

class Store {
 public:
  Store() {
    for (const ApiGroupRow& g : kApiGroups) {
      std::string_view prefix = g.prefix;
      std::istringstream words(g.resources);
      for (std::string word; words >> word;) {
        auto res = std::make_unique<Resource>();
        size_t eq = word.find('=');
        res->name = word.substr(0, eq);
        res->kind = word.substr(eq + 1);
        res->namespaced = res->kind.back() != '!';
        if (!res->namespaced) res->kind.pop_back();
        res->api_version = prefix == "/api/v1" ? "v1" : std::string(prefix.substr(6));
        by_path_[std::string(prefix) + "/" + res->name] = res.get();
        resources_.push_back(std::move(res));
      }
    }
  }

  Resource* Find(const std::string& prefix, const std::string& name) {
    auto it = by_path_.find(prefix + "/" + name);
    return it == by_path_.end() ? nullptr : it->second;
  }
  Resource* ByKind(const std::string& kind) {
    for (auto& r : resources_)
      if (r->kind == kind) return r.get();
    return nullptr;
  }

  std::mutex mu;  // guards every resource
  uint64_t rv = 1;
  Stats stats;
  size_t history_cap = 400000;
  Clock::time_point started = Clock::now();

  int64_t SinceStartNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count();
  }

  // Stores `obj` (under mu) with the next resourceVersion and records the watch event.
  void Put(Resource& r, const std::string& key, json& obj, const char* type) {
    uint64_t v = ++rv;
    obj["metadata"]["resourceVersion"] = std::to_string(v);
    Object& o = r.objects[key];
    o.text = obj.dump();
    o.rv = v;
    Record(r, type, o.text, v);
  }
  void Erase(Resource& r, const std::string& key) {
    auto it = r.objects.find(key);
    if (it == r.objects.end()) return;
    json obj = json::parse(it->second.text);
    uint64_t v = ++rv;
    obj["metadata"]["resourceVersion"] = std::to_string(v);
    r.objects.erase(it);
    Record(r, "DELETED", obj.dump(), v);
  }

 private:
  void Record(Resource& r, const char* type, const std::string& text, uint64_t v) {
    r.history.push_back({v, fmt::format("{{\"type\":\"{}\",\"object\":{}}}\n", type, text)});
    while (r.history.size() > history_cap) {
      r.trimmed_rv = r.history.front().rv;
      r.history.pop_front();
    }
    r.changed.notify_all();
  }

  std::vector<std::unique_ptr<Resource>> resources_;
  std::map<std::string, Resource*> by_path_;
};

std::string Key(const std::string& ns, const std::string& name) {
  return ns.empty() ? name : ns + "/" + name;
}

// A Kubernetes Status answer.
void Fail(httplib::Response& res, int code, const std::string& reason, const std::string& message) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
            {"message", message}, {"reason", reason}, {"code", code}};
  res.status = code;
  res.set_content(s.dump(), kJson);
}

// Merges a strategic-merge-style patch of status: conditions merge by type, the rest as a JSON
// merge patch (RFC 7386). What kiln writes needs no more of strategic merge than that.
void MergeStatusPatch(json& obj, json patch) {
  if (patch.contains("status") && patch["status"].is_object() &&
      patch["status"].contains("conditions") && patch["status"]["conditions"].is_array()) {
    json& conds = obj["status"]["conditions"];
    if (!conds.is_array()) conds = json::array();
    for (const json& c : patch["status"]["conditions"]) {
      bool merged = false;
      for (json& have : conds)
        if (have.value("type", "") == c.value("type", "")) {
          have.merge_patch(c);
          merged = true;
        }
      if (!merged) conds.push_back(c);
    }
    patch["status"].erase("conditions");
  }
  obj.merge_patch(patch);
}

// ---- Loading ----

std::string NewUid(uint64_t n) { return fmt::format("00000000-0000-4000-8000-{:012x}", n); }

bool LoadManifests(Store& store, const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("{}: cannot read", path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json doc = json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) {
    *error = fmt::format("{}: not JSON (write it with `kiln export-manifests --format json`)", path);
    return false;
  }
  std::vector<json> items;
  if (doc.is_array()) {
    items = doc.get<std::vector<json>>();
  } else if (doc.is_object() && doc.contains("items") && doc["items"].is_array()) {
    items = doc["items"].get<std::vector<json>>();
  } else {
    items.push_back(doc);
  }
  std::lock_guard lock(store.mu);
  uint64_t n = 0;
  for (json& obj : items) {
    ++n;
    std::string kind = obj.is_object() ? obj.value("kind", "") : "";
    Resource* r = store.ByKind(kind);
    if (!r) {
      *error = fmt::format("{}: item {}: kind `{}` is not served by the sink", path, n, kind);
      return false;
    }
    json& meta = obj["metadata"];
    if (!meta.is_object() || !meta.contains("name") || !meta["name"].is_string()) {
      *error = fmt::format("{}: item {} ({}): no metadata.name", path, n, kind);
      return false;
    }
    std::string ns = r->namespaced ? meta.value("namespace", "default") : "";
    if (r->namespaced) meta["namespace"] = ns;
    if (!meta.contains("uid")) meta["uid"] = NewUid(n);
    if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = "2026-01-01T00:00:00Z";
    uint64_t v = ++store.rv;
    meta["resourceVersion"] = std::to_string(v);
    r->objects[Key(ns, meta["name"].get<std::string>())] = Object{obj.dump(), v};
  }
  return true;
}

// ---- Serving ----

// A parsed API path: /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]].
struct ApiPath {
  Resource* resource = nullptr;
  std::string ns, name, sub;
};

std::optional<ApiPath> ParsePath(Store& store, const std::string& path) {
  std::string prefix;
  size_t pos;
  if (path.rfind("/api/v1/", 0) == 0) {
    prefix = "/api/v1";
    pos = 8;
  } else if (path.rfind("/apis/", 0) == 0) {
    size_t g = path.find('/', 6);
    if (g == std::string::npos) return std::nullopt;
    size_t v = path.find('/', g + 1);
    if (v == std::string::npos) return std::nullopt;
    prefix = path.substr(0, v);
    pos = v + 1;
  } else {
    return std::nullopt;
  }
  std::vector<std::string> segs;
  for (size_t i = pos; i <= path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    segs.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  ApiPath p;
  size_t at = 0;
  if (segs.size() >= 3 && segs[0] == "namespaces") {
    p.ns = segs[1];
    at = 2;
  }
  if (segs.size() <= at || segs.size() > at + 3) return std::nullopt;
  p.resource = store.Find(prefix, segs[at]);
  if (!p.resource) return std::nullopt;
  if (segs.size() > at + 1) p.name = segs[at + 1];
  if (segs.size() > at + 2) p.sub = segs[at + 2];
  return p;
}

class Sink {
 public:
  Sink(Store& store, double bookmark_seconds) : store_(store), bookmark_(bookmark_seconds) {}

  void Install(httplib::Server& svr) {
    svr.Get("/sink/stats", [this](const httplib::Request&, httplib::Response& res) { StatsPage(res); });
    svr.Post("/sink/touch", [this](const httplib::Request& req, httplib::Response& res) {
      Touch(req, res);
    });
    svr.Get(".*", [this](const httplib::Request& req, httplib::Response& res) { Get(req, res); });
    svr.Post(".*", [this](const httplib::Request& req, httplib::Response& res) { Post(req, res); });
    svr.Put(".*", [this](const httplib::Request& req, httplib::Response& res) { Put(req, res); });
    svr.Patch(".*", [this](const httplib::Request& req, httplib::Response& res) { Patch(req, res); });
    svr.Delete(".*", [this](const httplib::Request& req, httplib::Response& res) { Delete(req, res); });
  }

 private:
  void StatsPage(httplib::Response& res) {
    Stats& s = store_.stats;
    int64_t now = store_.SinceStartNs();
    int64_t reqs = s.requests.load();
    double rate;
    {
      std::lock_guard lock(rate_mu_);
      double dt = (now - rate_at_) / 1e9;
      rate = dt > 0 ? (reqs - rate_reqs_) / dt : 0;
      rate_at_ = now;
      rate_reqs_ = reqs;
    }
    int64_t bound = 0, pods = 0;
    {
      std::lock_guard lock(store_.mu);
      Resource* p = store_.ByKind("Pod");
      pods = static_cast<int64_t>(p->objects.size());
      bound = bound_;
    }
    json j = {{"requests", reqs},
              {"requestsPerSecond", rate},  // since the previous GET /sink/stats
              {"binds", s.binds.load()},
              {"bindConflicts", s.bind_conflicts.load()},
              {"events", s.events.load()},
              {"statusWrites", s.status_writes.load()},
              {"watchEvents", s.watch_events.load()},
              {"pods", pods},
              {"podsBound", bound},
              {"firstBindSeconds", s.first_bind_ns.load() / 1e9},
              {"lastBindSeconds", s.last_bind_ns.load() / 1e9},
              {"touch", {{"events", s.touch_events.load()},
                         {"startedSeconds", s.touch_started_ns.load() / 1e9},
                         {"deliveredSeconds", s.touch_delivered_ns.load() / 1e9}}},
              {"uptimeSeconds", now / 1e9}};
    res.set_content(j.dump(), kJson);
  }

  // POST /sink/touch?n=N: N pods get a new annotation each, N MODIFIED events in one go, to
  // measure how fast a watcher takes events (stats.touch: when the last one was written).
  void Touch(const httplib::Request& req, httplib::Response& res) {
    int64_t n = req.has_param("n") ? std::stoll(req.get_param_value("n")) : 1000;
    std::lock_guard lock(store_.mu);
    Resource& pods = *store_.ByKind("Pod");
    store_.stats.touch_delivered_ns = 0;
    store_.stats.touch_last_rv = 0;
    int64_t done = 0;
    for (auto it = pods.objects.begin(); it != pods.objects.end() && done < n; ++it, ++done) {
      json obj = json::parse(it->second.text);
      obj["metadata"]["annotations"]["kiln.io/sink-touch"] = std::to_string(store_.rv);
      store_.Put(pods, it->first, obj, "MODIFIED");
    }
    // The clock starts when the events are there to be read (making them is not the watch's time).
    store_.stats.touch_events = done;
    store_.stats.touch_started_ns = store_.SinceStartNs();
    store_.stats.touch_last_rv = store_.rv;
    res.set_content(fmt::format("{{\"touched\":{}}}", done), kJson);
  }

  void Get(const httplib::Request& req, httplib::Response& res) {
    ++store_.stats.requests;
    auto p = ParsePath(store_, req.path);
    if (!p) return Fail(res, 404, "NotFound", "the sink does not serve " + req.path);
    if (p->name.empty()) {
      if (req.has_param("watch") && req.get_param_value("watch") != "0" &&
          req.get_param_value("watch") != "false")
        return Watch(*p->resource, req, res);
      return List(*p->resource, p->ns, req, res);
    }
    std::lock_guard lock(store_.mu);
    auto it = p->resource->objects.find(Key(p->ns, p->name));
    if (it == p->resource->objects.end()) return NotFound(res, *p);
    res.set_content(it->second.text, kJson);
  }

  void NotFound(httplib::Response& res, const ApiPath& p) {
    Fail(res, 404, "NotFound", fmt::format("{} \"{}\" not found", p.resource->name, p.name));
  }

  // The object at `p`, parsed, and its resourceVersion in *rv (the caller holds store_.mu);
  // nullopt once 404 is answered, or 409 when `uid` (a precondition, if not empty) is not its uid.
  std::optional<json> Current(const ApiPath& p, httplib::Response& res, uint64_t* rv = nullptr,
                              const std::string& uid = "") {
    auto it = p.resource->objects.find(Key(p.ns, p.name));
    if (it == p.resource->objects.end()) {
      NotFound(res, p);
      return std::nullopt;
    }
    if (rv) *rv = it->second.rv;
    json obj = json::parse(it->second.text);
    if (!uid.empty() && uid != obj["metadata"].value("uid", "")) {
      Fail(res, 409, "Conflict", fmt::format("{} {}: the precondition uid {} is not the object's", p.resource->name,
                                             it->first, uid));
      return std::nullopt;
    }
    return obj;
  }

  void List(Resource& r, const std::string& ns, const httplib::Request& req, httplib::Response& res) {
    size_t limit = req.has_param("limit") ? std::stoul(req.get_param_value("limit")) : 0;
    std::string cont = req.has_param("continue") ? req.get_param_value("continue") : "";
    std::string out;
    std::lock_guard lock(store_.mu);
    // continue = "<list resourceVersion>|<last key sent>": the pages after the first are read
    // from the current store, which kiln's initial LIST does not mind (nothing writes then; a
    // change in between arrives again on the watch from the first page's version).
    std::string list_rv = std::to_string(store_.rv);
    auto it = r.objects.begin();
    if (!cont.empty()) {
      size_t bar = cont.find('|');
      if (bar == std::string::npos) return Fail(res, 400, "BadRequest", "bad continue token");
      list_rv = cont.substr(0, bar);
      it = r.objects.upper_bound(cont.substr(bar + 1));
    }
    out.reserve(4096);
    out += fmt::format("{{\"kind\":\"{}List\",\"apiVersion\":\"{}\",\"items\":[", r.kind, r.api_version);
    size_t n = 0;
    std::string last;
    bool first = true;
    for (; it != r.objects.end(); ++it) {
      if (!ns.empty() && it->first.compare(0, ns.size() + 1, ns + "/") != 0) continue;
      if (limit && n == limit) break;
      if (!first) out += ',';
      first = false;
      out += it->second.text;
      last = it->first;
      ++n;
    }
    std::string next = it != r.objects.end() && limit ? list_rv + "|" + last : "";
    out += fmt::format("],\"metadata\":{{\"resourceVersion\":\"{}\"", list_rv);
    if (!next.empty()) out += fmt::format(",\"continue\":{}", json(next).dump());
    out += "}}";
    res.set_content(out, kJson);
  }

  void Watch(Resource& r, const httplib::Request& req, httplib::Response& res) {
    std::string from = req.has_param("resourceVersion") ? req.get_param_value("resourceVersion") : "";
    int64_t timeout = req.has_param("timeoutSeconds") ? std::stoll(req.get_param_value("timeoutSeconds")) : 1800;
    auto cursor = std::make_shared<uint64_t>(0);
    auto initial = std::make_shared<std::string>();
    {
      std::lock_guard lock(store_.mu);
      if (from.empty() || from == "0") {
        // No version: every current object as ADDED first, as the API server does.
        for (const auto& [k, o] : r.objects)
          *initial += fmt::format("{{\"type\":\"ADDED\",\"object\":{}}}\n", o.text);
        *cursor = store_.rv;
      } else {
        *cursor = std::stoull(from);
        if (*cursor < r.trimmed_rv) {
          json st = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"code", 410},
                     {"reason", "Expired"}, {"message", fmt::format("too old resource version: {}", from)}};
          *initial = fmt::format("{{\"type\":\"ERROR\",\"object\":{}}}\n", st.dump());
          *cursor = UINT64_MAX;  // ends after the ERROR
        }
      }
    }
    auto deadline = Clock::now() + std::chrono::seconds(timeout);
    res.set_chunked_content_provider(
        kJson, [this, &r, cursor, initial, deadline](size_t, httplib::DataSink& sink) {
          if (!initial->empty()) {
            std::string first = std::move(*initial);
            initial->clear();
            if (!sink.write(first.data(), first.size())) return false;
          }
          if (*cursor == UINT64_MAX || Clock::now() >= deadline) {
            sink.done();
            return true;
          }
          std::string batch;
          int64_t events = 0;
          uint64_t touch_rv = store_.stats.touch_last_rv.load();
          {
            std::unique_lock lock(store_.mu);
            auto have_news = [&] { return !r.history.empty() && r.history.back().rv > *cursor; };
            if (!have_news())
              r.changed.wait_for(lock, std::chrono::duration<double>(bookmark_), have_news);
            if (have_news()) {
              auto it = std::upper_bound(r.history.begin(), r.history.end(), *cursor,
                                         [](uint64_t v, const WatchEvent& e) { return v < e.rv; });
              for (; it != r.history.end() && batch.size() < (1 << 20); ++it, ++events) {
                batch += it->line;
                *cursor = it->rv;
              }
            } else {
              // A bookmark: the stream is alive and the client's version can move on.
              *cursor = std::max<uint64_t>(*cursor, store_.rv);
              batch = fmt::format(
                  "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{}\",\"apiVersion\":\"{}\","
                  "\"metadata\":{{\"resourceVersion\":\"{}\"}}}}}}\n",
                  r.kind, r.api_version, *cursor);
            }
          }
          if (!sink.write(batch.data(), batch.size())) return false;
          store_.stats.watch_events += events;
          if (touch_rv && *cursor >= touch_rv && store_.stats.touch_delivered_ns.load() == 0 && &r == store_.ByKind("Pod"))
            store_.stats.touch_delivered_ns = store_.SinceStartNs();
          return true;
        });
  }

  void Post(const httplib::Request& req, httplib::Response& res) {
    ++store_.stats.requests;
    auto p = ParsePath(store_, req.path);
    if (!p) return Fail(res, 404, "NotFound", "the sink does not serve " + req.path);
    Resource& r = *p->resource;
    if (r.kind == "Event" && p->name.empty()) {
      // Counted, not kept nor read: kiln writes one per bind.
      ++store_.stats.events;
      res.status = 201;
      res.set_content(req.body, kJson);
      return;
    }
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return Fail(res, 400, "BadRequest", "the body is not a JSON object");
    if (r.kind == "Pod" && p->sub == "binding") return Bind(*p, body, res);
    if (r.kind == "Pod" && p->sub == "eviction") return Remove(*p, "", res);
    if (!p->name.empty()) return Fail(res, 405, "MethodNotAllowed", "POST " + req.path);
    if (!body["metadata"].is_object()) body["metadata"] = json::object();
    std::string name = body["metadata"].value("name", "");
    if (name.empty()) return Fail(res, 422, "Invalid", "metadata.name is required");
    std::lock_guard lock(store_.mu);
    std::string key = Key(p->ns, name);
    if (r.objects.count(key))
      return Fail(res, 409, "AlreadyExists", fmt::format("{} \"{}\" already exists", r.name, name));
    if (r.namespaced) body["metadata"]["namespace"] = p->ns;
    body["metadata"]["uid"] = NewUid(store_.rv + 1'000'000'000);
    store_.Put(r, key, body, "ADDED");
    res.status = 201;
    res.set_content(r.objects[key].text, kJson);
  }

  // POST pods/NAME/binding: spec.nodeName and the binding's annotations onto the pod; 409 when
  // the pod is bound already or its uid is not the binding's.
  void Bind(const ApiPath& p, const json& binding, httplib::Response& res) {
    std::string node;
    if (auto t = binding.find("target"); t != binding.end() && t->is_object()) node = t->value("name", "");
    if (node.empty()) return Fail(res, 422, "Invalid", "binding.target.name is required");
    const json& bm = binding.contains("metadata") ? binding["metadata"] : json::object();
    std::string uid = bm.is_object() ? bm.value("uid", "") : "";
    std::lock_guard lock(store_.mu);
    std::optional<json> current = Current(p, res, nullptr, uid);
    if (!current) return;
    json& pod = *current;
    std::string have = pod["spec"].is_object() ? pod["spec"].value("nodeName", "") : "";
    if (!have.empty()) {
      ++store_.stats.bind_conflicts;
      return Fail(res, 409, "Conflict",
                  fmt::format("Operation cannot be fulfilled on pods/binding \"{}\": pod {} is already "
                              "assigned to node \"{}\"",
                              p.name, p.name, have));
    }
    pod["spec"]["nodeName"] = node;
    if (bm.is_object() && bm.contains("annotations") && bm["annotations"].is_object())
      for (const auto& [k, v] : bm["annotations"].items()) pod["metadata"]["annotations"][k] = v;
    store_.Put(*p.resource, Key(p.ns, p.name), pod, "MODIFIED");
    ++bound_;
    int64_t now = store_.SinceStartNs();
    if (++store_.stats.binds == 1) store_.stats.first_bind_ns = now;
    store_.stats.last_bind_ns = now;
    res.status = 201;
    res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success","code":201})", kJson);
  }

  void Put(const httplib::Request& req, httplib::Response& res) {
    ++store_.stats.requests;
    auto p = ParsePath(store_, req.path);
    if (!p || p->name.empty()) return Fail(res, 404, "NotFound", "the sink does not serve PUT " + req.path);
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return Fail(res, 400, "BadRequest", "the body is not a JSON object");
    std::lock_guard lock(store_.mu);
    uint64_t stored_rv = 0;
    std::optional<json> current = Current(*p, res, &stored_rv);
    if (!current) return;
    json& cur = *current;
    Resource& r = *p->resource;
    std::string key = Key(p->ns, p->name);
    // Optimistic concurrency: the version the writer read must still be the current one.
    if (!body["metadata"].is_object()) body["metadata"] = json::object();
    std::string rv = body["metadata"].value("resourceVersion", "");
    if (!rv.empty() && rv != std::to_string(stored_rv))
      return Fail(res, 409, "Conflict",
                  fmt::format("Operation cannot be fulfilled on {} \"{}\": the object has been modified",
                              r.name, p->name));
    if (p->sub == "status") {
      cur["status"] = body.value("status", json::object());
    } else {
      body["metadata"]["uid"] = cur["metadata"]["uid"];
      if (r.namespaced) body["metadata"]["namespace"] = p->ns;
      cur = std::move(body);
    }
    if (r.kind == "PodGroup" || r.kind == "Queue" || p->sub == "status") ++store_.stats.status_writes;
    store_.Put(r, key, cur, "MODIFIED");
    res.set_content(r.objects[key].text, kJson);
  }

  void Patch(const httplib::Request& req, httplib::Response& res) {
    ++store_.stats.requests;
    auto p = ParsePath(store_, req.path);
    if (!p || p->name.empty()) return Fail(res, 404, "NotFound", "the sink does not serve PATCH " + req.path);
    json patch = json::parse(req.body, nullptr, false);
    if (patch.is_discarded() || !patch.is_object())
      return Fail(res, 400, "BadRequest", "the patch is not a JSON object (JSON patches are not served)");
    std::lock_guard lock(store_.mu);
    std::optional<json> current = Current(*p, res);
    if (!current) return;
    json& cur = *current;
    Resource& r = *p->resource;
    std::string key = Key(p->ns, p->name);
    if (p->sub == "status") {
      json only = json::object();
      if (patch.contains("status")) only["status"] = patch["status"];
      MergeStatusPatch(cur, std::move(only));
      ++store_.stats.status_writes;
    } else {
      patch.erase("metadata");
      MergeStatusPatch(cur, std::move(patch));
    }
    store_.Put(r, key, cur, "MODIFIED");
    res.set_content(r.objects[key].text, kJson);
  }

  void Delete(const httplib::Request& req, httplib::Response& res) {
    ++store_.stats.requests;
    auto p = ParsePath(store_, req.path);
    if (!p || p->name.empty() || !p->sub.empty())
      return Fail(res, 404, "NotFound", "the sink does not serve DELETE " + req.path);
    std::string uid;
    json body = json::parse(req.body, nullptr, false);
    if (body.is_object() && body.contains("preconditions") && body["preconditions"].is_object())
      uid = body["preconditions"].value("uid", "");
    Remove(*p, uid, res);
  }

  void Remove(const ApiPath& p, const std::string& uid, httplib::Response& res) {
    std::lock_guard lock(store_.mu);
    std::optional<json> current = Current(p, res, nullptr, uid);
    if (!current) return;
    json& cur = *current;
    Resource& r = *p.resource;
    std::string key = Key(p.ns, p.name);
    if (r.kind == "Pod" && cur["spec"].is_object() && !cur["spec"].value("nodeName", "").empty()) --bound_;
    store_.Erase(r, key);
    res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Success"})", kJson);
  }

  Store& store_;
  double bookmark_;
  int64_t bound_ = 0;  // pods bound by a binding, under store_.mu
  std::mutex rate_mu_;
  int64_t rate_at_ = 0, rate_reqs_ = 0;
};

void WriteFileWhole(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  std::rename(tmp.c_str(), path.c_str());
}

int Serve(int argc, char** argv) {
  std::string manifests, url_file, kubeconfig;
  int port = 0, threads = 128;
  double bookmark = 1.0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "kiln_bind_sink: {} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--manifests") manifests = value();
    else if (a == "--port") port = std::stoi(value());
    else if (a == "--url-file") url_file = value();
    else if (a == "--write-kubeconfig") kubeconfig = value();
    else if (a == "--threads") threads = std::stoi(value());
    else if (a == "--bookmark-interval") bookmark = std::stod(value());
    else {
      fmt::print(stderr, "kiln_bind_sink serve: unknown argument `{}`\n", a);
      return 2;
    }
  }
  Store store;
  if (!manifests.empty()) {
    std::string error;
    auto t0 = Clock::now();
    if (!LoadManifests(store, manifests, &error)) {
      fmt::print(stderr, "kiln_bind_sink: {}\n", error);
      return 2;
    }
    fmt::print(stderr, "kiln_bind_sink: loaded {} objects in {:.2f} s\n", store.rv - 1,
               std::chrono::duration<double>(Clock::now() - t0).count());
  }
  httplib::Server svr;
  // Each connection holds a pool thread while it is open (a watch for as long as it streams, an
  // idle keep-alive connection until its timeout): kiln serve keeps a dozen watches and a
  // connection per writer thread open, so the pool is large.
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_keep_alive_max_count(1'000'000'000);
  svr.set_keep_alive_timeout(60);
  svr.set_tcp_nodelay(true);
  svr.set_write_timeout(300, 0);
  Sink sink(store, bookmark);
  sink.Install(svr);
  int bound = port == 0 ? svr.bind_to_any_port("127.0.0.1") : (svr.bind_to_port("127.0.0.1", port) ? port : -1);
  if (bound <= 0) {
    fmt::print(stderr, "kiln_bind_sink: cannot listen on 127.0.0.1:{}\n", port);
    return 1;
  }
  std::string url = fmt::format("http://127.0.0.1:{}", bound);
  if (!kubeconfig.empty())
    WriteFileWhole(kubeconfig, fmt::format("apiVersion: v1\nkind: Config\nclusters:\n- name: sink\n  cluster:\n"
                                           "    server: {}\ncontexts:\n- name: sink\n  context:\n    cluster: sink\n"
                                           "    user: sink\ncurrent-context: sink\nusers:\n- name: sink\n  user:\n"
                                           "    token: kiln-bind-sink\n",
                                           url));
  if (!url_file.empty()) WriteFileWhole(url_file, url + "\n");
  fmt::print(stderr, "kiln_bind_sink: serving on {}\n", url);
  svr.listen_after_bind();
  return 0;
}

// ---- The load test ----

std::string PercentEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out.push_back(static_cast<char>(c));
    else out += fmt::format("%{:02X}", c);
  }
  return out;
}

// POSTs bindings for every unbound pod the sink holds, from `threads` keep-alive connections,
// for up to `seconds`, and reports requests/s as the client saw them.
int RunLoad(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: kiln_bind_sink load URL [--threads N] [--seconds S]\n");
    return 2;
  }
  std::string url = argv[2];
  int threads = 8;
  double seconds = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    else if (a == "--seconds") seconds = std::stod(argv[i + 1]);
  }
  httplib::Client lister(url);
  std::vector<std::pair<std::string, std::string>> pods;  // namespace, name
  std::string cont;
  do {
    std::string path = "/api/v1/pods?limit=5000";
    if (!cont.empty()) path += "&continue=" + PercentEncode(cont);
    auto r = lister.Get(path);
    if (!r || r->status != 200) {
      fmt::print(stderr, "kiln_bind_sink load: LIST pods failed\n");
      return 1;
    }
    json page = json::parse(r->body);
    for (const json& p : page["items"])
      if (p["spec"].value("nodeName", "").empty())
        pods.emplace_back(p["metadata"].value("namespace", ""), p["metadata"].value("name", ""));
    cont = page["metadata"].value("continue", "");
  } while (!cont.empty());
  if (pods.empty()) {
    fmt::print(stderr, "kiln_bind_sink load: no unbound pods to bind\n");
    return 1;
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> ok{0}, failed{0};
  auto until = Clock::now() + std::chrono::duration<double>(seconds);
  auto t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      httplib::Client c(url);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      for (size_t i; (i = next++) < pods.size() && Clock::now() < until;) {
        const auto& [ns, name] = pods[i];
        std::string body = fmt::format(
            R"({{"apiVersion":"v1","kind":"Binding","metadata":{{"name":"{}","namespace":"{}"}},)"
            R"("target":{{"apiVersion":"v1","kind":"Node","name":"node-{}"}}}})",
            name, ns, i % 1000);
        auto r = c.Post(fmt::format("/api/v1/namespaces/{}/pods/{}/binding", ns, name), body, "application/json");
        if (r && r->status == 201) ++ok;
        else ++failed;
      }
    });
  for (auto& w : workers) w.join();
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("{} binding POSTs in {:.2f} s from {} connections: {:.0f} requests/s ({} failed)\n",
             ok + failed, took, threads, (ok + failed) / took, failed.load());
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve") return Serve(argc, argv);
  if (mode == "load") return RunLoad(argc, argv);
  fmt::print(stderr,
             "usage: kiln_bind_sink serve --manifests FILE.json [--port 0] [--url-file F] "
             "[--write-kubeconfig F] [--threads 128] [--bookmark-interval 1]\n"
             "       kiln_bind_sink load URL [--threads 8] [--seconds 5]\n");
  return 2;
}
