// Turning one client input (text or token ids) into the ids the backend gets:
// tokenise, validate, and apply a request-level truncation. Pure functions over a
// const Tokenizer: thread-safe, no blocking. Internal to the server.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/service/embed_types.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::server {

struct InputTokenLimits {
  // Ids must be in [0, vocab_size); 0 = only checked against [0, 2^31).
  std::int64_t vocab_size = 0;
  // > 0: cut the input to at most this many tokens (TEI's truncate), keeping the
  // special tokens the tokenizer added; 0 = keep all (the scheduler's oversize
  // policy then applies).
  std::int64_t truncate_to = 0;
  TruncationDirection direction = TruncationDirection::kRight;
};

// How many special tokens the tokenizer put at the start and at the end of an
// input (e.g. BERT's [CLS] and [SEP]: 1 and 1; 0 and 0 for token-id inputs, used
// as given, and for tokenizers that add none).
struct SpecialEnds {
  std::int64_t prefix = 0;
  std::int64_t suffix = 0;
};

struct InputTokens {
  std::vector<std::int32_t> ids;
  SpecialEnds specials;
  // A pair's token types (the template's), when the model reads them; else empty.
  std::vector<std::int32_t> token_type_ids;
};

// How a cross-encoder's pair is encoded.
struct PairTokenLimits {
  std::int64_t vocab_size = 0;        // as InputTokenLimits::vocab_size
  std::int64_t max_input_tokens = 0;  // the model's limit, special tokens included; 0 = none
  // Cut the pair to max_input_tokens as `truncation` says; else a longer pair
  // is refused.
  bool truncate = true;
  tokenizer::PairTruncation truncation = tokenizer::PairTruncation::kLongestFirst;
  TruncationDirection direction = TruncationDirection::kRight;  // which end of a text is cut
  bool token_types = false;                                     // fill InputTokens::token_type_ids
};

// The ids of `input` (text and text_pair) through the tokenizer's pair template
// (Tokenizer::EncodePair, cut as limits.truncation says); specials are 0, 0,
// since a pair is never windowed. Errors: InvalidArgument for invalid UTF-8
// (naming the query or the document), a tokenizer without a supported pair
// template, or ids outside the vocabulary; Oversize when, for only_second, the
// query alone (with the template's special tokens) leaves no room for a
// document token within max_input_tokens, or, without truncate, when the pair
// is longer than max_input_tokens.
[[nodiscard]] absl::StatusOr<InputTokens> PairToTokens(const tokenizer::Tokenizer& tokenizer, const EmbedInput& input,
                                                       const PairTokenLimits& limits);

// The ids of `input`, and its special ends. Errors: as InputToIds.
[[nodiscard]] absl::StatusOr<InputTokens> InputToTokens(const tokenizer::Tokenizer& tokenizer,
                                                        const EmbedInput& input, const InputTokenLimits& limits);

// The ids of `input`. Errors: InvalidArgument for invalid UTF-8 (from the
// tokenizer, naming the byte offset), an input with no tokens, or an id out of
// range (naming it and the range).
[[nodiscard]] absl::StatusOr<std::vector<std::int32_t>> InputToIds(const tokenizer::Tokenizer& tokenizer,
                                                                   const EmbedInput& input,
                                                                   const InputTokenLimits& limits);

// Removes non-special tokens from the `direction` end until at most `max_tokens`
// remain (special[i] != 0 marks tokens that are kept; `special` may be empty =
// none special). Returns the kept ids, in order.
[[nodiscard]] std::vector<std::int32_t> TruncateIds(const std::vector<std::int32_t>& ids,
                                                    const std::vector<std::uint8_t>& special,
                                                    std::int64_t max_tokens, TruncationDirection direction);

// The ids of one window [window.begin, window.end) of `ids` (the truncate and
// split oversize policies), with the input's special ends restored: a window
// that starts inside the input gets the prefix over its first tokens, one that
// ends inside it the suffix over its last, so every window reads like a whole
// input to the model ([CLS] ... [SEP]). The window keeps its size (the
// scheduler has already counted its tokens); the content tokens overwritten at
// an inner edge are covered by the neighbouring window when the windows overlap
// by at least the special ends (split_overlap_tokens, 32 by default). Windows
// not longer than prefix + suffix are returned as they are.
// Requires 0 <= window.begin < window.end <= ids.size().
[[nodiscard]] std::vector<std::int32_t> WindowIds(const std::vector<std::int32_t>& ids, TokenWindow window,
                                                  SpecialEnds specials);

}  // namespace tokenbatch::server
