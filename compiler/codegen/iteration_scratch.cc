#include "compiler/codegen/iteration_scratch.h"

#include <map>

namespace kiln::codegen {

namespace {

class Check {
 public:
  explicit Check(bool (*holds_memory)(const Type*)) : holds_memory_(holds_memory) {}

  bool Loop(const ast::For& loop) {
    Declare(loop.first.get(), false);
    Declare(loop.second.get(), false);
    Block(*loop.body);
    return ok_;
  }

 private:
  // Body locals: whether each may be written through as a map (declared with a fresh `{}` and
  // never reassigned).
  void Declare(const ast::Local* l, bool fresh_map) {
    if (l) inside_[l] = fresh_map;
  }

  void Block(const ast::Block& b) {
    for (const ast::StmtPtr& s : b.stmts) Stmt(*s);
  }

  void Stmt(const ast::Stmt& s) {
    if (!ok_) return;
    switch (s.kind) {
      case ast::NodeKind::Block: Block(static_cast<const ast::Block&>(s)); return;
      case ast::NodeKind::Let: {
        const auto& let = static_cast<const ast::Let&>(s);
        Declare(let.local.get(), let.value && let.value->kind == ast::NodeKind::MapLit);
        return;
      }
      case ast::NodeKind::Assign: Assign(static_cast<const ast::Assign&>(s)); return;
      case ast::NodeKind::If: {
        const auto& st = static_cast<const ast::If&>(s);
        Block(*st.then);
        if (st.otherwise) Stmt(*st.otherwise);
        return;
      }
      case ast::NodeKind::IfLet: {
        const auto& st = static_cast<const ast::IfLet&>(s);
        Declare(st.local.get(), false);
        Block(*st.then);
        if (st.otherwise) Stmt(*st.otherwise);
        return;
      }
      case ast::NodeKind::For: {
        const auto& st = static_cast<const ast::For&>(s);
        Declare(st.first.get(), false);
        Declare(st.second.get(), false);
        Block(*st.body);
        return;
      }
      default: return;  // return, break, continue, expression statements
    }
  }

  void Assign(const ast::Assign& a) {
    const ast::Expr* root = a.target.get();
    bool through_map = false;
    for (;;) {
      if (const auto* ix = ast::As<ast::Index>(root)) {
        // `r[name] = x` on a Resource replaces the variable's resource (a copy): a plain write.
        if (ix->operand->type && ix->operand->type->kind == TypeKind::Map) through_map = true;
        root = ix->operand.get();
      } else if (const auto* sel = ast::As<ast::Select>(root)) {
        root = sel->operand.get();
      } else {
        break;
      }
    }
    const auto* name = ast::As<ast::NameRef>(root);
    if (!name || name->ref != ast::NameKind::Local) return;  // state (copied or in place)
    auto it = inside_.find(name->local);
    if (it == inside_.end()) {
      if (through_map || holds_memory_(name->local->type)) ok_ = false;
      return;
    }
    if (through_map) {
      if (!it->second) ok_ = false;
    } else {
      it->second = false;  // may now share a map declared elsewhere
    }
  }

  bool (*holds_memory_)(const Type*);
  std::map<const ast::Local*, bool> inside_;
  bool ok_ = true;
};

}  // namespace

bool IterationsLeaveNothing(const ast::For& loop, bool (*holds_memory)(const Type*)) {
  return Check(holds_memory).Loop(loop);
}

}  // namespace kiln::codegen
