#pragma once
// Source text and positions shared by the parser, the AST and diagnostics.

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

// A policy's text and the name used for it in diagnostics ("policies/gang.policy").
struct SourceFile {
  std::string path;
  std::string text;
};

// 1-based line/column of a character. Columns count code points (tabs count as one).
struct SourcePos {
  int line = 0;
  int column = 0;
  friend bool operator==(const SourcePos&, const SourcePos&) = default;
  friend auto operator<=>(const SourcePos&, const SourcePos&) = default;
};

// [begin, end] inclusive of the last character, so a one-character token has begin == end.
struct SourceRange {
  SourcePos begin;
  SourcePos end;
  bool valid() const { return begin.line > 0; }
  friend bool operator==(const SourceRange&, const SourceRange&) = default;
};

// The range spanning both a and b (either may be invalid).
inline SourceRange Join(const SourceRange& a, const SourceRange& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return {a.begin < b.begin ? a.begin : b.begin, a.end < b.end ? b.end : a.end};
}

}  // namespace kiln
