#include "compiler/sema/handler_types.h"

#include <fmt/format.h>

#include "runtime/conf.h"

namespace kiln::sema {

const Type* TypeOfAbiKind(AbiKind kind, TypeContext& t) {
  switch (kind) {
    case AbiKind::Void: return t.Void();
    case AbiKind::Int: return t.Int();
    case AbiKind::Float: return t.Float();
    case AbiKind::Bool: return t.Bool();
    case AbiKind::Vote: return t.Get(TypeKind::Vote);
    case AbiKind::Status: return t.Get(TypeKind::Fit);
    case AbiKind::Validation: return t.Get(TypeKind::Validation);
    case AbiKind::Task: return t.Get(TypeKind::Task);
    case AbiKind::Job: return t.Get(TypeKind::Job);
    case AbiKind::Node: return t.Get(TypeKind::Node);
    case AbiKind::Queue: return t.Get(TypeKind::Queue);
    case AbiKind::TaskList: return t.List(t.Get(TypeKind::Task));
    case AbiKind::NodeList: return t.List(t.Get(TypeKind::Node));
    // none: the scoring failed (Volcano's BatchNodeOrderFn error), so no node is chosen.
    case AbiKind::FloatList: return t.Optional(t.List(t.Float()));
    case AbiKind::NodeOrNone: return t.Optional(t.Get(TypeKind::Node));
    case AbiKind::Victims: return t.Get(TypeKind::Victims);
    case AbiKind::HyperNodeList: return t.List(t.Shape("HyperNode"));
    case AbiKind::SubJob: return t.Shape("SubJob");
  }
  return t.Error();
}

std::string HandlerSignature(const ExtensionPointInfo& info, TypeContext& t) {
  std::string out = "(";
  for (int i = 0; i < info.param_count; ++i) {
    if (i) out += ", ";
    out += TypeOfAbiKind(info.params[i], t)->Name();
  }
  out += ")";
  if (info.result != AbiKind::Void) out += " -> " + TypeOfAbiKind(info.result, t)->Name();
  return out;
}

const char* CombineDescription(Combine c) {
  switch (c) {
    case Combine::FirstNonZero: return "first non-zero answer wins (tiers, then plugins, in order)";
    case Combine::FirstError: return "the first failing plugin decides; pass when none fails";
    case Combine::Sum: return "scores add up";
    case Combine::SumPerNode: return "per-node scores add up";
    case Combine::FirstNonNull: return "the first plugin that names a node decides";
    case Combine::VictimIntersect:
      return "abstentions ignored; victims intersect within a tier; the first tier with victims "
             "decides";
    case Combine::TierUnion: return "union within a tier; the first tier with a non-empty set decides";
    case Combine::Any: return "OR: the first true wins";
    case Combine::All: return "AND: the first false wins";
    case Combine::Vote:
      return "a reject in a reached tier wins; a permit ends the walk at its tier; all abstain = "
             "permit";
    case Combine::FirstInvalid: return "the first plugin reporting an invalid job decides";
    case Combine::FirstTierAll: return "the first tier with a handler decides, by AND of its plugins";
    case Combine::FirstDecides: return "the first plugin with a handler decides (tiers, then plugins)";
    case Combine::CallAll: return "every plugin is called";
  }
  return "";
}

std::string ExtensionPointTableMarkdown() {
  TypeContext t;
  std::string out =
      "| handler | signature | scheduler.conf flag | how answers of several plugins combine |\n"
      "|---|---|---|---|\n";
  for (const auto& p : kExtensionPoints) {
    std::string flag = p.flag.empty() ? std::string("—") : fmt::format("`{}`", p.flag);
    if (auto alt = AlternativeGatingFlag(p.id))
      flag += fmt::format(" or `{}`", kPluginFlags[static_cast<int>(*alt)].key);
    out += fmt::format("| `{}` | `{}` | {} | {} |\n", p.handler, HandlerSignature(p, t), flag,
                       CombineDescription(p.combine));
  }
  return out;
}

}  // namespace kiln::sema
