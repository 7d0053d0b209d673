// libFuzzer target for the policy front end: parse + check + format diagnostics. Any crash,
// sanitizer report, or uncaught exception is a bug; diagnostics are the expected outcome for
// garbage input.
//
// Built with -fsanitize=fuzzer when KILN_FUZZ=ON (clang-16). Otherwise the same file is built
// with a small main() that replays a corpus (files or directories given as arguments), so CI runs
// the corpus through the front end in every build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/frontend.h"

// KILN_FUZZ_ENTRY renames the entry point when the replay binary links every target.
#ifndef KILN_FUZZ_ENTRY
#define KILN_FUZZ_ENTRY LLVMFuzzerTestOneInput
#endif
extern "C" int KILN_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  kiln::SourceFile source{"fuzz.policy", std::string(reinterpret_cast<const char*>(data), size)};
  kiln::FrontendResult result = kiln::RunFrontend(source);
  std::string text = kiln::FormatDiagnostics(result.diagnostics, source);
  // A rejected input must say why: an error-free failure would be a silent bug.
  if (!result.ok() && !result.diagnostics.HasErrors()) __builtin_trap();
  if (result.ok()) (void)kiln::DumpAst(*result.policy, /*typed=*/true);
  return 0;
}

