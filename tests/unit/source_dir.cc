// The one test source compiled with KILN_SOURCE_DIR: the absolute path of the checkout differs
// between clones, and a definition on every test file made each of them miss ccache in a fresh
// clone (CI). The other test files ask for the path here.
#include "tests/unit/source_dir.h"

namespace kiln {

std::filesystem::path KilnSourceDir() { return KILN_SOURCE_DIR; }

}  // namespace kiln
