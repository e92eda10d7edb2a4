// The HTTP API's JSON shapes, without sockets: parse request bodies into
// EmbedRequest, format results and errors, map error kinds to status codes.
//
// Two flavours share one service: OpenAI (/v1/embeddings: `input`, `model`,
// `encoding_format`, `dimensions`; vLLM's /detokenize; errors as {"error":
// {"message", "type", "param", "code"}}) and TEI (/embed, /tokenize, /decode: `inputs`, `normalize`,
// `truncate`, `truncation_direction`, `dimensions`; errors as {"error",
// "error_type"}). Both embedding routes take vLLM's `priority` (an integer in
// [-kMaxPriority, kMaxPriority], lower served first, default 0). Status codes: 400 malformed JSON or wrong types, 413 too many
// inputs, 422 invalid UTF-8 or unsupported values, plus FromStatus for service
// errors. Every error message names the field or the cause.
//
// Pure functions: thread-safe, never block, never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "tokenbatch/service/embed_types.h"
#include "tokenbatch/api/server_options.h"

namespace tokenbatch::server {

enum class ApiFlavor { kOpenAi, kTei };

// An error answer: HTTP status, the message, and the flavour's type string
// (TEI's error_type "Validation", "Overloaded", ...; OpenAI's "invalid_request_error", ...).
struct ApiError {
  int status = 400;
  std::string message;
};

// Largest |priority| accepted in a request body.
inline constexpr std::int64_t kMaxPriority = 1'000'000;

struct ApiLimits {
  std::size_t max_client_batch_size = kDefaultMaxClientBatchSize;  // more inputs -> 413
  int max_json_depth = 64;  // deeper nesting -> 400, checked before parsing
};

struct OpenAiEmbeddingsRequest {
  EmbedRequest request;
  std::string model;    // echoed back; empty = the server's model name
  bool base64 = false;  // encoding_format "base64"
};

// Every request shape below carries `model`: the served model the body names
// (the OpenAI, Cohere and vLLM field; an extension of TEI's shapes, which have
// none), "" when absent: the server's default. The Router picks the model by it.

// TEI's /embed body.
struct TeiEmbedRequest {
  EmbedRequest request;
  std::string model;
};

// TEI's /embed_sparse body: {inputs, truncate, truncation_direction,
// prompt_name} and this server's priority and model, plus two cuts of each
// input's answer: top_k (keep the k largest weights, ties to the lower id) and
// threshold (drop weights below it). No normalize or dimensions: a sparse
// embedding is one weight per vocabulary id.
struct SparseEmbedRequest {
  EmbedRequest request;
  std::string model;
  std::optional<std::int64_t> top_k;  // >= 1; unset: every weight above 0
  std::optional<double> threshold;    // finite, >= 0; unset: 0
};

struct TokenizeRequest {
  std::vector<std::string> texts;
  bool add_special_tokens = true;
  std::string model;
};

// Most token ids one /decode or /detokenize request may hold, all lists together
// (more -> 413): decoding builds each id's token text, so the memory a request
// takes grows with its ids times the vocabulary's longest token, not with the
// body's bytes; real inputs are a few thousand ids.
inline constexpr std::size_t kMaxDecodeIds = 1u << 17;

// A request to turn token ids back into text (TEI's /decode, vLLM's /detokenize).
struct DecodeRequest {
  std::vector<std::vector<std::uint32_t>> ids;  // one list per text; a list may be empty
  bool skip_special_tokens = true;
  bool batch = false;  // `ids` was a list of lists (TEI answers the same either way)
  std::string model;
};

// Parsers: UTF-8 and nesting are checked first (422 and 400), then the JSON.
[[nodiscard]] std::variant<OpenAiEmbeddingsRequest, ApiError> ParseOpenAiEmbeddings(std::string_view body,
                                                                                   const ApiLimits& limits);
[[nodiscard]] std::variant<TeiEmbedRequest, ApiError> ParseTeiEmbed(std::string_view body, const ApiLimits& limits);
// /embed_sparse: top_k must be an integer >= 1 and threshold a number >= 0
// (422 otherwise); normalize and dimensions are refused (422), as they do not
// apply to a sparse embedding.
[[nodiscard]] std::variant<SparseEmbedRequest, ApiError> ParseSparseEmbed(std::string_view body,
                                                                         const ApiLimits& limits);
[[nodiscard]] std::variant<TokenizeRequest, ApiError> ParseTokenize(std::string_view body,
                                                                    const ApiLimits& limits);

// TEI's /decode: {"ids": [id, ...] or [[id, ...], ...], "skip_special_tokens":
// bool (default true)}. An id must be an integer in [0, 2^32); whether it is in
// the vocabulary is the tokenizer's to say.
[[nodiscard]] std::variant<DecodeRequest, ApiError> ParseDecode(std::string_view body, const ApiLimits& limits);
// vLLM's /detokenize: {"tokens": [id, ...], "model": optional string}; special
// tokens are kept, as vLLM's tokenizer.decode keeps them.
[[nodiscard]] std::variant<DecodeRequest, ApiError> ParseDetokenize(std::string_view body, const ApiLimits& limits);

// Response bodies.
[[nodiscard]] std::string OpenAiEmbeddingsBody(const EmbedResult& result, std::string_view model, bool base64);
[[nodiscard]] std::string TeiEmbedBody(const EmbedResult& result);
// TEI's /embed_sparse answer: per input, [{"index": id, "value": weight}, ...]
// ascending by id, holding the weights above 0 that `request`'s threshold and
// top_k keep. `result.indices` holds each input's ids.
[[nodiscard]] std::string SparseEmbedBody(const EmbedResult& result, const SparseEmbedRequest& request);
// TEI's /tokenize answer: per text, a list of {"id", "special", "start", "stop",
// "text"}; start and stop are byte offsets into the text and `text` the span
// they cover, except for a special token ([CLS], </s>): null offsets and its
// vocabulary entry as `text`.
[[nodiscard]] std::string TokenizeBody(const std::vector<std::string>& texts,
                                       const std::vector<std::vector<TokenInfo>>& tokens);
// TEI's /decode answer: a JSON array with one string per id list.
[[nodiscard]] std::string DecodeBody(const std::vector<std::string>& texts);
// vLLM's /detokenize answer: {"prompt": text}.
[[nodiscard]] std::string DetokenizeBody(const std::string& text);
[[nodiscard]] std::string ErrorBody(ApiFlavor flavor, const ApiError& error);

// The HTTP status for a service error, by ErrorKind: QueueFull 429, Oversize 413
// (as TEI answers an over-long input: its Validation errors are 413),
// InvalidArgument 422, ShuttingDown 503, DeadlineExceeded 504, Cancelled 499
// (client gone; never seen by it), OutOfMemory / Backend / unclassified 500.
[[nodiscard]] ApiError FromStatus(const absl::Status& status);

// Helpers, exposed for tests.
// Standard base64 of the floats' little-endian bytes (OpenAI's encoding_format).
[[nodiscard]] std::string FloatsToBase64(const std::vector<float>& values);

}  // namespace tokenbatch::server
