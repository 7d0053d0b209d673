#include "compiler/codegen/state_in_place.h"

#include <map>

#include "compiler/passes/walk.h"

namespace kiln::codegen {

namespace {

bool HoldsResource(const Type* t) {
  if (!t) return false;
  switch (t->kind) {
    case TypeKind::Resource: return true;
    case TypeKind::List:
    case TypeKind::Optional: return HoldsResource(t->elem);
    case TypeKind::Map: return HoldsResource(t->key) || HoldsResource(t->elem);
    case TypeKind::Record:
      for (const ast::RecordField& f : t->record->fields)
        if (HoldsResource(f.declared.resolved)) return true;
      return false;
    default: return false;
  }
}

// The state variable `e` names, when it is a candidate.
const ast::StateDecl* StateOf(const ast::Expr* e) {
  const auto* n = ast::As<ast::NameRef>(e);
  return n && n->ref == ast::NameKind::State ? n->state_decl : nullptr;
}

bool IsCandidateType(const Type* t) {
  return t && (t->kind == TypeKind::Resource ||
               (t->kind == TypeKind::Map && t->elem && t->elem->kind == TypeKind::Resource &&
                !HoldsResource(t->key)));
}

bool IsArithOrCompare(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add:
    case ast::BinaryOp::Sub:
    case ast::BinaryOp::Mul:
    case ast::BinaryOp::Div:
    case ast::BinaryOp::Eq:
    case ast::BinaryOp::Ne:
    case ast::BinaryOp::Lt:
    case ast::BinaryOp::Le:
    case ast::BinaryOp::Gt:
    case ast::BinaryOp::Ge: return true;
    default: return false;
  }
}

class Analysis {
 public:
  explicit Analysis(const ast::Policy& policy) : policy_(policy) {}

  InPlaceState Run() {
    for (const ast::StateDecl* s : policy_.All<ast::StateDecl>())
      if (IsCandidateType(s->declared.resolved)) candidates_[s] = true;
    if (candidates_.empty()) return {};
    passes::Walker w;
    w.on_stmt = [&](ast::Stmt* s) { VisitStmt(*s); };
    w.on_expr = [&](ast::Expr* e) { VisitExpr(*e); };
    for (const ast::StateDecl* s : policy_.All<ast::StateDecl>())
      w.Expr(const_cast<ast::Expr*>(s->init.get()));
    for (const ast::FnDecl* f : policy_.All<ast::FnDecl>()) w.Stmt(f->body.get());
    for (const ast::HandlerDecl* h : policy_.All<ast::HandlerDecl>()) w.Stmt(h->body.get());
    // Every mention of a candidate map must be one of the followed uses.
    for (const ast::NameRef* n : mentions_) {
      const ast::StateDecl* s = n->state_decl;
      if (s->declared.resolved->kind == TypeKind::Map && !followed_.count(n)) candidates_[s] = false;
    }
    InPlaceState out;
    for (const auto& [s, ok] : candidates_)
      if (ok) out.vars.insert(s);
    for (const auto& [read, s] : reads_)
      if (out.vars.count(s) && !consumed_.count(read)) out.pinning_reads.insert(read);
    return out;
  }

 private:
  bool Candidate(const ast::Expr* e) {
    const ast::StateDecl* s = StateOf(e);
    return s && candidates_.count(s);
  }

  void VisitStmt(const ast::Stmt& s) {
    if (const auto* a = ast::As<ast::Assign>(&s)) {
      // `m = e`, `r = e`, `m[k] = e`, `r[name] = e`: stores, not reads.
      if (Candidate(a->target.get())) {
        followed_.insert(static_cast<const ast::NameRef*>(a->target.get()));
        stored_.insert(a->target.get());
      } else if (const auto* i = ast::As<ast::Index>(a->target.get()); i && Candidate(i->operand.get())) {
        followed_.insert(static_cast<const ast::NameRef*>(i->operand.get()));
        stored_.insert(a->target.get());
      }
    } else if (const auto* f = ast::As<ast::For>(&s)) {
      // Iterating the keys only.
      if (Candidate(f->source.get()) && !f->second)
        followed_.insert(static_cast<const ast::NameRef*>(f->source.get()));
    }
  }

