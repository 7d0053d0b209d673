#pragma once

// An enum's names as one table read both ways, so that its ToString and Parse cannot disagree.

#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name `names` gives `v`; `otherwise` for a value it does not list.
template <typename E, size_t N>
constexpr std::string_view NameOf(const EnumName<E> (&names)[N], E v, std::string_view otherwise) {
  for (const EnumName<E>& n : names)
    if (n.value == v) return n.name;
  return otherwise;
}

// The value `names` lists under `name`, if any.
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumName<E> (&names)[N], std::string_view name) {
  for (const EnumName<E>& n : names)
    if (n.name == name) return n.value;
  return std::nullopt;
}

}  // namespace kiln
