#include "compiler/parse/ast_builder.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "PolicyParser.h"
#include "compiler/parse/literals.h"

namespace kiln {

namespace {

// The tree of grammar/Policy.g4's parser.
using P = grammar::PolicyParser;
using namespace ast;

SourcePos StartOf(antlr4::Token* t) {
  return {static_cast<int>(t->getLine()), static_cast<int>(t->getCharPositionInLine()) + 1};
}
SourcePos EndOf(antlr4::Token* t) {
  int len = static_cast<int>(t->getStopIndex() - t->getStartIndex());
  if (len < 0) len = 0;
  return {static_cast<int>(t->getLine()), static_cast<int>(t->getCharPositionInLine()) + 1 + len};
}
SourceRange RangeOf(antlr4::Token* t) { return {StartOf(t), EndOf(t)}; }
SourceRange RangeOf(antlr4::ParserRuleContext* c) {
  antlr4::Token* a = c->getStart();
  antlr4::Token* b = c->getStop();
  if (!b || b->getTokenIndex() < a->getTokenIndex()) return {StartOf(a), StartOf(a)};
  return {StartOf(a), EndOf(b)};
}

// Thrown only inside the builder when the depth limit is hit, caught in BuildAst.
struct TooDeep {
  SourceRange where;
};

class Builder {
 public:
  Builder(const AstBuildOptions& o, DiagnosticList& d) : options_(o), diags_(d) {}

  std::unique_ptr<Policy> File(P::PolicyFileContext* c, const std::string& path) {
    auto policy = std::make_unique<Policy>();
    policy->path = path;
    auto* h = c->header;
    if (h->name) {
      policy->name = h->name->getText();
      policy->name_range = RangeOf(h->name);
    } else {
      policy->name = Str(h->str);
      policy->name_range = RangeOf(h->str);
    }
    for (auto* d : c->decls) policy->decls.push_back(Decl(d));
    return policy;
  }

 private:
  // ---- helpers ----
  struct DepthGuard {
    Builder* b;
    DepthGuard(Builder* builder, SourceRange r) : b(builder) {
      if (++b->depth_ > b->options_.max_depth) throw TooDeep{r};
    }
    ~DepthGuard() { --b->depth_; }
  };

  std::string Str(antlr4::Token* t) {
    auto v = DecodeStringLiteral(t->getText());
    if (!v) {
      diags_.Error(RangeOf(t), "invalid escape sequence in string literal (allowed: \\n \\t \\r \\\\ \\\")");
      return "";
    }
    return *v;
  }

  TypeRef Type(P::TypeRefContext* c) {
    DepthGuard g(this, RangeOf(c));
    TypeRef t;
    t.tuple = c->tuple != nullptr;
    if (c->name) t.name = c->name->getText();
    t.range = RangeOf(c);
    t.optional = c->opt != nullptr;
    for (auto* a : c->args) t.args.push_back(Type(a));
    return t;
  }

  LocalPtr NewLocal(antlr4::Token* name, bool is_mutable) {
    auto l = std::make_unique<Local>();
    l->name = name->getText();
    l->range = RangeOf(name);
    l->is_mutable = is_mutable;
    return l;
  }

  void Params(P::ParamListContext* c, Callable& fn) {
    if (!c) return;
    for (auto* p : c->params) {
      Param param;
      param.local = NewLocal(p->name, false);
      param.declared = Type(p->type);
      fn.params.push_back(std::move(param));
    }
  }

