#pragma once
// Semantic types of the policy language. Types are interned in a TypeContext (owned by the
// Policy), so they compare by pointer: `a == b` iff same type.

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <string_view>
#include <vector>

namespace kiln::ast {
struct RecordDecl;
}

namespace kiln {

enum class TypeKind {
  Error,  // the type of an expression that already has a diagnostic; checks against it pass
  Void,
  Int,
  Float,
  Bool,
  String,
  Duration,
  Time,
  Quantity,
  Resource,
  Task,
  Job,
  Node,
  Queue,
  Session,
  TaskStatus,
  PodGroupPhase,
  QueueState,
  Missing,  // Zero | Infinity: how resource comparisons treat a missing dimension
  Vote,
  Fit,
  Validation,
  Victims,
  List,
  Map,
  Optional,
  Record,
  Tuple,  // `(string, int)`: 2 to 4 scalar elements, in `elems`
  Shape,  // a read-only Kubernetes shape from runtime/abi.h (Taint, Toleration, ...): `shape`
  None,  // the type of the literal `none` before it meets an optional
};

struct Type {
  TypeKind kind = TypeKind::Error;
  const Type* elem = nullptr;  // List element, Map value, Optional payload
  const Type* key = nullptr;   // Map key
  const ast::RecordDecl* record = nullptr;
  std::string_view shape;  // Shape: the record name in KILN_ABI_RECORDS ("Taint")
  std::vector<const Type*> elems;  // Tuple elements

  bool Is(TypeKind k) const { return kind == k; }
  bool IsView() const {
    return kind == TypeKind::Task || kind == TypeKind::Job || kind == TypeKind::Node ||
           kind == TypeKind::Queue || kind == TypeKind::Session || kind == TypeKind::Shape;
  }
  bool IsNumeric() const { return kind == TypeKind::Int || kind == TypeKind::Float; }
  // Whether the type has a zero value (docs/language.md "Types"); views do not.
  bool HasZero() const;
  // "map<Job, float>", "Task?", "Strategy".
  std::string Name() const;
};

class TypeContext {
 public:
  TypeContext();
  const Type* Get(TypeKind k);  // a scalar/view kind (not List/Map/Optional/Record)
  const Type* List(const Type* elem);
  const Type* Map(const Type* key, const Type* value);
  const Type* Optional(const Type* payload);  // Optional(T?) == T?
  const Type* Record(const ast::RecordDecl* decl);
  const Type* Tuple(const std::vector<const Type*>& elems);
  // A Kubernetes shape record named in KILN_ABI_RECORDS; nullptr when there is none.
  const Type* Shape(std::string_view name);

  const Type* Error() { return Get(TypeKind::Error); }
  const Type* Int() { return Get(TypeKind::Int); }
  const Type* Float() { return Get(TypeKind::Float); }
  const Type* Bool() { return Get(TypeKind::Bool); }
  const Type* String() { return Get(TypeKind::String); }
  const Type* Void() { return Get(TypeKind::Void); }

 private:
  std::deque<Type> storage_;
  std::vector<const Type*> scalars_;
  std::map<std::tuple<int, const Type*, const Type*, const void*>, const Type*> composite_;
  std::map<std::vector<const Type*>, const Type*> tuples_;
};

// Tuples (docs/language.md "Tuples"): the arity and element kinds a tuple type may have.
inline constexpr size_t kMinTupleArity = 2;
inline constexpr size_t kMaxTupleArity = 4;
inline bool IsTupleElementKind(TypeKind k) {
  return k == TypeKind::Int || k == TypeKind::Float || k == TypeKind::Bool ||
         k == TypeKind::String;
}

// The scalar/view type named `name` in source ("int", "Resource", "Task"), or Error kind when
// the name is not a built-in type. Generic names (list, map) are handled by the resolver.
bool LookupScalarTypeName(std::string_view name, TypeKind* out);
// Every built-in type name, for "did you mean" suggestions.
std::vector<std::string> ScalarTypeNames();

}  // namespace kiln
