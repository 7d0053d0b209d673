#include "lsp/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <regex>
#include <set>

#include "compiler/host/compiled_policy.h"
#include "compiler/passes/walk.h"
#include "compiler/sema/handler_types.h"
#include "compiler/sema/view_fields.h"
#include "runtime/extension_points.h"
#include "stdlib/library.h"

namespace kiln::lsp {

namespace {

bool Contains(const SourceRange& r, SourcePos p) {
  return r.valid() && r.begin <= p && p <= r.end;
}

// Orders ranges by size so the innermost expression under the cursor wins.
std::pair<int, int> Extent(const SourceRange& r) {
  return {r.end.line - r.begin.line, r.end.column - r.begin.column};
}

std::string TypeName(const Type* t) { return t ? t->Name() : "?"; }

std::string Code(const std::string& s) { return fmt::format("```kiln\n{}\n```", s); }

std::string WithDoc(const std::string& code, std::string_view doc) {
  return doc.empty() ? Code(code) : fmt::format("{}\n\n{}", Code(code), doc);
}

std::string Params(const ast::Callable& c) {
  std::string out;
  for (const auto& p : c.params) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}: {}", p.local ? p.local->name : "?",
                       p.local && p.local->type ? p.local->type->Name() : p.declared.name);
  }
  return out;
}

std::string Signature(const ast::Callable& c) {
  std::string result = c.result_type ? c.result_type->Name() : (c.result ? c.result->name : "");
  return fmt::format("({}){}", Params(c),
                     result.empty() || result == "void" ? "" : " -> " + result);
}

std::string HandlerLabel(const ast::HandlerDecl& h) {
  std::string names;
  for (const auto& p : h.points) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

std::string StdRowCode(const stdlib::Function& f) {
  return f.receiver.empty() ? fmt::format("fn {}{}", f.name, f.signature)
                            : fmt::format("fn {}.{}{}", f.receiver, f.name, f.signature);
}

std::string StdRowDoc(const stdlib::Function& f) {
  std::string doc(f.doc);
  if (!f.capability.empty()) doc += fmt::format(" (needs `uses {};`)", f.capability);
  return doc;
}

const char* BuiltinMethodName(ast::BuiltinMethod m) {
  switch (m) {
    case ast::BuiltinMethod::ListGet: return "list<T>.get(int) -> T?: the element, none when out of range";
    case ast::BuiltinMethod::ListContains: return "list<T>.contains(T) -> bool: as `x in xs`";
    case ast::BuiltinMethod::MapGet: return "map<K, V>.get(K) -> V?: the value, none when missing";
    case ast::BuiltinMethod::MapKeys: return "map<K, V>.keys() -> list<K>, in iteration order";
    case ast::BuiltinMethod::MapValues: return "map<K, V>.values() -> list<V>, in iteration order";
    default: return "";
  }
}

std::string ViewFieldCode(const sema::ViewField& f, const Type* type) {
  return fmt::format("(field) {}.{}: {}", f.owner, f.name, TypeName(type));
}

std::string ViewFieldDoc(const sema::ViewField& f) {
  std::string doc = fmt::format("A read-only field of the `{}` view (runtime/abi.h).", f.owner);
  if (f.nullable) doc += " It may be absent: the type is optional, read it with `if let`.";
  return doc;
}

}  // namespace

// Every expression with the callable (or global) it sits in, and every local.
struct Analysis::Index {
  struct At {
    ast::Expr* expr;
    const ast::Decl* owner;
  };
  std::vector<At> exprs;
  std::vector<std::pair<ast::Local*, const ast::Decl*>> locals;
  std::vector<const ast::TypeRef*> types;  // every written type, its arguments too

  void AddType(const ast::TypeRef* t) {
    if (!t) return;
    types.push_back(t);
    for (const auto& a : t->args) AddType(&a);
  }
};

Analysis::~Analysis() = default;

