// Post-processors of tokenizer.json for single sequences: TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel and Sequence. Each reduces to a
// list of special-token ids placed before and after the encoded sequence, plus
// optional byte-level offset trimming (leading/trailing spaces removed from token
// offsets, as Hugging Face's ByteLevel process_offsets does).
//
// Immutable after Parse; safe to share across threads.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"

namespace tokenbatch::tokenizer::internal {

struct PostProcessor {
  std::vector<uint32_t> prefix_ids;  // special tokens before the sequence ([CLS])
  std::vector<uint32_t> suffix_ids;  // special tokens after it ([SEP])
  bool trim_offsets = false;         // byte-level offset trimming
  bool trim_add_prefix_space = false;

  // Parses the "post_processor" field (null: none). Unknown types are refused
  // with InvalidArgumentError naming them.
  [[nodiscard]] static absl::StatusOr<PostProcessor> Parse(const nlohmann::json& j);
};

}  // namespace tokenbatch::tokenizer::internal
