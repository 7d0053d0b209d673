// DumpAst: one node per line, indented by depth, with source positions; `typed` adds the type of
// each expression and what each name is bound to. Stable output for golden tests.
#include <fmt/format.h>

#include "compiler/frontend.h"
#include "stdlib/library.h"

namespace kiln {

namespace {

using namespace ast;

class Dumper {
 public:
  explicit Dumper(bool typed) : typed_(typed) {}

  std::string Run(const Policy& p) {
    Line(0, fmt::format("Policy {} @{}", p.name, Pos(p.name_range)));
    for (const auto& d : p.decls) Decl(d.get(), 1);
    return std::move(out_);
  }

 private:
  static std::string Pos(const SourceRange& r) {
    return fmt::format("{}:{}", r.begin.line, r.begin.column);
  }
  void Line(int depth, const std::string& text) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  std::string TypeOf(const Type* t) { return t ? t->Name() : "?"; }
  std::string TypeText(const TypeRef& t) {
    std::string s = t.name;
    if (!t.args.empty()) {
      s += t.tuple ? "(" : "<";
      for (size_t i = 0; i < t.args.size(); ++i) s += (i ? ", " : "") + TypeText(t.args[i]);
      s += t.tuple ? ")" : ">";
    }
    if (t.optional) s += "?";
    return s;
  }

  void Decl(const ast::Decl* d, int depth) {
    std::string head = fmt::format("{} {} @{}", KindName(d->kind), d->name, Pos(d->range));
    switch (d->kind) {
      case NodeKind::Const: {
        auto* c = static_cast<const ConstDecl*>(d);
        if (typed_) head += " : " + TypeOf(c->type);
        Line(depth, head);
        Expr(c->value.get(), depth + 1);
        break;
      }
      case NodeKind::Arg: {
        auto* a = static_cast<const ArgDecl*>(d);
        Line(depth, head + fmt::format(" : {} from {}\"{}\"", TypeText(a->declared),
                                       a->from_flag ? "flag " : a->from_prefix ? "prefix " : "", a->conf_key));
        Expr(a->default_value.get(), depth + 1);
        break;
      }
      case NodeKind::Record: {
        Line(depth, head);
        for (const auto& f : static_cast<const RecordDecl*>(d)->fields) {
          Line(depth + 1, fmt::format("Field {} : {} from \"{}\"", f.name, TypeText(f.declared),
                                      f.conf_key));
          Expr(f.default_value.get(), depth + 2);
        }
        break;
      }
      case NodeKind::State: {
        auto* s = static_cast<const StateDecl*>(d);
        Line(depth, head + " : " + TypeText(s->declared) +
                        (s->across_sessions ? " across sessions" : ""));
        Expr(s->init.get(), depth + 1);
        break;
      }
      case NodeKind::Fn:
      case NodeKind::Handler: {
        auto* fn = static_cast<const Callable*>(d);
        if (d->kind == NodeKind::Handler) {
          head = fmt::format("Handler @{}", Pos(d->range));
          for (const auto& p : static_cast<const HandlerDecl*>(d)->points) head += " " + p.name;
        }
        std::string params;
        for (size_t i = 0; i < fn->params.size(); ++i)
          params += (i ? ", " : "") + fn->params[i].local->name + ": " +
                    TypeText(fn->params[i].declared);
        head += "(" + params + ")";
        if (fn->result) head += " -> " + TypeText(*fn->result);
        if (typed_) head += fmt::format(" locals={}", fn->local_count);
        Line(depth, head);
        Stmt(fn->body.get(), depth + 1);
        break;
      }
      default: Line(depth, head); break;
    }
  }

  std::string LocalText(const Local* l) {
    std::string s = l->name;
    if (typed_) s += fmt::format("#{} : {}", l->id, TypeOf(l->type));
    return s;
  }

  // An if's or if-let's then block, and its else branch under an `Else` line.
  void Branches(const ast::Stmt* then, const ast::Stmt* otherwise, int depth) {
    Stmt(then, depth + 1);
    if (otherwise) {
      Line(depth, "Else");
      Stmt(otherwise, depth + 1);
    }
  }

