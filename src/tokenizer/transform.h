// Rewriting normalised text while keeping every byte's place in the original
// input, with the alignment rules of Hugging Face's NormalizedString::transform
// (tokenizers/src/tokenizer/normalizer.rs). Token offsets of the SentencePiece
// components (Precompiled, Replace, Prepend, Strip, Metaspace) depend on these
// rules, quirks included, so they are reproduced rather than improved.
//
// Stateless functions: each changes only the NormalizedText it is given, so
// calls on different objects may run on different threads at once.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "tokenizer/normalizer.h"

namespace tokenbatch::tokenizer::internal {

// One output character and how it relates to the input characters, as Hugging
// Face's `(char, changes)` pairs: 0 replaces the next input character and takes
// its alignment; a positive value inserts a character, which takes the
// alignment of the byte just before the current input position; -n replaces the
// next input character and also removes the n characters after it.
struct CharChange {
  char32_t c;
  int change;
};

// Rewrites io.text into the characters of `changes`, after skipping
// `initial_removed` input characters. When `align` is set, io's per-byte
// alignments are recomputed (made explicit first when io is the identity).
// `changes` must not consume more input characters than io.text has.
void ApplyChanges(NormalizedText& io, const std::vector<CharChange>& changes, size_t initial_removed, bool align);

// Replaces every match of `matches` (sorted, non-overlapping [begin, end) byte
// ranges of io.text, possibly empty) with `content`; each inserted byte takes
// the alignment of the byte before the match's end (Hugging Face's
// NormalizedString::replace).
void ReplaceRanges(NormalizedText& io, const std::vector<std::pair<size_t, size_t>>& matches,
                   std::string_view content, bool align);

// Puts `prefix` before a non-empty io.text, aligned to its first character
// (Hugging Face's NormalizedString::prepend).
void PrependText(NormalizedText& io, std::string_view prefix, bool align);

// Removes leading (`left`) and trailing (`right`) White_Space characters; the
// others keep their alignments.
void StripWhitespace(NormalizedText& io, bool left, bool right, bool align);

// Makes io's alignments explicit (one [begin, end) per byte: its character's
// original range), if io is still the identity.
void EnsureAlignment(NormalizedText& io);

}  // namespace tokenbatch::tokenizer::internal
