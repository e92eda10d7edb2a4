// The fused attention kernels of libtorch >= 2 (transformer.h's kSdpa,
// kFlashVarlen, kEfficientVarlen), behind the same contract as Attention, and
// the layout helpers the eager path (attention.cc) shares with them.
// Internal to src/hf; includes ATen.
#pragma once

#include <ATen/ATen.h>

#include <functional>

#include "hf/transformer.h"

namespace tokenbatch::hf {

// scaled_dot_product_attention: padded [B, Lmax, ., d] with the key mask (and
// the causal mask) as one boolean mask, or packed [T, ., d] one call per request.
// Returns [.., heads * d]. Throws c10::Error, and std::logic_error when the
// build has no SDPA (SdpaCompiled() is false: ChooseAttentionKernel never picks it).
[[nodiscard]] at::Tensor SdpaAttention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, bool causal);

// The CUDA variable-length kernels over the packed [T, ., d] layout, in one call
// for the whole batch: batch.cu_seqlens (int32 [B + 1] on the device) and
// batch.max_length delimit the requests. kFlashVarlen shares kv heads natively;
// kEfficientVarlen repeats them. Returns [T, heads * d]. Throws c10::Error, and
// std::logic_error when VarlenAttentionCompiled() is false.
[[nodiscard]] at::Tensor VarlenAttention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, bool causal);

// The packed layout one request at a time: for each request of n tokens,
// `attend(q, k, v, n)` gets q [heads, n, d] and k, v with their kv heads
// repeated to [heads, n, d] and returns [heads, n, d]; the results are laid
// back as [T, heads * d]. Throws what `attend` throws.
[[nodiscard]] at::Tensor AttendPerRequest(
    const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t)>& attend);

// [.., kv_heads, L, d] -> [.., kv_heads * groups, L, d] along `head_dim_index`,
// each kv head repeated for its `groups` query heads (transformers' repeat_kv).
[[nodiscard]] at::Tensor RepeatKv(const at::Tensor& x, int64_t groups, int64_t head_dim_index);

}  // namespace tokenbatch::hf
