// The Unigram language model of SentencePiece (Kudo 2018, "Subword
// Regularization"), as Hugging Face tokenizers' Unigram model encodes with it:
// the segmentation of a word into vocabulary pieces whose summed log-probability
// scores are highest (Viterbi over the byte positions of the word's characters).
//
// Exactness rules taken from Hugging Face tokenizers (models/unigram/model.rs):
//   - every vocabulary entry is a candidate, special pieces such as "<s>" too;
//   - where no piece covers exactly one character at a position, the unknown
//     piece is a candidate for that character, scored (lowest score - 10);
//   - ties keep the first candidate found (positions left to right, shorter
//     pieces first);
//   - consecutive unknown characters are fused into one token;
//   - a token is looked up by its text, so a piece listed twice takes the id of
//     its last entry;
//   - with byte_fallback, an unknown token becomes one "<0xNN>" token per byte
//     when all those pieces exist (all sharing the unknown text's offsets),
//     else the unknown id.
// A word with a character that no piece covers, in a model without "unk_id",
// cannot be encoded (Hugging Face fails with MissingUnkId); Tokenize returns
// false for it.
//
// Immutable after Create; safe to share across threads.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/model.h"

namespace tokenbatch::tokenizer::internal {

class Unigram final : public Model {
 public:
  // Parses {"type": "Unigram", "vocab": [[piece, score], ...], "unk_id": N|null,
  // "byte_fallback": bool}. InvalidArgumentError for an empty vocabulary with an
  // unk_id, an unk_id outside it, a non-finite score, or a malformed entry
  // (naming its index).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Create(const nlohmann::json& j);

  bool Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const override;
  [[nodiscard]] std::optional<uint32_t> TokenToId(std::string_view token) const override;
  [[nodiscard]] size_t VocabSize() const override { return pieces_.size(); }

 private:
  // A byte trie over the pieces. Node 0 is the root, whose children are found
  // through root_child_ (one slot per byte); other nodes keep their children's
  // labels sorted in one contiguous run of labels_/targets_.
  struct Node {
    uint32_t first_edge = 0;
    uint32_t num_edges = 0;
    int32_t piece = -1;  // id of the piece ending here, or -1
  };
  void BuildTrie();
  [[nodiscard]] int64_t Child(uint32_t node, uint8_t label) const;
  // Appends the tokens of text [b, e) of `word` that Viterbi marked unknown.
  bool EmitUnknown(std::string_view word, uint32_t b, uint32_t e, std::vector<uint32_t>& ids,
                   std::vector<uint32_t>& ends) const;

  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  Vocab piece_ids_;                 // text -> id (the last entry of a repeated piece)
  std::optional<uint32_t> unk_id_;
  bool byte_fallback_ = false;
  double unk_score_ = 0;
  uint32_t byte_piece_[256] = {};   // id of "<0xNN>" when has_byte_piece_
  bool has_byte_piece_[256] = {};
  std::vector<Node> nodes_;
  std::vector<uint8_t> labels_;
  std::vector<uint32_t> targets_;
  int64_t root_child_[256] = {};    // child node of the root per byte, or -1
};

}  // namespace tokenbatch::tokenizer::internal