  // ---- declarations ----
  DeclPtr Decl(P::DeclContext* c) {
    SourceRange r = RangeOf(c);
    if (auto* d = dynamic_cast<P::UsesDeclContext*>(c)) {
      return std::make_unique<UsesDecl>(r, d->name->getText(), RangeOf(d->name));
    }
    if (auto* d = dynamic_cast<P::ConstDeclContext*>(c)) {
      auto out = std::make_unique<ConstDecl>(r, d->name->getText(), RangeOf(d->name));
      if (d->type) out->declared = std::make_unique<TypeRef>(Type(d->type));
      out->value = Expr(d->value);
      return out;
    }
    if (auto* d = dynamic_cast<P::ArgDeclContext*>(c)) {
      auto out = std::make_unique<ArgDecl>(r, d->name->getText(), RangeOf(d->name));
      out->declared = Type(d->type);
      if (d->value) out->default_value = Expr(d->value);
      if (d->key) {
        out->conf_key = Str(d->key);
        out->conf_key_range = RangeOf(d->key);
        if (d->source) {
          std::string word = d->source->getText();
          out->from_flag = word == "flag";
          out->from_prefix = word == "prefix";
          if (!out->from_flag && !out->from_prefix)
            diags_.Error(RangeOf(d->source),
                         fmt::format("expected `flag` or `prefix` after `from`, not `{}`", word));
        }
      } else {
        out->conf_key = out->name;
        out->conf_key_range = out->name_range;
      }
      return out;
    }
    if (auto* d = dynamic_cast<P::RecordDeclContext*>(c)) {
      auto out = std::make_unique<RecordDecl>(r, d->name->getText(), RangeOf(d->name));
      for (auto* f : d->fields) {
        RecordField field;
        field.name = f->name->getText();
        field.range = RangeOf(f->name);
        field.declared = Type(f->type);
        if (f->value) field.default_value = Expr(f->value);
        field.conf_key = f->key ? Str(f->key) : field.name;
        out->fields.push_back(std::move(field));
      }
      return out;
    }
    if (auto* d = dynamic_cast<P::StateDeclContext*>(c)) {
      auto out = std::make_unique<StateDecl>(r, d->name->getText(), RangeOf(d->name));
      out->declared = Type(d->type);
      // `across sessions` is two contextual words, as `order by` is: still names elsewhere.
      if (d->acrossKw) {
        out->across_sessions = true;
        if (d->acrossKw->getText() != "across" || d->sessionsKw->getText() != "sessions")
          diags_.Error(Join(RangeOf(d->acrossKw), RangeOf(d->sessionsKw)),
                       fmt::format("expected `across sessions` after the state's type, not `{} {}`",
                                   d->acrossKw->getText(), d->sessionsKw->getText()));
      }
      if (d->value) out->init = Expr(d->value);
      return out;
    }
    if (auto* d = dynamic_cast<P::FnDeclContext*>(c)) {
      auto out = std::make_unique<FnDecl>(r, d->name->getText(), RangeOf(d->name));
      Params(d->params, *out);
      if (d->result) out->result = std::make_unique<TypeRef>(Type(d->result));
      out->body = BlockOf(d->body);
      return out;
    }
    auto* d = dynamic_cast<P::HandlerDeclContext*>(c);
    auto out = std::make_unique<HandlerDecl>(r, d->points[0]->getText(), RangeOf(d->points[0]));
    for (auto* p : d->points) out->points.push_back({p->getText(), RangeOf(p), nullptr});
    Params(d->params, *out);
    if (d->result) out->result = std::make_unique<TypeRef>(Type(d->result));
    out->body = BlockOf(d->body);
    return out;
  }

  // ---- statements ----
  BlockPtr BlockOf(P::BlockContext* c) {
    DepthGuard g(this, RangeOf(c));
    auto b = std::make_unique<ast::Block>(RangeOf(c));
    for (auto* s : c->stmts) b->stmts.push_back(Stmt(s));
    return b;
  }

