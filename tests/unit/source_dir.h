#pragma once

#include <filesystem>

namespace kiln {

// The repository's root, where the tests find examples/, policies/ and tools/.
std::filesystem::path KilnSourceDir();

}  // namespace kiln
