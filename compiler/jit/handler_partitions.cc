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
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "compiler/codegen/policy_context.h"

namespace kiln {

namespace {

// The global values `f`'s body refers to (functions, declarations included, and global
// variables), through constant expressions too, each once.
std::vector<const llvm::GlobalValue*> References(const llvm::Function& f) {
  std::vector<const llvm::GlobalValue*> out;
  std::unordered_set<const llvm::Constant*> seen;
  std::vector<const llvm::Constant*> work;
  auto visit = [&](const llvm::Value* v) {
    if (auto* c = llvm::dyn_cast<llvm::Constant>(v); c && seen.insert(c).second)
      work.push_back(c);
  };
  for (const llvm::BasicBlock& block : f)
    for (const llvm::Instruction& inst : block)
      for (const llvm::Use& use : inst.operands()) visit(use.get());
  while (!work.empty()) {
    const llvm::Constant* c = work.back();
    work.pop_back();
    if (auto* gv = llvm::dyn_cast<llvm::GlobalValue>(c)) {
      out.push_back(gv);
    } else {
      for (const llvm::Use& use : c->operands()) visit(use.get());
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
  static const bool on = [] {
    const char* env = std::getenv("KILN_VERIFY_PARTITIONS");
    return env && *env && std::string_view(env) != "0";
  }();
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

// A module holding `functions[i]` for each i of `defined` (bodies copied, plus every global
// variable when `with_constants`) and declarations of what they refer to (`refs[i]`).
// llvm::CloneModule would copy every global of the module as a declaration into every partition;
// this copies only what is used.
using ReferenceLists = std::vector<std::vector<const llvm::GlobalValue*>>;

std::unique_ptr<llvm::Module> Extract(const llvm::Module& module,
                                      const std::vector<const llvm::Function*>& functions,
                                      const ReferenceLists& refs,
                                      const std::vector<size_t>& defined, bool with_constants,
                                      const std::string& name) {
  auto part = std::make_unique<llvm::Module>(name, module.getContext());
  part->setDataLayout(module.getDataLayout());
  part->setTargetTriple(module.getTargetTriple());
  llvm::ValueToValueMapTy map;
  auto declare = [&](const llvm::GlobalValue* gv) {
    if (map.count(gv)) return;
    if (auto* f = llvm::dyn_cast<llvm::Function>(gv)) {
      auto* copy = llvm::Function::Create(f->getFunctionType(), f->getLinkage(),
                                          f->getAddressSpace(), f->getName(), part.get());
      copy->copyAttributesFrom(f);
      map[gv] = copy;
    } else {
      auto* v = llvm::cast<llvm::GlobalVariable>(gv);
      auto* copy = new llvm::GlobalVariable(*part, v->getValueType(), v->isConstant(),
                                            v->getLinkage(), nullptr, v->getName(), nullptr,
                                            v->getThreadLocalMode(), v->getAddressSpace());
      copy->copyAttributesFrom(v);
      map[gv] = copy;
    }
  };
  for (size_t i : defined) declare(functions[i]);
  if (with_constants)
    for (const llvm::GlobalVariable& v : module.globals()) declare(&v);
  for (size_t i : defined)
    for (const llvm::GlobalValue* gv : refs[i]) declare(gv);
  if (with_constants)
    for (const llvm::GlobalVariable& v : module.globals())
      llvm::cast<llvm::GlobalVariable>(map[&v])
          ->setInitializer(llvm::MapValue(v.getInitializer(), map));
  for (size_t i : defined) {
    const llvm::Function* f = functions[i];
    auto* copy = llvm::cast<llvm::Function>(map[f]);
    auto arg = copy->arg_begin();
    for (const llvm::Argument& a : f->args()) {
      arg->setName(a.getName());
      map[&a] = &*arg++;
    }
    llvm::SmallVector<llvm::ReturnInst*, 8> returns;
    llvm::CloneFunctionInto(copy, f, map, llvm::CloneFunctionChangeType::DifferentModule,
                            returns);
  }
  // Whatever another partition defines was shared (external) first, so a local declaration here
  // would mean the split missed a reference: refuse it rather than emit invalid IR.
  for (const llvm::GlobalValue& gv : part->global_values())
    if (gv.isDeclaration() && gv.hasLocalLinkage()) return nullptr;
  return part;
}

}  // namespace

std::optional<std::vector<std::unique_ptr<llvm::Module>>> SplitHandlerPartitions(
    llvm::Module& module) {
  // 1. Only local constants can move to the set-up partition; anything else compiles whole.
  if (!module.alias_empty() || !module.ifunc_empty() || !module.named_metadata_empty())
    return std::nullopt;
  for (const llvm::GlobalVariable& gv : module.globals())
    if (!gv.isConstant() || !gv.hasLocalLinkage() || !gv.hasInitializer() ||
        RefersToGlobals(gv.getInitializer()))
      return std::nullopt;

  // 2. The entries: the set-up pair is entry 0, each other external definition one more.
  std::vector<const llvm::Function*> functions;
  std::unordered_map<const llvm::Function*, size_t> index;
  for (const llvm::Function& f : module) {
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
  std::vector<std::vector<const llvm::GlobalVariable*>> constants(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    refs[i] = References(*functions[i]);
    for (const llvm::GlobalValue* gv : refs[i]) {
      if (auto* f = llvm::dyn_cast<llvm::Function>(gv); f && !f->isDeclaration())
        callees[i].push_back(index.at(f));
      else if (auto* v = llvm::dyn_cast<llvm::GlobalVariable>(gv))
        constants[i].push_back(v);
    }
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
      if (partition[c] != partition[i]) Share(const_cast<llvm::Function*>(functions[c]));
    if (partition[i] != home)
      for (const llvm::GlobalVariable* gv : constants[i])
        Share(const_cast<llvm::GlobalVariable*>(gv));
  }

  // 6. One module per partition.
  std::vector<std::unique_ptr<llvm::Module>> out;
  for (size_t p = 0; p < members.size(); ++p) {
    out.push_back(Extract(module, functions, refs, members[p], static_cast<int>(p) == home,
                          module.getModuleIdentifier() + "#" + std::to_string(p)));
    if (!out.back() || (VerifyPartitions() && llvm::verifyModule(*out.back(), &llvm::errs())))
      return std::nullopt;
  }
  return out;
}

}  // namespace kiln
