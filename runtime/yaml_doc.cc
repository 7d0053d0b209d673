#include "runtime/yaml_doc.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <yaml.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include <cstring>
#include <unordered_map>

namespace kiln::yaml {

using detail::NodeData;

// Bump allocator: nodes, child arrays and scalar text of one document, freed together.
// Blocks grow from 64 KiB (a conf or a test scenario stays small) to 2 MiB; the 2 MiB blocks are
// aligned and advised as transparent huge pages, because a 100k-pod document fills ~60 MiB and
// first-touch page faults were a third of its parse time.
struct Document::Arena {
  static constexpr size_t kFirstBlock = size_t{64} << 10;
  static constexpr size_t kHugeBlock = size_t{2} << 20;
  struct FreeBlock {
    void operator()(char* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<char, FreeBlock>> blocks;
  char* next = nullptr;
  size_t left = 0;
  size_t total = 0;

  void* Allocate(size_t bytes, size_t align = alignof(void*)) {
    size_t pad = (align - reinterpret_cast<uintptr_t>(next) % align) % align;
    if (next == nullptr || pad + bytes > left) {
      size_t size = blocks.empty() ? kFirstBlock : std::min(2 * last_block_, kHugeBlock);
      while (size < bytes + align) size *= 2;
      char* block;
      if (size >= kHugeBlock) {
        size = (size + kHugeBlock - 1) / kHugeBlock * kHugeBlock;
        block = static_cast<char*>(std::aligned_alloc(kHugeBlock, size));
        if (block != nullptr) madvise(block, size, MADV_HUGEPAGE);  // advice only
      } else {
        block = static_cast<char*>(std::malloc(size));
      }
      if (block == nullptr) throw std::bad_alloc();
      blocks.emplace_back(block);
      last_block_ = size;
      next = block;
      left = size;
      total += size;
      pad = (align - reinterpret_cast<uintptr_t>(next) % align) % align;
    }
    char* p = next + pad;
    next = p + bytes;
    left -= pad + bytes;
    return p;
  }

 private:
  size_t last_block_ = 0;
};

Document::Document() : arena_(std::make_unique<Arena>()) {}
Document::~Document() = default;
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;

size_t Document::ArenaBytes() const { return arena_ ? arena_->total : 0; }

namespace {

// yaml-cpp's null spellings for a plain scalar.
bool IsNullText(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

// The 1-based line and column of byte `offset` (used only for libyaml's reader errors, which
// carry an offset and no mark).
SourceLocation LocationOfOffset(std::string_view text, size_t offset, const std::string& file) {
  SourceLocation loc{file, 1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++loc.column;
    }
  }
  return loc;
}

// Owns a libyaml parser and event for the duration of one parse.
struct Parser {
  yaml_parser_t parser;
  yaml_event_t event;
  bool have_event = false;
  Parser() { yaml_parser_initialize(&parser); }
  ~Parser() {
    if (have_event) yaml_event_delete(&event);
    yaml_parser_delete(&parser);
  }
  bool Next() {
    if (have_event) yaml_event_delete(&event);
    have_event = false;
    if (!yaml_parser_parse(&parser, &event)) return false;
    have_event = true;
    return true;
  }
};

}  // namespace

// How deep lists and maps may nest in one document, as policies may (the header's contract also
// holds: a stream holds one document; a second one is an error at its `---`).
constexpr size_t kMaxDepth = 256;

class Document::Builder {
 public:
  Builder(Arena& arena, std::string_view text, const std::string& file)
      : arena_(arena), text_(text), file_(file) {}

