#include "compiler/jit/handler_partitions.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "compiler/codegen/fault_frame.h"
#include "compiler/codegen/policy_context.h"
#include "runtime/env_flag.h"

namespace kiln {

namespace {

// The global values `f`'s body refers to (functions, declarations included, and global
// variables), through constant expressions too, each once.
std::vector<llvm::GlobalValue*> References(llvm::Function& f) {
  std::vector<llvm::GlobalValue*> out;
  std::unordered_set<llvm::Constant*> seen;
  std::vector<llvm::Constant*> work;
  auto visit = [&](llvm::Value* v) {
    if (auto* c = llvm::dyn_cast<llvm::Constant>(v); c && seen.insert(c).second)
      work.push_back(c);
  };
  for (llvm::BasicBlock& block : f)
    for (llvm::Instruction& inst : block)
      for (llvm::Use& use : inst.operands()) visit(use.get());
  while (!work.empty()) {
    llvm::Constant* c = work.back();
    work.pop_back();
    if (auto* gv = llvm::dyn_cast<llvm::GlobalValue>(c)) {
      out.push_back(gv);
    } else {
      for (llvm::Use& use : c->operands()) visit(use.get());
    }
  }
  return out;
}

// Whether `c` (a global's initialiser) points at a function or at another global.
bool RefersToGlobals(const llvm::Constant* c) {
  if (llvm::isa<llvm::GlobalValue>(c)) return true;
  for (const llvm::Use& use : c->operands())
    if (RefersToGlobals(llvm::cast<llvm::Constant>(use.get()))) return true;
  return false;
}

// KILN_VERIFY_PARTITIONS=1: run LLVM's verifier on every partition (a split it rejects
// compiles whole). It costs about a third of the split, so only ctest's jit-tiers entries set it.
bool VerifyPartitions() {
  static const bool on = EnvFlagOn("KILN_VERIFY_PARTITIONS");
  return on;
}

bool IsEntry(const llvm::Function& f) { return !f.isDeclaration() && !f.hasLocalLinkage(); }

// Makes `gv` a hidden external definition: other partitions link to it, and calls and loads stay
// direct (hidden is dso_local). Its name is unique in the module, so in the policy's JITDylib.
void Share(llvm::GlobalValue* gv) {
  if (!gv->hasLocalLinkage()) return;
  if (!gv->hasName()) gv->setName("kiln.part.shared");
  gv->setLinkage(llvm::GlobalValue::ExternalLinkage);
  gv->setVisibility(llvm::GlobalValue::HiddenVisibility);
  gv->setDSOLocal(true);
}

using ReferenceLists = std::vector<std::vector<llvm::GlobalValue*>>;

// A declaration in `part` of `gv`, which another module defines or declares.
llvm::GlobalValue* Declare(llvm::Module& part, const llvm::GlobalValue* gv) {
  if (auto* f = llvm::dyn_cast<llvm::Function>(gv)) {
    auto* copy = llvm::Function::Create(f->getFunctionType(), f->getLinkage(),
                                        f->getAddressSpace(), f->getName(), &part);
    copy->copyAttributesFrom(f);
    return copy;
  }
  auto* v = llvm::cast<llvm::GlobalVariable>(gv);
  auto* copy = new llvm::GlobalVariable(part, v->getValueType(), v->isConstant(), v->getLinkage(),
                                        nullptr, v->getName(), nullptr, v->getThreadLocalMode(),
                                        v->getAddressSpace());
  copy->copyAttributesFrom(v);
  return copy;
}

// Points what the functions `defined` (already moved into `part`) refer to in other modules at
// declarations in `part`. Their bodies are moved, not copied: llvm::CloneModule would copy every
// global of the module as a declaration into every partition, and cloning each body cost the
// split a third of a tier-0 compile's CPU.
void LinkPartition(llvm::Module& part, const std::vector<llvm::Function*>& functions,
                   const ReferenceLists& refs, const std::vector<size_t>& defined) {
  llvm::ValueToValueMapTy map;
  for (size_t i : defined)
    for (const llvm::GlobalValue* gv : refs[i])
      if (gv->getParent() != &part && !map.count(gv)) map[gv] = Declare(part, gv);
  if (map.empty()) return;
  for (size_t i : defined)
    llvm::RemapFunction(*functions[i], map, llvm::RF_IgnoreMissingLocals);
}

}  // namespace

std::optional<std::vector<std::unique_ptr<llvm::Module>>> SplitHandlerPartitions(
    std::unique_ptr<llvm::Module>& whole) {
  llvm::Module& module = *whole;
  // 1. Only local constants can move to the set-up partition; anything else compiles whole.
  if (!module.alias_empty() || !module.ifunc_empty() || !module.named_metadata_empty())
    return std::nullopt;
  for (const llvm::GlobalVariable& gv : module.globals())
    if (!gv.isConstant() || !gv.hasLocalLinkage() || !gv.hasInitializer() ||
        RefersToGlobals(gv.getInitializer()))
      return std::nullopt;

  // 2. The entries: the set-up pair is entry 0, each other external definition one more.
  std::vector<llvm::Function*> functions;
  std::unordered_map<const llvm::Function*, size_t> index;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if (f.hasPersonalityFn() || f.hasPrefixData() || f.hasPrologueData()) return std::nullopt;
    index[&f] = functions.size();
    functions.push_back(&f);
  }
  std::vector<int> entry_of(functions.size(), -1);
  int entries = 1;
  for (size_t i = 0; i < functions.size(); ++i) {
    if (!IsEntry(*functions[i])) continue;
    llvm::StringRef name = functions[i]->getName();
    entry_of[i] = name == kStateInitSymbol || name == kArgsDefaultSymbol ? 0 : entries++;
  }

