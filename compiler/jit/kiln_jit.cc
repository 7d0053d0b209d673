#include "compiler/jit/kiln_jit.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <cstring>
#include <mutex>

namespace kiln {

void InitializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

namespace {

// The new-PassManager O2 pipeline, tuned for the host (TTI decides vector widths and costs).
llvm::Error RunO2(llvm::Module& module, llvm::TargetMachine* tm) {
  if (llvm::verifyModule(module, &llvm::errs()))
    return llvm::make_error<llvm::StringError>("invalid IR in module " + module.getName().str(),
                                               llvm::inconvertibleErrorCode());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(module, mam);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>> HostTargetMachine() {
  InitializeNativeTargetOnce();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jtmb.takeError();
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  return jtmb->createTargetMachine();
}

// Calls LLVM may emit on its own (struct copies, zero-initialisation, libm folds); JIT'd code
// gets them from here rather than from a process-wide symbol search.
std::vector<HostSymbol> CompilerRuntimeSymbols() {
  return {
      {"memcpy", reinterpret_cast<void*>(&std::memcpy)},
      {"memmove", reinterpret_cast<void*>(&std::memmove)},
      {"memset", reinterpret_cast<void*>(&std::memset)},
      {"memcmp", reinterpret_cast<void*>(&std::memcmp)},
  };
}

}  // namespace

llvm::Expected<std::unique_ptr<KilnJit>> KilnJit::Create(std::vector<HostSymbol> host_symbols) {
  InitializeNativeTargetOnce();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return jtmb.takeError();
  auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!lljit) return lljit.takeError();
  std::unique_ptr<KilnJit> jit(new KilnJit(std::move(*lljit)));

  auto tm = HostTargetMachine();
  if (!tm) return tm.takeError();
  // The transform owns the TargetMachine; the mutex keeps it safe if ORC ever compiles on
  // several threads.
  auto shared_tm = std::shared_ptr<llvm::TargetMachine>(std::move(*tm));
  auto tm_mutex = std::make_shared<std::mutex>();
  jit->jit_->getIRTransformLayer().setTransform(
      [shared_tm, tm_mutex](llvm::orc::ThreadSafeModule tsm,
                            const llvm::orc::MaterializationResponsibility&)
          -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        std::lock_guard<std::mutex> lock(*tm_mutex);
        llvm::Error err = tsm.withModuleDo(
            [&](llvm::Module& m) { return RunO2(m, shared_tm.get()); });
        if (err) return std::move(err);
        return std::move(tsm);
      });

  auto host = jit->jit_->createJITDylib("kiln.host");
  if (!host) return host.takeError();
  jit->host_ = &*host;
  llvm::orc::SymbolMap symbols;
  for (HostSymbol& s : CompilerRuntimeSymbols()) host_symbols.push_back(std::move(s));
  for (const HostSymbol& s : host_symbols) {
    symbols[jit->jit_->mangleAndIntern(s.name)] = llvm::JITEvaluatedSymbol(
        llvm::pointerToJITTargetAddress(s.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  }
  if (auto err = jit->host_->define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return std::move(err);
  return jit;
}

KilnJit::KilnJit(std::unique_ptr<llvm::orc::LLJIT> jit) : jit_(std::move(jit)) {}

KilnJit::~KilnJit() = default;

llvm::Expected<JitUnit> KilnJit::AddModule(llvm::orc::ThreadSafeModule module,
                                           std::string unit_name) {
  module.withModuleDo([&](llvm::Module& m) {
    m.setDataLayout(jit_->getDataLayout());
    m.setTargetTriple(jit_->getTargetTriple().str());
  });
  auto dylib = jit_->createJITDylib(unit_name);
  if (!dylib) return dylib.takeError();
  // Only the unit itself and the host intrinsics: never the process, never other policies.
  dylib->setLinkOrder({{&*dylib, llvm::orc::JITDylibLookupFlags::MatchAllSymbols},
                       {host_, llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}},
                      /*LinkAgainstThisJITDylibFirst=*/false);
  JitUnit unit{std::move(unit_name), &*dylib, dylib->createResourceTracker()};
  if (auto err = jit_->addIRModule(unit.tracker, std::move(module))) {
    consumeError(jit_->getExecutionSession().removeJITDylib(*unit.dylib));
    return std::move(err);
  }
  return unit;
}

llvm::Expected<void*> KilnJit::Lookup(const JitUnit& unit, llvm::StringRef symbol) {
  if (!unit.dylib)
    return llvm::make_error<llvm::StringError>("lookup in a removed unit",
                                               llvm::inconvertibleErrorCode());
  auto addr = jit_->lookup(*unit.dylib, symbol);
  if (!addr) return addr.takeError();
  return addr->toPtr<void*>();
}

llvm::Error KilnJit::Remove(JitUnit& unit) {
  if (!unit.dylib) return llvm::Error::success();
  llvm::Error err = unit.tracker->remove();
  llvm::Error err2 = jit_->getExecutionSession().removeJITDylib(*unit.dylib);
  unit.dylib = nullptr;
  unit.tracker = nullptr;
  return llvm::joinErrors(std::move(err), std::move(err2));
}

const llvm::DataLayout& KilnJit::DataLayout() const { return jit_->getDataLayout(); }

const llvm::Triple& KilnJit::TargetTriple() const { return jit_->getTargetTriple(); }

llvm::Error KilnJit::Optimize(llvm::Module& module) {
  auto tm = HostTargetMachine();
  if (!tm) return tm.takeError();
  module.setDataLayout((*tm)->createDataLayout());
  module.setTargetTriple((*tm)->getTargetTriple().str());
  return RunO2(module, tm->get());
}

}  // namespace kiln