std::unique_ptr<Analysis> Analysis::Run(std::string path, std::string text) {
  std::unique_ptr<Analysis> a(new Analysis());
  a->source_ = SourceFile{std::move(path), std::move(text)};
  try {
    a->result_ = RunFrontend(a->source_);
    // As `kiln check` (cli/check_command.cc): what the checker accepts must also lower.
    if (a->result_.ok()) {
      if (std::optional<Error> lowering = PolicyCompiler::CheckLowering(*a->result_.policy)) {
        SourcePos at{lowering->where.line, lowering->where.column};
        a->result_.diagnostics.Error(
            SourceRange{at, at},
            fmt::format("this passes the checker but cannot be compiled: {}", lowering->message));
      }
    }
  } catch (const std::exception& e) {
    a->result_.policy.reset();
    a->result_.diagnostics.Error(SourceRange{{1, 1}, {1, 1}},
                                 fmt::format("internal compiler error: {}", e.what()));
  }
  a->BuildIndex();
  return a;
}

void Analysis::BuildIndex() {
  index_ = std::make_unique<Index>();
  if (!result_.policy) return;
  const ast::Decl* owner = nullptr;
  passes::Walker w;
  w.on_expr = [&](ast::Expr* e) {
    if (e) index_->exprs.push_back({e, owner});
  };
  w.on_declare = [&](ast::Local* l) { index_->locals.emplace_back(l, owner); };
  w.on_stmt = [&](ast::Stmt* st) {
    if (auto* l = ast::As<ast::Let>(st)) index_->AddType(l->declared.get());
  };
  for (auto& d : result_.policy->decls) {
    owner = d.get();
    if (auto* c = ast::As<ast::ConstDecl>(d.get())) {
      index_->AddType(c->declared.get());
      w.Expr(c->value.get());
    }
    if (auto* a = ast::As<ast::ArgDecl>(d.get())) {
      index_->AddType(&a->declared);
      w.Expr(a->default_value.get());
    }
    if (auto* s = ast::As<ast::StateDecl>(d.get())) {
      index_->AddType(&s->declared);
      w.Expr(s->init.get());
    }
    if (auto* r = ast::As<ast::RecordDecl>(d.get()))
      for (auto& f : r->fields) {
        index_->AddType(&f.declared);
        w.Expr(f.default_value.get());
      }
    ast::Callable* c = ast::As<ast::FnDecl>(d.get());
    if (!c) c = ast::As<ast::HandlerDecl>(d.get());
    if (c) {
      for (auto& p : c->params) {
        if (p.local) index_->locals.emplace_back(p.local.get(), owner);
        index_->AddType(&p.declared);
      }
      index_->AddType(c->result.get());
      w.Body(c->body.get());
    }
  }
}

