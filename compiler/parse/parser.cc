// Parsing: size limit → lexing → nesting pre-scan → parse → AST. One grammar (grammar/Policy.g4),
// parsed in the two stages ANTLR recommends: SLL prediction bailing out at the first error, and
// only when that fails, full LL prediction with our error listener, which either parses the file
// (SLL's weaker prediction was the only problem) or reports its syntax errors.
//
// ANTLR's generated parser recurses once per grammar rule, so `((((...))))` 100,000 deep would
// overflow the stack before any rule could object. The pre-scan walks the token stream (flat, no
// recursion) and rejects input whose bracket depth, prefix-operator runs, conditional chains or
// else-if chains exceed the nesting limit, before the parser sees it.
#include "compiler/parse/parser.h"

#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "PolicyLexer.h"
#include "PolicyParser.h"
#include "antlr4-runtime.h"
#include "compiler/parse/ast_builder.h"

namespace kiln {

namespace {

// Turns ANTLR's syntax errors into diagnostics (the console listener is removed).
class DiagnosticErrorListener : public antlr4::BaseErrorListener {
 public:
  explicit DiagnosticErrorListener(DiagnosticList& diags) : diags_(diags) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line,
                   size_t col, const std::string& msg, std::exception_ptr) override {
    ++count_;
    if (count_ > DiagnosticList::kErrorLimit) return;
    SourceRange range{{static_cast<int>(line), static_cast<int>(col) + 1},
                      {static_cast<int>(line), static_cast<int>(col) + 1}};
    std::string text;
    if (offending) {
      int len = static_cast<int>(offending->getStopIndex() - offending->getStartIndex());
      if (len > 0 && offending->getType() != antlr4::Token::EOF)
        range.end.column = range.begin.column + len;
      text = offending->getType() == antlr4::Token::EOF ? "end of file" : offending->getText();
    }
    diags_.Error(range, Rephrase(msg, text));
  }

  int count() const { return count_; }

 private:
  // ANTLR's messages name every expected token; keep them short and in our voice.
  static std::string Rephrase(const std::string& msg, const std::string& token) {
    std::string shown = token.size() > 40 ? token.substr(0, 40) + "..." : token;
    std::string expected;
    if (auto pos = msg.find("expecting "); pos != std::string::npos) {
      expected = msg.substr(pos + 10);
      // A long set is noise; a short one helps ("expected `;`").
      if (std::count(expected.begin(), expected.end(), ',') > 5) expected.clear();
      for (char& ch : expected)
        if (ch == '\'') ch = '`';
      if (!expected.empty() && expected.front() == '{') expected = expected.substr(1, expected.size() - 2);
    }
    std::string what;
    if (!token.empty() && token.front() == '"' && (token.size() == 1 || token.back() != '"'))
      return "unterminated string literal (strings end on the same line with `\"`)";
    if (msg.rfind("token recognition error", 0) == 0) {
      return fmt::format("syntax error: unexpected character {}", msg.substr(msg.find("at:") + 4));
    } else if (msg.rfind("missing ", 0) == 0) {
      std::string missing = msg.substr(8, msg.find(" at ") - 8);
      for (char& ch : missing)
        if (ch == '\'') ch = '`';
      return fmt::format("syntax error: missing {} before `{}`", missing, shown);
    } else if (token == "end of file") {
      what = "syntax error: unexpected end of file";
    } else {
      what = fmt::format("syntax error: unexpected `{}`", shown);
    }
    if (!expected.empty()) what += fmt::format("; expected {}", expected);
    return what;
  }

