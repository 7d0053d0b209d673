#pragma once
// The root of the AST: every node has a kind and a source range.

#include <cstdint>

#include "compiler/source.h"

namespace kiln::ast {

enum class NodeKind : uint8_t {
  // expressions (expr.h)
  IntLit, FloatLit, StringLit, BoolLit, DurationLit, QuantityLit, NoneLit,
  NameRef, Unary, Binary, Conditional, Select, Index, Call, Comprehension,
  ListLit, MapLit, ResourceLit, RecordLit, TupleLit,
  // statements (stmt.h)
  Let, Assign, If, IfLet, For, Return, Break, Continue, Block, ExprStmt,
  // declarations (decl.h)
  Uses, Const, Arg, Record, State, Fn, Handler,
};

const char* KindName(NodeKind kind);

struct Node {
  NodeKind kind;
  SourceRange range;

  explicit Node(NodeKind k, SourceRange r = {}) : kind(k), range(r) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
};

// Checked downcast: nullptr when `n` is not a T.
template <typename T>
T* As(Node* n) {
  return n && n->kind == T::kKind ? static_cast<T*>(n) : nullptr;
}
template <typename T>
const T* As(const Node* n) {
  return n && n->kind == T::kKind ? static_cast<const T*>(n) : nullptr;
}

}  // namespace kiln::ast
