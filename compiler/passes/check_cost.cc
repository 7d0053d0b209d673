// Pass: every handler's worst-case cost, as a polynomial in the sizes of what it iterates, stays
// within a budget at the largest cluster Kiln is meant for (CEL's cost estimator, for loops).
//
// A step is a statement, a call or one loop iteration. A loop over S costs |S| × (1 + its body);
// a call to a policy `fn` costs the callee's body with the callee's list parameters sized by the
// arguments (no recursion: check_recursion.cc). Sizes are symbols (CostLimits::bounds):
//   nodes, jobs, queues          session.nodes / .jobs / .queues, a handler's list<Node>
//   candidates                   a handler's list<Task> (victim candidates, ...)
//   tasks_per_job, tasks_per_node   job.tasks, node.tasks
//   resources, labels, terms     resource names, label/annotation maps, a pod's short lists
//                                (also the parts `split` cuts a label or annotation value into)
//   args                         a list or map from scheduler.conf
//   collection                   anything else: lists and maps of strings and numbers built at
//                                run time: queue paths, topology domains, keys (a collection of
//                                views is sized by its element or key kind: a map<Job, T> has at
//                                most `jobs` entries)
//   text                         the bytes of a string read from the cluster, an argument or
//                                anything not built below (a label value: 63 at most)
//   built                        the bytes of a string a loop doubles (`s = s + s`): bounded
//                                only by the call's memory budget
// Builtins that walk or build strings cost their bytes (issue 28) once a string's length grows
// with the loops that build it; on strings of bounded length (constants and `text`) the work is
// part of the step that does it. `a + b` builds both sides
// (`s = s + part` appends in place at run time, so it costs the part), `contains` walks its
// haystack, `split` its string (twice: the walk and the parts), the JSON helpers eight times their
// text (the document they build), `http_post` its body, a comparison (`==`, `<`, ...) the shorter
// side. A string variable grown in a loop is as
// long as its start plus the trip count times what each iteration appends.
// At the bounds, nodes*tasks_per_node and jobs*tasks_per_job count as `tasks` (all the pods).
// and constants (`range(10)`, a list literal). `let` locals carry their initialiser's size; a
// comprehension's list is no longer than its source.
//
//   before: `for i in range(1000000) { for j in range(1000000) { ... } }`
//   after:  error "handler `node_order` may take 2e+12 steps ... over the budget of 1e+11"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/passes/passes.h"
#include "compiler/passes/walk.h"

namespace kiln::passes {

namespace {

using namespace ast;

// The size symbols, in name order: a formula lists a term's symbols in this order.
enum class Sym : uint8_t {
  args, built, candidates, collection, jobs, labels, nodes, queues, resources, tasks,
  tasks_per_job, tasks_per_node, terms, text,
};
constexpr std::array<std::string_view, 14> kSymbolNames = {
    "args",   "built",     "candidates", "collection",    "jobs",           "labels", "nodes",
    "queues", "resources", "tasks",      "tasks_per_job", "tasks_per_node", "terms",  "text"};
constexpr size_t kSymbols = kSymbolNames.size();
static_assert(kSymbols == static_cast<size_t>(Sym::text) + 1, "one name per Sym, in its order");

// A polynomial in the symbols: terms, each a monomial (how many times each symbol appears, a
// loop nest's sizes multiplied) and its coefficient. Terms are kept in the order of their
// formulas' names ("jobs*nodes" before "nodes"), as a map keyed by the sorted names would, so that
// sums and formulas come out in one order; a coefficient that cancels to 0 keeps its term.
using Monomial = std::array<uint16_t, kSymbols>;
struct Term {
  Monomial m{};
  double c = 0;
};
using Poly = std::vector<Term>;

// Whether `b` has a symbol after symbol `i`.
bool HasAfter(const Monomial& b, size_t i) {
  for (size_t j = i + 1; j < kSymbols; ++j)
    if (b[j] != 0) return true;
  return false;
}

// The order of the monomials' sorted name lists, compared word by word.
bool NameOrderLess(const Monomial& a, const Monomial& b) {
  for (size_t i = 0; i < kSymbols; ++i) {
    if (a[i] == b[i]) continue;
    // The lists agree up to here. The one with more of symbol i has it where the other has a
    // later symbol, which sorts after it, or has ended, which sorts first.
    return a[i] > b[i] ? HasAfter(b, i) : !HasAfter(a, i);
  }
  return false;
}

bool IsConstant(const Monomial& m) {
  return std::all_of(m.begin(), m.end(), [](uint16_t e) { return e == 0; });
}

Poly Constant(double c) { return c == 0 ? Poly{} : Poly{Term{Monomial{}, c}}; }
Poly Symbol(Sym s) {
  Term t{Monomial{}, 1.0};
  t.m[static_cast<size_t>(s)] = 1;
  return Poly{t};
}

Poly Add(const Poly& a, const Poly& b) {
  if (b.empty()) return a;
  if (a.empty()) return b;
  Poly out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && NameOrderLess(a[i].m, b[j].m))) {
      out.push_back(a[i++]);
    } else if (i == a.size() || NameOrderLess(b[j].m, a[i].m)) {
      out.push_back(b[j++]);
    } else {
      out.push_back(Term{a[i].m, a[i].c + b[j].c});
      ++i, ++j;
    }
  }
  return out;
}