std::optional<Hover> Analysis::HoverAt(SourcePos pos) const {
  if (!result_.policy) return std::nullopt;
  const ast::Policy& policy = *result_.policy;
  if (Contains(policy.name_range, pos))
    return Hover{policy.name_range, Code(fmt::format("policy {}", policy.name))};
  // Declarations, at their names.
  for (const auto& d : policy.decls) {
    if (auto* h = ast::As<ast::HandlerDecl>(d.get())) {
      for (const auto& p : h->points) {
        if (!Contains(p.range, pos)) continue;
        std::string doc;
        if (p.info) {
          doc = fmt::format("Extension point `{}`: {}.", p.info->enum_name,
                            sema::CombineDescription(p.info->combine));
          if (!p.info->flag.empty())
            doc += fmt::format(" Gated by `{}` in scheduler.conf.", p.info->flag);
        }
        return Hover{p.range, WithDoc(fmt::format("on {}{}", p.name, Signature(*h)), doc)};
      }
      continue;
    }
    if (!Contains(d->name_range, pos)) continue;
    std::string code;
    std::string doc;
    if (auto* f = ast::As<ast::FnDecl>(d.get())) code = fmt::format("fn {}{}", f->name, Signature(*f));
    if (auto* c = ast::As<ast::ConstDecl>(d.get()))
      code = fmt::format("const {}: {}", c->name, TypeName(c->type));
    if (auto* a = ast::As<ast::ArgDecl>(d.get())) {
      code = fmt::format("arg {}: {}", a->name, TypeName(a->declared.resolved));
      doc = fmt::format("scheduler.conf {} `{}`", a->from_flag ? "flag" : a->from_prefix ? "arguments with the prefix" : "argument", a->conf_key);
    }
    if (auto* s = ast::As<ast::StateDecl>(d.get())) {
      code = fmt::format("state {}: {}{}", s->name, TypeName(s->declared.resolved),
                         s->across_sessions ? " across sessions" : "");
      doc = s->across_sessions ? "Kept from one session to the next." : "Reset at each session open.";
    }
    if (auto* r = ast::As<ast::RecordDecl>(d.get())) code = fmt::format("record {}", r->name);
    if (auto* u = ast::As<ast::UsesDecl>(d.get())) code = fmt::format("uses {}", u->name);
    return Hover{d->name_range, WithDoc(code, doc)};
  }
  for (const auto& [local, owner] : index_->locals)
    if (Contains(local->range, pos))
      return Hover{local->range,
                   Code(fmt::format("({}) {}: {}", local->is_mutable ? "var" : "let", local->name,
                                    TypeName(local->type)))};
  if (const ast::TypeRef* t = TypeAt(pos)) return Hover{t->range, TypeHover(t)};
  // The innermost expression under the cursor.
  const ast::Expr* best = nullptr;
  for (const auto& at : index_->exprs)
    if (Contains(at.expr->range, pos) && (!best || Extent(at.expr->range) < Extent(best->range)))
      best = at.expr;
  if (!best) return std::nullopt;
  if (auto* n = ast::As<ast::NameRef>(best)) {
    std::string code = fmt::format("{}: {}", n->name, TypeName(n->type));
    std::string doc;
    switch (n->ref) {
      case ast::NameKind::Local:
        code = fmt::format("({}) {}", n->local && n->local->is_mutable ? "var" : "let", code);
        break;
      case ast::NameKind::Const: code = "(const) " + code; break;
      case ast::NameKind::Arg:
        code = "(arg) " + code;
        if (n->arg_decl) doc = fmt::format("scheduler.conf key `{}`", n->arg_decl->conf_key);
        break;
      case ast::NameKind::State: code = "(state) " + code; break;
      case ast::NameKind::StdConstant:
        if (n->std_constant >= 0 &&
            n->std_constant < static_cast<int>(stdlib::Constants().size())) {
          const auto& c = stdlib::Constants()[n->std_constant];
          code = fmt::format("(constant) {}: {}", c.name, c.type);
          doc = std::string(c.doc);
        }
        break;
      case ast::NameKind::Session: doc = "The session: the cluster as this scheduling cycle sees it."; break;
      default: break;
    }
    return Hover{n->range, WithDoc(code, doc)};
  }
  if (auto* s = ast::As<ast::Select>(best); s && Contains(s->field_range, pos)) {
    const Type* owner = s->operand ? s->operand->type : nullptr;
    if (owner && owner->Is(TypeKind::Optional)) owner = owner->elem;
    if (owner && owner->Is(TypeKind::Session)) {
      for (const auto& f : stdlib::SessionFields())
        if (f.name == s->field)
          return Hover{s->field_range,
                       WithDoc(fmt::format("(field) session.{}: {}", f.name, f.type), f.doc)};
    }
    if (const sema::ViewField* f = owner ? sema::FindViewField(owner, s->field) : nullptr)
      return Hover{s->field_range, WithDoc(ViewFieldCode(*f, s->type), ViewFieldDoc(*f))};
    if (owner && owner->Is(TypeKind::Record) && owner->record)
      return Hover{s->field_range, Code(fmt::format("(field) {}.{}: {}", owner->record->name,
                                                    s->field, TypeName(s->type)))};
    return Hover{s->field_range, Code(fmt::format("(field) {}: {}", s->field, TypeName(s->type)))};
  }
  if (auto* c = ast::As<ast::Call>(best); c && Contains(c->callee_range, pos)) {
    if (c->call == ast::CallKind::Function && c->fn)
      return Hover{c->callee_range, Code(fmt::format("fn {}{}", c->fn->name, Signature(*c->fn)))};
    if (c->std_function >= 0 && c->std_function < static_cast<int>(stdlib::Functions().size())) {
      const auto& f = stdlib::Functions()[c->std_function];
      return Hover{c->callee_range, WithDoc(StdRowCode(f), StdRowDoc(f))};
    }
    if (c->method != ast::BuiltinMethod::None)
      return Hover{c->callee_range, Code(BuiltinMethodName(c->method))};
    return Hover{c->callee_range,
                 WithDoc(fmt::format("{}(...) -> {}", c->callee, TypeName(c->type)),
                         c->call == ast::CallKind::Builtin
                             ? "A built-in the checker types from its arguments."
                             : "")};
  }
  return Hover{best->range, Code(TypeName(best->type))};
}

