// The embedding service's request and result types: what a client request holds
// once its HTTP body is parsed (api.h), what tokenising needs (input_tokens.h),
// and what comes back. Plain value types, no behaviour, so that the API layer
// can use them without the service (embedding_service.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tokenbatch/core/request.h"

namespace tokenbatch::server {

// One input of a client request.
struct EmbedInput {
  bool is_ids = false;
  std::string text;               // when !is_ids: UTF-8 text (NUL bytes allowed)
  std::vector<std::int64_t> ids;  // when is_ids: token ids, used as given
  // Set for a cross-encoder's pair: `text` is the first text (a rerank query),
  // this the second (a document), encoded with the tokenizer's pair template.
  // Only for a classifier backend (backend::EncoderInfo::classifier), never with is_ids.
  std::optional<std::string> text_pair;
};

// Which end of an input a request-level truncation cuts.
enum class TruncationDirection { kRight, kLeft };

// One client request (an HTTP body, parsed): its inputs and how to embed them.
struct EmbedRequest {
  std::vector<EmbedInput> inputs;   // >= 1
  std::optional<bool> normalize;    // unset: the backend's default
  std::optional<bool> truncate;     // unset: ServiceOptions::auto_truncate
  // Unset: ServiceOptions::truncation_direction (the model's truncation_side).
  std::optional<TruncationDirection> truncation_direction;
  // A prompt by name (ServiceOptions::prompts), prepended to every text input as
  // sentence-transformers' encode(prompt_name=...) does; unset or "": the default
  // prompt. Naming one for token-id inputs, or an unknown name, is InvalidArgument.
  std::optional<std::string> prompt_name;
  int dimensions = 0;               // 0 = all hidden_size values
  // Scheduler priority level of every input (SubmitOptions::priority: higher is
  // served first). 0 = the default level.
  int priority = 0;
  // Unset: none. Set: inputs not computed by then fail with DeadlineExceeded
  // (also when it has passed before they are queued).
  std::optional<TimePoint> deadline;
};

// The answer to an EmbedRequest: its embeddings and TEI's x-compute-* figures.
struct EmbedResult {
  // One per input, same order: an embedding, or a classifier's raw logits
  // (backend::EncoderInfo::classifier: one per label).
  std::vector<std::vector<float>> embeddings;
  // One per input, same order: a sparse model's (backend::EncoderInfo::sparse)
  // vocabulary ids of the weights in `embeddings` (ascending, same count); an
  // empty list for a dense model.
  std::vector<std::vector<std::int32_t>> indices;
  std::int64_t tokens = 0;                     // tokens computed, all inputs
  // TEI's x-compute-characters: Unicode characters (code points) of each text
  // input as sent, without a prompt, and the number of ids of each token-id input.
  std::int64_t characters = 0;
  double tokenize_us = 0;                      // tokenising all inputs
  double queue_us = 0;                         // longest queue wait of an input
  double inference_us = 0;                     // longest batch run of an input
};

// One token of a /tokenize answer.
struct TokenInfo {
  std::uint32_t id = 0;
  bool special = false;               // added by the tokenizer's template ([CLS], </s>, ...)
  std::uint32_t start = 0, stop = 0;  // byte offsets into the text; meaningless for a special token
  std::string token;                  // a special token's vocabulary entry ("[CLS]"); empty otherwise
};

}  // namespace tokenbatch::server
