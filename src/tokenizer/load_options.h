// The tokenizer.json rewrite behind LoadOptions (tokenbatch/tokenizer/tokenizer.h):
// what sentence-transformers changes in a tokenizer when a model directory's
// other files say so. A pure function over JSON values.
#pragma once

#include "nlohmann/json.hpp"

namespace tokenbatch::tokenizer::internal {

// `normalizer` (tokenizer.json's, possibly null) with a Lowercase first, as
// sentence-transformers' do_lower_case builds it: unchanged when it is a
// Lowercase or a Sequence with one at its top level; else Sequence[Lowercase,
// its steps...] (a Sequence's own steps are spliced in, not nested).
[[nodiscard]] nlohmann::json WithLowercaseFirst(const nlohmann::json& normalizer);

}  // namespace tokenbatch::tokenizer::internal
