// The standard library's JSON helpers (stdlib/library.h rows `parse_json_number_map`,
// `parse_json_resource_map` and the `json_*` functions, Host impl): annotations that carry JSON
// objects and the replies of HTTP services. Results live in the current call arena; malformed
// input, a missing member or a value of another type gives none, never an exception.
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stdlib/runtime_support.h"
#include "compiler/host/host_symbols.h"
#include "runtime/quantity.h"
#include "runtime/resource.h"
#include "runtime/session.h"

namespace kiln {
namespace {

std::string_view View(const char* data, size_t size) {
  return size ? std::string_view(data, size) : std::string_view();
}

// Parses `text` as a JSON object; null on anything else.
// A parse builds a document several times the text's size in host memory, outside the call
// arena: it is charged as host work at kParseFactor bytes per byte of text, which bounds both
// its time and that memory by the host-work budget.
constexpr int64_t kParseFactor = 8;
bool ChargeParse(size_t text_size) {
  return ChargeHostWork(static_cast<int64_t>(text_size) * kParseFactor);
}

bool ParseObject(const char* text, size_t text_size, nlohmann::json* out) {
  if (!ChargeParse(text_size)) return false;
  *out = nlohmann::json::parse(View(text, text_size), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded() && out->is_object();
}

// read(value) for the value at JSON pointer `pointer` ("/a/0/b"; "" is the whole document) of
// `text`; false when the text is not JSON, the pointer is malformed or names nothing.
template <typename Read>
bool WithValueAt(const char* text, size_t text_size, const char* pointer, size_t pointer_size,
                 Read&& read) {
  if (!ChargeParse(text_size)) return false;
  nlohmann::json doc =
      nlohmann::json::parse(View(text, text_size), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return false;
  try {
    nlohmann::json::json_pointer ptr{std::string(View(pointer, pointer_size))};
    if (!doc.contains(ptr)) return false;
    return read(std::as_const(doc).at(ptr));
  } catch (const nlohmann::json::exception&) {
    return false;  // a malformed pointer names nothing
  }
}

KStr ArenaString(const std::string& s) {
  char* bytes = static_cast<char*>(kiln_rt_alloc(static_cast<int64_t>(s.size()) + 1));
  if (!bytes) return KStr{"", 0};
  std::memcpy(bytes, s.data(), s.size());
  return KStr{bytes, s.size()};
}

// A list<string> in the call arena.
bool ArenaStrings(const std::vector<std::string>& strings, KList* out) {
  auto* items =
      static_cast<KStr*>(kiln_rt_alloc(static_cast<int64_t>(sizeof(KStr) * (strings.size() + 1))));
  if (!items) return false;
  for (size_t i = 0; i < strings.size(); ++i) items[i] = ArenaString(strings[i]);
  *out = KList{reinterpret_cast<const void* const*>(items), strings.size()};
  return true;
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

KStr kiln_host_json_quote(const char* s, size_t s_size) {
  if (!kiln::ChargeHostWork(static_cast<int64_t>(s_size) * 2)) return KStr{"", 0};
  try {
    // Invalid UTF-8 is replaced (U+FFFD) rather than failing: a label value must not make the
    // whole request unbuildable.
    return kiln::ArenaString(nlohmann::json(std::string(kiln::View(s, s_size)))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } catch (const std::exception& e) {
    std::string msg = std::string("json_quote: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
    return KStr{"", 0};
  }
}

KStr kiln_host_to_upper(const char* s, size_t s_size) {
  if (!kiln::ChargeHostWork(static_cast<int64_t>(s_size))) return KStr{"", 0};
  try {
    std::string out(s ? s : "", s ? s_size : 0);
    for (char& ch : out)
      if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
    return kiln::ArenaString(out);
  } catch (const std::exception& e) {
    std::string msg = std::string("to_upper: ") + e.what();
    kiln_policy_fault(msg.data(), msg.size());
    return KStr{"", 0};
  }
}

bool kiln_host_json_number(const char* text, size_t text_size, const char* pointer,
                           size_t pointer_size, double* out) {
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    if (!v.is_number()) return false;
    *out = v.get<double>();
    return true;
  });
}

bool kiln_host_json_string(const char* text, size_t text_size, const char* pointer,
                           size_t pointer_size, KStr* out) {
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    if (!v.is_string()) return false;
    *out = kiln::ArenaString(v.get<std::string>());
    return true;
  });
}

bool kiln_host_json_bool(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, bool* out) {
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    if (!v.is_boolean()) return false;
    *out = v.get<bool>();
    return true;
  });
}

bool kiln_host_json_text(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, KStr* out) {
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    *out = kiln::ArenaString(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return true;
  });
}

bool kiln_host_json_keys(const char* text, size_t text_size, const char* pointer,
                         size_t pointer_size, KList* out) {
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    if (!v.is_object()) return false;
    std::vector<std::string> keys;
    for (const auto& [key, value] : v.items()) keys.push_back(key);
    return kiln::ArenaStrings(keys, out);
  });
}

bool kiln_host_json_strings(const char* text, size_t text_size, const char* pointer,
                            size_t pointer_size, const char* field, size_t field_size,
                            KList* out) {
  std::string key(kiln::View(field, field_size));
  return kiln::WithValueAt(text, text_size, pointer, pointer_size, [&](const nlohmann::json& v) {
    if (!v.is_array()) return false;
    std::vector<std::string> found;
    for (const nlohmann::json& item : v) {
      const nlohmann::json* s = &item;
      if (!key.empty()) {
        if (!item.is_object()) return false;
        auto it = item.find(key);
        if (it == item.end()) return false;
        s = &*it;
      }
      if (!s->is_string()) return false;
      found.push_back(s->get<std::string>());
    }
    return kiln::ArenaStrings(found, out);
  });
}

}  // extern "C"