  StmtPtr Stmt(P::StmtContext* c) {
    DepthGuard g(this, RangeOf(c));
    SourceRange r = RangeOf(c);
    if (auto* s = dynamic_cast<P::LetStmtContext*>(c)) {
      auto out = std::make_unique<Let>(r);
      out->local = NewLocal(s->name, s->kw->getText() == "var");
      if (s->type) out->declared = std::make_unique<TypeRef>(Type(s->type));
      out->value = Expr(s->value);
      return out;
    }
    if (auto* s = dynamic_cast<P::AssignStmtContext*>(c)) {
      auto out = std::make_unique<Assign>(r);
      out->target = Expr(s->target);
      std::string op = s->op->getText();
      out->op = op == "+=" ? AssignOp::Add
                : op == "-=" ? AssignOp::Sub
                : op == "*=" ? AssignOp::Mul
                : op == "/=" ? AssignOp::Div
                             : AssignOp::Set;
      out->value = Expr(s->value);
      return out;
    }
    if (auto* s = dynamic_cast<P::IfLetStmtContext*>(c)) return IfLetOf(r, s);
    if (auto* s = dynamic_cast<P::IfStmtContext*>(c)) return IfOf(r, s);
    if (auto* s = dynamic_cast<P::ForStmtContext*>(c)) {
      auto out = std::make_unique<For>(r);
      out->first = NewLocal(s->first, false);
      if (s->second) out->second = NewLocal(s->second, false);
      out->source = Expr(s->range);
      out->body = BlockOf(s->body);
      return out;
    }
    if (auto* s = dynamic_cast<P::ReturnStmtContext*>(c)) {
      auto out = std::make_unique<Return>(r);
      if (s->value) out->value = Expr(s->value);
      return out;
    }
    if (dynamic_cast<P::BreakStmtContext*>(c)) return std::make_unique<ast::Break>(r);
    if (dynamic_cast<P::ContinueStmtContext*>(c)) return std::make_unique<ast::Continue>(r);
    if (auto* s = dynamic_cast<P::BlockStmtContext*>(c)) return BlockOf(s->body);
    auto* s = dynamic_cast<P::ExprStmtContext*>(c);
    auto out = std::make_unique<ExprStmt>(r);
    out->value = Expr(s->value);
    return out;
  }

  StmtPtr Else(P::ElseBranchContext* c) {
    DepthGuard g(this, RangeOf(c));
    SourceRange r = RangeOf(c);
    if (auto* e = dynamic_cast<P::ElseBlockContext*>(c)) return BlockOf(e->body);
    if (auto* e = dynamic_cast<P::ElseIfLetContext*>(c)) return IfLetOf(r, e);
    return IfOf(r, dynamic_cast<P::ElseIfContext*>(c));
  }

  // `if let` and `if`, as statements and after `else` (the two contexts name the same parts).
  template <typename Ctx>
  StmtPtr IfLetOf(SourceRange r, Ctx* s) {
    auto out = std::make_unique<IfLet>(r);
    out->local = NewLocal(s->name, false);
    out->value = Expr(s->value);
    out->then = BlockOf(s->then);
    if (s->otherwise) out->otherwise = Else(s->otherwise);
    return out;
  }
  template <typename Ctx>
  StmtPtr IfOf(SourceRange r, Ctx* s) {
    auto out = std::make_unique<If>(r);
    out->cond = Expr(s->cond);
    out->then = BlockOf(s->then);
    if (s->otherwise) out->otherwise = Else(s->otherwise);
    return out;
  }

  // ---- expressions ----
  ExprPtr Expr(P::ExprContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (c->then)
      return std::make_unique<Conditional>(RangeOf(c), Coalesce(c->cond), Expr(c->then),
                                           Expr(c->otherwise));
    return Coalesce(c->cond);
  }

  ExprPtr Bin(antlr4::ParserRuleContext* c, BinaryOp op, ExprPtr l, ExprPtr r) {
    return std::make_unique<Binary>(RangeOf(c), op, std::move(l), std::move(r));
  }

  ExprPtr Coalesce(P::CoalesceContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (c->right) return Bin(c, BinaryOp::Coalesce, Or(c->left), Coalesce(c->right));
    return Or(c->left);
  }

  ExprPtr Or(P::OrExprContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (auto* e = dynamic_cast<P::OrContext*>(c)) return Bin(c, BinaryOp::Or, Or(e->left), And(e->right));
    return And(dynamic_cast<P::PlainOrContext*>(c)->value);
  }

