#include "kubernetes/decode_fast.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "kubernetes/decode_shared.h"
#include "runtime/quantity.h"

namespace kiln::kube {

namespace od = simdjson::ondemand;
using json = nlohmann::json;

static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING);

namespace {

std::atomic<int64_t> g_fallbacks{0};

// Pages and watch lines are read with one parser while each of their objects is decoded with
// another (a parser serves one document at a time). One of each per thread: reflectors decode on
// their own threads.
od::parser& PageParser() {
  thread_local od::parser p;
  return p;
}
od::parser& ObjectParser() {
  thread_local od::parser p;
  return p;
}

// ---- pages and lines ----

// The JSON text of a value that has not been read yet: an object's or a list's span, a scalar's
// token.
simdjson::error_code RawText(od::value v, std::string_view* out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  std::string_view text;
  if (t == od::json_type::object) {
    od::object o;
    if (auto e = v.get_object().get(o)) return e;
    if (auto e = o.raw_json().get(text)) return e;
  } else if (t == od::json_type::array) {
    od::array a;
    if (auto e = v.get_array().get(a)) return e;
    if (auto e = a.raw_json().get(text)) return e;
  } else {
    text = v.raw_json_token();
  }
  // The spans run to the next token: drop the white space before it.
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' ||
                           text.back() == '\t'))
    text.remove_suffix(1);
  *out = text;
  return simdjson::SUCCESS;
}

// Whether the document has been read to its end (nothing follows the value just read).
bool AtEnd(od::document& doc) {
  const char* next = nullptr;
  return doc.current_location().get(next) == simdjson::OUT_OF_BOUNDS;
}

Error PageError(std::string_view what, simdjson::error_code e) {
  return Error{fmt::format("the answer is not valid JSON ({}: {})", what, simdjson::error_message(e)), {}};
}

// ---- objects ----

// The object needs the reference decoder (a shape this file does not read, a type error, text
// that is not JSON). Never leaves this file.
struct Fallback {};

[[noreturn]] void Bail() { throw Fallback{}; }

template <typename T>
T Get(simdjson::simdjson_result<T>&& r) {
  T v;
  if (std::move(r).get(v)) Bail();
  return v;
}

bool IsNull(od::value& v) { return Get(v.type()) == od::json_type::null; }

// Calls f(key, value) for each member of `o`, in order. `seen` catches a key given twice (the
// reference keeps the last one whole, which reading in one pass cannot): bit `i` of it stands
// for the i-th of `keys`, the members `f` reads.
template <size_t N, typename F>
void Members(od::object o, const std::string_view (&keys)[N], F&& f) {
  static_assert(N <= 32);
  uint32_t seen = 0;
  for (auto field : o) {
    std::string_view key = Get(field.unescaped_key());
    od::value v = Get(field.value());
    for (size_t i = 0; i < N; ++i) {
      if (key != keys[i]) continue;
      if (seen & (1u << i)) Bail();
      seen |= 1u << i;
      f(i, v);
      break;
    }
  }
}

// Each element of a list (none for null), which must be objects.
template <typename F>
void EachObject(od::value& v, F&& f) {
  if (IsNull(v)) return;
  for (auto e : Get(v.get_array())) f(Get(Get(std::move(e)).get_object()));
}

od::object ObjectOf(od::value& v) { return Get(v.get_object()); }

std::optional<std::string_view> OptStr(od::value& v) {
  if (IsNull(v)) return std::nullopt;
  return Get(v.get_string());
}

std::string Str(od::value& v, std::string_view def = {}) { return std::string(OptStr(v).value_or(def)); }

std::optional<int64_t> OptInt(od::value& v) {
  if (IsNull(v)) return std::nullopt;
  return Get(v.get_int64());
}

StringMap Map(od::value& v) {
  StringMap out;
  if (IsNull(v)) return out;
  for (auto field : Get(v.get_object())) {
    std::string_view key = Get(field.unescaped_key());
    od::value e = Get(field.value());
    // The API server writes map keys sorted (Go's encoding/json), so each goes at the end; a
    // key given twice keeps its last value, as the reference's parser does.
    out.try_emplace(out.end(), std::string(key))->second = Str(e);
  }
  return out;
}

// A time as decode.cc's Time() reads one.
TimeNs Time(od::value& v, TimeNs def, TimeNs zero) {
  std::string_view s = OptStr(v).value_or("");
  if (s.empty()) return def;
  if (IsZeroTimestamp(s)) return zero;
  auto t = ParseTimestamp(s);
  if (!t) Bail();
  return *t;
}

