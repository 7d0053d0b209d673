#include "compiler/passes/walk.h"

namespace kiln::passes {

using namespace ast;

void Walker::Body(ast::Block* b) {
  if (!b) return;
  if (on_stmt) on_stmt(b);
  for (auto& x : b->stmts) Stmt(x.get());
}

void Walker::Stmt(ast::Stmt* s) {
  if (!s) return;
  if (on_stmt) on_stmt(s);
  switch (s->kind) {
    case NodeKind::Block:
      Open();
      for (auto& x : static_cast<Block*>(s)->stmts) Stmt(x.get());
      Close();
      break;
    case NodeKind::Let:
      Expr(static_cast<Let*>(s)->value.get());
      Declare(static_cast<Let*>(s)->local.get());
      break;
    case NodeKind::Assign:
      Expr(static_cast<Assign*>(s)->target.get());
      Expr(static_cast<Assign*>(s)->value.get());
      break;
    case NodeKind::If: {
      auto* i = static_cast<If*>(s);
      Expr(i->cond.get());
      Stmt(i->then.get());
      Stmt(i->otherwise.get());
      break;
    }
    case NodeKind::IfLet: {
      auto* i = static_cast<IfLet*>(s);
      Expr(i->value.get());
      Open();
      Declare(i->local.get());
      Body(i->then.get());
      Close();
      Stmt(i->otherwise.get());
      break;
    }
    case NodeKind::For: {
      auto* f = static_cast<For*>(s);
      Expr(f->source.get());
      Open();
      Declare(f->first.get());
      Declare(f->second.get());
      Body(f->body.get());
      Close();
      break;
    }
    case NodeKind::Return: Expr(static_cast<Return*>(s)->value.get()); break;
    case NodeKind::ExprStmt: Expr(static_cast<ExprStmt*>(s)->value.get()); break;
    default: break;
  }
}

void Walker::Expr(ast::Expr* e) {
  if (!e) return;
  if (on_expr) on_expr(e);
  switch (e->kind) {
    case NodeKind::Unary: Expr(static_cast<Unary*>(e)->operand.get()); break;
    case NodeKind::Binary:
      Expr(static_cast<Binary*>(e)->left.get());
      Expr(static_cast<Binary*>(e)->right.get());
      break;
    case NodeKind::Conditional: {
      auto* c = static_cast<Conditional*>(e);
      Expr(c->cond.get());
      Expr(c->then.get());
      Expr(c->otherwise.get());
      break;
    }
    case NodeKind::Select: Expr(static_cast<Select*>(e)->operand.get()); break;
    case NodeKind::Index:
      Expr(static_cast<Index*>(e)->operand.get());
      Expr(static_cast<Index*>(e)->index.get());
      break;
    case NodeKind::Call: {
      auto* c = static_cast<Call*>(e);
      Expr(c->receiver.get());
      for (auto& a : c->args) Expr(a.get());
      break;
    }
    case NodeKind::Comprehension: {
      auto* c = static_cast<Comprehension*>(e);
      Expr(c->source.get());
      Open();
      Declare(c->first.get());
      Declare(c->second.get());
      Expr(c->filter.get());
      Expr(c->element.get());
      Expr(c->order_key.get());
      Close();
      break;
    }
    case NodeKind::ListLit:
    case NodeKind::TupleLit:
      for (auto& x : static_cast<ElementsLit*>(e)->elements) Expr(x.get());
      break;
    case NodeKind::MapLit:
      for (auto& x : static_cast<MapLit*>(e)->entries) {
        Expr(x.key.get());
        Expr(x.value.get());
      }
      break;
    case NodeKind::ResourceLit:
      for (auto& x : static_cast<ResourceLit*>(e)->entries) Expr(x.value.get());
      break;
    case NodeKind::RecordLit:
      for (auto& f : static_cast<RecordLit*>(e)->fields) Expr(f.value.get());
      break;
    default: break;
  }
}

const ast::NameRef* AssignedName(const ast::Expr* target, bool* through_map) {
  if (through_map) *through_map = false;
  while (target) {
    if (auto* n = ast::As<ast::NameRef>(target)) return n;
    if (auto* i = ast::As<ast::Index>(target)) {
      if (through_map && i->operand->type && i->operand->type->kind == TypeKind::Map)
        *through_map = true;
      target = i->operand.get();
    } else if (auto* s = ast::As<ast::Select>(target)) {
      target = s->operand.get();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

const ast::StateDecl* AssignedState(const ast::Expr* target) {
  const ast::NameRef* n = AssignedName(target);
  return n && n->ref == ast::NameKind::State ? n->state_decl : nullptr;
}

}  // namespace kiln::passes
