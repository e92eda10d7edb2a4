// Attention for both batch layouts (transformer.h): the kernel choice, the
// eager path, and the dispatch to the fused kernels (fused_attention.h).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "hf/fused_attention.h"
#include "hf/transformer.h"
#include "tokenbatch/core/errors.h"

namespace tokenbatch::hf {
namespace {

// softmax(q k^T * scale + bias) v for q [.., heads, Lq, d], k/v [.., heads, Lk, d].
at::Tensor Scores(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& bias) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor scores = at::matmul(q, k.transpose(-1, -2)).to(at::kFloat) * scale;
  if (bias.defined()) scores = scores + bias;
  return at::matmul(at::softmax(scores, -1).to(q.scalar_type()), v);
}

// 0 where allowed, the float minimum where not: [L, L], allowing j <= i.
at::Tensor CausalBias(int64_t length, const at::Device& device) {
  at::Tensor allowed = at::ones({length, length}, at::TensorOptions().dtype(at::kBool).device(device)).tril();
  return at::zeros({length, length}, at::TensorOptions().dtype(at::kFloat).device(device))
      .masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest());
}

at::Tensor EagerAttention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          bool causal) {
  if (batch.packed) {
    return AttendPerRequest(batch, q, k, v, [&](const at::Tensor& qi, const at::Tensor& ki, const at::Tensor& vi,
                                                int64_t n) {
      return Scores(qi, ki, vi, causal && n > 1 ? CausalBias(n, q.device()) : at::Tensor());
    });
  }
  const int64_t groups = q.size(-2) / k.size(-2);
  // Padded: [B, L, heads, d] -> [B, heads, L, d]; padded keys get the float
  // minimum, so their softmax weight is exactly zero for every real query.
  const int64_t b = q.size(0);
  const int64_t l = q.size(1);
  at::Tensor qt = q.transpose(1, 2);
  at::Tensor kt = RepeatKv(k.transpose(1, 2), groups, 1);
  at::Tensor vt = RepeatKv(v.transpose(1, 2), groups, 1);
  at::Tensor bias = at::zeros({b, 1, 1, l}, at::TensorOptions().dtype(at::kFloat).device(q.device()))
                        .masked_fill(batch.key_mask.logical_not().view({b, 1, 1, l}),
                                     std::numeric_limits<float>::lowest());
  if (causal) bias = bias + CausalBias(l, q.device()).view({1, 1, l, l});
  // The sum of two minima overflows to -inf; clamp keeps rows finite.
  bias = bias.clamp_min(std::numeric_limits<float>::lowest());
  return Scores(qt, kt, vt, bias).transpose(1, 2).reshape({b, l, -1});
}

}  // namespace

std::string_view AttentionKernelName(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kEager: return "eager";
    case AttentionKernel::kSdpa: return "sdpa";
    case AttentionKernel::kFlashVarlen: return "flash_varlen";
    case AttentionKernel::kEfficientVarlen: return "efficient_varlen";
  }
  return "unknown";
}

absl::StatusOr<AttentionKernel> ChooseAttentionKernel(AttentionImplementation requested, Execution execution,
                                                      const at::Device& device, at::ScalarType dtype,
                                                      int64_t head_dim) {
  if (requested == AttentionImplementation::kEager) return AttentionKernel::kEager;
  if (!SdpaCompiled()) {
    if (requested == AttentionImplementation::kSdpa) {
      return InvalidArgumentError(
          "attention implementation \"sdpa\" needs libtorch >= 2 (scaled_dot_product_attention); this build has "
          "an older one: use \"eager\" or \"auto\"");
    }
    return AttentionKernel::kEager;
  }
  // FlashAttention's and xFormers' limits on the head size.
  const bool varlen_head = head_dim % 8 == 0 && head_dim <= 256;
  if (requested == AttentionImplementation::kAuto && device.is_cuda() && execution == Execution::kPacked &&
      varlen_head && VarlenAttentionCompiled()) {
    return dtype == at::kFloat ? AttentionKernel::kEfficientVarlen : AttentionKernel::kFlashVarlen;
  }
  return AttentionKernel::kSdpa;
}

at::Tensor Attention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     bool causal) {
  switch (batch.attention) {
    case AttentionKernel::kEager: return EagerAttention(batch, q, k, v, causal);
    case AttentionKernel::kSdpa: return SdpaAttention(batch, q, k, v, causal);
    case AttentionKernel::kFlashVarlen:
    case AttentionKernel::kEfficientVarlen: return VarlenAttention(batch, q, k, v, causal);
  }
  throw std::logic_error(absl::StrCat("unknown attention kernel ", static_cast<int>(batch.attention)));
}

}  // namespace tokenbatch::hf