// A ResourceList of quantity strings (a number goes to the reference, which prints it first).
// *cpu and *memory tell whether those are named.
Resource Resources(od::value& v, bool* cpu = nullptr, bool* memory = nullptr) {
  Resource r;
  if (IsNull(v)) return r;
  for (auto field : Get(v.get_object())) {
    std::string_view name = Get(field.unescaped_key());
    od::value q = Get(field.value());
    std::string_view text = Get(q.get_string());
    if (cpu && name == "cpu") *cpu = true;
    if (memory && name == "memory") *memory = true;
    if (!IsVolcanoResourceName(name)) continue;
    auto amount = ParseResourceQuantity(name, text);
    if (!amount) Bail();
    auto id = ResourceRegistry::Intern(name);
    if (!id) Bail();
    r.Set(*id, *amount);
  }
  return r;
}

// The metadata both kinds read. `deleting` is set when deletionTimestamp is given.
struct Metadata {
  ObjectMeta meta;
  StringMap labels, annotations;
  TimeNs creation_time = kUnsetTime;
  bool deleting = false;
};

Metadata ReadMetadata(od::value& v) {
  Metadata m;
  static constexpr std::string_view kKeys[] = {"namespace", "name",        "uid",
                                               "resourceVersion", "labels", "annotations",
                                               "creationTimestamp", "deletionTimestamp"};
  Members(ObjectOf(v), kKeys, [&](size_t i, od::value& f) {
    switch (i) {
      case 0: m.meta.namespace_ = Str(f); break;
      case 1: m.meta.name = Str(f); break;
      case 2: m.meta.uid = Str(f); break;
      case 3: m.meta.resource_version = Str(f); break;
      case 4: m.labels = Map(f); break;
      case 5: m.annotations = Map(f); break;
      case 6: m.creation_time = Time(f, kUnsetTime, kZeroTime); break;
      case 7: m.deleting = !IsNull(f); break;
    }
  });
  if (m.meta.name.empty()) Bail();
  return m;
}

// The document of one object in `padded`, read by `read(object)`, which must consume it.
template <typename F>
auto ReadObject(std::string_view padded, F&& read) {
  od::document doc = Get(ObjectParser().iterate(padded.data(), padded.size(), padded.size() + kJsonPadding));
  auto out = read(Get(doc.get_object()));
  if (!AtEnd(doc)) Bail();
  return out;
}

// The fast decoder, and on Fallback the reference path.
template <typename T, typename Fast, typename Reference>
Result<T> WithFallback(Fast&& fast, Reference&& reference) {
  try {
    return fast();
  } catch (const Fallback&) {
  }
  g_fallbacks.fetch_add(1, std::memory_order_relaxed);
  return reference();
}

// nlohmann's DOM of `text`, or an Error naming `kind` and the parse error.
Result<json> ParseReference(std::string_view kind, std::string_view text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    return Error{fmt::format("{}: not JSON: {}", kind, e.what()), {}};
  }
}

// One container of a pod as the fast path reads it.
struct ContainerRead {
  std::string image;
  detail::QosResources resources;
};

ContainerRead ReadContainer(od::object c) {
  ContainerRead out;
  static constexpr std::string_view kKeys[] = {"image", "resources", "ports"};
  static constexpr std::string_view kResourceKeys[] = {"requests", "limits"};
  static constexpr std::string_view kPortKeys[] = {"hostPort"};
  Members(c, kKeys, [&](size_t i, od::value& f) {
    switch (i) {
      case 0: out.image = Str(f); break;
      case 1:
        if (IsNull(f)) break;
        Members(ObjectOf(f), kResourceKeys, [&](size_t j, od::value& r) {
          auto& res = out.resources;
          if (j == 0) res.requests = Resources(r, &res.names_cpu, &res.names_memory);
          else res.limits = Resources(r);
        });
        break;
      case 2:
        // Host ports constrain placement: the reference reads those pods.
        EachObject(f, [&](od::object port) {
          Members(port, kPortKeys, [&](size_t, od::value& hp) {
            if (OptInt(hp).value_or(0) != 0) Bail();
          });
        });
        break;
    }
  });
  return out;
}

// A list the fast path does not read must be absent, null or empty.
void NoneOf(od::value& v) {
  if (IsNull(v)) return;
  od::array a = Get(v.get_array());
  if (!Get(a.is_empty())) Bail();
}

