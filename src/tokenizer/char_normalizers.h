// Normalizers that rewrite text one character at a time: StripAccents, Nmt and
// ByteLevel, as Hugging Face tokenizers' (tokenizers/src/normalizers/
// {strip,unicode,byte_level}.rs). Each output character keeps the original range
// of the input character it came from, which is what Hugging Face's filter, map
// and transform calls leave for these rules.
//
// Stateless functions: each changes only the NormalizedText it is given.
#pragma once

#include "tokenizer/normalizer.h"

namespace tokenbatch::tokenizer::internal {

// Removes every combining mark (general category M*).
void StripAccents(NormalizedText& io, bool align);

// Removes every nonspacing mark (Mn) and, when `lowercase`, lowercases the rest:
// BertNormalizer's strip_accents after its NFD, and its lowercase.
void StripNonspacingMarks(NormalizedText& io, bool align, bool lowercase);

// SentencePiece's NMT rules: removes the control characters U+0001..U+0008,
// U+000B, U+000E..U+001F, U+007F, U+008F and U+009F; turns U+0009, U+000A,
// U+000C, U+000D, U+1680, U+200B..U+200F, U+2028, U+2029, U+2581, U+FEFF and
// U+FFFD into a space.
void NmtNormalize(NormalizedText& io, bool align);

// Replaces every byte of the text by its character in GPT-2's byte alphabet.
void ByteLevelNormalize(NormalizedText& io, bool align);

}  // namespace tokenbatch::tokenizer::internal
