#pragma once
// The type checker (passes.h's CheckTypes) as a class. Internal to compiler/passes/: nothing
// else includes this header. Its members are defined by concern:
//   check_types.cc  the walk over declarations and statements, names, operators, selects and
//                   indexing
//   check_calls.cc  calls: library rows (generic ones too), built-ins, methods, comprehensions
#include <string_view>
#include <vector>

#include "compiler/passes/passes.h"

namespace kiln::passes::typing {

using namespace ast;

class Checker {
 public:
  explicit Checker(PassContext& ctx) : ctx_(ctx), t_(ctx.types()) {}

  void Run();

 private:
  // ---- helpers ----
  const Type* Err() { return t_.Error(); }
  static bool IsErr(const Type* t) { return !t || t->kind == TypeKind::Error; }

  // State kept across sessions lives in a fixed block outside the session arena (so it needs no
  // memory budget of its own, docs/safety.md): only types held in place by value qualify.
  void KeptScalar(const StateDecl& s);

  // Whether a value of type `from` may be used where `to` is expected.
  bool Assignable(const Type* from, const Type* to);

  const Type* ConstType(ConstDecl* c);

  // Checks `e` against `expected`, reporting a mismatch; returns e's type.
  const Type* Expect(ast::Expr* e, const Type* expected, std::string_view what);

  void Mismatch(const SourceRange& r, std::string_view msg) { ctx_.diags.Error(r, std::string(msg)); }

  // ---- statements ----
  void Block(ast::Block* b);

  void Stmt(ast::Stmt* s);

  // Binds loop/comprehension variables from what is iterated: list<T> → T; map<K, V> → K, V.
  void BindIteration(ast::Expr* source, Local* first, Local* second);

  // The root of an assignment target must be a `var` local or state.
  void Assignment(Assign* a);

  // ---- expressions ----
  const Type* Check(ast::Expr* e, const Type* expected);

  const Type* CheckInner(ast::Expr* e, const Type* expected);

  // The common type of two branches/elements, or nullptr.
  const Type* Unify(const Type* a, const Type* b);

  const Type* NameType(NameRef* n);

  const Type* UnaryType(Unary* u);

  // + - * / % on two operand types; reports and returns Error when not defined.
  const Type* Arith(BinaryOp op, const Type* a, const Type* b, const SourceRange& r);

  // Whether `==` is defined on values of t (codegen's Compare): scalars, strings, resources, views
  // and shapes (by identity), optionals of those. Lists, maps, records and the handler results
  // are not compared.
  static bool Equatable(const Type* t);

  static bool Ordered(const Type* t);

  const Type* BinaryType(Binary* b, const Type* expected);

  const Type* SelectType(Select* s);

  // `(a, b)`: 2 to 4 scalar elements; against an expected tuple of the same arity, an int element
  // takes a float element's type.
  const Type* TupleType(TupleLit* t, const Type* expected);

  // Indexing a missing entry gives the zero value, or an optional when the type has none.
  const Type* OrNone(const Type* t) { return t->HasZero() ? t : t_.Optional(t); }

  const Type* IndexType(Index* ix);

  // Checks call arguments against parameter types.
  void Args(Call* c, const std::vector<const Type*>& params, size_t offset = 0);

  const Type* CallType(Call* c, const Type* expected);

  // A row whose signature uses the type variable `T` (`append: (list<T>, T) -> list<T>`): the
  // first argument whose type matches its parameter binds T (`append(xs, x)` with xs a
  // `list<int>` binds int); the arguments after it are checked against the bound signature, the
  // ones before it against it once it is known.
  const Type* GenericStdType(Call* c, std::string_view text);

  // Checks the argument types `got` against the signature with `T` bound (the arguments checked
  // before T was known), and records the parameters codegen passes.
  const Type* BoundStd(Call* c, std::string_view text, const Type* bound,
                       const std::vector<const Type*>& got);

  const Type* BuiltinType(Call* c);

  // `x.name(args)`: built-in methods on collections, or a standard-library function whose first
  // parameter has x's type (`s.starts_with(p)` is `starts_with(s, p)`).
  const Type* MethodType(Call* c);

  const Type* ComprehensionType(Comprehension* c);

  PassContext& ctx_;
  TypeContext& t_;
  Callable* current_ = nullptr;
};

}  // namespace kiln::passes::typing