  void VisitExpr(const ast::Expr& e) {
    if (const auto* n = ast::As<ast::NameRef>(&e); n && Candidate(n)) {
      mentions_.push_back(n);
      // A Resource variable's every read is followed (and pins unless consumed).
      if (n->state_decl->declared.resolved->kind == TypeKind::Resource && !stored_.count(n))
        reads_[n] = n->state_decl;
      return;
    }
    if (const auto* i = ast::As<ast::Index>(&e)) {
      if (Candidate(i->operand.get()) && i->operand->type->kind == TypeKind::Map) {
        followed_.insert(static_cast<const ast::NameRef*>(i->operand.get()));
        if (!stored_.count(i)) reads_[i] = StateOf(i->operand.get());
      }
      if (IsKind(i->operand->type, TypeKind::Resource)) Consume(i->operand.get());
      return;
    }
    if (const auto* b = ast::As<ast::Binary>(&e)) {
      if (b->op == ast::BinaryOp::In && Candidate(b->right.get()))
        followed_.insert(static_cast<const ast::NameRef*>(b->right.get()));
      if (IsArithOrCompare(b->op)) {
        Consume(b->left.get());
        Consume(b->right.get());
      }
      return;
    }
    if (const auto* s = ast::As<ast::Select>(&e)) {
      if (IsKind(s->operand->type, TypeKind::Resource)) Consume(s->operand.get());
      return;
    }
    if (const auto* c = ast::As<ast::Call>(&e)) {
      if (c->call == ast::CallKind::Function) return;  // a policy function may keep its argument
      if (c->receiver && Candidate(c->receiver.get())) {
        if (c->callee == "get") {
          followed_.insert(static_cast<const ast::NameRef*>(c->receiver.get()));
          reads_[c] = StateOf(c->receiver.get());
        } else if (!HoldsResource(c->type)) {
          followed_.insert(static_cast<const ast::NameRef*>(c->receiver.get()));
        }
      }
      if (c->call == ast::CallKind::Builtin && c->callee == "len" && c->args.size() == 1 &&
          Candidate(c->args[0].get()))
        followed_.insert(static_cast<const ast::NameRef*>(c->args[0].get()));
      // A library function whose result holds no Resource cannot hand one of its arguments back.
      if (!HoldsResource(c->type)) {
        if (c->receiver) Consume(c->receiver.get());
        for (const ast::ExprPtr& a : c->args) Consume(a.get());
      }
      return;
    }
  }

  // `e`'s value is used up by its consumer: a read there holds nothing afterwards.
  void Consume(const ast::Expr* e) {
    if (!e) return;
    consumed_.insert(e);
    if (const auto* b = ast::As<ast::Binary>(e); b && b->op == ast::BinaryOp::Coalesce) {
      Consume(b->left.get());
      Consume(b->right.get());
    } else if (const auto* c = ast::As<ast::Conditional>(e)) {
      Consume(c->then.get());
      Consume(c->otherwise.get());
    }
  }

  static bool IsKind(const Type* t, TypeKind k) { return t && t->kind == k; }

  const ast::Policy& policy_;
  std::map<const ast::StateDecl*, bool> candidates_;
  std::vector<const ast::NameRef*> mentions_;
  std::set<const ast::NameRef*> followed_;
  std::set<const ast::Expr*> stored_;    // assignment targets (the name or the index)
  std::set<const ast::Expr*> consumed_;  // expressions whose value is used up at once
  std::map<const ast::Expr*, const ast::StateDecl*> reads_;
};

}  // namespace

InPlaceState AnalyzeInPlaceState(const ast::Policy& policy) { return Analysis(policy).Run(); }

}  // namespace kiln::codegen