const ast::TypeRef* Analysis::TypeAt(SourcePos pos) const {
  const ast::TypeRef* best = nullptr;
  for (const ast::TypeRef* t : index_->types)
    if (Contains(t->range, pos) && (!best || Extent(t->range) < Extent(best->range))) best = t;
  return best;
}

std::string Analysis::TypeHover(const ast::TypeRef* t) const {
  const Type* type = t->resolved;
  if (type && type->Is(TypeKind::Optional) && type->elem) type = type->elem;
  std::string name = t->resolved ? t->resolved->Name() : t->name;
  if (type && type->Is(TypeKind::Record) && type->record) {
    std::string fields;
    for (const auto& f : type->record->fields)
      fields += fmt::format("  {}: {};\n", f.name, TypeName(f.declared.resolved));
    return Code(fmt::format("record {} {{\n{}}}", type->record->name, fields));
  }
  std::string_view view = type ? sema::ViewName(type) : std::string_view();
  if (!view.empty()) {
    std::string fields;
    for (const auto& f : sema::ViewFields())
      if (f.owner == view) fields += (fields.empty() ? "`" : ", `") + std::string(f.name) + "`";
    return WithDoc(fmt::format("type {}", name),
                   fmt::format("A read-only view of the cluster. Fields: {}.", fields));
  }
  return Code(fmt::format("type {}", name));
}

std::optional<SourceRange> Analysis::DefinitionAt(SourcePos pos) const {
  if (!result_.policy) return std::nullopt;
  if (const ast::TypeRef* t = TypeAt(pos)) {
    const Type* type = t->resolved;
    if (type && type->Is(TypeKind::Optional) && type->elem) type = type->elem;
    if (type && type->Is(TypeKind::Record) && type->record) return type->record->name_range;
    return std::nullopt;
  }
  const ast::Expr* best = nullptr;
  for (const auto& at : index_->exprs)
    if (Contains(at.expr->range, pos) && (!best || Extent(at.expr->range) < Extent(best->range)))
      best = at.expr;
  if (!best) {
    // At a declaration: itself.
    for (const auto& [local, owner] : index_->locals)
      if (Contains(local->range, pos)) return local->range;
    for (const auto& d : result_.policy->decls)
      if (Contains(d->name_range, pos)) return d->name_range;
    return std::nullopt;
  }
  if (auto* n = ast::As<ast::NameRef>(best)) {
    if (n->local) return n->local->range;
    if (n->const_decl) return n->const_decl->name_range;
    if (n->arg_decl) return n->arg_decl->name_range;
    if (n->state_decl) return n->state_decl->name_range;
    return std::nullopt;
  }
  if (auto* c = ast::As<ast::Call>(best); c && c->fn && Contains(c->callee_range, pos))
    return c->fn->name_range;
  if (auto* s = ast::As<ast::Select>(best); s && Contains(s->field_range, pos)) {
    const Type* owner = s->operand ? s->operand->type : nullptr;
    if (owner && owner->Is(TypeKind::Optional)) owner = owner->elem;
    if (owner && owner->Is(TypeKind::Record) && owner->record)
      for (const auto& f : owner->record->fields)
        if (f.name == s->field) return f.range;
  }
  if (auto* r = ast::As<ast::RecordLit>(best); r && Contains(r->type_range, pos))
    for (const auto* rec : result_.policy->All<ast::RecordDecl>())
      if (rec->name == r->type_name) return rec->name_range;
  return std::nullopt;
}