Poly Mul(const Poly& a, const Poly& b) {
  Poly products;
  products.reserve(a.size() * b.size());
  for (const Term& ta : a)
    for (const Term& tb : b) {
      Term t{ta.m, ta.c * tb.c};
      // Saturates: a degree that large is over any budget already.
      for (size_t k = 0; k < kSymbols; ++k)
        t.m[k] = static_cast<uint16_t>(std::min<uint32_t>(uint32_t{t.m[k]} + tb.m[k], 0xffff));
      products.push_back(t);
    }
  // Equal monomials are summed in the order they were made.
  std::stable_sort(products.begin(), products.end(),
                   [](const Term& x, const Term& y) { return NameOrderLess(x.m, y.m); });
  Poly out;
  for (const Term& t : products) {
    if (!out.empty() && out.back().m == t.m) {
      out.back().c += t.c;
    } else {
      out.push_back(Term{t.m, 0.0 + t.c});
    }
  }
  return out;
}

// The bounds as an array indexed by symbol (1 for a symbol without one).
using Bounds = std::array<double, kSymbols>;
Bounds BoundsOf(const std::map<std::string, double>& bounds) {
  Bounds out;
  for (size_t i = 0; i < kSymbols; ++i) {
    auto it = bounds.find(std::string(kSymbolNames[i]));
    out[i] = it == bounds.end() ? 1.0 : it->second;
  }
  return out;
}

// A monomial's value at the bounds, with the nested pairs whose product is bounded by a total: a
// loop over node.tasks inside a loop over the nodes visits each task once (nodes*tasks_per_node
// ≤ tasks), and likewise jobs*tasks_per_job ≤ tasks. (Sound for the usual nest, where the inner
// loop iterates the outer loop's node or job.)
double Eval(const Poly& p, const Bounds& bounds) {
  double total = 0;
  for (const Term& t : p) {
    Monomial m = t.m;
    for (auto [outer, inner] : {std::pair{Sym::nodes, Sym::tasks_per_node},
                                std::pair{Sym::jobs, Sym::tasks_per_job}}) {
      auto& o = m[static_cast<size_t>(outer)];
      auto& i = m[static_cast<size_t>(inner)];
      const uint16_t pairs = std::min(o, i);
      o -= pairs;
      i -= pairs;
      auto& tasks = m[static_cast<size_t>(Sym::tasks)];
      tasks = static_cast<uint16_t>(std::min<uint32_t>(uint32_t{tasks} + pairs, 0xffff));
    }
    double v = t.c;
    for (size_t k = 0; k < kSymbols; ++k)
      for (uint16_t e = 0; e < m[k]; ++e) v *= bounds[k];
    total += v;
  }
  return total;
}

std::string Number(double v) {
  if (v < 1e6 && v == std::floor(v)) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.3g}", v);
}

