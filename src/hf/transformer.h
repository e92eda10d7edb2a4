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
// Attention runs on the kernel chosen at load (ChooseAttentionKernel, in
// attention.cc; the fused calls are in fused_attention.cc): explicit matmuls ("eager", every libtorch), or with
// libtorch >= 2 the fused kernels, which never hold the B x heads x L x L scores
// in memory: scaled_dot_product_attention, and on CUDA over the packed layout
// FlashAttention's and xFormers' variable-length kernels (one launch over all
// T tokens, the requests told apart by cu_seqlens).
//
// Formulas follow the transformers implementations of BertModel,
// XLMRobertaModel and Qwen3Model (modeling_bert.py, modeling_xlm_roberta.py,
// modeling_qwen3.py), checked against them by tests/python/hf_parity.py.
// Internal to src/hf; includes ATen, so only the few torch translation units see it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tokenbatch/hf/hf_encoder.h"
#include "tokenbatch/hf/model_directory.h"
#include "tokenbatch/hf/safetensors.h"
#include "hf/linear.h"

namespace tokenbatch::hf {

// config.json's hidden_act applied to `x` (any shape, elementwise), as
// transformers' ACT2FN computes it; one of kHiddenActivations
// (model_directory.h).
[[nodiscard]] at::Tensor HiddenActivation(const std::string& name, const at::Tensor& x);

// How a forward computes softmax(q k^T / sqrt(d) + mask) v.
enum class AttentionKernel {
  kEager,            // explicit matmuls and softmax (transformers' "eager"); per request when packed
  kSdpa,             // at::scaled_dot_product_attention (libtorch >= 2): padded with a boolean
                     // mask, or per request when packed; its CPU flash kernel for float32 / bfloat16
  kFlashVarlen,      // CUDA, packed, float16 / bfloat16: at::_flash_attention_forward over [T, heads, d]
  kEfficientVarlen,  // CUDA, packed, float32: at::_efficient_attention_forward over [1, T, heads, d]
};

// "eager", "sdpa", "flash_varlen", "efficient_varlen": the names /info and the log show.
[[nodiscard]] std::string_view AttentionKernelName(AttentionKernel kernel);

// The kernel for a model with heads of `head_dim` run on `device` in `dtype` and
// `execution`, as `requested`:
//   eager  always kEager;
//   sdpa   kSdpa; InvalidArgumentError when libtorch is older than 2;
//   auto   on CUDA, packed: kFlashVarlen (float16 / bfloat16) or kEfficientVarlen
//          (float32) when head_dim is a multiple of 8 and at most 256 (the kernels'
//          limits) and the private ops' schemas are the ones this file was written
//          against (VarlenAttentionCompiled), else kSdpa; elsewhere kSdpa with
//          libtorch >= 2, kEager before.
[[nodiscard]] absl::StatusOr<AttentionKernel> ChooseAttentionKernel(AttentionImplementation requested,
                                                                   Execution execution, const at::Device& device,
                                                                   at::ScalarType dtype, int64_t head_dim);

// Whether this build has scaled_dot_product_attention (libtorch >= 2).
[[nodiscard]] bool SdpaCompiled();
// Whether the variable-length CUDA kernels are compiled in: libtorch >= 2 whose
// headers declare _flash_attention_forward and _efficient_attention_forward with
// exactly the schemas in attention_schemas.h. A torch release that changes one
// makes this false (auto then takes kSdpa) and fails the golden test.
[[nodiscard]] bool VarlenAttentionCompiled();

struct TokenBatch {
  bool packed = true;
  std::vector<int64_t> offsets;  // B + 1 entries: request i is tokens [offsets[i], offsets[i+1])
  int64_t max_length = 0;        // Lmax, tokens
  at::Tensor ids;                // int64, [T] or [B, Lmax]
  at::Tensor positions;          // int64, same shape: position ids (0-based index within the request;
                                 // XLM-R: transformers' create_position_ids_from_input_ids)
  at::Tensor types;              // int64, same shape: token type ids (0 when unused)
  at::Tensor key_mask;           // bool [B, Lmax], padded layout only
  AttentionKernel attention = AttentionKernel::kEager;
  at::Tensor cu_seqlens;         // int32 [B + 1] on the device: offsets, for the varlen kernels only
                                 // (built once per batch, read by every layer)
  [[nodiscard]] int64_t batch_size() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

class Transformer {
 public:
  virtual ~Transformer() = default;
  // The last hidden state (see the header comment). Thread-safe (weights are
  // read only); throws c10::Error / std::bad_alloc on failure. An int8 Linear
  // changes its input during the call and restores it (linear.h), so a forward
  // must not run two Linears on one tensor at the same time.
  [[nodiscard]] virtual at::Tensor Forward(const TokenBatch& batch) const = 0;
  // The token embedding table [vocab_size, H], which a masked-LM head's decoder
  // shares when its weights are tied; undefined where the architecture does not
  // expose it.
  [[nodiscard]] virtual at::Tensor word_embeddings() const { return {}; }
  // The encoder layers' linear layers (the embeddings and norms are not), for
  // int8 quantization (Linear::QuantizeInt8). Not thread-safe: change them
  // before the first Forward only.
  [[nodiscard]] virtual std::vector<Linear*> linears() = 0;
};

// Builds the architecture config.architecture names from `checkpoint`, with every
// weight converted to `dtype` on `device`. Errors: InvalidArgumentError naming
// the checkpoint file and the tensor (missing, wrong shape, unsupported dtype),
// listing the shape expected.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Transformer>> LoadTransformer(const ArchitectureConfig& config,
                                                                           const Checkpoint& checkpoint,
                                                                           at::ScalarType dtype, at::Device device);

// Scaled dot-product attention over q [.., heads, d] and k, v [.., kv_heads, d]
// in the batch's layout (packed [T, ., d] or padded [B, Lmax, ., d]) with the
// batch's kernel; kv heads are shared by heads / kv_heads query heads each
// (grouped-query attention). `causal`: a token sees only itself and earlier
// tokens of its request. Softmax accumulates in float32 whatever the dtype (the
// eager path casts the scores, as transformers' eager attention does; the fused
// kernels accumulate in float32 internally).
// Returns [T, heads * d] or [B, Lmax, heads * d]. Throws c10::Error on failure.
[[nodiscard]] at::Tensor Attention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k,
                                   const at::Tensor& v, bool causal);

}  // namespace tokenbatch::hf
