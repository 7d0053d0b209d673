#pragma once
// Which Resource stores into policy state may overwrite the stored Resource in place.
//
// A Resource in state lives in the session arena and belongs to exactly one state slot: every
// store into state copies (Persist), so no two slots share one. A store could therefore reuse the
// slot's old Resource instead of copying into a fresh session-arena allocation (264 bytes per
// store, never reclaimed: drf's and proportion's allocate/deallocate events grow the session by
// that per bind) — except while a value read from that slot earlier in the same handler call is
// still held somewhere: `let old = job_alloc[j]; job_alloc[j] = old - r; ...; job_alloc[j] = old;`
// must see `old` unchanged. The rule (docs/language.md "State", "Stores of resources"):
//
//  * A state variable of type Resource or map<K, Resource> takes part when every use of it is one
//    the compiler can follow: a read of one entry (`m[k]`, `m.get(k)`) or of the resource, `k in m`,
//    `len(m)`, iterating its keys (`for k in m`), or a store (`m[k] = e`, `m = e`, `r = e`).
//    Anything else (passing the whole map on, binding it to a local, iterating its values) and
//    the variable keeps the copying store.
//  * A read of such a variable whose value is consumed at once — an operand of arithmetic or a
//    comparison, the resource of `r[name]` or `r.names`, an argument of a standard-library
//    function whose result holds no Resource, through `??` and `c ? a : b` — holds nothing after
//    the expression. Any other read (a `let`, an argument of a policy function, a list element,
//    a return value, ...) *pins* the Resource it read for the rest of the outermost handler call.
//  * A store overwrites the slot's Resource in place unless it is pinned, or is the shared empty
//    resource every slot starts with; otherwise it copies as before.
#include <set>

#include "compiler/ast.h"

namespace kiln::codegen {

struct InPlaceState {
  // State variables whose stores may overwrite their Resource in place.
  std::set<const ast::StateDecl*> vars;
  // Reads of those variables (NameRef, Index, `.get` call) whose value may be held: each pins
  // the Resource it yields.
  std::set<const ast::Expr*> pinning_reads;
};

InPlaceState AnalyzeInPlaceState(const ast::Policy& policy);

}  // namespace kiln::codegen