// Highest degree first, then by name: "nodes*tasks_per_node + 3*nodes + 12".
std::string Format(const Poly& p) {
  std::vector<std::pair<std::vector<std::string_view>, double>> terms;
  for (const Term& t : p) {
    if (t.c == 0) continue;
    std::vector<std::string_view> names;
    for (size_t k = 0; k < kSymbols; ++k) names.insert(names.end(), t.m[k], kSymbolNames[k]);
    terms.emplace_back(std::move(names), t.c);
  }
  if (terms.empty()) return "0";
  std::stable_sort(terms.begin(), terms.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  for (const auto& [m, c] : terms) {
    if (!out.empty()) out += " + ";
    std::string syms;
    for (std::string_view s : m) {
      if (!syms.empty()) syms += "*";
      syms += s;
    }
    if (syms.empty())
      out += Number(c);
    else if (c == 1)
      out += syms;
    else
      out += Number(c) + "*" + syms;
  }
  return out;
}

const std::vector<MapEntry>& Entries(const ast::Expr* e) {
  if (auto* r = As<ResourceLit>(e)) return r->entries;
  return static_cast<const MapLit*>(e)->entries;
}

class CostEstimator {
 public:
  explicit CostEstimator(const CostLimits& limits) : bounds_at_limits_(BoundsOf(limits.bounds)) {}

  // The cost of one call of `c`, with its list parameters sized by `param_sizes`.
  Poly Callable(const ast::Callable& c, const std::map<const Local*, Poly>& param_sizes,
                const std::map<const Local*, Poly>& param_elem_sizes = {}) {
    auto saved = sizes_;
    auto saved_elems = elem_sizes_;
    for (const auto& [local, size] : param_sizes) sizes_[local] = size;
    for (const auto& [local, size] : param_elem_sizes) elem_sizes_[local] = size;
    if (growth_collected_.insert(&c).second) CollectGrowth(c.body.get(), Constant(1));
    Poly cost = Add(Constant(1), Block(c.body.get()));
    sizes_ = std::move(saved);
    elem_sizes_ = std::move(saved_elems);
    return cost;
  }

  // The outermost loop of the handler just estimated that costs the most at the bounds.
  const Node* worst_loop() const { return worst_loop_; }
  double worst_loop_cost() const { return worst_loop_cost_; }

 private:
  Poly Block(const ast::Block* b) {
    Poly cost;
    if (!b) return cost;
    for (const auto& s : b->stmts) cost = Add(std::move(cost), Stmt(s.get()));
    return cost;
  }

  Poly Stmt(const ast::Stmt* s) {
    if (!s) return {};
    Poly cost = Constant(1);
    switch (s->kind) {
      case NodeKind::Let: {
        auto* l = static_cast<const Let*>(s);
        if (IsString(l->value.get())) {
          str_sizes_[l->local.get()] = GrownSize(l->local.get(), StrLen(l->value.get()));
          StringBoundsChanged();
        }
        if (!l->local->is_mutable) {
          sizes_[l->local.get()] = Size(l->value.get());
          if (NestedCollection(l->value.get())) elem_sizes_[l->local.get()] = ElemSize(l->value.get());
        }
        return Add(cost, Expr(l->value.get()));
      }
      case NodeKind::Assign: {
        auto* a = static_cast<const Assign*>(s);
        cost = Add(Add(cost, Expr(a->target.get())), Expr(a->value.get()));
        // `s = s + part` / `s += part`: appended in place at run time, so the copies of `s` the
        // concatenations along the left spine were charged are not made.
        if (const Local* target = StringLocal(a->target.get())) {
          int spine = a->op == AssignOp::Add ? 1 : 0;
          if (a->op == AssignOp::Add)
            cost = Add(cost, Bytes(Add(StrLen(a->target.get()), StrLen(a->value.get()))));
          const ast::Expr* e = a->value.get();
          if (a->op == AssignOp::Set) {
            while (auto* b = As<Binary>(e)) {
              if (b->op != BinaryOp::Add) break;
              ++spine;
              e = b->left.get();
            }
            if (StringLocal(e) != target) spine = 0;
          }
          if (spine > 0) cost = Add(cost, Mul(Constant(-spine), Bytes(StrLen(a->target.get()))));
        }
        return cost;
      }
      case NodeKind::If: {
        auto* i = static_cast<const If*>(s);
        // Both branches: the bound holds whichever runs.
        return Add(Add(Add(cost, Expr(i->cond.get())), Block(i->then.get())), Stmt(i->otherwise.get()));
      }
      case NodeKind::IfLet: {
        auto* i = static_cast<const IfLet*>(s);
        return Add(Add(Add(cost, Expr(i->value.get())), Block(i->then.get())), Stmt(i->otherwise.get()));
      }
      case NodeKind::For: {
        auto* f = static_cast<const For*>(s);
        // A loop over a list of lists: each element is as long as the source's elements.
        if (f->first && !f->second && NestedCollection(f->source.get()))
          sizes_[f->first.get()] = ElemSize(f->source.get());
        return Add(cost, Loop(f, f->source.get(), [&] { return Block(f->body.get()); }));
      }
      case NodeKind::Return: {
        auto* r = static_cast<const Return*>(s);
        if (returns_ != nullptr && r->value)
          returns_->push_back({Size(r->value.get()), NestedCollection(r->value.get())
                                                         ? ElemSize(r->value.get())
                                                         : Poly{}});
        return Add(cost, Expr(r->value.get()));
      }
      case NodeKind::Block: return Block(static_cast<const ast::Block*>(s));
      case NodeKind::ExprStmt: return Add(cost, Expr(static_cast<const ExprStmt*>(s)->value.get()));
      default: return cost;
    }
  }

  // |source| × (1 + body); records the outermost loop that costs the most.
  Poly Loop(const Node* at, const ast::Expr* source, const std::function<Poly()>& body) {
    ++depth_;
    Poly cost = Add(Expr(source), Mul(Size(source), Add(Constant(1), body())));
    --depth_;
    if (depth_ == 0) {
      double v = Eval(cost, bounds_at_limits_);
      if (v > worst_loop_cost_) {
        worst_loop_cost_ = v;
        worst_loop_ = at;
      }
    }
    return cost;
  }

  Poly Expr(const ast::Expr* e) {
    if (!e) return {};
    switch (e->kind) {
      case NodeKind::Unary: return Expr(static_cast<const Unary*>(e)->operand.get());
      case NodeKind::Binary: {
        auto* b = static_cast<const Binary*>(e);
        Poly cost = Add(Expr(b->left.get()), Expr(b->right.get()));
        // Membership in a list scans it.
        if (b->op == BinaryOp::In && b->right->type && b->right->type->kind == TypeKind::List)
          cost = Add(cost, Size(b->right.get()));
        // A substring test walks the string; a concatenation builds both sides.
        if (b->op == BinaryOp::In && IsString(b->right.get()))
          cost = Add(cost, Bytes(StrLen(b->right.get())));
        if (b->op == BinaryOp::Add && IsString(e))
          cost = Add(cost, Bytes(Add(StrLen(b->left.get()), StrLen(b->right.get()))));
        // A comparison of two strings walks at most the shorter one: nothing more to count when
        // either side's length is bounded, else the left side's bound (not below the shorter).
        if (IsComparison(b->op) && IsString(b->left.get()) && IsString(b->right.get())) {
          Poly l = Bytes(StrLen(b->left.get())), r = Bytes(StrLen(b->right.get()));
          if (!l.empty() && !r.empty()) cost = Add(cost, l);
        }
        // Tuples compare element by element: the left side's strings at most.
        if (IsComparison(b->op) && IsTuple(b->left.get()))
          cost = Add(cost, Bytes(TupleBytes(b->left.get())));
        return cost;
      }
      case NodeKind::Conditional: {
        auto* c = static_cast<const Conditional*>(e);
        return Add(Add(Expr(c->cond.get()), Expr(c->then.get())), Expr(c->otherwise.get()));
      }
      case NodeKind::Select: return Expr(static_cast<const Select*>(e)->operand.get());
      case NodeKind::Index: {
        auto* i = static_cast<const Index*>(e);
        return Add(Expr(i->operand.get()), Expr(i->index.get()));
      }
      case NodeKind::Call: return CallCost(static_cast<const Call*>(e));
      case NodeKind::Comprehension: {
        auto* c = static_cast<const Comprehension*>(e);
        if (c->first && !c->second && NestedCollection(c->source.get()))
          sizes_[c->first.get()] = ElemSize(c->source.get());
        return Loop(c, c->source.get(), [&] {
          return Add(Add(Expr(c->element.get()), Expr(c->filter.get())), Expr(c->order_key.get()));
        });
      }
      case NodeKind::ListLit: {
        Poly cost;
        for (const auto& el : static_cast<const ListLit*>(e)->elements) cost = Add(cost, Expr(el.get()));
        return cost;
      }
      case NodeKind::MapLit:
      case NodeKind::ResourceLit: {
        Poly cost;
        for (const auto& en : Entries(e)) cost = Add(Add(cost, Expr(en.key.get())), Expr(en.value.get()));
        return cost;
      }
      case NodeKind::RecordLit: {
        Poly cost;
        for (const auto& f : static_cast<const RecordLit*>(e)->fields) cost = Add(cost, Expr(f.value.get()));
        return cost;
      }
      case NodeKind::TupleLit: {
        // Building the tuple, and the map key it becomes, copies its strings, as `a + b` does.
        Poly cost = Bytes(TupleBytes(e));
        for (const auto& el : static_cast<const TupleLit*>(e)->elements) cost = Add(cost, Expr(el.get()));
        return cost;
      }
      default: return {};
    }
  }

  Poly CallCost(const Call* c) {
    Poly cost = Add(Constant(1), Expr(c->receiver.get()));
    for (const auto& a : c->args) cost = Add(cost, Expr(a.get()));
    // `xs.contains(x)` scans the list as `x in xs` does; `keys`/`values` copy the map.
    if (c->method == BuiltinMethod::ListContains || c->method == BuiltinMethod::MapKeys ||
        c->method == BuiltinMethod::MapValues)
      cost = Add(cost, Size(c->receiver.get()));
    cost = Add(cost, BuiltinBytes(c));
    if (c->call == CallKind::Function && c->fn) {
      auto [params, elems] = ParamSizes(*c);
      ++depth_;  // the callee's loops are part of the caller's nest
      auto* saved_returns = returns_;
      returns_ = nullptr;  // the callee's returns are not the caller's
      cost = Add(cost, Callable(*c->fn, params, elems));
      returns_ = saved_returns;
      --depth_;
    }
    return cost;
  }

  // The bound `of` gives an expression that passes a value on: a conditional's larger branch, a
  // named constant's value; none for any other expression (Size and StrLen share these).
  template <typename Of>
  std::optional<Poly> PassedOn(const ast::Expr* e, Of of) {
    if (const auto* c = ast::As<Conditional>(e))
      return Larger(of(c->then.get()), of(c->otherwise.get()));
    if (const auto* n = ast::As<NameRef>(e); n && n->ref == NameKind::Const && n->const_decl)
      return of(n->const_decl->value.get());
    return std::nullopt;
  }

  // An upper bound on the number of elements of a list/map-valued expression.
  Poly Size(const ast::Expr* e) {
    if (!e) return {};
    if (auto passed = PassedOn(e, [&](const ast::Expr* x) { return Size(x); })) return *passed;
    switch (e->kind) {
      case NodeKind::ListLit: return Constant(static_cast<double>(static_cast<const ListLit*>(e)->elements.size()));
      case NodeKind::MapLit:
      case NodeKind::ResourceLit: return Constant(static_cast<double>(Entries(e).size()));
      case NodeKind::Comprehension: return Size(static_cast<const Comprehension*>(e)->source.get());
      case NodeKind::NameRef: {
        auto* n = static_cast<const NameRef*>(e);
        if (n->ref == NameKind::Local) {
          auto it = sizes_.find(n->local);
          if (it != sizes_.end()) return it->second;
          return ByType(e, Sym::collection);
        }
        if (n->ref == NameKind::Arg) return Symbol(Sym::args);
        return ByType(e, Sym::collection);
      }
      case NodeKind::Select: {
        auto* s = static_cast<const Select*>(e);
        std::string owner = s->operand->type ? s->operand->type->Name() : "";
        std::string key = owner + "." + s->field;
        if (key == "Session.nodes" || key == "Session.affinity_nodes") return Symbol(Sym::nodes);
        if (key == "Session.jobs" || key == "Queue.jobs") return Symbol(Sym::jobs);
        if (key == "Session.queues" || key == "Queue.children") return Symbol(Sym::queues);
        if (key == "Job.tasks") return Symbol(Sym::tasks_per_job);
        if (key == "Node.tasks" || key == "Node.affinity_tasks") return Symbol(Sym::tasks_per_node);
        if (key == "Resource.names") return Symbol(Sym::resources);
        if (e->type && e->type->kind == TypeKind::Map) return Symbol(Sym::labels);
        if (s->view_field >= 0 || s->shape_field >= 0) return Symbol(Sym::terms);
        return ByType(e, Sym::collection);
      }
      case NodeKind::Binary: {
        // Concatenating lists: no longer than both together.
        auto* b = static_cast<const Binary*>(e);
        if (b->op == BinaryOp::Add && IsCollection(e)) return Add(Size(b->left.get()), Size(b->right.get()));
        return ByType(e, Sym::collection);
      }
      case NodeKind::Call: {
        auto* c = static_cast<const Call*>(e);
        if (c->call == CallKind::Builtin && c->callee == "range") return RangeSize(c);
        // A policy fn answers the largest of what its `return`s build, with its list parameters
        // sized by the arguments: `return [chain[i]]` is one element, not every queue.
        if (c->call == CallKind::Function && c->fn && c->fn->body) return ReturnSizes(*c).first;
        // The parts of a label, annotation or argument string are one of its short lists; a
        // string a loop built has up to a part per byte.
        if ((c->call == CallKind::Std || c->call == CallKind::Method) &&
            c->method == BuiltinMethod::None && c->callee == "split") {
          if (!c->args.empty() && Mentions(StrLen(c->args[0].get()), Sym::built))
            return Add(StrLen(c->args[0].get()), Constant(1));
          return Symbol(Sym::terms);
        }
        // append(xs, x): one more than xs.
        if ((c->call == CallKind::Std || c->call == CallKind::Method) &&
            c->method == BuiltinMethod::None && c->callee == "append") {
          const ast::Expr* xs = c->receiver ? c->receiver.get()
                                            : (c->args.empty() ? nullptr : c->args[0].get());
          if (xs) return Add(Size(xs), Constant(1));
        }
        // A function of a list (sort, filter, keys, ...) answers at most as many elements as the
        // list it is given, when it is given one.
        if (c->receiver && IsCollection(c->receiver.get())) return Size(c->receiver.get());
        for (const auto& a : c->args)
          if (IsCollection(a.get())) return Size(a.get());
        return ByType(e, Sym::collection);
      }
      default: return ByType(e, Sym::collection);
    }
  }

  // The sizes (and element sizes, for lists of lists) a call passes to a fn's parameters.
  std::pair<std::map<const Local*, Poly>, std::map<const Local*, Poly>> ParamSizes(const Call& c) {
    std::map<const Local*, Poly> params, elems;
    for (size_t i = 0; i < c.fn->params.size() && i < c.args.size(); ++i) {
      const Local* p = c.fn->params[i].local.get();
      params[p] = Size(c.args[i].get());
      if (NestedCollection(c.args[i].get())) elems[p] = ElemSize(c.args[i].get());
    }
    return {std::move(params), std::move(elems)};
  }

  // The largest size (and element size) among what a fn's `return`s build for this call.
  std::pair<Poly, Poly> ReturnSizes(const Call& c) {
    auto [params, elems] = ParamSizes(c);
    std::vector<std::pair<Poly, Poly>> returns;
    auto* saved_returns = returns_;
    returns_ = &returns;
    ++depth_;  // not a loop nest of the handler being estimated
    Callable(*c.fn, params, elems);
    --depth_;
    returns_ = saved_returns;
    if (returns.empty()) return {ByType(&c, Sym::collection), Symbol(Sym::collection)};
    std::pair<Poly, Poly> largest = returns.front();
    for (size_t i = 1; i < returns.size(); ++i) {
      largest.first = Larger(largest.first, returns[i].first);
      largest.second = Larger(largest.second, returns[i].second);
    }
    return largest;
  }

  // A list whose elements are lists or maps.
  static bool NestedCollection(const ast::Expr* e) {
    return e && e->type && e->type->kind == TypeKind::List && e->type->elem &&
           (e->type->elem->kind == TypeKind::List || e->type->elem->kind == TypeKind::Map);
  }

  // An upper bound on the size of each element of a list of lists.
  Poly ElemSize(const ast::Expr* e) {
    if (!e) return {};
    switch (e->kind) {
      case NodeKind::NameRef: {
        auto* n = static_cast<const NameRef*>(e);
        if (n->ref == NameKind::Local) {
          auto it = elem_sizes_.find(n->local);
          if (it != elem_sizes_.end()) return it->second;
        }
        return Symbol(Sym::collection);
      }
      case NodeKind::Comprehension: {
        auto* c = static_cast<const Comprehension*>(e);
        if (c->first && !c->second && NestedCollection(c->source.get()))
          sizes_[c->first.get()] = ElemSize(c->source.get());
        return Size(c->element.get());
      }
      case NodeKind::Conditional: {
        auto* c = static_cast<const Conditional*>(e);
        return Larger(ElemSize(c->then.get()), ElemSize(c->otherwise.get()));
      }
      case NodeKind::ListLit: {
        Poly largest;
        for (const auto& el : static_cast<const ListLit*>(e)->elements) largest = Larger(largest, Size(el.get()));
        return largest;
      }
      case NodeKind::Binary: {
        auto* b = static_cast<const Binary*>(e);
        if (b->op == BinaryOp::Add) return Larger(ElemSize(b->left.get()), ElemSize(b->right.get()));
        return Symbol(Sym::collection);
      }
      case NodeKind::Call: {
        auto* c = static_cast<const Call*>(e);
        if (c->call == CallKind::Function && c->fn && c->fn->body) return ReturnSizes(*c).second;
        return Symbol(Sym::collection);
      }
      default: return Symbol(Sym::collection);
    }
  }

  // ---- string bytes ----
  static bool IsComparison(BinaryOp op) {
    return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::Lt || op == BinaryOp::Le ||
           op == BinaryOp::Gt || op == BinaryOp::Ge;
  }
  static bool IsString(const ast::Expr* e) {
    return e && e->type && e->type->kind == TypeKind::String;
  }
  static bool IsTuple(const ast::Expr* e) {
    return e && e->type && e->type->kind == TypeKind::Tuple;
  }
  // An upper bound on the bytes of a tuple's string elements (its fixed-size elements are part
  // of the step): a literal's strings as written, any other tuple's as cluster text.
  Poly TupleBytes(const ast::Expr* e) {
    Poly bytes;
    if (auto* t = As<TupleLit>(e)) {
      for (const auto& el : t->elements)
        if (IsString(el.get())) bytes = Add(bytes, StrLen(el.get()));
      return bytes;
    }
    for (const Type* el : e->type->elems)
      if (el->kind == TypeKind::String) bytes = Add(bytes, Symbol(Sym::text));
    return bytes;
  }
  // The local a string expression names, or null.
  static const Local* StringLocal(const ast::Expr* e) {
    auto* n = As<NameRef>(e);
    return n && n->ref == NameKind::Local && IsString(e) ? n->local : nullptr;
  }
  static bool Mentions(const Poly& p, Sym symbol) {
    for (const Term& t : p)
      if (t.c != 0 && t.m[static_cast<size_t>(symbol)] != 0) return true;
    return false;
  }
  static int Occurrences(const ast::Expr* e, const Local* local) {
    int n = 0;
    Walker w;
    w.on_expr = [&](ast::Expr* x) {
      if (auto* r = As<NameRef>(x); r && r->ref == NameKind::Local && r->local == local) ++n;
    };
    w.Expr(const_cast<ast::Expr*>(e));
    return n;
  }

  // The steps `bytes` of string work cost: none while the length is bounded by constants and
  // cluster strings alone (`text`: a name, a label value; such work is part of the step that does
  // it), the bytes themselves once it grows with the loops that build it.
  static Poly Bytes(const Poly& bytes) {
    for (const Term& t : bytes)
      for (size_t k = 0; k < kSymbols; ++k)
        if (t.c != 0 && t.m[k] != 0 && k != static_cast<size_t>(Sym::text)) return bytes;
    return {};
  }

  // An upper bound on the length of a string expression, in bytes. Kept per expression until a
  // string variable's bound changes: the estimate of a `+` chain asks for the length of each of
  // its prefixes, and walking each prefix again made a chain of n terms cost n² (2,000 terms took
  // 1.9 s to check).
  Poly StrLen(const ast::Expr* e) {
    if (!e) return {};
    if (e->kind != NodeKind::Binary) return StrLenOf(e);  // only chains are asked for again
    auto it = str_len_.find(e);
    if (it != str_len_.end() && it->second.first == str_bounds_version_) return it->second.second;
    Poly len = StrLenOf(e);
    str_len_[e] = {str_bounds_version_, len};
    return len;
  }
  // What StrLen reads changed: the lengths kept are stale.
  void StringBoundsChanged() { ++str_bounds_version_; }

  Poly StrLenOf(const ast::Expr* e) {
    if (auto passed = PassedOn(e, [&](const ast::Expr* x) { return StrLen(x); })) return *passed;
    switch (e->kind) {
      case NodeKind::StringLit:
        return Constant(static_cast<double>(static_cast<const StringLit*>(e)->value.size()));
      case NodeKind::Binary: {
        auto* b = static_cast<const Binary*>(e);
        if (b->op == BinaryOp::Add) return Add(StrLen(b->left.get()), StrLen(b->right.get()));
        if (b->op == BinaryOp::Coalesce) return Larger(StrLen(b->left.get()), StrLen(b->right.get()));
        break;
      }
      case NodeKind::NameRef: {
        auto* n = static_cast<const NameRef*>(e);
        if (n->ref == NameKind::Local) {
          if (auto it = str_sizes_.find(n->local); it != str_sizes_.end()) return it->second;
          return GrownSize(n->local, Symbol(Sym::text));
        }
        break;
      }
      default: break;
    }
    return Symbol(Sym::text);
  }

  // A string variable's bound: its initial length plus what the loops around its assignments
  // append (CollectGrowth); `built` when a loop doubles it.
  Poly GrownSize(const Local* local, Poly initial) {
    if (doubled_.count(local)) return Symbol(Sym::built);
    if (auto it = assigned_.find(local); it != assigned_.end()) initial = Larger(initial, it->second);
    if (auto it = growth_.find(local); it != growth_.end()) initial = Add(initial, it->second);
    return initial;
  }

  // Before a callable is estimated: how much each string variable can grow. An assignment
  // `s = ... s ... + part` inside loops that run `trips` times in all appends `part` each time;
  // one that uses `s` twice or more (`s = s + s`) doubles it; any other assignment sets it to
  // at most its value's length.
  void CollectGrowth(const ast::Stmt* s, const Poly& trips) {
    if (!s) return;
    switch (s->kind) {
      case NodeKind::Block:
        for (const auto& st : static_cast<const ast::Block*>(s)->stmts) CollectGrowth(st.get(), trips);
        return;
      case NodeKind::If: {
        auto* i = static_cast<const If*>(s);
        CollectGrowth(i->then.get(), trips);
        CollectGrowth(i->otherwise.get(), trips);
        return;
      }
      case NodeKind::IfLet: {
        auto* i = static_cast<const IfLet*>(s);
        CollectGrowth(i->then.get(), trips);
        CollectGrowth(i->otherwise.get(), trips);
        return;
      }
      case NodeKind::For: {
        auto* f = static_cast<const For*>(s);
        // Sizing the loop here must not settle what the estimate proper works out later, with
        // the `let`s before the loop known: range bounds are expanded once and kept (Bound).
        auto saved_bounds = bounds_;
        auto saved_lets = let_values_;
        Poly n = Size(f->source.get());
        bounds_ = std::move(saved_bounds);
        let_values_ = std::move(saved_lets);
        CollectGrowth(f->body.get(), Mul(trips, n));
        return;
      }
      case NodeKind::Assign: {
        auto* a = static_cast<const Assign*>(s);
        const Local* target = StringLocal(a->target.get());
        if (!target) return;
        int uses = Occurrences(a->value.get(), target) + (a->op == AssignOp::Add ? 1 : 0);
        if (uses >= 2) {
          doubled_.insert(target);
          StringBoundsChanged();
          return;
        }
        // What the value adds besides the variable itself.
        auto saved = str_sizes_;
        str_sizes_[target] = Poly{};
        StringBoundsChanged();
        Poly part = StrLen(a->value.get());
        str_sizes_ = std::move(saved);
        if (uses == 1)
          growth_[target] = Add(growth_[target], Mul(trips, part));
        else
          assigned_[target] = Larger(assigned_[target], part);
        StringBoundsChanged();
        return;
      }
      default: return;
    }
  }

  // The bytes a standard-library call walks or builds (run time: ChargeHostWork).
  Poly BuiltinBytes(const Call* c) {
    if (c->call != CallKind::Std && c->call != CallKind::Method) return {};
    if (c->method != BuiltinMethod::None) return {};  // collection methods are costed by size
    std::vector<const ast::Expr*> args;
    if (c->receiver) args.push_back(c->receiver.get());
    for (const auto& a : c->args) args.push_back(a.get());
    auto str = [&](size_t i) {
      return i < args.size() && IsString(args[i]) ? Bytes(StrLen(args[i])) : Poly{};
    };
    const std::string& f = c->callee;
    if (f == "contains" || f == "trim" || f == "parse_int" || f == "parse_float" ||
        f == "parse_duration" || f == "quantity" || f == "parse_quantity" || f == "parse_bool")
      return str(0);
    if (f == "starts_with" || f == "ends_with") return str(1);
    if (f == "split") return Mul(Constant(2), str(0));
    if (f == "json_quote") return Mul(Constant(2), str(0));
    if (f == "to_upper") return str(0);
    if (f == "coded" || f == "reject_with") return Add(str(0), str(1));
    if (f == "set_pod_annotation") return Add(str(1), str(2));
    if (f.starts_with("json_") || f.starts_with("parse_json_")) return Mul(Constant(8), str(0));
    if (f == "http_post") return str(1);
    return {};
  }

  static bool IsCollection(const ast::Expr* e) {
    return e && e->type && (e->type->kind == TypeKind::List || e->type->kind == TypeKind::Map);
  }

  // A collection of views has at most as many elements as the cluster has views of that kind:
  // a list of nodes, a map keyed by job (one entry per key).
  Poly ByType(const ast::Expr* e, Sym fallback) {
    const Type* t = e->type;
    const Type* of = !t ? nullptr : t->kind == TypeKind::List ? t->elem
                                  : t->kind == TypeKind::Map  ? t->key
                                                              : nullptr;
    if (of) {
      if (of->kind == TypeKind::Node) return Symbol(Sym::nodes);
      if (of->kind == TypeKind::Queue) return Symbol(Sym::queues);
      if (of->kind == TypeKind::Job) return Symbol(Sym::jobs);
      if (of->kind == TypeKind::Task) return Symbol(Sym::candidates);
    }
    return Symbol(fallback);
  }

  Poly Larger(Poly a, Poly b) {
    return Eval(a, bounds_at_limits_) >= Eval(b, bounds_at_limits_) ? a : b;
  }

  // `range(n)` / `range(a, b)`: the count, from the bound expressions (check_loops.cc admits
  // constants, consts, args, sizes and let locals of those, with + and -).
  Poly RangeSize(const Call* c) {
    if (c->args.empty()) return {};
    Poly hi = Bound(c->args.back().get());
    if (c->args.size() == 2) {
      // b - a ≤ b when a ≥ 0; a constant a is subtracted exactly.
      if (auto* lo = As<IntLit>(c->args[0].get()); lo && hi.size() == 1 && IsConstant(hi.front().m))
        return Constant(std::max(0.0, hi.front().c - static_cast<double>(lo->value)));
    }
    return hi;
  }

  Poly Bound(const ast::Expr* e) {
    if (!e) return {};
    switch (e->kind) {
      case NodeKind::IntLit: return Constant(std::max<double>(0, static_cast<const IntLit*>(e)->value));
      case NodeKind::Unary: return {};
      case NodeKind::Binary: {
        auto* b = static_cast<const Binary*>(e);
        if (b->op == BinaryOp::Add) return Add(Bound(b->left.get()), Bound(b->right.get()));
        if (b->op == BinaryOp::Sub) return Bound(b->left.get());
        return Symbol(Sym::collection);
      }
      case NodeKind::NameRef: {
        auto* n = static_cast<const NameRef*>(e);
        if (n->ref == NameKind::Const && n->const_decl) return Bound(n->const_decl->value.get());
        if (n->ref == NameKind::Arg) return Symbol(Sym::args);
        if (n->ref == NameKind::Local) {
          auto it = bounds_.find(n->local);
          if (it != bounds_.end()) return it->second;
          auto lit = let_values_.find(n->local);
          if (lit != let_values_.end()) {
            const ast::Expr* init = lit->second;
            let_values_.erase(lit);  // each let is expanded once: no cycles
            Poly b = Bound(init);
            bounds_[n->local] = b;
            return b;
          }
        }
        return Symbol(Sym::collection);
      }
      case NodeKind::Call: {
        auto* c = static_cast<const Call*>(e);
        if (c->callee == "len" && c->args.size() == 1) return Size(c->args[0].get());
        if (c->callee == "min" && !c->args.empty()) {
          Poly best = Bound(c->args[0].get());
          for (size_t i = 1; i < c->args.size(); ++i) {
            Poly b = Bound(c->args[i].get());
            if (Eval(b, bounds_at_limits_) < Eval(best, bounds_at_limits_)) best = b;
          }
          return best;
        }
        if (c->callee == "max") {
          Poly sum;
          for (const auto& a : c->args) sum = Add(sum, Bound(a.get()));
          return sum;
        }
        return Symbol(Sym::collection);
      }
      case NodeKind::Comprehension: return Size(static_cast<const Comprehension*>(e)->source.get());
      default: return Symbol(Sym::collection);
    }
  }

 public:
  // Integer `let` initialisers of the callable being estimated (for range bounds).
  void CollectLets(const ast::Callable& c) {
    Walker w;
    w.on_stmt = [&](ast::Stmt* s) {
      if (auto* l = As<Let>(s); l && !l->local->is_mutable) let_values_[l->local.get()] = l->value.get();
    };
    w.Stmt(c.body.get());
  }
  void Reset() {
    str_sizes_.clear();
    growth_.clear();
    assigned_.clear();
    doubled_.clear();
    str_len_.clear();
    StringBoundsChanged();
    growth_collected_.clear();
    sizes_.clear();
    elem_sizes_.clear();
    bounds_.clear();
    let_values_.clear();
    worst_loop_ = nullptr;
    worst_loop_cost_ = 0;
    depth_ = 0;
  }

 private:
  const Bounds bounds_at_limits_;
  std::map<const Local*, Poly> sizes_;
  std::map<const Local*, Poly> bounds_;
  std::map<const Local*, const ast::Expr*> let_values_;
  const Node* worst_loop_ = nullptr;
  double worst_loop_cost_ = 0;
  int depth_ = 0;
  std::map<const Local*, Poly> elem_sizes_;  // lists of lists: the size of each element
  // String variables: their length bounds, and what CollectGrowth found loops append to them.
  std::map<const Local*, Poly> str_sizes_;
  std::map<const Local*, Poly> growth_;
  std::map<const Local*, Poly> assigned_;
  std::set<const Local*> doubled_;
  // StrLen's answers, each with the version of the string bounds it was worked out under.
  std::unordered_map<const ast::Expr*, std::pair<uint64_t, Poly>> str_len_;
  uint64_t str_bounds_version_ = 0;
  std::set<const ast::Callable*> growth_collected_;
  // Collecting a callee's return sizes and element sizes (ReturnSizes).
  std::vector<std::pair<Poly, Poly>>* returns_ = nullptr;
};

}  // namespace

