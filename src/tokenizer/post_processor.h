// Post-processors of tokenizer.json: TemplateProcessing, BertProcessing,
// RobertaProcessing, ByteLevel and Sequence. For one sequence each reduces to a
// list of special-token ids placed before and after the encoded sequence, plus
// optional byte-level offset trimming (leading/trailing spaces removed from token
// offsets, as Hugging Face's ByteLevel process_offsets does). For a pair of
// sequences (a cross-encoder's query and document) each reduces to a template:
// special tokens and the two sequences in order, each piece with its token type
// id. BertProcessing's pair is [CLS] A [SEP] B:1 [SEP]:1 and RobertaProcessing's
// <s> A </s> </s> B </s>, all type 0, as Hugging Face tokenizers 0.23 builds them.
//
// Immutable after Parse; safe to share across threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

// One piece of a pair template: special-token ids, or sequence A or B.
struct PairPiece {
  enum class Kind { kSpecial, kFirst, kSecond };
  Kind kind = Kind::kSpecial;
  std::vector<uint32_t> ids;  // kSpecial only
  uint32_t type_id = 0;       // the token type of every token of the piece
};

struct PostProcessor {
  std::vector<uint32_t> prefix_ids;  // special tokens before the sequence ([CLS])
  std::vector<uint32_t> suffix_ids;  // special tokens after it ([SEP])
  bool trim_offsets = false;         // byte-level offset trimming
  bool trim_add_prefix_space = false;
  // The pair template: A before B, each once. Without a special-token
  // processor it is A:0 B:1 (Hugging Face gives the second sequence type 1).
  std::vector<PairPiece> pair;
  // Why `pair` is empty: a pair template that is not supported (single
  // sequences still are); "" otherwise.
  std::string pair_error;

  // Parses the "post_processor" field (null: none). Unknown types are refused
  // with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<PostProcessor> Parse(const nlohmann::json& j);
};

}  // namespace tokenbatch::tokenizer::internal
