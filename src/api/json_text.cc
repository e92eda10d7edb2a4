// Checks and rewrites of a JSON body's raw text (see json_text.h).
#include "api/json_text.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tokenbatch::server {
namespace {

// Whether `s` is exactly a JSON number (RFC 8259 section 6):
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonNumber(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > from;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// Whether simdjson can hold the JSON number `literal`: an integer in
// [-2^63, 2^64), or a decimal whose magnitude does not overflow a double.
bool FitsSimdjson(std::string_view literal) {
  if (literal.find_first_of(".eE") == std::string_view::npos) {
    std::int64_t i = 0;
    std::uint64_t u = 0;
    const absl::string_view digits(literal.data(), literal.size());
    return absl::SimpleAtoi(digits, &i) || absl::SimpleAtoi(digits, &u);
  }
  // SimpleAtod: no locale, and infinity for a value beyond a double (zero below).
  double d = 0;
  return absl::SimpleAtod(absl::string_view(literal.data(), literal.size()), &d) && std::isfinite(d);
}

// Follows the JSON strings of a body one character at a time: Inside(c) is true
// for the characters of a string, its quotes included.
class StringScanner {
 public:
  bool Inside(char c) {
    if (in_string_) {
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') in_string_ = false;
      return true;
    }
    in_string_ = c == '"';
    return in_string_;
  }

 private:
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace

std::size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // no overlong forms
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;  // <= U+10FFFF
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

int JsonNestingDepth(std::string_view s) {
  int depth = 0, max_depth = 0;
  StringScanner strings;
  for (char c : s) {
    if (strings.Inside(c)) continue;
    if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

ClampedBody ClampHugeNumbers(std::string_view body) {
  std::vector<std::pair<std::size_t, std::size_t>> numbers;  // [begin, end) of each number outside strings
  StringScanner strings;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (strings.Inside(c)) continue;
    if (c == '-' || absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i + 1;
      while (j < body.size() && (absl::ascii_isdigit(static_cast<unsigned char>(body[j])) || body[j] == '.' ||
                                 body[j] == 'e' || body[j] == 'E' || body[j] == '+' || body[j] == '-')) {
        ++j;
      }
      // Only long numbers and exponents can be huge or collide with a substitute
      // (19 or 20 characters): a body of small numbers costs no memory here.
      const std::string_view span = body.substr(i, j - i);
      if (span.size() >= 19 || span.find_first_of("eE") != std::string_view::npos) numbers.emplace_back(i, j);
      i = j - 1;
    }
  }
  // Substitutes have 19 or 20 characters: only numbers as long can collide with one.
  std::set<std::string_view> literals;
  for (const auto& [b, e] : numbers) {
    if (e - b >= 19 && e - b <= 20) literals.insert(body.substr(b, e - b));
  }
  ClampedBody out;
  std::uint64_t next_positive = UINT64_MAX;
  std::int64_t next_negative = INT64_MIN;
  std::size_t copied = 0;
  for (const auto& [b, e] : numbers) {
    const std::string_view literal = body.substr(b, e - b);
    if (!IsJsonNumber(literal) || FitsSimdjson(literal)) continue;
    std::string substitute;
    do {  // distinct from every number in the body, so Literal maps it back unambiguously
      substitute = literal[0] == '-' ? absl::StrCat(next_negative++) : absl::StrCat(next_positive--);
    } while (literals.contains(substitute));
    out.body.append(body.substr(copied, b - copied));
    out.body += substitute;
    copied = e;
    out.originals.emplace(std::move(substitute), literal.size() <= 48
                                                     ? std::string(literal)
                                                     : std::string(literal.substr(0, 45)) + "...");
  }
  out.body.append(body.substr(copied));
  return out;
}

}  // namespace tokenbatch::server
