// Tokenizer::Decode and IdToToken: ids back to text (Hugging Face tokenizers'
// Tokenizer::decode, tokenizers/src/tokenizer/mod.rs).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tokenbatch/core/errors.h"
#include "tokenbatch/tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace tokenbatch::tokenizer {

std::optional<std::string> Tokenizer::IdToToken(uint32_t id) const {
  // Added tokens first, as Hugging Face looks them up before the model.
  if (auto it = impl_->added.content_by_id.find(id); it != impl_->added.content_by_id.end()) return it->second;
  if (auto token = impl_->model->IdToToken(id)) return std::string(*token);
  return std::nullopt;
}

absl::StatusOr<std::string> Tokenizer::Decode(const std::vector<uint32_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::optional<std::string> token;
    if (auto it = impl_->added.decoded_by_id.find(ids[i]); it != impl_->added.decoded_by_id.end()) {
      token = it->second;
    } else if (auto t = impl_->model->IdToToken(ids[i])) {
      token = std::string(*t);
    }
    if (!token) {
      return InvalidArgumentError(absl::StrCat("id ", ids[i], " at position ", i, " is not in the vocabulary of ",
                                               VocabSize(), " tokens"));
    }
    // Hugging Face skips by text: any token whose text is a special added
    // token's content.
    if (skip_special_tokens && impl_->added.IsSpecial(*token)) continue;
    tokens.push_back(std::move(*token));
  }
  return impl_->decoder.Decode(std::move(tokens));
}

}  // namespace tokenbatch::tokenizer
