// HfEncoder's state (hf_encoder.h's pimpl), shared by the translation units
// that implement it: hf_encoder.cc (loading, batches, pooling) and
// hf_encoder_quantize.cc (int8). Internal to src/hf (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backend/device_peak_memory.h"
#include "hf/splade.h"
#include "hf/transformer.h"
#include "tokenbatch/hf/hf_encoder.h"

namespace tokenbatch::hf {

using backend::EmbeddingInput;
using backend::Pooling;

struct HfEncoder::Impl {
  HfEncoderOptions options;
  ModelDirectory model;
  at::Device device{at::kCPU};
  at::ScalarType dtype = at::kFloat;
  AttentionKernel attention = AttentionKernel::kEager;
  Pooling pooling = Pooling::kMean;
  bool normalize = false;
  std::unique_ptr<Transformer> transformer;
  struct Dense {
    at::Tensor weight, bias;
    bool tanh = false;
  };
  std::vector<Dense> dense;
  // A sequence-classification head (ModelDirectory::classifier): logits =
  // out_w tanh(dense_w h_cls + dense_b) + out_b.
  struct Head {
    at::Tensor dense_w, dense_b, out_w, out_b;
  };
  std::optional<Head> head;
  std::unique_ptr<Splade> splade;  // ModelDirectory::splade's head, with splade pooling
  int width = 0;                   // embedding width after the Dense layers; the number of labels of a classifier
  backend::EncoderOptions limits;  // what backend::ValidateInputs checks
  mutable backend::DevicePeakMemory peak{at::kCPU};
  std::optional<backend::QuantizationQuality> quality;  // set by QuantizeInt8

  // The batch in the configured layout, on the device.
  TokenBatch Assemble(std::span<const EmbeddingInput> inputs) const;
  // [B, width] float32 on the CPU.
  at::Tensor Run(std::span<const EmbeddingInput> inputs) const;
  // Reads the classifier head's weights (transformers' names for the class).
  absl::Status LoadHead(const Checkpoint& checkpoint);
};

}  // namespace tokenbatch::hf
