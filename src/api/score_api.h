// The JSON shapes of the cross-encoder routes, without sockets: parse rerank and
// predict bodies, turn a classifier's logits into scores, format the answers.
//
// Rerank has two request shapes, told apart by their fields on any rerank route:
//   TEI's        {query, texts, raw_scores, return_text, truncate,
//                 truncation_direction} -> [{index, score, text?}]
//   Cohere's / Jina's (also vLLM's and Infinity's)
//                {model, query, documents: [string | {text}], top_n,
//                 return_documents} -> {id, model, results: [{index,
//                 relevance_score, document?: {text}}], usage: {prompt_tokens,
//                 total_tokens}}
// Both answers are sorted by score, highest first (ties by index), and cut to
// top_n. Predict is TEI's: {inputs, raw_scores, truncate, truncation_direction},
// where `inputs` is a text, a pair [text, text], or a batch of those ([[text],
// [text, text], ...]; an array of strings other than two is a batch of single
// texts, as TEI reads it); the answer lists {score, label} per input, highest
// score first, in a list per input for a batch.
//
// Scores (sources: sentence-transformers' CrossEncoder.predict and TEI): rerank
// applies the model's activation (backend::ClassifierInfo::activation: sigmoid for a
// one-label cross-encoder unless its configuration says otherwise) to the
// first logit unless raw_scores; predict applies, unless raw_scores, the
// activation to a single label and the model's label scoring to several
// (backend::ClassifierInfo::label_scoring: softmax over the labels, an
// independent sigmoid per label for a multi-label classifier, or none for a
// regression model, as transformers' text-classification pipeline does).
//
// Errors, each naming the field: 400 malformed JSON or wrong types, 413 more
// documents than max_client_batch_size, 422 an empty query, an empty document
// list, top_n < 1, invalid UTF-8. Pure functions: thread-safe, never block,
// never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/api.h"
#include "tokenbatch/service/embed_types.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::server {

// A rerank body, parsed: one query against its documents (each becomes one
// (query, document) pair, EmbedInput::text_pair, for the service).
struct RerankRequest {
  bool cohere = false;  // the Cohere/Jina shape (documents); else TEI's (texts)
  std::string model;    // Cohere's `model`: the served model it names ("" = the default)
  std::string query;
  std::vector<std::string> documents;
  bool raw_scores = false;
  bool return_documents = false;      // TEI's return_text (default false); return_documents (default true: Jina, vLLM)
  std::optional<std::int64_t> top_n;  // unset: every document
  std::optional<bool> truncate;       // unset: cut the pair (ServiceOptions::pair_truncation)
  std::optional<TruncationDirection> truncation_direction;  // unset: the model's truncation_side
  int priority = 0;  // as EmbedRequest::priority
};

// A predict body, parsed: the inputs to classify, texts or (first, second) pairs.
struct PredictRequest {
  std::vector<EmbedInput> inputs;  // text, or text and text_pair
  bool batch = false;              // answer a list per input
  bool raw_scores = false;
  std::optional<bool> truncate;
  std::optional<TruncationDirection> truncation_direction;  // unset: the model's truncation_side
  int priority = 0;
  std::string model;  // the served model it names ("" = the default; an extension of TEI's shape)
};

// Parse a rerank (either shape) or a predict body; UTF-8, nesting and the
// body's object are checked first (parsed_body.h). Errors: as the header comment
// lists, the message naming the field. Pure, thread-safe.
[[nodiscard]] std::variant<RerankRequest, ApiError> ParseRerank(std::string_view body, const ApiLimits& limits);
[[nodiscard]] std::variant<PredictRequest, ApiError> ParsePredict(std::string_view body, const ApiLimits& limits);

// The rerank score of one pair's logits (see the header comment).
[[nodiscard]] double RerankScore(const std::vector<float>& logits, const backend::ClassifierInfo& model, bool raw_scores);
// The predict scores of one input's logits, one per label (see the header comment).
[[nodiscard]] std::vector<double> PredictScores(const std::vector<float>& logits, const backend::ClassifierInfo& model,
                                                bool raw_scores);

// The rerank answer in the request's shape; `logits` holds one entry per
// document, `tokens` the tokens computed, `id` the request id.
[[nodiscard]] std::string RerankBody(const RerankRequest& request, const std::vector<std::vector<float>>& logits,
                                     const backend::ClassifierInfo& model, std::string_view served_model, std::int64_t tokens,
                                     std::string_view id);
// The predict answer; `logits` holds one entry per input.
[[nodiscard]] std::string PredictBody(const PredictRequest& request, const std::vector<std::vector<float>>& logits,
                                      const backend::ClassifierInfo& model);

}  // namespace tokenbatch::server
