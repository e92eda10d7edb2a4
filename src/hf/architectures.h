// Per-architecture loaders behind LoadTransformer (transformer.h). Internal.
#pragma once

#include "hf/transformer.h"

namespace tokenbatch::hf {

// BERT and XLM-RoBERTa (bert.cc); Qwen3 (qwen3.cc). Same contract as LoadTransformer.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Transformer>> LoadBert(const ArchitectureConfig& config,
                                                                    const Checkpoint& checkpoint,
                                                                    at::ScalarType dtype, at::Device device);
[[nodiscard]] absl::StatusOr<std::unique_ptr<Transformer>> LoadQwen3(const ArchitectureConfig& config,
                                                                     const Checkpoint& checkpoint,
                                                                     at::ScalarType dtype, at::Device device);

}  // namespace tokenbatch::hf
