// Binds scheduler.conf plugin arguments (ConfValue, with locations) to a compiled policy's
// argument block. The block's top-level offsets come from codegen (the JIT's DataLayout); nested
// values (record fields, list items, optional payloads) use NativeLayout below, which mirrors
// LLVM's x86-64 layout of the value model in stdlib/runtime_support.h.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <variant>

#include "compiler/diagnostics.h"
#include "compiler/host/conf_value_complete.h"
#include "compiler/host/compiled_policy.h"
#include "runtime/quantity.h"
#include "runtime/resource.h"

namespace kiln {

namespace {

struct Layout {
  uint64_t size;
  uint64_t align;
};

uint64_t AlignTo(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Layout NativeLayout(const Type* t);

// Field offsets of a record, as LLVM lays out an unpacked struct.
std::vector<uint64_t> RecordOffsets(const ast::RecordDecl* r, Layout* total) {
  std::vector<uint64_t> offsets;
  uint64_t off = 0, align = 1;
  for (const ast::RecordField& f : r->fields) {
    Layout l = NativeLayout(f.declared.resolved);
    off = AlignTo(off, l.align);
    offsets.push_back(off);
    off += l.size;
    align = std::max(align, l.align);
  }
  if (total) *total = {AlignTo(off, align), align};
  return offsets;
}

Layout NativeLayout(const Type* t) {
  switch (t->kind) {
    case TypeKind::Bool: return {1, 1};
    case TypeKind::TaskStatus:
    case TypeKind::PodGroupPhase:
    case TypeKind::QueueState:
    case TypeKind::Missing:
    case TypeKind::Vote: return {4, 4};
    case TypeKind::String:
    case TypeKind::List: return {16, 8};
    case TypeKind::Optional: {
      if (t->elem->IsView()) return {8, 8};
      Layout p = NativeLayout(t->elem);
      uint64_t off = AlignTo(1, p.align);
      return {AlignTo(off + p.size, p.align), p.align};
    }
    case TypeKind::Record: {
      Layout l{0, 1};
      RecordOffsets(t->record, &l);
      return l;
    }
    default: return {8, 8};
  }
}

// A literal/const default evaluated on the host (the schema pass guarantees defaults are
// constant). Only scalars are needed here: nested record fields of map/list arguments.
struct Scalar {
  std::variant<std::monostate, int64_t, double, bool, std::string> v;
};

Scalar EvalConst(const ast::Expr* e) {
  if (!e) return {};
  switch (e->kind) {
    case ast::NodeKind::IntLit: return {static_cast<const ast::IntLit*>(e)->value};
    case ast::NodeKind::FloatLit: return {static_cast<const ast::FloatLit*>(e)->value};
    case ast::NodeKind::BoolLit: return {static_cast<const ast::BoolLit*>(e)->value};
    case ast::NodeKind::StringLit: return {static_cast<const ast::StringLit*>(e)->value};
    case ast::NodeKind::DurationLit: return {static_cast<const ast::DurationLit*>(e)->value};
    case ast::NodeKind::QuantityLit: return {static_cast<const ast::QuantityLit*>(e)->value};
    case ast::NodeKind::NameRef: {
      auto* n = static_cast<const ast::NameRef*>(e);
      if (n->ref == ast::NameKind::Const && n->const_decl) return EvalConst(n->const_decl->value.get());
      return {};
    }
    case ast::NodeKind::Unary: {
      auto* u = static_cast<const ast::Unary*>(e);
      Scalar s = EvalConst(u->operand.get());
      if (u->op == ast::UnaryOp::Neg) {
        if (auto* i = std::get_if<int64_t>(&s.v)) return {-*i};
        if (auto* d = std::get_if<double>(&s.v)) return {-*d};
      }
      if (u->op == ast::UnaryOp::Not)
        if (auto* b = std::get_if<bool>(&s.v)) return {!*b};
      return {};
    }
    default: return {};
  }
}

class Binder {
 public:
  Binder(const CompiledPolicy& policy, const PluginOption& option, Arena& arena)
      : policy_(policy), option_(option), arena_(arena) {}

  Status BindAll(char* block) {
    // `arg x: bool from flag "enableHierarchy"`: the entry's flag as written; unset keeps the
    // default (flags are not defaulted by the loader for these).
    for (const ArgSlot& slot : policy_.args) {
      if (!slot.decl->from_flag) continue;
      auto flag = FindPluginFlag(slot.decl->conf_key);
      if (!flag)
        return Error{fmt::format("plugin `{}`: argument `{}` reads unknown flag `{}`",
                                 option_.name, slot.decl->name, slot.decl->conf_key),
                     option_.where};
      const auto& written = option_.flags[static_cast<int>(*flag)];
      if (written.has_value()) *reinterpret_cast<uint8_t*>(block + slot.offset) = *written ? 1 : 0;
    }
    std::vector<std::string> keys;
    for (const ArgSlot& slot : policy_.args)
      if (!slot.decl->from_flag && !slot.decl->from_prefix) keys.push_back(slot.decl->conf_key);
    for (const auto& [key, value] : option_.arguments) {
      arg_ = key;
      auto it = std::find_if(policy_.args.begin(), policy_.args.end(), [&](const ArgSlot& s) {
        return !s.decl->from_flag && !s.decl->from_prefix && s.decl->conf_key == key;
      });
      if (it != policy_.args.end()) {
        Status s = Write(block + it->offset, it->decl->declared.resolved, value);
        if (!s.ok()) return s;
        continue;
      }
      if (const ArgSlot* prefixed = FindPrefixArg(key)) {
        Status s = WritePrefixed(block + prefixed->offset, prefixed->decl->declared.resolved,
                                 key.substr(prefixed->decl->conf_key.size()), value);
        if (!s.ok()) return s;
        continue;
      }
      return Error{fmt::format("plugin `{}`: unknown argument `{}`{}", option_.name, key,
                               DidYouMean(key, keys)),
                   value.where.line > 0 ? value.where : option_.where};
    }
    return Status::Ok();
  }

 private:
  // The `from prefix` argument that collects `key`: the longest prefix wins, so a policy may
  // collect "a." and "a.b." separately. A key equal to the prefix names no entry and stays
  // unknown.
  const ArgSlot* FindPrefixArg(const std::string& key) const {
    const ArgSlot* best = nullptr;
    for (const ArgSlot& slot : policy_.args) {
      const std::string& prefix = slot.decl->conf_key;
      if (!slot.decl->from_prefix || key.size() <= prefix.size() ||
          key.compare(0, prefix.size(), prefix) != 0)
        continue;
      if (!best || prefix.size() > best->decl->conf_key.size()) best = &slot;
    }
    return best;
  }

  // Adds `entry` (the key after the prefix) to the map argument at `at`. The map was created by
  // the argument's default (a map's zero value is an empty map), so declared default entries
  // survive unless the conf names them again.
  Status WritePrefixed(char* at, const Type* t, const std::string& entry, const ConfValue& v) {
    void* map = nullptr;
    std::memcpy(&map, at, sizeof(map));
    if (!map) {
      Arena* prev = SetCurrentArena(&arena_);
      map = kiln_rt_map_new(1, static_cast<int32_t>(NativeLayout(t->elem).size));
      SetCurrentArena(prev);
      std::memcpy(at, &map, sizeof(map));
    }
    bool inserted = false;
    char* slot = static_cast<char*>(
        kiln_rt_map_slot_s(map, entry.data(), static_cast<int64_t>(entry.size()), &inserted));
    WriteDefault(slot, t->elem);
    return Write(slot, t->elem, v);
  }

  Error Bad(const ConfValue& v, const std::string& what) {
    std::string shown = v.text.empty() ? Describe(v) : fmt::format("\"{}\"", v.text);
    return Error{fmt::format("plugin `{}`: argument `{}`: expected {}, got {}", option_.name, arg_,
                             what, shown),
                 v.where.line > 0 ? v.where : option_.where};
  }
  static std::string Describe(const ConfValue& v) {
    switch (v.value.index()) {
      case 0: return "nothing";
      case 5: return "a list";
      case 6: return "a map";
      default: return "a scalar";
    }
  }

  KStr CopyStr(const std::string& s) {
    if (s.empty()) return KStr{nullptr, 0};
    char* p = static_cast<char*>(arena_.Allocate(s.size(), 1));
    std::memcpy(p, s.data(), s.size());
    return KStr{p, s.size()};
  }

  Status Write(char* at, const Type* t, const ConfValue& v) {
    const auto& val = v.value;
    switch (t->kind) {
      case TypeKind::Int:
        // Volcano's Arguments.GetInt accepts only integers.
        if (auto* i = std::get_if<int64_t>(&val)) {
          std::memcpy(at, i, 8);
          return Status::Ok();
        }
        return Bad(v, "int");
      case TypeKind::Float: {
        double d;
        if (auto* i = std::get_if<int64_t>(&val))
          d = static_cast<double>(*i);
        else if (auto* f = std::get_if<double>(&val))
          d = *f;
        else
          return Bad(v, "float");
        std::memcpy(at, &d, 8);
        return Status::Ok();
      }
      case TypeKind::Bool: {
        bool b;
        if (auto* x = std::get_if<bool>(&val))
          b = *x;
        else if (auto* s = std::get_if<std::string>(&val); s && (*s == "true" || *s == "false"))
          b = *s == "true";
        else
          return Bad(v, "bool");
        *reinterpret_cast<uint8_t*>(at) = b ? 1 : 0;
        return Status::Ok();
      }
      case TypeKind::String: {
        if (val.index() == 0 || val.index() >= 5) return Bad(v, "string");
        std::string s = std::holds_alternative<std::string>(val) ? std::get<std::string>(val) : v.text;
        KStr k = CopyStr(s);
        std::memcpy(at, &k, sizeof(k));
        return Status::Ok();
      }
      case TypeKind::Duration: {
        auto* s = std::get_if<std::string>(&val);
        if (!s) return Bad(v, "duration (like \"10m\")");
        auto d = ParseGoDuration(*s);
        if (!d.ok()) return Bad(v, "duration (like \"10m\")");
        std::memcpy(at, &*d, 8);
        return Status::Ok();
      }
      case TypeKind::Quantity: {
        double d;
        if (auto* i = std::get_if<int64_t>(&val)) {
          d = static_cast<double>(*i);
        } else if (auto* f = std::get_if<double>(&val)) {
          d = *f;
        } else if (auto* s = std::get_if<std::string>(&val)) {
          auto q = ParseQuantity(*s);
          if (!q.ok()) return Bad(v, "quantity");
          d = q->ToDouble();
        } else {
          return Bad(v, "quantity");
        }
        std::memcpy(at, &d, 8);
        return Status::Ok();
      }
      case TypeKind::Resource: {
        auto* m = std::get_if<ConfValue::Map>(&val);
        if (!m) return Bad(v, "a resource map (cpu: 2, memory: 4Gi)");
        auto* r = new (arena_.Allocate(sizeof(Resource), alignof(Resource))) Resource();
        for (const auto& [name, q] : *m) {
          std::string text = std::holds_alternative<std::string>(q.value) ? std::get<std::string>(q.value) : q.text;
          auto amount = ParseResourceQuantity(name, text);
          if (!amount.ok()) return Bad(q, fmt::format("a quantity for `{}`", name));
          auto id = ResourceNames::Intern(name);
          if (!id.ok()) return Error{id.error().message, q.where};
          r->Set(*id, *amount);
        }
        std::memcpy(at, &r, sizeof(r));
        return Status::Ok();
      }
      case TypeKind::Optional: {
        if (val.index() == 0) return Status::Ok();  // null: none (the block starts zeroed/defaulted)
        if (t->elem->IsView()) return Bad(v, t->Name());
        Layout p = NativeLayout(t->elem);
        *reinterpret_cast<uint8_t*>(at) = 1;
        return Write(at + AlignTo(1, p.align), t->elem, v);
      }
      case TypeKind::List: {
        auto* l = std::get_if<ConfValue::List>(&val);
        if (!l) return Bad(v, t->Name());
        Layout e = NativeLayout(t->elem);
        char* items = static_cast<char*>(arena_.Allocate(std::max<uint64_t>(e.size * l->size(), 1), 16));
        std::memset(items, 0, e.size * l->size());
        for (size_t i = 0; i < l->size(); ++i) {
          WriteDefault(items + i * e.size, t->elem);
          Status s = Write(items + i * e.size, t->elem, (*l)[i]);
          if (!s.ok()) return s;
        }
        KList k{reinterpret_cast<const void* const*>(items), l->size()};
        std::memcpy(at, &k, sizeof(k));
        return Status::Ok();
      }
      case TypeKind::Map: {
        auto* m = std::get_if<ConfValue::Map>(&val);
        if (!m || !IsKind(t->key, TypeKind::String)) return Bad(v, t->Name());
        Layout e = NativeLayout(t->elem);
        Arena* prev = SetCurrentArena(&arena_);
        void* map = kiln_rt_map_new(1, static_cast<int32_t>(e.size));
        SetCurrentArena(prev);
        for (const auto& [key, item] : *m) {
          bool inserted = false;
          char* slot = static_cast<char*>(
              kiln_rt_map_slot_s(map, key.data(), static_cast<int64_t>(key.size()), &inserted));
          WriteDefault(slot, t->elem);
          Status s = Write(slot, t->elem, item);
          if (!s.ok()) return s;
        }
        std::memcpy(at, &map, sizeof(map));
        return Status::Ok();
      }
      case TypeKind::Record: {
        auto* m = std::get_if<ConfValue::Map>(&val);
        if (!m) return Bad(v, fmt::format("a map for record {}", t->record->name));
        std::vector<uint64_t> offsets = RecordOffsets(t->record, nullptr);
        std::vector<std::string> keys;
        for (const auto& f : t->record->fields) keys.push_back(f.conf_key.empty() ? f.name : f.conf_key);
        for (const auto& [key, item] : *m) {
          auto it = std::find(keys.begin(), keys.end(), key);
          if (it == keys.end())
            return Error{fmt::format("plugin `{}`: argument `{}`: unknown field `{}` of {}{}",
                                     option_.name, arg_, key, t->record->name,
                                     DidYouMean(key, keys)),
                         item.where.line > 0 ? item.where : option_.where};
          size_t i = static_cast<size_t>(it - keys.begin());
          Status s = Write(at + offsets[i], t->record->fields[i].declared.resolved, item);
          if (!s.ok()) return s;
        }
        return Status::Ok();
      }
      default: return Bad(v, t->Name());
    }
  }

  static bool IsKind(const Type* t, TypeKind k) { return t && t->kind == k; }

  // Record fields take their declared defaults before the conf's keys are applied.
  void WriteDefault(char* at, const Type* t) {
    if (t->kind != TypeKind::Record) return;
    std::vector<uint64_t> offsets = RecordOffsets(t->record, nullptr);
    for (size_t i = 0; i < t->record->fields.size(); ++i) {
      const ast::RecordField& f = t->record->fields[i];
      Scalar s = EvalConst(f.default_value.get());
      char* p = at + offsets[i];
      const Type* ft = f.declared.resolved;
      if (auto* iv = std::get_if<int64_t>(&s.v)) {
        if (ft->kind == TypeKind::Float || ft->kind == TypeKind::Quantity) {
          double d = static_cast<double>(*iv);
          std::memcpy(p, &d, 8);
        } else {
          std::memcpy(p, iv, 8);
        }
      } else if (auto* dv = std::get_if<double>(&s.v)) {
        std::memcpy(p, dv, 8);
      } else if (auto* bv = std::get_if<bool>(&s.v)) {
        *reinterpret_cast<uint8_t*>(p) = *bv;
      } else if (auto* sv = std::get_if<std::string>(&s.v)) {
        KStr k = CopyStr(*sv);
        std::memcpy(p, &k, sizeof(k));
      } else if (ft->kind == TypeKind::Record) {
        WriteDefault(p, ft);
      }
    }
  }

  const CompiledPolicy& policy_;
  const PluginOption& option_;
  Arena& arena_;
  std::string arg_;
};

}  // namespace

Result<std::shared_ptr<const BoundArgs>> BindArguments(
    std::shared_ptr<const CompiledPolicy> policy, const PluginOption& option,
    std::shared_ptr<const PolicyCode> code) {
  auto bound = std::make_shared<BoundArgs>();
  bound->policy = policy;
  bound->code = code ? std::move(code) : policy->Code();
  bound->arena = std::make_unique<Arena>();
  bound->data = bound->arena->Allocate(std::max<uint64_t>(policy->args_size, 1),
                                       std::max<uint64_t>(policy->args_align, 16));
  std::memset(bound->data, 0, policy->args_size);
  // Defaults run as JIT code (they may build lists, maps, resources) with the argument arena
  // current, so whatever they allocate lives as long as the bound arguments.
  PolicyContext ctx;
  ctx.session_arena = bound->arena.get();
  Arena* prev = SetCurrentArena(bound->arena.get());
  bound->code->args_default(bound->data, &ctx);
  SetCurrentArena(prev);
  Binder binder(*policy, option, *bound->arena);
  Status s = binder.BindAll(static_cast<char*>(bound->data));
  if (!s.ok()) return s.error();
  return std::shared_ptr<const BoundArgs>(std::move(bound));
}

}  // namespace kiln
