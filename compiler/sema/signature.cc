#include "compiler/sema/signature.h"

#include <cctype>
#include <string>

namespace kiln::sema {

namespace {

struct Cursor {
  std::string_view s;
  size_t pos = 0;
  void Skip() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
  }
  bool Eat(char c) {
    Skip();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  std::string_view Word() {
    Skip();
    size_t b = pos;
    while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) ++pos;
    return s.substr(b, pos - b);
  }
};

const Type* ParseType(Cursor& c, TypeContext& t) {
  std::string_view w = c.Word();
  const Type* out = nullptr;
  if (w == "list") {
    if (!c.Eat('<')) return nullptr;
    const Type* e = ParseType(c, t);
    if (!e || !c.Eat('>')) return nullptr;
    out = t.List(e);
  } else if (w == "map") {
    if (!c.Eat('<')) return nullptr;
    const Type* k = ParseType(c, t);
    if (!k || !c.Eat(',')) return nullptr;
    const Type* v = ParseType(c, t);
    if (!v || !c.Eat('>')) return nullptr;
    out = t.Map(k, v);
  } else {
    TypeKind kind;
    if (LookupScalarTypeName(w, &kind)) {
      out = t.Get(kind);
    } else {
      // Kubernetes shapes (LabelSelector, Toleration, ...) for the stdlib's matching helpers.
      out = t.Shape(w);
      if (!out) return nullptr;
    }
  }
  if (c.Eat('?')) out = t.Optional(out);
  return out;
}

}  // namespace

const Type* ParseTypeString(std::string_view text, TypeContext& types) {
  Cursor c{text};
  const Type* t = ParseType(c, types);
  c.Skip();
  return c.pos == text.size() ? t : nullptr;
}

Signature ParseSignature(std::string_view text, TypeContext& types) {
  Signature sig;
  Cursor c{text};
  if (!c.Eat('(')) return {};
  if (!c.Eat(')')) {
    do {
      const Type* p = ParseType(c, types);
      if (!p) return {};
      sig.params.push_back(p);
    } while (c.Eat(','));
    if (!c.Eat(')')) return {};
  }
  c.Skip();
  if (c.pos < text.size()) {
    if (!c.Eat('-') || !c.Eat('>')) return {};
    sig.result = ParseType(c, types);
    if (!sig.result) return {};
  } else {
    sig.result = types.Void();
  }
  return sig;
}

}  // namespace kiln::sema
