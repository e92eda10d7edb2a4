// SentencePiece's precompiled normalisation rules ("precompiled_charsmap", the
// Precompiled normalizer of tokenizer.json, base64 there). Format, as
// SentencePiece's normalizer.cc writes it: a little-endian uint32 byte size of
// a darts-clone double-array trie, the trie's 32-bit units, then a blob of
// NUL-terminated UTF-8 replacement strings; a key's trie value is the offset of
// its replacement in the blob.
//
// Application follows Hugging Face tokenizers (normalizers/precompiled.rs), not
// SentencePiece itself: the text is cut into extended grapheme clusters; a
// cluster under 6 bytes whose bytes start with a key is replaced whole by that
// (shortest) key's string; otherwise each character is looked up on its own.
//
// Parse checks the whole structure (every reachable trie unit and every value in
// bounds, the blob valid UTF-8), so Transform never reads out of bounds.
// Immutable after Parse; safe to share across threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenizer/normalizer.h"

namespace tokenbatch::tokenizer::internal {

class PrecompiledCharsmap {
 public:
  // Parses the decoded (binary) charsmap. An empty charsmap is valid and maps
  // nothing. InvalidArgumentError naming what is wrong otherwise: a size field
  // past the end or not a multiple of 4, a trie unit or value out of range, a
  // cycle, a replacement blob that is not UTF-8.
  [[nodiscard]] static absl::StatusOr<PrecompiledCharsmap> Parse(std::string_view bytes);

  // The replacement of the shortest key that `chunk` starts with, or nullopt.
  // The view points into this object's replacement blob: valid while it lives.
  [[nodiscard]] std::optional<std::string_view> Transform(std::string_view chunk) const;

  // Normalises io (valid UTF-8) grapheme by grapheme; see the file comment.
  // Recomputes io's per-byte alignments to the original text when `align`.
  void Apply(NormalizedText& io, bool align) const;

 private:
  // A replacement as a place in blob_ (not a view: the object moves).
  struct Replacement {
    bool present = false;
    uint32_t offset = 0;
    uint32_t size = 0;
  };
  std::vector<uint32_t> units_;
  std::string blob_;
  // The replacement of each ASCII character standing alone, computed once:
  // most text is ASCII, and an ASCII character followed by another ASCII
  // character (other than CR LF) is a grapheme of its own.
  Replacement ascii_[128];
};

}  // namespace tokenbatch::tokenizer::internal
