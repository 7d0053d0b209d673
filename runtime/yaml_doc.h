#pragma once
// A compact, read-only YAML document for the loaders, parsed with libyaml.
//
// yaml-cpp keeps every node as a shared_ptr graph with a std::string per scalar and a std::map
// per mapping: a 100k-pod scenario (11.6 MB) took ~4 s and ~965 MiB. Here all nodes of one
// document live in an arena owned by the Document: a node is 32 bytes, a mapping is an array of
// (key, value) pointers, and scalar text is copied once into the arena. Node is a pointer-sized
// handle whose API mirrors the part of YAML::Node the loaders use (operator[], iteration with
// .first/.second, IsNull, IsScalar, Scalar, Mark), with yaml-cpp's semantics:
//  - a plain scalar "", "~", "null", "Null" or "NULL" is Null (and so is a missing value);
//  - a scalar written in quotes or as a block scalar (| or >) is "quoted": its value is a string
//    whatever it looks like (IsQuoted);
//  - marks are 0-based (pos, line, column) like yaml-cpp's; Where() makes them 1-based;
//  - aliases resolve to the anchored node; duplicate keys are kept in order (the Reader reports
//    them) and operator[] finds the first;
//  - a stream holds one document: a second one is an error at its `---` (yaml-cpp's Load reads
//    the first and ignores the rest);
//  - lists and maps nest at most 256 levels, as policies do; deeper is an error at the first
//    collection past the limit, found before libyaml reads further.
// This header does not include libyaml.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.h"

namespace kiln::yaml {

enum class NodeType : uint8_t { Undefined, Null, Scalar, Sequence, Map };

// 0-based position of a node's first character; -1 when unknown.
struct Mark {
  int pos = -1;
  int line = -1;
  int column = -1;
};

namespace detail {
// 24 bytes: a 100k-pod scenario has ~2.5M nodes.
struct NodeData {
  // Scalar: the text (`size` bytes); Sequence: `size` item pointers; Map: `size` (key, value)
  // pointer pairs, stored as 2 * size pointers.
  const void* data = nullptr;
  uint32_t size = 0;
  int32_t pos = -1;
  int32_t line = -1;
  int32_t column : 24 = -1;  // longer lines report no column
  NodeType type : 7 = NodeType::Null;
  bool quoted : 1 = false;
};
static_assert(sizeof(NodeData) == 24);
}  // namespace detail

class Node;

// What iterating a node yields: for a sequence, the item itself; for a map, `.first` is the key
// and `.second` the value (as yaml-cpp's iterator value does).
struct NodeItem;

class Node {
 public:
  Node() = default;
  explicit Node(const detail::NodeData* d) : d_(d) {}

  NodeType Type() const { return d_ ? d_->type : NodeType::Undefined; }
  bool IsDefined() const { return d_ != nullptr; }
  bool IsNull() const { return Type() == NodeType::Null; }
  bool IsScalar() const { return Type() == NodeType::Scalar; }
  bool IsSequence() const { return Type() == NodeType::Sequence; }
  bool IsMap() const { return Type() == NodeType::Map; }
  explicit operator bool() const { return IsDefined(); }

  // The text of a scalar; "" for anything else.
  std::string_view Scalar() const {
    return IsScalar() ? std::string_view(static_cast<const char*>(d_->data), d_->size)
                      : std::string_view();
  }
  // True for a scalar written in quotes or as a block scalar.
  bool IsQuoted() const { return IsScalar() && d_->quoted; }
  Mark GetMark() const { return d_ ? Mark{d_->pos, d_->line, d_->column} : Mark{}; }

  // Items of a sequence, pairs of a map; 0 otherwise.
  size_t size() const { return IsSequence() || IsMap() ? d_->size : 0; }
  // The value of the first key equal to `key` (an undefined node when absent or not a map).
  Node operator[](std::string_view key) const;
  // The i-th item of a sequence (an undefined node when out of range or not a sequence).
  Node operator[](size_t i) const;
  Node operator[](int i) const { return i < 0 ? Node() : (*this)[static_cast<size_t>(i)]; }

  // Same underlying node (aliases are the node they name).
  bool is(const Node& other) const { return d_ == other.d_; }

  class iterator;
  iterator begin() const;
  iterator end() const;

 private:
  const detail::NodeData* const* children() const {
    return static_cast<const detail::NodeData* const*>(d_->data);
  }
  const detail::NodeData* d_ = nullptr;
};

struct NodeItem : Node {
  NodeItem() = default;
  NodeItem(Node item, Node key, Node value) : Node(item), first(key), second(value) {}
  Node first;
  Node second;
};

class Node::iterator {
 public:
  using value_type = NodeItem;
  using difference_type = std::ptrdiff_t;
  using reference = const NodeItem&;
  using pointer = const NodeItem*;
  using iterator_category = std::forward_iterator_tag;

  iterator() = default;
  iterator(const detail::NodeData* const* at, const detail::NodeData* const* end, bool map)
      : at_(at), end_(end), map_(map) {
    Load();
  }

  reference operator*() const { return item_; }
  pointer operator->() const { return &item_; }
  iterator& operator++() {
    at_ += map_ ? 2 : 1;
    Load();
    return *this;
  }
  bool operator==(const iterator& o) const { return at_ == o.at_; }
  bool operator!=(const iterator& o) const { return at_ != o.at_; }

 private:
  void Load() {
    if (at_ == end_) return;
    if (map_) {
      item_ = NodeItem(Node(), Node(at_[0]), Node(at_[1]));
    } else {
      item_ = NodeItem(Node(at_[0]), Node(), Node());
    }
  }
  const detail::NodeData* const* at_ = nullptr;
  const detail::NodeData* const* end_ = nullptr;
  bool map_ = false;
  NodeItem item_;
};

// One parsed document: owns every node and scalar its Nodes point into.
class Document {
 public:
  Document();
  ~Document();
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;

  Node root() const { return Node(root_); }
  // Bytes the arena holds (for tests and the performance notes).
  size_t ArenaBytes() const;

  // Parses `text`. Syntax errors carry the 1-based position libyaml reports and `file`.
  static Result<Document> Parse(std::string_view text, const std::string& file);

 private:
  struct Arena;
  class Builder;
  std::unique_ptr<Arena> arena_;
  const detail::NodeData* root_ = nullptr;
};

}  // namespace kiln::yaml

namespace kiln::yaml {

inline Node::iterator Node::begin() const {
  if (!IsSequence() && !IsMap()) return iterator();
  const detail::NodeData* const* c = children();
  size_t n = IsMap() ? 2 * d_->size : d_->size;
  return iterator(c, c + n, IsMap());
}

inline Node::iterator Node::end() const {
  if (!IsSequence() && !IsMap()) return iterator();
  const detail::NodeData* const* c = children();
  size_t n = IsMap() ? 2 * d_->size : d_->size;
  return iterator(c + n, c + n, IsMap());
}

inline Node Node::operator[](std::string_view key) const {
  if (!IsMap()) return Node();
  const detail::NodeData* const* c = children();
  for (size_t i = 0; i < d_->size; ++i) {
    Node k(c[2 * i]);
    if (k.IsScalar() && k.Scalar() == key) return Node(c[2 * i + 1]);
  }
  return Node();
}

inline Node Node::operator[](size_t i) const {
  if (!IsSequence() || i >= d_->size) return Node();
  return Node(children()[i]);
}

}  // namespace kiln::yaml
