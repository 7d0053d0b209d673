#include "compiler/jit/jit_engine.h"

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <map>

#include "compiler/jit/kiln_jit.h"

namespace kiln {

namespace {
std::string ToString(llvm::Error err) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << err;
  return os.str();
}
}  // namespace

struct JitEngine::Impl {
  std::unique_ptr<KilnJit> jit;
  std::map<int, JitUnit> units;
  int next_handle = 1;
};

JitEngine::JitEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

JitEngine::~JitEngine() {
  for (auto& [handle, unit] : impl_->units) llvm::consumeError(impl_->jit->Remove(unit));
}

Result<std::unique_ptr<JitEngine>> JitEngine::Create(std::vector<HostSymbol> host_symbols) {
  auto jit = KilnJit::Create(std::move(host_symbols));
  if (!jit) return Error{"cannot create the JIT: " + ToString(jit.takeError()), {}};
  auto impl = std::make_unique<Impl>();
  impl->jit = std::move(*jit);
  return std::unique_ptr<JitEngine>(new JitEngine(std::move(impl)));
}

Result<int> JitEngine::LoadIrText(std::string_view ir_text, std::string unit_name) {
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  auto module = llvm::parseAssemblyString(llvm::StringRef(ir_text.data(), ir_text.size()), diag,
                                          *context);
  if (!module)
    return Error{diag.getMessage().str(), SourceLocation{unit_name, diag.getLineNo(),
                                                         diag.getColumnNo() + 1}};
  auto unit = impl_->jit->AddModule(
      llvm::orc::ThreadSafeModule(std::move(module), std::move(context)), unit_name);
  if (!unit) return Error{ToString(unit.takeError()), SourceLocation{unit_name}};
  int handle = impl_->next_handle++;
  impl_->units.emplace(handle, std::move(*unit));
  return handle;
}

Result<void*> JitEngine::Lookup(int handle, std::string_view symbol) {
  auto it = impl_->units.find(handle);
  if (it == impl_->units.end()) return Error{fmt::format("no JIT unit with handle {}", handle), {}};
  auto addr = impl_->jit->Lookup(it->second, llvm::StringRef(symbol.data(), symbol.size()));
  if (!addr) return Error{ToString(addr.takeError()), SourceLocation{it->second.name}};
  return *addr;
}

Status JitEngine::Remove(int handle) {
  auto it = impl_->units.find(handle);
  if (it == impl_->units.end()) return Error{fmt::format("no JIT unit with handle {}", handle), {}};
  llvm::Error err = impl_->jit->Remove(it->second);
  impl_->units.erase(it);
  if (err) return Error{ToString(std::move(err)), {}};
  return Status::Ok();
}

int JitEngine::LiveUnits() const { return static_cast<int>(impl_->units.size()); }

}  // namespace kiln
