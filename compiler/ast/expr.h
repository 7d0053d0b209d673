#pragma once
// Expression nodes. `type` is null after parsing and set by the type checker
// (passes/check_types.cc); after a clean front end run every expression has a non-Error type.

#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/node.h"
#include "compiler/types.h"

namespace kiln::ast {

struct Local;
struct Decl;
struct FnDecl;
struct ConstDecl;
struct ArgDecl;
struct StateDecl;

struct Expr : Node {
  using Node::Node;
  const Type* type = nullptr;
};
using ExprPtr = std::unique_ptr<Expr>;

// A literal holding its value as written: `42`, `1.5`, `"a"` (escapes already decoded), `true`,
// `1h30m` (in nanoseconds: 5400e9).
template <NodeKind K, typename V>
struct Literal : Expr {
  static constexpr NodeKind kKind = K;
  explicit Literal(SourceRange r, V v) : Expr(kKind, r), value(std::move(v)) {}
  V value;
};
using IntLit = Literal<NodeKind::IntLit, int64_t>;
using FloatLit = Literal<NodeKind::FloatLit, double>;
using StringLit = Literal<NodeKind::StringLit, std::string>;
using BoolLit = Literal<NodeKind::BoolLit, bool>;
using DurationLit = Literal<NodeKind::DurationLit, int64_t>;

struct QuantityLit : Expr {
  static constexpr NodeKind kKind = NodeKind::QuantityLit;
  explicit QuantityLit(SourceRange r, double v, std::string t)
      : Expr(kKind, r), value(v), text(std::move(t)) {}
  double value;      // base units: `1Gi` → 1073741824
  std::string text;  // as written
};

struct NoneLit : Expr {
  static constexpr NodeKind kKind = NodeKind::NoneLit;
  explicit NoneLit(SourceRange r) : Expr(kKind, r) {}
};

// What a name refers to, filled by passes/resolve_names.cc.
enum class NameKind : uint8_t {
  Unresolved,
  Local,        // let/var, parameter, loop variable, if-let binding → `local`
  Const,        // → `const_decl`
  Arg,          // → `arg_decl`
  State,        // → `state_decl`
  StdConstant,  // permit, fits, Zero, Running, ... → `std_constant` (index into the stdlib table)
  Session,      // the `session` view
};

struct NameRef : Expr {
  static constexpr NodeKind kKind = NodeKind::NameRef;
  NameRef(SourceRange r, std::string n) : Expr(kKind, r), name(std::move(n)) {}
  std::string name;
  NameKind ref = NameKind::Unresolved;
  Local* local = nullptr;
  const ConstDecl* const_decl = nullptr;
  const ArgDecl* arg_decl = nullptr;
  const StateDecl* state_decl = nullptr;
  int std_constant = -1;
};

enum class UnaryOp : uint8_t { Neg, Not };

struct Unary : Expr {
  static constexpr NodeKind kKind = NodeKind::Unary;
  Unary(SourceRange r, UnaryOp o, ExprPtr e) : Expr(kKind, r), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Mod, Eq, Ne, Lt, Le, Gt, Ge, In, And, Or, Coalesce,
};
const char* BinaryOpSpelling(BinaryOp op);

struct Binary : Expr {
  static constexpr NodeKind kKind = NodeKind::Binary;
  Binary(SourceRange r, BinaryOp o, ExprPtr l, ExprPtr rr)
      : Expr(kKind, r), op(o), left(std::move(l)), right(std::move(rr)) {}
  BinaryOp op;
  ExprPtr left, right;
};

struct Conditional : Expr {
  static constexpr NodeKind kKind = NodeKind::Conditional;
  Conditional(SourceRange r, ExprPtr c, ExprPtr t, ExprPtr e)
      : Expr(kKind, r), cond(std::move(c)), then(std::move(t)), otherwise(std::move(e)) {}
  ExprPtr cond, then, otherwise;
};

// `operand.field`. On views the field comes from the runtime ABI tables (`view_field` or
// `shape_field` is its index there, see compiler/sema/view_fields.h); on records `record_field` is the field index;
// on built-in value types (Resource.cpu, duration.seconds, Fit.code) `builtin_field` names it;
// on a tuple (`k.0`, written as a number) `tuple_element` is the element's position.
struct Select : Expr {
  static constexpr NodeKind kKind = NodeKind::Select;
  Select(SourceRange r, ExprPtr e, std::string f, SourceRange fr)
      : Expr(kKind, r), operand(std::move(e)), field(std::move(f)), field_range(fr) {}
  ExprPtr operand;
  std::string field;
  SourceRange field_range;
  int view_field = -1;   // index into kAbiFields (KILN_ABI_FIELDS)
  int shape_field = -1;  // index into AbiShapeFields() (KILN_ABI_SHAPE_FIELDS)
  int record_field = -1;
  int tuple_element = -1;
  std::string builtin_field;
};

// `operand[index]`: list (out of range → zero / none), map (missing → zero / none), Resource
// dimension by name (missing → 0).
struct Index : Expr {
  static constexpr NodeKind kKind = NodeKind::Index;
  Index(SourceRange r, ExprPtr e, ExprPtr i)
      : Expr(kKind, r), operand(std::move(e)), index(std::move(i)) {}
  ExprPtr operand, index;
};

enum class CallKind : uint8_t {
  Unresolved,
  Function,  // a `fn` of the policy → `fn`
  Std,       // a standard-library function → `std_function` (index into the stdlib table)
  Method,    // a method on a value: `m.get(k)`, `s.contains(x)` → `std_function`, receiver set
  Builtin,   // a generic built-in the checker types itself: len, min, max, float, int, string
};

// The collection methods the checker types itself (docs/language.md "Views of the cluster"). A
// Method call is either one of these or a standard-library row (`std_function`), never neither:
// codegen lowers by this tag or by the row, never by the callee's name alone, so `xs.contains(x)`
// on a list cannot reach the string function `contains` (issue 28).
enum class BuiltinMethod : uint8_t {
  None,
  ListGet,       // xs.get(i) -> T?
  ListContains,  // xs.contains(x) -> bool, as `x in xs`
  MapGet,        // m.get(k) -> V?
  MapKeys,       // m.keys() -> list<K>, in iteration order
  MapValues,     // m.values() -> list<V>, in iteration order
};

struct Call : Expr {
  static constexpr NodeKind kKind = NodeKind::Call;
  Call(SourceRange r, std::string c, SourceRange cr)
      : Expr(kKind, r), callee(std::move(c)), callee_range(cr) {}
  std::string callee;
  SourceRange callee_range;
  ExprPtr receiver;  // `x` in `x.get(k)`; null for plain calls
  std::vector<ExprPtr> args;
  CallKind call = CallKind::Unresolved;
  const FnDecl* fn = nullptr;
  int std_function = -1;
  BuiltinMethod method = BuiltinMethod::None;  // CallKind::Method on a list or map
  // For a library row (Std, or a Method resolved to one): the parameter types of every argument
  // codegen passes, the receiver first, so each argument is converted (int → float) to what the
  // native function takes before the call (issue 28: `round(7)` passed an int to a double).
  std::vector<const Type*> std_params;
};

// `[e for x in xs where c order by k desc]` and aggregates `sum(e for x in xs where c)`.
enum class Aggregate : uint8_t { List, Sum, Count, Any, All, Max, Min };
const char* AggregateName(Aggregate a);

struct Comprehension : Expr {
  static constexpr NodeKind kKind = NodeKind::Comprehension;
  Comprehension(SourceRange r, Aggregate a) : Expr(kKind, r), aggregate(a) {}
  Aggregate aggregate;
  ExprPtr element;
  std::unique_ptr<Local> first;   // element (list) or key (map)
  std::unique_ptr<Local> second;  // value when iterating a map; null otherwise
  ExprPtr source;
  ExprPtr filter;  // may be null
  ExprPtr order_key;  // may be null
  bool descending = false;
  ~Comprehension() override;
};

// A list or tuple literal: its elements in order.
struct ElementsLit : Expr {
  ElementsLit(NodeKind k, SourceRange r) : Expr(k, r) {}
  std::vector<ExprPtr> elements;
};

struct ListLit : ElementsLit {
  static constexpr NodeKind kKind = NodeKind::ListLit;
  explicit ListLit(SourceRange r) : ElementsLit(kKind, r) {}
};

struct MapEntry {
  ExprPtr key;  // for ResourceLit: a StringLit holding the dimension name
  ExprPtr value;
};

struct MapLit : Expr {
  static constexpr NodeKind kKind = NodeKind::MapLit;
  explicit MapLit(SourceRange r) : Expr(kKind, r) {}
  std::vector<MapEntry> entries;
};

// `resource{cpu: 2, memory: 4Gi, "nvidia.com/gpu": 1}`; values in user units.
struct ResourceLit : Expr {
  static constexpr NodeKind kKind = NodeKind::ResourceLit;
  explicit ResourceLit(SourceRange r) : Expr(kKind, r) {}
  std::vector<MapEntry> entries;
};

struct RecordDecl;

struct FieldInit {
  std::string name;
  SourceRange range;
  ExprPtr value;
  int field = -1;  // index into the record's fields, set by the type checker
};

// `Strategy{kind: "MostAllocated", weight: 2}`: fields not written take their defaults.
struct RecordLit : Expr {
  static constexpr NodeKind kKind = NodeKind::RecordLit;
  RecordLit(SourceRange r, std::string t, SourceRange tr)
      : Expr(kKind, r), type_name(std::move(t)), type_range(tr) {}
  std::string type_name;
  SourceRange type_range;
  std::vector<FieldInit> fields;
  const RecordDecl* record = nullptr;  // set by the resolver
};

// `(node, i)`: a tuple of 2 to 4 scalars, the composite key of a map (docs/language.md "Tuples").
struct TupleLit : ElementsLit {
  static constexpr NodeKind kKind = NodeKind::TupleLit;
  explicit TupleLit(SourceRange r) : ElementsLit(kKind, r) {}
};

}  // namespace kiln::ast
