#include "compiler/host/kept_state.h"

#include <fmt/format.h>

#include <iterator>
#include <variant>

#include "compiler/host/conf_value_complete.h"

namespace kiln {

namespace {

// A written-out form of a conf value in which different values differ: each value is tagged with
// its kind and lengths prefix strings, so no two arguments maps write the same text.
void Write(const ConfValue& v, std::string& out);

void WriteMap(const ConfValue::Map& map, std::string& out) {
  out += fmt::format("{{{}:", map.size());
  for (const auto& [k, e] : map) {
    out += fmt::format("{}:{}=", k.size(), k);
    Write(e, out);
  }
  out += "}";
}

void Write(const ConfValue& v, std::string& out) {
  if (std::holds_alternative<std::monostate>(v.value)) {
    out += "~";
  } else if (const auto* list = std::get_if<ConfValue::List>(&v.value)) {
    out += fmt::format("[{}:", list->size());
    for (const ConfValue& e : *list) Write(e, out);
    out += "]";
  } else if (const auto* map = std::get_if<ConfValue::Map>(&v.value)) {
    WriteMap(*map, out);
  } else {
    // Scalars compare by kind, value and as written (`1` is not `"1"`, "1.50" is not "1.5").
    std::string value;
    if (const auto* b = std::get_if<bool>(&v.value)) value = *b ? "true" : "false";
    if (const auto* i = std::get_if<int64_t>(&v.value)) value = fmt::format("{}", *i);
    if (const auto* d = std::get_if<double>(&v.value)) value = fmt::format("{}", *d);
    if (const auto* str = std::get_if<std::string>(&v.value)) value = *str;
    out += fmt::format("s{}:{}:{}/{}:{}", v.value.index(), value.size(), value, v.text.size(),
                       v.text);
  }
}

}  // namespace

std::string KeptStateStore::Key(const PluginOption& entry, uint64_t version) {
  std::string key = fmt::format("{}:{}\n{:016x}\n", entry.name.size(), entry.name, version);
  WriteMap(entry.arguments, key);
  return key;
}

std::shared_ptr<KeptBlock> KeptStateStore::Block(const PluginOption& entry, uint64_t version,
                                                 size_t slots) {
  std::string key = Key(entry, version);
  std::lock_guard<std::mutex> lock(mu_);
  // Entries whose configurations are gone leave expired pointers: drop them as we pass.
  for (auto it = blocks_.begin(); it != blocks_.end();)
    it = it->second.expired() ? blocks_.erase(it) : std::next(it);
  if (auto it = blocks_.find(key); it != blocks_.end())
    if (auto block = it->second.lock(); block && block->words.size() == slots) return block;
  auto block = std::make_shared<KeptBlock>(slots);
  blocks_[key] = block;
  return block;
}

}  // namespace kiln
