#pragma once
// Whether JIT code sits near the host binary (LLVM-free, for tests and diagnostics; the mapper
// that places it there is in near_code_memory.h).

#include <cstddef>

namespace kiln {

// Whether `p` lies within rel32 reach (±2 GiB) of the host binary's code.
bool IsNearHostCode(const void* p);

// Whether `bytes` more fit in the near-code region and no mapping has yet failed to find room
// there: the tier-0 compiler's test before choosing the small code model (kiln_jit.cc).
bool NearHostCodeHasRoom(size_t bytes);

// For tests: `bytes` of read-write memory from the strict near-code mapper (near_code_memory.h),
// nullptr when it refuses; release with ReleaseNearHostCodeForTesting.
void* MapStrictNearHostCodeForTesting(size_t bytes);
void ReleaseNearHostCodeForTesting(void* p, size_t bytes);

}  // namespace kiln
