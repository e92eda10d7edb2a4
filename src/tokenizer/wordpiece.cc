// WordPiece model; see wordpiece.h.
#include "tokenizer/wordpiece.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/json_number.h"
#include "tokenizer/unicode.h"

namespace tokenbatch::tokenizer::internal {

absl::StatusOr<std::unique_ptr<Model>> WordPiece::Create(const nlohmann::json& j) {
  auto wp = std::unique_ptr<WordPiece>(new WordPiece());
  for (const auto& [token, id] : j.at("vocab").items()) {
    const absl::StatusOr<uint32_t> read =
        JsonWhole<uint32_t>(id, absl::StrCat("WordPiece vocab id of ", token), kMaxVocabId - 1);
    if (!read.ok()) return read.status();
    const uint32_t v = *read;
    wp->vocab_.emplace(token, v);
    wp->SetTokenOfId(v, token);
  }
  if (auto it = j.find("continuing_subword_prefix"); it != j.end() && !it->is_null()) wp->prefix_ = it->get<std::string>();
  if (auto it = j.find("max_input_chars_per_word"); it != j.end() && !it->is_null()) {
    absl::StatusOr<size_t> max_chars = JsonWhole<size_t>(*it, "WordPiece max_input_chars_per_word");
    if (!max_chars.ok()) return max_chars.status();
    wp->max_chars_ = *max_chars;
  }
  const std::string unk = j.value("unk_token", std::string("[UNK]"));
  auto it = wp->vocab_.find(unk);
  if (it == wp->vocab_.end()) return InvalidArgumentError(absl::StrCat("WordPiece unk_token ", unk, " not in vocab"));
  wp->unk_id_ = it->second;
  return std::unique_ptr<Model>(std::move(wp));
}

std::optional<uint32_t> WordPiece::TokenToId(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

bool WordPiece::Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const {
  // Character boundaries: bounds[k] is the byte offset of character k.
  std::vector<uint32_t> bounds;
  int len = 0;
  for (size_t i = 0; i < word.size(); i += static_cast<size_t>(len)) {
    DecodeUtf8(word, i, len);
    bounds.push_back(static_cast<uint32_t>(i));
  }
  const size_t chars = bounds.size();
  bounds.push_back(static_cast<uint32_t>(word.size()));
  const size_t mark = ids.size();
  const auto unk = [&] {
    ids.resize(mark);
    ends.resize(mark);
    ids.push_back(unk_id_);
    ends.push_back(static_cast<uint32_t>(word.size()));
    return true;
  };
  if (chars > max_chars_) return unk();
  std::string candidate;
  size_t start = 0;
  while (start < chars) {
    size_t end = chars;
    bool found = false;
    for (; end > start; --end) {
      candidate.clear();
      if (start > 0) candidate += prefix_;
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if (auto it = vocab_.find(candidate); it != vocab_.end()) {
        ids.push_back(it->second);
        ends.push_back(bounds[end]);
        found = true;
        break;
      }
    }
    if (!found) return unk();
    start = end;
  }
  return true;
}

}  // namespace tokenbatch::tokenizer::internal