  ExprPtr And(P::AndExprContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (auto* e = dynamic_cast<P::AndContext*>(c))
      return Bin(c, BinaryOp::And, And(e->left), Not(e->right));
    return Not(dynamic_cast<P::PlainAndContext*>(c)->value);
  }

  // A prefix level (`not x`, `-x`): the operator applied to this level again (`not not x`), or
  // else the next level down.
  template <typename OpCtx, typename PlainCtx, typename Ctx, typename Same, typename Down>
  ExprPtr Prefix(Ctx* c, UnaryOp op, Same same, Down down) {
    DepthGuard g(this, RangeOf(c));
    if (auto* e = dynamic_cast<OpCtx*>(c))
      return std::make_unique<ast::Unary>(RangeOf(c), op, (this->*same)(e->operand));
    return (this->*down)(dynamic_cast<PlainCtx*>(c)->value);
  }

  ExprPtr Not(P::NotExprContext* c) {
    return Prefix<P::NotContext, P::PlainNotContext>(c, UnaryOp::Not, &Builder::Not,
                                                     &Builder::Relation);
  }

  ExprPtr Relation(P::RelationContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (c->right) {
      std::string op = c->op->getText();
      BinaryOp b = op == "==" ? BinaryOp::Eq
                   : op == "!=" ? BinaryOp::Ne
                   : op == "<"  ? BinaryOp::Lt
                   : op == "<=" ? BinaryOp::Le
                   : op == ">"  ? BinaryOp::Gt
                   : op == ">=" ? BinaryOp::Ge
                                : BinaryOp::In;
      return Bin(c, b, Additive(c->left), Additive(c->right));
    }
    return Additive(c->left);
  }

  ExprPtr Additive(P::AdditiveContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (auto* e = dynamic_cast<P::AddSubContext*>(c))
      return Bin(c, e->op->getText() == "+" ? BinaryOp::Add : BinaryOp::Sub, Additive(e->left),
                 Multiplicative(e->right));
    return Multiplicative(dynamic_cast<P::PlainAdditiveContext*>(c)->value);
  }

  ExprPtr Multiplicative(P::MultiplicativeContext* c) {
    DepthGuard g(this, RangeOf(c));
    if (auto* e = dynamic_cast<P::MulDivContext*>(c)) {
      std::string op = e->op->getText();
      return Bin(c, op == "*" ? BinaryOp::Mul : op == "/" ? BinaryOp::Div : BinaryOp::Mod,
                 Multiplicative(e->left), Unary(e->right));
    }
    return Unary(dynamic_cast<P::PlainMultiplicativeContext*>(c)->value);
  }

  ExprPtr Unary(P::UnaryContext* c) {
    return Prefix<P::NegateContext, P::PlainUnaryContext>(c, UnaryOp::Neg, &Builder::Unary,
                                                          &Builder::Postfix);
  }

  ExprPtr Postfix(P::PostfixContext* c) {
    DepthGuard g(this, RangeOf(c));
    SourceRange r = RangeOf(c);
    if (auto* e = dynamic_cast<P::SelectContext*>(c)) {
      // `QueueState.Open`, `PodGroupPhase.Inqueue`: a qualified standard-library constant.
      if (auto* plain = dynamic_cast<P::PlainPostfixContext*>(e->operand);
          plain && dynamic_cast<P::NameContext*>(plain->value)) {
        std::string enum_name = plain->value->getText();
        if (enum_name == "QueueState" || enum_name == "PodGroupPhase" || enum_name == "TaskStatus")
          return std::make_unique<NameRef>(r, enum_name + "." + e->field->getText());
      }
      return std::make_unique<Select>(r, Postfix(e->operand), e->field->getText(),
                                      RangeOf(e->field));
    }
    // `k.0`: the field is the position, which the checker reads on a tuple.
    if (auto* e = dynamic_cast<P::TupleElementContext*>(c))
      return std::make_unique<Select>(r, Postfix(e->operand), e->position->getText(),
                                      RangeOf(e->position));
    if (auto* e = dynamic_cast<P::IndexContext*>(c))
      return std::make_unique<ast::Index>(r, Postfix(e->operand), Expr(e->index));
    if (auto* e = dynamic_cast<P::CallContext*>(c)) return CallOf(e);
    return Primary(dynamic_cast<P::PlainPostfixContext*>(c)->value);
  }

