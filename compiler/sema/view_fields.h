#pragma once
// The fields of the read-only views (Task, Job, Node, Queue and the Kubernetes shape records
// such as Taint) as the checker sees them. Derived from runtime/abi.h — KILN_ABI_FIELDS and
// KILN_ABI_SHAPE_FIELDS are the one table; this file only maps each ABI kind to a language type.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/types.h"
#include "runtime/abi.h"

namespace kiln::sema {

struct ViewField {
  std::string_view owner;  // "Task", "Taint"
  std::string_view name;   // "priority"
  FieldKind kind;
  std::string_view elem;   // shape record of RecordList/Record/OptionalRecord fields
  int abi_index;           // index into kAbiFields, or -1
  int shape_index;         // index into AbiShapeFields(), or -1
  // The pointer may be null (task.node when unplaced, queue.parent at the root, scheduled_at
  // when the pod has no PodScheduled condition): the language type is then `T?`.
  bool nullable;
};

std::span<const ViewField> ViewFields();
// The owner name of a view type ("Task", "Taint"); "" for other types.
std::string_view ViewName(const Type* t);
// nullptr when the view has no field `name`.
const ViewField* FindViewField(const Type* owner, std::string_view name);
// Field names of a view, for "did you mean" suggestions.
std::vector<std::string> ViewFieldNames(const Type* owner);
// The language type of a field.
const Type* ViewFieldType(const ViewField& f, TypeContext& types);

}  // namespace kiln::sema
