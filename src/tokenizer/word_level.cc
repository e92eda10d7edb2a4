// WordLevel model; see word_level.h.
#include "tokenizer/word_level.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_number.h"

namespace tokenbatch::tokenizer::internal {

absl::StatusOr<std::unique_ptr<Model>> WordLevel::Create(const nlohmann::json& j) {
  auto model = std::unique_ptr<WordLevel>(new WordLevel());
  for (const auto& [token, id] : j.at("vocab").items()) {
    const absl::StatusOr<uint32_t> read =
        JsonWhole<uint32_t>(id, absl::StrCat("WordLevel vocab id of ", token), kMaxVocabId - 1);
    if (!read.ok()) return read.status();
    model->vocab_.emplace(token, *read);
    model->SetTokenOfId(*read, token);
  }
  const auto unk = j.find("unk_token");
  const std::string unk_token = unk == j.end() || unk->is_null() ? std::string("<unk>") : unk->get<std::string>();
  if (auto it = model->vocab_.find(unk_token); it != model->vocab_.end()) model->unk_id_ = it->second;
  return std::unique_ptr<Model>(std::move(model));
}

std::optional<uint32_t> WordLevel::TokenToId(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

bool WordLevel::Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const {
  auto it = vocab_.find(word);
  if (it == vocab_.end() && !unk_id_) return false;
  ids.push_back(it != vocab_.end() ? it->second : *unk_id_);
  ends.push_back(static_cast<uint32_t>(word.size()));
  return true;
}

}  // namespace tokenbatch::tokenizer::internal
