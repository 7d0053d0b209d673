#pragma once
// A policy named on the command line (kiln check, compile, warm-cache): a file, or when no file
// has that name, the built-in policy of that name ("gang" checks the embedded copy).

#include <string>

#include "compiler/source.h"
#include "runtime/status.h"

namespace kiln::cli {

// The file's text, or the built-in's; an Error at `path` when neither exists.
Result<SourceFile> LoadPolicySource(const std::string& path);

}  // namespace kiln::cli
