// Out-of-line pieces of the AST: names of kinds and operators, Policy lookups.
#include "compiler/ast.h"

#include <iterator>

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

namespace {
// names[e], for an enum whose enumerators run 0, 1, ... in the order of `names`.
template <typename E, size_t N>
const char* NameOf(E e, const char* const (&names)[N]) {
  auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}
}  // namespace

const char* BinaryOpSpelling(BinaryOp op) {
  static constexpr const char* kSpellings[] = {"+",  "-",  "*", "/",  "%",  "==",  "!=", "<",
                                               "<=", ">",  ">=", "in", "and", "or", "??"};
  static_assert(std::size(kSpellings) == static_cast<size_t>(BinaryOp::Coalesce) + 1);
  return NameOf(op, kSpellings);
}

const char* AssignOpSpelling(AssignOp op) {
  static constexpr const char* kSpellings[] = {"=", "+=", "-=", "*=", "/="};
  static_assert(std::size(kSpellings) == static_cast<size_t>(AssignOp::Div) + 1);
  return NameOf(op, kSpellings);
}

const char* AggregateName(Aggregate a) {
  static constexpr const char* kNames[] = {"list", "sum", "count", "any", "all", "max", "min"};
  static_assert(std::size(kNames) == static_cast<size_t>(Aggregate::Min) + 1);
  return NameOf(a, kNames);
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
