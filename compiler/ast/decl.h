#pragma once
// Declaration nodes and the Policy (the root).

#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/stmt.h"
#include "runtime/extension_points.h"

namespace kiln::ast {

struct Decl : Node {
  Decl(NodeKind k, SourceRange r, std::string n, SourceRange nr)
      : Node(k, r), name(std::move(n)), name_range(nr) {}
  std::string name;
  SourceRange name_range;
};
using DeclPtr = std::unique_ptr<Decl>;

// `uses http;`
struct UsesDecl : Decl {
  static constexpr NodeKind kKind = NodeKind::Uses;
  UsesDecl(SourceRange r, std::string n, SourceRange nr) : Decl(kKind, r, std::move(n), nr) {}
};

// `const share_delta = 0.000001;` — `value` is folded by the checker when it is a literal.
struct ConstDecl : Decl {
  static constexpr NodeKind kKind = NodeKind::Const;
  ConstDecl(SourceRange r, std::string n, SourceRange nr) : Decl(kKind, r, std::move(n), nr) {}
  std::unique_ptr<TypeRef> declared;  // may be null
  ExprPtr value;
  const Type* type = nullptr;
};

// `arg weight: float = 1.0 from "binpack.weight";`
struct ArgDecl : Decl {
  static constexpr NodeKind kKind = NodeKind::Arg;
  ArgDecl(SourceRange r, std::string n, SourceRange nr) : Decl(kKind, r, std::move(n), nr) {}
  TypeRef declared;
  ExprPtr default_value;  // may be null: the type's zero value
  std::string conf_key;   // the scheduler.conf key; equals `name` when no `from`
  // `from flag "enableHierarchy"`: read from the plugin entry's flags (beside `name:`), not from
  // its `arguments:`; the type must be bool and an unset flag reads as the default.
  bool from_flag = false;
  // `from prefix "binpack.resources."`: a map<string, T> of every argument whose key starts with
  // the prefix, keyed by the rest of the key (`binpack.resources.nvidia.com/gpu: 2` → gpu entry).
  bool from_prefix = false;
  SourceRange conf_key_range;
};

struct RecordField {
  std::string name;
  SourceRange range;
  TypeRef declared;
  ExprPtr default_value;  // may be null
  std::string conf_key;
};

// `record Strategy { kind: string = "LeastAllocated" from "type"; weight: float = 1.0; }`
struct RecordDecl : Decl {
  static constexpr NodeKind kKind = NodeKind::Record;
  RecordDecl(SourceRange r, std::string n, SourceRange nr) : Decl(kKind, r, std::move(n), nr) {}
  std::vector<RecordField> fields;
  int FieldIndex(std::string_view field) const;
};

// `state shares: map<Job, float>;` — reset at each session open.
// `state evicted_at: time across sessions;` — a scalar kept from one session to the next, per
// scheduler.conf entry (compiler/host/kept_state.h); `init` runs at the entry's first session.
struct StateDecl : Decl {
  static constexpr NodeKind kKind = NodeKind::State;
  StateDecl(SourceRange r, std::string n, SourceRange nr) : Decl(kKind, r, std::move(n), nr) {}
  TypeRef declared;
  ExprPtr init;  // may be null: the type's zero value
  bool across_sessions = false;
};

struct Param {
  LocalPtr local;
  TypeRef declared;
};

// Shared by functions and handlers.
struct Callable : Decl {
  using Decl::Decl;
  std::vector<Param> params;
  std::unique_ptr<TypeRef> result;  // null: void
  const Type* result_type = nullptr;
  BlockPtr body;
  int local_count = 0;  // Locals numbered 0..local_count-1 by the resolver
};

// `fn share_of(r: Resource) -> float { ... }`
struct FnDecl : Callable {
  static constexpr NodeKind kKind = NodeKind::Fn;
  FnDecl(SourceRange r, std::string n, SourceRange nr) : Callable(kKind, r, std::move(n), nr) {}
};

// `on preemptable, reclaimable(preemptor: Task, candidates: list<Task>) -> Victims { ... }`.
// `name` is the first point's name; `points` all of them, resolved against kExtensionPoints.
struct HandlerPoint {
  std::string name;
  SourceRange range;
  const ExtensionPointInfo* info = nullptr;  // set by passes/check_handlers.cc
};

struct HandlerDecl : Callable {
  static constexpr NodeKind kKind = NodeKind::Handler;
  HandlerDecl(SourceRange r, std::string n, SourceRange nr)
      : Callable(kKind, r, std::move(n), nr) {}
  std::vector<HandlerPoint> points;
};

// Whether the node_order handler's scores may be cached (passes/analyze_score_cache.cc):
// cacheable when the score is a function of `task_fields` of the task and of the node alone.
// Otherwise `reason` says why not, at `where`.
struct ScoreCacheFacts {
  bool has_handler = false;
  bool cacheable = false;
  std::vector<std::string> task_fields;  // sorted names from runtime/score_cache.h
  std::string reason;
  SourceRange where;
};

// The root: one policy file.
struct Policy {
  std::string name;  // `policy gang;` → "gang"
  SourceRange name_range;
  std::string path;  // of the source file
  std::vector<DeclPtr> decls;  // in source order
  std::unique_ptr<TypeContext> types = std::make_unique<TypeContext>();
  ScoreCacheFacts node_order_cache;  // filled by the analyze-score-cache pass

  // Convenience views over `decls`, in source order.
  template <typename T>
  std::vector<const T*> All() const {
    std::vector<const T*> out;
    for (const auto& d : decls)
      if (auto* t = As<T>(d.get())) out.push_back(t);
    return out;
  }
  template <typename T>
  std::vector<T*> All() {
    std::vector<T*> out;
    for (auto& d : decls)
      if (auto* t = As<T>(d.get())) out.push_back(t);
    return out;
  }
  bool Uses(std::string_view capability) const;
  // The handler serving `point`, or nullptr.
  const HandlerDecl* HandlerFor(ExtensionPoint point) const;
};

}  // namespace kiln::ast