  // Calls name a function (`share(a, b)`) or a method (`m.get(k)`). Aggregates with a
  // generator argument (`sum(x for x in xs)`) become Comprehensions.
  ExprPtr CallOf(P::CallContext* e) {
    SourceRange r = RangeOf(e);
    std::string name;
    SourceRange name_range;
    ExprPtr receiver;
    if (auto* sel = dynamic_cast<P::SelectContext*>(e->callee)) {
      name = sel->field->getText();
      name_range = RangeOf(sel->field);
      receiver = Postfix(sel->operand);
    } else if (auto* plain = dynamic_cast<P::PlainPostfixContext*>(e->callee);
               plain && dynamic_cast<P::NameContext*>(plain->value)) {
      name = plain->value->getText();
      name_range = RangeOf(plain);
    } else {
      diags_.Error(RangeOf(e->callee), "only named functions and methods can be called");
      return std::make_unique<NoneLit>(r);
    }
    if (e->args && e->args->gen) {
      Aggregate agg;
      if (name == "sum") agg = Aggregate::Sum;
      else if (name == "count") agg = Aggregate::Count;
      else if (name == "any") agg = Aggregate::Any;
      else if (name == "all") agg = Aggregate::All;
      else if (name == "max") agg = Aggregate::Max;
      else if (name == "min") agg = Aggregate::Min;
      else if (name == "list") agg = Aggregate::List;
      else {
        diags_.Error(name_range,
                     fmt::format("`{}` does not take a generator; generators work with sum, "
                                 "count, any, all, max, min and [...]",
                                 name));
        return std::make_unique<NoneLit>(r);
      }
      if (receiver) diags_.Error(name_range, fmt::format("`{}` is not a method", name));
      return Comprehend(r, agg, e->args->args.front(), e->args->gen);
    }
    auto call = std::make_unique<ast::Call>(r, name, name_range);
    call->receiver = std::move(receiver);
    if (e->args)
      for (auto* x : e->args->args) call->args.push_back(Expr(x));
    return call;
  }

  ExprPtr Comprehend(SourceRange r, Aggregate agg, P::ExprContext* element,
                     P::GeneratorContext* g) {
    auto out = std::make_unique<Comprehension>(r, agg);
    out->first = NewLocal(g->first, false);
    if (g->second) out->second = NewLocal(g->second, false);
    out->source = Expr(g->source);
    out->element = Expr(element);
    if (g->filter) out->filter = Expr(g->filter);
    if (g->key) {
      if (g->orderKw->getText() != "order" || g->byKw->getText() != "by")
        diags_.Error(Join(RangeOf(g->orderKw), RangeOf(g->byKw)),
                     fmt::format("expected `order by`, not `{} {}`", g->orderKw->getText(),
                                 g->byKw->getText()));
      out->order_key = Expr(g->key);
      if (g->dir) {
        std::string dir = g->dir->getText();
        out->descending = dir == "desc";
        if (dir != "asc" && dir != "desc")
          diags_.Error(RangeOf(g->dir), fmt::format("expected `asc` or `desc`, not `{}`", dir));
      }
    }
    return out;
  }

