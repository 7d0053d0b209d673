#include "compiler/parse/literals.h"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace kiln {

std::optional<std::string> DecodeStringLiteral(std::string_view token) {
  if (token.size() < 2) return std::nullopt;
  std::string_view body = token.substr(1, token.size() - 2);
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= body.size()) return std::nullopt;
    switch (body[i]) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      default: return std::nullopt;
    }
  }
  return out;
}

namespace {
// Reads a decimal number (digits with an optional fraction) at `pos`.
std::optional<double> ReadNumber(std::string_view s, size_t& pos) {
  size_t start = pos;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
  }
  if (pos == start || (pos == start + 1 && s[start] == '.')) return std::nullopt;
  return std::strtod(std::string(s.substr(start, pos - start)).c_str(), nullptr);
}
}  // namespace

std::optional<int64_t> ParseDurationText(std::string_view s, bool allow_days) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  if (s == "0") return 0;
  double total = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    auto num = ReadNumber(s, pos);
    if (!num) return std::nullopt;
    double unit = 0;
    auto rest = s.substr(pos);
    auto take = [&](std::string_view u, double v) {
      if (rest.substr(0, u.size()) == u) {
        unit = v;
        pos += u.size();
        return true;
      }
      return false;
    };
    // Longest units first: "ms" before "m", "ns"/"us" before "s".
    if (!(take("ns", 1) || take("us", 1e3) || take("\xC2\xB5s", 1e3) || take("ms", 1e6) ||
          take("s", 1e9) || take("m", 60e9) || take("h", 3600e9) ||
          (allow_days && take("d", 86400e9))))
      return std::nullopt;
    total += *num * unit;
  }
  if (negative) total = -total;
  constexpr double kMax = static_cast<double>(std::numeric_limits<int64_t>::max());
  if (total >= kMax) return std::numeric_limits<int64_t>::max();
  if (total <= -kMax) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(total);
}

std::optional<double> ParseQuantityText(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t pos = 0;
  auto num = ReadNumber(s, pos);
  if (!num) return std::nullopt;
  std::string_view suffix = s.substr(pos);
  double mult = 1;
  if (suffix.empty()) {
    mult = 1;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    char* end = nullptr;
    std::string exp(suffix.substr(1));
    long e = std::strtol(exp.c_str(), &end, 10);
    if (exp.empty() || *end != '\0' || e > 308 || e < -308) return std::nullopt;
    mult = std::pow(10.0, static_cast<double>(e));
  } else {
    struct Suffix {
      std::string_view s;
      double m;
    };
    static constexpr Suffix kSuffixes[] = {
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0}, {"n", 1e-9}, {"u", 1e-6},
        {"m", 1e-3}, {"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
    };
    bool found = false;
    for (const auto& x : kSuffixes) {
      if (suffix == x.s) {
        mult = x.m;
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  double v = *num * mult;
  return negative ? -v : v;
}

}  // namespace kiln
