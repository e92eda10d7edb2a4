// Byte-pair encoding (Sennrich et al. 2016; the BPE model of Hugging Face
// tokenizers): start from single symbols (bytes for byte-level vocabularies,
// characters otherwise) and repeatedly merge the adjacent pair of lowest merge
// rank, leftmost first, until no listed merge applies. Supports merges written as
// "a b" strings or ["a", "b"] pairs, ignore_merges, continuing_subword_prefix,
// end_of_word_suffix (byte-level vocabularies too, as CLIP's), unk_token with
// fuse_unk, and byte_fallback. Dropout is ignored: it randomises training, while
// inference applies every merge.
#pragma once

#include <string>

#include "tokenizer/model.h"

namespace tokenbatch::tokenizer::internal {

class Bpe final : public Model {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Model>> Create(const nlohmann::json& j, bool byte_level);

  bool Tokenize(std::string_view word, std::vector<uint32_t>& ids, std::vector<uint32_t>& ends) const override;
  [[nodiscard]] std::optional<uint32_t> TokenToId(std::string_view token) const override;
  [[nodiscard]] size_t VocabSize() const override { return vocab_.size(); }

 private:
  struct Merge {
    uint32_t rank;
    uint32_t new_id;
  };
  static uint64_t PairKey(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
  // Initial symbols of a word (characters, byte fallback, unk) from `chars`,
  // the word written in the vocabulary's alphabet: the word itself, or its
  // GPT-2 byte-alphabet form for a byte-level vocabulary, where each character
  // stands for one byte of the word (`one_byte_per_char`).
  void InitialSymbols(std::string_view chars, bool one_byte_per_char, std::vector<uint32_t>& ids,
                      std::vector<uint32_t>& ends) const;

  Vocab vocab_;                      // keys as raw bytes when byte_level_
  Vocab json_vocab_;                 // keys as written in tokenizer.json (for TokenToId)
  absl::flat_hash_map<uint64_t, Merge> merges_;
  bool byte_level_ = false;
  bool ignore_merges_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  std::optional<uint32_t> unk_id_;
  std::string prefix_;               // continuing_subword_prefix
  std::string suffix_;               // end_of_word_suffix
  uint32_t byte_ids_[256] = {};      // byte-level: id of each single-byte token
  bool has_byte_id_[256] = {};
};

}  // namespace tokenbatch::tokenizer::internal