DecodedPod FastPod(od::object obj) {
  DecodedPod out;
  out.scheduler_name = "default-scheduler";
  PodSpec& p = out.spec;
  PodPlacement placement;
  std::vector<ContainerRead> containers;
  std::optional<std::string> qos_class;
  std::string phase = "Pending";
  static constexpr std::string_view kKeys[] = {"metadata", "spec", "status"};
  static constexpr std::string_view kSpecKeys[] = {
      "schedulerName", "nodeName",     "priorityClassName", "priority",
      "preemptionPolicy", "containers", "nodeSelector",      "tolerations",
      "schedulingGates", "initContainers", "overhead",       "resources",
      "affinity",      "topologySpreadConstraints"};
  static constexpr std::string_view kTolerationKeys[] = {"key", "operator", "value", "effect",
                                                         "tolerationSeconds"};
  static constexpr std::string_view kStatusKeys[] = {"qosClass", "phase", "nominatedNodeName",
                                                     "conditions"};
  static constexpr std::string_view kConditionKeys[] = {"type", "status", "reason", "message",
                                                        "lastTransitionTime"};
  bool have_metadata = false;
  Members(obj, kKeys, [&](size_t i, od::value& part) {
    if (i == 0) {
      Metadata m = ReadMetadata(part);
      have_metadata = true;
      out.meta = std::move(m.meta);
      p.labels = std::move(m.labels);
      if (!m.annotations.empty()) p.mutable_extras().annotations = std::move(m.annotations);
      p.creation_time = m.creation_time;
      p.deleting = m.deleting;
    } else if (i == 1) {
      if (IsNull(part)) return;
      Members(ObjectOf(part), kSpecKeys, [&](size_t k, od::value& f) {
        switch (k) {
          case 0: out.scheduler_name = Str(f, "default-scheduler"); break;
          case 1: p.node = Str(f); break;
          case 2:
            if (std::string name = Str(f); !name.empty())
              p.mutable_extras().priority_class_name = std::move(name);
            break;
          case 3:
            if (auto pr = OptInt(f)) p.priority = static_cast<int32_t>(*pr);
            break;
          case 4:
            if (auto pp = OptStr(f)) {
              if (*pp == "Never") p.preemption_policy = PreemptionPolicy::Never;
              else if (pp->empty() || *pp == "PreemptLowerPriority") p.preemption_policy = PreemptionPolicy::PreemptLowerPriority;
              else Bail();
            }
            break;
          case 5: EachObject(f, [&](od::object c) { containers.push_back(ReadContainer(c)); }); break;
          case 6: placement.node_selector = Map(f); break;
          case 7:
            EachObject(f, [&](od::object t) {
              Toleration tol;
              Members(t, kTolerationKeys, [&](size_t j, od::value& v) {
                switch (j) {
                  case 0: tol.key = Str(v); break;
                  case 1: tol.op = Str(v, "Equal"); break;
                  case 2: tol.value = Str(v); break;
                  case 3: tol.effect = Str(v); break;
                  case 4: tol.toleration_seconds = OptInt(v); break;
                }
              });
              placement.tolerations.push_back(std::move(tol));
            });
            break;
          case 8:
            EachObject(f, [&](od::object g) {
              static constexpr std::string_view kGateKeys[] = {"name"};
              std::string name;
              Members(g, kGateKeys, [&](size_t, od::value& v) { name = Str(v); });
              p.mutable_extras().scheduling_gates.push_back(std::move(name));
            });
            break;
          case 9: case 13: NoneOf(f); break;
          default:  // overhead, pod-level resources, affinity
            if (!IsNull(f)) Bail();
        }
      });
    } else {
      if (IsNull(part)) return;
      Members(ObjectOf(part), kStatusKeys, [&](size_t k, od::value& f) {
        switch (k) {
          case 0: qos_class = Str(f); break;
          case 1: phase = Str(f, "Pending"); break;
          case 2: p.nominated_node = Str(f); break;
          case 3:
            EachObject(f, [&](od::object c) {
              std::string type, status, reason, message;
              TimeNs at = 0;
              Members(c, kConditionKeys, [&](size_t j, od::value& v) {
                switch (j) {
                  case 0: type = Str(v); break;
                  case 1: status = Str(v); break;
                  case 2: reason = Str(v); break;
                  case 3: message = Str(v); break;
                  case 4: at = Time(v, 0, 0); break;
                }
              });
              if (type != "PodScheduled") return;
              out.scheduled_status = std::move(status);
              out.scheduled_reason = std::move(reason);
              out.scheduled_message = std::move(message);
              if (out.scheduled_status == "True") p.scheduled_at = at;
            });
            break;
        }
      });
    }
  });
  if (!have_metadata) Bail();

  p.name = out.meta.name;
  p.namespace_ = out.meta.namespace_.empty() ? "default" : out.meta.namespace_;
  p.where = SourceLocation{fmt::format("pod {}/{}", p.namespace_, p.name)};
  if (!detail::TakePodAnnotations(p)) Bail();
  if (out.scheduler_name != p.scheduler_name()) p.mutable_extras().scheduler_name = out.scheduler_name;
  std::vector<detail::QosResources> qos;
  Resource requests, limits;
  for (ContainerRead& c : containers) {
    requests.Add(c.resources.requests);
    limits.Add(c.resources.limits);
    qos.push_back(std::move(c.resources));
  }
  p.requests = requests;
  if (SparseResource sparse = limits; !(sparse == SparseResource()))
    p.mutable_extras().limits = std::move(sparse);
  if (!containers.empty() && !containers[0].image.empty())
    p.mutable_extras().image = std::move(containers[0].image);
  if (!placement.empty()) p.placement = std::make_shared<const PodPlacement>(std::move(placement));
  out.qos_guaranteed = qos_class && !qos_class->empty() ? *qos_class == "Guaranteed" : detail::QosGuaranteed(qos);
  p.phase = detail::PodPhaseOf(phase);
  return out;
}