  DiagnosticList& diags_;
  int count_ = 0;
};

SourceRange TokenRange(antlr4::Token* t) {
  int line = static_cast<int>(t->getLine());
  int col = static_cast<int>(t->getCharPositionInLine()) + 1;
  return {{line, col}, {line, col}};
}

// See the file comment. Returns false (with a diagnostic) when a limit is exceeded.
bool ScanNesting(const std::vector<antlr4::Token*>& tokens, int limit, DiagnosticList& diags) {
  int depth = 0;
  int prefix_run = 0;
  int conditionals = 0;  // `?` / `??` in the current statement
  std::vector<int> else_chain(1, 0);
  bool after_close = false;
  auto fail = [&](antlr4::Token* t, std::string_view what) {
    diags.Error(TokenRange(t), fmt::format("{} nested too deeply (the limit is {} levels)", what, limit));
    return false;
  };
  std::string prev;
  for (antlr4::Token* t : tokens) {
    if (t->getType() == antlr4::Token::EOF) break;
    std::string text = t->getText();
    if (after_close && text != "else") else_chain[depth] = 0;
    after_close = false;
    if (text == "(" || text == "[" || text == "{") {
      if (++depth > limit) return fail(t, "brackets");
      if (static_cast<int>(else_chain.size()) <= depth) else_chain.push_back(0);
      else_chain[depth] = 0;
    } else if (text == ")" || text == "]" || text == "}") {
      if (depth > 0) --depth;
      after_close = text == "}";
    }
    // Unary minus follows an operator or an opening bracket; binary minus follows an operand.
    bool operand_before = !prev.empty() && (prev == ")" || prev == "]" || prev == "}" ||
                                            std::isalnum(static_cast<unsigned char>(prev.back())) ||
                                            prev.back() == '"' || prev.back() == '_');
    if (text == "not" || text == "!" || (text == "-" && !operand_before)) {
      if (++prefix_run > limit) return fail(t, "prefix operators");
    } else {
      prefix_run = 0;
    }
    if (text == "?" || text == "??") {
      if (++conditionals > limit) return fail(t, "conditional expressions");
    } else if (text == ";" || text == "{" || text == "}") {
      conditionals = 0;
    }
    if (text == "else") {
      if (++else_chain[depth] > limit) return fail(t, "else-if chains");
    }
    prev = std::move(text);
  }
  return true;
}

// ANTLR's input stream converts to UTF-32 and throws on malformed UTF-8; find it first so the
// user gets a position. Returns false (with a diagnostic) at the first bad sequence.
bool CheckUtf8(std::string_view text, DiagnosticList& diags) {
  int line = 1, col = 1;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (ok && len == 2) ok = c >= 0xC2;  // overlong
    if (!ok) {
      diags.Error({{line, col}, {line, col}},
                  fmt::format("invalid UTF-8 in the source (byte 0x{:02x})", c));
      return false;
    }
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return true;
}

}  // namespace

namespace {
std::unique_ptr<ast::Policy> ParseChecked(const SourceFile& source, const FrontendLimits& limits,
                                          DiagnosticList& diags, PhaseTimings* timings);
}  // namespace

// The generated lexer and parser keep their DFA caches in statics that every instance grows,
// and the ANTLR 4.9 runtime is not known to be safe when several threads grow one at once. So
// each thread parses with DFA caches of its own (UseThreadDfa), grown from the shared, read-only
// ATN: policies lex and parse in parallel (PolicyCompiler::CompileAll). A thread warms its caches
// on its first parse, a few milliseconds for the built-ins. The full-LL stage that reports syntax
// errors also fills the ATN's follow sets, lazily and behind a lock that is not safe to race
// with, so it alone takes turns (ErrorStageMutex); it runs only on files with errors.
namespace {
std::mutex& ErrorStageMutex() {
  static std::mutex mu;
  return mu;
}

struct DfaCache {
  std::vector<antlr4::dfa::DFA> decisions;
  antlr4::atn::PredictionContextCache contexts;

  explicit DfaCache(const antlr4::atn::ATN& atn) {
    decisions.reserve(atn.getNumberOfDecisions());
    for (size_t i = 0; i < atn.getNumberOfDecisions(); ++i)
      decisions.emplace_back(atn.getDecisionState(i), i);
  }
};

// Gives `recognizer` (the lexer or the parser) a `Simulator` on this thread's DFA caches, one set
// per kind, instead of the generated class's statics. setInterpreter deletes the generated
// simulator; the recognizer's destructor deletes this one.
template <typename Simulator, typename Recognizer>
void UseThreadDfa(Recognizer& recognizer) {
  thread_local DfaCache cache(recognizer.getATN());
  recognizer.setInterpreter(
      new Simulator(&recognizer, recognizer.getATN(), cache.decisions, cache.contexts));
}
using LexerSimulator = antlr4::atn::LexerATNSimulator;
using ParserSimulator = antlr4::atn::ParserATNSimulator;
}  // namespace

