#include "compiler/sema/signature.h"

#include <cctype>
#include <string>

namespace kiln::sema {

namespace {

struct Cursor {
  std::string_view s;
  size_t pos = 0;
  const Type* type_variable = nullptr;  // what `T` stands for
  bool saw_type_variable = false;
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
  } else if (w == "T") {
    c.saw_type_variable = true;
    out = c.type_variable;
    if (!out) return nullptr;
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

Signature ParseSignature(std::string_view text, TypeContext& types, const Type* type_variable) {
  Signature sig;
  Cursor c{text};
  c.type_variable = type_variable;
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

bool IsGeneric(std::string_view text) {
  Cursor c{text};
  while (c.pos < text.size()) {
    c.Skip();
    if (c.Word() == "T") return true;
    if (c.pos < text.size() && !std::isalnum(static_cast<unsigned char>(text[c.pos])) &&
        text[c.pos] != '_')
      ++c.pos;
  }
  return false;
}

std::vector<bool> TypeVariableParams(std::string_view text) {
  std::vector<bool> out;
  size_t close = text.find(')');
  if (text.empty() || text[0] != '(' || close == std::string_view::npos) return out;
  std::string_view params = text.substr(1, close - 1);
  int depth = 0;
  size_t begin = 0;
  auto add = [&](size_t end) {
    std::string_view p = params.substr(begin, end - begin);
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.front()))) p.remove_prefix(1);
    while (!p.empty() && std::isspace(static_cast<unsigned char>(p.back()))) p.remove_suffix(1);
    out.push_back(p == "T");
  };
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i] == '<') ++depth;
    if (params[i] == '>') --depth;
    if (params[i] == ',' && depth == 0) {
      add(i);
      begin = i + 1;
    }
  }
  if (!params.empty()) add(params.size());
  return out;
}

const Type* BindTypeVariable(std::string_view text, size_t param, const Type* actual,
                             TypeContext& types) {
  // Types are interned, so trying each part of `actual` as the binding and comparing the
  // parameter it gives with `actual` is the match. `none` and error types bind nothing.
  std::vector<const Type*> parts{actual};
  for (size_t i = 0; i < parts.size(); ++i) {
    const Type* t = parts[i];
    if (!t || t->kind == TypeKind::None || t->kind == TypeKind::Error) continue;
    Signature sig = ParseSignature(text, types, t);
    if (param < sig.params.size() && sig.params[param] == actual) return t;
    if (t->key) parts.push_back(t->key);
    if (t->elem) parts.push_back(t->elem);
  }
  return nullptr;
}

}  // namespace kiln::sema
