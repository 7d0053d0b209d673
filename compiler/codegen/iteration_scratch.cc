#include "compiler/codegen/iteration_scratch.h"

#include <map>

#include "compiler/passes/walk.h"

namespace kiln::codegen {

bool IterationsLeaveNothing(const ast::For& loop, bool (*holds_memory)(const Type*)) {
  // The locals declared inside the loop, its own variables included: whether each may be
  // written through as a map (declared with a fresh `{}` and never reassigned since).
  std::map<const ast::Local*, bool> inside;
  bool ok = true;
  passes::Walker walk;
  walk.on_declare = [&](ast::Local* l) { inside.emplace(l, false); };
  walk.on_stmt = [&](ast::Stmt* s) {
    if (const auto* let = ast::As<ast::Let>(s)) {
      // Seen before the walker declares the local, so this entry is the one that stays.
      if (let->value && let->value->kind == ast::NodeKind::MapLit) inside[let->local.get()] = true;
      return;
    }
    const auto* a = ast::As<ast::Assign>(s);
    if (!a || !ok) return;
    bool through_map = false;
    const ast::NameRef* name = passes::AssignedName(a->target.get(), &through_map);
    if (!name || name->ref != ast::NameKind::Local) return;  // state: copied or in place
    auto it = inside.find(name->local);
    if (it == inside.end()) {
      if (through_map || holds_memory(name->local->type)) ok = false;
    } else if (through_map) {
      if (!it->second) ok = false;
    } else {
      it->second = false;  // may now share a map declared elsewhere
    }
  };
  // The walker takes mutable nodes to let other passes annotate them; this one only reads.
  walk.Stmt(const_cast<ast::For*>(&loop));
  return ok;
}

}  // namespace kiln::codegen
