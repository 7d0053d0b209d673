#include "compiler/jit/kiln_jit.h"

#include "compiler/codegen/fault_frame.h"
#include "compiler/codegen/loop_budget.h"
#include "compiler/codegen/near_code_memory.h"
#include "compiler/jit/object_cache.h"
#include "compiler/jit/perf_map.h"
#include "runtime/env_flag.h"

#include <spdlog/spdlog.h>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/SectionMemoryManager.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstrTypes.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/JumpThreading.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <utility>
#include <optional>
#include <set>
#include <string_view>

namespace kiln {

// The compile cache's side of the JIT. Lookups happen before a module exists
// (KilnJit::LookupCached, keyed by the policy source); the store happens after machine code,
// in the compiler below, for modules AddModule tagged with a key: the tag is a named metadata
// node {key, payload prefix} that the compiler reads and removes before emitting code.
struct ObjectCacheHooks {
  static constexpr const char* kTag = "kiln.object_cache";

  ObjectCacheTarget target;
  mutable std::mutex mu;
  std::shared_ptr<ObjectCache> cache;    // --compile-cache (read-write); null: none
  std::shared_ptr<ObjectCache> shipped;  // built at build time (read-only); null: none

  std::shared_ptr<ObjectCache> Cache() const {
    std::lock_guard<std::mutex> lock(mu);
    return cache;
  }
  std::shared_ptr<ObjectCache> Shipped() const {
    std::lock_guard<std::mutex> lock(mu);
    return shipped;
  }

  static void Tag(llvm::Module& m, const ObjectCacheKey& key, std::string_view prefix) {
    llvm::LLVMContext& c = m.getContext();
    m.getOrInsertNamedMetadata(kTag)->addOperand(llvm::MDNode::get(
        c, {llvm::MDString::get(c, key.Hex()),
            llvm::MDString::get(c, llvm::StringRef(prefix.data(), prefix.size()))}));
  }

  struct Pending {
    ObjectCacheKey key;
    std::string prefix;
  };

  // Reads and removes the tag AddModule left on `m`; nullopt when there was none.
  static std::optional<Pending> TakeTag(llvm::Module& m) {
    llvm::NamedMDNode* md = m.getNamedMetadata(kTag);
    if (!md) return std::nullopt;
    std::optional<Pending> pending;
    if (md->getNumOperands() == 1 && md->getOperand(0)->getNumOperands() == 2) {
      llvm::MDNode* node = md->getOperand(0);
      auto* hex = llvm::dyn_cast<llvm::MDString>(node->getOperand(0).get());
      auto* prefix = llvm::dyn_cast<llvm::MDString>(node->getOperand(1).get());
      if (hex && prefix && hex->getString().size() == 64) {
        Pending p;
        bool ok = true;
        for (size_t i = 0; i < 32 && ok; ++i) {
          unsigned byte = 0;
          ok = !hex->getString().substr(2 * i, 2).getAsInteger(16, byte);
          p.key.bytes[i] = static_cast<uint8_t>(byte);
        }
        p.prefix = prefix->getString().str();
        if (ok) pending = std::move(p);
      }
    }
    m.eraseNamedMetadata(md);
    return pending;
  }
};

namespace {

// Marks a module AddModule was asked to compile at tier 0: the IR transform runs the O0 pipeline
// instead of O2 on it, and the compiler, which removes the mark, uses a CodeGenOpt::None machine.
constexpr const char* kTierZeroTag = "kiln.tier0";

bool IsTierZero(const llvm::Module& m) { return m.getNamedMetadata(kTierZeroTag) != nullptr; }

bool TakeTierZero(llvm::Module& m) {
  llvm::NamedMDNode* md = m.getNamedMetadata(kTierZeroTag);
  if (!md) return false;
  m.eraseNamedMetadata(md);
  return true;
}

}  // namespace

namespace {
// KILN_LLVM_OPTIONS as the process read it, set once by InitializeNativeTargetOnce.
std::string& LlvmOptionsRead() {
  static std::string options;
  return options;
}
}  // namespace

const std::string& LlvmOptionsOfProcess() {
  InitializeNativeTargetOnce();
  return LlvmOptionsRead();
}

void InitializeNativeTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // LLVM options Kiln always sets. X86's domain reassignment, which runs on AVX-512 hosts
    // only, is quadratic in a function's size: the largest body --policy-max-function-size
    // allows (PolicySandbox.APolicyJustUnderTheFunctionLimitCompiles) spent 33 s in it alone
    // against 2.7 s for all the rest of its code generation. It moves mask arithmetic to the
    // k-registers, which policy code has none of.
    {
      const char* argv[] = {"kiln", "-disable-x86-domain-reassignment"};
      std::string error;
      llvm::raw_string_ostream errors(error);
      if (!llvm::cl::ParseCommandLineOptions(2, argv, "", &errors))
        spdlog::warn("LLVM does not take {}: {}", argv[1], llvm::StringRef(errors.str()).trim());
    }
    // For investigating the compiler: LLVM's own options, e.g.
    // KILN_LLVM_OPTIONS=-pass-remarks-missed=sdagisel lists what FastISel leaves to
    // SelectionDAG (docs/performance.md, "Compile time"). A bad option is a warning.
    if (const char* opts = std::getenv("KILN_LLVM_OPTIONS"); opts && *opts) {
      // Part of every object cache key, even where LLVM refused one of them: those before it
      // may have been applied, and an option may change the code.
      LlvmOptionsRead() = opts;
      const char* argv[] = {"kiln"};
      std::string error;
      llvm::raw_string_ostream errors(error);
      if (!llvm::cl::ParseCommandLineOptions(1, argv, "", &errors, "KILN_LLVM_OPTIONS")) {
        // LLVM's text names the program and suggests `kiln --help`, which lists no LLVM option.
        std::string message;
        for (llvm::StringRef line : llvm::split(llvm::StringRef(errors.str()).trim(), '\n')) {
          line.consume_front("kiln: ");
          line = line.split("  Try: ").first;
          message += (message.empty() ? "" : "; ") + line.str();
        }
        spdlog::warn("KILN_LLVM_OPTIONS={}: {} (not applied)", opts, message);
      }
    }
  });
}

