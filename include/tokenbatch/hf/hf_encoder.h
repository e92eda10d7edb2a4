// HfEncoder: a Hugging Face / sentence-transformers model directory run in C++
// over libtorch (no TorchScript, no Python at run time), as TEI serves one.
//
// Load reads the directory (model_directory.h), the weights by name from
// safetensors (safetensors.h) into the architecture config.json names
// (bert, xlm-roberta / roberta, qwen3), the Dense modules after pooling, and runs a
// probe forward so that an unusable dtype or device fails at load, not on the
// first request. Embed then runs, per batch:
//   transformer -> pooling (cls | mean | last token, from the Pooling module; mean
//   leaves out a request's prompt_tokens when include_prompt is false) ->
//   Dense layers -> Matryoshka truncation -> L2 normalisation (the Normalize
//   module, or the request's choice).
// A cross-encoder / classifier directory (ModelDirectory::classifier) runs
//   transformer -> its classification head on the first token -> logits,
// so Embed returns num_labels raw logits per input (no pooling, no
// normalisation) and hidden_size() is num_labels; inputs may carry the token
// types of a pair (query, document).
// Execution layout (transformer.h): packed, [Σ tokens, H] through the linear
// layers and attention per request, so padding costs nothing; or padded,
// [B, Lmax, H] with a key mask, as transformers runs it.
//
// libtorch stays out of this header (pimpl).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/backend/encoder.h"
#include "tokenbatch/hf/model_directory.h"

namespace tokenbatch::hf {

enum class Execution {
  kPacked,  // no padded positions computed: cost Σ tokens
  kPadded,  // right-padded [B, Lmax]: cost B x Lmax
};
inline constexpr EnumNames<Execution, 2> kExecutionNames{
    "execution", {{{Execution::kPacked, "packed"}, {Execution::kPadded, "padded"}}}, '"'};
// "packed" | "padded" -> Execution; InvalidArgumentError listing them otherwise.
[[nodiscard]] inline absl::StatusOr<Execution> ParseExecution(std::string_view name) {
  return kExecutionNames.Parse(name);
}

// Which attention to run (transformers' attn_implementation names):
//   auto   the fused kernels where libtorch has them (>= 2), else eager; which one
//          is in EncoderInfo::attention (transformer.h's ChooseAttentionKernel);
//   sdpa   scaled_dot_product_attention everywhere (needs libtorch >= 2);
//   eager  explicit matmuls and softmax, the reference the fused paths are tested against.
enum class AttentionImplementation { kAuto, kSdpa, kEager };
inline constexpr EnumNames<AttentionImplementation, 3> kAttentionImplementationNames{
    "attention implementation",
    {{{AttentionImplementation::kAuto, "auto"},
      {AttentionImplementation::kSdpa, "sdpa"},
      {AttentionImplementation::kEager, "eager"}}},
    '"'};
// "auto" | "sdpa" | "eager" -> AttentionImplementation; InvalidArgumentError listing them otherwise.
[[nodiscard]] inline absl::StatusOr<AttentionImplementation> ParseAttentionImplementation(std::string_view name) {
  return kAttentionImplementationNames.Parse(name);
}

// Whether the encoder layers' linear layers run in int8 (dynamic quantization:
// int8 weights per output channel, activations quantized per call, each layer's
// few outlier input features kept in float32; hf/linear.h). Needs float32
// weights on the CPU. Infinity's --dtype int8 quantizes the same layers.
enum class Quantization { kNone, kInt8 };
inline constexpr EnumNames<Quantization, 2> kQuantizationNames{
    "quantization", {{{Quantization::kNone, "none"}, {Quantization::kInt8, "int8"}}}, '"'};

struct HfEncoderOptions {
  std::string model_dir;          // required
  std::string device = "cpu";     // "cpu", or "cuda" / "cuda:N" with a CUDA libtorch
  // Weights and activations: "float32", "float16" or "bfloat16" (TEI's --dtype).
  // Softmax and RMSNorm run in float32 whatever this says.
  std::string dtype = "float32";
  Execution execution = Execution::kPacked;
  AttentionImplementation attention = AttentionImplementation::kAuto;
  // Overrides the directory's Pooling module; required when it has none.
  std::optional<backend::Pooling> pooling;
  // Overrides the directory's Normalize module as the default for requests.
  std::optional<bool> normalize;
  // CPU threads per forward (see backend::EncoderOptions::num_threads); 0 = default.
  int num_threads = 0;
  // CUDA only, > 0: the most bytes the caching allocator may hold on the device,
  // so that batches beyond it fail with a real CUDA OOM as on a smaller GPU.
  int64_t cuda_memory_limit_bytes = 0;
  // kInt8: after loading, the encoder layers' linear layers are quantized
  // (calibrated on probe inputs: the features each keeps in float32), and the
  // outputs on other probe inputs are compared with the float32 ones
  // (EncoderInfo::quantization_quality).
  Quantization quantize = Quantization::kNone;
};

class HfEncoder final : public backend::Encoder {
 public:
  // Loads everything or nothing. Blocks for the file reads, the weight copies and
  // the probe forward (docs/benchmarks.md). Errors: InvalidArgumentError naming the file and
  // field or tensor (see model_directory.h, safetensors.h; a Dense layer whose
  // in_features differs from the width before it; no pooling; a pooling or
  // normalize option for a cross-encoder, which has neither; int8 with a dtype
  // other than float32 or off the CPU; bfloat16 or int8 on a CPU without the
  // instructions they need, cpu_low_precision.h), or an unusable device / dtype;
  // BackendError / OutOfMemoryError if the probe forward fails; Unimplemented
  // for int8 on a libtorch without a quantized engine.
  // Runs on a thread of its own, joined before it returns (see RunOnOwnThread in
  // src/backend/torch_guard.h: why a load must not leave an OpenMP team behind).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HfEncoder>> Load(const HfEncoderOptions& options);
  ~HfEncoder() override;
  HfEncoder(const HfEncoder&) = delete;
  HfEncoder& operator=(const HfEncoder&) = delete;

