// Decoders of tokenizer.json: they turn the tokens of a sequence of ids back
// into text. ByteLevel, WordPiece (prefix, cleanup), Metaspace (replacement,
// prepend_scheme), BPEDecoder (suffix), Replace, ByteFallback, Fuse, Strip, CTC
// (pad_token, word_delimiter_token, cleanup) and Sequence, each as Hugging Face tokenizers' decode_chain does it
// (tokenizers/src/decoders/*.rs and the pre-tokenizers' decoders); the chain's
// tokens are then concatenated. Without a decoder the tokens are joined with
// spaces, as Hugging Face does.
//
// A Decoder is immutable after Parse and safe to share across threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

class Regex;

class Decoder {
 public:
  // Parses the "decoder" field (null: no decoder). InvalidArgumentError naming
  // an unsupported type and its JSON path (e.g. "unsupported decoder: Foo at
  // decoder.decoders[1]") or a malformed option.
  [[nodiscard]] static absl::StatusOr<Decoder> Parse(const nlohmann::json& j);

  // The text of `tokens` (the vocabulary strings of the ids, in order).
  [[nodiscard]] std::string Decode(std::vector<std::string> tokens) const;

 private:
  enum class Kind { kByteLevel, kWordPiece, kMetaspace, kBpe, kReplace, kByteFallback, kFuse, kStrip, kCtc };
  struct Step {
    Kind kind;
    std::string text;            // kWordPiece prefix, kMetaspace replacement, kBpe suffix, kReplace content,
                                 // kCtc pad token
    std::string word_delimiter;  // kCtc
    bool flag = false;           // kWordPiece, kCtc: cleanup; kMetaspace: prepend_scheme is not "never"
    std::shared_ptr<const Regex> regex;  // kReplace pattern
    char32_t strip_char = 0;     // kStrip content
    size_t strip_start = 0;      // kStrip: at most this many leading content characters removed
    size_t strip_stop = 0;       // kStrip: at most this many trailing ones
  };
  static absl::Status ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps);
  static void ApplyStep(const Step& step, std::vector<std::string>& tokens);

  std::vector<Step> steps_;
  bool present_ = false;
};

}  // namespace tokenbatch::tokenizer::internal
