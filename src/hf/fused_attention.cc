// The fused attention kernels (fused_attention.h). Everything here compiles
// against every libtorch: the operators are found by their headers, and the
// private ones are called only when their schemas are the known ones
// (attention_schemas.h), so a torch that changed them still builds, without them.
#include "hf/fused_attention.h"

#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#include "hf/attention_schemas.h"

#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#include <ATen/ops/scaled_dot_product_attention.h>
#define TOKENBATCH_HAS_SDPA 1
#else
#define TOKENBATCH_HAS_SDPA 0
#endif
#if TOKENBATCH_HAS_SDPA && __has_include(<ATen/ops/_flash_attention_forward.h>) && \
    __has_include(<ATen/ops/_efficient_attention_forward.h>)
#include <ATen/ops/_efficient_attention_forward.h>
#include <ATen/ops/_flash_attention_forward.h>
#define TOKENBATCH_HAS_VARLEN_OPS 1
#else
#define TOKENBATCH_HAS_VARLEN_OPS 0
#endif

namespace tokenbatch::hf {
namespace {

#if TOKENBATCH_HAS_VARLEN_OPS
constexpr bool kVarlenSchemasKnown =
    std::string_view(at::_ops::_flash_attention_forward::schema_str) == kFlashAttentionForwardSchema &&
    std::string_view(at::_ops::_efficient_attention_forward::schema_str) == kEfficientAttentionForwardSchema;

// The xFormers kernel's custom_mask_type values (its CustomMaskType enum):
// none, and causal aligned to each sequence's first token.
constexpr int64_t kNoCustomMask = 0;
constexpr int64_t kCausalFromTopLeft = 1;

// The calls are templates over the tensor type so that they are looked up, and
// type-checked, only when instantiated: a torch whose private signatures differ
// compiles them out instead of failing the build.
template <typename Tensor>
Tensor FlashVarlen(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens, int64_t max_length,
                   bool causal) {
  if constexpr (kVarlenSchemasKnown) {
    // [T, heads, d] in and out; kv heads may be fewer (grouped-query attention).
    return std::get<0>(at::_flash_attention_forward(q.contiguous(), k.contiguous(), v.contiguous(), cu_seqlens,
                                                    cu_seqlens, max_length, max_length, /*dropout_p=*/0.0, causal,
                                                    /*return_debug_mask=*/false));
  } else {
    throw std::logic_error("flash_varlen attention is not compiled into this build");
  }
}

template <typename Tensor>
Tensor EfficientVarlen(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                       int64_t max_length, bool causal) {
  if constexpr (kVarlenSchemasKnown) {
    // [1, T, heads, d] in and out: one "batch" whose sequences cu_seqlens delimits.
    return std::get<0>(at::_efficient_attention_forward(
                           q.unsqueeze(0).contiguous(), k.unsqueeze(0).contiguous(), v.unsqueeze(0).contiguous(),
                           /*bias=*/std::nullopt, cu_seqlens, cu_seqlens, max_length, max_length, /*dropout_p=*/0.0,
                           causal ? kCausalFromTopLeft : kNoCustomMask))
        .squeeze(0);
  } else {
    throw std::logic_error("efficient_varlen attention is not compiled into this build");
  }
}
#else
constexpr bool kVarlenSchemasKnown = false;

template <typename Tensor>
Tensor FlashVarlen(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, bool) {
  throw std::logic_error("flash_varlen attention needs libtorch >= 2");
}
template <typename Tensor>
Tensor EfficientVarlen(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, bool) {
  throw std::logic_error("efficient_varlen attention needs libtorch >= 2");
}
#endif

at::Tensor Sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask, bool causal) {
#if TOKENBATCH_HAS_SDPA
  return at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt,
                                          /*dropout_p=*/0.0, causal);
#else
  (void)q, (void)k, (void)v, (void)mask, (void)causal;
  throw std::logic_error("sdpa attention needs libtorch >= 2");
#endif
}

}  // namespace

bool SdpaCompiled() { return TOKENBATCH_HAS_SDPA != 0; }
bool VarlenAttentionCompiled() { return kVarlenSchemasKnown; }

at::Tensor RepeatKv(const at::Tensor& x, int64_t groups, int64_t head_dim_index) {
  return groups == 1 ? x : x.repeat_interleave(groups, head_dim_index);
}

at::Tensor AttendPerRequest(
    const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t)>& attend) {
  const int64_t groups = q.size(-2) / k.size(-2);
  std::vector<at::Tensor> outputs;
  outputs.reserve(batch.batch_size());
  for (int64_t i = 0; i < batch.batch_size(); ++i) {
    const int64_t begin = batch.offsets[i];
    const int64_t n = batch.offsets[i + 1] - begin;
    // [n, heads, d] -> [heads, n, d].
    at::Tensor qi = q.narrow(0, begin, n).transpose(0, 1);
    at::Tensor ki = RepeatKv(k.narrow(0, begin, n).transpose(0, 1), groups, 0);
    at::Tensor vi = RepeatKv(v.narrow(0, begin, n).transpose(0, 1), groups, 0);
    outputs.push_back(attend(qi, ki, vi, n).transpose(0, 1).reshape({n, -1}));
  }
  return at::cat(outputs, 0);
}

at::Tensor SdpaAttention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                         bool causal) {
  if (batch.packed) {
    // Per request, [1, heads, n, d], with no mask: the request is all real tokens.
    return AttendPerRequest(batch, q, k, v, [&](const at::Tensor& qi, const at::Tensor& ki, const at::Tensor& vi,
                                                int64_t n) {
      return Sdpa(qi.unsqueeze(0), ki.unsqueeze(0), vi.unsqueeze(0), at::Tensor(), causal && n > 1).squeeze(0);
    });
  }
  const int64_t groups = q.size(-2) / k.size(-2);
  // Padded: [B, L, heads, d] -> [B, heads, L, d], with a boolean mask (true =
  // attend) of the real keys, and of the earlier ones when causal. Right padding
  // leaves every query row at least its request's first key, so no row is all
  // masked (which would make the softmax NaN).
  const int64_t b = q.size(0);
  const int64_t l = q.size(1);
  at::Tensor mask = batch.key_mask.view({b, 1, 1, l});
  if (causal) {
    mask = mask.logical_and(
        at::ones({l, l}, at::TensorOptions().dtype(at::kBool).device(q.device())).tril().view({1, 1, l, l}));
  }
  return Sdpa(q.transpose(1, 2), RepeatKv(k.transpose(1, 2), groups, 1), RepeatKv(v.transpose(1, 2), groups, 1),
              mask, /*causal=*/false)
      .transpose(1, 2)
      .reshape({b, l, -1});
}

at::Tensor VarlenAttention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           bool causal) {
  const int64_t t = q.size(0);
  if (batch.attention == AttentionKernel::kFlashVarlen) {
    return FlashVarlen(q, k, v, batch.cu_seqlens, batch.max_length, causal).reshape({t, -1});
  }
  const int64_t groups = q.size(-2) / k.size(-2);
  return EfficientVarlen(q, RepeatKv(k, groups, 1), RepeatKv(v, groups, 1), batch.cu_seqlens, batch.max_length,
                         causal)
      .reshape({t, -1});
}

}  // namespace tokenbatch::hf