NodeSpec FastNode(od::object obj, ObjectMeta* meta_out) {
  NodeSpec n;
  ObjectMeta meta;
  bool have_metadata = false, have_capacity = false;
  static constexpr std::string_view kKeys[] = {"metadata", "spec", "status"};
  static constexpr std::string_view kSpecKeys[] = {"unschedulable", "taints"};
  static constexpr std::string_view kTaintKeys[] = {"key", "value", "effect"};
  static constexpr std::string_view kStatusKeys[] = {"allocatable", "capacity", "images"};
  static constexpr std::string_view kImageKeys[] = {"sizeBytes", "names"};
  Members(obj, kKeys, [&](size_t i, od::value& part) {
    if (i == 0) {
      Metadata m = ReadMetadata(part);
      have_metadata = true;
      meta = std::move(m.meta);
      n.labels = std::move(m.labels);
      n.annotations = std::move(m.annotations);
      n.creation_time = m.creation_time;
      return;
    }
    if (IsNull(part)) return;
    if (i == 1) {
      Members(ObjectOf(part), kSpecKeys, [&](size_t k, od::value& f) {
        if (k == 0) {
          n.unschedulable = IsNull(f) ? false : Get(f.get_bool());
          return;
        }
        EachObject(f, [&](od::object t) {
          Taint taint;
          Members(t, kTaintKeys, [&](size_t j, od::value& v) {
            (j == 0 ? taint.key : j == 1 ? taint.value : taint.effect) = Str(v);
          });
          n.taints.push_back(std::move(taint));
        });
      });
      return;
    }
    Members(ObjectOf(part), kStatusKeys, [&](size_t k, od::value& f) {
      if (k == 0) {
        n.allocatable = Resources(f);
      } else if (k == 1) {
        have_capacity = !IsNull(f);
        n.capacity = Resources(f);
      } else {
        EachObject(f, [&](od::object image) {
          int64_t size = 0;
          std::vector<std::string> names;
          Members(image, kImageKeys, [&](size_t j, od::value& v) {
            if (j == 0) {
              size = OptInt(v).value_or(0);
            } else if (!IsNull(v)) {
              for (auto e : Get(v.get_array())) names.emplace_back(Get(Get(std::move(e)).get_string()));
            }
          });
          for (auto& name : names) n.images[name] = size;
        });
      }
    });
  });
  if (!have_metadata) Bail();
  if (!have_capacity) n.capacity = n.allocatable;
  // Kiln's usage annotation holds JSON of its own: the reference reads it.
  if (n.annotations.count(kUsageAnnotation)) Bail();
  n.name = meta.name;
  n.where = SourceLocation{fmt::format("node {}", n.name)};
  if (meta_out) *meta_out = std::move(meta);
  return n;
}

}  // namespace

std::string_view PadInPlace(std::string& s) {
  size_t size = s.size();
  s.append(kJsonPadding, '\0');
  return {s.data(), size};
}

