#pragma once
// Makes JIT-compiled policy code visible to `perf`.
//
// perf cannot name code that no file on disk describes; by convention it reads
// /tmp/perf-<pid>.map ("<start hex> <size hex> <name>" per line) for such addresses, which is
// what V8's --perf-basic-prof and LuaJIT write. With KILN_PERF_MAP=1 in the environment, every
// policy object the JIT loads adds one line per function, named `<policy>::<handler>` (the
// handler thunks `kiln.on.predicate` become `predicates::predicate`), so `perf report` attributes
// samples to policies and handlers instead of bare addresses. KILN_PERF_JITDUMP=1 registers LLVM's
// own jitdump listener instead (for `perf record -k 1` + `perf inject --jit`, which also keeps
// the code bytes for annotation).
//
// Both are off by default: the map file grows with every compiled policy version and is never
// cleaned up by perf.

#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class JITEventListener;
}

namespace kiln {

// The listeners the environment asks for (none when neither variable is set). They live as long
// as the process: the JIT keeps raw pointers to them.
std::vector<llvm::JITEventListener*> PerfListenersFromEnvironment();

// `kiln.on.predicate` in module `predicates` → `predicates::predicate`; other symbols keep their
// name under the policy (`predicates::kiln.map.find_i`).
std::string PerfSymbolName(std::string_view module_file, std::string_view symbol);

}  // namespace kiln
