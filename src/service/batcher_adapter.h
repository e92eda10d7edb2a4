// The Batcher's side of the embedding service: what one Batcher request
// carries (the backend's own EmbeddingInput, so that a batch reaches
// Encoder::Embed without a copy of its inputs), what it returns, and the
// batch, slice and merge functions over a backend::Encoder. Internal to the
// service; pure functions apart from the Encoder call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/core/request.h"
#include "tokenbatch/runtime/batcher.h"

namespace tokenbatch::server {

// One input's result: its vector and when and how long its batch ran.
struct ItemOut {
  std::vector<float> values;
  std::vector<std::int32_t> indices;  // a sparse model's vocabulary ids (backend::Embedding::indices)
  TimePoint batch_start{};  // the latest of its windows' batches for a split input
  double inference_us = 0;  // its batch's run (the sum over a split input's windows)
};
using ServiceBatcher = Batcher<backend::EmbeddingInput, ItemOut>;

// Runs one batch on `encoder` (which must outlive the Batcher): one ItemOut per
// input, in order, each with the batch's start and duration. Errors: the
// encoder's, for the whole batch (the Batcher isolates failures).
[[nodiscard]] ServiceBatcher::Backend EncoderBatchFunction(const backend::Encoder* encoder);

// The oversize hooks: a window of an input keeps its normalize, dimensions and
// special ends, gets the special ends restored at inner edges (WindowIds), and
// the prompt's tokens only in the first window; a split input's windows merge
// into their token-weighted mean (MergeWindows).
[[nodiscard]] ServiceBatcher::Hooks WindowHooks();

// The part of `input` covering `window` (see WindowHooks). Only single texts
// are windowed, never a pair (PairToTokens cuts or refuses those), so there
// are no token types to cut. Requires 0 <= window.begin < window.end <= size.
[[nodiscard]] backend::EmbeddingInput SliceInput(const backend::EmbeddingInput& input, TokenWindow window);

// Weighted mean of a split input's window embeddings (weights: window tokens).
// The backend normalised each part when asked, so the mean is normalised again
// when every part is unit length. Errors: Backend for no parts or parts of
// different widths.
[[nodiscard]] absl::StatusOr<ItemOut> MergeWindows(std::span<const ItemOut> parts,
                                                   std::span<const TokenWindow> windows);

}  // namespace tokenbatch::server
