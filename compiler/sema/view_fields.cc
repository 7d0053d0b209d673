#include "compiler/sema/view_fields.h"

namespace kiln::sema {

namespace {

// abi.h documents these pointers/times as possibly absent; the language makes that explicit.
constexpr bool IsNullable(std::string_view owner, std::string_view name) {
  return (owner == "Task" && name == "node") || (owner == "Queue" && name == "parent") ||
         (owner == "Task" && name == "scheduled_at");
}

constexpr ViewField MakeField(std::string_view owner, std::string_view name, FieldKind kind,
                              int index) {
  return ViewField{owner, name, kind, index, IsNullable(owner, name)};
}

int counter = 0;
const ViewField kFields[] = {
#define KILN_X(owner, name, kind, access, target) \
  MakeField(#owner, name, FieldKind::kind, counter++),
    KILN_ABI_FIELDS(KILN_X)
#undef KILN_X
};

}  // namespace

std::span<const ViewField> ViewFields() { return kFields; }

std::string_view ViewName(TypeKind owner) {
  switch (owner) {
    case TypeKind::Task: return "Task";
    case TypeKind::Job: return "Job";
    case TypeKind::Node: return "Node";
    case TypeKind::Queue: return "Queue";
    default: return "";
  }
}

const ViewField* FindViewField(TypeKind owner, std::string_view name) {
  std::string_view o = ViewName(owner);
  for (const auto& f : kFields)
    if (f.owner == o && f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> ViewFieldNames(TypeKind owner) {
  std::vector<std::string> out;
  std::string_view o = ViewName(owner);
  for (const auto& f : kFields)
    if (f.owner == o) out.emplace_back(f.name);
  return out;
}

const Type* ViewFieldType(const ViewField& f, TypeContext& t) {
  const Type* type = nullptr;
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
  }
  return f.nullable ? t.Optional(type) : type;
}

}  // namespace kiln::sema