void CheckCost(PassContext& ctx, const CostLimits& limits, std::vector<HandlerCost>* out) {
  CostLimits effective = limits;
  for (const auto& [k, v] : DefaultCostBounds()) effective.bounds.emplace(k, v);
  CostEstimator est(effective);
  for (const ast::HandlerDecl* h : ctx.policy.All<ast::HandlerDecl>()) {
    if (!h->body) continue;
    est.Reset();
    // Every function's lets are candidates for range bounds (a callee's body is estimated inline).
    est.CollectLets(*h);
    for (const ast::FnDecl* f : ctx.policy.All<ast::FnDecl>())
      if (f->body) est.CollectLets(*f);
    std::map<const Local*, Poly> params;
    for (const Param& p : h->params) {
      const Type* t = p.local->type;
      if (!t || t->kind != TypeKind::List || !t->elem) continue;
      params[p.local.get()] =
          Symbol(t->elem->kind == TypeKind::Node ? Sym::nodes : Sym::candidates);
    }
    Poly cost = est.Callable(*h, params);
    double worst = Eval(cost, BoundsOf(effective.bounds));
    HandlerCost hc{h->name, h->name_range, Format(cost), worst};
    if (out) out->push_back(hc);
    if (worst > effective.max_handler_cost) {
      const Node* at = est.worst_loop() ? est.worst_loop() : h;
      ctx.diags.Error(
          at->range,
          fmt::format("handler `{}` may take {} steps at the largest cluster (cost {}), over the "
                      "budget of {}; this loop nest costs {}",
                      h->name, Number(worst), hc.formula, Number(effective.max_handler_cost),
                      Number(est.worst_loop_cost())));
    }
  }
}

}  // namespace kiln::passes

