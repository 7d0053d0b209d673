#pragma once
// LLVM-free face of the JIT, for code that must not see LLVM headers (tests, the CLI): load a
// module given as LLVM IR text, look its functions up, drop it. The plugin host uses KilnJit
// (kiln_jit.h) directly with modules built by codegen.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/jit/host_symbol.h"
#include "runtime/status.h"

namespace kiln {

class JitEngine {
 public:
  // `host_symbols` are all the external functions loaded code may call.
  static Result<std::unique_ptr<JitEngine>> Create(std::vector<HostSymbol> host_symbols);
  ~JitEngine();

  // Parses `ir_text` (textual LLVM IR) and adds it as unit `unit_name`; returns a handle.
  // Parse errors and verifier failures come back as errors naming the unit and line.
  Result<int> LoadIrText(std::string_view ir_text, std::string unit_name);

  // Address of `symbol` in unit `handle` (compiles the unit on first use).
  Result<void*> Lookup(int handle, std::string_view symbol);

  // Drops a unit's code; later lookups in it fail.
  Status Remove(int handle);

  int LiveUnits() const;

 private:
  struct Impl;
  explicit JitEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
