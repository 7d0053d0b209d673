#include "lsp/server.h"

#include <fmt/format.h>

#include <cctype>
#include <istream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lsp/analysis.h"

namespace kiln {
const char* Version();  // runtime/version.cc
}  // namespace kiln

namespace kiln::lsp {

namespace {

using nlohmann::json;

// JSON-RPC and LSP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

// A message body larger than this is read and dropped: no policy is near it.
constexpr size_t kMaxMessageBytes = 64 << 20;

// ---- positions: the protocol counts 0-based lines and UTF-16 code units; the compiler 1-based
// lines and code points.

// Byte offset of the start of `line` (1-based), or npos.
size_t LineStart(const std::string& text, int line) {
  size_t at = 0;
  for (int l = 1; l < line; ++l) {
    at = text.find('\n', at);
    if (at == std::string::npos) return at;
    ++at;
  }
  return at;
}

size_t CodePointBytes(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
}

// Byte offset of a protocol position; clamped to its line's end.
size_t OffsetOf(const std::string& text, int line0, int char16) {
  size_t at = LineStart(text, line0 + 1);
  if (at == std::string::npos) return text.size();
  int units = 0;
  while (at < text.size() && text[at] != '\n' && units < char16) {
    size_t n = CodePointBytes(static_cast<unsigned char>(text[at]));
    units += n == 4 ? 2 : 1;
    at += n;
  }
  return std::min(at, text.size());
}

SourcePos FromLsp(const std::string& text, const json& pos) {
  int line0 = pos.at("line").get<int>();
  int char16 = pos.at("character").get<int>();
  size_t start = LineStart(text, line0 + 1);
  if (start == std::string::npos) return SourcePos{line0 + 1, 1};
  size_t at = start;
  int units = 0, column = 1;
  while (at < text.size() && text[at] != '\n' && units < char16) {
    size_t n = CodePointBytes(static_cast<unsigned char>(text[at]));
    units += n == 4 ? 2 : 1;
    at += n;
    ++column;
  }
  return SourcePos{line0 + 1, column};
}

json ToLsp(const std::string& text, SourcePos p) {
  if (p.line < 1) return json{{"line", 0}, {"character", 0}};
  size_t at = LineStart(text, p.line);
  int units = 0;
  if (at != std::string::npos) {
    for (int col = 1; col < p.column && at < text.size() && text[at] != '\n'; ++col) {
      size_t n = CodePointBytes(static_cast<unsigned char>(text[at]));
      units += n == 4 ? 2 : 1;
      at += n;
    }
  }
  return json{{"line", p.line - 1}, {"character", units}};
}

// Compiler ranges include their last character; protocol ranges end after it.
json RangeToLsp(const std::string& text, const SourceRange& r) {
  if (!r.valid()) return json{{"start", ToLsp(text, {})}, {"end", ToLsp(text, {})}};
  SourcePos end = r.end.line > 0 ? SourcePos{r.end.line, r.end.column + 1} : r.begin;
  return json{{"start", ToLsp(text, r.begin)}, {"end", ToLsp(text, end)}};
}

// file:///a/b%20c.policy → /a/b c.policy; other URIs are kept as they are.
std::string PathOfUri(const std::string& uri) {
  if (!uri.starts_with("file://")) return uri;
  std::string path;
  for (size_t i = 7; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() && std::isxdigit(static_cast<unsigned char>(uri[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(uri[i + 2]))) {
      path += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      path += uri[i];
    }
  }
  return path;
}

struct RpcError {
  int code;
  std::string message;
};

struct Document {
  std::string text;
  std::shared_ptr<Analysis> analysis;
  // The latest analysis that had a tree: completion reads types from it while the text is
  // mid-edit and does not parse.
  std::shared_ptr<Analysis> typed;
  // The latest analysis without errors: its tree is whole where `typed`'s may have lost the
  // function being edited to a syntax error.
  std::shared_ptr<Analysis> clean;
};

class Server {
 public:
  Server(std::istream& in, std::ostream& out) : in_(in), out_(out) {}

  int Run() {
    for (;;) {
      std::optional<std::string> body = ReadMessage();
      if (!body) return shutdown_ ? 0 : 1;  // end of input
      if (body->empty()) continue;           // framing error, already answered
      json msg = json::parse(*body, nullptr, /*allow_exceptions=*/false);
      if (msg.is_discarded()) {
        SendError(nullptr, kParseError, "the message is not JSON");
        continue;
      }
      if (std::optional<int> code = Handle(msg)) return *code;
    }
  }

 private:
  // The next message's body; "" after a framing error (answered), nullopt at the end of input.
  std::optional<std::string> ReadMessage() {
    std::string line;
    long long length = -1;
    while (std::getline(in_, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) break;
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "content-length") {
        try {
          length = std::stoll(line.substr(colon + 1));
        } catch (const std::exception&) {
          length = -2;
        }
      }
    }
    if (!in_) return std::nullopt;  // the end of input, maybe inside a header
    if (length < 0) {
      SendError(nullptr, kParseError, "a message without a valid Content-Length header");
      return std::string();
    }
    std::string body;
    if (static_cast<size_t>(length) > kMaxMessageBytes) {
      in_.ignore(length);
      SendError(nullptr, kInvalidRequest, fmt::format("a message of {} bytes is too large", length));
      return in_ ? std::optional<std::string>(std::string()) : std::nullopt;
    }
    body.resize(static_cast<size_t>(length));
    in_.read(body.data(), length);
    if (in_.gcount() != length) return std::nullopt;
    return body;
  }

  void Send(const json& msg) {
    std::string body = msg.dump(-1, ' ', false, json::error_handler_t::replace);
    out_ << "Content-Length: " << body.size() << "\r\n\r\n" << body;
    out_.flush();
  }

  void SendError(const json& id, int code, const std::string& message) {
    Send(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }

  void Notify(const std::string& method, json params) {
    Send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }

  // The process exit code when the message was `exit`.
  std::optional<int> Handle(const json& msg) {
    if (!msg.is_object()) {
      SendError(nullptr, kInvalidRequest, "a message must be a JSON object");
      return std::nullopt;
    }
    json id = msg.contains("id") ? msg["id"] : json();
    bool request = msg.contains("id");
    if (request && !id.is_string() && !id.is_number_integer()) {
      SendError(nullptr, kInvalidRequest, "`id` must be a string or an integer");
      return std::nullopt;
    }
    if (!msg.contains("method") || !msg["method"].is_string()) {
      // A response to a request of ours (we send none) or garbage.
      if (request && !msg.contains("result") && !msg.contains("error"))
        SendError(id, kInvalidRequest, "a request needs a string `method`");
      return std::nullopt;
    }
    std::string method = msg["method"];
    json params = msg.contains("params") ? msg["params"] : json::object();
    if (method == "exit") return shutdown_ ? 0 : 1;
    try {
      if (!initialized_ && method != "initialize") {
        if (request) SendError(id, kServerNotInitialized, "the server is not initialized yet");
        return std::nullopt;
      }
      if (shutdown_) {
        if (request) SendError(id, kInvalidRequest, "the server is shutting down");
        return std::nullopt;
      }
      std::optional<json> result = Dispatch(method, params, request);
      if (request) {
        if (!result) {
          SendError(id, kMethodNotFound, fmt::format("unknown method `{}`", method));
        } else {
          Send(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", *result}});
        }
      }
    } catch (const RpcError& e) {
      if (request) SendError(id, e.code, e.message);
    } catch (const json::exception& e) {
      if (request) SendError(id, kInvalidParams, fmt::format("invalid params for `{}`: {}", method, e.what()));
    } catch (const std::exception& e) {
      if (request) SendError(id, kInternalError, fmt::format("internal error in `{}`: {}", method, e.what()));
    }
    return std::nullopt;
  }

  // The result of a request, null json for notifications handled, nullopt for unknown methods.
  std::optional<json> Dispatch(const std::string& method, const json& params, bool request) {
    if (method == "initialize") {
      if (initialized_) throw RpcError{kInvalidRequest, "initialize was already called"};
      initialized_ = true;
      return json{
          {"capabilities",
           {{"textDocumentSync", {{"openClose", true}, {"change", 1}}},
            {"hoverProvider", true},
            {"definitionProvider", true},
            {"completionProvider", {{"triggerCharacters", {".", " "}}}},
            {"documentSymbolProvider", true}}},
          {"serverInfo", {{"name", "kiln lsp"}, {"version", Version()}}}};
    }
    if (method == "initialized") return json();
    if (method == "shutdown") {
      shutdown_ = true;
      return json();
    }
    if (method == "textDocument/didOpen") {
      const json& doc = params.at("textDocument");
      Update(doc.at("uri").get<std::string>(), doc.at("text").get<std::string>());
      return json();
    }
    if (method == "textDocument/didChange") {
      std::string uri = params.at("textDocument").at("uri");
      auto it = docs_.find(uri);
      std::string text = it == docs_.end() ? "" : it->second.text;
      for (const json& change : params.at("contentChanges")) {
        std::string piece = change.at("text");
        if (change.contains("range")) {
          const json& r = change["range"];
          size_t b = OffsetOf(text, r.at("start").at("line"), r.at("start").at("character"));
          size_t e = OffsetOf(text, r.at("end").at("line"), r.at("end").at("character"));
          if (e < b) std::swap(b, e);
          text.replace(b, e - b, piece);
        } else {
          text = piece;
        }
      }
      Update(uri, std::move(text));
      return json();
    }
    if (method == "textDocument/didClose") {
      std::string uri = params.at("textDocument").at("uri");
      docs_.erase(uri);
      Notify("textDocument/publishDiagnostics", json{{"uri", uri}, {"diagnostics", json::array()}});
      return json();
    }
    if (method == "textDocument/didSave") return json();
    if (method == "textDocument/hover") {
      auto [doc, pos] = At(params);
      std::optional<Hover> h = doc.analysis->HoverAt(pos);
      if (!h) return json();
      return json{{"contents", {{"kind", "markdown"}, {"value", h->markdown}}},
                  {"range", RangeToLsp(doc.text, h->range)}};
    }
    if (method == "textDocument/definition") {
      auto [doc, pos] = At(params);
      std::optional<SourceRange> r = doc.analysis->DefinitionAt(pos);
      if (!r) return json();
      return json{{"uri", params.at("textDocument").at("uri")},
                  {"range", RangeToLsp(doc.text, *r)}};
    }
    if (method == "textDocument/completion") {
      auto [doc, pos] = At(params);
      json items = json::array();
      std::vector<CompletionItem> found = Analysis::Complete(doc.text, pos, doc.typed.get());
      if (found.empty() && doc.clean && doc.clean != doc.typed)
        found = Analysis::Complete(doc.text, pos, doc.clean.get());
      for (const CompletionItem& c : found) {
        json item{{"label", c.label}, {"kind", static_cast<int>(c.kind)}};
        if (!c.detail.empty()) item["detail"] = c.detail;
        if (!c.doc.empty()) item["documentation"] = {{"kind", "markdown"}, {"value", c.doc}};
        items.push_back(std::move(item));
      }
      return json{{"isIncomplete", false}, {"items", std::move(items)}};
    }
    if (method == "textDocument/documentSymbol") {
      auto [doc, pos] = At(params, /*with_position=*/false);
      json out = json::array();
      for (const Symbol& s : doc.analysis->Symbols()) out.push_back(SymbolJson(doc.text, s));
      return out;
    }
    if (!request) return json();  // $/cancelRequest, $/setTrace, ...: nothing to do
    return std::nullopt;
  }

  json SymbolJson(const std::string& text, const Symbol& s) {
    json out{{"name", s.name.empty() ? "?" : s.name},
             {"kind", static_cast<int>(s.kind)},
             {"range", RangeToLsp(text, s.range)},
             {"selectionRange", RangeToLsp(text, s.selection)}};
    if (!s.detail.empty()) out["detail"] = s.detail;
    if (!s.children.empty()) {
      out["children"] = json::array();
      for (const Symbol& c : s.children) out["children"].push_back(SymbolJson(text, c));
    }
    return out;
  }

  std::pair<Document&, SourcePos> At(const json& params, bool with_position = true) {
    std::string uri = params.at("textDocument").at("uri");
    auto it = docs_.find(uri);
    if (it == docs_.end())
      throw RpcError{kInvalidParams, fmt::format("`{}` is not open (send didOpen first)", uri)};
    SourcePos pos = with_position ? FromLsp(it->second.text, params.at("position")) : SourcePos{};
    return {it->second, pos};
  }

  void Update(const std::string& uri, std::string text) {
    Document& doc = docs_[uri];
    doc.text = std::move(text);
    doc.analysis = Analysis::Run(PathOfUri(uri), doc.text);
    if (doc.analysis->has_tree()) doc.typed = doc.analysis;
    if (doc.analysis->has_tree() && !doc.analysis->diagnostics().HasErrors())
      doc.clean = doc.analysis;
    json diags = json::array();
    for (const Diagnostic& d : doc.analysis->diagnostics().items()) {
      json item{{"range", RangeToLsp(doc.text, d.range)},
                {"severity", d.severity == Severity::Error     ? 1
                             : d.severity == Severity::Warning ? 2
                                                               : 3},
                {"source", "kiln"},
                {"message", d.message}};
      if (!d.notes.empty()) {
        item["relatedInformation"] = json::array();
        for (const DiagnosticNote& n : d.notes)
          item["relatedInformation"].push_back(
              {{"location", {{"uri", uri}, {"range", RangeToLsp(doc.text, n.range)}}},
               {"message", n.message}});
      }
      diags.push_back(std::move(item));
    }
    Notify("textDocument/publishDiagnostics", json{{"uri", uri}, {"diagnostics", std::move(diags)}});
  }

  std::istream& in_;
  std::ostream& out_;
  bool initialized_ = false;
  bool shutdown_ = false;
  std::map<std::string, Document> docs_;
};

}  // namespace

int Serve(std::istream& in, std::ostream& out) { return Server(in, out).Run(); }

}  // namespace kiln::lsp
