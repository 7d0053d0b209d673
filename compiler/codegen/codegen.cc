#include "compiler/codegen/codegen.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/codegen/fault_frame.h"
#include "compiler/codegen/lowering.h"

namespace kiln {

namespace codegen {

void Lowering::Run(LoweredPolicy& out) {
  in_place_ = codegen::AnalyzeInPlaceState(policy_);
  // State and argument blocks.
  std::vector<llvm::Type*> state_fields;
  std::vector<llvm::Type*> kept_fields{i64_};
  for (const ast::StateDecl* s : policy_.All<ast::StateDecl>()) {
    auto& fields = s->across_sessions ? kept_fields : state_fields;
    (s->across_sessions ? kept_index_ : state_index_)[s] = static_cast<unsigned>(fields.size());
    fields.push_back(Ty(s->declared.resolved));
  }
  state_ty_ = llvm::StructType::create(ctx_, state_fields, "kiln.state");
  kept_ty_ = llvm::StructType::create(ctx_, kept_fields, "kiln.kept");
  if (SizeOf(kept_ty_) > 8 * kept_fields.size())
    Fail(nullptr, "state kept across sessions does not fit its 8-byte slots");
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

}  // namespace codegen

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
    codegen::Lowering lowering(policy, private_layout, *out.context, *out.module);
    lowering.Run(out);
  } catch (const codegen::LoweringError& e) {
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