namespace {

thread_local double o2_ms_on_thread = 0;
thread_local const std::atomic<bool>* cancel_on_thread = nullptr;

bool CancelledOnThisThread() {
  return cancel_on_thread && cancel_on_thread->load(std::memory_order_relaxed);
}

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
  llvm::PassInstrumentationCallbacks instrumentation;
  instrumentation.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef, llvm::Any) { return !CancelledOnThisThread(); });
  llvm::PassBuilder pb(tm, tuning, std::nullopt, &instrumentation);
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
  // Lazily armed fault frames go in after inlining; then the frame state byte is promoted to a
  // register and the arming checks that follow one another are folded.
  for (llvm::Function* fn : codegen::ArmFaultFrames(module)) {
    if (fn->hasOptNone() || CancelledOnThisThread()) continue;
    fam.invalidate(*fn, llvm::PreservedAnalyses::none());
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
    fpm.addPass(llvm::EarlyCSEPass(/*UseMemorySSA=*/true));
    fpm.addPass(llvm::JumpThreadingPass());
    fpm.addPass(llvm::InstCombinePass());
    fpm.addPass(llvm::SimplifyCFGPass());
    fpm.run(*fn, fam);
  }
  return llvm::Error::success();
}

// Tier 0's IR pipeline: LLVM's O0 one, which only inlines what codegen marked always_inline (the
// small map and string helpers) — inlining them is cheaper than emitting them out of line.
// Tier 0: rewrites the intrinsics the policy code uses that X86 FastISel cannot select (each
// sends the rest of its block to SelectionDAG, ~5x slower per instruction) into plain IR it can:
// smax/smin as compare and select, saturating add/sub as the overflow intrinsics FastISel
// lowers plus a select, fptosi.sat as fptosi guarded by range and NaN checks. Same results.
void LowerIntrinsicsForFastIsel(llvm::Module& module) {
  std::vector<llvm::IntrinsicInst*> calls;
  for (llvm::Function& fn : module)
    for (llvm::BasicBlock& bb : fn)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst)) {
          switch (call->getIntrinsicID()) {
            case llvm::Intrinsic::smax:
            case llvm::Intrinsic::smin:
            case llvm::Intrinsic::sadd_sat:
            case llvm::Intrinsic::ssub_sat:
            case llvm::Intrinsic::fptosi_sat:
              if (call->getType()->isIntegerTy(64)) calls.push_back(call);
              break;
            default:
              break;
          }
        }
  for (llvm::IntrinsicInst* call : calls) {
    llvm::IRBuilder<> b(call);
    llvm::Value* x = call->getArgOperand(0);
    llvm::Value* min = b.getInt64(std::numeric_limits<int64_t>::min());
    llvm::Value* max = b.getInt64(std::numeric_limits<int64_t>::max());
    llvm::Value* result = nullptr;
    switch (call->getIntrinsicID()) {
      case llvm::Intrinsic::smax:
        result = b.CreateSelect(b.CreateICmpSGT(x, call->getArgOperand(1)), x,
                                call->getArgOperand(1));
        break;
      case llvm::Intrinsic::smin:
        result = b.CreateSelect(b.CreateICmpSLT(x, call->getArgOperand(1)), x,
                                call->getArgOperand(1));
        break;
      case llvm::Intrinsic::sadd_sat:
      case llvm::Intrinsic::ssub_sat: {
        // An overflowing a ± b saturates toward a's sign (an add overflows only when both
        // operands share it, a subtraction only when they differ).
        auto id = call->getIntrinsicID() == llvm::Intrinsic::sadd_sat
                      ? llvm::Intrinsic::sadd_with_overflow
                      : llvm::Intrinsic::ssub_with_overflow;
        llvm::Value* pair =
            b.CreateBinaryIntrinsic(id, x, call->getArgOperand(1));
        llvm::Value* saturated = b.CreateSelect(b.CreateICmpSLT(x, b.getInt64(0)), min, max);
        result = b.CreateSelect(b.CreateExtractValue(pair, {1}), saturated,
                                b.CreateExtractValue(pair, {0}));
        break;
      }
      case llvm::Intrinsic::fptosi_sat: {
        // 2^63 is exact in a double; below -2^63 and from 2^63 up saturate, NaN is 0.
        llvm::Value* limit = llvm::ConstantFP::get(x->getType(), 9223372036854775808.0);
        llvm::Value* converted = b.CreateFPToSI(x, b.getInt64Ty());
        llvm::Value* high = b.CreateSelect(b.CreateFCmpOGE(x, limit), max, converted);
        llvm::Value* low = b.CreateSelect(
            b.CreateFCmpOLT(x, llvm::ConstantFP::get(x->getType(), -9223372036854775808.0)), min,
            high);
        result = b.CreateSelect(b.CreateFCmpUNO(x, x), b.getInt64(0), low);
        break;
      }
      default:
        continue;
    }
    call->replaceAllUsesWith(result);
    call->eraseFromParent();
  }
}

