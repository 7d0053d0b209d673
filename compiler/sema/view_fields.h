#pragma once
// The fields of the read-only views Task, Job, Node and Queue as the checker sees them. Derived
// from KILN_ABI_FIELDS in runtime/abi.h (the one table); this file only maps each field's ABI
// kind to a language type.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/types.h"
#include "runtime/abi.h"

namespace kiln::sema {

struct ViewField {
  std::string_view owner;  // "Task"
  std::string_view name;   // "priority"
  FieldKind kind;
  int abi_index;  // index into KILN_ABI_FIELDS order (== kAbiFields index)
  // The pointer may be null (task.node when unplaced, queue.parent at the root, scheduled_at
  // when the pod has no PodScheduled condition): the language type is then `T?`.
  bool nullable;
};

std::span<const ViewField> ViewFields();
// nullptr when `owner` has no field `name`.
const ViewField* FindViewField(TypeKind owner, std::string_view name);
// Field names of a view, for "did you mean" suggestions.
std::vector<std::string> ViewFieldNames(TypeKind owner);
// The language type of a field.
const Type* ViewFieldType(const ViewField& f, TypeContext& types);
std::string_view ViewName(TypeKind owner);

}  // namespace kiln::sema
