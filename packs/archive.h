#pragma once
// The `.kpack` container: a tar archive compressed with zstd, read and written with libarchive
// (kept out of this header). Writing is deterministic (sorted entries, zero times and owners,
// mode 0644) so building the same pack twice gives the same bytes. Reading trusts nothing: it
// refuses absolute paths, `..`, links and devices, duplicate entries, and sizes past the limits,
// before any byte of a refused entry is used.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace kiln::packs {

// path inside the pack -> contents
using PackFiles = std::map<std::string, std::string>;

struct ArchiveLimits {
  size_t max_entries = 1024;
  size_t max_file_bytes = 4 << 20;    // one policy or scenario: 4 MiB
  size_t max_total_bytes = 32 << 20;  // everything unpacked: 32 MiB (a zstd bomb stops here)
};

// Unpacks `bytes` (a .kpack); `name` is used in errors ("team-fairness.kpack: entry `../x`: ...").
Result<PackFiles> ReadPackArchive(std::string_view bytes, const std::string& name,
                                  const ArchiveLimits& limits = {});

// Packs `files` into .kpack bytes.
Result<std::string> WritePackArchive(const PackFiles& files);

}  // namespace kiln::packs
