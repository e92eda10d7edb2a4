// Qwen3 decoder as an embedding model (transformers' Qwen3Model, as
// Qwen3-Embedding uses it): token embeddings, then per layer a pre-norm block of
// RMSNorm -> grouped-query causal self-attention with per-head RMSNorm on q and
// k and rotary position embeddings -> residual, and RMSNorm -> SwiGLU MLP ->
// residual; a final RMSNorm.
#include <string>
#include <vector>

#include "hf/architectures.h"
#include "hf/linear.h"
#include "hf/weights.h"

namespace tokenbatch::hf {
namespace {

struct Layer {
  at::Tensor input_norm, q_norm, k_norm, post_norm;
  Linear q, k, v, o;
  Linear gate_up, down;  // gate and up fused: [2I, H]
};

// x * rsqrt(mean(x²) + eps) * weight, computed in float32 (as Qwen3RMSNorm).
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor f = x.to(at::kFloat);
  f = f * at::rsqrt(f.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * f.to(x.scalar_type());
}

// Rotates pairs (x1, x2) of the two halves of the last dimension: x cos + rot(x) sin,
// rot(x) = [-x2, x1] (transformers' rotate_half / apply_rotary_pos_emb).
at::Tensor Rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  std::vector<at::Tensor> halves = x.chunk(2, -1);
  at::Tensor rotated = at::cat({-halves[1], halves[0]}, -1);
  return x * cos + rotated * sin;
}

class Qwen3 final : public Transformer {
 public:
  Qwen3(const ArchitectureConfig& c, const Checkpoint& checkpoint, const std::string& prefix, at::ScalarType dtype,
        at::Device device, absl::Status& status)
      : config_(c) {
    const int64_t h = c.hidden_size;
    const int64_t q_out = c.num_attention_heads * c.head_dim;
    const int64_t kv_out = c.num_key_value_heads * c.head_dim;
    WeightReader w(checkpoint, prefix, dtype, device);
    embed_ = w.Get("embed_tokens.weight", {c.vocab_size, h});
    for (int64_t i = 0; i < c.num_hidden_layers && w.status().ok(); ++i) {
      const std::string p = "layers." + std::to_string(i) + ".";
      Layer l;
      l.input_norm = w.Get(p + "input_layernorm.weight", {h});
      auto bias = [&](const std::string& name, int64_t n) {
        return c.attention_bias ? w.Get(p + "self_attn." + name + ".bias", {n}) : at::Tensor();
      };
      l.q = Linear(w.Get(p + "self_attn.q_proj.weight", {q_out, h}), bias("q_proj", q_out));
      l.k = Linear(w.Get(p + "self_attn.k_proj.weight", {kv_out, h}), bias("k_proj", kv_out));
      l.v = Linear(w.Get(p + "self_attn.v_proj.weight", {kv_out, h}), bias("v_proj", kv_out));
      l.o = Linear(w.Get(p + "self_attn.o_proj.weight", {h, q_out}), bias("o_proj", h));
      l.q_norm = w.Get(p + "self_attn.q_norm.weight", {c.head_dim});
      l.k_norm = w.Get(p + "self_attn.k_norm.weight", {c.head_dim});
      l.post_norm = w.Get(p + "post_attention_layernorm.weight", {h});
      at::Tensor gate = w.Get(p + "mlp.gate_proj.weight", {c.intermediate_size, h});
      at::Tensor up = w.Get(p + "mlp.up_proj.weight", {c.intermediate_size, h});
      if (w.status().ok()) l.gate_up = Linear(at::cat({gate, up}, 0), at::Tensor());
      l.down = Linear(w.Get(p + "mlp.down_proj.weight", {h, c.intermediate_size}), at::Tensor());
      layers_.push_back(std::move(l));
    }
    norm_ = w.Get("norm.weight", {h});
    status = w.status();
    if (!status.ok()) return;
    // inv_freq[i] = 1 / theta^(2i / d), in float32 as transformers computes it.
    at::Tensor exponents =
        at::arange(0, c.head_dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(c.head_dim);
    inv_freq_ = (1.0 / at::pow(c.rope_theta, exponents)).to(device);
  }

  std::vector<Linear*> linears() override {
    std::vector<Linear*> out;
    for (Layer& l : layers_) out.insert(out.end(), {&l.q, &l.k, &l.v, &l.o, &l.gate_up, &l.down});
    return out;
  }

  at::Tensor Forward(const TokenBatch& batch) const override {
    const ArchitectureConfig& c = config_;
    at::Tensor x = at::embedding(embed_, batch.ids);
    // cos/sin [..., 1, d] for the batch's positions (broadcast over heads).
    at::Tensor freqs = batch.positions.to(at::kFloat).unsqueeze(-1) * inv_freq_;
    at::Tensor angles = at::cat({freqs, freqs}, -1).unsqueeze(-2);
    const at::Tensor cos = angles.cos().to(x.scalar_type());
    const at::Tensor sin = angles.sin().to(x.scalar_type());
    auto heads = [&](const at::Tensor& t, int64_t n) {
      std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end() - 1);
      shape.push_back(n);
      shape.push_back(c.head_dim);
      return t.reshape(shape);
    };
    for (const Layer& l : layers_) {
      at::Tensor hn = RmsNorm(x, l.input_norm, c.rms_norm_eps);
      at::Tensor q = RmsNorm(heads(l.q(hn), c.num_attention_heads), l.q_norm, c.rms_norm_eps);
      at::Tensor k = RmsNorm(heads(l.k(hn), c.num_key_value_heads), l.k_norm, c.rms_norm_eps);
      at::Tensor v = heads(l.v(hn), c.num_key_value_heads);
      at::Tensor context = Attention(batch, Rotate(q, cos, sin), Rotate(k, cos, sin), v, /*causal=*/true);
      x = x + l.o(context);
      std::vector<at::Tensor> gate_up = l.gate_up(RmsNorm(x, l.post_norm, c.rms_norm_eps)).chunk(2, -1);
      x = x + l.down(HiddenActivation(c.hidden_act, gate_up[0]) * gate_up[1]);
    }
    return RmsNorm(x, norm_, c.rms_norm_eps);
  }

 private:
  ArchitectureConfig config_;
  at::Tensor embed_, norm_, inv_freq_;
  std::vector<Layer> layers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transformer>> LoadQwen3(const ArchitectureConfig& config, const Checkpoint& checkpoint,
                                                       at::ScalarType dtype, at::Device device) {
  absl::StatusOr<std::string> prefix = FindPrefix(checkpoint, "embed_tokens.weight", {"model."});
  if (!prefix.ok()) return prefix.status();
  absl::Status status;
  auto model = std::make_unique<Qwen3>(config, checkpoint, *prefix, dtype, device, status);
  if (!status.ok()) return status;
  return std::unique_ptr<Transformer>(std::move(model));
}

}  // namespace tokenbatch::hf
