// Pass: match every handler against the extension-point table (runtime/extension_points.h).
//
//   before: `on job_ordr(l: Job, r: Job) -> int { ... }`
//   after:  error "unknown extension point `job_ordr`; did you mean `job_order`?"
//   before: `on job_order(l: Job) -> int`
//   after:  error "`job_order` handlers have the signature (Job, Job) -> int; this one is
//           (Job) -> int"
//
// Also: a point served by two handlers (note at the first), and one handler serving points with
// different signatures.
#include <fmt/format.h>

#include <map>

#include "compiler/passes/passes.h"
#include "compiler/sema/handler_types.h"

namespace kiln::passes {

void CheckHandlers(PassContext& ctx) {
  TypeContext& t = ctx.types();
  std::map<std::string, SourceRange, std::less<>> served;
  std::vector<std::string> point_names;
  for (const auto& p : kExtensionPoints) point_names.emplace_back(p.handler);

  for (auto* h : ctx.policy.All<ast::HandlerDecl>()) {
    std::string written = "(";
    bool erroneous = false;
    for (size_t i = 0; i < h->params.size(); ++i) {
      const Type* pt = h->params[i].local->type;
      if (!pt || pt->kind == TypeKind::Error) erroneous = true;
      written += (i ? ", " : "") + (pt ? pt->Name() : std::string("?"));
    }
    written += ")";
    if (h->result_type && h->result_type->kind != TypeKind::Void)
      written += " -> " + h->result_type->Name();
    if (h->result_type && h->result_type->kind == TypeKind::Error) erroneous = true;

    const ExtensionPointInfo* first = nullptr;
    for (auto& point : h->points) {
      point.info = FindExtensionPoint(point.name);
      if (!point.info) {
        ctx.diags.Error(point.range, fmt::format("unknown extension point `{}`{}", point.name,
                                                 DidYouMean(point.name, point_names)));
        continue;
      }
      auto [it, inserted] = served.emplace(point.name, point.range);
      if (!inserted) {
        ctx.diags.Error(point.range,
                        fmt::format("`{}` already has a handler in this policy", point.name))
            .notes.push_back({it->second, "first handler here"});
      }
      std::string expected = sema::HandlerSignature(*point.info, t);
      if (!first) {
        first = point.info;
      } else if (sema::HandlerSignature(*first, t) != expected) {
        ctx.diags.Error(point.range,
                        fmt::format("one handler cannot serve `{}` {} and `{}` {}: their "
                                    "signatures differ",
                                    first->handler, sema::HandlerSignature(*first, t), point.name,
                                    expected));
        continue;
      }
      if (erroneous || expected == written) continue;
      ctx.diags.Error(point.range,
                      fmt::format("`{}` handlers have the signature {}; this one is {}",
                                  point.name, expected, written));
    }
  }
}

}  // namespace kiln::passes