  // 3. Which entries reach each function.
  ReferenceLists refs(functions.size());
  std::vector<std::vector<size_t>> callees(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    refs[i] = References(*functions[i]);
    for (llvm::GlobalValue* gv : refs[i])
      if (auto* f = llvm::dyn_cast<llvm::Function>(gv); f && !f->isDeclaration())
        callees[i].push_back(index.at(f));
  }
  std::vector<std::vector<bool>> reached_by(functions.size(), std::vector<bool>(entries, false));
  for (size_t root = 0; root < functions.size(); ++root) {
    if (entry_of[root] < 0) continue;
    const int e = entry_of[root];
    std::vector<size_t> work{root};
    while (!work.empty()) {
      size_t f = work.back();
      work.pop_back();
      if (reached_by[f][e]) continue;
      reached_by[f][e] = true;
      for (size_t c : callees[f]) work.push_back(c);
    }
  }

  // 4. One partition per distinct set of entries, in the order its first function appears; a
  // function no entry reaches is dead and left out.
  std::map<std::vector<bool>, size_t> partition_of_set;
  std::vector<int> partition(functions.size(), -1);
  std::vector<std::vector<size_t>> members;  // function indices per partition
  for (size_t i = 0; i < functions.size(); ++i) {
    if (std::find(reached_by[i].begin(), reached_by[i].end(), true) == reached_by[i].end())
      continue;
    auto [it, fresh] = partition_of_set.emplace(reached_by[i], members.size());
    if (fresh) members.emplace_back();
    partition[i] = static_cast<int>(it->second);
    members[it->second].push_back(i);
  }
  if (members.size() <= 1) return std::nullopt;  // nothing to gain
  int home = -1;  // the set-up partition, which holds the constants
  for (size_t i = 0; i < functions.size() && home < 0; ++i)
    if (entry_of[i] == 0) home = partition[i];
  if (home < 0) return std::nullopt;

  // 5. What crosses partitions is shared: functions called from another partition, and every
  // constant used outside the set-up partition. Constants live only there, once: the runtime
  // tells some apart by address (kiln_rt_res_store knows the empty resource that way).
  for (size_t i = 0; i < functions.size(); ++i) {
    if (partition[i] < 0) continue;
    for (size_t c : callees[i])
      if (partition[c] != partition[i]) Share(functions[c]);
    if (partition[i] != home)
      for (llvm::GlobalValue* gv : refs[i])
        if (llvm::isa<llvm::GlobalVariable>(gv)) Share(gv);
  }

  // 6. Whatever a partition refers to in another must be external by now (a local one there
  // would mean the split missed a reference): checked before anything moves, so that a refusal
  // leaves the module whole.
  for (size_t i = 0; i < functions.size(); ++i) {
    if (partition[i] < 0) continue;
    for (const llvm::GlobalValue* gv : refs[i]) {
      if (!gv->hasLocalLinkage()) continue;
      auto* f = llvm::dyn_cast<llvm::Function>(gv);
      const int owner = f ? partition[index.at(f)] : home;
      if (owner != partition[i]) return std::nullopt;
    }
  }

  // 7. One module per partition, taking the functions and constants out of `whole`; what is left
  // (dead functions, declarations) goes with it. KILN_VERIFY_PARTITIONS keeps a copy to compile
  // whole should the verifier reject a partition.
  // Which functions may allocate is decided now, on the whole module: each partition is armed
  // on its own later (fault_frame.h), and a declaration keeps the mark its definition carries.
  codegen::MarkAllocatingFunctions(module);
  std::unique_ptr<llvm::Module> backup;
  if (VerifyPartitions()) backup = llvm::CloneModule(module);
  std::vector<std::unique_ptr<llvm::Module>> out;
  for (size_t p = 0; p < members.size(); ++p) {
    out.push_back(std::make_unique<llvm::Module>(
        module.getModuleIdentifier() + "#" + std::to_string(p), module.getContext()));
    out.back()->setDataLayout(module.getDataLayout());
    out.back()->setTargetTriple(module.getTargetTriple());
  }
  for (llvm::GlobalVariable& gv : llvm::make_early_inc_range(module.globals())) {
    gv.removeFromParent();
    out[home]->getGlobalList().push_back(&gv);
  }
  for (size_t p = 0; p < members.size(); ++p)
    for (size_t i : members[p]) {
      functions[i]->removeFromParent();
      out[p]->getFunctionList().push_back(functions[i]);
    }
  for (size_t p = 0; p < members.size(); ++p) LinkPartition(*out[p], functions, refs, members[p]);
  whole.reset();
  if (VerifyPartitions())
    for (const auto& part : out)
      if (llvm::verifyModule(*part, &llvm::errs())) {
        whole = std::move(backup);
        return std::nullopt;
      }
  return out;
}

}  // namespace kiln
