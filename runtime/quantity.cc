#include "runtime/quantity.h"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <limits>

namespace kiln {
namespace {

using i128 = __int128;
constexpr i128 kNano = 1'000'000'000;
// Values are clamped far below the 128-bit limit so products in MilliValue/Value cannot overflow.
constexpr i128 kClamp = static_cast<i128>(1) << 120;

i128 Pow10(int n) {
  i128 r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}

// ceil(a / b) for b > 0.
i128 CeilDiv(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && a > 0) ++q;
  return q;
}

int64_t Saturate(i128 v) {
  if (v > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (v < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

Error InvalidQuantity(std::string_view text) {
  return Error{fmt::format("invalid quantity \"{}\"", text), {}};
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

int64_t Quantity::MilliValue() const { return Saturate(CeilDiv(nanos, 1'000'000)); }
int64_t Quantity::Value() const { return Saturate(CeilDiv(nanos, kNano)); }

Result<Quantity> ParseQuantity(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return InvalidQuantity(text);
  bool negative = false;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') {
    negative = s[i] == '-';
    ++i;
  }
  // Mantissa as an integer with `frac_digits` decimal places. Digits beyond 40 would overflow;
  // Kubernetes rejects such precision loss too, so treat them as invalid.
  i128 mantissa = 0;
  int digits = 0;
  int frac_digits = 0;
  bool seen_dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (IsDigit(c)) {
      if (digits >= 36) return InvalidQuantity(text);
      mantissa = mantissa * 10 + (c - '0');
      if (mantissa != 0 || seen_dot) ++digits;
      if (seen_dot) ++frac_digits;
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  // At least one digit: count leading zeros as digits for this check.
  bool any_digit = false;
  for (size_t k = 0; k < i; ++k) any_digit |= IsDigit(s[k]);
  if (!any_digit) return InvalidQuantity(text);

  std::string_view suffix = s.substr(i);
  // value = mantissa × 10^-frac × (10^exp10 | 2^exp2)
  int exp10 = 0;
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "n") {
    exp10 = -9;
  } else if (suffix == "u") {
    exp10 = -6;
  } else if (suffix == "m") {
    exp10 = -3;
  } else if (suffix == "k") {
    exp10 = 3;
  } else if (suffix == "M") {
    exp10 = 6;
  } else if (suffix == "G") {
    exp10 = 9;
  } else if (suffix == "T") {
    exp10 = 12;
  } else if (suffix == "P") {
    exp10 = 15;
  } else if (suffix == "E") {
    exp10 = 18;
  } else if (suffix == "Ki") {
    exp2 = 10;
  } else if (suffix == "Mi") {
    exp2 = 20;
  } else if (suffix == "Gi") {
    exp2 = 30;
  } else if (suffix == "Ti") {
    exp2 = 40;
  } else if (suffix == "Pi") {
    exp2 = 50;
  } else if (suffix == "Ei") {
    exp2 = 60;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 4) return InvalidQuantity(text);
    int v = 0;
    for (char c : e) {
      if (!IsDigit(c)) return InvalidQuantity(text);
      v = v * 10 + (c - '0');
    }
    exp10 = eneg ? -v : v;
  } else {
    return InvalidQuantity(text);
  }

  // nanos = mantissa × 2^exp2 × 10^(exp10 + 9 − frac), rounded up when fractional.
  int scale = exp10 + 9 - frac_digits;
  i128 v = mantissa;
  bool clamped = false;
  auto mul = [&](i128 f) {
    if (v != 0 && v > kClamp / f) {
      clamped = true;
      v = kClamp;
    } else {
      v *= f;
    }
  };
  if (exp2 > 0) mul(static_cast<i128>(1) << exp2);
  if (scale >= 0) {
    for (int k = 0; k < scale && !clamped; ++k) mul(10);
  } else {
    int down = -scale;
    if (down > 38) {
      v = v == 0 ? 0 : 1;  // below one nano: rounds up to 1n like Kubernetes
    } else {
      v = CeilDiv(v, Pow10(down));
    }
  }
  Quantity q;
  q.nanos = negative ? -v : v;
  return q;
}

Result<double> ParseResourceQuantity(std::string_view name, std::string_view text) {
  auto q = ParseQuantity(text);
  if (!q.ok()) return q.error();
  if (name == "cpu") return static_cast<double>(q->MilliValue());
  if (name == "memory" || name == "pods") return static_cast<double>(q->Value());
  return static_cast<double>(q->MilliValue());
}

Result<int64_t> ParseGoDuration(std::string_view text) {
  auto invalid = [&] { return Error{fmt::format("invalid duration \"{}\"", text), {}}; };
  std::string_view s = text;
  if (s.empty()) return invalid();
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return int64_t{0};
  if (s.empty()) return invalid();
  long double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    long double whole = 0;
    bool any = false;
    while (i < s.size() && IsDigit(s[i])) {
      whole = whole * 10 + (s[i] - '0');
      ++i;
      any = true;
    }
    long double frac = 0, scale = 1;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && IsDigit(s[i])) {
        frac = frac * 10 + (s[i] - '0');
        scale *= 10;
        ++i;
        any = true;
      }
    }
    if (!any) return invalid();
    size_t j = i;
    while (j < s.size() && !IsDigit(s[j]) && s[j] != '.') ++j;
    std::string_view unit = s.substr(i, j - i);
    long double mult;
    if (unit == "ns") {
      mult = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      mult = 1e3;
    } else if (unit == "ms") {
      mult = 1e6;
    } else if (unit == "s") {
      mult = 1e9;
    } else if (unit == "m") {
      mult = 60e9;
    } else if (unit == "h") {
      mult = 3600e9;
    } else {
      return invalid();
    }
    total += (whole + frac / scale) * mult;
    s.remove_prefix(j);
  }
  if (total > static_cast<long double>(std::numeric_limits<int64_t>::max())) return invalid();
  int64_t ns = static_cast<int64_t>(std::llround(total));
  return negative ? -ns : ns;
}

