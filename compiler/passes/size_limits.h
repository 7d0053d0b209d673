#pragma once
// Bounds on a policy's size, which bound the work and memory of compiling it (issue 28: a valid
// 1 MB policy took 65 s and 1.15 GB to compile at tier 0, and longer at O2, on the thread that
// loads confs). The source size is checked before lexing; the rest right after parsing, before
// the semantic passes and codegen (compiler/passes/check_size.cc), each with a located error.
// docs/language.md "Limits" lists them; `kiln --policy-max-...` flags change the defaults.

#include <cstddef>
#include <cstdint>

namespace kiln {

struct SizeLimits {
  // Bytes of policy source (256 KiB). The largest shipped policy is about 22 KB. The node limits
  // below bound the work after parsing; this one bounds lexing and parsing, whose parse trees
  // take about 600 bytes of memory per byte of source (a 1 MB policy: 560 MB to reject).
  size_t max_source_bytes = 256 << 10;
  // Top-level declarations (consts, args, records, state, fns, handlers). Shipped: at most 50.
  int64_t max_declarations = 1000;
  // Statements and expressions in one `fn` or handler body. Codegen lowers a body into one LLVM
  // function, and LLVM's work on a function grows faster than its size. Shipped: at most 552.
  int64_t max_function_nodes = 20000;
  // Statements and expressions in the whole policy (bodies, initialisers, defaults). Shipped: at
  // most 1,694.
  int64_t max_policy_nodes = 100000;
};

// The process-wide defaults every FrontendLimits starts from (`kiln --policy-max-source-bytes`,
// ..., set once at startup before anything compiles).
SizeLimits DefaultSizeLimits();
void SetDefaultSizeLimits(const SizeLimits& limits);

}  // namespace kiln