  void Stmt(const ast::Stmt* s, int depth) {
    if (!s) return;
    std::string head = fmt::format("{} @{}", KindName(s->kind), Pos(s->range));
    switch (s->kind) {
      case NodeKind::Block:
        Line(depth, head);
        for (const auto& x : static_cast<const Block*>(s)->stmts) Stmt(x.get(), depth + 1);
        break;
      case NodeKind::Let: {
        auto* l = static_cast<const Let*>(s);
        Line(depth, head + fmt::format(" {} {}", l->local->is_mutable ? "var" : "let",
                                       LocalText(l->local.get())));
        Expr(l->value.get(), depth + 1);
        break;
      }
      case NodeKind::Assign: {
        auto* a = static_cast<const Assign*>(s);
        Line(depth, head + " " + AssignOpSpelling(a->op));
        Expr(a->target.get(), depth + 1);
        Expr(a->value.get(), depth + 1);
        break;
      }
      case NodeKind::If: {
        auto* i = static_cast<const If*>(s);
        Line(depth, head);
        Expr(i->cond.get(), depth + 1);
        Branches(i->then.get(), i->otherwise.get(), depth);
        break;
      }
      case NodeKind::IfLet: {
        auto* i = static_cast<const IfLet*>(s);
        Line(depth, head + " " + LocalText(i->local.get()));
        Expr(i->value.get(), depth + 1);
        Branches(i->then.get(), i->otherwise.get(), depth);
        break;
      }
      case NodeKind::For: {
        auto* f = static_cast<const For*>(s);
        head += " " + LocalText(f->first.get());
        if (f->second) head += ", " + LocalText(f->second.get());
        Line(depth, head);
        Expr(f->source.get(), depth + 1);
        Stmt(f->body.get(), depth + 1);
        break;
      }
      case NodeKind::Return:
        Line(depth, head);
        Expr(static_cast<const Return*>(s)->value.get(), depth + 1);
        break;
      case NodeKind::ExprStmt:
        Line(depth, head);
        Expr(static_cast<const ExprStmt*>(s)->value.get(), depth + 1);
        break;
      default: Line(depth, head); break;
    }
  }

