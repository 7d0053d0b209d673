#pragma once

// Values that many owners share behind a std::shared_ptr<const T> and copy on write (a task's
// pod shape, a pod spec's placement): most owners have none of it and share one empty value.

#include <memory>

namespace kiln {

// The one empty T every owner with none of it shares.
template <typename T>
const std::shared_ptr<const T>& SharedEmpty() {
  static const std::shared_ptr<const T> empty = std::make_shared<const T>();
  return empty;
}

// The value `p` holds, for writing: copied first unless `p` is its only owner.
template <typename T>
T& MutableShared(std::shared_ptr<const T>& p) {
  if (p.use_count() != 1) p = std::make_shared<T>(*p);
  // The only owner, and never the shared empty value (whose static holds a reference).
  return const_cast<T&>(*p);
}

}  // namespace kiln
