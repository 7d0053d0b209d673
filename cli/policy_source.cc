#include "cli/policy_source.h"

#include <fstream>
#include <sstream>

#include "compiler/builtin_policies.h"

namespace kiln::cli {

Result<SourceFile> LoadPolicySource(const std::string& path) {
  if (std::ifstream in(path, std::ios::binary); in) {
    std::ostringstream text;
    text << in.rdbuf();
    return SourceFile{path, text.str()};
  }
  if (const BuiltinPolicy* b = FindBuiltinPolicy(path))
    return SourceFile{std::string(b->path), std::string(b->text)};
  return Error{"cannot read the file (and no built-in policy has that name)", SourceLocation{path}};
}

}  // namespace kiln::cli