void RunO0(llvm::Module& module) {
  auto start = std::chrono::steady_clock::now();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  mpm.run(module, mam);
  // The fault frames' markers must be expanded at every tier (fault_frame.h); tier 0 leaves the
  // frame byte in memory.
  codegen::ArmFaultFrames(module);
  LowerIntrinsicsForFastIsel(module);
  o2_ms_on_thread +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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

llvm::orc::JITTargetMachineBuilder WithOptLevel(llvm::orc::JITTargetMachineBuilder jtmb,
                                                llvm::CodeGenOpt::Level level) {
  jtmb.setCodeGenOptLevel(level);
  return jtmb;
}

// Tier 0's machine: ORC's default for a JIT on x86-64 is the large code model, under which X86
// FastISel selects no call and no global address and hands the rest of the block to
// SelectionDAG. With the small model (PIC: calls to far libraries go through RuntimeDyld's
// stubs, external data through its GOT) a cold tier-0 compile of all built-ins cost 23% less
// CPU on the means of three pairs (docs/performance.md, "Two tiers"). Only safe when every
// section lies within rel32 of the binary and of each other, so these objects are loaded by the
// strict near-code mapper.
llvm::orc::JITTargetMachineBuilder SmallCodeModel(llvm::orc::JITTargetMachineBuilder jtmb) {
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::None);
  jtmb.setCodeModel(llvm::CodeModel::Small);
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  return jtmb;
}

// Room the near-code region must have left before a tier-0 compile picks the small code model:
// far more than any unit needs, so compiles running alongside cannot use it up meanwhile.
constexpr size_t kSmallModelRoom = size_t{256} << 20;

// Set by the compile for the object the same thread links next (IRCompileLayer hands the object
// to the linking layer on the compiling thread): whether it needs the strict near-code mapper.
thread_local bool next_object_is_small_model = false;

