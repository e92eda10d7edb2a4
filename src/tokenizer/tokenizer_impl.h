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

// How EncodeTruncated chunks a long text (truncation.cc): texts up to
// whole_text_bytes are encoded whole; the first chunk holds bytes_per_token
// per kept token plus twice the margin, and each retry quadruples it; words
// within margin_bytes (plus the longest added token, when
// widen_for_added_tokens) of a chunk's cut are dropped. Tests shrink the
// chunks to put cuts everywhere, and the margin to show it is needed.
struct TruncationPlan {
  size_t whole_text_bytes = 8 << 10;
  size_t bytes_per_token = 8;
  size_t margin_bytes = 256;
  bool widen_for_added_tokens = true;
};

struct Tokenizer::Impl {
  internal::Normalizer normalizer;
  internal::PreTokenizer pre_tokenizer;
  std::unique_ptr<internal::Model> model;
  internal::PostProcessor post;
  internal::AddedVocabulary added;
  internal::Decoder decoder;
  mutable internal::WordCache cache;
  std::optional<size_t> file_max_length;
  TruncationPlan truncation_plan;

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

// Copies tokens [b, e) of `all` (ids, and offsets when with_offsets) into a new
// encoding, offsets moved by `offset_base` bytes.
[[nodiscard]] Encoding Slice(const Encoding& all, size_t b, size_t e, bool with_offsets, uint32_t offset_base = 0);

}  // namespace tokenbatch::tokenizer
