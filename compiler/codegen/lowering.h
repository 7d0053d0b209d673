#pragma once
// The lowering context: what every translator of the typed AST into LLVM IR needs — the LLVM
// types of the language's values, the module, the builder, the function being lowered and the
// per-policy tables. Internal to compiler/codegen/ (it pulls in IRBuilder): nothing outside this
// folder includes it; the rest of the compiler sees codegen.h.
//
// The translators are the member functions, one file per concern, so each file answers one
// question ("how is `for` lowered?"):
//   codegen.cc             the pipeline, top to bottom (Run) and LowerPolicy
//   lowering.cc            LLVM types, runtime declarations, function bodies, context fields
//   lower_values.cc        zero values, optionals, implicit conversions, persisting state
//   lower_statements.cc    statements, assignments, in-place list appends, loops
//   lower_expressions.cc   names, arithmetic, comparisons, `in`
//   lower_views.cc         fields of views (runtime/abi.h), indexing, resource literals
//   lower_maps.cc          the map lookup emitter, map slots, get / keys / values
//   lower_collections.cc   iteration, lists, comprehensions
//   lower_tuples.cc        tuples, and the map keys they become
//   lower_calls.cc         calls: policy functions, generic builtins, standard-library rows
//   lower_handlers.cc      handler thunks (runtime/session.h ABI), state init, argument defaults

#include <fmt/format.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/loop_budget.h"
#include "compiler/codegen/policy_context.h"
#include "compiler/codegen/state_in_place.h"
#include "runtime/abi.h"
#include "runtime/model.h"
#include "runtime/resource.h"
#include "stdlib/library.h"

namespace kiln::codegen {

using llvm::BasicBlock;
using llvm::Function;
using llvm::Value;


// Thrown inside the lowering only, caught in LowerPolicy: a construct the checker accepted that
// codegen cannot lower. Never escapes compiler/codegen/.
struct LoweringError {
  std::string message;
  SourceRange range;
};

[[noreturn]] inline void Fail(const ast::Node* at, std::string message) {
  throw LoweringError{std::move(message), at ? at->range : SourceRange{}};
}

inline bool IsKind(const Type* t, TypeKind k) { return t && t->kind == k; }
inline bool IsIntLike(const Type* t) {
  return t && (t->kind == TypeKind::Int || t->kind == TypeKind::Duration ||
               t->kind == TypeKind::Time);
}
inline bool IsFloatLike(const Type* t) {
  return t && (t->kind == TypeKind::Float || t->kind == TypeKind::Quantity);
}
inline bool IsViewPtr(const Type* t) { return t && t->IsView(); }
// Optionals of views are nullable pointers; other optionals are {i1, T}.
inline bool IsPtrOptional(const Type* t) {
  return IsKind(t, TypeKind::Optional) && IsViewPtr(t->elem);
}

// Appends one basic block per name to `fn`, in order (the order they print in the IR):
// `auto [head, body, done] = Blocks(fn, {"loop", "loop.body", "loop.done"});`.
template <size_t N>
std::array<BasicBlock*, N> Blocks(Function* fn, const char* const (&names)[N]) {
  std::array<BasicBlock*, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = BasicBlock::Create(fn->getContext(), names[i], fn);
  return out;
}

// Enters a counted loop from the builder's block: branches to `head`, where the index starts at
// 0 and `index < n` goes on to `body` (where the builder is left), else to `exit`. Returns the
// index; its back edge is the caller's to add.
inline llvm::PHINode* EnterCountedLoop(llvm::IRBuilder<>& b, BasicBlock* head, BasicBlock* body,
                                       BasicBlock* exit, Value* n) {
  BasicBlock* pre = b.GetInsertBlock();
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), pre);
  b.CreateCondBr(b.CreateICmpSLT(i, n), body, exit);
  b.SetInsertPoint(body);
  return i;
}

// The forms of the one map-lookup emitter (lower_maps.cc): scan-or-probe for int keys, the hash
// probe alone, and the dense-table path of view-keyed maps.
enum class MapLookup : uint8_t { Scan, Probe, View };

class Lowering {
 public:
  Lowering(const ast::Policy& policy, const llvm::DataLayout& layout, llvm::LLVMContext& ctx,
           llvm::Module& module);
  // Lowers the whole policy into the module and fills `out` (codegen.cc).
  void Run(LoweredPolicy& out);

 private:
  // lowering.cc
  llvm::Type* Ty(const Type* t);
  uint64_t SizeOf(llvm::Type* t);
  llvm::FunctionCallee Rt(const std::string& name, llvm::Type* ret,
                          std::vector<llvm::Type*> params, bool allocates = false);
  Value* CallRt(const std::string& name, llvm::Type* ret, std::vector<Value*> args,
                bool allocates = false);
  Value* CallStrOut(const std::string& name, std::vector<Value*> args, bool allocates);
  Value* Alloca(llvm::Type* t);
  Function* Declare(const ast::Callable& c, const std::string& name, bool handler = false);
  void BeginBody(Function* fn, const ast::Callable* c, unsigned ctx_arg = 0);
  void Define(const ast::Callable& c, Function* fn);
  void PropagateAllocates();
  Value* LocalSlot(const ast::Local* local);
  Value* CtxField(int index, llvm::Type* t);
  Value* StatePtr(const ast::StateDecl* s);
  Value* ArgPtr(const ast::ArgDecl* a);

