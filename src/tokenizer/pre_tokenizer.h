// Pre-tokenizers of tokenizer.json: Split (regex or literal pattern, every split
// behaviour, invert), ByteLevel (add_prefix_space, use_regex), BertPreTokenizer,
// Whitespace, WhitespaceSplit, Metaspace (replacement, prepend_scheme, split),
// CharDelimiterSplit, Punctuation, Digits, FixedLength, UnicodeScripts and
// Sequence. They cut normalised text into the words the model encodes one at a
// time. Metaspace also rewrites the text (spaces become the replacement
// character, which may be put before a word), as Hugging Face's does; those
// pre-tokenizers go through SplitRewriting.
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
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"

namespace tokenbatch::tokenizer::internal {

// A word: bytes [begin, end) of the normalised text, preceded by one virtual space
// byte when `prefix_space` is set (ByteLevel add_prefix_space).
struct Word {
  uint32_t begin;
  uint32_t end;
  bool prefix_space = false;
};

// The options of a Metaspace component (pre-tokenizer and decoder alike), as
// Hugging Face reads them: prepend_scheme defaults to "always", and the older
// add_prefix_space false is accepted only beside prepend_scheme "never".
struct MetaspaceOptions {
  std::string replacement;     // one character, UTF-8
  std::string prepend_scheme;  // "always", "first" or "never"
  bool split = true;
};
// InvalidArgumentError naming `path` for a replacement that is not one
// character, an unknown scheme or a contradiction; json exceptions for wrong types.
[[nodiscard]] absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const nlohmann::json& j, const std::string& path);

// How a split keeps the delimiters it finds (Hugging Face's SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// The character classes a pre-tokenizer splits on, one match per character.
enum class CharClass {
  kPunctuation,  // ASCII punctuation or general category P* (Punctuation)
  kNumeric,      // Rust's char::is_numeric (Digits)
  kDelimiter,    // one given character (CharDelimiterSplit)
};

class PreTokenizer {
 public:
  // Parses the "pre_tokenizer" field (null means the whole piece is one word).
  // Unknown types and options are refused with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<PreTokenizer> Parse(const nlohmann::json& j);

  // True when a ByteLevel pre-tokenizer is present: words are then encoded as raw
  // bytes (the model's vocabulary is mapped from GPT-2's byte alphabet at load).
  [[nodiscard]] bool byte_level() const { return byte_level_; }

  // True when a step rewrites the text (Metaspace): use SplitRewriting.
  [[nodiscard]] bool rewrites_text() const { return rewrites_; }
  // True when SplitRewriting needs io's alignments even without offsets
  // (Metaspace's prepend_scheme "first" asks whether a word starts the input).
  [[nodiscard]] bool needs_alignment() const { return needs_alignment_; }
  // True when where a step splits depends on all of the piece before it, not
  // on a few characters around: FixedLength counts from the piece's start,
  // UnicodeScripts carries the last script across any run of Any characters.
  // A piece's end can then not be split without its start (truncation.cc).
  [[nodiscard]] bool splits_from_start() const { return splits_from_start_; }

  // Splits `text` (valid UTF-8) into words, replacing `words`. `scratch` is reused
  // storage. Requires !rewrites_text().
  void Split(std::string_view text, std::vector<Word>& words, std::vector<Word>& scratch) const;

  // Splits io.text (valid UTF-8) into words like Split, rewriting io (text and,
  // when `align`, its alignments) where a Metaspace step does; the words index
  // the rewritten io.text.
  void SplitRewriting(NormalizedText& io, bool align, std::vector<Word>& words, std::vector<Word>& scratch) const;

 private:
  enum class Kind {
    kSplit, kByteLevel, kBert, kWhitespaceSplit, kMetaspace, kCharClass, kFixedLength, kUnicodeScripts
  };
  enum class Prepend { kAlways, kFirst, kNever };
  struct Step {
    Kind kind = Kind::kSplit;
    std::shared_ptr<const Regex> regex;  // kSplit, and kByteLevel with use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    CharClass char_class = CharClass::kPunctuation;  // kCharClass
    char32_t delimiter = 0;              // kCharClass kDelimiter
    size_t length = 5;                   // kFixedLength: characters per word
    bool add_prefix_space = false;
    std::string replacement;  // kMetaspace: one character, UTF-8
    Prepend prepend = Prepend::kAlways;
    bool split = true;
  };
  // Metaspace on each of `words` of io: the rewritten words make the new io.
  void ApplyMetaspace(const Step& step, NormalizedText& io, bool align, const std::vector<Word>& in,
                      std::vector<Word>& out) const;
  static absl::Status ParseInto(const nlohmann::json& j, const std::string& path, std::vector<Step>& steps,
                                bool& byte_level);
  static void ApplyStep(const Step& step, std::string_view text, const std::vector<Word>& in,
                        std::vector<Word>& out);

  std::vector<Step> steps_;
  bool byte_level_ = false;
  bool rewrites_ = false;
  bool needs_alignment_ = false;
  bool splits_from_start_ = false;
};

}  // namespace tokenbatch::tokenizer::internal