  // One embedding per input, in order; empty in, empty out. Inputs are checked
  // first: ids in [0, vocab_size), 1..max_seq_length tokens, token types below
  // type_vocab_size, dimensions in [0, hidden_size()], prompt_tokens in [0, length).
  // Blocks for the forward. Thread-safe: weights are read only, each call has its
  // own tensors. Errors: InvalidArgumentError (an input), OutOfMemoryError (an
  // allocation failed: the runtime may split the batch), BackendError (any other
  // failure), one status for the whole batch.
  [[nodiscard]] absl::StatusOr<std::vector<backend::Embedding>> Embed(
      std::span<const backend::EmbeddingInput> inputs) const override;

  // Width of the embeddings: the last Dense layer's out_features, else hidden_size.
  [[nodiscard]] int hidden_size() const override;
  // name "hf"; the config's model_type, vocab_size and max_seq_length, the
  // options' dtype, the attention kernel in use, the pooling in use (none for a
  // classifier) and its head.
  [[nodiscard]] backend::EncoderInfo info() const override;
  [[nodiscard]] bool on_cuda() const override;
  [[nodiscard]] absl::Status ResetPeakMemory() const override;
  [[nodiscard]] absl::StatusOr<int64_t> PeakMemoryBytes() const override;

  // The directory as read at load (config, modules, prompts, max_seq_length).
  [[nodiscard]] const ModelDirectory& model() const;
  // The options Load was given.
  [[nodiscard]] const HfEncoderOptions& options() const;
  // The pooling in use: the options' override, else the Pooling module's.
  [[nodiscard]] backend::Pooling pooling() const;
  // The default for requests that do not say (options, else the Normalize module).
  [[nodiscard]] bool normalize() const;

 private:
  struct Impl;
  explicit HfEncoder(std::unique_ptr<Impl> impl);
  // Load's work, on the calling thread.
  static absl::StatusOr<std::unique_ptr<HfEncoder>> LoadOnThisThread(const HfEncoderOptions& options);
  // Quantizes the transformer's linear layers to int8 and measures the quality
  // against the float32 outputs (hf_encoder_quantize.cc). Load only.
  absl::Status QuantizeInt8();
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenbatch::hf
