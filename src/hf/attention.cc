// Attention for both batch layouts (transformer.h).
#include <cmath>
#include <limits>

#include "hf/transformer.h"

namespace tokenbatch::hf {
namespace {

// [.., kv_heads, L, d] -> [.., kv_heads * groups, L, d], each kv head repeated
// for its `groups` query heads (transformers' repeat_kv).
at::Tensor RepeatKv(const at::Tensor& x, int64_t groups, int64_t head_dim_index) {
  return groups == 1 ? x : x.repeat_interleave(groups, head_dim_index);
}

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

}  // namespace

at::Tensor Attention(const TokenBatch& batch, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     bool causal) {
  const int64_t heads = q.size(-2);
  const int64_t groups = heads / k.size(-2);
  if (batch.packed) {
    // Per request: [n, heads, d] -> [heads, n, d].
    std::vector<at::Tensor> outputs;
    outputs.reserve(batch.batch_size());
    for (int64_t i = 0; i < batch.batch_size(); ++i) {
      const int64_t begin = batch.offsets[i];
      const int64_t n = batch.offsets[i + 1] - begin;
      at::Tensor qi = q.narrow(0, begin, n).transpose(0, 1);
      at::Tensor ki = RepeatKv(k.narrow(0, begin, n).transpose(0, 1), groups, 0);
      at::Tensor vi = RepeatKv(v.narrow(0, begin, n).transpose(0, 1), groups, 0);
      at::Tensor bias = causal && n > 1 ? CausalBias(n, q.device()) : at::Tensor();
      outputs.push_back(Scores(qi, ki, vi, bias).transpose(0, 1).reshape({n, -1}));
    }
    return at::cat(outputs, 0);
  }
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

}  // namespace tokenbatch::hf
