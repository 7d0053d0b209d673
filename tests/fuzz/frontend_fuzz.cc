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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::SourceFile source{"fuzz.policy", std::string(reinterpret_cast<const char*>(data), size)};
  kiln::FrontendResult result = kiln::RunFrontend(source);
  std::string text = kiln::FormatDiagnostics(result.diagnostics, source);
  // A rejected input must say why: an error-free failure would be a silent bug.
  if (!result.ok() && !result.diagnostics.HasErrors()) __builtin_trap();
  if (result.ok()) (void)kiln::DumpAst(*result.policy, /*typed=*/true);
  return 0;
}

#ifdef KILN_FUZZ_REPLAY_MAIN
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) inputs.push_back(e.path());
    } else {
      inputs.push_back(p);
    }
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}
#endif
