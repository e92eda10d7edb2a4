// The private state of a Tokenizer, shared by tokenizer.cc, windows.cc and decode.cc.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/decoder.h"
#include "tokenizer/model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/word_cache.h"

namespace tokenbatch::tokenizer {

struct Tokenizer::Impl {
  internal::Normalizer normalizer;
  internal::PreTokenizer pre_tokenizer;
  std::unique_ptr<internal::Model> model;
  internal::PostProcessor post;
  internal::AddedVocabulary added;
  internal::Decoder decoder;
  mutable internal::WordCache cache;
  std::optional<size_t> file_max_length;

  // Encodes `text` without the post-processor's special tokens: appends to *enc
  // (ids, and offsets when with_offsets) or, when enc is null, adds the token
  // count to *count.
  // `with_word_ends` also fills enc->word_ends.
  absl::Status Run(std::string_view text, bool with_offsets, Encoding* enc, size_t* count,
                   bool with_word_ends = false) const;
  // Puts the post-processor's special tokens around enc's ids; fills enc.special.
  void AddSpecialTokens(Encoding& enc, bool with_offsets) const;
  void TrimOffsets(std::string_view text, std::string_view token, bool byte_level_token, size_t index, uint32_t& b,
                   uint32_t& e) const;
};

}  // namespace tokenbatch::tokenizer
