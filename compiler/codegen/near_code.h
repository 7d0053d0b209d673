#pragma once
// Whether JIT code sits near the host binary (LLVM-free, for tests and diagnostics; the mapper
// that places it there is in near_code_memory.h).

namespace kiln {

// Whether `p` lies within rel32 reach (±2 GiB) of the host binary's code.
bool IsNearHostCode(const void* p);

}  // namespace kiln
