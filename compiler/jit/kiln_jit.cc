#include "compiler/jit/kiln_jit.h"

#include "compiler/codegen/near_code_memory.h"
#include "compiler/jit/object_cache.h"
#include "compiler/jit/perf_map.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

namespace kiln {

// The compile cache's side of the JIT, shared by the IR transform (which keys the unoptimised
// module and, on a hit, skips O2) and the compiler (which returns the cached object for such a
// module, or stores the object it compiled). The two talk through a named metadata tag on the
// module: {key} after a miss, {key, ticket} after a hit, the ticket naming the object parked here.
struct ObjectCacheHooks {
  static constexpr const char* kTag = "kiln.object_cache";
  // Hex SHA-256 of the policy source, set by AddModule, read and removed when keying.
  static constexpr const char* kSourceTag = "kiln.source_sha256";

  ObjectCacheTarget target;
  mutable std::mutex mu;
  std::shared_ptr<ObjectCache> cache;    // --compile-cache (read-write); null: none
  std::shared_ptr<ObjectCache> shipped;  // built at build time (read-only); null: none
  std::map<uint64_t, std::unique_ptr<llvm::MemoryBuffer>> parked;
  uint64_t next_ticket = 0;

  std::shared_ptr<ObjectCache> Cache() const {
    std::lock_guard<std::mutex> lock(mu);
    return cache;
  }
  std::shared_ptr<ObjectCache> Shipped() const {
    std::lock_guard<std::mutex> lock(mu);
    return shipped;
  }

  // Removes the source tag AddModule put on `m`; its value ("" when there was none).
  static std::string TakeSourceDigest(llvm::Module& m) {
    std::string digest;
    if (llvm::NamedMDNode* md = m.getNamedMetadata(kSourceTag)) {
      if (md->getNumOperands() == 1 && md->getOperand(0)->getNumOperands() == 1)
        if (auto* s = llvm::dyn_cast<llvm::MDString>(md->getOperand(0)->getOperand(0).get()))
          digest = s->getString().str();
      m.eraseNamedMetadata(md);
    }
    return digest;
  }

  // Keys `m` (before any optimisation) and tags it; true when its object is in the shipped
  // cache or in `writable` (either may be null). The shipped cache is asked first, so the
  // writable one neither counts a miss nor stores a copy of what the build already provides.
  bool KeyAndTag(llvm::Module& m, ObjectCache* from_shipped, ObjectCache* writable) {
    std::string source_digest = TakeSourceDigest(m);
    llvm::SmallVector<char, 0> bitcode;
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(m, os);
    ObjectCacheTarget t = target;
    t.triple = m.getTargetTriple();
    ObjectCacheKey key = MakeObjectCacheKey(std::string_view(bitcode.data(), bitcode.size()), t,
                                            source_digest);
    std::vector<llvm::Metadata*> fields{llvm::MDString::get(m.getContext(), key.Hex())};
    std::optional<std::string> object;
    if (from_shipped) object = from_shipped->Lookup(key);
    if (!object && writable) object = writable->Lookup(key);
    if (object) {
      std::lock_guard<std::mutex> lock(mu);
      uint64_t ticket = next_ticket++;
      parked[ticket] = llvm::MemoryBuffer::getMemBufferCopy(*object, m.getModuleIdentifier());
      fields.push_back(llvm::MDString::get(m.getContext(), std::to_string(ticket)));
    }
    m.getOrInsertNamedMetadata(kTag)->addOperand(llvm::MDNode::get(m.getContext(), fields));
    return object.has_value();
  }

  struct Tag {
    std::optional<ObjectCacheKey> key;
    bool hit = false;
    std::unique_ptr<llvm::MemoryBuffer> object;  // set on a hit
  };