namespace {
// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
}  // namespace

Result<int64_t> ParseTimestamp(std::string_view text) {
  auto invalid = [&] { return Error{fmt::format("invalid timestamp \"{}\"", text), {}}; };
  std::string_view s = text;
  auto num = [&](size_t pos, size_t len, int& out) {
    if (pos + len > s.size()) return false;
    out = 0;
    for (size_t k = pos; k < pos + len; ++k) {
      if (!IsDigit(s[k])) return false;
      out = out * 10 + (s[k] - '0');
    }
    return true;
  };
  int year, month, day, hour, minute, second;
  if (!num(0, 4, year) || s.size() < 19 || s[4] != '-' || !num(5, 2, month) || s[7] != '-' ||
      !num(8, 2, day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !num(11, 2, hour) ||
      s[13] != ':' || !num(14, 2, minute) || s[16] != ':' || !num(17, 2, second))
    return invalid();
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
    return invalid();
  size_t i = 19;
  int64_t frac_ns = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int64_t scale = 100'000'000;
    bool any = false;
    while (i < s.size() && IsDigit(s[i])) {
      frac_ns += (s[i] - '0') * scale;
      scale /= 10;
      ++i;
      any = true;
    }
    if (!any) return invalid();
  }
  int64_t offset_s = 0;
  if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh, om;
    if (!num(i + 1, 2, oh) || i + 3 >= s.size() || s[i + 3] != ':' || !num(i + 4, 2, om))
      return invalid();
    offset_s = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return invalid();
  }
  if (i != s.size()) return invalid();
  int64_t days = DaysFromCivil(year, month, day);
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  // Nanoseconds since 1970 in an int64 reach from 1677-09-21 to 2262-04-11: a time outside is
  // refused rather than wrapped around (found by the kube fuzzer).
  constexpr int64_t kMaxSeconds = INT64_MAX / 1'000'000'000 - 1;
  if (secs > kMaxSeconds || secs < -kMaxSeconds)
    return Error{fmt::format("invalid timestamp \"{}\": outside 1677-09-22 to 2262-04-10, the times "
                             "nanoseconds since 1970 can hold",
                             text),
                 {}};
  return secs * 1'000'000'000 + frac_ns;
}

bool IsZeroTimestamp(std::string_view text) {
  constexpr std::string_view kDate = "0001-01-01";
  constexpr std::string_view kClock = "00:00:00";
  if (text.size() < 19 || text.substr(0, 10) != kDate || text.substr(11, 8) != kClock) return false;
  if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') return false;
  std::string_view rest = text.substr(19);
  if (!rest.empty() && rest.front() == '.') {
    size_t digits = rest.find_first_not_of('0', 1);
    if (digits == 1 || (digits != std::string_view::npos && IsDigit(rest[digits]))) return false;
    rest.remove_prefix(digits == std::string_view::npos ? rest.size() : digits);
  }
  return rest == "Z" || rest == "z" || rest == "+00:00" || rest == "-00:00";
}

std::string FormatResourceQuantity(std::string_view name, double v) {
  auto integral = [](double x) { return std::fabs(x - std::round(x)) < 1e-6; };
  if (name == "memory") {
    static constexpr std::pair<const char*, double> kUnits[] = {
        {"Ti", 1099511627776.0}, {"Gi", 1073741824.0}, {"Mi", 1048576.0}, {"Ki", 1024.0}};
    for (const auto& [suffix, unit] : kUnits)
      if (v != 0 && std::fabs(v) >= unit && integral(v / unit))
        return fmt::format("{}{}", static_cast<int64_t>(std::round(v / unit)), suffix);
    if (integral(v)) return fmt::format("{}", static_cast<int64_t>(std::round(v)));
    return fmt::format("{:.0f}", v);
  }
  if (name == "pods") {
    if (integral(v)) return fmt::format("{}", static_cast<int64_t>(std::round(v)));
    return fmt::format("{:g}", v);
  }
  // Milli-units.
  if (integral(v / 1000)) return fmt::format("{}", static_cast<int64_t>(std::round(v / 1000)));
  if (integral(v)) return fmt::format("{}m", static_cast<int64_t>(std::round(v)));
  return fmt::format("{:.3f}m", v);
}

}  // namespace kiln
