#include "compiler/codegen/codegen.h"

#include <fmt/format.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/ModRef.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "compiler/codegen/fault_frame.h"
#include "compiler/codegen/loop_budget.h"
#include "compiler/codegen/policy_context.h"
#include "compiler/codegen/runtime_support.h"
#include "compiler/codegen/state_in_place.h"
#include "compiler/passes/walk.h"
#include "runtime/abi.h"
#include "runtime/model.h"
#include "runtime/resource.h"
#include "stdlib/library.h"

namespace kiln {

namespace {

using llvm::BasicBlock;
using llvm::Function;
using llvm::Value;

// Thrown inside the lowering only, caught in LowerPolicy: a construct the checker accepted that
// codegen cannot lower. Never escapes this file.
struct LoweringError {
  std::string message;
  SourceRange range;
};

[[noreturn]] void Fail(const ast::Node* at, std::string message) {
  throw LoweringError{std::move(message), at ? at->range : SourceRange{}};
}

bool IsKind(const Type* t, TypeKind k) { return t && t->kind == k; }
bool IsIntLike(const Type* t) {
  return t && (t->kind == TypeKind::Int || t->kind == TypeKind::Duration ||
               t->kind == TypeKind::Time);
}
bool IsFloatLike(const Type* t) {
  return t && (t->kind == TypeKind::Float || t->kind == TypeKind::Quantity);
}
bool IsViewPtr(const Type* t) {
  return t && (t->kind == TypeKind::Task || t->kind == TypeKind::Job ||
               t->kind == TypeKind::Node || t->kind == TypeKind::Queue ||
               t->kind == TypeKind::Session || t->kind == TypeKind::Shape);
}
// Optionals of views are nullable pointers; other optionals are {i1, T}.
bool IsPtrOptional(const Type* t) {
  return IsKind(t, TypeKind::Optional) && IsViewPtr(t->elem);
}

std::string_view ViewOwner(const Type* t) {
  switch (t->kind) {
    case TypeKind::Shape: return t->shape;
    case TypeKind::Task: return "Task";
    case TypeKind::Job: return "Job";
    case TypeKind::Node: return "Node";
    case TypeKind::Queue: return "Queue";
    default: return "";
  }
}

// Enum constants by type and name (docs/language.md "Types"); values are the runtime's.
std::optional<int64_t> NamedConstant(const Type* type, std::string_view name) {
  if (type && type->kind == TypeKind::PodGroupPhase) {
    if (auto p = ParsePodGroupPhase(name)) return static_cast<int64_t>(*p);
    return std::nullopt;
  }
  if (type && type->kind == TypeKind::QueueState) {
    if (auto q = ParseQueueState(name)) return static_cast<int64_t>(*q);
    return std::nullopt;
  }
  static const std::map<std::string_view, std::pair<TypeKind, int64_t>, std::less<>> kTable = {
      {"Pending", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Pending)}},
      {"Allocated", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Allocated)}},
      {"Pipelined", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Pipelined)}},
      {"Binding", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Binding)}},
      {"Bound", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Bound)}},
      {"Running", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Running)}},
      {"Releasing", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Releasing)}},
      {"Succeeded", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Succeeded)}},
      {"Failed", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Failed)}},
      {"Unknown", {TypeKind::TaskStatus, static_cast<int64_t>(TaskStatus::Unknown)}},
      {"Zero", {TypeKind::Missing, 0}},
      {"Infinity", {TypeKind::Missing, 1}},
      {"permit", {TypeKind::Vote, 1}},
      {"abstain", {TypeKind::Vote, 0}},
      {"reject", {TypeKind::Vote, -1}},
  };
  auto it = kTable.find(name);
  if (it == kTable.end()) return std::nullopt;
  return it->second.second;
}

class Lowering {
 public:
  Lowering(const ast::Policy& policy, const llvm::DataLayout& layout, llvm::LLVMContext& ctx,
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
    ctx_ty_ = llvm::StructType::get(ctx_, {ptr_, ptr_, i64_, ptr_, ptr_});
    builder_ty_ = llvm::StructType::get(ctx_, {ptr_, i64_, i64_});  // KListBuilder
  }

  void Run(LoweredPolicy& out) {
    in_place_ = codegen::AnalyzeInPlaceState(policy_);
    // State and argument blocks.
    std::vector<llvm::Type*> state_fields;
    for (const ast::StateDecl* s : policy_.All<ast::StateDecl>()) {
      state_index_[s] = static_cast<unsigned>(state_fields.size());
      state_fields.push_back(Ty(s->declared.resolved));
    }
    state_ty_ = llvm::StructType::create(ctx_, state_fields, "kiln.state");
    std::vector<llvm::Type*> arg_fields;
    for (const ast::ArgDecl* a : policy_.All<ast::ArgDecl>()) {
      arg_index_[a] = static_cast<unsigned>(arg_fields.size());
      arg_fields.push_back(Ty(a->declared.resolved));
    }
    args_ty_ = llvm::StructType::create(ctx_, arg_fields, "kiln.args");
    const llvm::StructLayout* args_layout = dl_.getStructLayout(args_ty_);
    out.args_size = args_layout->getSizeInBytes();
    out.args_align = args_layout->getAlignment().value();
    for (const ast::ArgDecl* a : policy_.All<ast::ArgDecl>())
      out.args.push_back({a, args_layout->getElementOffset(arg_index_[a])});

    // Declare every function first: bodies may call functions declared later in the file.
    for (const ast::FnDecl* f : policy_.All<ast::FnDecl>()) fns_[f] = Declare(*f, "fn." + f->name);
    std::vector<std::pair<const ast::HandlerDecl*, Function*>> handlers;
    for (const ast::HandlerDecl* h : policy_.All<ast::HandlerDecl>())
      handlers.emplace_back(h, Declare(*h, "handler." + h->name, /*handler=*/true));
    for (const ast::FnDecl* f : policy_.All<ast::FnDecl>()) Define(*f, fns_[f]);
    for (auto& [h, fn] : handlers) Define(*h, fn);
    PropagateAllocates();
    // Bodies that may allocate arm their fault frame lazily; the arming points are placed after
    // inlining (fault_frame.h), from this marker.
    for (auto& [h, fn] : handlers) {
      if (!allocates_fn_[fn]) continue;
      llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
      entry.CreateCall(m_.getOrInsertFunction(codegen::kFaultFrameMarker, b_.getVoidTy(), ptr_),
                       {fn->getArg(fn->arg_size() - 1)});
    }
    for (auto& [h, fn] : handlers) {
      for (const ast::HandlerPoint& p : h->points) {
        if (!p.info) Fail(h, fmt::format("handler point `{}` was not resolved", p.name));
        if (!EmitFilterVictimsThunk(*h, *p.info)) EmitThunk(*h, fn, *p.info);
        out.points.push_back(p.info->id);
      }
    }
    EmitStateInit();
    EmitArgsDefault();
    budget_.Finish();
  }

 private:
  // ------------------------------------------------------------------------------------------
  // Types

