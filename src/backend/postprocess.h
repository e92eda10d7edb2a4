// The libtorch-free parts of TorchEncoder::Embed: request validation before the
// forward and per-request post-processing (Matryoshka truncation, then L2
// normalisation) after pooling. Pure functions, thread-safe, never block.
#pragma once

#include <span>

#include "absl/status/status.h"
#include "tokenbatch/backend/encoder.h"

namespace tokenbatch::backend {

// Checks `inputs[i]` against the options and the model width H = `hidden_size`:
// non-empty ids, each id in [0, vocab_size) (upper bound only when vocab_size > 0),
// length <= max_positions (when > 0), token_type_ids empty or of the same length and
// non-negative, dimensions in [0, H]. `accepts_token_types` false (the module's
// forward takes two arguments) also refuses non-zero token_type_ids.
// InvalidArgumentError naming the request index and the offending value.
[[nodiscard]] absl::Status ValidateInputs(std::span<const EmbeddingInput> inputs,
                                          const EncoderOptions& options, int hidden_size,
                                          bool accepts_token_types);

// Builds the request's embedding from its pooled row `pooled` (H floats): keeps the
// first `dimensions` values (0 = all), then L2-normalises them if `normalize`.
// A zero vector stays zero (dividing by max(norm, 1e-12), as torch's F.normalize).
[[nodiscard]] Embedding FinishEmbedding(std::span<const float> pooled, int dimensions,
                                        bool normalize);

// A sparse model's embedding from its dense weights per vocabulary id: the ids
// whose weight is above 0, ascending, in `indices`, and those weights in
// `values` (EncoderInfo::sparse).
[[nodiscard]] Embedding SparseEmbedding(std::span<const float> weights);

}  // namespace tokenbatch::backend