namespace kiln {

namespace {
std::mutex g_cost_defaults_mu;
double g_max_handler_cost = 1e11;
std::map<std::string, double> g_cost_bounds = {
    {"nodes", 10'000},         {"jobs", 10'000},         {"queues", 1'000},
    {"candidates", 100'000},   {"tasks_per_job", 1'000}, {"tasks_per_node", 1'000},
    {"resources", 16},         {"labels", 64},           {"terms", 16},
    {"args", 64},              {"collection", 100},      {"tasks", 100'000},
    {"text", 64},              {"built", 1'073'741'824},
};
}  // namespace

double DefaultMaxHandlerCost() {
  std::lock_guard<std::mutex> lock(g_cost_defaults_mu);
  return g_max_handler_cost;
}

void SetDefaultMaxHandlerCost(double steps) {
  std::lock_guard<std::mutex> lock(g_cost_defaults_mu);
  g_max_handler_cost = steps;
}

bool SetDefaultCostBound(const std::string& symbol, double value) {
  std::lock_guard<std::mutex> lock(g_cost_defaults_mu);
  auto it = g_cost_bounds.find(symbol);
  if (it == g_cost_bounds.end()) return false;
  it->second = value;
  return true;
}

std::map<std::string, double> DefaultCostBounds() {
  std::lock_guard<std::mutex> lock(g_cost_defaults_mu);
  return g_cost_bounds;
}

}  // namespace kiln