  // Reads and removes the tag KeyAndTag left on `m` (none when the cache was off).
  Tag TakeTag(llvm::Module& m) {
    Tag tag;
    llvm::NamedMDNode* md = m.getNamedMetadata(kTag);
    if (!md) return tag;
    if (md->getNumOperands() == 1) {
      llvm::MDNode* node = md->getOperand(0);
      auto text = [&](unsigned i) -> llvm::StringRef {
        auto* s = i < node->getNumOperands()
                      ? llvm::dyn_cast<llvm::MDString>(node->getOperand(i).get())
                      : nullptr;
        return s ? s->getString() : llvm::StringRef();
      };
      llvm::StringRef hex = text(0);
      if (hex.size() == 64) {
        ObjectCacheKey key;
        bool ok = true;
        for (size_t i = 0; i < 32 && ok; ++i) {
          unsigned byte = 0;
          ok = !hex.substr(2 * i, 2).getAsInteger(16, byte);
          key.bytes[i] = static_cast<uint8_t>(byte);
        }
        if (ok) tag.key = key;
      }
      uint64_t ticket = 0;
      if (node->getNumOperands() > 1 && !text(1).getAsInteger(10, ticket)) {
        tag.hit = true;
        std::lock_guard<std::mutex> lock(mu);
        if (auto it = parked.find(ticket); it != parked.end()) {
          tag.object = std::move(it->second);
          parked.erase(it);
        }
      }
    }
    m.eraseNamedMetadata(md);
    return tag;
  }
};

void InitializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

namespace {

thread_local double o2_ms_on_thread = 0;

// Code that runs once per session (session_open/close, state and argument initialisation) is
// compiled without optimisation: it is a large share of some policies' IR (proportion's
// water-filling, drf's hierarchy) and of their compile time, and a session spends little time in
// it. So are the policy functions only it calls; anything a per-task handler also calls keeps O2.
void MarkOncePerSessionCode(llvm::Module& module) {
  static constexpr std::string_view kOnce[] = {
      "kiln.on.session_open", "kiln.on.session_close", "handler.session_open",
      "handler.session_close", "kiln.state_init", "kiln.args_default"};
  std::set<llvm::Function*> once;
  for (llvm::Function& f : module)
    for (std::string_view n : kOnce)
      if (!f.isDeclaration() && f.getName() == llvm::StringRef(n.data(), n.size())) once.insert(&f);
  // An internal function is once-per-session when every use is a call from such code.
  for (bool grew = true; grew;) {
    grew = false;
    for (llvm::Function& f : module) {
      if (f.isDeclaration() || !f.hasLocalLinkage() || once.count(&f) || f.use_empty()) continue;
      bool only_once_callers = std::all_of(f.user_begin(), f.user_end(), [&](llvm::User* u) {
        auto* call = llvm::dyn_cast<llvm::CallBase>(u);
        return call && call->getCalledFunction() == &f && once.count(call->getFunction());
      });
      if (only_once_callers) {
        once.insert(&f);
        grew = true;
      }
    }
  }
  for (llvm::Function* f : once) {
    if (f->hasFnAttribute(llvm::Attribute::AlwaysInline)) continue;
    f->addFnAttr(llvm::Attribute::OptimizeNone);
    f->addFnAttr(llvm::Attribute::NoInline);
  }
}

// The new-PassManager O2 pipeline, tuned for the host (TTI decides vector widths and costs).
llvm::Error RunO2(llvm::Module& module, llvm::TargetMachine* tm) {
  auto start = std::chrono::steady_clock::now();
  struct Account {
    std::chrono::steady_clock::time_point start;
    ~Account() {
      o2_ms_on_thread +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    }
  } account{start};
  if (llvm::verifyModule(module, &llvm::errs()))
    return llvm::make_error<llvm::StringError>("invalid IR in module " + module.getName().str(),
                                               llvm::inconvertibleErrorCode());
  MarkOncePerSessionCode(module);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // No loop or SLP vectorisation: policy loops walk pointers to runtime objects and call into the
  // host, so the vectorisers find nothing to do, yet they cost ~7% of O2 (tests/bench: per-call
  // handler times unchanged without them, compile of all built-ins 912 -> 871 ms CPU).
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = false;
  tuning.LoopInterleaving = false;
  tuning.SLPVectorization = false;
  llvm::PassBuilder pb(tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // Before anything is inlined: merge repeated pure calls — chiefly codegen's map lookups
  // (`kiln.map.find_i`), which a policy repeats for one key (`if m[k] > x { m[k] -= 1; }`) and
  // which, once inlined as scan loops, nothing downstream can merge. MemorySSA lets the merge
  // cross blocks that do not write memory.
  pb.registerPipelineStartEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::EarlyCSEPass(/*UseMemorySSA=*/true)));
  });
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

