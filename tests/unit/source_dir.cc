// The one test source compiled with KILN_SOURCE_DIR: the absolute path of the checkout differs
// between clones, and a definition on every test file made each of them miss ccache in a fresh
// clone (CI). The other test files ask for the path here.
#include "tests/unit/source_dir.h"

#include <algorithm>

namespace kiln {

std::filesystem::path KilnSourceDir() { return KILN_SOURCE_DIR; }

std::vector<std::filesystem::path> AllScenarioFiles() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"tests/scenarios", "tests/volcano-compat", "examples"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(KilnSourceDir() / dir))
      if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln
