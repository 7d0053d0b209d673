#pragma once
// A host function JIT'd code may call, by its IR-level name. LLVM-free so that the tables of
// intrinsics (codegen runtime, stdlib natives) can be declared without LLVM headers.

#include <string>

namespace kiln {

struct HostSymbol {
  std::string name;
  void* address = nullptr;
};

}  // namespace kiln
