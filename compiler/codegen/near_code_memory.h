#pragma once
// JIT code memory placed near the host binary (within a rel32 reach of the scheduler's code).
//
// Why: the session calls every handler through a function pointer, and handlers call back into
// the runtime (kiln_job_*, kiln_rt_*). When the JIT's code sits in an ordinary anonymous mapping
// (0x7f…, terabytes away from the PIE binary at 0x55…), each of those calls and returns crosses a
// >4 GiB distance, which this host's branch predictors handle measurably worse: the same 22-byte
// priority job_order body costs ~2.2 ns per call there and ~1.4 ns when mapped within 64 MiB of
// the binary (tests/bench/jit_bench.cc numbers, AMD EPYC). Placing the code near the binary
// removes that penalty for every handler and host call at once.
//
// Use: an RTDyld object layer whose SectionMemoryManagers take NearHostCodeMapper():
//   builder.setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
//     return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(es, [] {
//       return std::make_unique<llvm::SectionMemoryManager>(&kiln::NearHostCodeMapper());
//     });
//   });
// When no address near the binary is free the mapper falls back to LLVM's default placement:
// only slower, never wrong.

#include <llvm/ExecutionEngine/SectionMemoryManager.h>

#include "compiler/codegen/near_code.h"

namespace kiln {

// Process-wide, thread-safe; never destroyed (JIT memory may be released during static
// destruction).
llvm::SectionMemoryManager::MemoryMapper& NearHostCodeMapper();

// The same region, but never LLVM's far placement: an allocation that finds no room near the
// binary fails. For code compiled with the small code model (tier 0, kiln_jit.cc), whose PC32
// relocations and direct calls must reach the binary and the unit's other sections.
llvm::SectionMemoryManager::MemoryMapper& StrictNearHostCodeMapper();


}  // namespace kiln
