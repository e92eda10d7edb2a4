// Input preparation: one client request (EmbedRequest) to the backend inputs
// the Batcher gets, one per input: the prompt prepended, each text tokenised
// (a cross-encoder's pairs with the pair template), a request-level
// truncation applied, token ids checked against the vocabulary, and the
// counts TEI reports. Pure over a const Tokenizer: thread-safe, no blocking,
// no state; the service runs it on a tokenizer thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/service/embed_types.h"
#include "tokenbatch/tokenizer/tokenizer.h"

namespace tokenbatch::server {

// What preparing a request needs to know of the service and its model; fixed
// when the service starts.
struct InputPreparation {
  std::int64_t vocab_size = 0;        // ids must be < vocab_size; 0 = only < 2^31
  std::int64_t max_input_tokens = 0;  // what a truncation cuts to; 0 = never cut
  int hidden_size = 0;                // a request's dimensions must be in [0, hidden_size]
  bool auto_truncate = false;         // EmbedRequest::truncate when unset (ServiceOptions)
  // EmbedRequest::truncation_direction when unset (ServiceOptions).
  TruncationDirection truncation_direction = TruncationDirection::kRight;
  tokenizer::PairTruncation pair_truncation = tokenizer::PairTruncation::kLongestFirst;  // ServiceOptions
  std::map<std::string, std::string> prompts;  // by name (ServiceOptions::prompts)
  std::string default_prompt;                  // when a request names none; "" = none
  // Each prompt text's token count (sentence-transformers' prompt_length), or
  // the error tokenising it gave, as CountPromptTokens fills it so that a
  // request does not tokenise its prompt again; a text missing here is
  // tokenised per request.
  std::map<std::string, absl::StatusOr<std::int64_t>> prompt_lengths;
  // Set for a cross-encoder: whether it reads token types (ClassifierInfo::
  // token_types). Unset: an embedding model, which takes no pairs and whose
  // texts get the prompt.
  std::optional<bool> cross_encoder_token_types;
  // A sparse (SPLADE) model: a request's dimensions must be 0 (its width is the
  // vocabulary, never truncated).
  bool sparse = false;
};

// A request's backend inputs and its counts.
struct PreparedInputs {
  std::vector<backend::EmbeddingInput> inputs;  // one per request input, same order
  std::int64_t tokens = 0;      // all inputs' ids, after truncation (TEI's x-compute-tokens)
  // Code points of each text as sent (a pair's two texts), without a prompt,
  // and the number of ids of each token-id input (TEI's x-compute-characters).
  std::int64_t characters = 0;
};

// Fills how.prompt_lengths for how.default_prompt and every how.prompts text
// (the tokenizer must be the one PrepareInputs is given). Never fails: a text
// the tokenizer refuses keeps its error, which the requests naming it get.
void CountPromptTokens(const tokenizer::Tokenizer& tokenizer, InputPreparation& how);

// Prepares `request`:
//   - the prompt (request.prompt_name's, else how.default_prompt) goes before
//     every text input of an embedding model; its token count, less its
//     trailing special tokens, is each input's prompt_tokens
//     (sentence-transformers' prompt_length), shrunk by what a left truncation
//     cut of it and kept below the input's length;
//   - a text is cut to how.max_input_tokens when the request's truncate (else
//     how.auto_truncate) says so, from request.truncation_direction's end
//     (else how.truncation_direction's),
//     keeping its special tokens;
//   - a pair goes through PairToTokens, cut as how.pair_truncation says unless
//     truncate is false (whatever auto_truncate says: a cross-encoder cuts
//     pairs by default);
//   - normalize and dimensions are copied to every input; special_prefix and
//     special_suffix are the tokenizer's special ends.
// Errors (the first; "input[i]: " before the message when one input is the
// cause): InvalidArgument for dimensions outside [0, hidden_size] (any but 0
// for a sparse model), an unknown
// prompt_name (listing the model's), a prompt_name with token-id inputs, a
// pair for an embedding model, invalid UTF-8, an empty input or an id out of
// range; Oversize for a pair as PairToTokens says.
[[nodiscard]] absl::StatusOr<PreparedInputs> PrepareInputs(const tokenizer::Tokenizer& tokenizer,
                                                           const InputPreparation& how, const EmbedRequest& request);

}  // namespace tokenbatch::server
