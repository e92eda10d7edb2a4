// The transformer encoders behind HfEncoder, written directly over ATen tensors:
// weights loaded by name from safetensors, no TorchScript, no Python.
//
// One forward takes a TokenBatch in one of two layouts:
//   packed  every request's tokens concatenated: ids, positions, types are [T]
//           (T = Σ tokens), `offsets` marks where each request starts; the linear
//           layers run on [T, H] and attention runs per request, so no padded
//           position is ever computed (the cost `--cost-model sum` models);
//   padded  [B, Lmax] with `key_mask` [B, Lmax] (true = a real token), as
//           transformers runs it (the cost `--cost-model padded` models).
// It returns the last hidden state: [T, H] packed, [B, Lmax, H] padded.
//
// Formulas follow the transformers implementations of BertModel,
// XLMRobertaModel and Qwen3Model (modeling_bert.py, modeling_xlm_roberta.py,
// modeling_qwen3.py), checked against them by tests/python/hf_parity.py.
// Internal to src/hf; includes ATen, so only the few torch translation units see it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/hf/model_directory.h"
#include "tokenbatch/hf/safetensors.h"

namespace tokenbatch::hf {

struct TokenBatch {
  bool packed = true;
  std::vector<int64_t> offsets;  // B + 1 entries: request i is tokens [offsets[i], offsets[i+1])
  int64_t max_length = 0;        // Lmax, tokens
  at::Tensor ids;                // int64, [T] or [B, Lmax]
  at::Tensor positions;          // int64, same shape: position ids (0-based index within the request;
                                 // XLM-R: transformers' create_position_ids_from_input_ids)
  at::Tensor types;              // int64, same shape: token type ids (0 when unused)
  at::Tensor key_mask;           // bool [B, Lmax], padded layout only
  [[nodiscard]] int64_t batch_size() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

class Transformer {
 public:
  virtual ~Transformer() = default;
  // The last hidden state (see the header comment). Thread-safe (weights are
  // read only); throws c10::Error / std::bad_alloc on failure.
  [[nodiscard]] virtual at::Tensor Forward(const TokenBatch& batch) const = 0;
};

// Builds the architecture config.architecture names from `checkpoint`, with every
// weight converted to `dtype` on `device`. Errors: InvalidArgumentError naming
// the checkpoint file and the tensor (missing, wrong shape, unsupported dtype),
// listing the shape expected.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Transformer>> LoadTransformer(const ArchitectureConfig& config,
                                                                           const Checkpoint& checkpoint,
                                                                           at::ScalarType dtype, at::Device device);

// Scaled dot-product attention over q [.., heads, d] and k, v [.., kv_heads, d]
// in the batch's layout (packed [T, ., d] or padded [B, Lmax, ., d]); kv heads are
// shared by heads / kv_heads query heads each (grouped-query attention).
// `causal`: a token sees only itself and earlier tokens of its request.
// Softmax runs in float32 whatever the dtype, as transformers' eager attention does.
// Returns [T, heads * d] or [B, Lmax, heads * d].
[[nodiscard]] at::Tensor Attention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k,
                                   const at::Tensor& v, bool causal);

}  // namespace tokenbatch::hf
