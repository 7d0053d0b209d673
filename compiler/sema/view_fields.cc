#include "compiler/sema/view_fields.h"

#include <vector>

namespace kiln::sema {

namespace {

// abi.h documents these pointers/times as possibly absent; the language makes that explicit.
constexpr bool IsNullable(std::string_view owner, std::string_view name) {
  return (owner == "Task" && name == "node") || (owner == "Queue" && name == "parent") ||
         (owner == "Task" && name == "scheduled_at");
}

const std::vector<ViewField>& Table() {
  static const std::vector<ViewField> table = [] {
    std::vector<ViewField> out;
    int i = 0;
#define KILN_X(owner, name, kind, access, target) \
  out.push_back(ViewField{#owner, name, FieldKind::kind, "", i++, -1, IsNullable(#owner, name)});
    KILN_ABI_FIELDS(KILN_X)
#undef KILN_X
    int s = 0;
    for (const auto& f : AbiShapeFields())
      out.push_back(ViewField{f.owner, f.name, f.kind, f.elem, -1, s++, false});
    return out;
  }();
  return table;
}

}  // namespace

std::span<const ViewField> ViewFields() { return Table(); }

std::string_view ViewName(const Type* t) {
  switch (t->kind) {
    case TypeKind::Task: return "Task";
    case TypeKind::Job: return "Job";
    case TypeKind::Node: return "Node";
    case TypeKind::Queue: return "Queue";
    case TypeKind::Shape: return t->shape;
    default: return "";
  }
}

const ViewField* FindViewField(const Type* owner, std::string_view name) {
  std::string_view o = ViewName(owner);
  if (o.empty()) return nullptr;
  for (const auto& f : Table())
    if (f.owner == o && f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> ViewFieldNames(const Type* owner) {
  std::vector<std::string> out;
  std::string_view o = ViewName(owner);
  for (const auto& f : Table())
    if (f.owner == o) out.emplace_back(f.name);
  return out;
}

const Type* ViewFieldType(const ViewField& f, TypeContext& t) {
  const Type* type = t.Error();
  auto shape = [&] {
    const Type* s = t.Shape(f.elem);
    return s ? s : t.Error();
  };
  switch (f.kind) {
    case FieldKind::Int: type = t.Int(); break;
    case FieldKind::Float: type = t.Float(); break;
    case FieldKind::Bool: type = t.Bool(); break;
    case FieldKind::String: type = t.String(); break;
    case FieldKind::Time: type = t.Get(TypeKind::Time); break;
    case FieldKind::Duration: type = t.Get(TypeKind::Duration); break;
    case FieldKind::Resource: type = t.Get(TypeKind::Resource); break;
    case FieldKind::Task: type = t.Get(TypeKind::Task); break;
    case FieldKind::Job: type = t.Get(TypeKind::Job); break;
    case FieldKind::Node: type = t.Get(TypeKind::Node); break;
    case FieldKind::Queue: type = t.Get(TypeKind::Queue); break;
    case FieldKind::StringMap: type = t.Map(t.String(), t.String()); break;
    case FieldKind::TaskList: type = t.List(t.Get(TypeKind::Task)); break;
    case FieldKind::JobList: type = t.List(t.Get(TypeKind::Job)); break;
    case FieldKind::QueueList: type = t.List(t.Get(TypeKind::Queue)); break;
    case FieldKind::TaskStatus: type = t.Get(TypeKind::TaskStatus); break;
    case FieldKind::PodGroupPhase: type = t.Get(TypeKind::PodGroupPhase); break;
    case FieldKind::QueueState: type = t.Get(TypeKind::QueueState); break;
    case FieldKind::StringList: type = t.List(t.String()); break;
    case FieldKind::IntMap: type = t.Map(t.String(), t.Int()); break;
    case FieldKind::RecordList: type = t.List(shape()); break;
    case FieldKind::Record: type = shape(); break;
    case FieldKind::OptionalRecord: type = t.Optional(shape()); break;
    case FieldKind::OptionalInt: type = t.Optional(t.Int()); break;
  }
  return f.nullable ? t.Optional(type) : type;
}

}  // namespace kiln::sema