std::unique_ptr<ast::Policy> ParsePolicy(const SourceFile& source, const FrontendLimits& limits,
                                         DiagnosticList& diags, PhaseTimings* timings) {
  // The ANTLR runtime reports some conditions by throwing; none may escape the front end.
  try {
    return ParseChecked(source, limits, diags, timings);
  } catch (const std::exception& e) {
    diags.Error({{1, 1}, {1, 1}}, fmt::format("the parser failed on this input: {}", e.what()));
    return nullptr;
  }
}

namespace {
// Stage 1: SLL prediction, bailing out at the first syntax error without reporting it. Null
// when SLL cannot parse the input (a syntax error, or a decision SLL gets wrong).
grammar::PolicyParser::PolicyFileContext* ParseSll(grammar::PolicyParser& parser) {
  parser.removeErrorListeners();
  parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  try {
    return parser.policyFile();
  } catch (const antlr4::ParseCancellationException&) {
    return nullptr;
  }
}

std::unique_ptr<ast::Policy> ParseChecked(const SourceFile& source, const FrontendLimits& limits,
                                          DiagnosticList& diags, PhaseTimings* timings) {
  if (source.text.size() > limits.size.max_source_bytes) {
    diags.Error({{1, 1}, {1, 1}},
                fmt::format("file is too large ({} bytes; the limit is {} bytes, "
                            "--policy-max-source-bytes)",
                            source.text.size(), limits.size.max_source_bytes));
    return nullptr;
  }
  PhaseTimer lex_timer(timings, "lex");
  if (!CheckUtf8(source.text, diags)) return nullptr;
  antlr4::ANTLRInputStream input(source.text);
  grammar::PolicyLexer lexer(&input);
  UseThreadDfa<LexerSimulator>(lexer);
  DiagnosticErrorListener listener(diags);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&listener);
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  if (!ScanNesting(tokens.getTokens(), limits.max_nesting, diags)) return nullptr;
  lex_timer.Stop();

  AstBuildOptions options;
  options.max_depth = limits.max_nesting * 16;
  options.reported_limit = limits.max_nesting;
  auto build = [&](grammar::PolicyParser::PolicyFileContext* tree) {
    PhaseTimer build_timer(timings, "build-ast");
    return BuildAst(tree, source.path, options, diags);
  };

  // 1. SLL, bailing out: decisions of a token or two (the grammar is left-factored), and a file
  //    it accepts has no syntax errors.
  PhaseTimer parse_timer(timings, "parse");
  grammar::PolicyParser parser(&tokens);
  UseThreadDfa<ParserSimulator>(parser);
  if (listener.count() == 0) {
    if (auto* tree = ParseSll(parser)) {
      parse_timer.Stop();
      return build(tree);
    }
  }

  // 2. Full LL with the default (recovering) error strategy and our listener: it reports every
  //    syntax error at the first token no valid file can continue with. The factored rules
  //    decide in a token or two here as well, so the report is linear in the input even for an
  //    error at the end of a deep expression (issue #16: the unfactored rules took 42 s of CPU on
  //    `const x = ((((y((((1))))))))` 125 deep with no `;`).
  std::lock_guard<std::mutex> lock(ErrorStageMutex());
  tokens.seek(0);
  parser.reset();
  parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
  parser.addErrorListener(&listener);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  auto* tree = parser.policyFile();
  parse_timer.Stop();
  if (listener.count() > 0 || parser.getNumberOfSyntaxErrors() > 0) return nullptr;
  return build(tree);
}
}  // namespace

bool GrammarAccepts(std::string_view text, bool sll) {
  DiagnosticList ignored;
  if (!CheckUtf8(text, ignored)) return false;
  antlr4::ANTLRInputStream input(text.data(), text.size());
  grammar::PolicyLexer lexer(&input);
  UseThreadDfa<LexerSimulator>(lexer);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  grammar::PolicyParser parser(&tokens);
  UseThreadDfa<ParserSimulator>(parser);
  if (sll) return ParseSll(parser) != nullptr;
  std::lock_guard<std::mutex> lock(ErrorStageMutex());
  parser.removeErrorListeners();
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  parser.policyFile();
  return parser.getNumberOfSyntaxErrors() == 0;
}

}  // namespace kiln
