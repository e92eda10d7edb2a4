// Text helpers of the decoders (Rust's str::replace and String::from_utf8_lossy,
// Hugging Face's WordPiece cleanup), shared by the decoder steps.
//
// Pure functions; safe on any thread.
#pragma once

#include <string>
#include <string_view>

namespace tokenbatch::tokenizer::internal {

// U+FFFD REPLACEMENT CHARACTER in UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// `s` with every non-overlapping occurrence of `from`, scanning left to right,
// replaced by `to`; an empty `from` matches at every character boundary, both
// ends included (Rust's str::replace, which the decoders use). `s` is valid UTF-8.
[[nodiscard]] std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to);

// WordPiece's cleanup (Hugging Face decoders/wordpiece.rs): spaces before
// punctuation and English contractions removed, in a fixed order of rules.
[[nodiscard]] std::string WordPieceCleanup(std::string s);

// Decodes `bytes` as UTF-8, replacing each maximal ill-formed subsequence with
// U+FFFD (the Unicode Standard's "substitution of maximal subparts", as Rust's
// String::from_utf8_lossy does).
[[nodiscard]] std::string Utf8Lossy(std::string_view bytes);

}  // namespace tokenbatch::tokenizer::internal
