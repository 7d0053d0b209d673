#include "runtime/yaml_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

namespace kiln::yaml {

SourceLocation Where(const YAML::Node& node, const SourceName& file) {
  SourceLocation loc;
  loc.file = file;
  if (!node.IsDefined()) return loc;
  YAML::Mark m = node.Mark();
  if (m.line >= 0) loc.line = m.line + 1;
  if (m.column >= 0) loc.column = m.column + 1;
  return loc;
}

SourceLocation Where(const Node& node, const SourceName& file) {
  SourceLocation loc;
  loc.file = file;
  Mark m = node.GetMark();
  if (m.line >= 0) loc.line = m.line + 1;
  if (m.column >= 0) loc.column = m.column + 1;
  return loc;
}

Result<YAML::Node> Load(std::string_view text, const std::string& file) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    SourceLocation loc{file, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                       e.mark.column >= 0 ? e.mark.column + 1 : 0};
    return Error{fmt::format("invalid YAML: {}", e.msg), loc};
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("invalid YAML: {}", e.msg), SourceLocation{file}};
  }
}

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string Closest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string w = Lower(word);
  std::string best;
  int best_distance = 1 << 30;
  for (std::string_view c : candidates) {
    int d = EditDistance(w, Lower(c));
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  // A suggestion is only helpful when most of the word survives: allow about one edit per three
  // characters (so a one- or two-letter word is only matched up to case).
  int limit = static_cast<int>(word.size()) / 3;
  return best_distance <= limit ? best : std::string();
}

std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string c = Closest(word, candidates);
  return c.empty() ? std::string() : fmt::format("; did you mean `{}`?", c);
}

bool IsQuoted(const YAML::Node& node) {
  // yaml-cpp tags quoted scalars with the non-specific tag "!" and plain ones with "?".
  return node.IsScalar() && node.Tag() == "!";
}

std::string KindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return fmt::format("`{}`", node.Scalar());
    case YAML::NodeType::Null:
      return "nothing";
    default:
      return "nothing";
  }
}

std::string KindName(const Node& node) {
  switch (node.Type()) {
    case NodeType::Map:
      return "a map";
    case NodeType::Sequence:
      return "a list";
    case NodeType::Scalar:
      return fmt::format("`{}`", node.Scalar());
    default:
      return "nothing";
  }
}

std::optional<bool> ParseGoBool(std::string_view t) {
  for (std::string_view s : {"1", "t", "T", "TRUE", "true", "True"})
    if (t == s) return true;
  for (std::string_view s : {"0", "f", "F", "FALSE", "false", "False"})
    if (t == s) return false;
  return std::nullopt;
}

std::optional<bool> ParseBoolText(std::string_view t) {
  static const std::vector<std::string_view> yes = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                                    "y",    "Y",    "on",   "On",  "ON"};
  static const std::vector<std::string_view> no = {"false", "False", "FALSE", "no", "No", "NO",
                                                   "n",     "N",     "off",   "Off", "OFF"};
  if (std::find(yes.begin(), yes.end(), t) != yes.end()) return true;
  if (std::find(no.begin(), no.end(), t) != no.end()) return false;
  return std::nullopt;
}

std::optional<int64_t> ParseIntText(std::string_view t) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<double> ParseFloatText(std::string_view t) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

namespace {

// The checks, written once for both node types (yaml::Node and YAML::Node).

// The 1-based line of a node, without building a SourceLocation (every key of every map asks).
int LineOf(const Node& node) { return node.GetMark().line + 1; }
int LineOf(const YAML::Node& node) { return node.IsDefined() ? node.Mark().line + 1 : 0; }

template <typename N>
Status CheckAnyMap(const Reader& r, const N& node, std::string_view what, bool allow_null) {
  if (allow_null && node.IsNull()) return Status::Ok();
  if (!node.IsMap()) return r.Fail(node, fmt::format("{} must be a map, got {}", what, KindName(node)));
  // Maps are small (an object's fields), so a linear scan beats hashing; the keys' text lives in
  // the document for as long as `node` does.
  std::vector<std::pair<std::string_view, int>> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      return r.Fail(kv.first, fmt::format("{} has a key that is not a plain name", what));
    std::string_view key = kv.first.Scalar();
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key; });
    if (it != seen.end())
      return r.Fail(kv.first,
                    fmt::format("duplicate key `{}` in {} (first at line {})", key, what, it->second));
    seen.emplace_back(key, LineOf(kv.first));
    if (seen.size() > 64) break;
  }
  if (seen.size() <= 64) return Status::Ok();
  // A large map (labels written by a tool): hash the keys instead.
  std::unordered_map<std::string_view, int> index;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      return r.Fail(kv.first, fmt::format("{} has a key that is not a plain name", what));
    std::string_view key = kv.first.Scalar();
    auto [it, inserted] = index.emplace(key, LineOf(kv.first));
    if (!inserted)
      return r.Fail(kv.first,
                    fmt::format("duplicate key `{}` in {} (first at line {})", key, what, it->second));
  }
  return Status::Ok();
}