// TargetMachines are not thread-safe, and creating one costs about as much as compiling a small
// function; several policies may be optimised and compiled at once (PolicyCompiler::CompileAll),
// so each compile borrows one from this pool and returns it.
class TargetMachinePool {
 public:
  class Lease {
   public:
    Lease(TargetMachinePool* pool, std::unique_ptr<llvm::TargetMachine> tm)
        : pool_(pool), tm_(std::move(tm)) {}
    ~Lease() {
      std::lock_guard<std::mutex> lock(pool_->mu_);
      pool_->idle_.push_back(std::move(tm_));
    }
    llvm::TargetMachine* get() const { return tm_.get(); }

   private:
    TargetMachinePool* pool_;
    std::unique_ptr<llvm::TargetMachine> tm_;
  };

  explicit TargetMachinePool(llvm::orc::JITTargetMachineBuilder jtmb) : jtmb_(std::move(jtmb)) {}

  llvm::Expected<std::unique_ptr<Lease>> Borrow() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        auto tm = std::move(idle_.back());
        idle_.pop_back();
        return std::make_unique<Lease>(this, std::move(tm));
      }
    }
    auto tm = jtmb_.createTargetMachine();
    if (!tm) return tm.takeError();
    return std::make_unique<Lease>(this, std::move(*tm));
  }

 private:
  llvm::orc::JITTargetMachineBuilder jtmb_;
  std::mutex mu_;
  std::vector<std::unique_ptr<llvm::TargetMachine>> idle_;
};