// Machine code for a module, with a pooled TargetMachine so compiles may run concurrently
// (LLJIT's default compiler owns a single TargetMachine). A module AddModule tagged for the
// compile cache has its object stored (after the tag's prefix) in the writable cache; a tier-0
// module is compiled by a CodeGenOpt::None machine and never stored.
class PooledIrCompiler : public llvm::orc::IRCompileLayer::IRCompiler {
 public:
  PooledIrCompiler(llvm::orc::JITTargetMachineBuilder jtmb,
                   std::shared_ptr<ObjectCacheHooks> cache_hooks)
      : IRCompiler(llvm::orc::irManglingOptionsFromTargetOptions(jtmb.getOptions())),
        pool_(WithOptLevel(jtmb, llvm::CodeGenOpt::Default)),
        fast_pool_(WithOptLevel(jtmb, llvm::CodeGenOpt::None)),
        small_fast_pool_(SmallCodeModel(jtmb)),
        cache_hooks_(std::move(cache_hooks)) {}

  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> operator()(llvm::Module& m) override {
    std::optional<ObjectCacheHooks::Pending> pending = ObjectCacheHooks::TakeTag(m);
    const bool tier_zero = TakeTierZero(m);
    // KILN_JIT_TIER0_LARGE=1: the large code model for tier 0 too (comparisons; a way out).
    static const bool large_only = EnvFlagOn("KILN_JIT_TIER0_LARGE");
    next_object_is_small_model =
        tier_zero && !large_only && NearHostCodeHasRoom(kSmallModelRoom);
    auto lease = (!tier_zero                    ? pool_
                  : next_object_is_small_model ? small_fast_pool_
                                               : fast_pool_)
                     .Borrow();
    if (!lease) return lease.takeError();
    auto object = llvm::orc::SimpleCompiler(*(*lease)->get())(m);
    if (object && pending && !tier_zero) {
      if (std::shared_ptr<ObjectCache> cache = cache_hooks_->Cache()) {
        std::string payload = std::move(pending->prefix);
        payload.append((*object)->getBufferStart(), (*object)->getBufferSize());
        cache->Store(pending->key, payload);
      }
    }
    return object;
  }

