// Turning one client input (text or token ids) into the ids the backend gets:
// tokenise, validate, and apply a request-level truncation. Pure functions over a
// const Tokenizer: thread-safe, no blocking. Internal to the server.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/server/embedding_service.h"
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

}  // namespace tokenbatch::server