  llvm::Type* Ty(const Type* t) {
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

  uint64_t SizeOf(llvm::Type* t) { return dl_.getTypeAllocSize(t); }

  // ------------------------------------------------------------------------------------------
  // Intrinsic declarations

  llvm::FunctionCallee Rt(const std::string& name, llvm::Type* ret,
                          std::vector<llvm::Type*> params, bool allocates = false) {
    llvm::FunctionCallee callee =
        m_.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
    if (allocates) {
      allocates_ = true;
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

  Value* CallRt(const std::string& name, llvm::Type* ret, std::vector<Value*> args,
                bool allocates = false) {
    std::vector<llvm::Type*> params;
    for (Value* a : args) params.push_back(a->getType());
    return b_.CreateCall(Rt(name, ret, params, allocates), args);
  }

  // Calls a void intrinsic writing a KStr through its last argument and returns the KStr value.
  Value* CallStrOut(const std::string& name, std::vector<Value*> args, bool allocates) {
    Value* out = Alloca(str_);
    args.push_back(out);
    CallRt(name, b_.getVoidTy(), args, allocates);
    return b_.CreateLoad(str_, out);
  }

  Value* Alloca(llvm::Type* t) {
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    return entry.CreateAlloca(t);
  }

  // ------------------------------------------------------------------------------------------
  // Functions

  // A handler body takes one more parameter after the language's: the thunk's fault frame state
  // (fault_frame.h).
  Function* Declare(const ast::Callable& c, const std::string& name, bool handler = false) {
    std::vector<llvm::Type*> params{ptr_};
    for (const ast::Param& p : c.params) params.push_back(Ty(p.local->type));
    if (handler) params.push_back(ptr_);
    llvm::Type* ret = c.result_type ? Ty(c.result_type) : b_.getVoidTy();
    auto* fn = Function::Create(llvm::FunctionType::get(ret, params, false),
                                Function::InternalLinkage, name, m_);
    return fn;
  }

  void Define(const ast::Callable& c, Function* fn) {
    fn_ = fn;
    current_ = &c;
    allocates_ = false;
    locals_.assign(static_cast<size_t>(std::max(c.local_count, 0)), nullptr);
    loops_.clear();
    budget_loops_.clear();
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    ictx_ = fn->getArg(0);
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
  void PropagateAllocates() {
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

  Value* LocalSlot(const ast::Local* local) {
    if (!local || local->id < 0) Fail(current_, "local without an id");
    if (static_cast<size_t>(local->id) >= locals_.size()) locals_.resize(local->id + 1, nullptr);
    Value*& slot = locals_[static_cast<size_t>(local->id)];
    if (!slot) slot = Alloca(Ty(local->type));
    return slot;
  }

  // ------------------------------------------------------------------------------------------
  // Context fields

  Value* CtxField(int index, llvm::Type* t) {
    return b_.CreateLoad(t, b_.CreateStructGEP(ctx_ty_, ictx_, index));
  }
  Value* StatePtr(const ast::StateDecl* s) {
    return b_.CreateStructGEP(state_ty_, CtxField(kCtxState, ptr_), state_index_.at(s));
  }
  Value* ArgPtr(const ast::ArgDecl* a) {
    return b_.CreateStructGEP(args_ty_, CtxField(kCtxArgs, ptr_), arg_index_.at(a));
  }

  // ------------------------------------------------------------------------------------------
  // Values

  Value* ZeroOf(const Type* t) {
    switch (t->kind) {
      case TypeKind::Resource: return EmptyResource();
      case TypeKind::Map: return NewMap(t);
      case TypeKind::TaskStatus:
        return b_.getInt32(static_cast<uint32_t>(TaskStatus::Unknown));
      case TypeKind::Validation:
        return llvm::ConstantStruct::get(validation_, {b_.getTrue(), ZeroStr(), ZeroStr()});
      case TypeKind::Record: {
        Value* v = llvm::UndefValue::get(Ty(t));
        for (size_t i = 0; i < t->record->fields.size(); ++i) {
          const ast::RecordField& f = t->record->fields[i];
          Value* fv = f.default_value ? Coerce(Emit(*f.default_value), f.default_value->type,
                                               f.declared.resolved)
                                      : ZeroOf(f.declared.resolved);
          v = b_.CreateInsertValue(v, fv, {static_cast<unsigned>(i)});
        }
        return v;
      }
      default: return llvm::Constant::getNullValue(Ty(t));
    }
  }
  llvm::Constant* ZeroStr() { return llvm::Constant::getNullValue(str_); }

  Value* EmptyResource() {
    if (!empty_resource_) {
      // kiln::Resource{}: present = cpu|memory, every value 0 (runtime/resource.h layout).
      auto* arr = llvm::ArrayType::get(f64_, kMaxResources);
      auto* ty = llvm::StructType::get(ctx_, {i32_, i32_, arr});
      auto* init = llvm::ConstantStruct::get(
          ty, {b_.getInt32(Resource::kBaseMask), b_.getInt32(0), llvm::ConstantAggregateZero::get(arr)});
      empty_resource_ = new llvm::GlobalVariable(m_, ty, true, llvm::GlobalValue::PrivateLinkage,
                                                 init, "kiln.empty_resource");
      empty_resource_->setAlignment(llvm::Align(8));
    }
    return empty_resource_;
  }

  Value* Str(std::string_view s) {
    if (s.empty()) return ZeroStr();
    llvm::Constant* data = b_.CreateGlobalStringPtr(llvm::StringRef(s.data(), s.size()), "str");
    return llvm::ConstantStruct::get(str_, {data, b_.getInt64(static_cast<int64_t>(s.size()))});
  }

  Value* NewMap(const Type* t) {
    int32_t key_kind = IsKind(t->key, TypeKind::String) ? 1 : 0;
    auto size = static_cast<int32_t>(SizeOf(Ty(t->elem)));
    if (int32_t off = ViewIndexOffset(t->key); off >= 0)
      return CallRt("kiln_rt_map_new_view", ptr_,
                    {b_.getInt32(size), b_.getInt32(off), b_.getInt32(in_state_init_ ? 1 : 0)},
                    true);
    return CallRt("kiln_rt_map_new", ptr_, {b_.getInt32(key_kind), b_.getInt32(size)}, true);
  }
  // Where a map key's view keeps its dense index (runtime/abi.h), or -1 for keys that are not
  // views of the cluster: maps keyed by these keep a dense table (runtime_support.h, KMap).
  static int32_t ViewIndexOffset(const Type* key) {
    if (!key) return -1;
    switch (key->kind) {
      case TypeKind::Task: return static_cast<int32_t>(kTaskIndexOffset);
      case TypeKind::Job: return static_cast<int32_t>(kJobIndexOffset);
      case TypeKind::Node: return static_cast<int32_t>(kNodeIndexOffset);
      case TypeKind::Queue: return static_cast<int32_t>(kQueueIndexOffset);
      default: return -1;
    }
  }

  Value* MakeOptional(const Type* opt, Value* payload) {
    if (IsPtrOptional(opt)) return payload;
    Value* v = llvm::UndefValue::get(Ty(opt));
    v = b_.CreateInsertValue(v, b_.getTrue(), {0});
    return b_.CreateInsertValue(v, payload, {1});
  }
  Value* NoneOf(const Type* opt) { return llvm::Constant::getNullValue(Ty(opt)); }
  Value* IsPresent(const Type* opt, Value* v) {
    if (IsPtrOptional(opt)) return b_.CreateIsNotNull(v);
    return b_.CreateExtractValue(v, {0});
  }
  Value* Payload(const Type* opt, Value* v) {
    if (IsPtrOptional(opt)) return v;
    return b_.CreateExtractValue(v, {1});
  }

  // Converts a value of type `from` to `to` where the language converts implicitly.
  Value* Coerce(Value* v, const Type* from, const Type* to) {
    if (!from || !to || from == to) return v;
    if (to->kind == TypeKind::Optional) {
      if (from->kind == TypeKind::None) return NoneOf(to);
      if (from->kind == TypeKind::Optional) {
        if (IsPtrOptional(from) == IsPtrOptional(to) && Ty(from) == Ty(to)) return v;
        Fail(nullptr, fmt::format("cannot convert {} to {}", from->Name(), to->Name()));
      }
      return MakeOptional(to, Coerce(v, from, to->elem));
    }
    if (IsFloatLike(to) && from->kind == TypeKind::Int) return b_.CreateSIToFP(v, f64_);
    if (IsFloatLike(to) && IsFloatLike(from)) return v;
    if (IsIntLike(to) && IsIntLike(from)) return v;
    if (to->kind == TypeKind::List && from->kind == TypeKind::List) return v;  // e.g. [] literal
    if (to->kind == TypeKind::Map && from->kind == TypeKind::Map) return v;
    if (Ty(from) == Ty(to)) return v;
    Fail(nullptr, fmt::format("cannot convert {} to {}", from->Name(), to->Name()));
  }

  // Whether a value of type `t` may point into the call arena.
  static bool NeedsPersist(const Type* t) {
    switch (t->kind) {
      case TypeKind::String:
      case TypeKind::Resource:
      case TypeKind::Map:
      case TypeKind::List:
      case TypeKind::Record: return true;
      case TypeKind::Optional: return !t->elem->IsView() && NeedsPersist(t->elem);
      default: return false;
    }
  }

  // Copies a value into the session arena so it outlives the handler call (state stores).
  Value* Persist(Value* v, const Type* t) {
    switch (t->kind) {
      case TypeKind::String: {
        Value* arena = CtxField(kCtxSessionArena, ptr_);
        return CallStrOut("kiln_rt_str_copy",
                          {b_.CreateExtractValue(v, {0}), b_.CreateExtractValue(v, {1}), arena},
                          true);
      }
      case TypeKind::Resource:
        return CallRt("kiln_rt_res_copy", ptr_, {v, CtxField(kCtxSessionArena, ptr_)}, true);
      case TypeKind::Map: {
        Value* copy = CallRt("kiln_rt_map_copy", ptr_, {v, CtxField(kCtxSessionArena, ptr_)}, true);
        // Values are copied byte-wise; those that point into the call arena are persisted too.
        if (NeedsPersist(t->elem)) {
          llvm::Type* vt = Ty(t->elem);
          Value* n = CallRt("kiln_rt_map_size", i64_, {copy});
          ForRange(n, [&](Value* i) {
            Value* slot = CallRt("kiln_rt_map_value_at", ptr_, {copy, i});
            b_.CreateStore(Persist(b_.CreateLoad(vt, slot), t->elem), slot);
          });
        }
        return copy;
      }
      case TypeKind::List: {
        // Copy the items array into the session arena (element values are copied shallowly
        // except strings and resources, which are persisted one by one).
        llvm::Type* et = Ty(t->elem);
        Value* n = b_.CreateExtractValue(v, {1});
        Value* bytes = b_.CreateMul(n, b_.getInt64(SizeOf(et)));
        Value* prev = CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)});
        Value* items = CallRt("kiln_rt_alloc", ptr_, {bytes}, true);
        CallRt("kiln_rt_set_arena", ptr_, {prev});
        b_.CreateMemCpy(items, llvm::MaybeAlign(8), b_.CreateExtractValue(v, {0}),
                        llvm::MaybeAlign(8), bytes);
        Value* out = b_.CreateInsertValue(v, items, {0});
        if (NeedsPersist(t->elem)) {
          ForRange(n, [&](Value* i) {
            Value* p = b_.CreateGEP(et, items, i);
            b_.CreateStore(Persist(b_.CreateLoad(et, p), t->elem), p);
          });
        }
        return out;
      }
      case TypeKind::Optional:
        if (IsPtrOptional(t)) return v;
        return b_.CreateInsertValue(v, Persist(b_.CreateExtractValue(v, {1}), t->elem), {1});
      case TypeKind::Record: {
        Value* out = v;
        for (size_t i = 0; i < t->record->fields.size(); ++i) {
          unsigned idx = static_cast<unsigned>(i);
          out = b_.CreateInsertValue(
              out, Persist(b_.CreateExtractValue(v, {idx}), t->record->fields[i].declared.resolved),
              {idx});
        }
        return out;
      }
      default: return v;
    }
  }

  // The Resource to keep in a state slot that holds `old` after storing `v` (state_in_place.h):
  // `old` itself, overwritten, unless it is pinned or the shared empty resource.
  Value* StoreResourceInPlace(Value* old, Value* v) {
    return CallRt("kiln_rt_res_store", ptr_, {old, v, EmptyResource(), CtxField(kCtxSessionArena, ptr_)},
                  true);
  }

  // Emits `for (i = 0; i < n; ++i) body(i)`.
  template <typename F>
  void ForRange(Value* n, F body) {
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* head = BasicBlock::Create(ctx_, "loop", fn_);
    BasicBlock* bodyb = BasicBlock::Create(ctx_, "loop.body", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "loop.done", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2);
    i->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, n), bodyb, done);
    b_.SetInsertPoint(bodyb);
    body(i);
    Value* next = b_.CreateAdd(i, b_.getInt64(1));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  // ------------------------------------------------------------------------------------------
  // Statements

  void EmitBlock(const ast::Block& block) {
    for (const ast::StmtPtr& s : block.stmts) {
      if (b_.GetInsertBlock()->getTerminator()) break;  // code after return/break (checker rejects)
      EmitStmt(*s);
    }
  }

  void EmitStmt(const ast::Stmt& s) {
    switch (s.kind) {
      case ast::NodeKind::Block: EmitBlock(static_cast<const ast::Block&>(s)); return;
      case ast::NodeKind::Let: {
        const auto& let = static_cast<const ast::Let&>(s);
        Value* v = Coerce(Emit(*let.value), let.value->type, let.local->type);
        b_.CreateStore(v, LocalSlot(let.local.get()));
        return;
      }
      case ast::NodeKind::Assign: EmitAssign(static_cast<const ast::Assign&>(s)); return;
      case ast::NodeKind::If: {
        const auto& st = static_cast<const ast::If&>(s);
        Value* cond = Emit(*st.cond);
        EmitIfElse(cond, [&] { EmitBlock(*st.then); },
                   st.otherwise ? std::function<void()>([&] { EmitStmt(*st.otherwise); })
                                : std::function<void()>());
        return;
      }
      case ast::NodeKind::IfLet: {
        const auto& st = static_cast<const ast::IfLet&>(s);
        Value* opt = Emit(*st.value);
        const Type* ot = st.value->type;
        EmitIfElse(
            IsPresent(ot, opt),
            [&] {
              b_.CreateStore(Coerce(Payload(ot, opt), ot->elem, st.local->type),
                             LocalSlot(st.local.get()));
              EmitBlock(*st.then);
            },
            st.otherwise ? std::function<void()>([&] { EmitStmt(*st.otherwise); })
                         : std::function<void()>());
        return;
      }
      case ast::NodeKind::For: EmitFor(static_cast<const ast::For&>(s)); return;
      case ast::NodeKind::Return: {
        const auto& r = static_cast<const ast::Return&>(s);
        Value* value =
            r.value ? Coerce(Emit(*r.value), r.value->type, current_->result_type) : nullptr;
        // Leaving every enclosing loop: give back what each reserved and did not run.
        for (auto [reserved, index] : budget_loops_) budget_.Refund(b_, reserved, index);
        if (value)
          b_.CreateRet(value);
        else
          b_.CreateRetVoid();
        return;
      }
      case ast::NodeKind::Break:
        if (loops_.empty()) Fail(&s, "break outside a loop");
        b_.CreateBr(loops_.back().second);
        return;
      case ast::NodeKind::Continue:
        if (loops_.empty()) Fail(&s, "continue outside a loop");
        b_.CreateBr(loops_.back().first);
        return;
      case ast::NodeKind::ExprStmt:
        Emit(*static_cast<const ast::ExprStmt&>(s).value);
        return;
      default: Fail(&s, fmt::format("cannot lower statement {}", ast::KindName(s.kind)));
    }
  }

  void EmitIfElse(Value* cond, const std::function<void()>& then,
                  const std::function<void()>& otherwise) {
    BasicBlock* tb = BasicBlock::Create(ctx_, "then", fn_);
    BasicBlock* eb = otherwise ? BasicBlock::Create(ctx_, "else", fn_) : nullptr;
    BasicBlock* done = BasicBlock::Create(ctx_, "endif", fn_);
    b_.CreateCondBr(cond, tb, eb ? eb : done);
    b_.SetInsertPoint(tb);
    then();
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
    if (eb) {
      b_.SetInsertPoint(eb);
      otherwise();
      if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
  }

  void EmitAssign(const ast::Assign& a) {
    const ast::Expr& target = *a.target;
    auto combine = [&](Value* old, const Type* t) -> Value* {
      Value* rhs = Emit(*a.value);
      if (a.op == ast::AssignOp::Set) return Coerce(rhs, a.value->type, t);
      ast::BinaryOp op = a.op == ast::AssignOp::Add   ? ast::BinaryOp::Add
                         : a.op == ast::AssignOp::Sub ? ast::BinaryOp::Sub
                         : a.op == ast::AssignOp::Mul ? ast::BinaryOp::Mul
                                                      : ast::BinaryOp::Div;
      return Arith(op, old, t, rhs, a.value->type, t, &a);
    };
    if (const auto* name = ast::As<ast::NameRef>(&target)) {
      const Type* t = target.type;
      if (name->ref == ast::NameKind::Local) {
        if (const ast::Expr* elem = AppendedElement(a, name->local)) {
          EmitLocalAppend(name->local, *elem);
          return;
        }
        Value* slot = LocalSlot(name->local);
        Value* old = a.op == ast::AssignOp::Set ? nullptr : b_.CreateLoad(Ty(t), slot);
        b_.CreateStore(combine(old, t), slot);
        return;
      }
      if (name->ref == ast::NameKind::State) {
        Value* slot = StatePtr(name->state_decl);
        Value* old = a.op == ast::AssignOp::Set ? nullptr : b_.CreateLoad(Ty(t), slot);
        Value* nv = combine(old, t);
        if (IsKind(t, TypeKind::Resource) && in_place_.vars.count(name->state_decl)) {
          // Loaded again: the right-hand side may have stored into this state.
          b_.CreateStore(StoreResourceInPlace(b_.CreateLoad(ptr_, slot), nv), slot);
          return;
        }
        b_.CreateStore(Persist(nv, t), slot);
        return;
      }
      Fail(&a, "assignment to something that is not a variable or state");
    }
    if (const auto* index = ast::As<ast::Index>(&target);
        index && IsKind(index->operand->type, TypeKind::Resource)) {
      // Resources are immutable values that may be shared (a view's field, a state entry), so a
      // dimension assignment copies, sets, and stores the copy back into the variable.
      const auto* var = ast::As<ast::NameRef>(index->operand.get());
      if (!var || (var->ref != ast::NameKind::Local && var->ref != ast::NameKind::State))
        Fail(&a, "a resource dimension can only be assigned through a variable");
      Value* slot = var->ref == ast::NameKind::Local ? LocalSlot(var->local) : StatePtr(var->state_decl);
      Value* old = b_.CreateLoad(ptr_, slot);
      Value* name = Emit(*index->index);
      Value* id = ResourceIdOf(name);
      Value* arena = var->ref == ast::NameKind::State ? CtxField(kCtxSessionArena, ptr_)
                                                      : static_cast<Value*>(llvm::ConstantPointerNull::get(ptr_));
      const Type* ft = FloatType();
      Value* cur = ResourceDimAt(old, id);
      Value* nv = combine(cur, ft);
      Value* copy = CallRt("kiln_rt_res_copy", ptr_, {old, arena}, true);
      CallRt("kiln_rt_res_set", b_.getVoidTy(), {copy, id, nv});
      b_.CreateStore(copy, slot);
      return;
    }
    if (const auto* index = ast::As<ast::Index>(&target)) {
      const Type* mt = index->operand->type;
      if (!IsKind(mt, TypeKind::Map)) Fail(&a, "indexed assignment into a non-map");
      Value* map = EmitMapForWrite(*index->operand);
      Value* key = Emit(*index->index);
      const Type* vt = mt->elem;
      llvm::Type* vty = Ty(vt);
      Value* old = nullptr;
      Value* slot = nullptr;
      if (a.op != ast::AssignOp::Set) {
        slot = MapSlot(mt, map, key, index->index->type, /*insert=*/true, vt);
        old = b_.CreateLoad(vty, slot);
      }
      Value* nv = combine(old, vt);
      // A slot pointer moves when its map grows, and evaluating the right-hand side may grow this
      // map (a policy function writing state inserts). Then the slot is looked up again after the
      // right-hand side, right before the store; otherwise the first lookup is still valid.
      if (!slot || CallsPolicyFunction(*a.value))
        slot = MapSlot(mt, map, key, index->index->type, /*insert=*/true, vt);
      bool into_state = RootIsState(*index->operand);
      if (const auto* m = ast::As<ast::NameRef>(index->operand.get());
          m && m->ref == ast::NameKind::State && in_place_.vars.count(m->state_decl)) {
        b_.CreateStore(StoreResourceInPlace(b_.CreateLoad(ptr_, slot), nv), slot);
        return;
      }
      b_.CreateStore(into_state ? Persist(nv, vt) : nv, slot);
      return;
    }
    Fail(&a, "unsupported assignment target");
  }

  // The element `e` of `x = x + [e]` or `x += [e]` when `x` is the local list `local`, else null.
  static const ast::Expr* AppendedElement(const ast::Assign& a, const ast::Local* local) {
    if (!IsKind(a.target->type, TypeKind::List)) return nullptr;
    const ast::Expr* list = a.value.get();
    if (a.op == ast::AssignOp::Set) {
      const auto* bin = ast::As<ast::Binary>(list);
      if (!bin || bin->op != ast::BinaryOp::Add) return nullptr;
      const auto* self = ast::As<ast::NameRef>(bin->left.get());
      if (!self || self->ref != ast::NameKind::Local || self->local != local) return nullptr;
      list = bin->right.get();
    } else if (a.op != ast::AssignOp::Add) {
      return nullptr;
    }
    const auto* one = ast::As<ast::ListLit>(list);
    return one && one->elements.size() == 1 ? one->elements[0].get() : nullptr;
  }

  // `x = x + [e]` on a local list: x's builder (items, length, capacity — the buffer x last grew
  // into and how far) lets the append store in place, without a call, while x still holds exactly
  // what its last append made of that buffer. Any other list value sharing the buffer is a shorter
  // prefix of it, so writing past the builder's length changes nothing anyone can see; a local
  // assigned anything else no longer matches its builder and grows into a fresh buffer.
  void EmitLocalAppend(const ast::Local* local, const ast::Expr& elem) {
    const Type* lt = local->type;
    llvm::Type* et = Ty(lt->elem);
    Value* slot = LocalSlot(local);
    Value* builder = ListBuilder(local);
    Value* cur = b_.CreateLoad(list_, slot);
    Value* items = b_.CreateExtractValue(cur, {0});
    Value* n = b_.CreateExtractValue(cur, {1});
    Value* e = Coerce(Emit(elem), elem.type, lt->elem);
    Value* own_items = b_.CreateLoad(ptr_, b_.CreateStructGEP(builder_ty_, builder, 0));
    Value* own_n = b_.CreateLoad(i64_, b_.CreateStructGEP(builder_ty_, builder, 1));
    Value* cap = b_.CreateLoad(i64_, b_.CreateStructGEP(builder_ty_, builder, 2));
    Value* in_place = b_.CreateAnd(b_.CreateAnd(b_.CreateICmpEQ(items, own_items), b_.CreateICmpEQ(n, own_n)),
                                   b_.CreateICmpSLT(n, cap));
    Value* n1 = b_.CreateAdd(n, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    EmitIfElse(
        in_place,
        [&] {
          b_.CreateStore(e, b_.CreateGEP(et, items, n));
          b_.CreateStore(n1, b_.CreateStructGEP(builder_ty_, builder, 1));
          b_.CreateStore(b_.CreateInsertValue(cur, n1, {1}), slot);
        },
        [&] {
          Value* tmp = Alloca(et);
          b_.CreateStore(e, tmp);
          Value* out = Alloca(list_);
          CallRt("kiln_rt_list_grow", b_.getVoidTy(),
                 {items, n, tmp, b_.getInt64(SizeOf(et)), builder, out}, true);
          b_.CreateStore(b_.CreateLoad(list_, out), slot);
        });
  }

  // The builder of a local list in this function: zeroed at entry, so it matches no list.
  Value* ListBuilder(const ast::Local* local) {
    Value*& b = list_builders_[{fn_, local}];
    if (b) return b;
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    b = entry.CreateAlloca(builder_ty_);
    entry.CreateStore(llvm::Constant::getNullValue(builder_ty_), b);
    return b;
  }

  // The map an indexed assignment writes into: `m` itself, or for `m[a][b] = v` the inner map
  // `m[a]`, inserted empty when missing, so that the write lands in `m` and not in a temporary
  // zero value. An inner map created under state lives in the session arena, like its root.
  Value* EmitMapForWrite(const ast::Expr& e) {
    const auto* inner = ast::As<ast::Index>(&e);
    if (!inner || !IsKind(inner->operand->type, TypeKind::Map)) return Emit(e);
    Value* outer = EmitMapForWrite(*inner->operand);
    Value* key = Emit(*inner->index);
    bool in_state = RootIsState(e);
    Value* prev = in_state ? CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)})
                           : nullptr;
    Value* slot = MapSlot(inner->operand->type, outer, key, inner->index->type, /*insert=*/true,
                          e.type);
    if (prev) CallRt("kiln_rt_set_arena", ptr_, {prev});
    return b_.CreateLoad(ptr_, slot);
  }

  bool RootIsState(const ast::Expr& e) {
    if (const auto* n = ast::As<ast::NameRef>(&e)) return n->ref == ast::NameKind::State;
    if (const auto* i = ast::As<ast::Index>(&e)) return RootIsState(*i->operand);
    return false;
  }

  // Whether evaluating `e` may call a policy function (which may insert into a state map and so
  // move the slots of that map). Standard-library natives never write policy maps.
  static bool CallsPolicyFunction(const ast::Expr& e) {
    bool calls = false;
    passes::Walker w;
    w.on_expr = [&](ast::Expr* x) {
      if (const auto* c = ast::As<ast::Call>(x); c && c->call == ast::CallKind::Function)
        calls = true;
    };
    w.Expr(const_cast<ast::Expr*>(&e));
    return calls;
  }

  // `kiln.map.find_i(map, key, value_size)`: the value slot of an int key, or null. Small maps
  // (the usual per-call map keyed by job or queue) are scanned inline over the KMap's key array;
  // past kMapLinearLimit entries the host's hash index answers. Inlined at every use, so the
  // value size folds to a constant.
  // An internal helper function the JIT'd code calls for a pure read: no throw, reads memory
  // only, returns; always inlined, or never (kept out of line to keep its callers small).
  Function* PureHelper(const char* name, llvm::FunctionType* type, bool always_inline) {
    auto* fn = Function::Create(type, Function::InternalLinkage, name, m_);
    fn->addFnAttr(always_inline ? llvm::Attribute::AlwaysInline : llvm::Attribute::NoInline);
    fn->setDoesNotThrow();
    fn->setOnlyReadsMemory();
    fn->setWillReturn();
    return fn;
  }

  // String equality inline: strings of different lengths differ without a call (most taint
  // effects, label values and names compared in predicates), and equal lengths up to
  // kInlineStrEqBytes compare bytes with memcmp, which the code generator expands into a few loads
  // when one side is a literal. Longer equal lengths go to the host (kiln_rt_str_eq), which
  // charges the bytes as host work before it compares, as every other builtin that walks a
  // string does (issue 28): a loop of comparisons of long equal strings runs out of the call's
  // host-work budget instead of walking gigabytes under the loop budget alone. Not a PureHelper:
  // the charge writes the thread's budget.
  static constexpr int64_t kInlineStrEqBytes = 64;
  Function* StrEqFn() {
    if (str_eq_) return str_eq_;
    auto* fn = Function::Create(llvm::FunctionType::get(i1_, {ptr_, i64_, ptr_, i64_}, false),
                                Function::InternalLinkage, "kiln.str_eq", m_);
    fn->addFnAttr(llvm::Attribute::AlwaysInline);
    fn->setDoesNotThrow();
    fn->setWillReturn();
    llvm::IRBuilder<> b(ctx_);
    auto* entry = BasicBlock::Create(ctx_, "entry", fn);
    auto* same_len = BasicBlock::Create(ctx_, "same_len", fn);
    auto* bytes = BasicBlock::Create(ctx_, "bytes", fn);
    auto* inline_bytes = BasicBlock::Create(ctx_, "inline_bytes", fn);
    auto* host_bytes = BasicBlock::Create(ctx_, "host_bytes", fn);
    auto* differ = BasicBlock::Create(ctx_, "differ", fn);
    auto* equal = BasicBlock::Create(ctx_, "equal", fn);
    b.SetInsertPoint(entry);
    b.CreateCondBr(b.CreateICmpEQ(fn->getArg(1), fn->getArg(3)), same_len, differ);
    b.SetInsertPoint(same_len);
    // Empty strings may have null data.
    b.CreateCondBr(b.CreateICmpSLE(fn->getArg(1), b.getInt64(0)), equal, bytes);
    b.SetInsertPoint(bytes);
    b.CreateCondBr(b.CreateICmpSGT(fn->getArg(1), b.getInt64(kInlineStrEqBytes)), host_bytes,
                   inline_bytes);
    b.SetInsertPoint(inline_bytes);
    llvm::FunctionCallee memcmp = m_.getOrInsertFunction(
        "memcmp", llvm::FunctionType::get(b.getInt32Ty(), {ptr_, ptr_, i64_}, false));
    Value* c = b.CreateCall(memcmp, {fn->getArg(0), fn->getArg(2), fn->getArg(1)});
    b.CreateRet(b.CreateICmpEQ(c, b.getInt32(0)));
    b.SetInsertPoint(host_bytes);
    llvm::FunctionCallee host = Rt("kiln_rt_str_eq", i1_, {ptr_, ptr_, i64_});
    // It reads the two strings and writes only the thread's budget and fault record, which no
    // policy code reads: loads of policy memory may still move across it.
    if (auto* host_fn = llvm::dyn_cast<Function>(host.getCallee())) {
      host_fn->setMemoryEffects(llvm::MemoryEffects::argMemOnly(llvm::ModRefInfo::Ref) |
                                llvm::MemoryEffects::inaccessibleMemOnly());
      host_fn->setDoesNotThrow();
    }
    b.CreateRet(b.CreateCall(host, {fn->getArg(0), fn->getArg(2), fn->getArg(1)}));
    b.SetInsertPoint(differ);
    b.CreateRet(b.getFalse());
    b.SetInsertPoint(equal);
    b.CreateRet(b.getTrue());
    str_eq_ = fn;
    return fn;
  }

