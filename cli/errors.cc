#include "cli/errors.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <sstream>

#include "simulator/scenario.h"  // ReadTextFile

namespace kiln::cli {

std::string FormatError(const Error& e) {
  std::string out = e.Format() + "\n";
  if (e.where.file.empty() || e.where.line <= 0) return out;
  auto text = ReadTextFile(e.where.file);
  if (!text) return out;
  std::istringstream in(*text);
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) {
    if (i != e.where.line) continue;
    out += fmt::format("  {} | {}\n", e.where.line, line);
    if (e.where.column > 0) {
      std::string pad(fmt::format("  {} | ", e.where.line).size(), ' ');
      for (int c = 1; c < e.where.column && c <= static_cast<int>(line.size()); ++c)
        pad += line[c - 1] == '\t' ? '\t' : ' ';
      out += pad + "^\n";
    }
    break;
  }
  return out;
}

void PrintError(const Error& e) { std::fputs(FormatError(e).c_str(), stderr); }

void PrintErrorCount(int errors) {
  if (errors > 0) fmt::print(stderr, "{} error{} generated.\n", errors, errors == 1 ? "" : "s");
}

int BadInput(const Error& e) {
  PrintError(e);
  return kExitBadInput;
}

Status CheckChoice(std::string_view option, const std::string& value,
                   std::initializer_list<std::string_view> choices) {
  std::string list;
  size_t i = 0;
  for (std::string_view c : choices) {
    if (c == value) return Status::Ok();
    list += fmt::format("{}{}", i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ", c);
    ++i;
  }
  return Error{fmt::format("{} must be {}, got `{}`", option, list, value), {}};
}

void EndCommand(int code) {
  if (code != kExitOk) throw CLI::RuntimeError(code);
}

}  // namespace kiln::cli
