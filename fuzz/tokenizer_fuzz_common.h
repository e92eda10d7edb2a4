// Invariants of one encoding, shared by the tokenizer fuzz targets.
#pragma once

#include <algorithm>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::fuzz {

// Encodes `text` every way the server does and checks what must hold for any
// text: a text that encodes also counts, to the same number of tokens; offsets
// stay inside the text; a truncated encoding has exactly min(limit, tokens)
// tokens; no window and no cut pair is over its limit. Errors are allowed (a text may be refused), crashes are not.
inline void CheckEncodings(const tokenizer::Tokenizer& tok, std::string_view text, std::string_view second) {
  const absl::StatusOr<tokenizer::Encoding> full = tok.Encode(text);
  const absl::StatusOr<size_t> count = tok.Count(text);
  FUZZ_CHECK(full.ok() == count.ok());
  if (!full.ok()) return;
  FUZZ_CHECK(full->ids.size() == *count);
  FUZZ_CHECK(full->offsets.size() == full->ids.size());
  FUZZ_CHECK(full->special.size() == full->ids.size());
  for (const auto& [begin, end] : full->offsets) FUZZ_CHECK(begin <= end && end <= text.size());
  for (const uint32_t id : full->ids) FUZZ_CHECK(id < tok.VocabSize() || tok.IdToToken(id).has_value());

  const size_t limit = tok.NumSpecialTokens() + 3;
  const auto cut = tok.EncodeTruncated(text, limit);
  FUZZ_CHECK(cut.ok());
  FUZZ_CHECK(cut->ids.size() == std::min(limit, full->ids.size()));
  const auto windows = tok.EncodeWindows(text, limit, 1);
  if (windows.ok()) {
    FUZZ_CHECK(!windows->empty());
    for (const tokenizer::Encoding& w : *windows) FUZZ_CHECK(w.ids.size() <= limit);
  }
  (void)tok.Decode(full->ids, /*skip_special_tokens=*/true);
  (void)tok.Decode(full->ids, /*skip_special_tokens=*/false);

  const size_t pair_limit = tok.NumPairSpecialTokens() + full->ids.size() + 2;
  for (const auto truncation : {tokenizer::PairTruncation::kLongestFirst, tokenizer::PairTruncation::kOnlySecond}) {
    for (const auto side : {tokenizer::PairTruncationSide::kRight, tokenizer::PairTruncationSide::kLeft}) {
      const auto pair = tok.EncodePair(text, second, {.max_tokens = pair_limit, .side = side, .truncation = truncation});
      if (pair.ok()) {
        FUZZ_CHECK(pair->ids.size() <= pair_limit);
        FUZZ_CHECK(pair->type_ids.size() == pair->ids.size());
      }
    }
  }
}

}  // namespace tokenbatch::fuzz