Status ForEachListItem(std::string_view padded_page,
                       const std::function<Status(std::string_view item)>& on_item,
                       ListPageMeta* meta) {
  od::document doc;
  if (auto e = PageParser().iterate(padded_page.data(), padded_page.size(),
                                    padded_page.size() + kJsonPadding).get(doc))
    return PageError("the page", e);
  od::object page;
  if (auto e = doc.get_object().get(page))
    return e == simdjson::INCORRECT_TYPE ? Error{"the answer is not a JSON object", {}} : PageError("the page", e);
  for (auto field : page) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return PageError("a key", e);
    od::value v;
    if (auto e = field.value().get(v)) return PageError(key, e);
    if (key == "metadata") {
      od::object m;
      if (v.get_object().get(m)) continue;  // as the DOM path did: no continue token
      for (auto mf : m) {
        std::string_view mk, text;
        if (auto e = mf.unescaped_key().get(mk)) return PageError("metadata", e);
        od::value mv;
        if (auto e = mf.value().get(mv)) return PageError("metadata", e);
        if (mk != "continue" && mk != "resourceVersion") continue;
        if (mv.get_string().get(text)) continue;  // not a string: as if absent
        (mk == "continue" ? meta->continue_token : meta->resource_version) = std::string(text);
      }
    } else if (key == "items") {
      od::array items;
      if (v.get_array().get(items)) continue;  // not a list: no items, as the DOM path had it
      size_t index = 0;
      for (auto item : items) {
        od::value iv;
        std::string_view text;
        if (auto e = std::move(item).get(iv)) return PageError(fmt::format("items[{}]", index), e);
        if (auto e = RawText(iv, &text)) return PageError(fmt::format("items[{}]", index), e);
        if (Status s = on_item(text); !s) return s;
        ++index;
      }
    }
  }
  if (!AtEnd(doc)) return Error{"the answer has more after its JSON object", {}};
  return Status::Ok();
}

WatchLine SplitWatchEvent(std::string_view padded_line, std::string* type, std::string_view* object) {
  od::document doc;
  od::object ev;
  if (PageParser().iterate(padded_line.data(), padded_line.size(), padded_line.size() + kJsonPadding).get(doc) ||
      doc.get_object().get(ev))
    return WatchLine::NotJson;
  bool has_type = false, has_object = false;
  for (auto field : ev) {
    std::string_view key, text;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return WatchLine::NotJson;
    if (key == "type") {
      has_type = !v.get_string().get(text);
      if (has_type) *type = std::string(text);
    } else if (key == "object") {
      if (RawText(v, object)) return WatchLine::NotJson;
      has_object = true;
    }
  }
  if (!AtEnd(doc)) return WatchLine::NotJson;
  return has_type && has_object ? WatchLine::Event : WatchLine::Incomplete;
}

Result<DecodedPod> DecodePodReference(std::string_view text) {
  auto j = ParseReference("pod", text);
  if (!j) return j.error();
  return DecodePod(*j);
}

Result<NodeSpec> DecodeNodeReference(std::string_view text, ObjectMeta* meta) {
  auto j = ParseReference("node", text);
  if (!j) return j.error();
  return DecodeNode(*j, meta);
}

Result<DecodedPod> DecodePodJson(std::string_view padded) {
  return WithFallback<DecodedPod>([&] { return ReadObject(padded, FastPod); },
                                  [&] { return DecodePodReference(padded); });
}

Result<NodeSpec> DecodeNodeJson(std::string_view padded, ObjectMeta* meta) {
  return WithFallback<NodeSpec>(
      [&] { return ReadObject(padded, [&](od::object o) { return FastNode(o, meta); }); },
      [&] { return DecodeNodeReference(padded, meta); });
}

ObjectMeta DecodeMetaJson(std::string_view padded) {
  auto meta = WithFallback<ObjectMeta>(
      [&] {
        return ReadObject(padded, [](od::object o) {
          ObjectMeta m;
          static constexpr std::string_view kKeys[] = {"metadata"};
          static constexpr std::string_view kMetaKeys[] = {"namespace", "name", "uid", "resourceVersion"};
          Members(o, kKeys, [&](size_t, od::value& v) {
            if (Get(v.type()) != od::json_type::object) return;
            Members(ObjectOf(v), kMetaKeys, [&](size_t i, od::value& f) {
              std::string_view s;
              std::string text = f.get_string().get(s) ? std::string() : std::string(s);
              (i == 0 ? m.namespace_ : i == 1 ? m.name : i == 2 ? m.uid : m.resource_version) = std::move(text);
            });
          });
          return m;
        });
      },
      [&]() -> Result<ObjectMeta> {
        json j = json::parse(padded, nullptr, false);
        return j.is_discarded() ? ObjectMeta{} : DecodeMeta(j);
      });
  return std::move(*meta);
}

int64_t FastDecodeFallbacks() { return g_fallbacks.load(std::memory_order_relaxed); }

}  // namespace kiln::kube
