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

int BadInput(const Error& e) {
  PrintError(e);
  return kExitBadInput;
}

void EndCommand(int code) {
  if (code != kExitOk) throw CLI::RuntimeError(code);
}

}  // namespace kiln::cli