std::vector<Symbol> Analysis::Symbols() const {
  std::vector<Symbol> out;
  if (!result_.policy) return out;
  const ast::Policy& policy = *result_.policy;
  Symbol root{policy.name, "policy", SymbolKind::Module, {}, policy.name_range, {}};
  // The policy spans the file, so every declaration nests inside it.
  int lines = 1 + static_cast<int>(std::count(source_.text.begin(), source_.text.end(), '\n'));
  root.range = SourceRange{{1, 1}, {lines, 1}};
  if (!root.selection.valid()) root.selection = SourceRange{{1, 1}, {1, 1}};
  for (const auto& d : policy.decls) {
    Symbol s{d->name, "", SymbolKind::Variable, d->range, d->name_range, {}};
    if (ast::As<ast::UsesDecl>(d.get())) {
      s.kind = SymbolKind::Namespace;
      s.detail = "uses";
    } else if (auto* c = ast::As<ast::ConstDecl>(d.get())) {
      s.kind = SymbolKind::Constant;
      s.detail = TypeName(c->type);
    } else if (auto* a = ast::As<ast::ArgDecl>(d.get())) {
      s.kind = SymbolKind::Property;
      s.detail = fmt::format("arg {} from \"{}\"", TypeName(a->declared.resolved), a->conf_key);
    } else if (auto* st = ast::As<ast::StateDecl>(d.get())) {
      s.kind = SymbolKind::Field;
      s.detail = fmt::format("state {}{}", TypeName(st->declared.resolved),
                             st->across_sessions ? " across sessions" : "");
    } else if (auto* r = ast::As<ast::RecordDecl>(d.get())) {
      s.kind = SymbolKind::Struct;
      s.detail = "record";
      for (const auto& f : r->fields)
        s.children.push_back(Symbol{f.name, TypeName(f.declared.resolved), SymbolKind::Field,
                                    f.range, f.range, {}});
    } else if (auto* f = ast::As<ast::FnDecl>(d.get())) {
      s.kind = SymbolKind::Function;
      s.detail = Signature(*f);
    } else if (auto* h = ast::As<ast::HandlerDecl>(d.get())) {
      s.kind = SymbolKind::Event;
      s.name = "on " + HandlerLabel(*h);
      s.detail = Signature(*h);
    }
    if (!s.selection.valid()) s.selection = s.range;
    root.children.push_back(std::move(s));
  }
  out.push_back(std::move(root));
  return out;
}

