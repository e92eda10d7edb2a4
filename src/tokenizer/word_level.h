// WordLevel (Hugging Face tokenizers' WordLevel model): every word is looked up
// whole in the vocabulary; a word that is not in it becomes unk_token
// (default "<unk>"). Without unk_token in the vocabulary such a word cannot be
// encoded, and Encode fails with an error naming it, as Hugging Face's does.
#pragma once

#include <optional>

#include "tokenizer/model.h"

namespace tokenbatch::tokenizer::internal {

class WordLevel final : public Model {
 public:
  // InvalidArgumentError for a malformed vocabulary (ids not whole numbers).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Create(const nlohmann::json& j);

  bool Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const override;
  [[nodiscard]] std::optional<uint32_t> TokenToId(std::string_view token) const override;
  [[nodiscard]] size_t VocabSize() const override { return vocab_.size(); }

 private:
  Vocab vocab_;
  std::optional<uint32_t> unk_id_;
};

}  // namespace tokenbatch::tokenizer::internal
