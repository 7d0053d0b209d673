// Pass: reject a policy whose size would make compiling it slow or memory-hungry (see
// size_limits.h): too many declarations, too many statements and expressions in one function or
// handler, or in the whole policy. Runs first, on the parsed tree, so that nothing after it (the
// type checker, the cost estimate, codegen, LLVM) sees an oversized policy.
//
//   before: `on job_order(l: Job, r: Job) -> int { ...30,000 statements... }`
//   after:  error at `job_order`: "handler `job_order` has 30,001 statements and expressions;
//           at most 20,000 are allowed in one function or handler (--policy-max-function-size)"
#include <fmt/format.h>

#include <mutex>

#include "compiler/passes/passes.h"
#include "compiler/passes/size_limits.h"
#include "compiler/passes/walk.h"

namespace kiln {

namespace {
std::mutex g_size_defaults_mu;
SizeLimits g_size_defaults;
}  // namespace

SizeLimits DefaultSizeLimits() {
  std::lock_guard<std::mutex> lock(g_size_defaults_mu);
  return g_size_defaults;
}

void SetDefaultSizeLimits(const SizeLimits& limits) {
  std::lock_guard<std::mutex> lock(g_size_defaults_mu);
  g_size_defaults = limits;
}

namespace passes {

using namespace ast;

namespace {

// "1234567" → "1,234,567", as the errors print counts.
std::string Grouped(int64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

int64_t CountNodes(ast::Decl* decl) {
  int64_t n = 0;
  Walker w;
  w.on_expr = [&](ast::Expr*) { ++n; };
  w.on_stmt = [&](ast::Stmt*) { ++n; };
  if (decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) {
    w.Stmt(static_cast<Callable*>(decl)->body.get());
  } else if (auto* c = As<ConstDecl>(decl)) {
    w.Expr(c->value.get());
  } else if (auto* a = As<ArgDecl>(decl)) {
    w.Expr(a->default_value.get());
  } else if (auto* s = As<StateDecl>(decl)) {
    w.Expr(s->init.get());
  } else if (auto* r = As<RecordDecl>(decl)) {
    for (auto& f : r->fields) w.Expr(f.default_value.get());
  }
  return n;
}

bool CheckSize(PassContext& ctx, const SizeLimits& limits) {
  const auto& decls = ctx.policy.decls;
  if (static_cast<int64_t>(decls.size()) > limits.max_declarations) {
    const Decl* first_over = decls[static_cast<size_t>(limits.max_declarations)].get();
    ctx.diags.Error(first_over->name_range.valid() ? first_over->name_range : first_over->range,
                    fmt::format("the policy has {} declarations; at most {} are allowed "
                                "(--policy-max-declarations)",
                                Grouped(static_cast<int64_t>(decls.size())),
                                Grouped(limits.max_declarations)));
    return false;
  }
  bool ok = true;
  int64_t total = 0;
  bool total_reported = false;
  for (const auto& decl : decls) {
    int64_t n = CountNodes(decl.get());
    const SourceRange& where = decl->name_range.valid() ? decl->name_range : decl->range;
    if ((decl->kind == NodeKind::Fn || decl->kind == NodeKind::Handler) &&
        n > limits.max_function_nodes) {
      ctx.diags.Error(where,
                      fmt::format("{} `{}` has {} statements and expressions; at most {} are "
                                  "allowed in one function or handler "
                                  "(--policy-max-function-size): split it into functions",
                                  decl->kind == NodeKind::Fn ? "function" : "handler", decl->name,
                                  Grouped(n), Grouped(limits.max_function_nodes)));
      ok = false;
    }
    total += n;
    if (total > limits.max_policy_nodes && !total_reported) {
      ctx.diags.Error(where, fmt::format("the policy has more than {} statements and expressions "
                                         "by this declaration (--policy-max-size)",
                                         Grouped(limits.max_policy_nodes)));
      total_reported = true;
      ok = false;
    }
  }
  return ok;
}

}  // namespace passes
}  // namespace kiln
