#pragma once
// Errors a user can cause (bad YAML, bad quantity, bad scheduler.conf, bad policy) travel as
// values with their location, never as exceptions escaping to main and never as exit().

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kiln {

// The file (or object) a SourceLocation points into. Copies share one string: every object a
// loader reads from one file carries that file's name, and a 100k-pod scenario kept 100k copies
// of its path (docs/performance.md, "Memory"). Empty by default; never changes once made.
class SourceName {
 public:
  SourceName() = default;
  // Converts implicitly, as the std::string it stands for did.
  SourceName(std::string name)  // NOLINT(google-explicit-constructor)
      : name_(name.empty() ? nullptr : std::make_shared<const std::string>(std::move(name))) {}
  SourceName(std::string_view name) : SourceName(std::string(name)) {}  // NOLINT
  SourceName(const char* name) : SourceName(std::string(name)) {}        // NOLINT

  const std::string& str() const { return name_ ? *name_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT
  bool empty() const { return name_ == nullptr; }

  friend bool operator==(const SourceName& a, const SourceName& b) { return a.str() == b.str(); }
  friend bool operator==(const SourceName& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SourceName& a, std::string_view b) { return a.str() == b; }
  friend bool operator==(const SourceName& a, const char* b) { return a.str() == b; }

 private:
  static const std::string& Empty() {
    static const std::string empty;
    return empty;
  }
  std::shared_ptr<const std::string> name_;
};

// 1-based line and column; 0 means unknown.
struct SourceLocation {
  SourceName file;
  int line = 0;
  int column = 0;
};

struct Error {
  std::string message;
  SourceLocation where;

  // "file:line:col: error: message" (parts that are unknown are left out).
  std::string Format() const {
    std::string out;
    if (!where.file.empty()) out += where.file.str() + ":";
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

// Formats as the name itself.
template <>
struct fmt::formatter<kiln::SourceName> : fmt::formatter<std::string_view> {
  template <typename FormatContext>
  auto format(const kiln::SourceName& name, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(name.str(), ctx);
  }
};
