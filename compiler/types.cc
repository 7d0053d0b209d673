#include "compiler/types.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "compiler/ast/decl.h"
#include "runtime/abi.h"

namespace kiln {

namespace {
struct ScalarName {
  std::string_view name;
  TypeKind kind;
};
// The spelling of every non-generic type in source.
constexpr std::array kScalarNames = {
    ScalarName{"int", TypeKind::Int},
    ScalarName{"float", TypeKind::Float},
    ScalarName{"bool", TypeKind::Bool},
    ScalarName{"string", TypeKind::String},
    ScalarName{"duration", TypeKind::Duration},
    ScalarName{"time", TypeKind::Time},
    ScalarName{"quantity", TypeKind::Quantity},
    ScalarName{"Resource", TypeKind::Resource},
    ScalarName{"Task", TypeKind::Task},
    ScalarName{"Job", TypeKind::Job},
    ScalarName{"Node", TypeKind::Node},
    ScalarName{"Queue", TypeKind::Queue},
    ScalarName{"TaskStatus", TypeKind::TaskStatus},
    ScalarName{"PodGroupPhase", TypeKind::PodGroupPhase},
    ScalarName{"QueueState", TypeKind::QueueState},
    ScalarName{"Missing", TypeKind::Missing},
    ScalarName{"Vote", TypeKind::Vote},
    ScalarName{"Fit", TypeKind::Fit},
    ScalarName{"Validation", TypeKind::Validation},
    ScalarName{"Victims", TypeKind::Victims},
};
Type MakeType(TypeKind kind, const Type* elem = nullptr, const Type* key = nullptr) {
  Type t;
  t.kind = kind;
  t.elem = elem;
  t.key = key;
  return t;
}
// The interned type `table` holds for `key`, or `t`, stored and recorded there: a type is made
// once, so types compare by pointer.
template <typename Table, typename Key>
const Type* Intern(std::deque<Type>& storage, Table& table, const Key& key, const Type& t) {
  auto it = table.find(key);
  if (it != table.end()) return it->second;
  storage.push_back(t);
  return table[key] = &storage.back();
}
}  // namespace

bool LookupScalarTypeName(std::string_view name, TypeKind* out) {
  for (const auto& s : kScalarNames) {
    if (s.name == name) {
      *out = s.kind;
      return true;
    }
  }
  return false;
}

std::vector<std::string> ScalarTypeNames() {
  std::vector<std::string> out;
  for (const auto& s : kScalarNames) out.emplace_back(s.name);
  out.emplace_back("list");
  out.emplace_back("map");
  return out;
}

bool Type::HasZero() const { return !IsView() && kind != TypeKind::Void; }

std::string Type::Name() const {
  switch (kind) {
    case TypeKind::Error: return "<error>";
    case TypeKind::Void: return "void";
    case TypeKind::None: return "none";
    case TypeKind::Session: return "Session";
    case TypeKind::List: return fmt::format("list<{}>", elem->Name());
    case TypeKind::Map: return fmt::format("map<{}, {}>", key->Name(), elem->Name());
    case TypeKind::Optional: return elem->Name() + "?";
    case TypeKind::Record: return record ? record->name : "<record>";
    case TypeKind::Shape: return std::string(shape);
    case TypeKind::Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < elems.size(); ++i) out += (i ? ", " : "") + elems[i]->Name();
      return out + ")";
    }
    default:
      for (const auto& s : kScalarNames)
        if (s.kind == kind) return std::string(s.name);
      return "<?>";
  }
}

TypeContext::TypeContext() {
  constexpr int kCount = static_cast<int>(TypeKind::None) + 1;
  for (int i = 0; i < kCount; ++i) {
    storage_.push_back(MakeType(static_cast<TypeKind>(i)));
    scalars_.push_back(&storage_.back());
  }
}

const Type* TypeContext::Get(TypeKind k) { return scalars_[static_cast<int>(k)]; }

const Type* TypeContext::List(const Type* elem) {
  return Intern(storage_, composite_,
                std::make_tuple(static_cast<int>(TypeKind::List), elem, nullptr, nullptr),
                MakeType(TypeKind::List, elem));
}

const Type* TypeContext::Map(const Type* k, const Type* v) {
  return Intern(storage_, composite_,
                std::make_tuple(static_cast<int>(TypeKind::Map), v, k, nullptr),
                MakeType(TypeKind::Map, v, k));
}

const Type* TypeContext::Optional(const Type* payload) {
  if (payload->kind == TypeKind::Optional || payload->kind == TypeKind::Error) return payload;
  return Intern(storage_, composite_,
                std::make_tuple(static_cast<int>(TypeKind::Optional), payload, nullptr, nullptr),
                MakeType(TypeKind::Optional, payload));
}

const Type* TypeContext::Record(const ast::RecordDecl* decl) {
  Type t = MakeType(TypeKind::Record);
  t.record = decl;
  return Intern(storage_, composite_,
                std::make_tuple(static_cast<int>(TypeKind::Record), nullptr, nullptr,
                                static_cast<const void*>(decl)),
                t);
}

const Type* TypeContext::Tuple(const std::vector<const Type*>& elems) {
  Type t = MakeType(TypeKind::Tuple);
  t.elems = elems;
  return Intern(storage_, tuples_, elems, t);
}

const Type* TypeContext::Shape(std::string_view name) {
  for (std::string_view n : AbiRecordNames()) {
    if (n != name) continue;
    Type t = MakeType(TypeKind::Shape);
    t.shape = n;
    return Intern(storage_, composite_,
                  std::make_tuple(static_cast<int>(TypeKind::Shape), nullptr, nullptr,
                                  static_cast<const void*>(n.data())),
                  t);
  }
  return nullptr;
}

}  // namespace kiln
