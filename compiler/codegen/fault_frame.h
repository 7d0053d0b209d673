#pragma once
// Lazily armed fault frames: a handler that may allocate sets up its fault frame only when a call
// is about to reach an allocating site, not on every call.
//
// A host intrinsic that fails (the call arena over its budget, a host exception) abandons the
// whole handler call: it __builtin_longjmps to a frame set up by kiln_rt_enter + eh.sjlj.setjmp
// (stdlib/runtime_support.cc). That frame used to be set up by the thunk around every call of a
// handler that can allocate anywhere, ~10–17 ns per call, although most calls of most such
// handlers never allocate (predicates' failure messages, a spread constraint's domain string).
//
// Before → after, for each call that may allocate (an allocating intrinsic, or a function that
// reaches one) in the function holding the handler body's code after inlining:
//
//     %r = call @kiln_rt_str_concat(...)
//   becomes
//     %s = load i8, ptr %frame            ; the thunk's frame state, kFrameIdle at entry
//     br (%s != 0), %call, %arm
//   arm:                                  ; once per handler call
//     %buf = call @kiln_rt_enter()        ; resets the call arena, arms recovery
//     store frameaddress / stacksave into %buf; %j = eh.sjlj.setjmp(%buf)
//     br (%j != 0), %faulted, %armed
//   armed: store kFrameArmed, %frame; br %call
//   faulted: store kFrameFaulted, %frame; ret zero   ; the longjmp of a fault lands here
//   call:
//     %r = call @kiln_rt_str_concat(...)
//
// The setjmp is in the frame of the function holding the body's code, which is live whenever a
// fault can jump to it: every allocating call of the handler call happens inside that code (or
// in a function it calls), after an arming point. Calls there lose their `tail` marker, so no
// callee runs after that frame is gone. The
// thunk (EmitThunk) passes the frame state byte, calls kiln_rt_leave when the body armed, and on
// kFrameFaulted answers the zero value of its result as before. A fault before the arming point
// cannot longjmp: only the Guard of an intrinsic does that, and the intrinsics that can fault
// without allocating (the resource-name lookup) then record the fault and return their zero
// result, as in handlers that never allocate.

namespace llvm {
class Function;
class Module;
}  // namespace llvm

#include <cstdint>
#include <vector>

namespace kiln::codegen {

inline constexpr uint8_t kFrameIdle = 0;
inline constexpr uint8_t kFrameArmed = 1;
inline constexpr uint8_t kFrameFaulted = 2;

// The code generator marks what the pass needs, before optimisation:
//  * `call void @kiln.fault_frame(ptr %frame)` at the entry of a handler body that may allocate,
//    `%frame` being the thunk's frame state byte. After inlining the marker sits in whichever
//    function holds the body's code (the thunk, usually), with the thunk's byte as its operand;
//  * the string attribute "kiln-allocates" on the declarations of allocating intrinsics.
inline constexpr const char* kFaultFrameMarker = "kiln.fault_frame";
inline constexpr const char* kAllocatesAttr = "kiln-allocates";

// Runs after the O2 pipeline's inliner (RunO2), so that an arming point lands on the path that
// allocates inside an inlined helper (a failure message built in `taint_fit`), not before the
// helper's call. Replaces each marker by arming points before every call that may allocate
// (an allocating intrinsic, or a function whose code reaches one) in that function. Returns the
// functions changed; the caller cleans them up (the frame byte becomes a register again).
std::vector<llvm::Function*> ArmFaultFrames(llvm::Module& module);

// Gives every function defined in `module` whose code may allocate the kAllocatesAttr mark, so
// that the answer survives a split into partitions (compiler/jit/handler_partitions.h): tier 0
// arms each partition on its own, where a helper defined in another partition is a declaration
// (copied with its attributes). Unmarked, a call of such a helper got no arming point before it:
// what the helper allocated was freed by the arming point after it, and a fault inside it could
// not be recovered.
void MarkAllocatingFunctions(llvm::Module& module);

}  // namespace kiln::codegen
