#pragma once
// Diagnostics are data: a range, a severity, a message and notes. Passes append to a
// DiagnosticList; the driver sorts them by position and prints them with the source line and
// carets, like a C compiler:
//
//   policies/x.policy:12:17: error: unknown field `idel` on Node; did you mean `idle`?
//      12 |   let free = node.idel;
//         |                   ^~~~

#include <string>
#include <string_view>
#include <vector>

#include "compiler/source.h"

namespace kiln {

enum class Severity { Error, Warning, Note };

struct DiagnosticNote {
  SourceRange range;
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
  std::vector<DiagnosticNote> notes;
};

class DiagnosticList {
 public:
  Diagnostic& Error(SourceRange range, std::string message);
  Diagnostic& Warning(SourceRange range, std::string message);

  bool HasErrors() const;
  int ErrorCount() const;
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }

  // Stable sort by position (begin line, then column); notes stay with their diagnostic.
  void Sort();

  // A pass can stop early when a file is hopeless; ErrorLimit keeps the output readable.
  static constexpr int kErrorLimit = 50;

 private:
  std::vector<Diagnostic> items_;
};

// "file:line:col: error: message", then the source line with carets under the range, then the
// notes in the same form. `source` is the text the ranges refer to.
std::string FormatDiagnostics(const DiagnosticList& diags, const SourceFile& source);
// Writes FormatDiagnostics to stderr (or the given stream's FILE*).
void PrintDiagnostics(const DiagnosticList& diags, const SourceFile& source);

// The candidate closest to `name` by edit distance, or "" when none is close enough to be a
// plausible typo (distance ≤ max(1, len/3)).
std::string SuggestName(std::string_view name, const std::vector<std::string>& candidates);

// ", did you mean `x`?" or "" — for appending to a message.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace kiln
