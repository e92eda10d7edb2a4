// Model::Parse: dispatches on the model type of tokenizer.json.
#include "tokenizer/model.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tokenbatch/core/errors.h"
#include "tokenizer/bpe.h"
#include "tokenizer/unigram.h"
#include "tokenizer/word_level.h"
#include "tokenizer/wordpiece.h"

namespace tokenbatch::tokenizer::internal {

absl::StatusOr<std::unique_ptr<Model>> Model::Parse(const nlohmann::json& j, bool byte_level) {
  if (!j.is_object()) return InvalidArgumentError("tokenizer.json has no \"model\" object");
  // Older files omit "type" for BPE; Hugging Face infers it from "merges".
  std::string type = j.contains("type") ? j.at("type").get<std::string>() : (j.contains("merges") ? "BPE" : "");
  if (type == "BPE") return Bpe::Create(j, byte_level);
  if (type == "WordPiece") {
    if (byte_level) return InvalidArgumentError("unsupported combination: WordPiece model with ByteLevel pre_tokenizer");
    return WordPiece::Create(j);
  }
  if (type == "WordLevel") {
    if (byte_level) return InvalidArgumentError("unsupported combination: WordLevel model with ByteLevel pre_tokenizer");
    return WordLevel::Create(j);
  }
  if (type == "Unigram") {
    if (byte_level) return InvalidArgumentError("unsupported combination: Unigram model with ByteLevel pre_tokenizer");
    return Unigram::Create(j);
  }
  return InvalidArgumentError(absl::StrCat("unsupported model: ", type.empty() ? "(no type)" : type, " at model.type"));
}

}  // namespace tokenbatch::tokenizer::internal
