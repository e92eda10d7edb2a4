// The Unicode normalization forms NFC, NFKC, NFD and NFKD on a NormalizedText,
// with the alignments Hugging Face's unicode-normalization-alignments crate
// gives (tokenizers/src/tokenizer/normalizer.rs: nfc/nfd/...): every output
// character carries a change (0: it stands for the next input character, +1:
// it was inserted by a decomposition), the pairs are put into canonical order
// and composed together, and the changes are then applied in output order
// (transform.h's ApplyChanges). So a mark moved by canonical ordering takes
// the place, and the alignment, its position in the output gives it.
//
// Stateless; safe on any thread.
#pragma once

#include "tokenizer/normalizer.h"

namespace tokenbatch::tokenizer::internal {

// Normalises io (valid UTF-8) to NFD (`decompose`) or NFC, by compatibility
// (NFKD, NFKC) when `compat`; recomputes io's alignments when `align`.
void ApplyUnicodeForm(NormalizedText& io, bool align, bool compat, bool decompose);

}  // namespace tokenbatch::tokenizer::internal
