// Pre-tokenizers of tokenizer.json: Split (regex or literal pattern, every split
// behaviour, invert), ByteLevel (add_prefix_space, use_regex), BertPreTokenizer,
// Whitespace, WhitespaceSplit and Sequence. They cut normalised text into the
// words the model encodes one at a time.
//
// A PreTokenizer is immutable after Parse and safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "tokenizer/regex.h"

namespace tokenbatch::tokenizer::internal {

// A word: bytes [begin, end) of the normalised text, preceded by one virtual space
// byte when `prefix_space` is set (ByteLevel add_prefix_space).
struct Word {
  uint32_t begin;
  uint32_t end;
  bool prefix_space = false;
};

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" field (null means the whole piece is one word).
  // Unknown types and options are refused with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<PreTokenizer> Parse(const nlohmann::json& j);

  // True when a ByteLevel pre-tokenizer is present: words are then encoded as raw
  // bytes (the model's vocabulary is mapped from GPT-2's byte alphabet at load).
  [[nodiscard]] bool byte_level() const { return byte_level_; }

  // Splits `text` (valid UTF-8) into words, replacing `words`. `scratch` is reused
  // storage.
  void Split(std::string_view text, std::vector<Word>& words, std::vector<Word>& scratch) const;

 private:
  enum class Kind { kSplit, kByteLevel, kBert, kWhitespaceSplit };
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Step {
    Kind kind = Kind::kSplit;
    std::shared_ptr<const Regex> regex;  // kSplit, and kByteLevel with use_regex
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;
  };
  static absl::Status ParseInto(const nlohmann::json& j, std::vector<Step>& steps, bool& byte_level);
  static void ApplyStep(const Step& step, std::string_view text, const std::vector<Word>& in,
                        std::vector<Word>& out);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace tokenbatch::tokenizer::internal
