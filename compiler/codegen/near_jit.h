#pragma once
// A policy compiled exactly as PolicyCompiler compiles it (front end, LowerPolicy, the O2
// pipeline, the same host symbols), but linked by a private LLJIT whose code memory comes from
// NearHostCodeMapper (near_code_memory.h). It exists to measure what placing JIT code near the
// binary buys (tests/bench/jit_bench.cc `JitNear*`) before the process-wide JIT adopts the
// mapper; the scheduler never uses it. LLVM-free.

#include <memory>
#include <utility>
#include <vector>

#include "compiler/codegen/policy_context.h"
#include "compiler/source.h"
#include "runtime/extension_points.h"
#include "runtime/status.h"

namespace kiln {

struct NearJitPolicy {
  std::shared_ptr<void> jit;  // keeps the code alive
  std::vector<std::pair<ExtensionPoint, void (*)()>> handlers;  // HandlerFn<point>
  void (*state_init)(PolicyContext*) = nullptr;
  bool near = false;  // every handler landed within rel32 reach of the binary
};

// Policies with `arg` declarations are not supported (the measured ones have none).
Result<NearJitPolicy> CompileNearHostForMeasurement(const SourceFile& source);

}  // namespace kiln