 private:
  TargetMachinePool pool_;
  TargetMachinePool fast_pool_;        // tier 0, large code model (no room near the binary)
  TargetMachinePool small_fast_pool_;  // tier 0, small code model
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
                         jtmb->getFeatures().getString(), LlvmOptionsOfProcess()};
  auto lljit =
      llvm::orc::LLJITBuilder()
          .setJITTargetMachineBuilder(*jtmb)
          // Code within rel32 reach of the binary: the session's calls into handlers and the
          // handlers' calls into the runtime cost ~0.8 ns less each than from a far mapping
          // (measured when this was introduced; see near_code_memory.h). Falls back to LLVM's
          // placement when full.
          .setObjectLinkingLayerCreator([](llvm::orc::ExecutionSession& es, const llvm::Triple&) {
            auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(es, [] {
              // A small-code-model object must not fall back to a far mapping. Read once:
              // objects that did not come from this thread's compile (cached ones) are not.
              const bool strict = std::exchange(next_object_is_small_model, false);
              return std::make_unique<llvm::SectionMemoryManager>(
                  strict ? &StrictNearHostCodeMapper() : &NearHostCodeMapper());
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
      [o2_machines](llvm::orc::ThreadSafeModule tsm,
                    const llvm::orc::MaterializationResponsibility&)
          -> llvm::Expected<llvm::orc::ThreadSafeModule> {
        auto lease = o2_machines->Borrow();
        if (!lease) return lease.takeError();
        llvm::Error err = tsm.withModuleDo([&](llvm::Module& m) -> llvm::Error {
          if (IsTierZero(m)) {
            RunO0(m);
            return llvm::Error::success();
          }
          llvm::Error err = RunO2(m, (*lease)->get());
          // Cancelled: finish it as cheaply as possible (the caller throws it away).
          if (!err && CancelledOnThisThread()) m.getOrInsertNamedMetadata(kTierZeroTag);
          return err;
        });
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

llvm::Expected<JitUnit> KilnJit::NewUnit(std::string unit_name) {
  auto dylib = jit_->createJITDylib(unit_name);
  if (!dylib) return dylib.takeError();
  // Only the unit itself and the host intrinsics: never the process, never other policies.
  dylib->setLinkOrder({{&*dylib, llvm::orc::JITDylibLookupFlags::MatchAllSymbols},
                       {host_, llvm::orc::JITDylibLookupFlags::MatchExportedSymbolsOnly}},
                      /*LinkAgainstThisJITDylibFirst=*/false);
  return JitUnit{std::move(unit_name), &*dylib, dylib->createResourceTracker()};
}

llvm::Expected<JitUnit> KilnJit::AddModule(llvm::orc::ThreadSafeModule module,
                                           std::string unit_name,
                                           const std::optional<CacheStore>& store,
                                           JitTier tier) {
  module.withModuleDo([&](llvm::Module& m) {
    m.setDataLayout(jit_->getDataLayout());
    m.setTargetTriple(jit_->getTargetTriple().str());
    if (tier == JitTier::kFast)
      m.getOrInsertNamedMetadata(kTierZeroTag);  // and no cache tag: caches hold O2 objects only
    else if (store)
      ObjectCacheHooks::Tag(m, store->key, store->prefix);
  });
  auto unit = NewUnit(std::move(unit_name));
  if (!unit) return unit.takeError();
  if (auto err = jit_->addIRModule(unit->tracker, std::move(module))) {
    consumeError(jit_->getExecutionSession().removeJITDylib(*unit->dylib));
    return std::move(err);
  }
  return unit;
}

llvm::Expected<JitUnit> KilnJit::AddPartitions(
    std::vector<llvm::orc::ThreadSafeModule> partitions, std::string unit_name) {
  auto unit = NewUnit(std::move(unit_name));
  if (!unit) return unit.takeError();
  for (llvm::orc::ThreadSafeModule& partition : partitions) {
    partition.withModuleDo([&](llvm::Module& m) {
      m.setDataLayout(jit_->getDataLayout());
      m.setTargetTriple(jit_->getTargetTriple().str());
      m.getOrInsertNamedMetadata(kTierZeroTag);
    });
    if (auto err = jit_->addIRModule(unit->tracker, std::move(partition))) {
      consumeError(jit_->getExecutionSession().removeJITDylib(*unit->dylib));
      return std::move(err);
    }
  }
  return unit;
}

llvm::Expected<JitUnit> KilnJit::AddObject(std::string_view object, std::string unit_name,
                                           std::string_view object_name) {
  auto unit = NewUnit(std::move(unit_name));
  if (!unit) return unit.takeError();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(object.data(), object.size()),
      llvm::StringRef(object_name.data(), object_name.size()));
  if (auto err = jit_->addObjectFile(unit->tracker, std::move(buffer))) {
    consumeError(jit_->getExecutionSession().removeJITDylib(*unit->dylib));
    return std::move(err);
  }
  return unit;
}

ObjectCacheKey KilnJit::CacheKey(std::string_view source_sha256) const {
  // Objects compiled without loop counters (a measurement mode) get keys of their own.
  if (LoopBudgetDisabledForMeasurement())
    return MakeObjectCacheKey(std::string(source_sha256) + "+no-loop-budget", cache_hooks_->target);
  return MakeObjectCacheKey(source_sha256, cache_hooks_->target);
}

std::optional<std::string> KilnJit::LookupCached(const ObjectCacheKey& key) {
  std::optional<std::string> payload;
  if (std::shared_ptr<ObjectCache> shipped = cache_hooks_->Shipped())
    payload = shipped->Lookup(key);
  if (!payload)
    if (std::shared_ptr<ObjectCache> cache = cache_hooks_->Cache()) payload = cache->Lookup(key);
  return payload;
}

bool KilnJit::CacheWritable() const {
  std::shared_ptr<ObjectCache> cache = cache_hooks_->Cache();
  return cache && cache->enabled();
}

llvm::Expected<void*> KilnJit::Lookup(const JitUnit& unit, llvm::StringRef symbol) {
  if (!unit.dylib)
    return llvm::make_error<llvm::StringError>("lookup in a removed unit",
                                               llvm::inconvertibleErrorCode());
  auto addr = jit_->lookup(*unit.dylib, symbol);
  if (!addr) return addr.takeError();
  return addr->toPtr<void*>();
}

llvm::Expected<std::vector<void*>> KilnJit::LookupAll(const JitUnit& unit,
                                                      const std::vector<std::string>& symbols) {
  if (!unit.dylib)
    return llvm::make_error<llvm::StringError>("lookup in a removed unit",
                                               llvm::inconvertibleErrorCode());
  llvm::orc::SymbolLookupSet wanted;
  std::vector<llvm::orc::SymbolStringPtr> names;
  for (const std::string& s : symbols) {
    names.push_back(jit_->mangleAndIntern(s));
    if (std::find(names.begin(), names.end() - 1, names.back()) == names.end() - 1)
      wanted.add(names.back());  // a set: each name once
  }
  auto found = jit_->getExecutionSession().lookup(
      llvm::orc::makeJITDylibSearchOrder(unit.dylib,
                                         llvm::orc::JITDylibLookupFlags::MatchAllSymbols),
      wanted);
  if (!found) return found.takeError();
  std::vector<void*> out;
  for (const llvm::orc::SymbolStringPtr& name : names)
    out.push_back(llvm::jitTargetAddressToPointer<void*>((*found)[name].getAddress()));
  return out;
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

void KilnJit::SetCancelFlagForThisThread(const std::atomic<bool>* flag) {
  cancel_on_thread = flag;
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
