#pragma once
// Statement nodes, and Local: a named value introduced by let/var, a parameter, a loop variable
// or an if-let binding. NameRefs point at their Local; codegen gives each Local one slot.

#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/expr.h"

namespace kiln::ast {

struct Local {
  std::string name;
  SourceRange range;  // of the name where it is introduced
  const Type* type = nullptr;
  bool is_mutable = false;  // `var`
  int id = -1;              // unique within its function/handler, assigned by the resolver
};
using LocalPtr = std::unique_ptr<Local>;

struct Stmt : Node {
  using Node::Node;
};
using StmtPtr = std::unique_ptr<Stmt>;

// Syntax of a type as written: `map<Job, float>?`. `resolved` is set by the resolver.
struct TypeRef {
  std::string name;  // empty for a tuple type
  bool tuple = false;  // `(T1, T2)`: the elements are `args`
  std::vector<TypeRef> args;
  bool optional = false;
  SourceRange range;
  const Type* resolved = nullptr;
};

struct Block : Stmt {
  static constexpr NodeKind kKind = NodeKind::Block;
  explicit Block(SourceRange r) : Stmt(kKind, r) {}
  std::vector<StmtPtr> stmts;
};
using BlockPtr = std::unique_ptr<Block>;

// `let x = e;` / `var x: T = e;`
struct Let : Stmt {
  static constexpr NodeKind kKind = NodeKind::Let;
  explicit Let(SourceRange r) : Stmt(kKind, r) {}
  LocalPtr local;
  std::unique_ptr<TypeRef> declared;  // may be null
  ExprPtr value;
};

enum class AssignOp : uint8_t { Set, Add, Sub, Mul, Div };
const char* AssignOpSpelling(AssignOp op);

// `target op value;` — target is a NameRef (var or state) or an Index into a state map.
struct Assign : Stmt {
  static constexpr NodeKind kKind = NodeKind::Assign;
  explicit Assign(SourceRange r) : Stmt(kKind, r) {}
  ExprPtr target;
  AssignOp op = AssignOp::Set;
  ExprPtr value;
};

struct If : Stmt {
  static constexpr NodeKind kKind = NodeKind::If;
  explicit If(SourceRange r) : Stmt(kKind, r) {}
  ExprPtr cond;
  BlockPtr then;
  StmtPtr otherwise;  // null, a Block, an If or an IfLet
};

// `if let x = optional { then } else { otherwise }`: x has the payload type inside `then`.
struct IfLet : Stmt {
  static constexpr NodeKind kKind = NodeKind::IfLet;
  explicit IfLet(SourceRange r) : Stmt(kKind, r) {}
  LocalPtr local;
  ExprPtr value;
  BlockPtr then;
  StmtPtr otherwise;
};

// `for x in list`, `for k, v in map`, `for i in range(a, b)`.
struct For : Stmt {
  static constexpr NodeKind kKind = NodeKind::For;
  explicit For(SourceRange r) : Stmt(kKind, r) {}
  LocalPtr first;
  LocalPtr second;  // map value; null otherwise
  ExprPtr source;
  BlockPtr body;
};

struct Return : Stmt {
  static constexpr NodeKind kKind = NodeKind::Return;
  explicit Return(SourceRange r) : Stmt(kKind, r) {}
  ExprPtr value;  // null in void functions
};

struct Break : Stmt {
  static constexpr NodeKind kKind = NodeKind::Break;
  explicit Break(SourceRange r) : Stmt(kKind, r) {}
};

struct Continue : Stmt {
  static constexpr NodeKind kKind = NodeKind::Continue;
  explicit Continue(SourceRange r) : Stmt(kKind, r) {}
};

struct ExprStmt : Stmt {
  static constexpr NodeKind kKind = NodeKind::ExprStmt;
  explicit ExprStmt(SourceRange r) : Stmt(kKind, r) {}
  ExprPtr value;
};

}  // namespace kiln::ast
