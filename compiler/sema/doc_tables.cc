#include "compiler/sema/doc_tables.h"

#include <fmt/format.h>

#include "compiler/sema/signature.h"
#include "compiler/sema/view_fields.h"
#include "stdlib/library.h"

namespace kiln::sema {

std::string ViewFieldTableMarkdown() {
  TypeContext t;
  std::string out = "| view | field | type |\n|---|---|---|\n";
  for (const auto& f : ViewFields())
    out += fmt::format("| `{}` | `{}` | `{}` |\n", f.owner, f.name, ViewFieldType(f, t)->Name());
  for (const auto& f : stdlib::SessionFields())
    out += fmt::format("| `session` | `{}` | `{}` |\n", f.name, f.type);
  return out;
}

std::string StdlibTableMarkdown() {
  std::string out = "| function | signature | meaning |\n|---|---|---|\n";
  for (const auto& f : stdlib::Functions()) {
    std::string name = f.receiver.empty() ? fmt::format("`{}`", f.name)
                                          : fmt::format("`{}.{}`", f.receiver, f.name);
    std::string doc(f.doc);
    // A `|` inside a cell would end it.
    for (size_t p = 0; (p = doc.find('|', p)) != std::string::npos; p += 2) doc.replace(p, 1, "\\|");
    out += fmt::format("| {} | `{}` | {}{} |\n", name, f.signature, doc,
                       f.capability.empty() ? ""
                                            : fmt::format(" (needs `uses {};`)", f.capability));
  }
  return out;
}

}  // namespace kiln::sema
