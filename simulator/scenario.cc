// Strict scenario loader (scenario-format.md). Every object is a map whose keys are checked
// against the contract; each value is read through yaml::Reader so errors carry file:line:col.
// Cross references (pod → group/node, group → queue, queue → parent, expect → pods/nodes/groups)
// are checked after everything is read, so the order objects are listed in does not matter.
// This file reads the document's top level; scenario_loader.h lists where the rest is read.

#include "simulator/scenario.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "simulator/scenario_loader.h"

namespace kiln {

namespace scenario_loader {

Status Loader::Load(const yaml::Node& root, std::string_view text, ScenarioSpec& spec) {
  if (root.IsNull()) return Error{"scenario is empty", SourceLocation{r_.file(), 1, 0}};
  TRY(r_.ExpectMap(root, "scenario",
                   {"name", "conf", "now", "cluster", "expect", "replay", "calls", "notes",
                    "source"}));
  spec.file = r_.file();
  std::string now_text(kDefaultNow);
  yaml::Node now_node;
  for (const auto& kv : root) {
    std::string_view k = kv.first.Scalar();
    const yaml::Node& v = kv.second;
    if (k == "name") {
      ASSIGN_OR_RETURN(spec.name, Str(v, "`name`"));
    } else if (k == "conf") {
      ASSIGN_OR_RETURN(spec.conf_text, Str(v, "`conf`"));
      spec.has_conf = true;
      spec.conf_where = yaml::Where(v, r_.file());
      // A block scalar (`conf: |`) starts on the line after its indicator; find its indentation
      // in the source so conf errors can be reported at scenario lines and columns.
      yaml::Mark m = v.GetMark();
      if (m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() &&
          (text[m.pos] == '|' || text[m.pos] == '>')) {
        size_t eol = text.find('\n', m.pos);
        if (eol != std::string_view::npos) {
          size_t line_start = eol + 1;
          // Skip blank lines before the first content line.
          while (line_start < text.size()) {
            size_t end = text.find('\n', line_start);
            std::string_view l = text.substr(line_start, end == std::string_view::npos ? text.npos : end - line_start);
            if (l.find_first_not_of(" \t\r") != std::string_view::npos) {
              spec.conf_indent = static_cast<int>(l.find_first_not_of(' '));
              break;
            }
            if (end == std::string_view::npos) break;
            line_start = end + 1;
          }
          spec.conf_first_line = m.line + 2;
        }
      }
    } else if (k == "now") {
      ASSIGN_OR_RETURN(now_text, Str(v, "`now`"));
      now_node = v;
    } else if (k == "cluster") {
      TRY(ReadCluster(v, spec.cluster));
    } else if (k == "expect") {
      spec.expect.emplace();
      TRY(ReadExpect(v, *spec.expect));
    } else if (k == "replay") {
      spec.replay.emplace();
      TRY(ReadReplay(v, *spec.replay));
    } else if (k == "calls") {
      TRY(ReadCalls(v, "`calls`", false, spec.calls));
    } else if (k == "notes") {
      ASSIGN_OR_RETURN(spec.notes, Str(v, "`notes`"));
    } else if (k == "source") {
      ASSIGN_OR_RETURN(spec.source, Str(v, "`source`"));
    }
  }
  // A zero `now` is a clock nobody set: the default one.
  if (IsZeroTimestamp(now_text)) now_text = kDefaultNow;
  auto now = ParseTimestamp(now_text);
  if (!now) return r_.Fail(now_node, fmt::format("`now`: {}", now.error().message));
  spec.now = *now;
  if (spec.name.empty()) {
    // Reports name scenarios; fall back to the file's base name.
    const std::string& file = r_.file();
    std::string base = file.substr(file.find_last_of('/') + 1);
    spec.name = base.substr(0, base.rfind('.'));
  }
  return Status::Ok();
}

Status Loader::Finish(ScenarioSpec& spec) {
  TRY(ApplyDefaults(spec));
  TRY(CrossCheck(spec));
  return Status::Ok();
}

}  // namespace scenario_loader


Result<ScenarioSpec> ParseScenario(std::string_view text, std::string file) {
  ScenarioSpec spec;
  scenario_loader::Loader loader(file);
  {
    auto doc = yaml::Document::Parse(text, file);
    if (!doc) return doc.error();
    if (Status s = loader.Load(doc->root(), text, spec); !s) return s.error();
  }
  if (Status s = loader.Finish(spec); !s) return s.error();
  return spec;
}

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("cannot read {}: {}", path, std::strerror(errno)), SourceLocation{}};
  // A regular file is read at once into a string of its size (a stringstream would copy a 12 MB
  // trace twice); anything else (a pipe) through the stream.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    auto size = std::filesystem::file_size(path, ec);
    if (!ec) {
      std::string text(size, '\0');
      in.read(text.data(), static_cast<std::streamsize>(size));
      text.resize(static_cast<size_t>(in.gcount()));
      if (in) {  // the file grew since it was measured
        std::ostringstream rest;
        rest << in.rdbuf();
        text += rest.str();
      }
      return text;
    }
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<ScenarioSpec> LoadScenarioFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text) return text.error();
  return ParseScenario(*text, path);
}

Error MapConfError(const ScenarioSpec& spec, Error error) {
  error.where.file = spec.file;
  if (spec.conf_first_line > 0 && error.where.line > 0) {
    error.where.line += spec.conf_first_line - 1;
    if (error.where.column > 0) error.where.column += spec.conf_indent;
  } else {
    // A flow or quoted conf string: only the `conf` key's position is meaningful.
    error.where.line = spec.conf_where.line;
    error.where.column = spec.conf_where.column;
  }
  return error;
}

}  // namespace kiln
