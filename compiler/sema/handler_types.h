#pragma once
// The language types of extension-point signatures, derived from kExtensionPoints
// (runtime/extension_points.h) — never a second list of handlers.

#include <string>

#include "compiler/types.h"
#include "runtime/extension_points.h"

namespace kiln::sema {

// The language type of an ABI kind (Void → void, TaskList → list<Task>, Status → Fit, ...).
const Type* TypeOfAbiKind(AbiKind kind, TypeContext& types);
// "(Task, list<Task>) -> Victims".
std::string HandlerSignature(const ExtensionPointInfo& info, TypeContext& types);
// One line on how answers combine across plugins and tiers.
const char* CombineDescription(Combine c);
// The docs/language.md table of extension points (kept in sync by a unit test).
std::string ExtensionPointTableMarkdown();

}  // namespace kiln::sema