  // lower_values.cc
  Value* ZeroOf(const Type* t);
  llvm::Constant* ZeroStr();
  Value* EmptyResource();
  Value* Str(std::string_view s);
  Value* NewMap(const Type* t);
  static int32_t ViewIndexOffset(const Type* key);
  Value* MakeOptional(const Type* opt, Value* payload);
  Value* NoneOf(const Type* opt);
  Value* IsPresent(const Type* opt, Value* v);
  Value* Payload(const Type* opt, Value* v);
  Value* Coerce(Value* v, const Type* from, const Type* to);
  static bool NeedsPersist(const Type* t);
  Value* Persist(Value* v, const Type* t);
  Value* StoreResourceInPlace(Value* old, Value* v);

  // lower_statements.cc
  void EmitBlock(const ast::Block& block);
  void EmitStmt(const ast::Stmt& s);
  void EmitIfElse(Value* cond, const std::function<void()>& then,
                  const std::function<void()>& otherwise);
  void EmitAssign(const ast::Assign& a);
  static const ast::Expr* AppendedElement(const ast::Assign& a, const ast::Local* local);
  void EmitLocalAppend(const ast::Local* local, const ast::Expr& elem);
  Value* ListBuilder(const ast::Local* local);
  bool RootIsState(const ast::Expr& e);
  static bool CallsPolicyFunction(const ast::Expr& e);
  void LoopN(Value* n, const std::function<void(Value*)>& body, BasicBlock** continue_to,
             BasicBlock** break_to);
  void EmitFor(const ast::For& f);
  void EmitIterateWithLoops(const ast::Expr& source,
                            const std::function<void(Value*, Value*)>& body);

  // lower_maps.cc
  Function* PureHelper(const char* name, llvm::FunctionType* type, bool always_inline);
  Function* MapLookupFn(MapLookup kind);
  Value* FindIntKey(const Type* mt, Value* map, Value* k, Value* value_size);
  Value* MapSlot(const Type* mt, Value* map, Value* key, const Type* key_type, bool insert,
                 const Type* vt);
  Value* KeyInt(Value* key, const Type* key_type);
  Value* KeyFromInt(Value* k, const Type* key_type);
  Value* EmitMapForWrite(const ast::Expr& e);
  Value* EmitMapGet(const ast::Call& c);
  Value* EmitMapKeysOrValues(const ast::Call& c, bool keys);

  // lower_tuples.cc
  llvm::Type* TupleTy(const Type* t);
  Value* EmitTupleLit(const ast::TupleLit& lit);
  Value* TupleKey(Value* tuple, const Type* t);
  Value* TupleFromKey(Value* key, const Type* t);
  Value* MapKeyAt(Value* map, Value* i, const Type* key_type);
  Value* MapSize(Value* map);
  void StoreToPlace(const ast::Assign& a, const ast::Expr& place, Value* v);
  Value* OwnedMap(Value* v, const Type* t, const ast::Expr& source);
  static bool ReachesMap(const Type* t);
  Value* CopyMapsDeep(Value* v, const Type* t);
  Value* CompareTuples(ast::BinaryOp op, Value* l, Value* r, const Type* t, const ast::Node* at);

  // lower_collections.cc
  static const ast::Call* RangeCall(const ast::Expr& e);
  std::pair<Value*, Value*> RangeBounds(const ast::Call& call);
  void EmitIterate(const ast::Expr& source,
                   const std::function<void(Value*, Value*)>& body, BasicBlock** continue_to,
                   BasicBlock** break_to);
  Value* BuildList(const Type* elem, const std::vector<Value*>& values);
  Value* ListConcat(Value* l, Value* r, const Type* t);
  Value* EmitListGet(const ast::Call& c);
  Value* EmitListContains(const ast::Expr& list, const ast::Expr& item, const ast::Node* at);
  Value* EmitComprehension(const ast::Comprehension& c);
  Value* ToSortKey(Value* k, const Type* t);
  Value* SourceSize(const ast::Expr& source);

  // lower_expressions.cc
  Value* Emit(const ast::Expr& e);
  Value* EmitExpr(const ast::Expr& e);
  Value* EmitChoice(Value* cond, const Type* t, const std::function<Value*()>& then,
                    const std::function<Value*()>& otherwise);
  Value* EmitName(const ast::NameRef& n);
  Value* EmitUnary(const ast::Unary& u);
  Value* SatAdd(Value* a, Value* b);
  Value* SatSub(Value* a, Value* b);
  Value* SatMul(Value* a, Value* b);
  Value* SafeDiv(Value* a, Value* b, bool rem);
  Value* Arith(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
               const Type* result, const ast::Node* at);
  const Type* FloatType();
  Value* FloatToInt(Value* f);
  Value* EmitBinary(const ast::Binary& bin);
  Value* EmitCompare(const ast::Binary& bin);
  Value* Compare(ast::BinaryOp op, Value* l, const Type* lt, Value* r, const Type* rt,
                 const ast::Node* at);
  Value* EmitIn(const ast::Binary& bin);
  Function* StrEqFn();

