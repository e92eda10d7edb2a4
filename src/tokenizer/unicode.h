// UTF-8 decoding and the Unicode predicates the tokenizer components need, on top
// of utf8proc (Debian's libutf8proc). Internal to src/tokenizer.
//
// All functions are pure and thread-safe. Most character properties come from
// the utf8proc tables (Unicode 15.0 in Debian 12's libutf8proc 2.8); Hugging Face
// uses Rust's tables, which are newer, so code points assigned after Unicode 15.0
// may be classified differently (see testdata/tokenizer/exceptions.json). The
// classes that Rust code of the reference tests directly (IsRegexWordChar,
// IsNumeric) come from generated Unicode 16.0 tables instead, the version of the
// reference wheel's regex crate (scripts/tokenizer/gen_unicode_tables.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace tokenbatch::tokenizer::internal {

// Decodes the code point at s[i]. Requires `s` to be valid UTF-8 (see
// ValidateUtf8) and i < s.size(); sets `len` to its length in bytes (1-4).
inline char32_t DecodeUtf8(std::string_view s, size_t i, int& len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) { len = 1; return b0; }
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k]) & 0x3F); };
  if (b0 < 0xE0) { len = 2; return (static_cast<char32_t>(b0 & 0x1F) << 6) | b(1); }
  if (b0 < 0xF0) { len = 3; return (static_cast<char32_t>(b0 & 0x0F) << 12) | (b(1) << 6) | b(2); }
  len = 4;
  return (static_cast<char32_t>(b0 & 0x07) << 18) | (b(1) << 12) | (b(2) << 6) | b(3);
}

// Appends the UTF-8 encoding of `c` to `out`.
void AppendUtf8(char32_t c, std::string& out);

// OK when `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
// U+10FFFF); otherwise InvalidArgumentError naming the first bad byte offset.
[[nodiscard]] absl::Status ValidateUtf8(std::string_view s);

// The code point of `s` when `s` is exactly one well-formed UTF-8 character;
// nullopt otherwise (empty, longer, or malformed).
[[nodiscard]] std::optional<char32_t> SingleCharacter(std::string_view s);

// True when every byte is < 0x80.
[[nodiscard]] bool IsAscii(std::string_view s);

// Rust's char::is_whitespace (the Unicode White_Space property).
[[nodiscard]] bool IsWhitespace(char32_t c);
// Unicode general category P* (Pc, Pd, Ps, Pe, Pi, Pf, Po).
[[nodiscard]] bool IsPunctuation(char32_t c);
// Unicode general categories Cc, Cf, Co and Cs: what BertNormalizer's clean_text
// removes. Unassigned code points (Cn) are kept, as Hugging Face keeps them.
[[nodiscard]] bool IsOther(char32_t c);
// Unicode general category Mn (what strip_accents removes after NFD).
[[nodiscard]] bool IsNonspacingMark(char32_t c);
// Unicode general category M* (Mn, Mc, Me): what the StripAccents normalizer
// removes (unicode-normalization's is_combining_mark).
[[nodiscard]] bool IsMark(char32_t c);
// The Rust regex crate's `\w` (Alphabetic, marks, Nd, Pc, Join_Control) from
// the Unicode 16.0 tables of unicode_tables.inc: the word boundary of
// single_word added tokens.
[[nodiscard]] bool IsRegexWordChar(char32_t c);
// Rust's char::is_numeric (Nd, Nl, No) from the Unicode 16.0 tables of
// unicode_tables.inc: what the Digits pre-tokenizer splits on (the reference's
// standard library is Unicode 17.0: numbers added there differ).
[[nodiscard]] bool IsNumeric(char32_t c);
// The CJK ideograph blocks of the original BERT tokenizer (handle_chinese_chars).
[[nodiscard]] bool IsChineseChar(char32_t c);

// Appends the full lowercase mapping of `c` (Rust's char::to_lowercase: simple
// mappings plus U+0130 -> "i\u0307").
void AppendLowercase(char32_t c, std::string& out);

// Normalises `s` (valid UTF-8) to NFD (`compat` false) or NFKD (`compat` true).
[[nodiscard]] std::string DecomposeUnicode(std::string_view s, bool compat = false);

// Normalises `s` (valid UTF-8) to NFC (`compat` false) or NFKC (`compat` true).
[[nodiscard]] std::string NormalizeUnicode(std::string_view s, bool compat);

// GPT-2's byte-level alphabet: the printable code point standing for byte `b`.
[[nodiscard]] char32_t ByteToUnicode(uint8_t b);
// Inverse of ByteToUnicode; -1 when `c` stands for no byte.
[[nodiscard]] int UnicodeToByte(char32_t c);

}  // namespace tokenbatch::tokenizer::internal
