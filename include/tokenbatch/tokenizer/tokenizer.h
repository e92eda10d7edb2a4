// Exact token ids and counts from a Hugging Face tokenizer.json.
//
// A Tokenizer loads the tokenizer.json that every Hugging Face model ships and
// encodes text to the same ids as Hugging Face's own `tokenizers` library (the
// reference for our golden tests), and decodes ids back to text as it does.
// Supported components (docs/tokenizer-coverage.md has the full table):
//   models:          BPE (byte-level or not; merges as "a b" or [a, b];
//                    ignore_merges; byte_fallback; unk/fuse_unk;
//                    continuing_subword_prefix, end_of_word_suffix; dropout
//                    ignored, as it only randomises training), WordPiece,
//                    WordLevel, and Unigram (SentencePiece's: Viterbi over piece
//                    scores, unk_id, byte_fallback to <0xNN> pieces)
//   normalizers:     NFC, NFKC, NFD, NFKD, Lowercase, BertNormalizer, Precompiled
//                    (SentencePiece's charsmap), Replace, Prepend, Strip,
//                    StripAccents, Nmt, ByteLevel, Sequence
//   pre-tokenizers:  Split (regex or string, all behaviours, invert), ByteLevel,
//                    BertPreTokenizer, Whitespace, WhitespaceSplit, Metaspace
//                    (replacement, prepend_scheme always/first/never, split),
//                    CharDelimiterSplit, Punctuation, Digits, FixedLength,
//                    UnicodeScripts (the reference's own script table, measured
//                    from its wheel), Sequence
//   post-processors: TemplateProcessing (single and pair), BertProcessing,
//                    RobertaProcessing, ByteLevel, Sequence
//   decoders:        ByteLevel, WordPiece, Metaspace, BPEDecoder, Replace,
//                    ByteFallback, Fuse, Strip, CTC, Sequence
//   added tokens:    matched in the raw text before normalisation (or in the
//                    normalised text for "normalized": true), leftmost-longest,
//                    with lstrip / rstrip / single_word (the regex crate's \w of
//                    Unicode 16.0 as the word class)
// Anything else (an unknown type) is refused at load with an error naming it
// and its JSON path (e.g. "unsupported normalizer: Foo at
// normalizer.normalizers[1]"). Two fields are read but
// deliberately not applied by Encode/Count: "padding" (padding is the batcher's
// job), and "truncation" (Hugging Face would cut every encoding to its
// max_length; here the scheduler's policy decides, so the full count is returned
// and the file's max_length is exposed as FileMaxLength() for use as a limit).
//
// Units: ids are vocabulary ids; offsets are byte offsets [begin, end) into the
// UTF-8 text passed in; lengths and windows are counted in tokens.
//
// Thread-safety: every method is const and may be called from many threads on one
// shared Tokenizer. The only mutable state is an internal word cache (at most
// 65,536 words of up to 128 bytes, like Hugging Face's BPE cache: filled until
// full, never evicted) guarded by sharded mutexes. Each calling thread also keeps
// thread-local scratch buffers sized to the largest text it has encoded. No
// method blocks on I/O except FromFile.
//
// Exactness: ids, offsets and decodings equal Hugging Face tokenizers 0.23 on the
// committed goldens (testdata/tokenizer), on the build-time goldens of the
// SentencePiece family (scripts/tokenizer/generate_build_goldens.py) and under
// the differential fuzzer (scripts/tokenizer/differential_fuzz.py), Unigram
// scores included: they are read as Hugging Face's JSON parser reads them, last
// bits and all, since they decide ties. Known differences: character classes
// come from Debian's utf8proc (Unicode 15.0) where Hugging Face's own tables
// are older (Unicode 8.0 categories for BertNormalizer, BertPreTokenizer,
// Punctuation and StripAccents; old normalization data) or newer (Unicode 17.0
// in Rust's standard library for Digits and Lowercase), so characters assigned
// or recategorised between those versions can be classified differently
// (docs/tokenizer-coverage.md); Decode refuses ids outside the vocabulary, which
// Hugging Face drops silently.
//
// Invalid UTF-8 input is refused with InvalidArgumentError (kInvalidArgument)
// naming the byte offset; it is never read past its end nor replaced silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/core/enum_names.h"