  // lower_views.cc
  const AbiFieldInfo* ViewListField(const ast::Expr& e);
  const AbiFieldInfo* StringMapField(const ast::Expr& e);
  const AbiFieldInfo* HostMapField(const ast::Expr& e);
  llvm::Type* HostMapValueType(const AbiFieldInfo& f);
  Value* HostMapZero(const AbiFieldInfo& f);
  Value* EmitSelect(const ast::Select& s);
  Value* ResourceDim(Value* res, int id);
  Value* ResourceIdOf(Value* name);
  Value* ResourceDimAt(Value* res, Value* id);
  Value* LoadDerived(const DerivedJobBool& d, Value* job);
  Value* LoadField(const AbiFieldInfo& f, Value* obj, const Type* want, const ast::Node* at);
  Value* MaterializeStringMap(const std::string& fn, Value* obj);
  Value* MaterializeHostMap(const std::string& fn, Value* obj, llvm::Type* vty);
  Value* EmitSessionField(const ast::Select& s);
  Value* EmitIndex(const ast::Index& ix);
  Value* EmitResourceLit(const ast::ResourceLit& lit);

  // lower_calls.cc
  std::vector<Value*> Args(const ast::Call& c);
  Value* StrPart(Value* s, unsigned i);
  Value* EmitCall(const ast::Call& c);
  Value* F(double v);
  static const stdlib::Function* StdRow(const ast::Call& c);
  Value* EmitLibraryCall(const ast::Call& c);
  Value* EmitNamedFunction(const ast::Call& c, const std::string& name,
                           const std::vector<const ast::Expr*>& args);
  Value* EmitStdNative(const ast::Call& c, const std::string& sym,
                       const std::vector<const ast::Expr*>& args, bool with_ctx = false,
                       bool builds_in_arena = false);

  // lower_handlers.cc
  bool EmitFilterVictimsThunk(const ast::HandlerDecl& h, const ExtensionPointInfo& info);
  void EmitThunk(const ast::HandlerDecl& h, Function* body, const ExtensionPointInfo& info);
  void MarkSelected(Value* items, Value* n, Value* chosen, Value* selected);
  Function* MarkSelectedFn();
  void EmitStateInit();
  void EmitArgsDefault();

  // codegen.cc

  // Emits `for (i = 0; i < n; ++i) body(i)`.
  template <typename F>
  void ForRange(Value* n, F body) {
    auto [head, bodyb, done] = Blocks(fn_, {"loop", "loop.body", "loop.done"});
    llvm::PHINode* i = EnterCountedLoop(b_, head, bodyb, done, n);
    body(i);
    Value* next = b_.CreateAdd(i, b_.getInt64(1));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  }

  static constexpr int64_t kInlineStrEqBytes = 64;
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
  Function* map_lookup_[3] = {};  // by MapLookup
  bool in_state_init_ = false;  // emitting kiln.state_init
  Function* str_eq_ = nullptr;
  Function* mark_selected_ = nullptr;
  std::map<const ast::RecordDecl*, llvm::StructType*> records_;
  std::map<const ast::StateDecl*, unsigned> state_index_;
  // `state ... across sessions`: {i64 initialised, each such state}, every field at most 8
  // bytes, so the host's block of 8-byte slots holds it (compiler/host/kept_state.h).
  llvm::StructType* kept_ty_ = nullptr;
  std::map<const ast::StateDecl*, unsigned> kept_index_;
  std::map<const ast::ArgDecl*, unsigned> arg_index_;
  std::map<const ast::FnDecl*, Function*> fns_;
  std::map<Function*, bool> allocates_fn_;
  std::map<Function*, std::vector<Function*>> callees_;
  // Per function being lowered.
  Function* fn_ = nullptr;
  const ast::Callable* current_ = nullptr;
  Value* ictx_ = nullptr;
  bool allocates_ = false;
  // Calls emitted so far that may allocate in the call arena (intrinsics declared allocating,
  // policy functions): EmitFor compares it around a body.
  uint64_t allocating_sites_ = 0;
  codegen::InPlaceState in_place_;
  Function* res_id_fn_ = nullptr;
  std::vector<Value*> locals_;
  std::map<std::pair<Function*, const ast::Local*>, Value*> list_builders_;  // EmitLocalAppend
  std::vector<std::pair<BasicBlock*, BasicBlock*>> loops_;  // (continue, break)
  // The loops being emitted, outermost first: (iterations reserved, the iteration index).
  std::vector<std::pair<Value*, Value*>> budget_loops_;
  LoopBudget budget_{m_};
};

}  // namespace kiln::codegen
