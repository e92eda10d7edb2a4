// Added tokens (tokenizer.json "added_tokens"): strings such as <|im_start|> or
// [CLS] that are cut out of the text before normalisation and pre-tokenization,
// as Hugging Face's AddedVocabulary does. Tokens with "normalized": false are
// matched in the raw text; those with "normalized": true are matched, in their
// normalised form, in the normalised pieces. Matching is leftmost-longest; lstrip /
// rstrip widen a match over neighbouring whitespace; single_word requires no word
// character on either side.
//
// Immutable after construction; safe to share across threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "tokenizer/normalizer.h"

namespace tokenbatch::tokenizer::internal {

struct AddedToken {
  std::string content;  // as matched (normalised form for normalized tokens)
  uint32_t id = 0;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A piece of text: bytes [begin, end), either an added token (`id` >= 0) or text
// to normalise and pre-tokenize (`id` < 0).
struct Segment {
  uint32_t begin;
  uint32_t end;
  int64_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  [[nodiscard]] bool empty() const { return tokens_.empty(); }

  // Cuts `text` into segments covering it in order (empty text segments omitted).
  void Split(std::string_view text, std::vector<Segment>& out) const;

 private:
  std::vector<AddedToken> tokens_;
  std::vector<std::vector<uint32_t>> by_first_byte_;  // token indexes, longest first
};

// Parses "added_tokens" into the raw-text matcher and the normalised-text matcher
// (contents of the latter passed through `normalizer`). Also returns every token
// for id lookups. Ids are assigned as Hugging Face's AddedVocabulary does, not
// read from the file: a content already added or in the model's vocabulary keeps
// that id; any other gets the next id after the model vocabulary and the added
// tokens so far.
struct AddedVocabulary {
  AddedTokenMatcher raw;
  AddedTokenMatcher normalized;
  std::vector<AddedToken> all;
  // The content (as written in the file) of each added id; a later token with
  // the same id replaces an earlier one, as in Hugging Face.
  absl::flat_hash_map<uint32_t, std::string> content_by_id;
  // What decoding writes for an added id: its content, normalised for a
  // "normalized" token (Hugging Face's simple_id_to_token).
  absl::flat_hash_map<uint32_t, std::string> decoded_by_id;
  // Contents of the tokens marked "special" (what skip_special_tokens drops).
  absl::flat_hash_set<std::string> special_contents;

  [[nodiscard]] bool IsSpecial(const std::string& token) const { return special_contents.contains(token); }
};
class Model;
[[nodiscard]] absl::StatusOr<AddedVocabulary> ParseAddedTokens(const nlohmann::json& j, const Normalizer& normalizer,
                                                              const Model& model);

}  // namespace tokenbatch::tokenizer::internal