template <typename N>
Status CheckMap(const Reader& r, const N& node, std::string_view what,
                const std::vector<std::string_view>& allowed, bool allow_null) {
  if (Status s = CheckAnyMap(r, node, what, allow_null); !s) return s;
  if (node.IsNull()) return Status::Ok();
  for (const auto& kv : node) {
    std::string_view key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return r.Fail(kv.first, fmt::format("unknown key `{}` in {}{}", key, what, DidYouMean(key, allowed)));
  }
  return Status::Ok();
}

template <typename N>
Status CheckList(const Reader& r, const N& node, std::string_view what) {
  if (node.IsNull() || node.IsSequence()) return Status::Ok();
  return r.Fail(node, fmt::format("{} must be a list, got {}", what, KindName(node)));
}

template <typename N>
Result<std::string> ReadString(const Reader& r, const N& node, std::string_view what) {
  if (!node.IsScalar())
    return r.Fail(node, fmt::format("{} must be a string, got {}", what, KindName(node)));
  return std::string(node.Scalar());
}

template <typename N>
Result<bool> ReadBool(const Reader& r, const N& node, std::string_view what) {
  if (node.IsScalar() && !IsQuoted(node)) {
    if (auto b = ParseBoolText(node.Scalar())) return *b;
  }
  return r.Fail(node, fmt::format("{} must be true or false, got {}", what, KindName(node)));
}

template <typename N>
Result<int64_t> ReadInt(const Reader& r, const N& node, std::string_view what) {
  if (node.IsScalar() && !IsQuoted(node)) {
    if (auto v = ParseIntText(node.Scalar())) return *v;
  }
  return r.Fail(node, fmt::format("{} must be an integer, got {}", what, KindName(node)));
}

template <typename N>
Result<double> ReadNumber(const Reader& r, const N& node, std::string_view what) {
  if (node.IsScalar() && !IsQuoted(node)) {
    if (auto v = ParseFloatText(node.Scalar())) return *v;
  }
  return r.Fail(node, fmt::format("{} must be a number, got {}", what, KindName(node)));
}

}  // namespace

#define KILN_READER_OVERLOADS(N)                                                               \
  Status Reader::ExpectAnyMap(const N& node, std::string_view what, bool allow_null) const {  \
    return CheckAnyMap(*this, node, what, allow_null);                                         \
  }                                                                                            \
  Status Reader::ExpectMap(const N& node, std::string_view what,                              \
                           const std::vector<std::string_view>& allowed, bool allow_null)      \
      const {                                                                                  \
    return CheckMap(*this, node, what, allowed, allow_null);                                   \
  }                                                                                            \
  Status Reader::ExpectList(const N& node, std::string_view what) const {                     \
    return CheckList(*this, node, what);                                                       \
  }                                                                                            \
  Result<std::string> Reader::String(const N& node, std::string_view what) const {            \
    return ReadString(*this, node, what);                                                      \
  }                                                                                            \
  Result<bool> Reader::Bool(const N& node, std::string_view what) const {                     \
    return ReadBool(*this, node, what);                                                        \
  }                                                                                            \
  Result<int64_t> Reader::Int(const N& node, std::string_view what) const {                   \
    return ReadInt(*this, node, what);                                                         \
  }                                                                                            \
  Result<double> Reader::Number(const N& node, std::string_view what) const {                 \
    return ReadNumber(*this, node, what);                                                      \
  }

KILN_READER_OVERLOADS(Node)
KILN_READER_OVERLOADS(YAML::Node)
#undef KILN_READER_OVERLOADS

}  // namespace kiln::yaml
