#pragma once
// Which `for` loops give their call-arena memory back after each iteration.
//
// Every value a handler builds (a Resource sum, a string, a list, a map) goes to the call arena,
// which is reset only when the next handler call starts. A handler that walks every job once
// (proportion's and drf's session_open at 11.7k jobs) so kept every iteration's temporaries to
// the end of the call: ~28 MB at 10k nodes x 100k pods, each page faulted in and zeroed.
//
// An iteration's values can outlive it only through a variable declared outside the loop body:
// state stores copy into the session arena (Persist) or overwrite in place, a `return` leaves
// the loop without the rewind, and parameters and `let` locals cannot be assigned. So a loop may
// rewind the call arena to where its iteration started when its body (nested statements
// included) never
//  * assigns a local declared outside the body whose type holds memory (string, Resource,
//    list, map, record, tuple or optional of those): `acc = acc + r`, `xs = append(xs, x)`;
//  * writes into a map through a local declared outside the body (`m[k] = v` grows `m`), or
//    through a body local other than one declared with a fresh `{}` literal and never
//    reassigned (conservative: a `var` bound to another map now gets a copy of its own).
// Codegen (Lowering::EmitFor) then marks the arena at the first iteration and rewinds at the end
// of each one, including `continue`; it emits neither when the body has no allocating call.

#include "compiler/ast.h"

namespace kiln::codegen {

// `holds_memory(t)`: whether a value of type t may point into the call arena.
bool IterationsLeaveNothing(const ast::For& loop, bool (*holds_memory)(const Type*));

}  // namespace kiln::codegen