  Result<const NodeData*> Run() {
    Parser p;
    yaml_parser_set_input_string(&p.parser, reinterpret_cast<const unsigned char*>(text_.data()),
                                 text_.size());
    bool in_document = false;
    while (true) {
      if (!p.Next()) return SyntaxError(p.parser);
      const yaml_event_t& e = p.event;
      if (pending_null_ != nullptr) {
        SetMark(*pending_null_, NextTokenAfter(pending_mark_, e.start_mark));
        pending_null_ = nullptr;
      }
      switch (e.type) {
        case YAML_STREAM_START_EVENT:
          break;
        case YAML_DOCUMENT_START_EVENT:
          in_document = true;
          break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT: {
          if (root_ == nullptr) {
            NodeData* n = New(NodeType::Null);
            if (in_document) SetMark(*n, e.start_mark);
            root_ = n;
          }
          if (e.type == YAML_STREAM_END_EVENT) return root_;
          // One document per file: a second one (after `---`) would otherwise be ignored
          // without a word, and what the file says would depend on which reader reads it.
          if (!p.Next()) return SyntaxError(p.parser);
          if (p.event.type == YAML_DOCUMENT_START_EVENT)
            return Error{"a second YAML document starts here; a file holds one document (remove "
                         "the `---` and what follows, or merge the two)",
                         Where(p.event.start_mark)};
          return root_;
        }
        case YAML_ALIAS_EVENT: {
          auto it = anchors_.find(reinterpret_cast<const char*>(e.data.alias.anchor));
          if (it == anchors_.end())
            return Error{"invalid YAML: the referenced anchor is not defined", Where(e.start_mark)};
          Add(it->second);
          break;
        }
        case YAML_SCALAR_EVENT: {
          const auto& s = e.data.scalar;
          std::string_view value(reinterpret_cast<const char*>(s.value), s.length);
          bool plain = s.style == YAML_PLAIN_SCALAR_STYLE || s.style == YAML_ANY_SCALAR_STYLE;
          std::string_view tag = s.tag ? reinterpret_cast<const char*>(s.tag) : "";
          NodeData* n;
          if (plain && IsNullText(value)) {
            n = New(NodeType::Null);
            SetMark(*n, e.start_mark);
            // An empty plain scalar is a missing value: libyaml marks it where the `:` ends,
            // yaml-cpp at the next token.
            if (value.empty() && tag.empty() && s.anchor == nullptr) {
              pending_null_ = n;
              pending_mark_ = e.start_mark;
            }
          } else {
            n = New(NodeType::Scalar);
            SetMark(*n, e.start_mark);
            char* text = static_cast<char*>(arena_.Allocate(value.size() + 1, 1));
            if (!value.empty()) std::memcpy(text, value.data(), value.size());
            text[value.size()] = '\0';
            n->data = text;
            n->size = static_cast<uint32_t>(value.size());
            // yaml-cpp gives quoted and block scalars the non-specific tag "!", plain ones "?";
            // an explicit tag replaces either.
            n->quoted = tag.empty() ? !plain : tag == "!";
          }
          if (s.anchor) anchors_[reinterpret_cast<const char*>(s.anchor)] = n;
          Add(n);
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
          bool map = e.type == YAML_MAPPING_START_EVENT;
          // Refused as soon as the limit is passed, before libyaml reads further: its scanner
          // works per nesting level on every token, so a deep file costs depth squared.
          if (stack_.size() >= kMaxDepth)
            return Error{fmt::format("YAML nested more than {} levels deep", kMaxDepth),
                         Where(e.start_mark)};
          NodeData* n = New(map ? NodeType::Map : NodeType::Sequence);
          SetMark(*n, e.start_mark);
          const yaml_char_t* anchor = map ? e.data.mapping_start.anchor : e.data.sequence_start.anchor;
          if (anchor) anchors_[reinterpret_cast<const char*>(anchor)] = n;
          stack_.push_back(Frame{n, kids_.size()});
          break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: {
          Frame f = stack_.back();
          stack_.pop_back();
          size_t count = kids_.size() - f.first_child;
          auto** children =
              static_cast<const NodeData**>(arena_.Allocate(sizeof(NodeData*) * (count ? count : 1)));
          // An empty collection has no children to copy (and kids_ may have no storage yet).
          if (count > 0)
            std::memcpy(children, kids_.data() + f.first_child, sizeof(NodeData*) * count);
          kids_.resize(f.first_child);
          f.node->data = children;
          f.node->size = static_cast<uint32_t>(f.node->type == NodeType::Map ? count / 2 : count);
          Add(f.node);
          break;
        }
        case YAML_NO_EVENT:
          return Error{"invalid YAML: unexpected end of input", SourceLocation{file_}};
      }
    }
  }

 private:
  struct Frame {
    NodeData* node;
    size_t first_child;
  };

  NodeData* New(NodeType type) {
    auto* n = new (arena_.Allocate(sizeof(NodeData))) NodeData();
    n->type = type;
    return n;
  }

  // yaml-cpp places a missing value at the token that follows it; libyaml where the indicator
  // before it (`:`, `-`) ends. So: from `empty`, skip blanks, line breaks and comments in the
  // text. At the end of the text, the next event's mark stands in (a closing token).
  yaml_mark_t NextTokenAfter(const yaml_mark_t& empty, const yaml_mark_t& next_event) {
    if (line_starts_.empty()) {
      line_starts_.push_back(0);
      for (size_t i = 0; i < text_.size(); ++i)
        if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
    if (empty.line >= line_starts_.size()) return next_event;
    // The byte offset of (line, column): columns count characters.
    size_t at = line_starts_[empty.line];
    for (size_t c = 0; c < empty.column && at < text_.size() && text_[at] != '\n'; ++c) {
      ++at;
      while (at < text_.size() && (static_cast<unsigned char>(text_[at]) & 0xC0) == 0x80) ++at;
    }
    yaml_mark_t m = empty;
    while (at < text_.size()) {
      char ch = text_[at];
      if (ch == ' ' || ch == '\t' || ch == '\r') {
        ++at, ++m.column, ++m.index;
      } else if (ch == '\n') {
        ++at, ++m.line, ++m.index;
        m.column = 0;
      } else if (ch == '#') {
        while (at < text_.size() && text_[at] != '\n') {
          if ((static_cast<unsigned char>(text_[at]) & 0xC0) != 0x80) ++m.column, ++m.index;
          ++at;
        }
      } else {
        return m;
      }
    }
    return next_event;
  }

  static void SetMark(NodeData& n, const yaml_mark_t& m) {
    n.pos = static_cast<int32_t>(m.index);
    n.line = static_cast<int32_t>(m.line);
    n.column = m.column < (size_t{1} << 23) ? static_cast<int32_t>(m.column) : -1;
  }

  void Add(const NodeData* n) {
    if (stack_.empty()) {
      if (root_ == nullptr) root_ = n;
    } else {
      kids_.push_back(n);
    }
  }

  SourceLocation Where(const yaml_mark_t& m) const {
    return SourceLocation{file_, static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1};
  }

  Error SyntaxError(const yaml_parser_t& p) const {
    std::string problem = p.problem ? p.problem : "malformed document";
    if (p.error == YAML_MEMORY_ERROR)
      return Error{"invalid YAML: out of memory", SourceLocation{file_}};
    if (p.error == YAML_READER_ERROR) {
      // Bad encoding: libyaml gives the byte offset of the offending octet.
      return Error{fmt::format("invalid YAML: {}", problem),
                   LocationOfOffset(text_, p.problem_offset, file_)};
    }
    std::string message = fmt::format("invalid YAML: {}", problem);
    if (p.context) {
      message += fmt::format(" ({} that starts at line {}, column {})", p.context,
                             p.context_mark.line + 1, p.context_mark.column + 1);
    }
    return Error{std::move(message), Where(p.problem_mark)};
  }

  Arena& arena_;
  std::string_view text_;
  const std::string& file_;
  std::vector<Frame> stack_;
  std::vector<const NodeData*> kids_;
  std::unordered_map<std::string, const NodeData*> anchors_;
  const NodeData* root_ = nullptr;
  NodeData* pending_null_ = nullptr;
  yaml_mark_t pending_mark_{};
  std::vector<size_t> line_starts_;  // byte offset of each line, built at the first empty value
};

Result<Document> Document::Parse(std::string_view text, const std::string& file) {
  Document doc;
  Builder b(*doc.arena_, text, file);
  auto root = b.Run();
  if (!root) return root.error();
  doc.root_ = *root;
  return doc;
}

}  // namespace kiln::yaml