  // Past the linear limit, KMap::FindInt's open-addressing probe as JIT'd code: a direct call
  // instead of the host's kiln_rt_map_find_i (drf's job_order does two per comparison in a
  // 10k-entry map). Kept out of line so the small-map scan stays small enough to inline.
  Function* MapProbeIntFn() {
    if (map_probe_i_) return map_probe_i_;
    Function* fn = PureHelper("kiln.map.probe_i", llvm::FunctionType::get(ptr_, {ptr_, i64_, i64_}, false),
                              /*always_inline=*/false);
    llvm::IRBuilder<> b(ctx_);
    Value* map = fn->getArg(0);
    Value* key = fn->getArg(1);
    Value* value_size = fn->getArg(2);
    auto* entry = BasicBlock::Create(ctx_, "entry", fn);
    auto* probe = BasicBlock::Create(ctx_, "probe", fn);
    auto* occupied = BasicBlock::Create(ctx_, "occupied", fn);
    auto* hit = BasicBlock::Create(ctx_, "hit", fn);
    auto* step = BasicBlock::Create(ctx_, "next", fn);
    auto* missing = BasicBlock::Create(ctx_, "missing", fn);
    b.SetInsertPoint(entry);
    Value* keys = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapIntKeysOffset));
    Value* index = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapIndexOffset));
    Value* mask = b.CreateLoad(i64_, b.CreateConstGEP1_64(i8_, map, kMapIndexMaskOffset));
    Value* x = b.CreateMul(key, b.getInt64(static_cast<int64_t>(kMapHashMultiplier)));
    Value* h = b.CreateXor(x, b.CreateLShr(x, b.getInt64(kMapHashShift)));
    Value* first = b.CreateAnd(h, mask);
    b.CreateBr(probe);
    b.SetInsertPoint(probe);
    llvm::PHINode* bucket = b.CreatePHI(i64_, 2);
    bucket->addIncoming(first, entry);
    Value* e = b.CreateLoad(i32_, b.CreateGEP(i32_, index, bucket));
    b.CreateCondBr(b.CreateICmpEQ(e, b.getInt32(0)), missing, occupied);
    b.SetInsertPoint(occupied);
    Value* at = b.CreateSub(b.CreateSExt(e, i64_), b.getInt64(1));
    Value* k = b.CreateLoad(i64_, b.CreateGEP(i64_, keys, at));
    b.CreateCondBr(b.CreateICmpEQ(k, key), hit, step);
    b.SetInsertPoint(step);
    bucket->addIncoming(b.CreateAnd(b.CreateAdd(bucket, b.getInt64(1)), mask), step);
    b.CreateBr(probe);
    b.SetInsertPoint(hit);
    Value* values = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapValuesOffset));
    b.CreateRet(b.CreateGEP(i8_, values, b.CreateMul(at, value_size)));
    b.SetInsertPoint(missing);
    b.CreateRet(llvm::ConstantPointerNull::get(ptr_));
    map_probe_i_ = fn;
    return fn;
  }

  Function* MapFindIntFn() {
    if (map_find_i_) return map_find_i_;
    // A pure read: the optimiser may merge repeated lookups of one key in one map while nothing
    // writes memory in between (`if m[k] > x { m[k] -= 1; }` scans once; see RunO2's early CSE).
    Function* fn = PureHelper("kiln.map.find_i", llvm::FunctionType::get(ptr_, {ptr_, i64_, i64_}, false),
                              /*always_inline=*/true);
    llvm::IRBuilder<> b(ctx_);
    Value* map = fn->getArg(0);
    Value* key = fn->getArg(1);
    Value* value_size = fn->getArg(2);
    auto* entry = BasicBlock::Create(ctx_, "entry", fn);
    auto* scan = BasicBlock::Create(ctx_, "scan", fn);
    auto* loop = BasicBlock::Create(ctx_, "loop", fn);
    auto* body = BasicBlock::Create(ctx_, "body", fn);
    auto* next = BasicBlock::Create(ctx_, "next", fn);
    auto* found = BasicBlock::Create(ctx_, "found", fn);
    auto* missing = BasicBlock::Create(ctx_, "missing", fn);
    auto* hashed = BasicBlock::Create(ctx_, "hashed", fn);
    b.SetInsertPoint(entry);
    Value* size = b.CreateLoad(i64_, b.CreateConstGEP1_64(i8_, map, kMapSizeOffset));
    b.CreateCondBr(b.CreateICmpSLE(size, b.getInt64(kMapLinearLimit)), scan, hashed);
    b.SetInsertPoint(hashed);
    b.CreateRet(b.CreateCall(MapProbeIntFn(), {map, key, value_size}));
    b.SetInsertPoint(scan);
    Value* keys = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapIntKeysOffset));
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* i = b.CreatePHI(i64_, 2);
    i->addIncoming(b.getInt64(0), scan);
    b.CreateCondBr(b.CreateICmpSLT(i, size), body, missing);
    b.SetInsertPoint(body);
    Value* k = b.CreateLoad(i64_, b.CreateGEP(i64_, keys, i));
    b.CreateCondBr(b.CreateICmpEQ(k, key), found, next);
    b.SetInsertPoint(next);
    Value* i1 = b.CreateAdd(i, b.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    i->addIncoming(i1, next);
    b.CreateBr(loop);
    b.SetInsertPoint(found);
    Value* values = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapValuesOffset));
    b.CreateRet(b.CreateGEP(i8_, values, b.CreateMul(i, value_size)));
    b.SetInsertPoint(missing);
    b.CreateRet(llvm::ConstantPointerNull::get(ptr_));
    map_find_i_ = fn;
    return fn;
  }

  // `kiln.map.find_v(map, key, value_size, index_offset)`: kiln.map.find_i for a view-keyed map.
  // Once the map has a dense table (past the linear limit; a state map's from its first entry)
  // it answers first: the key's index (read from the view at `index_offset`), the table's entry
  // for it, and the key stored at that entry, which must be the key looked up; anything else (no
  // table yet, an index outside it, an empty or shared slot) goes to find_i. Always inlined, so
  // the offset and value size fold to constants.
  Function* MapFindViewFn() {
    if (map_find_v_) return map_find_v_;
    Function* fn = PureHelper("kiln.map.find_v",
                              llvm::FunctionType::get(ptr_, {ptr_, i64_, i64_, i64_}, false),
                              /*always_inline=*/true);
    llvm::IRBuilder<> b(ctx_);
    Value* map = fn->getArg(0);
    Value* key = fn->getArg(1);
    Value* value_size = fn->getArg(2);
    Value* index_offset = fn->getArg(3);
    auto* entry = BasicBlock::Create(ctx_, "entry", fn);
    auto* has_table = BasicBlock::Create(ctx_, "has_table", fn);
    auto* has_key = BasicBlock::Create(ctx_, "has_key", fn);
    auto* in_table = BasicBlock::Create(ctx_, "in_table", fn);
    auto* candidate = BasicBlock::Create(ctx_, "candidate", fn);
    auto* hit = BasicBlock::Create(ctx_, "hit", fn);
    auto* generic = BasicBlock::Create(ctx_, "generic", fn);
    b.SetInsertPoint(entry);
    Value* size = b.CreateLoad(i64_, b.CreateConstGEP1_64(i8_, map, kMapSizeOffset));
    Value* dense = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapDenseOffset));
    b.CreateCondBr(b.CreateIsNotNull(dense), has_table, generic);
    b.SetInsertPoint(has_table);
    b.CreateCondBr(b.CreateICmpNE(key, b.getInt64(0)), has_key, generic);
    b.SetInsertPoint(has_key);
    Value* view = b.CreateIntToPtr(key, ptr_);
    Value* idx = b.CreateLoad(i64_, b.CreateGEP(i8_, view, index_offset));
    Value* dense_size = b.CreateLoad(i64_, b.CreateConstGEP1_64(i8_, map, kMapDenseSizeOffset));
    b.CreateCondBr(b.CreateICmpULT(idx, dense_size), in_table, generic);
    b.SetInsertPoint(in_table);
    Value* e = b.CreateLoad(i32_, b.CreateGEP(i32_, dense, idx));
    Value* at = b.CreateSub(b.CreateSExt(e, i64_), b.getInt64(1));
    // e == 0 (no entry) makes `at` -1, which is not below size either.
    b.CreateCondBr(b.CreateICmpULT(at, size), candidate, generic);
    b.SetInsertPoint(candidate);
    Value* keys = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapIntKeysOffset));
    Value* k = b.CreateLoad(i64_, b.CreateGEP(i64_, keys, at));
    b.CreateCondBr(b.CreateICmpEQ(k, key), hit, generic);
    b.SetInsertPoint(hit);
    Value* values = b.CreateLoad(ptr_, b.CreateConstGEP1_64(i8_, map, kMapValuesOffset));
    b.CreateRet(b.CreateGEP(i8_, values, b.CreateMul(at, value_size)));
    b.SetInsertPoint(generic);
    b.CreateRet(b.CreateCall(MapFindIntFn(), {map, key, value_size}));
    map_find_v_ = fn;
    return fn;
  }

  // find_v for view-keyed maps, find_i for the other int-keyed ones.
  Value* FindIntKey(const Type* mt, Value* map, Value* k, Value* value_size) {
    if (int32_t off = ViewIndexOffset(mt->key); off >= 0)
      return b_.CreateCall(MapFindViewFn(), {map, k, value_size, b_.getInt64(off)});
    return b_.CreateCall(MapFindIntFn(), {map, k, value_size});
  }

  // Slot of `key` in a map (inserting the value type's zero value when asked), or null.
  Value* MapSlot(const Type* mt, Value* map, Value* key, const Type* key_type, bool insert,
                 const Type* vt) {
    bool string_key = IsKind(mt->key, TypeKind::String);
    Value* value_size = b_.getInt64(static_cast<int64_t>(SizeOf(Ty(vt))));
    if (!insert) {
      if (string_key)
        return CallRt("kiln_rt_map_find_s", ptr_,
                      {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1})});
      return FindIntKey(mt, map, KeyInt(key, key_type), value_size);
    }
    Value* inserted = Alloca(i8_);
    Value* slot = nullptr;
    if (string_key) {
      slot = CallRt("kiln_rt_map_slot_s", ptr_,
                    {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1}),
                     inserted},
                    true);
    } else {
      // Found inline, or inserted by the host (which may grow the map, so it allocates).
      Value* k = KeyInt(key, key_type);
      Value* found = FindIntKey(mt, map, k, value_size);
      b_.CreateStore(b_.getInt8(0), inserted);
      BasicBlock* pre = b_.GetInsertBlock();
      BasicBlock* miss = BasicBlock::Create(ctx_, "map.insert", fn_);
      BasicBlock* join = BasicBlock::Create(ctx_, "map.slot", fn_);
      b_.CreateCondBr(b_.CreateIsNull(found), miss, join);
      b_.SetInsertPoint(miss);
      Value* added = CallRt("kiln_rt_map_slot_i", ptr_, {map, k, inserted}, true);
      BasicBlock* miss_end = b_.GetInsertBlock();
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      llvm::PHINode* phi = b_.CreatePHI(ptr_, 2);
      phi->addIncoming(found, pre);
      phi->addIncoming(added, miss_end);
      slot = phi;
    }
    // Zero-filled bytes are the zero value of every type except those with a non-null zero.
    if (vt->kind == TypeKind::Resource || vt->kind == TypeKind::Map ||
        vt->kind == TypeKind::TaskStatus || vt->kind == TypeKind::Validation ||
        vt->kind == TypeKind::Record) {
      Value* fresh = b_.CreateICmpNE(b_.CreateLoad(i8_, inserted), b_.getInt8(0));
      EmitIfElse(fresh, [&] { b_.CreateStore(ZeroOf(vt), slot); }, {});
    }
    return slot;
  }

  Value* KeyInt(Value* key, const Type* key_type) {
    if (key->getType()->isPointerTy()) return b_.CreatePtrToInt(key, i64_);
    if (key->getType() == i32_) return b_.CreateZExt(key, i64_);
    if (key->getType() == i64_) return key;
    Fail(nullptr, fmt::format("unsupported map key type {}", key_type ? key_type->Name() : "?"));
  }
  Value* KeyFromInt(Value* k, const Type* key_type) {
    if (IsViewPtr(key_type)) return b_.CreateIntToPtr(k, ptr_);
    if (Ty(key_type) == i32_) return b_.CreateTrunc(k, i32_);
    return k;
  }

  // The built-in `range(n)` / `range(a, b)`, or null.
  static const ast::Call* RangeCall(const ast::Expr& e) {
    const auto* call = ast::As<ast::Call>(&e);
    if (!call || call->callee != "range" || call->receiver || call->call != ast::CallKind::Builtin)
      return nullptr;
    return call->args.size() == 1 || call->args.size() == 2 ? call : nullptr;
  }
  // {first value, count}: `range(n)` is 0..n-1, `range(a, b)` is a..b-1; empty when b <= a.
  std::pair<Value*, Value*> RangeBounds(const ast::Call& call) {
    Value* lo = call.args.size() == 2 ? Emit(*call.args[0]) : b_.getInt64(0);
    Value* hi = Emit(*call.args.back());
    Value* n = b_.CreateSelect(b_.CreateICmpSGT(hi, lo), b_.CreateSub(hi, lo), b_.getInt64(0));
    return {lo, n};
  }

  // Iterates a collection: `body(first, second)` gets the element (list) or key/value (map).
  void EmitIterate(const ast::Expr& source,
                   const std::function<void(Value*, Value*)>& body, BasicBlock** continue_to,
                   BasicBlock** break_to) {
    const Type* st = source.type;
    // `range(n)`, `range(a, b)`: counted without building the list.
    if (const ast::Call* call = RangeCall(source)) {
      auto [lo, n] = RangeBounds(*call);
      LoopN(n, [&](Value* i) { body(b_.CreateAdd(lo, i), nullptr); }, continue_to, break_to);
      return;
    }
    // A view's label/annotation map: iterate through the host's _size/_at accessors.
    if (const AbiFieldInfo* f = StringMapField(source)) {
      Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
      std::string fn(f->host);
      Value* n = CallRt(fn + "_size", i64_, {obj});
      LoopN(n, [&](Value* i) {
        Value* k = Alloca(str_);
        Value* v = Alloca(str_);
        CallRt(fn + "_at", b_.getVoidTy(), {obj, i, k, v});
        body(b_.CreateLoad(str_, k), b_.CreateLoad(str_, v));
      }, continue_to, break_to);
      return;
    }
    // A view's record or string list (node.taints, task.tolerations, term.values): iterate through
    // the host's _size/_at accessors instead of first copying the list into the call arena, as
    // using it as a value does. The views are read-only during a call, so the walk sees the
    // same elements.
    if (const AbiFieldInfo* f = ViewListField(source)) {
      Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
      std::string fn(f->host);
      llvm::Type* et = f->kind == FieldKind::StringList ? static_cast<llvm::Type*>(str_) : ptr_;
      Value* n = CallRt(fn + "_size", i64_, {obj});
      LoopN(n, [&](Value* i) { body(CallRt(fn + "_at", et, {obj, i}), nullptr); }, continue_to,
            break_to);
      return;
    }
    if (IsKind(st, TypeKind::List)) {
      Value* list = Emit(source);
      Value* items = b_.CreateExtractValue(list, {0});
      Value* n = b_.CreateExtractValue(list, {1});
      llvm::Type* et = Ty(st->elem);
      LoopN(n, [&](Value* i) { body(b_.CreateLoad(et, b_.CreateGEP(et, items, i)), nullptr); },
            continue_to, break_to);
      return;
    }
    if (IsKind(st, TypeKind::Map)) {
      Value* map = Emit(source);
      Value* n = CallRt("kiln_rt_map_size", i64_, {map});
      bool string_key = IsKind(st->key, TypeKind::String);
      llvm::Type* vt = Ty(st->elem);
      LoopN(n, [&](Value* i) {
        Value* key = string_key ? CallStrOut("kiln_rt_map_key_s", {map, i}, false)
                                : KeyFromInt(CallRt("kiln_rt_map_key_i", i64_, {map, i}), st->key);
        Value* val = b_.CreateLoad(vt, CallRt("kiln_rt_map_value_at", ptr_, {map, i}));
        body(key, val);
      }, continue_to, break_to);
      return;
    }
    Fail(&source, fmt::format("cannot iterate over {}", st ? st->Name() : "?"));
  }

  // A counted loop with break/continue targets exposed to the body. It reserves its iterations
  // from the loop budget on entry (LoopBudget::Reserve: at most `n`, fewer when the budget is
  // short) and gives back the rest when the body leaves early (a break here, a return in
  // EmitStmt through budget_loops_).
  void LoopN(Value* n, const std::function<void(Value*)>& body, BasicBlock** continue_to,
             BasicBlock** break_to) {
    Value* reserved = budget_.Reserve(b_, n);
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* head = BasicBlock::Create(ctx_, "for", fn_);
    BasicBlock* bodyb = BasicBlock::Create(ctx_, "for.body", fn_);
    BasicBlock* step = BasicBlock::Create(ctx_, "for.step", fn_);
    BasicBlock* exit = BasicBlock::Create(ctx_, "for.exit", fn_);
    BasicBlock* brk = BasicBlock::Create(ctx_, "for.break", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "for.done", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(i64_, 2);
    i->addIncoming(b_.getInt64(0), pre);
    b_.CreateCondBr(b_.CreateICmpSLT(i, reserved), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    if (continue_to) *continue_to = step;
    if (break_to) *break_to = brk;
    budget_loops_.emplace_back(reserved, i);
    body(i);
    budget_loops_.pop_back();
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(step);
    b_.SetInsertPoint(step);
    i->addIncoming(b_.CreateAdd(i, b_.getInt64(1)), step);
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    budget_.AfterLoop(b_, done);  // reports the budget spent when this loop was cut short
    if (llvm::pred_empty(brk)) {
      brk->eraseFromParent();
    } else {
      b_.SetInsertPoint(brk);
      budget_.Refund(b_, reserved, i);
      b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
  }

  void EmitFor(const ast::For& f) {
    EmitIterateWithLoops(*f.source, [&](Value* first, Value* second) {
      b_.CreateStore(first, LocalSlot(f.first.get()));
      if (f.second) b_.CreateStore(second, LocalSlot(f.second.get()));
      EmitBlock(*f.body);
    });
  }

  void EmitIterateWithLoops(const ast::Expr& source,
                            const std::function<void(Value*, Value*)>& body) {
    BasicBlock* cont = nullptr;
    BasicBlock* brk = nullptr;
    EmitIterate(
        source,
        [&](Value* a, Value* b) {
          loops_.emplace_back(cont, brk);
          body(a, b);
          loops_.pop_back();
        },
        &cont, &brk);
  }

  // ------------------------------------------------------------------------------------------
  // Expressions

  Value* Emit(const ast::Expr& e) {
    Value* v = EmitExpr(e);
    // A read of in-place state that something may hold on to (state_in_place.h).
    if (in_place_.pinning_reads.count(&e)) {
      Value* r = v;
      if (IsKind(e.type, TypeKind::Optional))
        r = IsPtrOptional(e.type) ? v : b_.CreateExtractValue(v, {1});
      CallRt("kiln_rt_res_pin", b_.getVoidTy(), {r}, /*allocates=*/true);
    }
    return v;
  }

  Value* EmitExpr(const ast::Expr& e) {
    switch (e.kind) {
      case ast::NodeKind::IntLit: return b_.getInt64(static_cast<const ast::IntLit&>(e).value);
      case ast::NodeKind::FloatLit:
        return llvm::ConstantFP::get(f64_, static_cast<const ast::FloatLit&>(e).value);
      case ast::NodeKind::StringLit: return Str(static_cast<const ast::StringLit&>(e).value);
      case ast::NodeKind::BoolLit: return b_.getInt1(static_cast<const ast::BoolLit&>(e).value);
      case ast::NodeKind::DurationLit:
        return b_.getInt64(static_cast<const ast::DurationLit&>(e).nanos);
      case ast::NodeKind::QuantityLit:
        return llvm::ConstantFP::get(f64_, static_cast<const ast::QuantityLit&>(e).value);
      case ast::NodeKind::NoneLit:
        return IsKind(e.type, TypeKind::Optional) ? NoneOf(e.type)
                                                  : llvm::ConstantPointerNull::get(ptr_);
      case ast::NodeKind::NameRef: return EmitName(static_cast<const ast::NameRef&>(e));
      case ast::NodeKind::Unary: return EmitUnary(static_cast<const ast::Unary&>(e));
      case ast::NodeKind::Binary: return EmitBinary(static_cast<const ast::Binary&>(e));
      case ast::NodeKind::Conditional: {
        const auto& c = static_cast<const ast::Conditional&>(e);
        return EmitChoice(Emit(*c.cond), e.type, [&] {
          return Coerce(Emit(*c.then), c.then->type, e.type);
        }, [&] { return Coerce(Emit(*c.otherwise), c.otherwise->type, e.type); });
      }
      case ast::NodeKind::Select: return EmitSelect(static_cast<const ast::Select&>(e));
      case ast::NodeKind::Index: return EmitIndex(static_cast<const ast::Index&>(e));
      case ast::NodeKind::Call: return EmitCall(static_cast<const ast::Call&>(e));
      case ast::NodeKind::Comprehension:
        return EmitComprehension(static_cast<const ast::Comprehension&>(e));
      case ast::NodeKind::ListLit: {
        const auto& l = static_cast<const ast::ListLit&>(e);
        std::vector<Value*> values;
        for (const ast::ExprPtr& el : l.elements)
          values.push_back(Coerce(Emit(*el), el->type, e.type->elem));
        return BuildList(e.type->elem, values);
      }
      case ast::NodeKind::MapLit: {
        const auto& ml = static_cast<const ast::MapLit&>(e);
        Value* map = NewMap(e.type);
        for (const ast::MapEntry& entry : ml.entries) {
          Value* k = Coerce(Emit(*entry.key), entry.key->type, e.type->key);
          Value* v = Coerce(Emit(*entry.value), entry.value->type, e.type->elem);
          b_.CreateStore(v, MapSlot(e.type, map, k, e.type->key, true, e.type->elem));
        }
        return map;
      }
      case ast::NodeKind::ResourceLit: return EmitResourceLit(static_cast<const ast::ResourceLit&>(e));
      case ast::NodeKind::RecordLit: {
        // Start from the record's defaults, then the fields written.
        const auto& rl = static_cast<const ast::RecordLit&>(e);
        Value* v = ZeroOf(e.type);
        const ast::RecordDecl* rec = e.type->record;
        for (const ast::FieldInit& f : rl.fields) {
          int idx = f.field >= 0 ? f.field : rec->FieldIndex(f.name);
          if (idx < 0) Fail(&e, fmt::format("record {} has no field `{}`", rec->name, f.name));
          Value* fv = Coerce(Emit(*f.value), f.value->type, rec->fields[idx].declared.resolved);
          v = b_.CreateInsertValue(v, fv, {static_cast<unsigned>(idx)});
        }
        return v;
      }
      default: Fail(&e, fmt::format("cannot lower expression {}", ast::KindName(e.kind)));
    }
  }

  Value* EmitChoice(Value* cond, const Type* t, const std::function<Value*()>& then,
                    const std::function<Value*()>& otherwise) {
    BasicBlock* tb = BasicBlock::Create(ctx_, "sel.then", fn_);
    BasicBlock* eb = BasicBlock::Create(ctx_, "sel.else", fn_);
    BasicBlock* done = BasicBlock::Create(ctx_, "sel.done", fn_);
    b_.CreateCondBr(cond, tb, eb);
    b_.SetInsertPoint(tb);
    Value* tv = then();
    BasicBlock* tend = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(eb);
    Value* ev = otherwise();
    BasicBlock* eend = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(tv->getType(), 2);
    phi->addIncoming(tv, tend);
    phi->addIncoming(ev, eend);
    return phi;
  }

  Value* BuildList(const Type* elem, const std::vector<Value*>& values) {
    llvm::Type* et = Ty(elem);
    if (values.empty()) return llvm::Constant::getNullValue(list_);
    Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.getInt64(SizeOf(et) * values.size())}, true);
    for (size_t i = 0; i < values.size(); ++i)
      b_.CreateStore(values[i], b_.CreateConstGEP1_64(et, items, i));
    Value* list = llvm::UndefValue::get(list_);
    list = b_.CreateInsertValue(list, items, {0});
    return b_.CreateInsertValue(list, b_.getInt64(static_cast<int64_t>(values.size())), {1});
  }

  Value* EmitName(const ast::NameRef& n) {
    switch (n.ref) {
      case ast::NameKind::Local: return b_.CreateLoad(Ty(n.local->type), LocalSlot(n.local));
      case ast::NameKind::Const: {
        const ast::ConstDecl* c = n.const_decl;
        return Coerce(Emit(*c->value), c->value->type, c->type ? c->type : c->value->type);
      }
      case ast::NameKind::Arg:
        return b_.CreateLoad(Ty(n.arg_decl->declared.resolved), ArgPtr(n.arg_decl));
      case ast::NameKind::State:
        return b_.CreateLoad(Ty(n.state_decl->declared.resolved), StatePtr(n.state_decl));
      case ast::NameKind::Session: return ictx_;
      case ast::NameKind::StdConstant: {
        if (IsKind(n.type, TypeKind::Fit) && n.name == "fits")
          return llvm::Constant::getNullValue(fit_);
        if (IsKind(n.type, TypeKind::Validation) && n.name == "valid") return ZeroOf(n.type);
        auto constants = stdlib::Constants();
        if (n.std_constant >= 0 && static_cast<size_t>(n.std_constant) < constants.size())
          return b_.getInt32(static_cast<int32_t>(constants[n.std_constant].value));
        if (auto c = NamedConstant(n.type, n.name)) return b_.getInt32(static_cast<int32_t>(*c));
        Fail(&n, fmt::format("unknown standard constant `{}`", n.name));
      }
      case ast::NameKind::Unresolved: Fail(&n, fmt::format("unresolved name `{}`", n.name));
    }
    Fail(&n, "bad name");
  }

  Value* EmitUnary(const ast::Unary& u) {
    Value* v = Emit(*u.operand);
    if (u.op == ast::UnaryOp::Not) return b_.CreateNot(v);
    if (IsFloatLike(u.type)) return b_.CreateFNeg(Coerce(v, u.operand->type, u.type));
    return SatSub(b_.getInt64(0), v);
  }

  Value* SatAdd(Value* a, Value* b) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, a, b);
  }
  Value* SatSub(Value* a, Value* b) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_sat, a, b);
  }
  Value* SatMul(Value* a, Value* b) {
    Value* r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smul_with_overflow, a, b);
    Value* prod = b_.CreateExtractValue(r, {0});
    Value* ovf = b_.CreateExtractValue(r, {1});
    // On overflow the sign of the true product is sign(a) xor sign(b).
    Value* neg = b_.CreateICmpSLT(b_.CreateXor(a, b), b_.getInt64(0));
    Value* sat = b_.CreateSelect(neg, b_.getInt64(std::numeric_limits<int64_t>::min()),
                                 b_.getInt64(std::numeric_limits<int64_t>::max()));
    return b_.CreateSelect(ovf, sat, prod);
  }
  // Division and remainder by zero give 0; INT64_MIN / -1 saturates (and its remainder is 0).
  Value* SafeDiv(Value* a, Value* b, bool rem) {
    Value* zero = b_.CreateICmpEQ(b, b_.getInt64(0));
    Value* minus1 = b_.CreateICmpEQ(b, b_.getInt64(-1));
    Value* safe_b = b_.CreateSelect(b_.CreateOr(zero, minus1), b_.getInt64(1), b);
    Value* q = rem ? b_.CreateSRem(a, safe_b) : b_.CreateSDiv(a, safe_b);
    Value* neg_a = rem ? static_cast<Value*>(b_.getInt64(0)) : SatSub(b_.getInt64(0), a);
    return b_.CreateSelect(zero, b_.getInt64(0), b_.CreateSelect(minus1, neg_a, q));
  }

  Value* Arith(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
               const Type* result, const ast::Node* at) {
    if (IsKind(result, TypeKind::String) && op == ast::BinaryOp::Add) {
      return CallStrOut("kiln_rt_str_concat",
                        {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                         b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})},
                        true);
    }
    if (IsKind(result, TypeKind::List) && op == ast::BinaryOp::Add) return ListConcat(l, r, result);
    if (IsKind(result, TypeKind::Resource)) {
      if (op == ast::BinaryOp::Add) return CallRt("kiln_rt_res_add", ptr_, {l, r}, true);
      if (op == ast::BinaryOp::Sub) return CallRt("kiln_rt_res_sub", ptr_, {l, r}, true);
      if (op == ast::BinaryOp::Mul) {
        if (IsKind(lt, TypeKind::Resource))
          return CallRt("kiln_rt_res_mul", ptr_, {l, Coerce(r, rt, FloatType())}, true);
        return CallRt("kiln_rt_res_mul", ptr_, {r, Coerce(l, lt, FloatType())}, true);
      }
      if (op == ast::BinaryOp::Div) {
        Value* f = Coerce(r, rt, FloatType());
        Value* inv = b_.CreateSelect(b_.CreateFCmpOEQ(f, llvm::ConstantFP::get(f64_, 0.0)),
                                     llvm::ConstantFP::get(f64_, 0.0),
                                     b_.CreateFDiv(llvm::ConstantFP::get(f64_, 1.0), f));
        return CallRt("kiln_rt_res_mul", ptr_, {l, inv}, true);
      }
    }
    if (IsFloatLike(result) || ((IsFloatLike(lt) || IsFloatLike(rt)) && !IsIntLike(result))) {
      Value* a = IsFloatLike(lt) ? l : b_.CreateSIToFP(l, f64_);
      Value* c = IsFloatLike(rt) ? r : b_.CreateSIToFP(r, f64_);
      llvm::Constant* zero = llvm::ConstantFP::get(f64_, 0.0);
      switch (op) {
        case ast::BinaryOp::Add: return b_.CreateFAdd(a, c);
        case ast::BinaryOp::Sub: return b_.CreateFSub(a, c);
        case ast::BinaryOp::Mul: return b_.CreateFMul(a, c);
        case ast::BinaryOp::Div:
          return b_.CreateSelect(b_.CreateFCmpOEQ(c, zero), zero, b_.CreateFDiv(a, c));
        case ast::BinaryOp::Mod:
          return b_.CreateSelect(b_.CreateFCmpOEQ(c, zero), zero, b_.CreateFRem(a, c));
        default: break;
      }
    }
    if (IsIntLike(lt) && IsFloatLike(rt) && IsIntLike(result)) {
      // duration * float → duration (nanoseconds, truncated; NaN → 0, saturating).
      Value* f = b_.CreateFMul(b_.CreateSIToFP(l, f64_), r);
      if (op == ast::BinaryOp::Div) {
        llvm::Constant* zero = llvm::ConstantFP::get(f64_, 0.0);
        f = b_.CreateSelect(b_.CreateFCmpOEQ(r, zero), zero, b_.CreateFDiv(b_.CreateSIToFP(l, f64_), r));
      }
      return FloatToInt(f);
    }
    if (IsIntLike(lt) && IsIntLike(rt)) {
      switch (op) {
        case ast::BinaryOp::Add: return SatAdd(l, r);
        case ast::BinaryOp::Sub: return SatSub(l, r);
        case ast::BinaryOp::Mul: return SatMul(l, r);
        case ast::BinaryOp::Div: return SafeDiv(l, r, false);
        case ast::BinaryOp::Mod: return SafeDiv(l, r, true);
        default: break;
      }
    }
    Fail(at, fmt::format("cannot lower `{}` on {} and {}", ast::BinaryOpSpelling(op),
                         lt ? lt->Name() : "?", rt ? rt->Name() : "?"));
  }

  const Type* FloatType() { return policy_.types->Float(); }

  // int(x) for floats: truncates, NaN → 0, saturates at the int bounds.
  Value* FloatToInt(Value* f) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64_, f64_}, {f});
  }

  Value* ListConcat(Value* l, Value* r, const Type* t) {
    llvm::Type* et = Ty(t->elem);
    uint64_t es = SizeOf(et);
    Value* ln = b_.CreateExtractValue(l, {1});
    Value* rn = b_.CreateExtractValue(r, {1});
    Value* n = b_.CreateAdd(ln, rn);
    Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(es))}, true);
    b_.CreateMemCpy(items, llvm::MaybeAlign(8), b_.CreateExtractValue(l, {0}), llvm::MaybeAlign(8),
                    b_.CreateMul(ln, b_.getInt64(es)));
    b_.CreateMemCpy(b_.CreateGEP(et, items, ln), llvm::MaybeAlign(8),
                    b_.CreateExtractValue(r, {0}), llvm::MaybeAlign(8),
                    b_.CreateMul(rn, b_.getInt64(es)));
    Value* out = llvm::UndefValue::get(list_);
    out = b_.CreateInsertValue(out, items, {0});
    return b_.CreateInsertValue(out, n, {1});
  }

  Value* EmitBinary(const ast::Binary& bin) {
    using Op = ast::BinaryOp;
    switch (bin.op) {
      case Op::And:
      case Op::Or: {
        Value* l = Emit(*bin.left);
        bool is_and = bin.op == Op::And;
        return EmitChoice(
            l, bin.type, [&] { return is_and ? Emit(*bin.right) : static_cast<Value*>(b_.getTrue()); },
            [&] { return is_and ? static_cast<Value*>(b_.getFalse()) : Emit(*bin.right); });
      }
      case Op::Coalesce: {
        Value* l = Emit(*bin.left);
        const Type* lt = bin.left->type;
        if (!IsKind(lt, TypeKind::Optional)) return Coerce(l, lt, bin.type);
        return EmitChoice(IsPresent(lt, l), bin.type,
                          [&] { return Coerce(Payload(lt, l), lt->elem, bin.type); },
                          [&] { return Coerce(Emit(*bin.right), bin.right->type, bin.type); });
      }
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
      case Op::Gt:
      case Op::Ge: return EmitCompare(bin);
      case Op::In: return EmitIn(bin);
      default: {
        if (bin.op == Op::Add && IsKind(bin.type, TypeKind::List)) {
          const auto* one = ast::As<ast::ListLit>(bin.right.get());
          if (one && one->elements.size() == 1) {
            // `xs + [e]`: amortised in-place append (kiln_rt_list_append).
            Value* l = Coerce(Emit(*bin.left), bin.left->type, bin.type);
            llvm::Type* et = Ty(bin.type->elem);
            Value* elem = Alloca(et);
            b_.CreateStore(Coerce(Emit(*one->elements[0]), one->elements[0]->type, bin.type->elem), elem);
            Value* out = Alloca(list_);
            CallRt("kiln_rt_list_append", b_.getVoidTy(),
                   {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}), elem,
                    b_.getInt64(SizeOf(et)), out},
                   true);
            return b_.CreateLoad(list_, out);
          }
        }
        Value* l = Emit(*bin.left);
        Value* r = Emit(*bin.right);
        return Arith(bin.op, l, bin.left->type, r, bin.right->type, bin.type, &bin);
      }
    }
  }

  Value* EmitCompare(const ast::Binary& bin) {
    using Op = ast::BinaryOp;
    const Type* lt = bin.left->type;
    const Type* rt = bin.right->type;
    // `x == none` / `x != none`
    bool right_none = IsKind(rt, TypeKind::None) || bin.right->kind == ast::NodeKind::NoneLit;
    bool left_none = IsKind(lt, TypeKind::None) || bin.left->kind == ast::NodeKind::NoneLit;
    if (right_none || left_none) {
      const ast::Expr& opt = right_none ? *bin.left : *bin.right;
      Value* present = IsKind(opt.type, TypeKind::Optional) ? IsPresent(opt.type, Emit(opt))
                                                            : static_cast<Value*>(b_.getTrue());
      return bin.op == Op::Eq ? b_.CreateNot(present) : present;
    }
    Value* l = Emit(*bin.left);
    Value* r = Emit(*bin.right);
    return Compare(bin.op, l, lt, r, rt, &bin);
  }

  Value* Compare(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
                 const ast::Node* at) {
    using Op = ast::BinaryOp;
    using P = llvm::CmpInst::Predicate;
    auto pick = [&](P eq, P ne, P lt_, P le, P gt, P ge) {
      switch (op) {
        case Op::Eq: return eq;
        case Op::Ne: return ne;
        case Op::Lt: return lt_;
        case Op::Le: return le;
        case Op::Gt: return gt;
        default: return ge;
      }
    };
    // Optional vs optional: equal when both absent, or both present with equal payloads.
    if (IsKind(lt, TypeKind::Optional) && IsKind(rt, TypeKind::Optional) &&
        (op == Op::Eq || op == Op::Ne) && !IsPtrOptional(lt)) {
      Value* lp = IsPresent(lt, l);
      Value* rp = IsPresent(rt, r);
      Value* both = b_.CreateAnd(lp, rp);
      Value* eq = EmitChoice(both, nullptr,
                             [&] { return Compare(Op::Eq, Payload(lt, l), lt->elem, Payload(rt, r), rt->elem, at); },
                             [&] { return b_.CreateICmpEQ(lp, rp); });
      return op == Op::Eq ? eq : b_.CreateNot(eq);
    }
    // Optional vs payload: equal when present and equal.
    if (IsKind(lt, TypeKind::Optional) != IsKind(rt, TypeKind::Optional) &&
        (op == Op::Eq || op == Op::Ne) && !IsPtrOptional(lt) && !IsPtrOptional(rt)) {
      bool left_opt = IsKind(lt, TypeKind::Optional);
      Value* opt = left_opt ? l : r;
      const Type* ot = left_opt ? lt : rt;
      Value* plain = left_opt ? r : l;
      const Type* pt = left_opt ? rt : lt;
      Value* present = IsPresent(ot, opt);
      Value* eq = EmitChoice(present, nullptr,
                             [&] { return Compare(Op::Eq, Payload(ot, opt), ot->elem, plain, pt, at); },
                             [&] { return static_cast<Value*>(b_.getFalse()); });
      return op == Op::Eq ? eq : b_.CreateNot(eq);
    }
    if (IsFloatLike(lt) || IsFloatLike(rt)) {
      Value* a = IsFloatLike(lt) ? l : b_.CreateSIToFP(l, f64_);
      Value* c = IsFloatLike(rt) ? r : b_.CreateSIToFP(r, f64_);
      return b_.CreateFCmp(pick(P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT,
                                P::FCMP_OGE), a, c);
    }
    if (IsKind(lt, TypeKind::String) && (op == Op::Eq || op == Op::Ne)) {
      Value* eq = b_.CreateCall(StrEqFn(), {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                                            b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})});
      return op == Op::Eq ? eq : b_.CreateNot(eq);
    }
    if (IsKind(lt, TypeKind::String)) {
      Value* c = CallRt("kiln_rt_str_cmp", i32_,
                        {b_.CreateExtractValue(l, {0}), b_.CreateExtractValue(l, {1}),
                         b_.CreateExtractValue(r, {0}), b_.CreateExtractValue(r, {1})});
      return b_.CreateICmp(pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT,
                                P::ICMP_SGE), c, b_.getInt32(0));
    }
    if (IsKind(lt, TypeKind::Resource)) {
      switch (op) {
        case Op::Le: return CallRt("kiln_rt_res_less_equal", i1_, {l, r, b_.getInt32(0)});
        case Op::Lt: return CallRt("kiln_rt_res_less", i1_, {l, r, b_.getInt32(0)});
        case Op::Ge: return CallRt("kiln_rt_res_less_equal", i1_, {r, l, b_.getInt32(0)});
        case Op::Gt: return CallRt("kiln_rt_res_less", i1_, {r, l, b_.getInt32(0)});
        case Op::Eq: return CallRt("kiln_rt_res_equal", i1_, {l, r});
        case Op::Ne: return b_.CreateNot(CallRt("kiln_rt_res_equal", i1_, {l, r}));
        default: break;
      }
    }
    if (l->getType()->isPointerTy() && r->getType()->isPointerTy())
      return b_.CreateICmp(pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT,
                                P::ICMP_UGE), l, r);
    if (l->getType()->isIntegerTy() && l->getType() == r->getType()) {
      bool is_bool = l->getType() == i1_;
      return b_.CreateICmp(is_bool ? pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE,
                                          P::ICMP_UGT, P::ICMP_UGE)
                                   : pick(P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE,
                                          P::ICMP_SGT, P::ICMP_SGE),
                           l, r);
    }
    Fail(at, fmt::format("cannot compare {} with {}", lt ? lt->Name() : "?", rt ? rt->Name() : "?"));
  }

  Value* EmitIn(const ast::Binary& bin) {
    const Type* ct = bin.right->type;
    // `key in view.labels` asks the view's map in place. This must come before the general map
    // case (a view's labels have a map type too), which would copy every label into a policy map
    // per test: O(labels²) host calls and an allocation, in nodeorder's and predicates' per-node
    // loops.
    if (const AbiFieldInfo* f = HostMapField(*bin.right)) {
      Value* k = Emit(*bin.left);
      Value* obj = Emit(*ast::As<ast::Select>(bin.right.get())->operand);
      Value* out = Alloca(HostMapValueType(*f));
      return CallRt(std::string(f->host), i1_,
                    {obj, b_.CreateExtractValue(k, {0}), b_.CreateExtractValue(k, {1}), out});
    }
    if (IsKind(ct, TypeKind::Map)) {
      Value* k = Coerce(Emit(*bin.left), bin.left->type, ct->key);
      Value* m = Emit(*bin.right);
      return b_.CreateIsNotNull(MapSlot(ct, m, k, ct->key, false, ct->elem));
    }
    if (IsKind(ct, TypeKind::String)) {
      Value* s = Emit(*bin.left);
      Value* h = Emit(*bin.right);
      return CallRt("kiln_rt_str_contains", i1_,
                    {b_.CreateExtractValue(h, {0}), b_.CreateExtractValue(h, {1}),
                     b_.CreateExtractValue(s, {0}), b_.CreateExtractValue(s, {1})});
    }
    if (IsKind(ct, TypeKind::List)) return EmitListContains(*bin.right, *bin.left, &bin);
    Fail(&bin, fmt::format("cannot lower `in` on {}", ct ? ct->Name() : "?"));
  }

  // `x in xs` and `xs.contains(x)`: whether some element equals x, stopping at the first.
  Value* EmitListContains(const ast::Expr& list, const ast::Expr& item, const ast::Node* at) {
    const Type* ct = list.type;
    if (!IsKind(ct, TypeKind::List)) Fail(at, "`contains` needs a list");
    Value* x = Coerce(Emit(item), item.type, ct->elem);
    Value* found = Alloca(i1_);
    b_.CreateStore(b_.getFalse(), found);
    BasicBlock* brk = nullptr;
    EmitIterate(list, [&](Value* el, Value*) {
      Value* eq = Compare(ast::BinaryOp::Eq, el, ct->elem, x, ct->elem, at);
      EmitIfElse(eq, [&] {
        b_.CreateStore(b_.getTrue(), found);
        b_.CreateBr(brk);
      }, {});
    }, nullptr, &brk);
    return b_.CreateLoad(i1_, found);
  }

  // The shape-table entry when `e` is `view.taints`-like (a RecordList or StringList field of a
  // view or shape, read through _size/_at host calls).
  const AbiFieldInfo* ViewListField(const ast::Expr& e) {
    const auto* sel = ast::As<ast::Select>(&e);
    if (!sel || !IsViewPtr(sel->operand->type) || IsKind(sel->operand->type, TypeKind::Session))
      return nullptr;
    if (FindAbiField(ViewOwner(sel->operand->type), sel->field)) return nullptr;
    const AbiFieldInfo* f = FindAbiShapeField(ViewOwner(sel->operand->type), sel->field);
    return f && (f->kind == FieldKind::RecordList || f->kind == FieldKind::StringList) ? f
                                                                                       : nullptr;
  }

  // The ABI entry when `e` is `view.labels`-like (a StringMap field read through host calls).
  const AbiFieldInfo* StringMapField(const ast::Expr& e) {
    const AbiFieldInfo* f = HostMapField(e);
    return f && f->kind == FieldKind::StringMap ? f : nullptr;
  }

  // The same for any string-keyed host map a view has (`labels`, `node.images`): one key is looked
  // up in place by the host function (`bool fn(view, key, len, V* out)`), and its size asked by
  // `fn`_size, instead of copying the whole map into a policy map in the call arena.
  const AbiFieldInfo* HostMapField(const ast::Expr& e) {
    const auto* sel = ast::As<ast::Select>(&e);
    if (!sel || !IsViewPtr(sel->operand->type)) return nullptr;
    const std::string_view owner = ViewOwner(sel->operand->type);
    const AbiFieldInfo* f = FindAbiField(owner, sel->field);
    if (!f) f = FindAbiShapeField(owner, sel->field);
    return f && (f->kind == FieldKind::StringMap || f->kind == FieldKind::IntMap) ? f : nullptr;
  }
  llvm::Type* HostMapValueType(const AbiFieldInfo& f) {
    return f.kind == FieldKind::IntMap ? static_cast<llvm::Type*>(i64_) : str_;
  }
  Value* HostMapZero(const AbiFieldInfo& f) {
    return f.kind == FieldKind::IntMap ? static_cast<Value*>(b_.getInt64(0)) : ZeroStr();
  }

  Value* EmitSelect(const ast::Select& s) {
    const Type* ot = s.operand->type;
    if (IsKind(ot, TypeKind::Session)) return EmitSessionField(s);
    if (IsViewPtr(ot)) {
      const AbiFieldInfo* f = FindAbiField(ViewOwner(ot), s.field);
      if (!f) f = FindAbiShapeField(ViewOwner(ot), s.field);
      if (!f) Fail(&s, fmt::format("no ABI field {}.{}", ViewOwner(ot), s.field));
      Value* obj = Emit(*s.operand);
      return LoadField(*f, obj, s.type, &s);
    }
    if (IsKind(ot, TypeKind::Record)) {
      int idx = s.record_field >= 0 ? s.record_field : ot->record->FieldIndex(s.field);
      if (idx < 0) Fail(&s, fmt::format("no field `{}`", s.field));
      return b_.CreateExtractValue(Emit(*s.operand), {static_cast<unsigned>(idx)});
    }
    std::string_view field = s.builtin_field.empty() ? std::string_view(s.field) : s.builtin_field;
    Value* v = Emit(*s.operand);
    if (IsKind(ot, TypeKind::Resource)) {
      if (field == "cpu") return ResourceDim(v, kCpu);
      if (field == "memory") return ResourceDim(v, kMemory);
      if (field == "pods") return ResourceDim(v, kPods);
      if (field == "is_empty") return CallRt("kiln_rt_res_is_empty", i1_, {v});
      if (field == "names") {
        Value* out = Alloca(list_);
        CallRt("kiln_rt_res_names", b_.getVoidTy(), {v, out}, true);
        return b_.CreateLoad(list_, out);
      }
    }
    if (IsKind(ot, TypeKind::Duration)) {
      Value* f = b_.CreateSIToFP(v, f64_);
      if (field == "seconds") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 1e9));
      if (field == "minutes") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 60e9));
      if (field == "hours") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 3600e9));
      if (field == "milliseconds") return b_.CreateFDiv(f, llvm::ConstantFP::get(f64_, 1e6));
      if (field == "nanoseconds") return v;
    }
    if (IsKind(ot, TypeKind::Time) && field == "unix") return b_.CreateSDiv(v, b_.getInt64(1000000000));
    if (IsKind(ot, TypeKind::Time) && field == "unix_seconds")
      return b_.CreateFDiv(b_.CreateSIToFP(v, f64_), llvm::ConstantFP::get(f64_, 1e9));
    // A quantity is held as its value in base units (docs/language.md: `quantity` `.value`).
    if (IsKind(ot, TypeKind::Quantity) && field == "value") return v;
    if (IsKind(ot, TypeKind::Fit)) {
      if (field == "code") return b_.CreateSExt(b_.CreateExtractValue(v, {0}), i64_);
      if (field == "reason") return b_.CreateExtractValue(v, {1});
    }
    if (IsKind(ot, TypeKind::Validation)) {
      if (field == "pass") return b_.CreateExtractValue(v, {0});
      if (field == "reason") return b_.CreateExtractValue(v, {1});
      if (field == "message") return b_.CreateExtractValue(v, {2});
    }
    if ((IsKind(ot, TypeKind::List) || IsKind(ot, TypeKind::String)) &&
        (field == "len" || field == "size"))
      return b_.CreateExtractValue(v, {1});
    Fail(&s, fmt::format("cannot lower field `{}` of {}", s.field, ot ? ot->Name() : "?"));
  }

  Value* ResourceDim(Value* res, int id) {
    // values[id] at offset 8 + 8*id (runtime/resource.h layout).
    Value* p = b_.CreateConstGEP1_64(i8_, res, 8 + 8 * static_cast<uint64_t>(id));
    return b_.CreateLoad(f64_, p);
  }

  // The interned id of a resource name known only at run time. "cpu" and "memory" have the fixed
  // ids kCpu and kMemory and are by far the most common names (binpack's and
  // resource-strategy-fit's weights, drf's dimensions), so they are recognised inline by their
  // bytes; any other name asks kiln_rt_res_id. Inlined at every use, and read-only as that host
  // function is, so repeated lookups of one name merge.
  Value* ResourceIdOf(Value* name) {
    if (!res_id_fn_) {
      Function* fn = PureHelper("kiln.res_id", llvm::FunctionType::get(i32_, {ptr_, i64_}, false),
                                /*always_inline=*/true);
      llvm::IRBuilder<> b(ctx_);
      Value* p = fn->getArg(0);
      Value* n = fn->getArg(1);
      auto* entry = BasicBlock::Create(ctx_, "entry", fn);
      auto* len3 = BasicBlock::Create(ctx_, "len3", fn);
      auto* not3 = BasicBlock::Create(ctx_, "not3", fn);
      auto* len6 = BasicBlock::Create(ctx_, "len6", fn);
      auto* is_cpu = BasicBlock::Create(ctx_, "cpu", fn);
      auto* is_memory = BasicBlock::Create(ctx_, "memory", fn);
      auto* host = BasicBlock::Create(ctx_, "host", fn);
      // Little-endian byte images of the names.
      auto bytes = [&](llvm::IRBuilder<>& bb, int offset, llvm::Type* t) {
        return bb.CreateAlignedLoad(t, bb.CreateConstGEP1_64(i8_, p, offset), llvm::MaybeAlign(1));
      };
      b.SetInsertPoint(entry);
      b.CreateCondBr(b.CreateICmpEQ(n, b.getInt64(3)), len3, not3);
      b.SetInsertPoint(len3);  // "cpu"
      Value* cpu = b.CreateAnd(b.CreateICmpEQ(bytes(b, 0, b.getInt16Ty()), b.getInt16(0x7063)),
                               b.CreateICmpEQ(bytes(b, 2, i8_), b.getInt8('u')));
      b.CreateCondBr(cpu, is_cpu, host);
      b.SetInsertPoint(not3);
      b.CreateCondBr(b.CreateICmpEQ(n, b.getInt64(6)), len6, host);
      b.SetInsertPoint(len6);  // "memory"
      Value* mem = b.CreateAnd(b.CreateICmpEQ(bytes(b, 0, i32_), b.getInt32(0x6f6d656d)),
                               b.CreateICmpEQ(bytes(b, 4, b.getInt16Ty()), b.getInt16(0x7972)));
      b.CreateCondBr(mem, is_memory, host);
      b.SetInsertPoint(is_cpu);
      b.CreateRet(b.getInt32(kCpu));
      b.SetInsertPoint(is_memory);
      b.CreateRet(b.getInt32(kMemory));
      b.SetInsertPoint(host);
      llvm::FunctionCallee call = Rt("kiln_rt_res_id", i32_, {ptr_, i64_});
      b.CreateRet(b.CreateCall(call, {p, n}));
      res_id_fn_ = fn;
    }
    return b_.CreateCall(res_id_fn_, {StrPart(name, 0), StrPart(name, 1)});
  }

  // values[id] for an id known only at run time (kiln_rt_res_id of a name), as kiln_rt_res_get
  // defines it but inline: an id outside 0..kMaxResources-1 (-1: the registry is full) reads 0.
  // A load, not a host call, since binpack and resource-strategy-fit do this per resource per
  // node.
  Value* ResourceDimAt(Value* res, Value* id) {
    Value* valid = b_.CreateICmpULT(id, b_.getInt32(kMaxResources));
    Value* slot = b_.CreateZExt(b_.CreateSelect(valid, id, b_.getInt32(0)), i64_);
    Value* offset = b_.CreateAdd(b_.getInt64(8), b_.CreateMul(slot, b_.getInt64(8)));
    Value* v = b_.CreateLoad(f64_, b_.CreateGEP(i8_, res, offset));
    return b_.CreateSelect(valid, v, llvm::ConstantFP::get(f64_, 0.0));
  }

  // A Derived Bool of Job (runtime/abi.h DerivedJobBool): loads of the job's counters and one
  // comparison, no call.
  Value* LoadDerived(const DerivedJobBool& d, Value* job) {
    auto member = [&](size_t offset) {
      return b_.CreateLoad(i64_, b_.CreateConstGEP1_64(i8_, job, offset));
    };
    Value* sum = nullptr;
    for (size_t t : d.terms) {
      if (t == DerivedJobBool::kNoTerm) continue;
      Value* v = member(t);
      // Counters are non-negative task counts: their sum cannot wrap.
      sum = sum ? b_.CreateAdd(sum, v, "", /*HasNUW=*/true, /*HasNSW=*/true) : v;
    }
    Value* min = member(kJobMinAvailableOffset);
    switch (d.rule) {
      case DerivedJobBool::SumAtLeastMin: return b_.CreateICmpSGE(sum, min);
      case DerivedJobBool::SumBelowMin: return b_.CreateICmpSLT(sum, min);
      case DerivedJobBool::NoRoleShort:
      case DerivedJobBool::SomeRoleShort: {
        Value* skipped = b_.CreateICmpSLT(min, member(kJobTaskMinAvailableTotalOffset));
        Value* zero = b_.getInt64(0);
        Value* holds = d.rule == DerivedJobBool::NoRoleShort ? b_.CreateICmpEQ(sum, zero)
                                                              : b_.CreateICmpNE(sum, zero);
        return b_.CreateOr(skipped, holds);
      }
    }
    Fail(nullptr, "unknown derived field rule");
  }

  Value* LoadField(const AbiFieldInfo& f, Value* obj, const Type* want, const ast::Node* at) {
    if (f.access == FieldAccess::Derived) return LoadDerived(*f.derived, obj);
    if (f.access == FieldAccess::Field) {
      Value* p = b_.CreateConstGEP1_64(i8_, obj, f.offset);
      switch (f.kind) {
        case FieldKind::Int:
        case FieldKind::Duration: return b_.CreateLoad(i64_, p);
        case FieldKind::Time: {
          Value* t = b_.CreateLoad(i64_, p);
          // 0 means "unset" (runtime/model.h): a `time?` view of the field is none then.
          if (IsKind(want, TypeKind::Optional)) {
            Value* v = llvm::UndefValue::get(Ty(want));
            v = b_.CreateInsertValue(v, b_.CreateICmpNE(t, b_.getInt64(0)), {0});
            return b_.CreateInsertValue(v, t, {1});
          }
          return t;
        }
        case FieldKind::Float: return b_.CreateLoad(f64_, p);
        case FieldKind::Bool: return b_.CreateICmpNE(b_.CreateLoad(i8_, p), b_.getInt8(0));
        case FieldKind::Resource: return p;
        case FieldKind::Task:
        case FieldKind::Job:
        case FieldKind::Node:
        case FieldKind::Queue: return b_.CreateLoad(ptr_, p);
        case FieldKind::TaskStatus:
        case FieldKind::PodGroupPhase:
        case FieldKind::QueueState: {
          Value* v = b_.CreateLoad(i32_, p);
          return Ty(want) == i64_ ? b_.CreateZExt(v, i64_) : v;
        }
        default: break;
      }
      Fail(at, fmt::format("field {}.{} has no direct load", f.owner, f.name));
    }
    std::string fn(f.host);
    switch (f.kind) {
      case FieldKind::String: return CallRt(fn, str_, {obj});
      case FieldKind::Int: return CallRt(fn, i64_, {obj});
      case FieldKind::Bool: return CallRt(fn, i1_, {obj});
      case FieldKind::Float: return CallRt(fn, f64_, {obj});
      case FieldKind::TaskStatus: {
        Value* v = CallRt(fn, i32_, {obj});
        return Ty(want) == i64_ ? b_.CreateZExt(v, i64_) : v;
      }
      case FieldKind::Resource: {
        Value* out = CallRt("kiln_rt_res_new", ptr_, {}, true);
        CallRt(fn, b_.getVoidTy(), {obj, out});
        return out;
      }
      case FieldKind::TaskList:
      case FieldKind::JobList:
      case FieldKind::QueueList: return CallRt(fn, list_, {obj});
      case FieldKind::StringMap: return MaterializeStringMap(fn, obj);
      case FieldKind::Job:
      case FieldKind::Record:
      case FieldKind::OptionalRecord: return CallRt(fn, ptr_, {obj});
      case FieldKind::OptionalInt: {
        Value* out = Alloca(i64_);
        b_.CreateStore(b_.getInt64(0), out);
        Value* present = CallRt(fn, i1_, {obj, out});
        Value* v = llvm::UndefValue::get(llvm::StructType::get(ctx_, {i1_, i64_}));
        v = b_.CreateInsertValue(v, present, {0});
        return b_.CreateInsertValue(v, b_.CreateLoad(i64_, out), {1});
      }
      case FieldKind::StringList:
      case FieldKind::RecordList: {
        // Materialised into the call arena: these lists are short (tolerations, terms, images).
        bool strings = f.kind == FieldKind::StringList;
        llvm::Type* et = strings ? static_cast<llvm::Type*>(str_) : ptr_;
        Value* n = CallRt(fn + "_size", i64_, {obj});
        Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
        ForRange(n, [&](Value* i) {
          b_.CreateStore(CallRt(fn + "_at", et, {obj, i}), b_.CreateGEP(et, items, i));
        });
        Value* list = llvm::UndefValue::get(list_);
        list = b_.CreateInsertValue(list, items, {0});
        return b_.CreateInsertValue(list, n, {1});
      }
      case FieldKind::IntMap: return MaterializeHostMap(fn, obj, i64_);
      default: break;
    }
    Fail(at, fmt::format("field {}.{} has no host accessor", f.owner, f.name));
  }

  // A view's string map as a policy map<string, string> (when used as a whole value).
  Value* MaterializeStringMap(const std::string& fn, Value* obj) {
    return MaterializeHostMap(fn, obj, str_);
  }

  // A view's string-keyed host map (`fn`_size / `fn`_at accessors) copied into a policy map whose
  // values have type `vty`.
  Value* MaterializeHostMap(const std::string& fn, Value* obj, llvm::Type* vty) {
    auto value_size = static_cast<int32_t>(SizeOf(vty));
    Value* map = CallRt("kiln_rt_map_new", ptr_, {b_.getInt32(1), b_.getInt32(value_size)}, true);
    Value* n = CallRt(fn + "_size", i64_, {obj});
    ForRange(n, [&](Value* i) {
      Value* k = Alloca(str_);
      Value* v = Alloca(vty);
      CallRt(fn + "_at", b_.getVoidTy(), {obj, i, k, v});
      Value* key = b_.CreateLoad(str_, k);
      Value* inserted = Alloca(i8_);
      Value* slot = CallRt("kiln_rt_map_slot_s", ptr_,
                           {map, b_.CreateExtractValue(key, {0}), b_.CreateExtractValue(key, {1}),
                            inserted}, true);
      b_.CreateStore(b_.CreateLoad(vty, v), slot);
    });
    return map;
  }

  Value* EmitSessionField(const ast::Select& s) {
    if (s.field == "now") return CtxField(kCtxNow, i64_);
    // The rest come from the stdlib's session table: lists by value, booleans as i1, the
    // Resource by pointer.
    for (const stdlib::SessionField& f : stdlib::SessionFields())
      if (f.name == s.field)
        return CallRt(std::string(f.symbol),
                      IsKind(s.type, TypeKind::List)   ? static_cast<llvm::Type*>(list_)
                      : IsKind(s.type, TypeKind::Bool) ? static_cast<llvm::Type*>(i1_)
                                                       : ptr_,
                      {ictx_});
    Fail(&s, fmt::format("cannot lower session.{}", s.field));
  }

  Value* EmitIndex(const ast::Index& ix) {
    const Type* ot = ix.operand->type;
    if (const AbiFieldInfo* f = HostMapField(*ix.operand)) {
      Value* obj = Emit(*ast::As<ast::Select>(ix.operand.get())->operand);
      Value* k = Emit(*ix.index);
      llvm::Type* vt = HostMapValueType(*f);
      Value* out = Alloca(vt);
      b_.CreateStore(HostMapZero(*f), out);
      Value* found = CallRt(std::string(f->host), i1_,
                            {obj, b_.CreateExtractValue(k, {0}), b_.CreateExtractValue(k, {1}), out});
      Value* v = b_.CreateLoad(vt, out);
      if (IsKind(ix.type, TypeKind::Optional)) {
        Value* o = llvm::UndefValue::get(Ty(ix.type));
        o = b_.CreateInsertValue(o, found, {0});
        return b_.CreateInsertValue(o, v, {1});
      }
      return b_.CreateSelect(found, v, HostMapZero(*f));
    }
    if (IsKind(ot, TypeKind::Resource)) {
      Value* r = Emit(*ix.operand);
      Value* id;
      if (const auto* lit = ast::As<ast::StringLit>(ix.index.get())) {
        // Resource ids are interned process-wide and never reused, so a literal dimension name
        // becomes a constant offset.
        auto interned = ResourceNames::Intern(lit->value);
        if (!interned.ok()) Fail(&ix, interned.error().message);
        return ResourceDim(r, *interned);
      }
      Value* name = Emit(*ix.index);
      id = ResourceIdOf(name);
      return ResourceDimAt(r, id);
    }
    if (IsKind(ot, TypeKind::List)) {
      Value* list = Emit(*ix.operand);
      Value* i = Emit(*ix.index);
      Value* n = b_.CreateExtractValue(list, {1});
      Value* ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, n));
      llvm::Type* et = Ty(ot->elem);
      bool opt = IsKind(ix.type, TypeKind::Optional) && !IsKind(ot->elem, TypeKind::Optional);
      return EmitChoice(ok, ix.type, [&] {
        Value* v = b_.CreateLoad(et, b_.CreateGEP(et, b_.CreateExtractValue(list, {0}), i));
        return opt ? MakeOptional(ix.type, v) : v;
      }, [&] { return opt ? NoneOf(ix.type) : ZeroOf(ot->elem); });
    }
    if (IsKind(ot, TypeKind::Map)) {
      Value* m = Emit(*ix.operand);
      Value* k = Coerce(Emit(*ix.index), ix.index->type, ot->key);
      Value* slot = MapSlot(ot, m, k, ot->key, false, ot->elem);
      llvm::Type* vt = Ty(ot->elem);
      bool opt = IsKind(ix.type, TypeKind::Optional) && !IsKind(ot->elem, TypeKind::Optional);
      return EmitChoice(b_.CreateIsNotNull(slot), ix.type, [&] {
        Value* v = b_.CreateLoad(vt, slot);
        return opt ? MakeOptional(ix.type, v) : v;
      }, [&] { return opt ? NoneOf(ix.type) : ZeroOf(ot->elem); });
    }
    Fail(&ix, fmt::format("cannot index {}", ot ? ot->Name() : "?"));
  }

  Value* EmitResourceLit(const ast::ResourceLit& lit) {
    Value* r = CallRt("kiln_rt_res_new", ptr_, {}, true);
    for (const ast::MapEntry& e : lit.entries) {
      std::string name;
      if (const auto* s = ast::As<ast::StringLit>(e.key.get()))
        name = s->value;
      else if (const auto* n = ast::As<ast::NameRef>(e.key.get()))
        name = n->name;
      else
        Fail(e.key.get(), "resource dimension must be a name");
      auto id = ResourceNames::Intern(name);
      if (!id.ok()) Fail(e.key.get(), id.error().message);
      Value* v = Coerce(Emit(*e.value), e.value->type, FloatType());
      // User units → Volcano units: cores → milli-cores, scalar counts → milli; memory and pods
      // are already in base units.
      if (*id == kCpu || (*id != kMemory && *id != kPods))
        v = b_.CreateFMul(v, llvm::ConstantFP::get(f64_, 1000.0));
      CallRt("kiln_rt_res_set", b_.getVoidTy(), {r, b_.getInt32(*id), v});
    }
    return r;
  }

  // ------------------------------------------------------------------------------------------
  // Calls

  std::vector<Value*> Args(const ast::Call& c) {
    std::vector<Value*> out;
    for (const ast::ExprPtr& a : c.args) out.push_back(Emit(*a));
    return out;
  }

  Value* StrPart(Value* s, unsigned i) { return b_.CreateExtractValue(s, {i}); }

  Value* EmitCall(const ast::Call& c) {
    if (c.call == ast::CallKind::Function) {
      auto it = fns_.find(c.fn);
      if (it == fns_.end()) Fail(&c, fmt::format("unknown function `{}`", c.callee));
      std::vector<Value*> args{ictx_};
      for (size_t i = 0; i < c.args.size(); ++i)
        args.push_back(Coerce(Emit(*c.args[i]), c.args[i]->type, c.fn->params[i].local->type));
      callees_[fn_].push_back(it->second);
      return b_.CreateCall(it->second, args);
    }
    return EmitLibraryCall(c);
  }

  Value* F(double v) { return llvm::ConstantFP::get(f64_, v); }

  // The standard-library row a Std or Method call was resolved to by the checker, or null.
  static const stdlib::Function* StdRow(const ast::Call& c) {
    auto fns = stdlib::Functions();
    if (c.std_function < 0 || static_cast<size_t>(c.std_function) >= fns.size()) return nullptr;
    return &fns[static_cast<size_t>(c.std_function)];
  }

  Value* EmitLibraryCall(const ast::Call& c) {
    // Methods: receiver.name(args). The checker tagged each one with a collection method or a
    // library row; lowering follows the tag, never the callee's name alone (issue 28: a list's
    // `contains` reached the string function of that name).
    if (c.receiver) {
      const ast::Expr& recv = *c.receiver;
      switch (c.method) {
        case ast::BuiltinMethod::ListGet: return EmitListGet(c);
        case ast::BuiltinMethod::ListContains: return EmitListContains(recv, *c.args.at(0), &c);
        case ast::BuiltinMethod::MapGet: return EmitMapGet(c);
        case ast::BuiltinMethod::MapKeys: return EmitMapKeysOrValues(c, /*keys=*/true);
        case ast::BuiltinMethod::MapValues: return EmitMapKeysOrValues(c, /*keys=*/false);
        case ast::BuiltinMethod::None: break;
      }
      const stdlib::Function* row = StdRow(c);
      if (c.call != ast::CallKind::Method || !row || row->name != c.callee)
        Fail(&c, fmt::format("method `{}` on `{}` was not resolved to a lowering", c.callee,
                             recv.type ? recv.type->Name() : "?"));
      if (row->name == "dim" && IsKind(recv.type, TypeKind::Resource)) {
        // An id outside the registry (resource_id of a full registry: -1, or any other int)
        // reads 0, as r[name] of an unknown name does.
        Value* r = Emit(recv);
        Value* id = Emit(*c.args[0]);
        Value* fits = b_.CreateICmpULT(id, b_.getInt64(kMaxResources));
        return b_.CreateSelect(fits, ResourceDimAt(r, b_.CreateTrunc(id, i32_)), F(0.0));
      }
      // Other methods are the library function with the receiver first: s.contains(x).
      std::vector<const ast::Expr*> all{&recv};
      for (const auto& a : c.args) all.push_back(a.get());
      return EmitNamedFunction(c, std::string(row->name), all);
    }
    std::vector<const ast::Expr*> all;
    for (const auto& a : c.args) all.push_back(a.get());
    return EmitNamedFunction(c, c.callee, all);
  }

  // xs.get(i): the element when 0 <= i < len(xs), else none.
  Value* EmitListGet(const ast::Call& c) {
    const ast::Expr& recv = *c.receiver;
    const Type* lt = recv.type;
    const Type* t = c.type;
    if (!IsKind(lt, TypeKind::List) || !IsKind(t, TypeKind::Optional))
      Fail(&c, "`get` on a list needs a list receiver and an optional result");
    Value* list = Emit(recv);
    Value* i = Emit(*c.args.at(0));
    Value* n = b_.CreateExtractValue(list, {1});
    Value* ok = b_.CreateAnd(b_.CreateICmpSGE(i, b_.getInt64(0)), b_.CreateICmpSLT(i, n));
    llvm::Type* et = Ty(lt->elem);
    // A list of optionals gives its element as is (T?? is T?).
    bool wrap = !IsKind(lt->elem, TypeKind::Optional);
    return EmitChoice(ok, t, [&] {
      Value* v = b_.CreateLoad(et, b_.CreateGEP(et, b_.CreateExtractValue(list, {0}), i));
      return wrap ? MakeOptional(t, v) : v;
    }, [&] { return NoneOf(t); });
  }

  // m.get(k): the value when the key is present, else none.
  Value* EmitMapGet(const ast::Call& c) {
    const ast::Expr& recv = *c.receiver;
    const Type* t = c.type;
    if (const AbiFieldInfo* f = HostMapField(recv)) {
      Value* obj = Emit(*ast::As<ast::Select>(&recv)->operand);
      Value* k = Emit(*c.args[0]);
      llvm::Type* vt = HostMapValueType(*f);
      Value* out = Alloca(vt);
      b_.CreateStore(HostMapZero(*f), out);
      Value* found = CallRt(std::string(f->host), i1_, {obj, StrPart(k, 0), StrPart(k, 1), out});
      Value* o = llvm::UndefValue::get(Ty(t));
      o = b_.CreateInsertValue(o, found, {0});
      return b_.CreateInsertValue(o, b_.CreateLoad(vt, out), {1});
    }
    const Type* mt = recv.type;
    if (!IsKind(mt, TypeKind::Map) || !IsKind(t, TypeKind::Optional))
      Fail(&c, "`get` on a map needs a map receiver and an optional result");
    Value* m = Emit(recv);
    Value* k = Coerce(Emit(*c.args[0]), c.args[0]->type, mt->key);
    Value* slot = MapSlot(mt, m, k, mt->key, false, mt->elem);
    bool wrap = !IsKind(mt->elem, TypeKind::Optional);
    return EmitChoice(b_.CreateIsNotNull(slot), t, [&] {
      Value* v = b_.CreateLoad(Ty(mt->elem), slot);
      return wrap ? MakeOptional(t, v) : v;
    }, [&] { return NoneOf(t); });
  }

  // m.keys() / m.values(): a new list in the call arena, in the map's iteration order.
  Value* EmitMapKeysOrValues(const ast::Call& c, bool keys) {
    const ast::Expr& recv = *c.receiver;
    const Type* mt = recv.type;
    if (!IsKind(mt, TypeKind::Map) || !IsKind(c.type, TypeKind::List))
      Fail(&c, "`keys`/`values` need a map receiver");
    llvm::Type* et = Ty(c.type->elem);
    Value* n;
    if (const AbiFieldInfo* f = HostMapField(recv); f && f->kind == FieldKind::StringMap) {
      Value* obj = Emit(*ast::As<ast::Select>(&recv)->operand);
      n = CallRt(std::string(f->host) + "_size", i64_, {obj});
    } else {
      n = nullptr;  // taken from the map EmitIterate materialises, below
    }
    // The map is walked once to count (for a policy map, its size) and once to copy; a view's
    // label map is read in place both times.
    if (!n) {
      Value* m = Emit(recv);
      n = CallRt("kiln_rt_map_size", i64_, {m});
      Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
      bool string_key = IsKind(mt->key, TypeKind::String);
      llvm::Type* vt = Ty(mt->elem);
      ForRange(n, [&](Value* i) {
        Value* v;
        if (keys)
          v = string_key ? CallStrOut("kiln_rt_map_key_s", {m, i}, false)
                         : KeyFromInt(CallRt("kiln_rt_map_key_i", i64_, {m, i}), mt->key);
        else
          v = b_.CreateLoad(vt, CallRt("kiln_rt_map_value_at", ptr_, {m, i}));
        b_.CreateStore(v, b_.CreateGEP(et, items, i));
      });
      Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
      return b_.CreateInsertValue(list, n, {1});
    }
    Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(SizeOf(et)))}, true);
    Value* at = Alloca(i64_);
    b_.CreateStore(b_.getInt64(0), at);
    EmitIterate(recv, [&](Value* k, Value* v) {
      Value* i = b_.CreateLoad(i64_, at);
      b_.CreateStore(keys ? k : v, b_.CreateGEP(et, items, i));
      b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1)), at);
    }, nullptr, nullptr);
    Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
    return b_.CreateInsertValue(list, n, {1});
  }

  Value* EmitNamedFunction(const ast::Call& c, const std::string& name,
                           const std::vector<const ast::Expr*>& args) {
    const Type* t = c.type;
    auto arg = [&](size_t i) { return Emit(*args.at(i)); };
    auto argf = [&](size_t i) { return Coerce(Emit(*args.at(i)), args.at(i)->type, FloatType()); };
    auto at = [&](size_t i) { return args.at(i)->type; };
    // Generic built-ins (typed by the checker itself) are lowered by name; everything else by
    // the standard-library row the checker resolved it to.
    const bool generic = c.call == ast::CallKind::Builtin;
    const stdlib::Function* resolved = generic ? nullptr : StdRow(c);
    if (!generic && (!resolved || resolved->name != name))
      Fail(&c, fmt::format("call to `{}` was not resolved to a library function", name));
    if (generic) {
      if (name == "range") {
        // As a value (outside `for` and comprehension sources, which count without a list).
        auto [lo, n] = RangeBounds(c);
        Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(n, b_.getInt64(8))}, true);
        ForRange(n, [&](Value* i) {
          b_.CreateStore(b_.CreateAdd(lo, i), b_.CreateGEP(i64_, items, i));
        });
        Value* list = b_.CreateInsertValue(llvm::UndefValue::get(list_), items, {0});
        return b_.CreateInsertValue(list, n, {1});
      }
      if (name == "len") {
        const ast::Expr& x = *args.at(0);
        // A view's host map or list: its size, without copying it into the call arena.
        const AbiFieldInfo* f = HostMapField(x);
        if (!f) f = ViewListField(x);
        if (f) {
          Value* obj = Emit(*ast::As<ast::Select>(&x)->operand);
          return CallRt(std::string(f->host) + "_size", i64_, {obj});
        }
        Value* v = Emit(x);
        if (IsKind(x.type, TypeKind::Map)) return CallRt("kiln_rt_map_size", i64_, {v});
        return b_.CreateExtractValue(v, {1});
      }
      if (name == "count" && args.size() == 1) return b_.CreateExtractValue(arg(0), {1});
      if (name == "float") return argf(0);
      if (name == "int") {
        if (IsFloatLike(at(0))) return FloatToInt(arg(0));
        Value* v = arg(0);
        return v->getType() == i32_ ? b_.CreateSExt(v, i64_) : v;
      }
      if (name == "string") {
        if (IsKind(at(0), TypeKind::String)) return arg(0);
        if (IsFloatLike(at(0))) return CallStrOut("kiln_rt_str_of_float", {arg(0)}, true);
        if (IsKind(at(0), TypeKind::Bool))
          return b_.CreateSelect(arg(0), Str("true"), Str("false"));
        Value* v = arg(0);
        if (v->getType() == i32_) v = b_.CreateSExt(v, i64_);
        return CallStrOut("kiln_rt_str_of_int", {v}, true);
      }
      if ((name == "min" || name == "max") && args.size() == 2) {
        bool is_min = name == "min";
        if (IsFloatLike(t)) {
          Value* a = argf(0);
          Value* b = argf(1);
          return b_.CreateSelect(is_min ? b_.CreateFCmpOLE(a, b) : b_.CreateFCmpOGE(a, b), a, b);
        }
        Value* a = arg(0);
        Value* b = arg(1);
        return b_.CreateSelect(is_min ? b_.CreateICmpSLE(a, b) : b_.CreateICmpSGE(a, b), a, b);
      }
      if (name == "abs") {
        if (IsFloatLike(t)) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, argf(0));
        Value* v = arg(0);
        return b_.CreateSelect(b_.CreateICmpSLT(v, b_.getInt64(0)), SatSub(b_.getInt64(0), v), v);
      }
      Fail(&c, fmt::format("codegen does not implement the built-in `{}`", name));
    }
    if (name == "floor") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, argf(0));
    if (name == "ceil") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, argf(0));
    if (name == "sqrt") {
      Value* v = argf(0);
      return b_.CreateSelect(b_.CreateFCmpOLT(v, F(0.0)), F(0.0),
                             b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, v));
    }
    if (name == "share") {
      // Volcano's helpers.Share: b == 0 → (a == 0 ? 0 : 1).
      Value* a = argf(0);
      Value* b = argf(1);
      Value* b0 = b_.CreateFCmpOEQ(b, F(0.0));
      Value* a0 = b_.CreateFCmpOEQ(a, F(0.0));
      return b_.CreateSelect(b0, b_.CreateSelect(a0, F(0.0), F(1.0)), b_.CreateFDiv(a, b));
    }
    if (name == "now") return CtxField(kCtxNow, i64_);
    if (name == "resource_id") return b_.CreateSExt(ResourceIdOf(arg(0)), i64_);
    if (name == "victims") {
      Value* v = llvm::UndefValue::get(victims_);
      v = b_.CreateInsertValue(v, b_.getTrue(), {0});
      return b_.CreateInsertValue(v, arg(0), {1});
    }
    if (name == "abstain_victims") return llvm::Constant::getNullValue(victims_);
    if (name == "invalid") {
      Value* v = llvm::UndefValue::get(validation_);
      v = b_.CreateInsertValue(v, b_.getFalse(), {0});
      v = b_.CreateInsertValue(v, arg(0), {1});
      return b_.CreateInsertValue(v, args.size() > 1 ? arg(1) : ZeroStr(), {2});
    }
    static const std::map<std::string, StatusCode, std::less<>> kFits = {
        {"unschedulable", StatusCode::Unschedulable},
        {"unresolvable", StatusCode::UnschedulableAndUnresolvable},
        {"fit_error", StatusCode::Error},
        {"fit_wait", StatusCode::Wait},
        {"fit_skip", StatusCode::Skip},
    };
    if (auto it = kFits.find(name); it != kFits.end()) {
      Value* v = llvm::UndefValue::get(fit_);
      v = b_.CreateInsertValue(v, b_.getInt32(static_cast<int32_t>(it->second)), {0});
      return b_.CreateInsertValue(v, args.empty() ? ZeroStr() : arg(0), {1});
    }
    if (name == "combine") {
      // Both parts go to the runtime, which joins the reasons and picks the blocking code.
      Value* a = arg(0);
      Value* b = arg(1);
      Value* reason = Alloca(str_);
      Value* code = CallRt("kiln_rt_fit_combine", i32_,
                           {b_.CreateExtractValue(a, {0}), StrPart(b_.CreateExtractValue(a, {1}), 0),
                            StrPart(b_.CreateExtractValue(a, {1}), 1), b_.CreateExtractValue(b, {0}),
                            StrPart(b_.CreateExtractValue(b, {1}), 0),
                            StrPart(b_.CreateExtractValue(b, {1}), 1), reason},
                           true);
      Value* v = b_.CreateInsertValue(llvm::UndefValue::get(fit_), code, {0});
      return b_.CreateInsertValue(v, b_.CreateLoad(str_, reason), {1});
    }
    static const std::map<std::string, uint32_t, std::less<>> kStatusSets = {
        {"allocated_status", kAllocatedStatusMask},
        {"preemptable_status", kPreemptableStatusMask},
        {"completed_status", kCompletedStatusMask},
        {"scheduled_status", kScheduledStatusMask},
    };
    if (auto it = kStatusSets.find(name); it != kStatusSets.end()) {
      Value* s = arg(0);
      if (s->getType() == i64_) s = b_.CreateTrunc(s, i32_);
      return b_.CreateICmpNE(b_.CreateAnd(s, b_.getInt32(it->second)), b_.getInt32(0));
    }
    if (name == "split") {
      Value* s = arg(0);
      Value* sep = arg(1);
      Value* out = Alloca(list_);
      CallRt("kiln_rt_str_split", b_.getVoidTy(),
             {StrPart(s, 0), StrPart(s, 1), StrPart(sep, 0), StrPart(sep, 1), out}, true);
      return b_.CreateLoad(list_, out);
    }
    // Everything else comes from the standard library's native table (stdlib/library.h).
    const stdlib::Function& row = *resolved;
    if (row.impl == stdlib::Impl::Native) return EmitStdNative(c, std::string(row.symbol), args);
    // Host functions (session-facing) take the PolicyContext first, then the native ABI.
    if (name == "set_condition") return EmitStdNative(c, "kiln_host_set_condition", args, true);
    if (name == "set_fit_error") return EmitStdNative(c, "kiln_host_set_fit_error", args, true);
    if (name == "set_pod_annotation")
      return EmitStdNative(c, "kiln_host_set_pod_annotation", args, true);
    if (name == "remove_pod_annotation")
      return EmitStdNative(c, "kiln_host_remove_pod_annotation", args, true);
    if (name == "victim_order") {
      // The list goes as (items, n) and comes back through an out pointer, like split's.
      Value* preemptor = arg(0);
      Value* tasks = arg(1);
      Value* out = Alloca(list_);
      CallRt("kiln_host_victim_order", b_.getVoidTy(),
             {ictx_, preemptor, b_.CreateExtractValue(tasks, {0}),
              b_.CreateExtractValue(tasks, {1}), out},
             true);
      return b_.CreateLoad(list_, out);
    }
    if (name == "show") return EmitStdNative(c, "kiln_host_show_resource", args, true);
    if (name == "show_number") return EmitStdNative(c, "kiln_host_show_number", args, true);
    // Host helpers without session access (JSON parsing, HTTP) use the native ABI as is; their
    // string and list results are built in the call arena.
    if (row.impl == stdlib::Impl::Host &&
        (row.bundle == "strings" || row.bundle == "json" || row.bundle == "http"))
      return EmitStdNative(c, std::string(row.symbol), args, false, true);
    Fail(&c, fmt::format("codegen does not implement `{}` yet", name));
  }

  // Standard-library natives (stdlib/library.h C ABI): scalars by value, a string as two
  // parameters (data, size), Resource results through a trailing out pointer, T?
  // results as a bool return with the payload through a trailing out pointer.
  Value* EmitStdNative(const ast::Call& c, const std::string& sym,
                       const std::vector<const ast::Expr*>& args, bool with_ctx = false,
                       bool builds_in_arena = false) {
    std::vector<Value*> vals;
    if (with_ctx) vals.push_back(ictx_);
    const Type* t = c.type;
    // A native whose result is a scalar keeps no Resource it is given, so a sum or difference of
    // Resources passed to it (proportion's `less_equal_in(allocated[q] + task.resreq, ...)`) is
    // built in a stack temporary instead of the call arena: no allocation, no fault frame.
    const bool scalar_result = IsKind(t, TypeKind::Bool) || IsKind(t, TypeKind::Float) ||
                               IsKind(t, TypeKind::Int);
    for (const ast::Expr* const& a : args) {
      const auto* bin = ast::As<ast::Binary>(a);
      if (scalar_result && !with_ctx && bin &&
          (bin->op == ast::BinaryOp::Add || bin->op == ast::BinaryOp::Sub) &&
          IsKind(bin->left->type, TypeKind::Resource) &&
          IsKind(bin->right->type, TypeKind::Resource)) {
        Value* l = Emit(*bin->left);
        Value* r = Emit(*bin->right);
        Value* tmp = Alloca(llvm::ArrayType::get(i64_, sizeof(Resource) / 8));
        CallRt(bin->op == ast::BinaryOp::Add ? "kiln_rt_res_add_to" : "kiln_rt_res_sub_to",
               b_.getVoidTy(), {tmp, l, r});
        vals.push_back(tmp);
        continue;
      }
      Value* v = Emit(*a);
      // The value converted to the parameter's type the checker resolved (int → float).
      if (size_t i = static_cast<size_t>(&a - args.data()); i < c.std_params.size())
        v = Coerce(v, a->type, c.std_params[i]);
      if (v->getType() == str_) {
        vals.push_back(StrPart(v, 0));
        vals.push_back(StrPart(v, 1));
      } else {
        vals.push_back(v);
      }
    }
    // Optional results come back through an out pointer: bool fn(args..., T* out). Natives
    // allocate only when they build maps/resources (the JSON helpers).
    if (IsKind(t, TypeKind::Optional) && !IsPtrOptional(t)) {
      bool allocates = builds_in_arena || t->elem->kind == TypeKind::Map ||
                       t->elem->kind == TypeKind::Resource;
      Value* out = Alloca(Ty(t->elem));
      b_.CreateStore(ZeroOf(t->elem), out);
      vals.push_back(out);
      Value* present = CallRt(sym, i1_, vals, allocates);
      Value* o = llvm::UndefValue::get(Ty(t));
      o = b_.CreateInsertValue(o, present, {0});
      return b_.CreateInsertValue(o, b_.CreateLoad(Ty(t->elem), out), {1});
    }
    if (IsKind(t, TypeKind::Resource)) {
      Value* out = CallRt("kiln_rt_res_new", ptr_, {}, true);
      vals.push_back(out);
      CallRt(sym, b_.getVoidTy(), vals, true);
      return out;
    }
    if (IsKind(t, TypeKind::Bool)) return CallRt(sym, i1_, vals);
    if (!t || IsKind(t, TypeKind::Void)) {
      CallRt(sym, b_.getVoidTy(), vals);
      return llvm::UndefValue::get(i1_);
    }
    return CallRt(sym, Ty(t), vals, builds_in_arena);
  }

  // ------------------------------------------------------------------------------------------
  // Comprehensions

  Value* EmitComprehension(const ast::Comprehension& c) {
    auto bind = [&](Value* a, Value* b) {
      b_.CreateStore(a, LocalSlot(c.first.get()));
      if (c.second) b_.CreateStore(b, LocalSlot(c.second.get()));
    };
    auto filtered = [&](const std::function<void()>& body) {
      if (c.filter) {
        Value* keep = Emit(*c.filter);
        EmitIfElse(keep, body, {});
      } else {
        body();
      }
    };
    switch (c.aggregate) {
      case ast::Aggregate::List: {
        const Type* et = c.type->elem;
        llvm::Type* ety = Ty(et);
        Value* cap = SourceSize(*c.source);
        Value* items = CallRt("kiln_rt_alloc", ptr_, {b_.CreateMul(cap, b_.getInt64(SizeOf(ety)))}, true);
        Value* keys = nullptr;
        bool string_key = c.order_key && IsKind(c.order_key->type, TypeKind::String);
        if (c.order_key)
          keys = CallRt("kiln_rt_alloc", ptr_,
                        {b_.CreateMul(cap, b_.getInt64(string_key ? SizeOf(str_) : 8))}, true);
        Value* n = Alloca(i64_);
        b_.CreateStore(b_.getInt64(0), n);
        EmitIterate(*c.source, [&](Value* a, Value* b) {
          bind(a, b);
          filtered([&] {
            Value* i = b_.CreateLoad(i64_, n);
            b_.CreateStore(Coerce(Emit(*c.element), c.element->type, et), b_.CreateGEP(ety, items, i));
            if (keys) {
              Value* k = Emit(*c.order_key);
              if (string_key) {
                b_.CreateStore(k, b_.CreateGEP(str_, keys, i));
              } else {
                b_.CreateStore(ToSortKey(k, c.order_key->type), b_.CreateGEP(f64_, keys, i));
              }
            }
            b_.CreateStore(b_.CreateAdd(i, b_.getInt64(1)), n);
          });
        }, nullptr, nullptr);
        Value* count = b_.CreateLoad(i64_, n);
        if (keys)
          CallRt("kiln_rt_sort", b_.getVoidTy(),
                 {items, count, b_.getInt64(SizeOf(ety)), keys, b_.getInt32(string_key ? 1 : 0),
                  b_.getInt1(c.descending)});
        Value* list = llvm::UndefValue::get(list_);
        list = b_.CreateInsertValue(list, items, {0});
        return b_.CreateInsertValue(list, count, {1});
      }
      case ast::Aggregate::Count: {
        Value* n = Alloca(i64_);
        b_.CreateStore(b_.getInt64(0), n);
        EmitIterate(*c.source, [&](Value* a, Value* b) {
          bind(a, b);
          filtered([&] {
            if (c.element && IsKind(c.element->type, TypeKind::Bool) && c.element->kind != ast::NodeKind::NameRef) {
              // count(cond for x in xs): counts where the element is true.
              Value* e = Emit(*c.element);
              b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, n), b_.CreateZExt(e, i64_)), n);
            } else {
              b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i64_, n), b_.getInt64(1)), n);
            }
          });
        }, nullptr, nullptr);
        return b_.CreateLoad(i64_, n);
      }
      case ast::Aggregate::Any:
      case ast::Aggregate::All: {
        bool any = c.aggregate == ast::Aggregate::Any;
        Value* acc = Alloca(i1_);
        b_.CreateStore(b_.getInt1(!any), acc);
        BasicBlock* brk = nullptr;
        EmitIterate(*c.source, [&](Value* a, Value* b) {
          bind(a, b);
          filtered([&] {
            Value* e = Emit(*c.element);
            EmitIfElse(any ? e : b_.CreateNot(e), [&] {
              b_.CreateStore(b_.getInt1(any), acc);
              b_.CreateBr(brk);
            }, {});
          });
        }, nullptr, &brk);
        return b_.CreateLoad(i1_, acc);
      }
      case ast::Aggregate::Sum: {
        const Type* rt = c.type;
        Value* acc = Alloca(Ty(rt));
        b_.CreateStore(IsKind(rt, TypeKind::Resource) ? CallRt("kiln_rt_res_new", ptr_, {}, true)
                                                      : ZeroOf(rt),
                       acc);
        EmitIterate(*c.source, [&](Value* a, Value* b) {
          bind(a, b);
          filtered([&] {
            Value* e = Coerce(Emit(*c.element), c.element->type, rt);
            Value* old = b_.CreateLoad(Ty(rt), acc);
            if (IsKind(rt, TypeKind::Resource)) {
              // The accumulator is this sum's own fresh Resource, invisible to anything else
              // until the sum returns: add in place instead of allocating a Resource per element.
              CallRt("kiln_rt_res_add_into", b_.getVoidTy(), {old, e});
            } else {
              b_.CreateStore(Arith(ast::BinaryOp::Add, old, rt, e, rt, rt, &c), acc);
            }
          });
        }, nullptr, nullptr);
        return b_.CreateLoad(Ty(rt), acc);
      }
      case ast::Aggregate::Max:
      case ast::Aggregate::Min: {
        bool is_max = c.aggregate == ast::Aggregate::Max;
        const Type* rt = c.type;
        Value* acc = Alloca(Ty(rt));
        Value* seen = Alloca(i1_);
        b_.CreateStore(ZeroOf(rt), acc);
        b_.CreateStore(b_.getFalse(), seen);
        EmitIterate(*c.source, [&](Value* a, Value* b) {
          bind(a, b);
          filtered([&] {
            Value* e = Coerce(Emit(*c.element), c.element->type, rt);
            Value* old = b_.CreateLoad(Ty(rt), acc);
            Value* better = Compare(is_max ? ast::BinaryOp::Gt : ast::BinaryOp::Lt, e, rt, old, rt, &c);
            Value* take = b_.CreateOr(b_.CreateNot(b_.CreateLoad(i1_, seen)), better);
            b_.CreateStore(b_.CreateSelect(take, e, old), acc);
            b_.CreateStore(b_.getTrue(), seen);
          });
        }, nullptr, nullptr);
        return b_.CreateLoad(Ty(rt), acc);
      }
    }
    Fail(&c, "unknown aggregate");
  }

  Value* ToSortKey(Value* k, const Type* t) {
    if (k->getType() == f64_) return k;
    if (k->getType() == i1_ || k->getType() == i32_) return b_.CreateUIToFP(k, f64_);
    return b_.CreateSIToFP(k, f64_);
  }

  Value* SourceSize(const ast::Expr& source) {
    if (const ast::Call* call = RangeCall(source)) return RangeBounds(*call).second;
    if (const AbiFieldInfo* f = StringMapField(source)) {
      Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
      return CallRt(std::string(f->host) + "_size", i64_, {obj});
    }
    if (const AbiFieldInfo* f = ViewListField(source)) {
      Value* obj = Emit(*ast::As<ast::Select>(&source)->operand);
      return CallRt(std::string(f->host) + "_size", i64_, {obj});
    }
    if (IsKind(source.type, TypeKind::Map)) return CallRt("kiln_rt_map_size", i64_, {Emit(source)});
    return b_.CreateExtractValue(Emit(source), {1});
  }

  // ------------------------------------------------------------------------------------------
  // Thunks: the C ABI of runtime/session.h around a handler body.

  // The common victim rule `return victims([c for c in candidates where COND]);` marks the
  // session's selection mask directly: no list is built, so no arena and no fault frame are
  // needed unless COND itself allocates (then the generic thunk is used). Returns false when
  // the handler does not have exactly that shape.
  bool EmitFilterVictimsThunk(const ast::HandlerDecl& h, const ExtensionPointInfo& info) {
    if (info.result != AbiKind::Victims || h.params.size() != 2 || !h.body ||
        h.body->stmts.empty())
      return false;
    // Leading `let`s (e.g. `let pj = preemptor.job;`) are evaluated once before the loop.
    for (size_t i = 0; i + 1 < h.body->stmts.size(); ++i)
      if (!ast::As<ast::Let>(h.body->stmts[i].get())) return false;
    const auto* ret = ast::As<ast::Return>(h.body->stmts.back().get());
    const auto* call = ret ? ast::As<ast::Call>(ret->value.get()) : nullptr;
    if (!call || call->callee != "victims" || call->receiver || call->args.size() != 1 ||
        call->call == ast::CallKind::Function)
      return false;
    const auto* comp = ast::As<ast::Comprehension>(call->args[0].get());
    if (!comp || comp->aggregate != ast::Aggregate::List || comp->second || comp->order_key)
      return false;
    const auto* src = ast::As<ast::NameRef>(comp->source.get());
    const auto* elem = ast::As<ast::NameRef>(comp->element.get());
    if (!src || src->ref != ast::NameKind::Local || src->local != h.params[1].local.get() ||
        !elem || elem->ref != ast::NameKind::Local || elem->local != comp->first.get())
      return false;

    std::string name = std::string(kThunkPrefix) + std::string(info.handler);
    auto* fn = Function::Create(
        llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_, i64_, ptr_}, false),
        Function::ExternalLinkage, name, m_);
    fn_ = fn;
    current_ = &h;
    allocates_ = false;
    locals_.assign(static_cast<size_t>(std::max(h.local_count, 0)), nullptr);
    loops_.clear();
    budget_loops_.clear();
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    ictx_ = fn->getArg(0);
    b_.CreateStore(fn->getArg(1), LocalSlot(h.params[0].local.get()));
    {
      // The candidate list parameter, in case a leading `let` reads it.
      Value* l = llvm::UndefValue::get(list_);
      l = b_.CreateInsertValue(l, fn->getArg(2), {0});
      b_.CreateStore(b_.CreateInsertValue(l, fn->getArg(3), {1}), LocalSlot(h.params[1].local.get()));
    }
    for (size_t i = 0; i + 1 < h.body->stmts.size(); ++i) EmitStmt(*h.body->stmts[i]);
    Value* items = fn->getArg(2);
    Value* n = fn->getArg(3);
    Value* selected = fn->getArg(4);
    // The session's mask is its own buffer, never a view's memory: stores to it do not clobber
    // the fields the filter reads, so loop-invariant loads (the preemptor's fields) are hoisted.
    fn->getArg(4)->addAttr(llvm::Attribute::NoAlias);
    ForRange(n, [&](Value* i) {
      Value* c = b_.CreateLoad(ptr_, b_.CreateGEP(ptr_, items, i));
      b_.CreateStore(c, LocalSlot(comp->first.get()));
      Value* keep = comp->filter ? Emit(*comp->filter) : static_cast<Value*>(b_.getTrue());
      // The session zeroes the mask, so only victims are written: no store per spared candidate.
      EmitIfElse(keep, [&] { b_.CreateStore(b_.getInt8(1), b_.CreateGEP(i8_, selected, i)); }, {});
    });
    b_.CreateRet(b_.getInt32(1));
    bool calls_allocating = false;
    for (Function* callee : callees_[fn]) calls_allocating |= allocates_fn_[callee];
    if (allocates_ || calls_allocating) {
      fn->eraseFromParent();
      callees_.erase(fn);
      return false;
    }
    return true;
  }

  void EmitThunk(const ast::HandlerDecl& h, Function* body, const ExtensionPointInfo& info) {
    std::vector<llvm::Type*> params{ptr_};
    for (int i = 0; i < info.param_count; ++i) {
      switch (info.params[i]) {
        case AbiKind::TaskList:
        case AbiKind::NodeList:
        case AbiKind::HyperNodeList:
          params.push_back(ptr_);
          params.push_back(i64_);
          break;
        default: params.push_back(ptr_);
      }
    }
    llvm::Type* ret = b_.getVoidTy();
    switch (info.result) {
      case AbiKind::Int:
      case AbiKind::Vote: ret = i32_; break;
      case AbiKind::Float:
      case AbiKind::FloatList: ret = i32_; params.push_back(ptr_); break;
      case AbiKind::Bool: ret = i1_; break;
      case AbiKind::Status: ret = i32_; params.push_back(ptr_); break;
      case AbiKind::Validation: ret = i1_; params.push_back(ptr_); break;
      case AbiKind::NodeOrNone: ret = ptr_; params.push_back(ptr_); break;
      case AbiKind::Victims: ret = i32_; params.push_back(ptr_); break;
      case AbiKind::TaskList:
      case AbiKind::HyperNodeList: params.push_back(ptr_); break;
      case AbiKind::Void: break;
      default: Fail(&h, "unsupported handler result kind");
    }
    auto* fn = Function::Create(llvm::FunctionType::get(ret, params, false),
                                Function::ExternalLinkage,
                                std::string(kThunkPrefix) + std::string(info.handler), m_);
    if (ret == i1_) fn->addRetAttr(llvm::Attribute::ZExt);
    fn_ = fn;
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    ictx_ = fn->getArg(0);
    // A body that may allocate arms its fault frame itself, just before its first allocating call
    // (fault_frame.h), and reports through `frame` whether it did and whether a fault landed.
    bool guarded = allocates_fn_[body];
    Value* frame = llvm::ConstantPointerNull::get(ptr_);
    if (guarded) {
      frame = Alloca(i8_);
      b_.CreateStore(b_.getInt8(codegen::kFrameIdle), frame);
    }
    std::vector<Value*> args{ictx_};
    unsigned a = 1;
    std::vector<std::pair<Value*, Value*>> lists;  // (items, n) of list params
    for (int i = 0; i < info.param_count; ++i) {
      if (info.params[i] == AbiKind::TaskList || info.params[i] == AbiKind::NodeList ||
          info.params[i] == AbiKind::HyperNodeList) {
        Value* items = fn->getArg(a++);
        Value* n = fn->getArg(a++);
        lists.emplace_back(items, n);
        Value* l = llvm::UndefValue::get(list_);
        l = b_.CreateInsertValue(l, items, {0});
        args.push_back(b_.CreateInsertValue(l, n, {1}));
      } else {
        args.push_back(fn->getArg(a++));
      }
    }
    args.push_back(frame);
    if (args.size() != body->arg_size())
      Fail(&h, fmt::format("handler `{}` has {} parameters, point `{}` passes {}", h.name,
                           body->arg_size() - 2, info.handler, args.size() - 2));
    Value* r = b_.CreateCall(body, args);
    if (guarded) {
      // Fault recovery (runtime_support.cc): a faulting intrinsic longjmped into the body, and the
      // handler answers the zero value of its result; the session has recorded the fault.
      Value* state = b_.CreateLoad(i8_, frame);
      BasicBlock* faulted = BasicBlock::Create(ctx_, "faulted", fn);
      BasicBlock* ran = BasicBlock::Create(ctx_, "ran", fn);
      llvm::MDBuilder md(ctx_);
      b_.CreateCondBr(b_.CreateICmpEQ(state, b_.getInt8(codegen::kFrameFaulted)), faulted, ran,
                      md.createBranchWeights(1, 1u << 20));
      b_.SetInsertPoint(faulted);
      if (ret->isVoidTy())
        b_.CreateRetVoid();
      else
        b_.CreateRet(llvm::Constant::getNullValue(ret));
      b_.SetInsertPoint(ran);
      EmitIfElse(b_.CreateICmpEQ(state, b_.getInt8(codegen::kFrameArmed)),
                 [&] { CallRt("kiln_rt_leave", b_.getVoidTy(), {}); }, {});
    }
    Value* extra = a < fn->arg_size() ? fn->getArg(a) : nullptr;
    switch (info.result) {
      case AbiKind::Int: {
        // Only the sign matters to the session; clamp the 64-bit answer into -1/0/1.
        Value* neg = b_.CreateICmpSLT(r, b_.getInt64(0));
        Value* pos = b_.CreateICmpSGT(r, b_.getInt64(0));
        b_.CreateRet(b_.CreateSelect(neg, b_.getInt32(-1), b_.CreateZExt(pos, i32_)));
        break;
      }
      case AbiKind::Vote: b_.CreateRet(r); break;
      case AbiKind::Bool: b_.CreateRet(r); break;
      case AbiKind::Float:
        b_.CreateStore(r->getType() == f64_ ? r : b_.CreateSIToFP(r, f64_), extra);
        b_.CreateRet(b_.getInt32(0));
        break;
      case AbiKind::FloatList: {
        // none fails the scoring (return 1); otherwise scores[i] = answer[i] for the nodes
        // passed (extra answers are ignored, missing are 0).
        BasicBlock* failed = BasicBlock::Create(ctx_, "scores.none", fn);
        BasicBlock* present = BasicBlock::Create(ctx_, "scores", fn);
        b_.CreateCondBr(b_.CreateExtractValue(r, {0}), present, failed);
        b_.SetInsertPoint(failed);
        b_.CreateRet(b_.getInt32(1));
        b_.SetInsertPoint(present);
        Value* answer = b_.CreateExtractValue(r, {1});
        Value* items = b_.CreateExtractValue(answer, {0});
        Value* n = b_.CreateExtractValue(answer, {1});
        Value* limit = lists.empty() ? n : b_.CreateSelect(b_.CreateICmpSLT(n, lists.back().second), n,
                                                          lists.back().second);
        ForRange(limit, [&](Value* i) {
          b_.CreateStore(b_.CreateLoad(f64_, b_.CreateGEP(f64_, items, i)),
                         b_.CreateGEP(f64_, extra, i));
        });
        b_.CreateRet(b_.getInt32(0));
        break;
      }
      case AbiKind::Status: {
        Value* code = b_.CreateExtractValue(r, {0});
        Value* reason = b_.CreateExtractValue(r, {1});
        Value* failed = b_.CreateICmpNE(code, b_.getInt32(0));
        EmitIfElse(failed, [&] {
          CallRt("kiln_status_add_reason", b_.getVoidTy(),
                 {extra, StrPart(reason, 0), StrPart(reason, 1)});
        }, {});
        b_.CreateRet(code);
        break;
      }
      case AbiKind::Validation: {
        Value* pass = b_.CreateExtractValue(r, {0});
        EmitIfElse(b_.CreateNot(pass), [&] {
          Value* reason = b_.CreateExtractValue(r, {1});
          Value* message = b_.CreateExtractValue(r, {2});
          CallRt("kiln_status_add_reason", b_.getVoidTy(),
                 {extra, StrPart(reason, 0), StrPart(reason, 1)});
          CallRt("kiln_status_set_message", b_.getVoidTy(),
                 {extra, StrPart(message, 0), StrPart(message, 1)});
        }, {});
        b_.CreateRet(pass);
        break;
      }
      case AbiKind::NodeOrNone: b_.CreateRet(r); break;
      case AbiKind::Victims: {
        Value* decided = b_.CreateExtractValue(r, {0});
        Value* chosen = b_.CreateExtractValue(r, {1});
        EmitIfElse(decided, [&] {
          MarkSelected(lists.back().first, lists.back().second, chosen, extra);
        }, {});
        b_.CreateRet(b_.CreateZExt(decided, i32_));
        break;
      }
      case AbiKind::TaskList:
      case AbiKind::HyperNodeList:
        MarkSelected(lists.back().first, lists.back().second, r, extra);
        b_.CreateRetVoid();
        break;
      case AbiKind::Void: b_.CreateRetVoid(); break;
      default: Fail(&h, "unsupported handler result kind");
    }
  }

  void MarkSelected(Value* items, Value* n, Value* chosen, Value* selected) {
    b_.CreateCall(MarkSelectedFn(), {items, n, b_.CreateExtractValue(chosen, {0}),
                                     b_.CreateExtractValue(chosen, {1}), selected});
  }

  // `kiln.mark_selected(items, n, chosen, m, selected)`: selected[i] = 1 for every candidate in
  // the chosen list. Chosen lists are almost always built in candidate order (a filter, or an
  // append loop over the candidates), so one merge pass marks them without a host call or a hash
  // set; when the list is not an ordered subsequence, the host marks the rest (marking twice is
  // harmless).
  Function* MarkSelectedFn() {
    if (mark_selected_) return mark_selected_;
    auto* fn = Function::Create(
        llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_, ptr_, i64_, ptr_}, false),
        Function::InternalLinkage, "kiln.mark_selected", m_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    llvm::IRBuilder<> b(ctx_);
    Value* items = fn->getArg(0);
    Value* n = fn->getArg(1);
    Value* chosen = fn->getArg(2);
    Value* m = fn->getArg(3);
    Value* selected = fn->getArg(4);
    auto* entry = BasicBlock::Create(ctx_, "entry", fn);
    auto* loop = BasicBlock::Create(ctx_, "loop", fn);
    auto* check = BasicBlock::Create(ctx_, "check", fn);
    auto* mark = BasicBlock::Create(ctx_, "mark", fn);
    auto* next = BasicBlock::Create(ctx_, "next", fn);
    auto* done = BasicBlock::Create(ctx_, "done", fn);
    auto* rest = BasicBlock::Create(ctx_, "rest", fn);
    auto* out = BasicBlock::Create(ctx_, "out", fn);
    b.SetInsertPoint(entry);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* i = b.CreatePHI(i64_, 2);
    llvm::PHINode* j = b.CreatePHI(i64_, 2);
    i->addIncoming(b.getInt64(0), entry);
    j->addIncoming(b.getInt64(0), entry);
    b.CreateCondBr(b.CreateAnd(b.CreateICmpSLT(i, n), b.CreateICmpSLT(j, m)), check, done);
    b.SetInsertPoint(check);
    Value* c = b.CreateLoad(ptr_, b.CreateGEP(ptr_, items, i));
    Value* want = b.CreateLoad(ptr_, b.CreateGEP(ptr_, chosen, j));
    b.CreateCondBr(b.CreateICmpEQ(c, want), mark, next);
    b.SetInsertPoint(mark);
    b.CreateStore(b.getInt8(1), b.CreateGEP(i8_, selected, i));
    Value* j_marked = b.CreateAdd(j, b.getInt64(1));
    b.CreateBr(next);
    b.SetInsertPoint(next);
    llvm::PHINode* j2 = b.CreatePHI(i64_, 2);
    j2->addIncoming(j, check);
    j2->addIncoming(j_marked, mark);
    i->addIncoming(b.CreateAdd(i, b.getInt64(1)), next);
    j->addIncoming(j2, next);
    b.CreateBr(loop);
    b.SetInsertPoint(done);
    b.CreateCondBr(b.CreateICmpSLT(j, m), rest, out);
    b.SetInsertPoint(rest);
    llvm::FunctionCallee host = m_.getOrInsertFunction(
        "kiln_host_mark_selected",
        llvm::FunctionType::get(b.getVoidTy(), {ptr_, i64_, ptr_, i64_, ptr_}, false));
    b.CreateCall(host, {items, n, chosen, m, selected});
    b.CreateBr(out);
    b.SetInsertPoint(out);
    b.CreateRetVoid();
    mark_selected_ = fn;
    return fn;
  }

  // "kiln.state_init"(ctx): state in the session arena, initialised in declaration order.
  void EmitStateInit() {
    auto* fn = Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false),
                                Function::ExternalLinkage, kStateInitSymbol, m_);
    fn_ = fn;
    current_ = nullptr;
    locals_.clear();
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    ictx_ = fn->getArg(0);
    Value* prev = CallRt("kiln_rt_set_arena", ptr_, {CtxField(kCtxSessionArena, ptr_)});
    Value* state = CallRt("kiln_rt_alloc", ptr_, {b_.getInt64(std::max<uint64_t>(SizeOf(state_ty_), 1))}, true);
    b_.CreateStore(state, b_.CreateStructGEP(ctx_ty_, ictx_, kCtxState));
    in_state_init_ = true;  // view-keyed maps made here keep their dense table from the start
    for (const ast::StateDecl* s : policy_.All<ast::StateDecl>()) {
      const Type* t = s->declared.resolved;
      Value* v = s->init ? Coerce(Emit(*s->init), s->init->type, t) : ZeroOf(t);
      // A state whose Resources are overwritten in place must own them (state_in_place.h).
      if (s->init && in_place_.vars.count(s)) v = Persist(v, t);
      b_.CreateStore(v, StatePtr(s));
    }
    in_state_init_ = false;
    CallRt("kiln_rt_set_arena", ptr_, {prev});
    b_.CreateRetVoid();
  }

  // "kiln.args_default"(args, ctx): every argument's default; the host then overrides what
  // scheduler.conf sets. Runs with the plugin's argument arena current.
  void EmitArgsDefault() {
    auto* fn = Function::Create(llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_}, false),
                                Function::ExternalLinkage, kArgsDefaultSymbol, m_);
    fn_ = fn;
    current_ = nullptr;
    locals_.clear();
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", fn));
    ictx_ = fn->getArg(1);
    Value* args = fn->getArg(0);
    for (const ast::ArgDecl* a : policy_.All<ast::ArgDecl>()) {
      const Type* t = a->declared.resolved;
      Value* v = a->default_value ? Coerce(Emit(*a->default_value), a->default_value->type, t)
                                  : ZeroOf(t);
      b_.CreateStore(v, b_.CreateStructGEP(args_ty_, args, arg_index_.at(a)));
    }
    b_.CreateRetVoid();
  }

  const ast::Policy& policy_;
  const llvm::DataLayout& dl_;
  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::PointerType* ptr_;
  llvm::IntegerType *i1_, *i8_, *i32_, *i64_;
  llvm::Type* f64_;
  llvm::StructType *str_, *list_, *fit_, *validation_, *victims_, *ctx_ty_, *builder_ty_;
  llvm::StructType* state_ty_ = nullptr;
  llvm::StructType* args_ty_ = nullptr;
  llvm::GlobalVariable* empty_resource_ = nullptr;
  Function* map_find_i_ = nullptr;
  Function* map_probe_i_ = nullptr;
  Function* map_find_v_ = nullptr;
  bool in_state_init_ = false;  // emitting kiln.state_init
  Function* str_eq_ = nullptr;
  Function* mark_selected_ = nullptr;
  std::map<const ast::RecordDecl*, llvm::StructType*> records_;
  std::map<const ast::StateDecl*, unsigned> state_index_;
  std::map<const ast::ArgDecl*, unsigned> arg_index_;
  std::map<const ast::FnDecl*, Function*> fns_;
  std::map<Function*, bool> allocates_fn_;
  std::map<Function*, std::vector<Function*>> callees_;

  // Per function being lowered.
  Function* fn_ = nullptr;
  const ast::Callable* current_ = nullptr;
  Value* ictx_ = nullptr;
  bool allocates_ = false;
  codegen::InPlaceState in_place_;
  Function* res_id_fn_ = nullptr;
  std::vector<Value*> locals_;
  std::map<std::pair<Function*, const ast::Local*>, Value*> list_builders_;  // EmitLocalAppend
  std::vector<std::pair<BasicBlock*, BasicBlock*>> loops_;  // (continue, break)
  // The loops being emitted, outermost first: (iterations reserved, the iteration index).
  std::vector<std::pair<Value*, Value*>> budget_loops_;
  LoopBudget budget_{m_};
};

}  // namespace

Result<LoweredPolicy> LowerPolicy(const ast::Policy& policy, const llvm::DataLayout& layout) {
  LoweredPolicy out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(policy.name.empty() ? "policy" : policy.name,
                                              *out.context);
  out.module->setDataLayout(layout);
  // Lower against a private copy of the layout. llvm::DataLayout caches struct layouts keyed by
  // StructType*, and every policy has its own LLVMContext that is freed after compilation: with
  // one shared DataLayout, a later policy's state type can be allocated at the address of a freed
  // one and be given that type's stale layout (a stateless policy's size 0 for drf's 13 fields),
  // so the state block is under-allocated and handlers overwrite each other's state.
  const llvm::DataLayout private_layout(layout.getStringRepresentation());
  try {
    Lowering lowering(policy, private_layout, *out.context, *out.module);
    lowering.Run(out);
  } catch (const LoweringError& e) {
    return Error{"codegen: " + e.message,
                 SourceLocation{policy.path, e.range.begin.line, e.range.begin.column}};
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*out.module, &os)) {
    return Error{fmt::format("codegen produced invalid IR for policy {}: {}", policy.name,
                             os.str()),
                 SourceLocation{policy.path, 0, 0}};
  }
  return out;
}

}  // namespace kiln
