// A cross-encoder's (query, document) pair -> backend ids (see input_tokens.h).
#include <utility>

#include "absl/strings/str_cat.h"
#include "service/input_tokens.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::server {
namespace {

absl::Status QueryTooLong(const tokenizer::Tokenizer& tokenizer, std::size_t query_tokens, std::int64_t limit) {
  return OversizeError(absl::StrCat("the query's ", query_tokens, " tokens and the pair template's ",
                                    tokenizer.NumPairSpecialTokens(), " special tokens leave no room for the ",
                                    "document within the model's limit of ", limit,
                                    " tokens; only_second truncation never cuts the query"));
}

}  // namespace

absl::StatusOr<InputTokens> PairToTokens(const tokenizer::Tokenizer& tokenizer, const EmbedInput& input,
                                         const PairTokenLimits& limits) {
  if (input.is_ids || !input.text_pair.has_value()) return InvalidArgumentError("a pair needs two texts");
  // The query first, encoded once and paired with the document from its ids.
  // For only_second, whether or not the document may be cut, the template's
  // specials and the query must leave room for a document token.
  const bool only_second = limits.truncation == tokenizer::PairTruncation::kOnlySecond;
  const absl::StatusOr<tokenizer::Encoding> query =
      tokenizer.Encode(input.text, {.add_special_tokens = false, .with_offsets = false, .with_word_ends = true});
  if (!query.ok()) return tokenbatch::InvalidArgumentError(absl::StrCat("query: ", query.status().message()));
  if (only_second && limits.max_input_tokens > 0 &&
      static_cast<std::int64_t>(query->ids.size() + tokenizer.NumPairSpecialTokens()) >= limits.max_input_tokens) {
    return QueryTooLong(tokenizer, query->ids.size(), limits.max_input_tokens);
  }
  const tokenizer::PairEncodeOptions options{
      .max_tokens = limits.truncate ? static_cast<std::size_t>(limits.max_input_tokens) : 0,
      .side = limits.direction == TruncationDirection::kLeft ? tokenizer::PairTruncationSide::kLeft
                                                             : tokenizer::PairTruncationSide::kRight,
      .truncation = limits.truncation};
  absl::StatusOr<tokenizer::Encoding> enc = tokenizer.EncodePair(*query, *input.text_pair, options);
  if (!enc.ok()) {
    if (enc.status().code() == absl::StatusCode::kOutOfRange) {
      if (only_second) return QueryTooLong(tokenizer, query->ids.size(), limits.max_input_tokens);
      return OversizeError(absl::StrCat("the model's limit of ", limits.max_input_tokens,
                                        " tokens is below the pair template's ", tokenizer.NumPairSpecialTokens(),
                                        " special tokens"));
    }
    // "second text: ..." names the document.
    const absl::string_view m = enc.status().message();
    std::string named(m.data(), m.size());
    if (named.starts_with("second text")) named.replace(0, 11, "document");
    return tokenbatch::InvalidArgumentError(named);
  }
  if (limits.max_input_tokens > 0 && static_cast<std::int64_t>(enc->ids.size()) > limits.max_input_tokens) {
    return OversizeError(absl::StrCat("the query and document are ", enc->ids.size(),
                                      " tokens together, above the model's limit of ", limits.max_input_tokens,
                                      "; send truncate: true to cut them"));
  }
  InputTokens out;
  out.ids.reserve(enc->ids.size());
  for (std::uint32_t id : enc->ids) {
    if (limits.vocab_size > 0 && id >= limits.vocab_size) {
      return InvalidArgumentError(absl::StrCat("token id ", id, " from the tokenizer is outside the model's ",
                                               "vocabulary of ", limits.vocab_size,
                                               " (tokenizer and model do not match)"));
    }
    out.ids.push_back(static_cast<std::int32_t>(id));
  }
  if (limits.token_types) out.token_type_ids.assign(enc->type_ids.begin(), enc->type_ids.end());
  return out;
}

}  // namespace tokenbatch::server
