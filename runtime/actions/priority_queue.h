#pragma once
// Volcano's util.PriorityQueue: a binary min-heap on a "less" function, with exactly the sift
// steps of Go's container/heap. Kiln's actions order jobs, queues, tasks and victims through it so
// that elements the order functions call equal come out in the same order Volcano's heap would
// give for the same pushes — and, unlike sorting, an inconsistent order function (a policy whose
// comparison is not a strict weak order) cannot make it misbehave.

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace kiln {

template <typename T>
class PriorityQueue {
 public:
  using LessFn = std::function<bool(const T&, const T&)>;

  explicit PriorityQueue(LessFn less) : less_(std::move(less)) {}

  void Push(T x) {
    items_.push_back(std::move(x));
    Up(items_.size() - 1);
  }

  // Removes and returns the least element. Must not be empty.
  T Pop() {
    size_t n = items_.size() - 1;
    std::swap(items_[0], items_[n]);
    Down(0, n);
    T out = std::move(items_.back());
    items_.pop_back();
    return out;
  }

  bool Empty() const { return items_.empty(); }
  size_t Len() const { return items_.size(); }

 private:
  bool Less(size_t i, size_t j) const { return less_(items_[i], items_[j]); }

  void Up(size_t j) {
    while (j > 0) {
      size_t i = (j - 1) / 2;
      if (!Less(j, i)) break;
      std::swap(items_[i], items_[j]);
      j = i;
    }
  }

  void Down(size_t i, size_t n) {
    for (;;) {
      size_t j1 = 2 * i + 1;
      if (j1 >= n) break;
      size_t j = j1;
      if (size_t j2 = j1 + 1; j2 < n && Less(j2, j1)) j = j2;
      if (!Less(j, i)) break;
      std::swap(items_[i], items_[j]);
      i = j;
    }
  }

  LessFn less_;
  std::vector<T> items_;
};

}  // namespace kiln
