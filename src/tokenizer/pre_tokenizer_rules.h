// The splitting rules that the pre-tokenizers share: how a split keeps the
// delimiters it finds (Hugging Face's SplitDelimiterBehavior,
// tokenizers/src/tokenizer/normalizer.rs), the character classes that
// Punctuation, Digits and CharDelimiterSplit split on, FixedLength's chunks and
// UnicodeScripts' script runs.
//
// Stateless functions over the Word they are given; safe on any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace tokenbatch::tokenizer::internal {

// The behaviour named as in tokenizer.json ("Removed", "Isolated", ...);
// nullopt for any other name.
[[nodiscard]] std::optional<SplitBehavior> ParseSplitBehavior(std::string_view name);

// Appends word w's sub-range [b, e) of its virtual string (" " + text when
// w.prefix_space) to `out`, dropping it when empty.
void EmitWordPart(const Word& w, size_t b, size_t e, std::vector<Word>& out);

// Cuts the virtual string of `w` (`size` bytes) at `matches` (sorted,
// non-overlapping [begin, end) byte ranges): the matches are the delimiters,
// or, when `invert`, the gaps between them are.
void SplitAtMatches(const Word& w, size_t size, const std::vector<std::pair<size_t, size_t>>& matches,
                    SplitBehavior behavior, bool invert, std::vector<Word>& out);

// Replaces `matches` with the byte range of every character of `s` in `cls`
// (`delimiter` for kDelimiter).
void FindCharMatches(std::string_view s, CharClass cls, char32_t delimiter,
                     std::vector<std::pair<size_t, size_t>>& matches);

// Cuts the virtual string `s` of `w` into chunks of `length` characters (the
// last may be shorter); `length` > 0.
void SplitFixedLength(const Word& w, std::string_view s, size_t length, std::vector<Word>& out);

// The script class of `c` in Hugging Face's UnicodeScripts pre-tokenizer
// (tokenizers/src/pre_tokenizers/unicode_scripts), Hiragana, Katakana and
// U+30FC counted as Han: 0 ("Any") for ' ' and the characters its table does
// not list, else a number shared by exactly the characters of one script.
[[nodiscard]] int UnicodeScriptClass(char32_t c);

// Cuts the virtual string `s` of `w` as UnicodeScripts does: before every
// character whose class is not Any and differs from the last class other than
// Any before it. Any characters join the word before them; those before the
// word's first character that is not Any (all of a word of Any characters
// only) are dropped, as the reference drops them.
void SplitUnicodeScripts(const Word& w, std::string_view s, std::vector<Word>& out);

}  // namespace tokenbatch::tokenizer::internal
