// SpladeHead's weights and pooling (model_directory.h): a masked-LM head over
// the transformer's last hidden state, pooled into one weight per vocabulary
// id. Internal to src/hf (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <memory>

#include "absl/status/statusor.h"
#include "hf/transformer.h"
#include "tokenbatch/hf/model_directory.h"
#include "tokenbatch/hf/safetensors.h"

namespace tokenbatch::hf {

class Splade {
 public:
  // Reads BertForMaskedLM's `cls.predictions` weights from `checkpoint` for
  // `model` (its splade head set); the decoder's weight is the transformer's
  // word embeddings when the checkpoint does not hold it (tied, transformers'
  // default). Errors: InvalidArgumentError naming a missing or misshapen tensor.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Splade>> Load(const ModelDirectory& model,
                                                                    const Checkpoint& checkpoint,
                                                                    const Transformer& transformer,
                                                                    at::ScalarType dtype, at::Device device);

  // The weights [B, vocab] float32 on the CPU of the batch whose last hidden
  // state is `rows` ([rows, H], each input's tokens consecutive), one input at a
  // time: logits = decoder(LayerNorm(act(dense(h)))), then log(1 + relu(·))
  // (twice for log1p_relu), max- or sum-pooled over the input's tokens.
  // Thread-safe (weights are read only); throws c10::Error / std::bad_alloc.
  [[nodiscard]] at::Tensor Weights(const at::Tensor& rows, const TokenBatch& batch) const;

 private:
  Splade() = default;
  SpladeHead how_;
  std::string activation_;
  double eps_ = 0;
  at::Tensor dense_w_, dense_b_, ln_w_, ln_b_, decoder_w_, decoder_b_;
};

}  // namespace tokenbatch::hf
