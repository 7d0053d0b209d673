#pragma once
// Errors a user can cause (bad YAML, bad quantity, bad scheduler.conf, bad policy) travel as
// values with their location, never as exceptions escaping to main and never as exit().

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

namespace kiln {

// 1-based line and column; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

struct Error {
  std::string message;
  SourceLocation where;

  // "file:line:col: error: message" (parts that are unknown are left out).
  std::string Format() const {
    std::string out;
    if (!where.file.empty()) out += where.file + ":";
    if (where.line > 0) out += fmt::format("{}:", where.line);
    if (where.line > 0 && where.column > 0) out += fmt::format("{}:", where.column);
    if (!out.empty()) out += " ";
    return out + "error: " + message;
  }
};

// Either a value or an Error. A small stand-in for std::expected, which C++20 lacks.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), failed_(true) {}
  static Status Ok() { return {}; }

  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace kiln
