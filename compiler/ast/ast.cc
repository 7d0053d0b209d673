// Out-of-line pieces of the AST: names of kinds and operators, Policy lookups.
#include "compiler/ast.h"

namespace kiln::ast {

const char* KindName(NodeKind kind) {
  switch (kind) {
#define KILN_CASE(k) \
  case NodeKind::k:  \
    return #k;
    KILN_CASE(IntLit) KILN_CASE(FloatLit) KILN_CASE(StringLit) KILN_CASE(BoolLit)
    KILN_CASE(DurationLit) KILN_CASE(QuantityLit) KILN_CASE(NoneLit) KILN_CASE(NameRef)
    KILN_CASE(Unary) KILN_CASE(Binary) KILN_CASE(Conditional) KILN_CASE(Select)
    KILN_CASE(Index) KILN_CASE(Call) KILN_CASE(Comprehension) KILN_CASE(ListLit)
    KILN_CASE(MapLit) KILN_CASE(ResourceLit) KILN_CASE(RecordLit) KILN_CASE(TupleLit) KILN_CASE(Let) KILN_CASE(Assign) KILN_CASE(If)
    KILN_CASE(IfLet) KILN_CASE(For) KILN_CASE(Return) KILN_CASE(Break) KILN_CASE(Continue)
    KILN_CASE(Block) KILN_CASE(ExprStmt) KILN_CASE(Uses) KILN_CASE(Const) KILN_CASE(Arg)
    KILN_CASE(Record) KILN_CASE(State) KILN_CASE(Fn) KILN_CASE(Handler)
#undef KILN_CASE
  }
  return "?";
}

const char* BinaryOpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::In: return "in";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
    case BinaryOp::Coalesce: return "??";
  }
  return "?";
}

const char* AssignOpSpelling(AssignOp op) {
  switch (op) {
    case AssignOp::Set: return "=";
    case AssignOp::Add: return "+=";
    case AssignOp::Sub: return "-=";
    case AssignOp::Mul: return "*=";
    case AssignOp::Div: return "/=";
  }
  return "?";
}

const char* AggregateName(Aggregate a) {
  switch (a) {
    case Aggregate::List: return "list";
    case Aggregate::Sum: return "sum";
    case Aggregate::Count: return "count";
    case Aggregate::Any: return "any";
    case Aggregate::All: return "all";
    case Aggregate::Max: return "max";
    case Aggregate::Min: return "min";
  }
  return "?";
}

Comprehension::~Comprehension() = default;

int RecordDecl::FieldIndex(std::string_view field) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == field) return static_cast<int>(i);
  return -1;
}

bool Policy::Uses(std::string_view capability) const {
  for (const auto* u : All<UsesDecl>())
    if (u->name == capability) return true;
  return false;
}

const HandlerDecl* Policy::HandlerFor(ExtensionPoint point) const {
  for (const auto* h : All<HandlerDecl>())
    for (const auto& p : h->points)
      if (p.info && p.info->id == point) return h;
  return nullptr;
}

}  // namespace kiln::ast
