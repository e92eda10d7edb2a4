// WordPiece (Schuster & Nakajima 2012; BERT's tokenizer, the WordPiece model of
// Hugging Face tokenizers): greedy longest-match-first over each word, pieces after
// the first looked up with continuing_subword_prefix ("##"); a word with more than
// max_input_chars_per_word characters, or with a part that matches nothing, becomes
// the single unk_token.
#pragma once

#include <string>

#include "tokenizer/model.h"

namespace tokenbatch::tokenizer::internal {

class WordPiece final : public Model {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Create(const nlohmann::json& j);

  bool Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const override;
  [[nodiscard]] std::optional<uint32_t> TokenToId(std::string_view token) const override;
  [[nodiscard]] size_t VocabSize() const override { return vocab_.size(); }

 private:
  Vocab vocab_;
  std::string prefix_ = "##";
  size_t max_chars_ = 100;
  uint32_t unk_id_ = 0;
};

}  // namespace tokenbatch::tokenizer::internal
