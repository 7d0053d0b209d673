// How `kiln simulate` prints the scenario's direct extension-point calls (runtime/calls.h): the
// top-level `calls` list of the JSON output (each input entry with its `result`), and the same
// list as a YAML `expect.calls` block to paste into a scenario when a --check fails.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/output_format.h"
#include "runtime/call_inputs.h"

namespace kiln::cli {

namespace {

using Json = nlohmann::ordered_json;

Json ValueJson(const CallValue& v) {
  switch (v.kind) {
    case CallValue::Kind::Null: return nullptr;
    case CallValue::Kind::Bool: return v.boolean;
    case CallValue::Kind::Int: return v.integer;
    case CallValue::Kind::Number: return v.number;
    case CallValue::Kind::Status: return Json{{"code", v.code}, {"reason", v.text}};
    case CallValue::Kind::Tasks: return v.names;
    case CallValue::Kind::NodeScores: {
      Json m = Json::object();
      for (const auto& [n, s] : v.scores) m[n] = s;
      return m;
    }
    case CallValue::Kind::Node: return v.text.empty() ? Json(nullptr) : Json(v.text);
    case CallValue::Kind::Error: return Json{{"error", v.text}};
  }
  return nullptr;
}

// The input keys of a call, in a fixed order.
template <typename F>
void ForEachInput(const CallSpec& c, F&& f) {
  ForEachNamedInput(c, [&](std::string_view k, const std::string& v) { f(k, Json(v)); });
  if (c.has_preemptor) f("preemptor", c.preemptor ? Json(*c.preemptor) : Json(nullptr));
  if (c.candidates) f("candidates", Json(*c.candidates));
  if (c.nodes) f("nodes", Json(*c.nodes));
  if (c.scores) f("scores", Json(*c.scores));
}

}  // namespace

nlohmann::ordered_json CallsJson(const std::vector<CallSpec>& calls) {
  Json out = Json::array();
  for (const CallSpec& c : calls) {
    Json j;
    j["fn"] = c.fn;
    ForEachInput(c, [&](std::string_view k, Json v) { j[std::string(k)] = std::move(v); });
    j["result"] = c.result ? ValueJson(*c.result) : Json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

std::string FormatCallsBlock(const std::vector<CallSpec>& calls) {
  std::string out = "  calls:\n";
  for (const CallSpec& c : calls) {
    std::vector<std::string> parts{fmt::format("fn: {}", c.fn)};
    ForEachInput(c, [&](std::string_view k, const Json& v) {
      parts.push_back(fmt::format("{}: {}", k, v.dump()));
    });
    Json r = c.result ? ValueJson(*c.result) : Json(nullptr);
    parts.push_back(fmt::format("result: {}", r.dump()));
    out += fmt::format("  - {{{}}}\n", fmt::join(parts, ", "));
  }
  return out;
}

}  // namespace kiln::cli
