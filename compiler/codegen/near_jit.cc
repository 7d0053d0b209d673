#include "compiler/codegen/near_jit.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/Support/Error.h>

#include <cstring>
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/near_code_memory.h"
#include "compiler/frontend.h"
#include "compiler/host/host_symbols.h"
#include "compiler/jit/kiln_jit.h"

namespace kiln {

Result<NearJitPolicy> CompileNearHostForMeasurement(const SourceFile& source) {
  auto fail = [&](std::string what) {
    return Error{"near JIT: " + source.path + ": " + what, SourceLocation{source.path, 0, 0}};
  };
  InitializeNativeTargetOnce();
  FrontendResult fe = RunFrontend(source);
  if (!fe.ok()) return fail("front end failed");
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return fail(llvm::toString(jtmb.takeError()));
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*jtmb))
                 .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es,
                                                  const llvm::Triple&) {
                   return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(es, [] {
                     return std::make_unique<llvm::SectionMemoryManager>(&NearHostCodeMapper());
                   });
                 })
                 .create();
  if (!jit) return fail(llvm::toString(jit.takeError()));
  auto lowered = LowerPolicy(*fe.policy, (*jit)->getDataLayout());
  if (!lowered.ok()) return lowered.error();
  if (lowered->args_size > 0) return fail("policies with arguments are not supported");
  if (auto err = KilnJit::Optimize(*lowered->module)) return fail(llvm::toString(std::move(err)));
  lowered->module->setTargetTriple((*jit)->getTargetTriple().str());
  std::vector<HostSymbol> host = AllHostSymbols();
  host.push_back({"memcpy", reinterpret_cast<void*>(&std::memcpy)});
  host.push_back({"memmove", reinterpret_cast<void*>(&std::memmove)});
  host.push_back({"memset", reinterpret_cast<void*>(&std::memset)});
  host.push_back({"memcmp", reinterpret_cast<void*>(&std::memcmp)});
  llvm::orc::SymbolMap symbols;
  for (const HostSymbol& h : host)
    symbols[(*jit)->mangleAndIntern(h.name)] = llvm::JITEvaluatedSymbol(
        llvm::pointerToJITTargetAddress(h.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  if (auto err = (*jit)->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return fail(llvm::toString(std::move(err)));
  std::vector<ExtensionPoint> points = lowered->points;
  if (auto err = (*jit)->addIRModule(
          llvm::orc::ThreadSafeModule(std::move(lowered->module), std::move(lowered->context))))
    return fail(llvm::toString(std::move(err)));
  NearJitPolicy out;
  out.near = true;
  for (ExtensionPoint p : points) {
    auto addr = (*jit)->lookup(std::string(kThunkPrefix) + std::string(Info(p).handler));
    if (!addr) return fail(llvm::toString(addr.takeError()));
    void* fn = addr->toPtr<void*>();
    out.near = out.near && IsNearHostCode(fn);
    out.handlers.emplace_back(p, reinterpret_cast<void (*)()>(fn));
  }
  auto init = (*jit)->lookup(kStateInitSymbol);
  if (!init) return fail(llvm::toString(init.takeError()));
  out.state_init = init->toPtr<void (*)(PolicyContext*)>();
  out.jit = std::shared_ptr<llvm::orc::LLJIT>(std::move(*jit));
  return out;
}

}  // namespace kiln
