// Normalizers of tokenizer.json: NFC, NFKC, NFD, NFKD, Lowercase,
// BertNormalizer, Precompiled (SentencePiece's charsmap), Replace, Prepend,
// Strip, StripAccents, Nmt, ByteLevel and Sequence, applied to one piece of input text (the text between added tokens).
//
// Hugging Face tracks, for every normalised character, the range of original text
// it came from; we keep the same thing per normalised byte (`begin`/`end`) so that
// token offsets can point back into the caller's bytes: each character of a
// decomposition keeps its original character's range, and a composed character
// takes the range of its starter (the first character composed), as Hugging Face
// reports them.
//
// A Normalizer is immutable after Parse and safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

class PrecompiledCharsmap;
class Regex;

// Text after normalisation. When `identity` is true, `text` equals the piece that
// was normalised (byte i came from byte base + i). Otherwise, when alignments were
// requested, `begin[i]`/`end[i]` give for byte i of `text` the byte range
// [begin, end) of the original input it came from (absolute offsets in the string
// passed to Encode: the whole character it belongs to).
struct NormalizedText {
  std::string text;
  bool identity = true;
  uint32_t base = 0;
  std::vector<uint32_t> begin;
  std::vector<uint32_t> end;

  // Original [begin, end) of normalised bytes [b, e) (b < e), widened to whole
  // characters as Hugging Face reports them. Requires alignments (or identity).
  [[nodiscard]] uint32_t OriginalBegin(size_t b) const;
  [[nodiscard]] uint32_t OriginalEnd(size_t e) const;
};

class Normalizer {
 public:
  // Parses the "normalizer" field (null means no normalizer). Unknown types and
  // unsupported options are refused with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<Normalizer> Parse(const nlohmann::json& j);

  // True when Apply never changes text (no normalizer configured).
  [[nodiscard]] bool IsIdentity() const { return steps_.empty(); }

  // Normalises `piece` (valid UTF-8) that starts at byte `base` of the original
  // input. Fills out.begin/out.end only when `align` is true.
  void Apply(std::string_view piece, uint32_t base, bool align, NormalizedText& out) const;

  // Normalises a whole string, no alignment (used for added tokens' content).
  [[nodiscard]] std::string ApplyToString(std::string_view s) const;

 private:
  enum class Kind {
    kNfc, kNfkc, kNfd, kNfkd, kLowercase, kBert, kPrecompiled, kReplace, kPrepend, kStrip, kStripAccents, kNmt, kByteLevel
  };
  struct Step {
    Kind kind;
    bool clean_text = false;
    bool handle_chinese_chars = false;
    bool strip_accents = false;
    bool lowercase = false;
    bool strip_left = false;                                // kStrip
    bool strip_right = false;                               // kStrip
    std::shared_ptr<const PrecompiledCharsmap> charsmap;    // kPrecompiled
    std::shared_ptr<const Regex> regex;                     // kReplace: the pattern
    std::string text;                                       // kReplace: content; kPrepend: prefix
  };
  static absl::Status ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps);
  static void ApplyStep(const Step& step, NormalizedText& io, bool align);

  std::vector<Step> steps_;
};

}  // namespace tokenbatch::tokenizer::internal
