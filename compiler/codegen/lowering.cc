// The lowering context's basics: the LLVM type of each language type, declarations of the
// runtime's functions, function bodies and the PolicyContext's fields.
#include <fmt/format.h>

#include "compiler/codegen/lowering.h"
#include "compiler/codegen/fault_frame.h"

namespace kiln::codegen {

Lowering::Lowering(const ast::Policy& policy, const llvm::DataLayout& layout, llvm::LLVMContext& ctx,
         llvm::Module& module)
    : policy_(policy), dl_(layout), ctx_(ctx), m_(module), b_(ctx) {
  ptr_ = llvm::PointerType::get(ctx_, 0);
  i1_ = b_.getInt1Ty();
  i8_ = b_.getInt8Ty();
  i32_ = b_.getInt32Ty();
  i64_ = b_.getInt64Ty();
  f64_ = b_.getDoubleTy();
  str_ = llvm::StructType::get(ctx_, {ptr_, i64_});
  list_ = str_;
  fit_ = llvm::StructType::get(ctx_, {i32_, str_});
  validation_ = llvm::StructType::get(ctx_, {i1_, str_, str_});
  victims_ = llvm::StructType::get(ctx_, {i1_, list_});
  ctx_ty_ = llvm::StructType::get(ctx_, {ptr_, ptr_, i64_, ptr_, ptr_, ptr_});
  builder_ty_ = llvm::StructType::get(ctx_, {ptr_, i64_, i64_});  // KListBuilder
}

llvm::Type* Lowering::Ty(const Type* t) {
  if (!t) Fail(nullptr, "expression without a type");
  switch (t->kind) {
    case TypeKind::Void: return b_.getVoidTy();
    case TypeKind::Int:
    case TypeKind::Duration:
    case TypeKind::Time: return i64_;
    case TypeKind::Float:
    case TypeKind::Quantity: return f64_;
    case TypeKind::Bool: return i1_;
    case TypeKind::String: return str_;
    case TypeKind::Resource:
    case TypeKind::Task:
    case TypeKind::Job:
    case TypeKind::Node:
    case TypeKind::Queue:
    case TypeKind::Session:
    case TypeKind::Shape:
    case TypeKind::Map: return ptr_;
    case TypeKind::PodGroupPhase:
    case TypeKind::QueueState:
    case TypeKind::TaskStatus:
    case TypeKind::Missing:
    case TypeKind::Vote: return i32_;
    case TypeKind::Fit: return fit_;
    case TypeKind::Validation: return validation_;
    case TypeKind::Victims: return victims_;
    case TypeKind::List: return list_;
    case TypeKind::Tuple: return TupleTy(t);
    case TypeKind::Optional:
      if (IsViewPtr(t->elem)) return ptr_;
      return llvm::StructType::get(ctx_, {i1_, Ty(t->elem)});
    case TypeKind::Record: {
      auto it = records_.find(t->record);
      if (it != records_.end()) return it->second;
      std::vector<llvm::Type*> fields;
      for (const ast::RecordField& f : t->record->fields) fields.push_back(Ty(f.declared.resolved));
      auto* st = llvm::StructType::get(ctx_, fields);
      records_[t->record] = st;
      return st;
    }
    case TypeKind::None: return ptr_;
    case TypeKind::Error: Fail(nullptr, "error type reached codegen");
  }
  Fail(nullptr, "unknown type kind");
}

uint64_t Lowering::SizeOf(llvm::Type* t) { return dl_.getTypeAllocSize(t); }
                          