  ExprPtr Primary(P::PrimaryContext* c) {
    DepthGuard g(this, RangeOf(c));
    SourceRange r = RangeOf(c);
    if (auto* e = dynamic_cast<P::IntLitContext*>(c)) {
      std::string text = e->value->getText();
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE) {
        diags_.Error(r, fmt::format("integer literal {} is out of range (max 9223372036854775807)", text));
        v = 0;
      }
      return std::make_unique<IntLit>(r, v);
    }
    if (auto* e = dynamic_cast<P::FloatLitContext*>(c))
      return std::make_unique<FloatLit>(r, std::strtod(e->value->getText().c_str(), nullptr));
    if (auto* e = dynamic_cast<P::StringLitContext*>(c))
      return std::make_unique<StringLit>(r, Str(e->value));
    if (auto* e = dynamic_cast<P::DurationLitContext*>(c)) {
      auto ns = ParseDurationText(e->value->getText(), true);
      if (!ns) diags_.Error(r, fmt::format("malformed duration `{}`", e->value->getText()));
      return std::make_unique<DurationLit>(r, ns.value_or(0));
    }
    if (auto* e = dynamic_cast<P::QuantityLitContext*>(c)) {
      auto q = ParseQuantityText(e->value->getText());
      if (!q) diags_.Error(r, fmt::format("malformed quantity `{}`", e->value->getText()));
      return std::make_unique<QuantityLit>(r, q.value_or(0), e->value->getText());
    }
    if (auto* e = dynamic_cast<P::BoolLitContext*>(c))
      return std::make_unique<BoolLit>(r, e->value->getText() == "true");
    if (dynamic_cast<P::NoneLitContext*>(c)) return std::make_unique<NoneLit>(r);
    if (auto* e = dynamic_cast<P::NameContext*>(c))
      return std::make_unique<NameRef>(r, e->name->getText());
    if (auto* e = dynamic_cast<P::ParenContext*>(c)) {
      if (e->rest.empty()) return Expr(e->inner);
      auto out = std::make_unique<TupleLit>(r);
      out->elements.push_back(Expr(e->inner));
      for (auto* x : e->rest) out->elements.push_back(Expr(x));
      return out;
    }
    if (auto* e = dynamic_cast<P::ListLitContext*>(c)) {
      if (e->gen) return Comprehend(r, Aggregate::List, e->elements.front(), e->gen);
      auto out = std::make_unique<ListLit>(r);
      for (auto* x : e->elements) out->elements.push_back(Expr(x));
      return out;
    }
    if (auto* e = dynamic_cast<P::MapLitContext*>(c)) {
      auto out = std::make_unique<MapLit>(r);
      for (auto* m : e->entries) out->entries.push_back(Entry(m, /*name_is_string=*/false));
      return out;
    }
    if (auto* e = dynamic_cast<P::RecordLitContext*>(c)) {
      auto out = std::make_unique<RecordLit>(r, e->type->getText(), RangeOf(e->type));
      for (auto* f : e->fields)
        out->fields.push_back({f->name->getText(), RangeOf(f->name), Expr(f->value), -1});
      return out;
    }
    auto* e = dynamic_cast<P::ResourceLitContext*>(c);
    auto out = std::make_unique<ResourceLit>(r);
    for (auto* m : e->entries) out->entries.push_back(Entry(m, /*name_is_string=*/true));
    return out;
  }

  // In `resource{cpu: 1}` a bare name is the dimension name; in a map literal it is a variable.
  MapEntry Entry(P::MapEntryContext* m, bool name_is_string) {
    MapEntry entry;
    if (m->keyName) {
      if (name_is_string)
        entry.key = std::make_unique<StringLit>(RangeOf(m->keyName), m->keyName->getText());
      else
        entry.key = std::make_unique<NameRef>(RangeOf(m->keyName), m->keyName->getText());
    } else {
      entry.key = Expr(m->keyExpr);
    }
    entry.value = Expr(m->value);
    return entry;
  }

  const AstBuildOptions& options_;
  DiagnosticList& diags_;
  int depth_ = 0;
};

}  // namespace

std::unique_ptr<ast::Policy> BuildAst(void* tree, const std::string& path,
                                      const AstBuildOptions& options, DiagnosticList& diags) {
  Builder builder(options, diags);
  try {
    return builder.File(static_cast<P::PolicyFileContext*>(tree), path);
  } catch (const TooDeep& e) {
    diags.Error(e.where, fmt::format("expression nested too deeply (the limit is {} levels)",
                                    options.reported_limit));
    return nullptr;
  }
}

}  // namespace kiln