// Machine code for a module, with a pooled TargetMachine so compiles may run concurrently
// (LLJIT's default compiler owns a single TargetMachine).
// With the compile cache on, a module the transform found in the cache arrives unoptimised and
// tagged, and its cached object is returned instead; any other module is compiled and, when the
// transform keyed it, its object is stored.
class PooledIrCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
 public:
  PooledIrCompiler(llvm::orc::JITTargetMachineBuilder jtmb,
                   std::shared_ptr<ObjectCacheHooks> cache_hooks)
      : IRCompiler(llvm::orc::irManglingOptionsFromTargetOptions(jtmb.getOptions())),
        pool_(std::move(jtmb)),
        cache_hooks_(std::move(cache_hooks)) {}

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
    ObjectCacheHooks::Tag tag = cache_hooks_->TakeTag(m);
    if (tag.object) return std::move(tag.object);
    auto lease = pool_.Borrow();
    if (!lease) return lease.takeError();
    if (tag.hit) {
      // Tagged as a hit but its object is gone (cannot happen while the transform and this run
      // in one materialisation): the module skipped O2, so give it O2 here and compile.
      if (auto err = RunO2(m, (*lease)->get())) return std::move(err);
    }
    auto object = llvm::orc::SimpleCompiler(*(*lease)->get())(m);
    if (object && tag.key && !tag.hit) {
      if (std::shared_ptr<ObjectCache> cache = cache_hooks_->Cache())
        cache->Store(*tag.key, std::string_view((*object)->getBufferStart(),
                                                (*object)->getBufferSize()));
    }
    return object;
  }

 private:
  TargetMachinePool pool_;
  std::shared_ptr<ObjectCacheHooks> cache_hooks_;
};

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
  auto cache_hooks = std::make_shared<ObjectCacheHooks>();
  cache_hooks->target = {jtmb->getTargetTriple().str(), jtmb->getCPU(),
                         jtmb->getFeatures().getString()};
  auto lljit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(*jtmb)
          // Code within rel32 reach of the binary: the session's calls into handlers and the
          // handlers' calls into the runtime cost ~0.8 ns less each than from a far mapping
          // (measured when this was introduced; see near_code_memory.h). Falls back to LLVM's
          // placement when full.
          .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
            auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(es, [] {
              return std::make_unique<llvm::SectionMemoryManager>(&NearHostCodeMapper());
            });
            // KILN_PERF_MAP / KILN_PERF_JITDUMP: name policy code for perf (perf_map.h).
            for (llvm::JITEventListener* listener : PerfListenersFromEnvironment())
              layer->registerJITEventListener(*listener);
            return layer;
          })
          .setCompileFunctionCreator(
              [cache_hooks](llvm::orc::JITTargetMachineBuilder jtmb)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                return std::make_unique<PooledIrCompiler>(std::move(jtmb), cache_hooks);
              })
          .create();
  if (!lljit) return lljit.takeError();
  std::unique_ptr<KilnJit> jit(new KilnJit(std::move(*lljit), cache_hooks));

  // O2 as the IR transform, with the same pooled TargetMachines (tuned as HostTargetMachine).
  jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Default);
  auto o2_machines = std::make_shared<TargetMachinePool>(std::move(*jtmb));
  jit->jit_->getIRTransformLayer().setTransform(
      [o2_machines, cache_hooks](llvm::orc::ThreadSafeModule tsm,
                                 const llvm::orc::MaterializationResponsibility&)
          -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        // Keyed before O2, so a hit skips it; the compiler then hands out the cached object.
        std::shared_ptr<ObjectCache> cache = cache_hooks->Cache();
        std::shared_ptr<ObjectCache> shipped = cache_hooks->Shipped();
        bool hit = tsm.withModuleDo([&](llvm::Module& m) {
          if (!cache && !shipped) {
            ObjectCacheHooks::TakeSourceDigest(m);
            return false;
          }
          return cache_hooks->KeyAndTag(m, shipped.get(), cache.get());
        });
        if (hit) return std::move(tsm);
        auto lease = o2_machines->Borrow();
        if (!lease) return lease.takeError();
        llvm::Error err = tsm.withModuleDo(
            [&](llvm::Module& m) { return RunO2(m, (*lease)->get()); });
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

KilnJit::KilnJit(std::unique_ptr<llvm::orc::LLJIT> jit,
                 std::shared_ptr<ObjectCacheHooks> cache_hooks)
    : jit_(std::move(jit)), cache_hooks_(std::move(cache_hooks)) {}

KilnJit::~KilnJit() = default;

llvm::Expected<JitUnit> KilnJit::AddModule(llvm::orc::ThreadSafeModule module,
                                           std::string unit_name, std::string source_sha256) {
  module.withModuleDo([&](llvm::Module& m) {
    m.setDataLayout(jit_->getDataLayout());
    m.setTargetTriple(jit_->getTargetTriple().str());
    if (!source_sha256.empty()) {
      m.getOrInsertNamedMetadata(ObjectCacheHooks::kSourceTag)
          ->addOperand(llvm::MDNode::get(m.getContext(),
                                         {llvm::MDString::get(m.getContext(), source_sha256)}));
    }
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

void KilnJit::SetObjectCache(std::shared_ptr<ObjectCache> cache) {
  std::lock_guard<std::mutex> lock(cache_hooks_->mu);
  cache_hooks_->cache = std::move(cache);
}

std::shared_ptr<ObjectCache> KilnJit::GetObjectCache() const { return cache_hooks_->Cache(); }

void KilnJit::SetShippedCache(std::shared_ptr<ObjectCache> cache) {
  std::lock_guard<std::mutex> lock(cache_hooks_->mu);
  cache_hooks_->shipped = std::move(cache);
}

std::shared_ptr<ObjectCache> KilnJit::GetShippedCache() const { return cache_hooks_->Shipped(); }

double KilnJit::OptimizeMsOnThisThread() { return o2_ms_on_thread; }

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
