#pragma once
// Helpers for the commands that write JSON with nlohmann::ordered_json (include only from .cc
// files that already use nlohmann/json.hpp).

#include <nlohmann/json.hpp>

#include <iterator>
#include <string>
#include <utility>

#include "runtime/quantity.h"
#include "runtime/resource.h"

namespace kiln::cli {

// A Resource as {name: quantity in Kubernetes notation} over its present dimensions, pods left
// out unless `with_pods`.
inline nlohmann::ordered_json ResourceJson(const Resource& r, bool with_pods) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  ForEachBit(with_pods ? r.present : r.present & ~(1u << kPods), [&](ResourceId id) {
    std::string_view name = ResourceRegistry::Name(id);
    out[std::string(name)] = FormatResourceQuantity(name, r.values[id]);
  });
  return out;
}

// An object from keys known to be distinct, in the given order. ordered_json's own insert
// searches the object linearly for the key first, which made the output quadratic in the number
// of decisions (77k binds took ~6 s); appending to the underlying vector keeps it linear.
template <typename Range, typename KeyValue>
nlohmann::ordered_json ObjectOfDistinctKeys(const Range& range, KeyValue key_value) {
  using Json = nlohmann::ordered_json;
  Json obj = Json::object();
  auto& items = static_cast<Json::object_t::Container&>(obj.get_ref<Json::object_t&>());
  items.reserve(std::size(range));
  for (const auto& item : range) {
    auto [key, value] = key_value(item);
    items.emplace_back(std::move(key), Json(std::move(value)));
  }
  return obj;
}

// `json` pretty-printed as a member `depth` levels deep in a document printed with dump(2):
// every line after the first indented by 2·depth (JSON strings hold no raw newline). Lets a
// large document be written part by part, byte for byte as one dump(2) of the whole would be,
// without building the whole as a JSON tree.
inline std::string Nested(const nlohmann::ordered_json& json, int depth) {
  std::string text = json.dump(2);
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    out += c;
    if (c == '\n') out += pad;
  }
  return out;
}

}  // namespace kiln::cli
