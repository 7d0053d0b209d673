#include "compiler/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace kiln {

Diagnostic& DiagnosticList::Error(SourceRange range, std::string message) {
  items_.push_back({Severity::Error, range, std::move(message), {}});
  return items_.back();
}

Diagnostic& DiagnosticList::Warning(SourceRange range, std::string message) {
  items_.push_back({Severity::Warning, range, std::move(message), {}});
  return items_.back();
}

bool DiagnosticList::HasErrors() const { return ErrorCount() > 0; }

int DiagnosticList::ErrorCount() const {
  return static_cast<int>(std::count_if(items_.begin(), items_.end(), [](const Diagnostic& d) {
    return d.severity == Severity::Error;
  }));
}

void DiagnosticList::Sort() {
  std::stable_sort(items_.begin(), items_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.range.begin < b.range.begin;
  });
  // ANTLR's recovery can report the same error twice at one token.
  items_.erase(std::unique(items_.begin(), items_.end(),
                           [](const Diagnostic& a, const Diagnostic& b) {
                             return a.range == b.range && a.message == b.message;
                           }),
               items_.end());
}

namespace {

std::string_view LineOf(std::string_view text, int line) {
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) return {};
    pos = nl + 1;
  }
  size_t end = text.find('\n', pos);
  std::string_view out = text.substr(pos, end == std::string_view::npos ? text.npos : end - pos);
  if (!out.empty() && out.back() == '\r') out.remove_suffix(1);
  return out;
}

const char* SeverityName(Severity s) {
  static constexpr const char* kNames[] = {"error", "warning", "note"};  // by Severity
  auto i = static_cast<size_t>(s);
  return i < std::size(kNames) ? kNames[i] : "error";
}

void FormatOne(std::string& out, Severity sev, const SourceRange& range, const std::string& msg,
               const SourceFile& source) {
  if (range.valid()) {
    out += fmt::format("{}:{}:{}: {}: {}\n", source.path, range.begin.line, range.begin.column,
                       SeverityName(sev), msg);
  } else {
    out += fmt::format("{}: {}: {}\n", source.path, SeverityName(sev), msg);
    return;
  }
  std::string_view line = LineOf(source.text, range.begin.line);
  // Very long lines (minified or fuzzed input) are cut so the output stays readable.
  constexpr size_t kMaxShown = 200;
  if (line.size() > kMaxShown) line = line.substr(0, kMaxShown);
  std::string gutter = fmt::format("{:>5}", range.begin.line);
  out += fmt::format("{} | {}\n", gutter, line);
  int first = std::max(1, range.begin.column);
  int last = range.end.line == range.begin.line ? std::max(first, range.end.column)
                                                 : static_cast<int>(line.size());
  last = std::min<int>(last, std::max<int>(first, static_cast<int>(line.size())));
  std::string marker;
  for (int c = 1; c < first; ++c) {
    size_t i = static_cast<size_t>(c - 1);
    marker += (i < line.size() && line[i] == '\t') ? '\t' : ' ';
  }
  marker += '^';
  for (int c = first + 1; c <= last; ++c) marker += '~';
  out += fmt::format("{} | {}\n", std::string(gutter.size(), ' '), marker);
}

}  // namespace

std::string FormatDiagnostics(const DiagnosticList& diags, const SourceFile& source) {
  std::string out;
  for (const auto& d : diags.items()) {
    FormatOne(out, d.severity, d.range, d.message, source);
    for (const auto& n : d.notes) FormatOne(out, Severity::Note, n.range, n.message, source);
  }
  return out;
}

void PrintDiagnostics(const DiagnosticList& diags, const SourceFile& source) {
  std::string text = FormatDiagnostics(diags, source);
  std::fwrite(text.data(), 1, text.size(), stderr);
}

namespace {
size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: a transposition ("idel" → "idle") is one edit.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}
}  // namespace

std::string SuggestName(std::string_view name, const std::vector<std::string>& candidates) {
  if (name.size() > 64) return "";
  size_t best = static_cast<size_t>(-1);
  std::string best_name;
  for (const auto& c : candidates) {
    if (c == name || c.size() > 64) continue;
    size_t d = EditDistance(name, c);
    if (d < best) {
      best = d;
      best_name = c;
    }
  }
  size_t allowed = std::max<size_t>(1, name.size() / 3);
  return best <= allowed ? best_name : "";
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string s = SuggestName(name, candidates);
  return s.empty() ? "" : fmt::format("; did you mean `{}`?", s);
}

}  // namespace kiln
