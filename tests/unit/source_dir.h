#pragma once

#include <filesystem>
#include <vector>

namespace kiln {

// The repository's root, where the tests find examples/, policies/ and tools/.
std::filesystem::path KilnSourceDir();

// Every scenario file of the repository (tests/scenarios, tests/volcano-compat, examples), in
// path order: what the round-trip tests run through each cluster source.
std::vector<std::filesystem::path> AllScenarioFiles();

}  // namespace kiln