namespace {

// The members of a value of type `t` after `.`.
void AddMembers(const Type* t, TypeContext& types, std::vector<CompletionItem>& out) {
  if (!t) return;
  if (t->Is(TypeKind::Optional) && t->elem) t = t->elem;
  if (t->Is(TypeKind::Session)) {
    for (const auto& f : stdlib::SessionFields())
      out.push_back({std::string(f.name), CompletionKind::Field, std::string(f.type),
                     std::string(f.doc)});
    return;
  }
  std::string_view view = sema::ViewName(t);
  if (!view.empty()) {
    for (const auto& f : sema::ViewFields())
      if (f.owner == view)
        out.push_back({std::string(f.name), CompletionKind::Field,
                       TypeName(sema::ViewFieldType(f, types)), ViewFieldDoc(f)});
    return;
  }
  if (t->Is(TypeKind::Record) && t->record) {
    for (const auto& f : t->record->fields)
      out.push_back({f.name, CompletionKind::Field, TypeName(f.declared.resolved), ""});
    return;
  }
  if (t->Is(TypeKind::List)) {
    out.push_back({"get", CompletionKind::Method, BuiltinMethodName(ast::BuiltinMethod::ListGet), ""});
    out.push_back({"contains", CompletionKind::Method,
                   BuiltinMethodName(ast::BuiltinMethod::ListContains), ""});
  }
  if (t->Is(TypeKind::Map)) {
    for (auto m : {ast::BuiltinMethod::MapGet, ast::BuiltinMethod::MapKeys, ast::BuiltinMethod::MapValues}) {
      std::string d = BuiltinMethodName(m);
      std::string name = d.substr(d.find('.') + 1, d.find('(') - d.find('.') - 1);
      out.push_back({name, CompletionKind::Method, d, ""});
    }
  }
  std::string name = t->Name();
  for (const auto& f : stdlib::Functions())
    if (!f.receiver.empty() && f.receiver == name)
      out.push_back({std::string(f.name), CompletionKind::Method, StdRowCode(f), StdRowDoc(f)});
}

constexpr const char* kKeywords[] = {
    "policy", "uses", "const", "arg", "from", "record", "state", "fn", "on", "let", "var", "if",
    "else", "for", "in", "where", "return", "break", "continue", "and", "or", "not", "true",
    "false", "none", "resource"};

}  // namespace

