// The standard library's JSON helpers (stdlib/library.h rows `parse_json_number_map` and
// `parse_json_resource_map`, Host impl): pod/queue annotations that carry JSON objects. Results
// are policy maps in the current call arena; malformed input gives none, never an exception.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "compiler/codegen/runtime_support.h"
#include "compiler/host/host_symbols.h"
#include "runtime/quantity.h"
#include "runtime/resource.h"

namespace kiln {
namespace {

std::string_view View(const char* data, size_t size) {
  return size ? std::string_view(data, size) : std::string_view();
}

// Parses `text` as a JSON object; null on anything else.
bool ParseObject(const char* text, size_t text_size, nlohmann::json* out) {
  *out = nlohmann::json::parse(View(text, text_size), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded() && out->is_object();
}

void* NewStringKeyMap(int32_t value_size) { return kiln_rt_map_new(1, value_size); }

void* Slot(void* map, const std::string& key) {
  bool inserted = false;
  return kiln_rt_map_slot_s(map, key.data(), static_cast<int64_t>(key.size()), &inserted);
}

}  // namespace
}  // namespace kiln

extern "C" {

bool kiln_host_parse_json_number_map(const char* text, size_t text_size, void** out) {
  try {
    nlohmann::json j;
    if (!kiln::ParseObject(text, text_size, &j)) return false;
    for (const auto& [key, value] : j.items())
      if (!value.is_number()) return false;
    void* map = kiln::NewStringKeyMap(sizeof(double));
    for (const auto& [key, value] : j.items())
      *static_cast<double*>(kiln::Slot(map, key)) = value.get<double>();
    *out = map;
    return true;
  } catch (const std::exception& e) {
    std::string msg = std::string("parse_json_number_map: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
    return false;
  }
}

bool kiln_host_parse_json_resource_map(const char* text, size_t text_size, void** out) {
  try {
    nlohmann::json j;
    if (!kiln::ParseObject(text, text_size, &j)) return false;
    void* map = kiln::NewStringKeyMap(sizeof(kiln::Resource*));
    for (const auto& [key, list] : j.items()) {
      if (!list.is_object()) return false;
      kiln::Resource* r = kiln_rt_res_new();
      if (!r) return false;
      for (const auto& [name, q] : list.items()) {
        std::string qtext = q.is_string() ? q.get<std::string>() : q.dump();
        auto amount = kiln::ParseResourceQuantity(name, qtext);
        if (!amount.ok()) return false;
        auto id = kiln::ResourceNames::Intern(name);
        if (!id.ok()) return false;
        r->Set(*id, *amount);
      }
      *static_cast<kiln::Resource**>(kiln::Slot(map, key)) = r;
    }
    *out = map;
    return true;
  } catch (const std::exception& e) {
    std::string msg = std::string("parse_json_resource_map: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
    return false;
  }
}

}  // extern "C"