  void Expr(const ast::Expr* e, int depth) {
    if (!e) return;
    std::string head = KindName(e->kind);
    switch (e->kind) {
      case NodeKind::IntLit: head += fmt::format(" {}", static_cast<const IntLit*>(e)->value); break;
      case NodeKind::FloatLit: head += fmt::format(" {}", static_cast<const FloatLit*>(e)->value); break;
      case NodeKind::StringLit: head += fmt::format(" \"{}\"", static_cast<const StringLit*>(e)->value); break;
      case NodeKind::BoolLit: head += static_cast<const BoolLit*>(e)->value ? " true" : " false"; break;
      case NodeKind::DurationLit: head += fmt::format(" {}ns", static_cast<const DurationLit*>(e)->value); break;
      case NodeKind::QuantityLit: head += fmt::format(" {} ({})", static_cast<const QuantityLit*>(e)->text, static_cast<const QuantityLit*>(e)->value); break;
      case NodeKind::NameRef: {
        auto* n = static_cast<const NameRef*>(e);
        head += " " + n->name;
        if (typed_) {
          switch (n->ref) {
            case NameKind::Local: head += fmt::format(" -> local#{}", n->local->id); break;
            case NameKind::Const: head += " -> const"; break;
            case NameKind::Arg: head += " -> arg"; break;
            case NameKind::State: head += " -> state"; break;
            case NameKind::StdConstant: head += " -> stdlib"; break;
            case NameKind::Session: head += " -> session"; break;
            case NameKind::Unresolved: head += " -> ?"; break;
          }
        }
        break;
      }
      case NodeKind::Unary: head += static_cast<const Unary*>(e)->op == UnaryOp::Neg ? " -" : " not"; break;
      case NodeKind::Binary: head += fmt::format(" {}", BinaryOpSpelling(static_cast<const Binary*>(e)->op)); break;
      case NodeKind::Select: head += " ." + static_cast<const Select*>(e)->field; break;
      case NodeKind::RecordLit: head += " " + static_cast<const RecordLit*>(e)->type_name; break;
      case NodeKind::Call: {
        auto* c = static_cast<const Call*>(e);
        head += " " + c->callee;
        if (typed_) {
          static const char* kinds[] = {"?", "fn", "stdlib", "method", "builtin"};
          head += fmt::format(" [{}]", kinds[static_cast<int>(c->call)]);
        }
        break;
      }
      case NodeKind::Comprehension: {
        auto* c = static_cast<const Comprehension*>(e);
        head += fmt::format(" {} {}", AggregateName(c->aggregate), LocalText(c->first.get()));
        if (c->second) head += ", " + LocalText(c->second.get());
        if (c->order_key) head += c->descending ? " order desc" : " order asc";
        break;
      }
      default: break;
    }
    head += fmt::format(" @{}", Pos(e->range));
    if (typed_) head += " : " + TypeOf(e->type);
    Line(depth, head);
    switch (e->kind) {
      case NodeKind::Unary: Expr(static_cast<const Unary*>(e)->operand.get(), depth + 1); break;
      case NodeKind::Binary:
        Expr(static_cast<const Binary*>(e)->left.get(), depth + 1);
        Expr(static_cast<const Binary*>(e)->right.get(), depth + 1);
        break;
      case NodeKind::Conditional: {
        auto* c = static_cast<const Conditional*>(e);
        Expr(c->cond.get(), depth + 1);
        Expr(c->then.get(), depth + 1);
        Expr(c->otherwise.get(), depth + 1);
        break;
      }
      case NodeKind::Select: Expr(static_cast<const Select*>(e)->operand.get(), depth + 1); break;
      case NodeKind::Index:
        Expr(static_cast<const Index*>(e)->operand.get(), depth + 1);
        Expr(static_cast<const Index*>(e)->index.get(), depth + 1);
        break;
      case NodeKind::Call: {
        auto* c = static_cast<const Call*>(e);
        if (c->receiver) {
          Line(depth + 1, "receiver:");
          Expr(c->receiver.get(), depth + 2);
        }
        for (const auto& a : c->args) Expr(a.get(), depth + 1);
        break;
      }
      case NodeKind::Comprehension: {
        auto* c = static_cast<const Comprehension*>(e);
        Line(depth + 1, "source:");
        Expr(c->source.get(), depth + 2);
        if (c->filter) {
          Line(depth + 1, "where:");
          Expr(c->filter.get(), depth + 2);
        }
        if (c->order_key) {
          Line(depth + 1, "order by:");
          Expr(c->order_key.get(), depth + 2);
        }
        Line(depth + 1, "element:");
        Expr(c->element.get(), depth + 2);
        break;
      }
      case NodeKind::ListLit:
      case NodeKind::TupleLit:
        for (const auto& x : static_cast<const ElementsLit*>(e)->elements) Expr(x.get(), depth + 1);
        break;
      case NodeKind::MapLit:
        for (const auto& x : static_cast<const MapLit*>(e)->entries) {
          Expr(x.key.get(), depth + 1);
          Expr(x.value.get(), depth + 2);
        }
        break;
      case NodeKind::ResourceLit:
        for (const auto& x : static_cast<const ResourceLit*>(e)->entries) {
          Expr(x.key.get(), depth + 1);
          Expr(x.value.get(), depth + 2);
        }
        break;
      case NodeKind::RecordLit:
        for (const auto& f : static_cast<const RecordLit*>(e)->fields) {
          Line(depth + 1, f.name + ":");
          Expr(f.value.get(), depth + 2);
        }
        break;
      default: break;
    }
  }

  bool typed_;
  std::string out_;
};

}  // namespace

std::string DumpAst(const ast::Policy& policy, bool typed) { return Dumper(typed).Run(policy); }

}  // namespace kiln