std::vector<CompletionItem> Analysis::Complete(const std::string& text, SourcePos pos,
                                               Analysis* typed) {
  std::vector<CompletionItem> out;
  // The line up to the cursor (columns count code points; the prefix is matched as bytes, which
  // is exact for the ASCII that names are made of).
  std::string line;
  {
    size_t start = 0;
    for (int l = 1; l < pos.line && start != std::string::npos; ++l) {
      start = text.find('\n', start);
      if (start != std::string::npos) ++start;
    }
    if (start == std::string::npos) return out;
    size_t end = text.find('\n', start);
    line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t i = 0;
    for (int col = 1; col < pos.column && i < line.size(); ++col) {
      ++i;
      while (i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) ++i;
    }
    line.resize(i);
  }
  static const std::regex on_re(R"(^\s*on\s+(?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]*$)");
  static const std::regex member_re(R"(([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\.\s*[A-Za-z_]*$)");
  std::smatch m;
  if (std::regex_match(line, on_re)) {
    TypeContext types;
    for (const auto& p : kExtensionPoints)
      out.push_back({std::string(p.handler), CompletionKind::Event,
                     sema::HandlerSignature(p, types),
                     fmt::format("{}", sema::CombineDescription(p.combine))});
    return out;
  }
  ast::Policy* policy = typed && typed->result_.policy ? typed->result_.policy.get() : nullptr;
  if (std::regex_search(line, m, member_re)) {
    std::vector<std::string> chain;
    static const std::regex word_re(R"([A-Za-z_]\w*)");
    std::string path = m[1];
    for (auto it = std::sregex_iterator(path.begin(), path.end(), word_re);
         it != std::sregex_iterator(); ++it)
      chain.push_back(it->str());
    if (!policy || chain.empty()) return out;
    TypeContext& types = *policy->types;
    const Type* t = nullptr;
    if (chain[0] == "session") t = types.Get(TypeKind::Session);
    // A local of the callable around the cursor line (the typed tree may be older than the
    // text, so by name; the nearest declaration above the cursor wins).
    int best_line = 0;
    for (const auto& [local, owner] : typed->index_->locals) {
      if (local->name != chain[0] || !local->type || !owner) continue;
      bool inside = owner->range.begin.line <= pos.line && pos.line <= owner->range.end.line;
      int score = inside ? local->range.begin.line : 0;
      if (!t || score > best_line) {
        t = local->type;
        best_line = score;
      }
    }
    if (!t)
      for (const auto& d : policy->decls) {
        if (d->name != chain[0]) continue;
        if (auto* c = ast::As<ast::ConstDecl>(d.get())) t = c->type;
        if (auto* a = ast::As<ast::ArgDecl>(d.get())) t = a->declared.resolved;
        if (auto* s = ast::As<ast::StateDecl>(d.get())) t = s->declared.resolved;
      }
    for (size_t i = 1; t && i < chain.size(); ++i) {
      if (t->Is(TypeKind::Optional)) t = t->elem;
      if (t->Is(TypeKind::Session)) {
        const Type* next = nullptr;
        for (const auto& f : stdlib::SessionFields())
          if (f.name == chain[i]) {
            // Session fields are written as type names ("list<Node>"): find the view's type.
            std::string_view ty = f.type;
            if (ty.starts_with("list<") && ty.size() > 6) {
              std::string_view e = ty.substr(5, ty.size() - 6);
              TypeKind k;
              if (LookupScalarTypeName(e, &k)) next = types.List(types.Get(k));
            } else if (TypeKind k; LookupScalarTypeName(ty, &k)) {
              next = types.Get(k);
            }
          }
        t = next;
        continue;
      }
      if (const sema::ViewField* f = sema::FindViewField(t, chain[i])) {
        t = sema::ViewFieldType(*f, types);
      } else if (t->Is(TypeKind::Record) && t->record) {
        const Type* next = nullptr;
        for (const auto& f : t->record->fields)
          if (f.name == chain[i]) next = f.declared.resolved;
        t = next;
      } else {
        t = nullptr;
      }
    }
    AddMembers(t, types, out);
    return out;
  }
  for (const char* k : kKeywords) out.push_back({k, CompletionKind::Keyword, "", ""});
  for (const auto& f : stdlib::Functions())
    if (f.receiver.empty())
      out.push_back({std::string(f.name), CompletionKind::Function, StdRowCode(f), StdRowDoc(f)});
  for (std::string_view b : stdlib::kGenericBuiltins)
    out.push_back({std::string(b), CompletionKind::Function, "built-in",
                   "typed by the checker from its arguments"});
  for (const auto& c : stdlib::Constants())
    if (c.name.find('.') == std::string_view::npos)
      out.push_back({std::string(c.name), CompletionKind::Constant, std::string(c.type),
                     std::string(c.doc)});
  out.push_back({"session", CompletionKind::Variable, "Session", "the session view"});
  if (policy) {
    for (const auto& d : policy->decls) {
      if (auto* f = ast::As<ast::FnDecl>(d.get()))
        out.push_back({f->name, CompletionKind::Function, "fn " + f->name + Signature(*f), ""});
      if (auto* c = ast::As<ast::ConstDecl>(d.get()))
        out.push_back({c->name, CompletionKind::Constant, TypeName(c->type), ""});
      if (auto* a = ast::As<ast::ArgDecl>(d.get()))
        out.push_back({a->name, CompletionKind::Property, TypeName(a->declared.resolved), ""});
      if (auto* s = ast::As<ast::StateDecl>(d.get()))
        out.push_back({s->name, CompletionKind::Variable, TypeName(s->declared.resolved), ""});
      if (auto* r = ast::As<ast::RecordDecl>(d.get()))
        out.push_back({r->name, CompletionKind::Struct, "record", ""});
    }
    // The locals of the callable around the cursor line.
    std::set<std::string> seen;
    for (const auto& [local, owner] : typed->index_->locals)
      if (owner && owner->range.begin.line <= pos.line && pos.line <= owner->range.end.line &&
          seen.insert(local->name).second)
        out.push_back({local->name, CompletionKind::Variable, TypeName(local->type), ""});
  }
  return out;
}

}  // namespace kiln::lsp
