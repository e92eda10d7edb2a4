// Unicode helpers over utf8proc; see unicode.h.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::tokenizer::internal {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};
#include "tokenizer/unicode_tables.inc"

template <size_t N>
bool InRanges(const CodePointRange (&table)[N], char32_t c) {
  const CodePointRange* it = std::upper_bound(std::begin(table), std::end(table), c,
                                              [](char32_t v, const CodePointRange& r) { return v < r.first; });
  return it != std::begin(table) && c <= (it - 1)->last;
}

utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

// GPT-2's table: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order (the "bytes_to_unicode" of openai/gpt-2 encoder.py).
struct ByteTables {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 324> to_byte{};
  ByteTables() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      to_unicode[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      to_byte[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

absl::Status ValidateUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) { ++i; continue; }
    // utf8proc_iterate rejects overlong forms, surrogates and > U+10FFFF.
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t len = utf8proc_iterate(
        reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i), static_cast<utf8proc_ssize_t>(n - i), &cp);
    if (len <= 0 || cp < 0) {
      return InvalidArgumentError(absl::StrCat("input is not valid UTF-8: bad byte 0x",
                                               absl::Hex(b0), " at byte offset ", i));
    }
    i += static_cast<size_t>(len);
  }
  return absl::OkStatus();
}

std::optional<char32_t> SingleCharacter(std::string_view s) {
  if (s.empty() || !ValidateUtf8(s).ok()) return std::nullopt;
  int len = 0;
  const char32_t c = DecodeUtf8(s, 0, len);
  if (static_cast<size_t>(len) != s.size()) return std::nullopt;
  return c;
}

bool IsAscii(std::string_view s) {
  for (const char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

bool IsWhitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool IsPunctuation(char32_t c) {
  const auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool IsOther(char32_t c) {
  const auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_CC;
}

bool IsNonspacingMark(char32_t c) { return Category(c) == UTF8PROC_CATEGORY_MN; }

bool IsMark(char32_t c) {
  const auto cat = Category(c);
  return cat >= UTF8PROC_CATEGORY_MN && cat <= UTF8PROC_CATEGORY_ME;
}

bool IsRegexWordChar(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  return InRanges(kRegexWordRanges, c);
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return InRanges(kNumericRanges, c);
}

bool IsChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void AppendLowercase(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return;
  }
  if (c == 0x130) {  // the only unconditional multi-code-point lowercase mapping
    out.push_back('i');
    AppendUtf8(0x307, out);
    return;
  }
  AppendUtf8(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))), out);
}

namespace {
std::string MapUnicode(std::string_view s, utf8proc_option_t options) {
  if (IsAscii(s)) return std::string(s);
  utf8proc_uint8_t* result = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                          static_cast<utf8proc_ssize_t>(s.size()), &result, options);
  if (n < 0) return std::string(s);  // unreachable for valid UTF-8 (validated before)
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(result, &std::free);
  return std::string(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
}
}  // namespace

std::string DecomposeUnicode(std::string_view s, bool compat) {
  return MapUnicode(s, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
                                                      (compat ? UTF8PROC_COMPAT : 0)));
}

std::string NormalizeUnicode(std::string_view s, bool compat) {
  return MapUnicode(s, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE |
                                                      (compat ? UTF8PROC_COMPAT : 0)));
}

char32_t ByteToUnicode(uint8_t b) { return Tables().to_unicode[b]; }

int UnicodeToByte(char32_t c) {
  return c < Tables().to_byte.size() ? Tables().to_byte[c] : -1;
}

}  // namespace tokenbatch::tokenizer::internal
