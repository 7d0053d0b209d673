#pragma once
// Every host function JIT'd policy code may call, gathered from the tables that define them:
// the codegen runtime (stdlib/runtime_support.h), the ABI field accessors
// (KILN_ABI_FIELDS in runtime/abi.h) and the standard library's rows (stdlib/library.h: natives,
// host functions, session fields), plus the victim-mask helper below. Nothing else is visible to
// policies.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/jit/host_symbol.h"
#include "runtime/abi.h"
#include "stdlib/host_functions.h"

namespace kiln {

std::vector<HostSymbol> AllHostSymbols();

}  // namespace kiln

extern "C" {
// selected[i] = 1 for every candidates[i] that appears in chosen (victim lists → session masks).
void kiln_host_mark_selected(const void* const* candidates, int64_t n, const void* const* chosen,
                             int64_t m, uint8_t* selected);
}
