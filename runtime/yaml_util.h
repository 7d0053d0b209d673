#pragma once
// Strict YAML reading shared by the scheduler.conf and scenario loaders: every value is read
// through a helper that knows the file and the node's position, so every error a user can cause
// names the file, the 1-based line and column, and the offending text.
//
// Two document types can be read: yaml::Node (runtime/yaml_doc.h: libyaml, compact, used for
// scenarios, where documents are large) and YAML::Node (yaml-cpp: small files, and the places
// that edit or emit YAML). The Reader's checks and messages are the same for both.
//
// Only the loaders include this header; it pulls in yaml-cpp.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"
#include "runtime/yaml_doc.h"

namespace kiln::yaml {

// Where `node` was written (yaml-cpp marks are 0-based; ours are 1-based). A node that was not in
// the document (a missing key) has no mark and yields line 0.
SourceLocation Where(const YAML::Node& node, const SourceName& file);
SourceLocation Where(const Node& node, const SourceName& file);

// Parses a whole document. Syntax errors carry yaml-cpp's position and message.
Result<YAML::Node> Load(std::string_view text, const std::string& file);

// The closest candidate to `word` (case-insensitive edit distance small relative to its length),
// or "" when none is close enough to suggest.
std::string Closest(std::string_view word, const std::vector<std::string_view>& candidates);

// "; did you mean `x`?" or "".
std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);

// True for a scalar written in quotes (its value is a string whatever it looks like).
bool IsQuoted(const YAML::Node& node);
inline bool IsQuoted(const Node& node) { return node.IsQuoted(); }

// A short human name for a node's kind: "a map", "a list", "a string", "null".
std::string KindName(const YAML::Node& node);
std::string KindName(const Node& node);

// Reads one file's nodes. `file` is copied into every error. Each check has an overload for
// yaml::Node and one for YAML::Node.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}
  // Shared by every location the reader makes (SourceName).
  const SourceName& file() const { return file_; }

  template <typename N>
  Error Fail(const N& at, std::string message) const {
    return Error{std::move(message), Where(at, file_)};
  }

  // `node` must be a map (null counts as empty when allow_null) whose keys are all in `allowed`
  // and appear once. `what` names the object in messages ("queue", "plugin entry").
  Status ExpectMap(const Node& node, std::string_view what,
                   const std::vector<std::string_view>& allowed, bool allow_null = false) const;
  Status ExpectMap(const YAML::Node& node, std::string_view what,
                   const std::vector<std::string_view>& allowed, bool allow_null = false) const;
  // `node` must be a map without duplicate keys; any key is allowed.
  Status ExpectAnyMap(const Node& node, std::string_view what, bool allow_null = true) const;
  Status ExpectAnyMap(const YAML::Node& node, std::string_view what, bool allow_null = true) const;
  // `node` must be a list (null counts as empty).
  Status ExpectList(const Node& node, std::string_view what) const;
  Status ExpectList(const YAML::Node& node, std::string_view what) const;

  // Scalars. `what` names the field ("`weight`"); the error quotes the offending text.
  Result<std::string> String(const Node& node, std::string_view what) const;
  Result<std::string> String(const YAML::Node& node, std::string_view what) const;
  Result<bool> Bool(const Node& node, std::string_view what) const;
  Result<bool> Bool(const YAML::Node& node, std::string_view what) const;
  Result<int64_t> Int(const Node& node, std::string_view what) const;
  Result<int64_t> Int(const YAML::Node& node, std::string_view what) const;
  Result<double> Number(const Node& node, std::string_view what) const;
  Result<double> Number(const YAML::Node& node, std::string_view what) const;

 private:
  SourceName file_;
};

// Parses YAML booleans as Go's yaml.v2 does for plain scalars (true/false/yes/no/on/off in
// their usual spellings), so Volcano confs load unchanged. nullopt when `text` is not one.
std::optional<bool> ParseBoolText(std::string_view text);
// Go's strconv.ParseBool (1/t/T/TRUE/true/True and their false twins), which Volcano applies to
// string values: Arguments.GetBool, and the preemptable annotation and label.
std::optional<bool> ParseGoBool(std::string_view text);
// A plain integer (decimal, optional sign); nullopt otherwise or on overflow.
std::optional<int64_t> ParseIntText(std::string_view text);
// A plain decimal/float number; nullopt otherwise.
std::optional<double> ParseFloatText(std::string_view text);

}  // namespace kiln::yaml
