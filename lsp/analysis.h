#pragma once
// What `kiln lsp` knows about one policy document: the front end's result for its text (the same
// pipeline and the same diagnostics as `kiln check`), and the questions an editor asks of it —
// what is here (hover), where is it declared (definition), what may follow (completion), what
// does the file declare (document symbols). Positions are the compiler's: 1-based lines and
// columns counted in code points; lsp/server.cc converts to and from the protocol's.
//
// No JSON here: the server turns these values into protocol messages.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend.h"

namespace kiln::lsp {

// The protocol's numbers, so the server copies them as they are.
enum class SymbolKind { Module = 2, Namespace = 3, Property = 7, Field = 8, Function = 12,
                        Variable = 13, Constant = 14, Struct = 23, Event = 24 };
enum class CompletionKind { Method = 2, Function = 3, Field = 5, Variable = 6, Property = 10,
                            Keyword = 14, Constant = 21, Struct = 22, Event = 23 };

struct Hover {
  SourceRange range;     // of the word hovered
  std::string markdown;  // a code block with the signature or type, then the doc
};

struct Symbol {
  std::string name;
  std::string detail;  // the type or signature
  SymbolKind kind;
  SourceRange range;      // the whole declaration
  SourceRange selection;  // its name
  std::vector<Symbol> children;
};

struct CompletionItem {
  std::string label;
  CompletionKind kind;
  std::string detail;  // type or signature
  std::string doc;
};

class Analysis {
 public:
  // Runs the front end (and, on a clean policy, the lowering check) as `kiln check` does.
  // Never throws: an internal error becomes a diagnostic at 1:1.
  static std::unique_ptr<Analysis> Run(std::string path, std::string text);
  ~Analysis();

  const SourceFile& source() const { return source_; }
  const DiagnosticList& diagnostics() const { return result_.diagnostics; }
  // Whether there is a tree to ask questions of (false only when the file could not be parsed).
  bool has_tree() const { return result_.policy != nullptr; }

  std::optional<Hover> HoverAt(SourcePos pos) const;
  // The name's declaration: a `fn`, a local (let/var, parameter, loop variable), a const, an arg,
  // a state variable, a record or a record field.
  std::optional<SourceRange> DefinitionAt(SourcePos pos) const;
  // policy ▸ uses, consts, args, records ▸ fields, state, fns, handlers; in source order.
  std::vector<Symbol> Symbols() const;

  // Completion at `pos` of `text` (the document as it is now, maybe not parseable): handler
  // names after `on`, the fields and methods of a view, record, string or collection after `.`,
  // else keywords, builtins, constants and the policy's own names. Types come from `typed`, the
  // latest analysis with a tree (this one or an earlier one); may be null.
  static std::vector<CompletionItem> Complete(const std::string& text, SourcePos pos,
                                              Analysis* typed);

 private:
  Analysis() = default;
  struct Index;  // every expression and local with its callable, built once after the front end
  void BuildIndex();
  const ast::TypeRef* TypeAt(SourcePos pos) const;  // the innermost written type at `pos`
  std::string TypeHover(const ast::TypeRef* t) const;

  SourceFile source_;
  FrontendResult result_;
  std::unique_ptr<Index> index_;
};

}  // namespace kiln::lsp