namespace tokenbatch::tokenizer {

// The result of encoding one text.
struct Encoding {
  // Token ids, special tokens included when they were requested.
  std::vector<uint32_t> ids;
  // offsets[i] = [begin, end) bytes of the input that token i covers; (0, 0) for
  // special tokens added by the post-processor. Byte-level tokens that cover part
  // of a multi-byte character report the whole character, as Hugging Face does.
  // Empty when offsets were not requested.
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  // special[i] is 1 for tokens added by the post-processor ([CLS], [SEP]), else 0.
  std::vector<uint8_t> special;
  // Token type ids from the pair template (EncodePair); empty from the
  // single-sequence methods, whose tokens are all type 0.
  std::vector<uint32_t> type_ids;
  // When EncodeOptions::with_word_ends: for each word of the text (an added
  // token, or a piece the pre-tokenizer split off), the index one past its
  // last token. What longest_first pair truncation measures lengths by.
  std::vector<uint32_t> word_ends;
};

// Which end of a sequence truncation cuts (Hugging Face's truncation_side):
// kRight keeps the first tokens, kLeft the last.
enum class TruncationSide { kRight, kLeft };
// Which end of a sequence EncodePair cuts.
using PairTruncationSide = TruncationSide;

// Which sequences of a pair EncodePair cuts to fit max_tokens (Hugging Face
// tokenizers' TruncationStrategy, by its names).
enum class PairTruncation {
  // Cut the longer sequence first, down to the shorter one's length, then both
  // to half the room each (the longer getting the odd token, the second when
  // both are at least max_tokens long): what
  // transformers' tokenizers, sentence-transformers' CrossEncoder and
  // text-embeddings-inference do (tokenizers' truncate_encodings, 0.23).
  kLongestFirst,
  // Cut the second sequence only; refused when the first leaves it no room.
  kOnlySecond,
};
inline constexpr EnumNames<PairTruncation, 2> kPairTruncationNames{
    "pair truncation",
    {{{PairTruncation::kLongestFirst, "longest_first"}, {PairTruncation::kOnlySecond, "only_second"}}}};

// Options of one EncodePair call.
struct PairEncodeOptions {
  // > 0: keep at most this many tokens in all, special tokens included, by
  // cutting as `truncation` says; 0: keep everything.
  size_t max_tokens = 0;
  PairTruncationSide side = PairTruncationSide::kRight;
  PairTruncation truncation = PairTruncation::kLongestFirst;
};

// What a model directory changes in how its tokenizer.json is used, as
// transformers and sentence-transformers apply it when they load one.
struct LoadOptions {
  // Put a Lowercase normalizer first, unless the normalizer is one or a
  // Sequence holding one at its top level: sentence-transformers'
  // do_lower_case (its Transformer module does exactly this).
  bool lowercase = false;
};

// Options of one Encode call.
struct EncodeOptions {
  // Add the post-processor's special tokens ([CLS] ... [SEP] for BERT). Added
  // tokens written in the text (e.g. "<|im_start|>") are always recognised.
  bool add_special_tokens = true;
  // Fill Encoding::offsets. Costs a little time; Count never computes them.
  bool with_offsets = true;
  // Fill Encoding::word_ends (with add_special_tokens false only: refused
  // otherwise, as InvalidArgumentError).
  bool with_word_ends = false;
};

class Tokenizer {
 public:
  // Loads tokenizer.json from `path`. Errors: NotFoundError when the file cannot
  // be read; InvalidArgumentError for malformed JSON or a component that is not
  // supported (the message names it, e.g. "unsupported model: WordLevel"). Blocks
  // on file I/O and parsing, for longer (and with more peak memory) the larger
  // the vocabulary.
  // `options` adjust it as a model directory says (LoadOptions).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path,
                                                                          const LoadOptions& options = {});
  // Same, from the JSON text itself.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json,
                                                                          const LoadOptions& options = {});

  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes `text` (UTF-8). Errors: InvalidArgumentError for invalid UTF-8 or a
  // text of 4 GiB or more.
  [[nodiscard]] absl::StatusOr<Encoding> Encode(std::string_view text, const EncodeOptions& options = {}) const;

  // The number of tokens Encode would return (ids.size()), without building the
  // id or offset vectors: the fast path for token budgets. Same errors as Encode.
  [[nodiscard]] absl::StatusOr<size_t> Count(std::string_view text, bool add_special_tokens = true) const;

  // Encodes `text` keeping at most `max_tokens` tokens in all: the text's tokens
  // are cut at the end (`side` kRight; kLeft cuts the start) and the
  // post-processor's special tokens are kept (for BERT: [CLS] first
  // max_tokens-2 tokens [SEP]), as Hugging Face's truncation "longest_first"
  // does for one sequence. The ids, offsets and special mask equal Encode's
  // followed by that cut, but only the part of a long text that holds the kept
  // tokens is tokenised (src/tokenizer/truncation.cc says how), so the work is
  // bounded by max_tokens, not by the text's length, except a linear UTF-8
  // check, texts whose kept end is one word longer than the rest, and a kLeft
  // cut with offsets (encoded whole: the reference's offsets there depend on
  // all that precedes).
  // options.with_word_ends is not supported here. Errors: those of Encode, and
  // InvalidArgumentError when max_tokens < NumSpecialTokens(add_special_tokens).
  [[nodiscard]] absl::StatusOr<Encoding> EncodeTruncated(std::string_view text, size_t max_tokens,
                                                         const EncodeOptions& options = {},
                                                         TruncationSide side = TruncationSide::kRight) const;

  // Splits `text` into overlapping windows of at most `window_tokens` tokens each
  // (special tokens included), consecutive windows sharing `overlap_tokens` text
  // tokens: window k holds text tokens [k*stride, k*stride + content) with
  // content = window_tokens - NumSpecialTokens and stride = content -
  // overlap_tokens; each window gets the special tokens. Offsets are always filled
  // (they say which bytes of `text` each window covers). An empty text gives one
  // window. Errors: those of Encode, and InvalidArgumentError when content < 1 or
  // overlap_tokens >= content.
  [[nodiscard]] absl::StatusOr<std::vector<Encoding>> EncodeWindows(std::string_view text, size_t window_tokens,
                                                                    size_t overlap_tokens,
                                                                    bool add_special_tokens = true) const;

  // Encodes a pair of texts (a cross-encoder's query and document) with the
  // post-processor's pair template, as Hugging Face's encode(first, second)
  // does: each text is encoded alone, then the template puts the special tokens
  // around and between them (BERT: [CLS] first [SEP] second [SEP], types 0 then
  // 1; XLM-R: <s> first </s> </s> second </s>). Fills ids, special and
  // type_ids, not offsets. options.max_tokens cuts as options.truncation says.
  // Errors: those of Encode (naming which text); FailedPreconditionError when
  // tokenizer.json's pair template is not supported; OutOfRangeError when
  // options.max_tokens is below the template's special tokens or, for
  // only_second, when the first text and those leave no room for a token of
  // the second.
  [[nodiscard]] absl::StatusOr<Encoding> EncodePair(std::string_view first, std::string_view second,
                                                    const PairEncodeOptions& options = {}) const;
  // The same with the first text already encoded: `first` is
  // Encode(first, {.add_special_tokens = false, .with_word_ends = true}), so
  // that a query is tokenised once for all the documents it is paired with
  // (without word_ends, each token counts as a word). Errors: those of Encode
  // for the second text (naming it), and the pair errors above.
  [[nodiscard]] absl::StatusOr<Encoding> EncodePair(const Encoding& first, std::string_view second,
                                                    const PairEncodeOptions& options = {}) const;

  // The number of special tokens the pair template adds (3 for BERT, 4 for XLM-R).
  [[nodiscard]] size_t NumPairSpecialTokens() const;

  // The number of special tokens the post-processor adds to one sequence (2 for
  // BERT's [CLS] .. [SEP], 0 for Qwen3); 0 when add_special_tokens is false.
  [[nodiscard]] size_t NumSpecialTokens(bool add_special_tokens = true) const;

  // Turns ids back into text, as Hugging Face tokenizers' `decode` does: each id
  // becomes its token (an added token's content, normalised for a "normalized"
  // one, else the model's vocabulary entry); with `skip_special_tokens`, every
  // token whose text equals the content of an added token marked "special" is
  // dropped (matching is by text, as in Hugging Face);
  // then the file's "decoder" runs (ByteLevel, WordPiece, Metaspace, BPEDecoder,
  // Replace, ByteFallback, Fuse, Strip, Sequence), or, without one, the tokens
  // are joined with spaces. Bytes that do not form valid UTF-8 (a byte-level id
  // sequence cut inside a character) come out as U+FFFD, as Hugging Face does.
  // Errors: InvalidArgumentError naming the position and value of the first id
  // that is not in the vocabulary (Hugging Face drops such ids silently; a server
  // must not answer for text it was not given). Thread-safe; allocates.
  [[nodiscard]] absl::StatusOr<std::string> Decode(const std::vector<uint32_t>& ids,
                                                   bool skip_special_tokens = true) const;

  // The token of `id` as written in tokenizer.json (added token content, or model
  // vocabulary entry), or nullopt when `id` is in neither.
  [[nodiscard]] std::optional<std::string> IdToToken(uint32_t id) const;

  // The id of `token` (an added token's content, or a model vocabulary entry as
  // written in tokenizer.json), or nullopt.
  [[nodiscard]] std::optional<uint32_t> TokenToId(std::string_view token) const;

  // Model vocabulary size plus added tokens not in it.
  [[nodiscard]] size_t VocabSize() const;

  // The "truncation": {"max_length": N} of tokenizer.json (tokens, special
  // tokens included), or nullopt when the file sets no truncation.
  [[nodiscard]] std::optional<size_t> FileMaxLength() const;

 private:
  struct Impl;
  // Tests set EncodeTruncated's chunk sizes (truncation_test.cc).
  friend struct TokenizerTestPeer;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenbatch::tokenizer