                          llvm::FunctionCallee Lowering::Rt(const std::string& name, llvm::Type* ret,
                          std::vector<llvm::Type*> params, bool allocates) {
  llvm::FunctionCallee callee =
      m_.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  if (allocates) {
    allocates_ = true;
    ++allocating_sites_;
    if (auto* fn = llvm::dyn_cast<Function>(callee.getCallee()))
      fn->addFnAttr(codegen::kAllocatesAttr);
  }
  // kiln_rt_res_id maps a name to its interned id: the same name always gives the same id, and
  // interning a new name changes nothing a policy can observe. Declared read-only, the
  // optimiser merges the repeated lookups of one name (`r[name]` on several resources, as
  // binpack and resource-strategy-fit do per resource per node).
  if (name == "kiln_rt_res_id")
    if (auto* fn = llvm::dyn_cast<Function>(callee.getCallee())) fn->setOnlyReadsMemory();
  return callee;
}

Value* Lowering::CallRt(const std::string& name, llvm::Type* ret, std::vector<Value*> args,
                        bool allocates) {
  std::vector<llvm::Type*> params;
  for (Value* a : args) params.push_back(a->getType());
  return b_.CreateCall(Rt(name, ret, params, allocates), args);
}

// Calls a void intrinsic writing a KStr through its last argument and returns the KStr value.
Value* Lowering::CallStrOut(const std::string& name, std::vector<Value*> args, bool allocates) {
  Value* out = Alloca(str_);
  args.push_back(out);
  CallRt(name, b_.getVoidTy(), args, allocates);
  return b_.CreateLoad(str_, out);
}

Value* Lowering::Alloca(llvm::Type* t) {
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  return entry.CreateAlloca(t);
}

// A handler body takes one more parameter after the language's: the thunk's fault frame state
// (fault_frame.h).
Function* Lowering::Declare(const ast::Callable& c, const std::string& name, bool handler) {
  std::vector<llvm::Type*> params{ptr_};
  for (const ast::Param& p : c.params) params.push_back(Ty(p.local->type));
  if (handler) params.push_back(ptr_);
  llvm::Type* ret = c.result_type ? Ty(c.result_type) : b_.getVoidTy();
  auto* fn = Function::Create(llvm::FunctionType::get(ret, params, false),
                              Function::InternalLinkage, name, m_);
  return fn;
}

// Starts lowering a body into `fn`: the per-function state reset, the builder in a new entry
// block, the PolicyContext from parameter `ctx_arg`. `c` is null for the module's own functions
// (state init, argument defaults), which have no locals of a callable.
void Lowering::BeginBody(Function* fn, const ast::Callable* c, unsigned ctx_arg) {
  fn_ = fn;
  current_ = c;
  allocates_ = false;
  locals_.assign(c ? static_cast<size_t>(std::max(c->local_count, 0)) : 0, nullptr);
  loops_.clear();
  budget_loops_.clear();
  b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
  ictx_ = fn->getArg(ctx_arg);
}

void Lowering::Define(const ast::Callable& c, Function* fn) {
  BeginBody(fn, &c);
  for (size_t i = 0; i < c.params.size(); ++i) {
    Value* slot = LocalSlot(c.params[i].local.get());
    b_.CreateStore(fn->getArg(static_cast<unsigned>(i + 1)), slot);
  }
  EmitBlock(*c.body);
  if (!b_.GetInsertBlock()->getTerminator()) {
    llvm::Type* ret = fn->getReturnType();
    if (ret->isVoidTy())
      b_.CreateRetVoid();
    else
      b_.CreateRet(ZeroOf(c.result_type));  // unreachable: the checker requires returns
  }
  allocates_fn_[fn] = allocates_;
}

// A function allocates when it or anything it calls does.
void Lowering::PropagateAllocates() {
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto& [fn, callees] : callees_)
      for (Function* callee : callees)
        if (allocates_fn_[callee] && !allocates_fn_[fn]) {
          allocates_fn_[fn] = true;
          changed = true;
        }
  }
}

Value* Lowering::LocalSlot(const ast::Local* local) {
  if (!local || local->id < 0) Fail(current_, "local without an id");
  if (static_cast<size_t>(local->id) >= locals_.size()) locals_.resize(local->id + 1, nullptr);
  Value*& slot = locals_[static_cast<size_t>(local->id)];
  if (!slot) slot = Alloca(Ty(local->type));
  return slot;
}

Value* Lowering::CtxField(int index, llvm::Type* t) {
  return b_.CreateLoad(t, b_.CreateStructGEP(ctx_ty_, ictx_, index));
}

Value* Lowering::StatePtr(const ast::StateDecl* s) {
  if (s->across_sessions)
    return b_.CreateStructGEP(kept_ty_, CtxField(kCtxKept, ptr_), kept_index_.at(s));
  return b_.CreateStructGEP(state_ty_, CtxField(kCtxState, ptr_), state_index_.at(s));
}

Value* Lowering::ArgPtr(const ast::ArgDecl* a) {
  return b_.CreateStructGEP(args_ty_, CtxField(kCtxArgs, ptr_), arg_index_.at(a));
}

}  // namespace kiln::codegen
